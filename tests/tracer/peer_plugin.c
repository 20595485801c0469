/*
 * peer_plugin.c - a plugin with a lock of its own in its data (peer_plugins.c loads it):
 * statically initialised, so no init or destroy ever tells the tracer it is made or ended.
 * plugin_hold takes it and keeps it, or has it let go as the plugin is unloaded: by the
 * plugin's destructor function, or by a function it registers with atexit (run by glibc's
 * __cxa_finalize as the plugin is unloaded).
 */
#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t plugin_lock = PTHREAD_MUTEX_INITIALIZER;
static int release_at_unload;

pthread_mutex_t *plugin_mutex(void)
{
    return &plugin_lock;
}

static void release(void)
{
    pthread_mutex_unlock(&plugin_lock);
}

/* how: 0 kept held, 1 let go by the destructor, 2 let go by an atexit function */
__attribute__((noinline)) void plugin_hold(int how)
{
    pthread_mutex_lock(&plugin_lock);
    release_at_unload = how == 1;
    if (how == 2)
        atexit(release);
}

__attribute__((destructor)) static void unloaded(void)
{
    if (release_at_unload)
        release();
}
