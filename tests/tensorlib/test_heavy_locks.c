/*
 * test_heavy_locks.c - the heavy ops take the storage locks of candle's lock map
 * (shared/candle-notes.md §2): each op must wait while another thread holds the write lock of
 * any one of its operands. A helper thread write-locks one operand through tl_inplace_op1 and
 * parks inside it; the op, run on a second thread, must still be waiting 100 ms later, and
 * must finish once the lock is released. An op that forgot an operand's lock would finish
 * early. (Waiting cannot fail falsely: a blocked op stays blocked until the release.)
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "check.h"
#include "fixture.h"

/* Holds a write lock on its tensor from inside an in-place op until released. */
typedef struct holder {
    tl_tensor *t;
    sem_t inside, release;
} holder;

static tl_status hold_fwd(void *ctx, const tl_view *dst, const tl_view *args, size_t nargs)
{
    (void)dst;
    (void)args;
    (void)nargs;
    holder *h = ctx;
    sem_post(&h->inside);
    sem_wait(&h->release);
    return TL_OK;
}

static void *holder_main(void *arg)
{
    holder *h = arg;
    tl_inplace_op op = {"hold", hold_fwd, NULL, h};
    return (void *)(intptr_t)tl_inplace_op1(h->t, &op);
}

/* One op under test, run on its own thread: run() calls it on args and returns its status. */
typedef struct op_call {
    const char *label;
    tl_status (*run)(tl_tensor *const *args);
    tl_tensor *const *args;
    size_t nargs;
    tl_status status;
    sem_t done;
} op_call;

static void *caller_main(void *arg)
{
    op_call *c = arg;
    c->status = c->run(c->args);
    sem_post(&c->done);
    return NULL;
}

/* Whether sem is still unposted after ms milliseconds. */
static bool still_waiting(sem_t *sem, long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    int rc;
    while ((rc = sem_timedwait(sem, &ts)) != 0 && errno == EINTR)
        ;
    return rc != 0 && errno == ETIMEDOUT;
}

/* Runs c while args[held] is write-locked by another thread. */
static void check_waits(op_call *c, size_t held)
{
    holder h = {.t = c->args[held]};
    pthread_t ht, ct;
    sem_init(&h.inside, 0, 0);
    sem_init(&h.release, 0, 0);
    sem_init(&c->done, 0, 0);
    CHECK(pthread_create(&ht, NULL, holder_main, &h) == 0);
    sem_wait(&h.inside);
    CHECK(pthread_create(&ct, NULL, caller_main, c) == 0);
    CHECKF(still_waiting(&c->done, 100), "%s ran while operand %zu was write-locked", c->label,
           held);
    sem_post(&h.release);
    void *held_status;
    pthread_join(ht, &held_status);
    pthread_join(ct, NULL);
    CHECK((intptr_t)held_status == TL_OK);
    CHECKF(c->status == TL_OK, "%s: %s", c->label, tl_last_error());
    sem_destroy(&h.inside);
    sem_destroy(&h.release);
    sem_destroy(&c->done);
}

static tl_status run_matmul(tl_tensor *const *a)
{
    return fx_status(tl_matmul(a[0], a[1]));
}

static tl_status run_conv1d(tl_tensor *const *a)
{
    return fx_status(tl_conv1d(a[0], a[1], 1, 1, 1, 1));
}

static tl_status run_log_softmax(tl_tensor *const *a)
{
    return fx_status(tl_log_softmax(a[0], 1));
}

static tl_status run_index_select(tl_tensor *const *a)
{
    return fx_status(tl_index_select(a[0], a[1], 0));
}

static tl_status run_gather(tl_tensor *const *a)
{
    return fx_status(tl_gather(a[0], a[1], 0));
}

static tl_status run_index_add(tl_tensor *const *a)
{
    return fx_status(tl_index_add(a[0], a[1], a[2], 0));
}

static tl_status run_scatter_add(tl_tensor *const *a)
{
    return fx_status(tl_scatter_add(a[0], a[1], a[2], 0));
}

static tl_status run_scatter_set(tl_tensor *const *a)
{
    return tl_scatter_set(a[0], a[1], a[2], 0);
}

static tl_status run_scatter_add_set(tl_tensor *const *a)
{
    return tl_scatter_add_set(a[0], a[1], a[2], 0);
}

static tl_status run_cat(tl_tensor *const *a)
{
    return fx_status(tl_cat((const tl_tensor *const *)a, 3, 0));
}

static tl_status run_stack(tl_tensor *const *a)
{
    return fx_status(tl_stack((const tl_tensor *const *)a, 3, 1));
}

int main(void)
{
    size_t s22[] = {2, 2}, s122[] = {1, 2, 2}, s2[] = {2};
    tl_tensor *a = tl_ones(s22, 2, TL_F32, TL_CPU), *b = tl_ones(s22, 2, TL_F32, TL_CPU);
    tl_tensor *c = tl_ones(s22, 2, TL_F32, TL_CPU), *x = tl_ones(s122, 3, TL_F32, TL_CPU);
    tl_tensor *k = tl_ones(s122, 3, TL_F32, TL_CPU), *ids = tl_zeros(s2, 1, TL_U32, TL_CPU);
    tl_tensor *ids22 = tl_zeros(s22, 2, TL_U32, TL_CPU);
    tl_tensor *const mm[] = {a, b}, *cv[] = {x, k}, *sel[] = {a, ids}, *ga[] = {a, ids22};
    tl_tensor *const add[] = {a, ids, b}, *sc[] = {c, ids22, b}, *three[] = {a, b, c};
    op_call ops[] = {
        {.label = "matmul", .run = run_matmul, .args = mm, .nargs = 2},
        {.label = "conv1d", .run = run_conv1d, .args = cv, .nargs = 2},
        {.label = "log_softmax", .run = run_log_softmax, .args = mm, .nargs = 1},
        {.label = "index_select", .run = run_index_select, .args = sel, .nargs = 2},
        {.label = "gather", .run = run_gather, .args = ga, .nargs = 2},
        {.label = "index_add", .run = run_index_add, .args = add, .nargs = 3},
        {.label = "scatter_add", .run = run_scatter_add, .args = sc, .nargs = 3},
        {.label = "scatter_set", .run = run_scatter_set, .args = sc, .nargs = 3},
        {.label = "scatter_add_set", .run = run_scatter_add_set, .args = sc, .nargs = 3},
        {.label = "cat", .run = run_cat, .args = three, .nargs = 3},
        {.label = "stack", .run = run_stack, .args = three, .nargs = 3},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        for (size_t held = 0; held < ops[i].nargs; held++)
            check_waits(&ops[i], held);
    FX_RELEASE(a, b, c, x, k, ids, ids22);
    return check_summary();
}
