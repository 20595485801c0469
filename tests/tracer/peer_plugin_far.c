/*
 * peer_plugin_far.c - peer_plugin.c's lock with 1 MiB of zeroed data above it: once the
 * plugin is unloaded, a small mapping made meanwhile (the loader's, the tracer's) takes the
 * top of the hole it left, and the lock's page stays unmapped, as LibreOffice's NSS modules'
 * locks were when NSS_Shutdown unloaded them at exit. The lock is in .data, below .bss.
 */
#include <pthread.h>

__attribute__((section(".data"))) static pthread_mutex_t plugin_lock = PTHREAD_MUTEX_INITIALIZER;
static char room[1 << 20];

pthread_mutex_t *plugin_mutex(void)
{
    return &plugin_lock;
}

char *plugin_room(void)
{
    return room;
}
