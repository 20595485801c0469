/*
 * order_oracle_exec.c - runs one generated program under the tracer, in a child process of
 * its own (so every program starts with an empty lock-order graph), with its stderr in a
 * memory file. The threads take turns: each runs its steps while the others wait on their
 * semaphores (no lock of the program's is used for the handing over, so the handing over
 * adds no lock order). After each step the child notes how long stderr is, which tells the
 * parent at which step each report was written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lockmem.h"
#include "order_oracle.h"

#define CHILD_ALARM_S 30 /* a child still running then has hung */

typedef lockmem slot;

size_t oracle_slot_size(void)
{
    return sizeof(slot);
}

/* Shared with the parent. */
typedef struct shared {
    int failed_step;
    size_t *end;
    uintptr_t *base;
} shared;

typedef struct child {
    const oracle_program *p;
    shared *sh;
    slot **block;
    int at;    /* the next step */
    sem_t turn[ORACLE_THREADS], done;
} child;

static lm_kind slot_kind(int type)
{
    static const lm_kind kind[TY_COUNT] = {
        [TY_NORMAL] = LM_NORMAL, [TY_RECURSIVE] = LM_RECURSIVE, [TY_ERRORCHECK] = LM_ERRORCHECK,
        [TY_RW] = LM_RW,         [TY_RW_WP] = LM_RW_WP,         [TY_SPIN] = LM_SPIN,
        [TY_RW_PW] = LM_RW_PW};
    return kind[type];
}

static void init_slot(slot *l, int type)
{
    lockmem_init(l, slot_kind(type));
}

static int destroy_slot(slot *l, int type)
{
    return lockmem_destroy(l, slot_kind(type));
}

struct request {
    slot *l;
    const oracle_step *s;
};

/* The acquisition itself: the frame right above libc's, so that frames #1 and #2 are the
 * step's own call sites (oracle_at_site). */
__attribute__((noinline)) static int acquire(void *arg)
{
    const struct request *q = arg;
    slot *l = q->l;
    int type = q->s->type, op = q->s->op, mode = q->s->mode;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += 60; /* never reached: the generator asks only for locks that are free */
    if (type == TY_SPIN)
        return op == OP_TRY ? pthread_spin_trylock(&l->s) : pthread_spin_lock(&l->s);
    if (!oracle_is_rw(type))
        return op == OP_TRY     ? pthread_mutex_trylock(&l->m)
               : op == OP_TIMED ? pthread_mutex_timedlock(&l->m, &t)
                                : pthread_mutex_lock(&l->m);
    if (mode == MODE_READ)
        return op == OP_TRY     ? pthread_rwlock_tryrdlock(&l->rw)
               : op == OP_TIMED ? pthread_rwlock_timedrdlock(&l->rw, &t)
                                : pthread_rwlock_rdlock(&l->rw);
    return op == OP_TRY     ? pthread_rwlock_trywrlock(&l->rw)
           : op == OP_TIMED ? pthread_rwlock_timedwrlock(&l->rw, &t)
                            : pthread_rwlock_wrlock(&l->rw);
}

static int release(slot *l, int type)
{
    if (type == TY_SPIN)
        return pthread_spin_unlock(&l->s);
    return oracle_is_rw(type) ? pthread_rwlock_unlock(&l->rw) : pthread_mutex_unlock(&l->m);
}

/* One step; 1 when it returned what the generator expected. */
static int run_step(child *c, const oracle_step *s, int i)
{
    const oracle_program *p = c->p;
    size_t bytes = (size_t)p->per_block * sizeof(slot);
    if (s->op == OP_ALLOC) {
        c->block[s->lock] = malloc(bytes);
        c->sh->base[i] = (uintptr_t)c->block[s->lock];
        return c->block[s->lock] != NULL;
    }
    if (s->op == OP_FREE) {
        free(c->block[s->lock]);
        c->block[s->lock] = NULL;
        return 1;
    }
    slot *l = &c->block[s->lock / p->per_block][s->lock % p->per_block];
    switch (s->op) {
    case OP_INIT:
        init_slot(l, s->type);
        return 1;
    case OP_DESTROY:
        return destroy_slot(l, s->type) == 0;
    case OP_UNLOCK:
        return release(l, s->type) == 0;
    default: {
        struct request q = {l, s};
        int rc = oracle_at_site(i, acquire, &q);
        return s->ok ? rc == 0 : rc == EBUSY;
    }
    }
}

