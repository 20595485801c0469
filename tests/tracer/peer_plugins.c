/*
 * peer_plugins.c - a plugin's own lock across dlclose (Apache's graceful restart, PAM
 * modules, any plugin host that unloads and loads again):
 *   peer_plugins NAME PLUGIN USER_PLUGIN
 *   - reload: the plugin's lock taken under a lock of the program's, the plugin unloaded
 *     and loaded again (at the same address: the loader reuses the hole), its lock then
 *     taken the other way. Two locks, not one: the first went with its library. Silent.
 *   - dependency: the same through a plugin that needs it, so that unloading the one
 *     unloads the other. Silent.
 *   - kept: loaded twice and closed once, so still loaded: its lock is the same lock, and
 *     the other way is an inversion, reported.
 *   - after-inversion: two locks of the program's taken in both orders (an inversion,
 *     reported: the order graph has a cycle from then on, and a lock leaves it at once), the
 *     plugin's lock taken under and over them, the plugin unloaded (peer_plugin_far.c: its
 *     lock's page stays unmapped). The tracer read the gone lock's word (SIGSEGV; LibreOffice
 *     at exit, NSS_Shutdown unloading its modules). Prints "unloaded".
 *   - unload-held: the plugin's lock taken under the program's, then taken and kept, and the
 *     plugin unloaded: its holder would unlock unmapped memory (free-held). Loaded again, its
 *     lock taken the other way: a new lock, silent.
 *   - unload-held-other: the same kept by another thread, unloaded by the main thread.
 *   - unload-released, unload-released-atexit: the lock kept until the plugin's destructor,
 *     or a function it registered with atexit, lets it go as the plugin is unloaded: silent.
 *   - unload-kept-held: kept held while a second handle keeps the plugin loaded: silent.
 *   - unload-held-deepbind: loaded with RTLD_DEEPBIND (its calls bind to libc first: its
 *     __cxa_finalize is libc's own), its lock taken by the program and kept, the plugin
 *     unloaded: free-held.
 *   - unload-relocked: the plugin's destructor takes its lock and lets it go as it is
 *     unloaded: silent.
 *   - never-unloaded: the lock kept, the plugin never unloaded, the program exits: silent.
 *   - unload-under-program-lock: unload-released while the program holds a lock of its own
 *     (a plugin host's registry lock): silent.
 * PLUGIN may be peer_plugin.c built with a destructor of a priority, or without gcc's
 * start-up files (meson.build).
 * Each prints whether the lock came back at its address, or what it did, and "done".
 */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static pthread_mutex_t program_lock = PTHREAD_MUTEX_INITIALIZER;

static void *load(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        exit(2);
    }
    return h;
}

static pthread_mutex_t *lock_of(void *h, const char *getter)
{
    pthread_mutex_t *(*get)(void) = (pthread_mutex_t * (*)(void)) dlsym(h, getter);
    if (!get) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        exit(2);
    }
    return get();
}

NOINLINE static void nest(pthread_mutex_t *outer, pthread_mutex_t *inner)
{
    pthread_mutex_lock(outer);
    pthread_mutex_lock(inner);
    pthread_mutex_unlock(inner);
    pthread_mutex_unlock(outer);
}

/* round 0 takes the plugin's lock under the program's, round 1 the other way */
NOINLINE static void reload(const char *path, const char *getter, int keep)
{
    pthread_mutex_t *at[2];
    void *kept = keep ? load(path) : NULL;
    for (int round = 0; round < 2; round++) {
        void *h = load(path);
        at[round] = lock_of(h, getter);
        if (round == 0)
            nest(&program_lock, at[round]);
        else
            nest(at[round], &program_lock);
        dlclose(h);
    }
    if (kept)
        dlclose(kept);
    printf("same address: %s\n", at[0] == at[1] ? "yes" : "no");
}

static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER,
                       second_lock = PTHREAD_MUTEX_INITIALIZER;

