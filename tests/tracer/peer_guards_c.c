/*
 * peer_guards_c.c - a C program that loads a C++ module with RTLD_LOCAL and calls into it
 * from two threads: the module's static-initialisation guards bind to the tracer's, which
 * must find the module's C++ runtime where the program cannot see it, or run the guards
 * itself when the module carries its own runtime (-static-libstdc++).
 *   peer_guards_c MODULE
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static const char *(*module_name)(void);

static void *ask(void *arg)
{
    (void)arg;
    return (void *)module_name();
}

int main(int argc, char **argv)
{
    pthread_t t;
    void *from_thread;
    void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h || !(module_name = (const char *(*)(void))dlsym(h, "module_name"))) {
        fprintf(stderr, "peer_guards_c: %s\n", dlerror());
        return 2;
    }
    pthread_create(&t, NULL, ask, NULL);
    const char *mine = module_name();
    pthread_join(t, &from_thread);
    printf("%s, %s\n", mine, mine == from_thread ? "same" : "different");
    puts("done");
    return 0;
}
