/*
 * cut_stack_lock.c - the lock-taking function of cut_stack.c, in a library of its own so
 * that meson.build can compile it without unwind tables (and without a frame pointer):
 * an unwind that reaches it cannot find its callers. The markers FIRST and SECOND name the
 * lines cut_stack_test.py expects in the stacks.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

/* Write-locks l twice: a self-deadlock (LOCKTRACE_ACTION=edeadlk makes the second call fail
 * with EDEADLK). Returns both results, so neither call is a tail call (a tail call would take
 * this frame off the stack before the lock call). */
int cut_lock_twice(pthread_rwlock_t *l)
{
    int first = pthread_rwlock_wrlock(l); /* FIRST */
    int second = pthread_rwlock_wrlock(l); /* SECOND */
    return first * 1000 + second;
}
