/*
 * warm_reports.h - one report in a test program before it forks the programs it checks: the
 * tracer then has the debugging information of the test and libc read (and inflated) in the
 * parent, which each child would otherwise read again for its first report (~40 % of a
 * randomized test's time). A bad unlock of an error-checking mutex: the call fails with
 * EPERM, and the report is of another kind than the programs' inversions.
 */
#ifndef WARM_REPORTS_H
#define WARM_REPORTS_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>

/* prog names the test in the line printed when the unlock does not fail. */
static void warm_reports(const char *prog)
{
    pthread_mutex_t m;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&m, &a);
    pthread_mutexattr_destroy(&a);
    if (pthread_mutex_unlock(&m) != EPERM)
        printf("%s: an unlock of a free error-checking mutex did not fail\n", prog);
    pthread_mutex_destroy(&m);
}

#endif