typedef struct worker_arg {
    child *c;
    int me;
} worker_arg;

/* Thread `me` runs its turns: the steps from c->at on that are its own. */
static void *worker(void *arg)
{
    child *c = ((worker_arg *)arg)->c;
    int me = ((worker_arg *)arg)->me;
    for (;;) {
        while (sem_wait(&c->turn[me]) != 0)
            continue;
        while (c->at < c->p->nsteps && c->p->steps[c->at].thread == me) {
            int i = c->at++;
            if (!run_step(c, &c->p->steps[i], i) && c->sh->failed_step < 0)
                c->sh->failed_step = i;
            c->sh->end[i] = (size_t)lseek(2, 0, SEEK_CUR);
            if (c->sh->failed_step >= 0)
                _exit(4); /* the program's state is not the generator's any more */
        }
        sem_post(&c->done);
        if (c->at >= c->p->nsteps)
            return NULL;
    }
}

static void child_main(const oracle_program *p, shared *sh)
{
    alarm(CHILD_ALARM_S);
    child c = {.p = p, .sh = sh};
    c.block = calloc((size_t)p->nblocks, sizeof *c.block);
    for (int t = 0; t < ORACLE_THREADS; t++)
        sem_init(&c.turn[t], 0, 0);
    sem_init(&c.done, 0, 0);
    pthread_t th[ORACLE_THREADS];
    worker_arg arg[ORACLE_THREADS];
    for (int t = 0; t < p->nthreads; t++) {
        arg[t] = (worker_arg){&c, t};
        pthread_create(&th[t], NULL, worker, &arg[t]);
    }
    while (c.at < p->nsteps) {
        sem_post(&c.turn[p->steps[c.at].thread]);
        while (sem_wait(&c.done) != 0)
            continue;
    }
    for (int t = 0; t < p->nthreads; t++) {
        sem_post(&c.turn[t]);
        pthread_join(th[t], NULL);
    }
    for (int b = 0; b < p->nblocks; b++)
        free(c.block[b]);
    _exit(0);
}

void oracle_execute(const oracle_program *p, oracle_run *r)
{
    size_t n = (size_t)p->nsteps;
    size_t bytes = sizeof(shared) + n * (sizeof(size_t) + sizeof(uintptr_t));
    shared *sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int fd = memfd_create("order_oracle", 0);
    if (sh == MAP_FAILED || fd < 0) {
        perror("order_oracle");
        exit(2);
    }
    sh->failed_step = -1;
    sh->end = (size_t *)(sh + 1);
    sh->base = (uintptr_t *)(sh->end + n);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("order_oracle: fork");
        exit(2);
    }
    if (pid == 0) {
        dup2(fd, 2);
        close(fd);
        child_main(p, sh);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        continue;
    off_t len = lseek(fd, 0, SEEK_END);
    r->len = len > 0 ? (size_t)len : 0;
    r->text = malloc(r->len + 1);
    r->end = malloc(n * sizeof *r->end + 1);
    r->base = malloc(n * sizeof *r->base + 1);
    if (!r->text || !r->end || !r->base) {
        fprintf(stderr, "order_oracle: out of memory\n");
        exit(2);
    }
    r->len = (size_t)pread(fd, r->text, r->len, 0) == r->len ? r->len : 0;
    r->text[r->len] = 0;
    memcpy(r->end, sh->end, n * sizeof *r->end);
    memcpy(r->base, sh->base, n * sizeof *r->base);
    r->failed_step = sh->failed_step;
    r->status = status;
    close(fd);
    munmap(sh, bytes);
}
