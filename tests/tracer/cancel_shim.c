/*
 * cancel_shim.c - a pthread_cancel between the tracer's and libc's (cancel_fork.c links it
 * before libc; the tracer finds the next pthread_cancel after its own): it tells the program
 * that a cancellation is on its way (cancel_shim_in) and holds it there until the program
 * lets it go (cancel_shim_go), so that the program can fork inside the tracer's pthread_cancel,
 * after the tracer marked the target and before libc sent the cancellation.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

_Atomic int cancel_shim_in, cancel_shim_go;

int pthread_cancel(pthread_t th)
{
    int (*real)(pthread_t) = (int (*)(pthread_t))dlsym(RTLD_NEXT, "pthread_cancel");
    atomic_store(&cancel_shim_in, 1);
    while (!atomic_load(&cancel_shim_go))
        sched_yield();
    return real(th);
}
