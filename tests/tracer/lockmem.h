/*
 * lockmem.h - one lock of any kind the tracer watches, made and ended alike by the tests that
 * drive every kind through the same steps (matrix.c, peer_orders.c, order_oracle_exec.c).
 */
#ifndef LOCKMEM_H
#define LOCKMEM_H

#include <pthread.h>

typedef union lockmem {
    pthread_mutex_t m;
    pthread_rwlock_t rw;
    pthread_spinlock_t s;
} lockmem;

typedef enum {
    LM_NORMAL,     /* mutexes */
    LM_RECURSIVE,
    LM_ERRORCHECK,
    LM_SPIN,
    LM_RW,         /* rwlocks: glibc's default, reader-preferring */
    LM_RW_WP,      /* PREFER_WRITER_NONRECURSIVE_NP: writer-preferring */
    LM_RW_PW       /* PREFER_WRITER_NP, which glibc treats as reader-preferring */
} lm_kind;

static inline int lm_is_rw(lm_kind k)
{
    return k >= LM_RW;
}

static inline void lockmem_init(lockmem *l, lm_kind k)
{
    if (k == LM_SPIN) {
        pthread_spin_init(&l->s, PTHREAD_PROCESS_PRIVATE);
    } else if (lm_is_rw(k)) {
        pthread_rwlockattr_t a;
        pthread_rwlockattr_init(&a);
        if (k == LM_RW_WP)
            pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        else if (k == LM_RW_PW)
            pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NP);
        pthread_rwlock_init(&l->rw, &a);
        pthread_rwlockattr_destroy(&a);
    } else {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_settype(&a, k == LM_RECURSIVE    ? PTHREAD_MUTEX_RECURSIVE
                                      : k == LM_ERRORCHECK ? PTHREAD_MUTEX_ERRORCHECK
                                                           : PTHREAD_MUTEX_NORMAL);
        pthread_mutex_init(&l->m, &a);
        pthread_mutexattr_destroy(&a);
    }
}

/* libc's answer to the destroy. */
static inline int lockmem_destroy(lockmem *l, lm_kind k)
{
    if (k == LM_SPIN)
        return pthread_spin_destroy(&l->s);
    return lm_is_rw(k) ? pthread_rwlock_destroy(&l->rw) : pthread_mutex_destroy(&l->m);
}

#endif
