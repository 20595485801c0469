/*
 * peer_plugin.c - a plugin with a lock of its own in its data (peer_plugins.c loads it):
 * statically initialised, so no init or destroy ever tells the tracer it is made or ended.
 * plugin_hold takes it and keeps it, or has it let go as the plugin is unloaded: by the
 * plugin's destructor function, or by a function it registers with atexit (run by glibc's
 * __cxa_finalize as the plugin is unloaded).
 *
 * Built three ways: as it is; with PLUGIN_DESTRUCTOR_PRIORITY, a destructor with a priority,
 * which runs after __cxa_finalize (gcc's crtstuff calls that one from the last destructor
 * without a priority); and with PLUGIN_NO_ATEXIT, linked without gcc's start-up files
 * (-nostartfiles: no crtstuff, so __cxa_finalize is never called, and no atexit, which needs
 * crtstuff's __dso_handle).
 */
#include <pthread.h>
#include <stdlib.h>

#ifdef PLUGIN_DESTRUCTOR_PRIORITY
#define DESTRUCTOR __attribute__((destructor(PLUGIN_DESTRUCTOR_PRIORITY)))
#else
#define DESTRUCTOR __attribute__((destructor))
#endif

static pthread_mutex_t plugin_lock = PTHREAD_MUTEX_INITIALIZER;
static int at_unload;

pthread_mutex_t *plugin_mutex(void)
{
    return &plugin_lock;
}

static void release(void)
{
    pthread_mutex_unlock(&plugin_lock);
}

/* how: 0 kept held, 1 let go by the destructor, 2 let go by an atexit function, 3 let go at
 * once, and the destructor takes it and lets it go again */
__attribute__((noinline)) void plugin_hold(int how)
{
    pthread_mutex_lock(&plugin_lock);
    at_unload = how;
#ifndef PLUGIN_NO_ATEXIT
    if (how == 2)
        atexit(release);
#endif
    if (how == 3)
        release();
}

DESTRUCTOR static void unloaded(void)
{
    if (at_unload == 3)
        pthread_mutex_lock(&plugin_lock);
    if (at_unload == 1 || at_unload == 3)
        release();
}
