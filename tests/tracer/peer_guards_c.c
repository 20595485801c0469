/*
 * peer_guards_c.c - a C program that loads a C++ module with RTLD_LOCAL and calls into it
 * from two threads: the module's static-initialisation guards bind to the tracer's, which
 * must find the module's C++ runtime where the program cannot see it, or run the guards
 * itself when the module carries its own runtime (-static-libstdc++).
 *   peer_guards_c MODULE [recursive]
 * recursive: call the module's static whose initialiser reaches that static again.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

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
    if (argc > 2 && strcmp(argv[2], "recursive") == 0) {
        int (*recursive)(void) = (int (*)(void))dlsym(h, "module_recursive");
        printf("recursive %d\n", recursive ? recursive() : -1);
        return 0;
    }
    pthread_create(&t, NULL, ask, NULL);
    const char *mine = module_name();
    pthread_join(t, &from_thread);
    printf("%s, %s\n", mine, mine == from_thread ? "same" : "different");
    puts("done");
    return 0;
}
