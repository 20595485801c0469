/*
 * dump_sigset_strict.c - signal() as a program built for strict ISO C (-std=c11, no feature
 * macro) calls it: glibc's <signal.h> makes it __sysv_signal there (System V semantics).
 */
#include <signal.h>

void (*strict_signal(int sig, void (*handler)(int)))(int);

void (*strict_signal(int sig, void (*handler)(int)))(int)
{
    return signal(sig, handler);
}
