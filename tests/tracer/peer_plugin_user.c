/*
 * peer_plugin_user.c - a plugin that needs another (peer_plugin.c, linked in): unloading it
 * unloads that one too, when nothing else holds it.
 */
#include <pthread.h>

pthread_mutex_t *plugin_mutex(void);

pthread_mutex_t *user_plugin_mutex(void)
{
    return plugin_mutex();
}
