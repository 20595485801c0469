/*
 * destroyed.c - a mutex used after pthread_mutex_destroy, and the legal programs next to it:
 *   destroyed lock          init, lock, unlock, destroy, then lock: glibc refuses (EINVAL);
 *                           reported (use-after-destroy)
 *   destroyed timedlock     the same with pthread_mutex_timedlock: reported
 *   destroyed unlock        init, destroy, then unlock: reported as use-after-destroy, not as
 *                           an unlock of a lock the thread does not hold
 *   destroyed trylock       init, destroy, then trylock: refused (EINVAL), silent (a trylock
 *                           is a question; ThreadSanitizer is silent too)
 *   destroyed reinit        destroy, init again, lock, unlock: silent
 *   destroyed assign        destroy, then PTHREAD_MUTEX_INITIALIZER assigned, lock: silent
 *   destroyed reuse         a heap mutex destroyed and freed, the next one made in the block
 *                           malloc returns next (init) and in a calloc'd block (no init),
 *                           each locked: silent
 *   destroyed static-init   a statically initialised mutex locked, then initialised, locked
 *                           again: silent
 *   destroyed fork-reinit   an atfork prepare handler locks a mutex; the child's handler
 *                           initialises it again instead of unlocking it, and the child
 *                           locks it: silent
 * Each prints what its calls returned, so the traced run is compared with the native one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void result(const char *what, int rc)
{
    printf("%s -> %s\n", what, rc == 0 ? "0" : rc == EINVAL ? "EINVAL" : strerror(rc));
}

static pthread_mutex_t m;

static void make_destroyed(void)
{
    pthread_mutex_init(&m, NULL);
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    result("destroy", pthread_mutex_destroy(&m));
}

static void lock_unlock(const char *what, pthread_mutex_t *mu)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s lock", what);
    result(buf, pthread_mutex_lock(mu));
    snprintf(buf, sizeof buf, "%s unlock", what);
    result(buf, pthread_mutex_unlock(mu));
}

static pthread_mutex_t forked = PTHREAD_MUTEX_INITIALIZER;

static void prepare(void)
{
    pthread_mutex_lock(&forked);
}

static void parent(void)
{
    pthread_mutex_unlock(&forked);
}

static void child(void)
{
    pthread_mutex_init(&forked, NULL);
}

static int fork_reinit(void)
{
    pthread_atfork(prepare, parent, child);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        lock_unlock("child", &forked);
        fflush(stdout);
        _exit(0);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 1;
    lock_unlock("parent", &forked);
    return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "lock")) {
        make_destroyed();
        result("lock", pthread_mutex_lock(&m));
    } else if (!strcmp(s, "timedlock")) {
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_sec += 1;
        make_destroyed();
        result("timedlock", pthread_mutex_timedlock(&m, &at));
    } else if (!strcmp(s, "unlock")) {
        make_destroyed();
        result("unlock", pthread_mutex_unlock(&m));
    } else if (!strcmp(s, "trylock")) {
        make_destroyed();
        result("trylock", pthread_mutex_trylock(&m));
    } else if (!strcmp(s, "reinit")) {
        make_destroyed();
        result("init", pthread_mutex_init(&m, NULL));
        lock_unlock("again", &m);
        result("destroy", pthread_mutex_destroy(&m));
    } else if (!strcmp(s, "assign")) {
        make_destroyed();
        m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
        lock_unlock("assigned", &m);
    } else if (!strcmp(s, "reuse")) {
        pthread_mutex_t *p = malloc(sizeof *p);
        pthread_mutex_init(p, NULL);
        lock_unlock("first", p);
        result("destroy", pthread_mutex_destroy(p));
        free(p);
        p = malloc(sizeof *p);
        result("init", pthread_mutex_init(p, NULL));
        lock_unlock("malloc'd", p);
        pthread_mutex_destroy(p);
        free(p);
        p = calloc(1, sizeof *p);
        lock_unlock("calloc'd", p);
        free(p);
    } else if (!strcmp(s, "static-init")) {
        static pthread_mutex_t st = PTHREAD_MUTEX_INITIALIZER;
        lock_unlock("static", &st);
        result("init", pthread_mutex_init(&st, NULL));
        lock_unlock("initialised", &st);
    } else if (!strcmp(s, "fork-reinit")) {
        return fork_reinit();
    } else {
        fprintf(stderr, "usage: destroyed lock|timedlock|unlock|trylock|reinit|assign|reuse|"
                        "static-init|fork-reinit\n");
        return 2;
    }
    return 0;
}