NOINLINE static void after_inversion(const char *path)
{
    nest(&first_lock, &second_lock);
    nest(&second_lock, &first_lock);
    void *h = load(path);
    pthread_mutex_t *plugin = lock_of(h, "plugin_mutex");
    nest(&program_lock, plugin);
    nest(&first_lock, plugin);
    nest(plugin, &second_lock);
    dlclose(h);
    printf("unloaded\n");
}

static void hold(void *h, int how)
{
    void (*hold_it)(int) = (void (*)(int))dlsym(h, "plugin_hold");
    if (!hold_it) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        exit(2);
    }
    hold_it(how);
}

NOINLINE static void unload_held(const char *path)
{
    void *h = load(path);
    pthread_mutex_t *before = lock_of(h, "plugin_mutex");
    nest(&program_lock, before);
    hold(h, 0);
    dlclose(h);
    h = load(path);
    pthread_mutex_t *after = lock_of(h, "plugin_mutex");
    nest(after, &program_lock);
    dlclose(h);
    printf("unloaded while held, same address: %s\n", before == after ? "yes" : "no");
}

NOINLINE static void unload_held_deepbind(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        exit(2);
    }
    pthread_mutex_lock(lock_of(h, "plugin_mutex"));
    dlclose(h);
    puts("unloaded while held, bound deep");
}

NOINLINE static void never_unloaded(const char *path)
{
    hold(load(path), 0);
    puts("kept held, never unloaded");
}

static sem_t held, unloaded;

static void *holder(void *h)
{
    hold(h, 0);
    sem_post(&held);
    sem_wait(&unloaded);
    return NULL;
}

NOINLINE static void unload_held_other(const char *path)
{
    pthread_t t;
    void *h = load(path);
    sem_init(&held, 0, 0);
    sem_init(&unloaded, 0, 0);
    pthread_create(&t, NULL, holder, h);
    sem_wait(&held);
    dlclose(h);
    sem_post(&unloaded);
    pthread_join(t, NULL);
    puts("unloaded while another thread holds it");
}

NOINLINE static void unload_released(const char *path, int how)
{
    void *h = load(path);
    hold(h, how);
    dlclose(h);
    puts("unloaded, let go as it was");
}

NOINLINE static void unload_under_program_lock(const char *path)
{
    pthread_mutex_lock(&program_lock);
    unload_released(path, 1);
    pthread_mutex_unlock(&program_lock);
}

NOINLINE static void unload_kept_held(const char *path)
{
    void *kept = load(path), *h = load(path);
    pthread_mutex_t *lock = lock_of(h, "plugin_mutex");
    hold(h, 0);
    dlclose(h);
    pthread_mutex_unlock(lock);
    dlclose(kept);
    puts("closed while held, still loaded");
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    if (!strcmp(argv[1], "reload"))
        reload(argv[2], "plugin_mutex", 0);
    else if (!strcmp(argv[1], "dependency"))
        reload(argv[3], "user_plugin_mutex", 0);
    else if (!strcmp(argv[1], "kept"))
        reload(argv[2], "plugin_mutex", 1);
    else if (!strcmp(argv[1], "after-inversion"))
        after_inversion(argv[2]);
    else if (!strcmp(argv[1], "unload-held"))
        unload_held(argv[2]);
    else if (!strcmp(argv[1], "unload-held-other"))
        unload_held_other(argv[2]);
    else if (!strcmp(argv[1], "unload-released"))
        unload_released(argv[2], 1);
    else if (!strcmp(argv[1], "unload-released-atexit"))
        unload_released(argv[2], 2);
    else if (!strcmp(argv[1], "unload-kept-held"))
        unload_kept_held(argv[2]);
    else if (!strcmp(argv[1], "unload-held-deepbind"))
        unload_held_deepbind(argv[2]);
    else if (!strcmp(argv[1], "unload-relocked"))
        unload_released(argv[2], 3);
    else if (!strcmp(argv[1], "never-unloaded"))
        never_unloaded(argv[2]);
    else if (!strcmp(argv[1], "unload-under-program-lock"))
        unload_under_program_lock(argv[2]);
    else
        return 2;
    puts("done");
    return 0;
}
