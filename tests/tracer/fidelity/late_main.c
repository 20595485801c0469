/*
 * late_main.c - libraries dlopened after the first report (which made the tracer's libdw
 * session): the reports they cause must name their functions, lines and locks. Usage:
 *
 *   late_main FIRST SECOND [NEW]
 *
 * relocks a mutex of its own (report 1), then loads FIRST and calls its plugin_relock
 * (report 2), closes it, renames NEW onto SECOND when given (a library rebuilt at the same
 * path), loads SECOND and calls its plugin_relock (report 3). Run with LOCKTRACE_ACTION=edeadlk
 * so each relock is reported and returns. Prints where each library was loaded: the second
 * one usually lands where the first was. The comments marked with @ name lines
 * fidelity_test.py checks; keep them on the lines they mark.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t early = PTHREAD_MUTEX_INITIALIZER;

static const char *outcome(int rc)
{
    return rc == EDEADLK ? "EDEADLK" : strerror(rc);
}

static int run(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int (*relock)(void) = h ? (int (*)(void))dlsym(h, "plugin_relock") : NULL;
    Dl_info info;
    if (!relock || !dladdr((void *)relock, &info)) {
        fprintf(stderr, "late_main: %s: %s\n", path, dlerror());
        return -1;
    }
    int rc = relock(); /* @run */
    printf("loaded at %p: %s\n", info.dli_fbase, outcome(rc));
    dlclose(h);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: late_main FIRST SECOND [NEW]\n");
        return 2;
    }
    pthread_mutex_lock(&early);
    int rc = pthread_mutex_lock(&early); /* @main:early */
    pthread_mutex_unlock(&early);
    printf("early: %s\n", outcome(rc));
    if (run(argv[1]) != 0) /* @main:first */
        return 1;
    if (argc == 4 && rename(argv[3], argv[2]) != 0) {
        perror("late_main: rename");
        return 1;
    }
    return run(argv[2]) != 0; /* @main:second */
}
