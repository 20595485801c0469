/*
 * exit_held.c - locks still held when the process ends, chosen by name:
 *   exit_held exit|signal|clean|freed|freed-signal|none-signal
 * exit: main returns holding a mutex and a mtx_t while another thread holds an rwlock for
 * read; signal: the same, then main dies of SIGSEGV; clean: every lock released first;
 * freed: main frees the memory of a mutex it holds (a free-held report), then returns
 * holding another; freed-signal: the same, then dies of SIGSEGV; none-signal: dies of
 * SIGSEGV holding nothing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "../../blocked.h"

#define NOINLINE __attribute__((noinline))

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t b = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t park = PTHREAD_MUTEX_INITIALIZER;
static mtx_t c;
static blocked_probe parked;

NOINLINE void *reader(void *arg)
{
    int release = *(int *)arg;
    pthread_rwlock_rdlock(&b);
    if (release)
        pthread_rwlock_unlock(&b);
    blocked_announce_on(&parked, &park, sizeof park);
    pthread_mutex_lock(&park); /* parks: main holds it until the process ends */
    pthread_mutex_unlock(&park);
    return NULL;
}

NOINLINE void take_locks(int release)
{
    static int rel;
    pthread_t th;
    rel = release;
    mtx_init(&c, mtx_plain);
    pthread_mutex_lock(&park);
    pthread_create(&th, NULL, reader, &rel);
    pthread_mutex_lock(&a);
    mtx_lock(&c);
    blocked_until(&parked); /* the reader sleeps on park: the report finds it waiting */
    if (release) {
        mtx_unlock(&c);
        pthread_mutex_unlock(&a);
        pthread_mutex_unlock(&park);
        pthread_join(th, NULL);
    }
}

/* A connection's mutex freed with the connection while held, as a close path that forgets
 * its unlock does; a held entry is left that names memory no longer a lock. */
NOINLINE void free_held_then_return(void)
{
    pthread_mutex_t *conn = malloc(sizeof *conn);
    pthread_mutex_init(conn, NULL);
    pthread_mutex_lock(conn);
    free(conn);
    pthread_mutex_lock(&a);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: exit_held exit|signal|clean|freed|freed-signal|none-signal\n");
        return 64;
    }
    if (strcmp(argv[1], "none-signal") == 0)
        raise(SIGSEGV);
    if (strncmp(argv[1], "freed", 5) == 0) {
        free_held_then_return();
        printf("ending\n");
        fflush(stdout);
        if (strcmp(argv[1], "freed-signal") == 0)
            raise(SIGSEGV);
        return 0;
    }
    take_locks(strcmp(argv[1], "clean") == 0);
    printf("ending\n");
    fflush(stdout);
    if (strcmp(argv[1], "signal") == 0)
        raise(SIGSEGV);
    return 0; /* the parked thread dies with the process */
}
