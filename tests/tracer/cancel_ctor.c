/*
 * cancel_ctor.c - a cancellation whose sending blocks in libc: glibc's pthread_cancel loads
 * libgcc_s the first time it cancels a thread that has not exited, which takes the loader's
 * lock. A thread runs a plugin's constructor (dlopen holds that lock) and joins a worker
 * there while another thread cancels it, so the canceller waits for the lock until the
 * constructor has returned; the loader is cancelled afterwards, at its testcancel. A first
 * cancellation, of a thread that has exited already, returns before that load and makes the
 * one that matters the first to make it.
 *   cancel_ctor PLUGIN   (libcancel_ctor_plugin.so)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "apis/poll.h"

static pthread_t loader;
static const char *plugin;
static _Atomic int in_constructor, canceller_tid, gone_tid;

static void *worker(void *arg)
{
    return arg;
}

/* Whether thread tid sleeps on a futex word of the dynamic loader's (its lock). */
static int on_loader_lock(int tid)
{
    char path[64];
    uintptr_t word;
    Dl_info info;
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    return blocked_futex_word_at(path, &word) && dladdr((void *)word, &info) &&
           info.dli_fname && strstr(info.dli_fname, "ld-linux");
}

/* The plugin's constructor, on the loader thread, the loader's lock held. */
void cancel_ctor_in_constructor(void)
{
    pthread_t w;
    pthread_create(&w, NULL, worker, NULL);
    atomic_store(&in_constructor, 1);
    int tid;
    while (!(tid = atomic_load(&canceller_tid)) || !on_loader_lock(tid))
        sched_yield();
    puts("canceller waits for the loader's lock");
    fflush(stdout);
    printf("constructor's join -> %d\n", pthread_join(w, NULL));
    fflush(stdout);
}

static void *load(void *arg)
{
    (void)arg;
    if (!dlopen(plugin, RTLD_NOW)) {
        printf("dlopen: %s\n", dlerror());
        return NULL;
    }
    for (;;)
        pthread_testcancel();
}

static void *cancel_loader(void *arg)
{
    (void)arg;
    while (!atomic_load(&in_constructor))
        sched_yield();
    atomic_store(&canceller_tid, blocked_tid());
    printf("cancel -> %d\n", pthread_cancel(loader));
    return NULL;
}

static void *exit_at_once(void *arg)
{
    atomic_store(&gone_tid, blocked_tid());
    return arg;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 64;
    plugin = argv[1];
    pthread_t gone, canceller;
    void *ret;
    char task[64];
    pthread_create(&gone, NULL, exit_at_once, NULL);
    while (!atomic_load(&gone_tid))
        sched_yield();
    /* its task leaves /proc after the kernel cleared its tid, which glibc's cancel reads */
    snprintf(task, sizeof task, "/proc/self/task/%d", atomic_load(&gone_tid));
    while (access(task, F_OK) == 0)
        sched_yield();
    printf("cancel of an exited thread -> %d\n", pthread_cancel(gone));
    pthread_join(gone, NULL);
    pthread_create(&loader, NULL, load, NULL);
    pthread_create(&canceller, NULL, cancel_loader, NULL);
    pthread_join(canceller, NULL);
    pthread_join(loader, &ret);
    puts(ret == PTHREAD_CANCELED ? "loader cancelled" : "loader not cancelled");
    puts("done");
    return 0;
}
