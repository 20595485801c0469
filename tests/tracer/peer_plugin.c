/*
 * peer_plugin.c - a plugin with a lock of its own in its data (peer_plugins.c loads it):
 * statically initialised, so no init or destroy ever tells the tracer it is made or ended.
 */
#include <pthread.h>

static pthread_mutex_t plugin_lock = PTHREAD_MUTEX_INITIALIZER;

pthread_mutex_t *plugin_mutex(void)
{
    return &plugin_lock;
}
