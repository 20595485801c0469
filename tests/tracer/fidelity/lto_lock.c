/*
 * lto_lock.c - the lock helper lto_main.c calls from another file: link-time optimisation
 * inlines it into its callers there. The comment marked with @ names the line
 * fidelity_test.py checks.
 */
#include <pthread.h>

void lock_it(pthread_mutex_t *m)
{
    pthread_mutex_lock(m); /* @lock_it */
}
