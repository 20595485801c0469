/*
 * dumpsig.h - the dump signal shared with a program that handles it too (dumpsig.c).
 */
#ifndef LT_DUMPSIG_H
#define LT_DUMPSIG_H

/* The value `locktrace dump` sends the dump signal with (sigqueue): a signal that carries it
 * asks for the dump, whatever handler the program has for that signal. "LTDM". */
#define LT_DUMP_SIGVAL 0x4c54444d

/* Installs dump as the handler of sig for good: the program's own calls that set sig's action
 * (sigaction(), signal() and its variants) from then on are recorded as its action and answered as if made; the
 * program's action runs for every sig but the dump requests, once it has one. */
void lt_dumpsig_install(int sig, void (*dump)(void));

/* The program's sigaction(sig, act, old): 1 when sig is the dump signal, answered here; 0 when
 * it is libc's to answer. */
struct sigaction;
int lt_dumpsig_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

#endif
