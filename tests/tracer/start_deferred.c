/*
 * start_deferred.c - a program that names none of the tracer's lock entry points (as sh, sed
 * or grep): the tracer loads no unwinder at its start, and loads it at the first lock call,
 * here a plugin's (start_plugin.c), whose inversion is then reported with its whole stacks.
 *   start_deferred PLUGIN [thread | signal | fork]
 * Prints whether libunwind is mapped before the plugin is loaded and after its lock calls.
 * The main thread's stack bounds are read at that first call too (thread.c), so the report
 * names main's frames also where that call is not main's own: `thread`, the first order is
 * taken in a thread libc started; `signal`, in a handler on an alternate signal stack;
 * `fork`, the plugin runs in a fork child, which prints and reports, its parent is silent.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Whether libunwind is mapped, from /proc/self/maps (its name is in the first 64 KiB). */
static const char *unwinder_mapped(void)
{
    static char maps[65536];
    int fd = open("/proc/self/maps", O_RDONLY);
    size_t n = 0;
    ssize_t got;
    while (fd >= 0 && n < sizeof maps - 1 && (got = read(fd, maps + n, sizeof maps - 1 - n)) > 0)
        n += (size_t)got;
    if (fd >= 0)
        close(fd);
    maps[n] = 0;
    return strstr(maps, "libunwind") ? "yes" : "no";
}

static void *plugin;

static void *plugin_fn(const char *name)
{
    return plugin ? dlsym(plugin, name) : NULL;
}

static void on_signal(int sig)
{
    (void)sig;
    ((void (*)(void))plugin_fn("plugin_first"))();
}

/* The first order in a handler on an alternate stack (the call's stack is not main's). */
static int first_in_handler(void)
{
    static char alt[64 * 1024];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_ONSTACK};
    if (!plugin_fn("plugin_first") || sigaltstack(&ss, NULL) != 0 ||
        sigaction(SIGUSR1, &sa, NULL) != 0)
        return 1;
    return raise(SIGUSR1);
}

__attribute__((noinline)) static int run(const char *mode)
{
    void (*whole)(void) = (void (*)(void))plugin_fn("plugin_run");
    void (*second)(void) = (void (*)(void))plugin_fn("plugin_second");
    int (*natively)(void) = (int (*)(void))plugin_fn("plugin_first_natively");
    if (!whole || !second || !natively)
        return 1;
    if (!mode || strcmp(mode, "fork") == 0) {
        whole();
    } else {
        if (strcmp(mode, "thread") == 0 ? natively() : first_in_handler())
            return 1;
        second();
    }
    printf("libunwind mapped after the plugin's lock calls: %s\ndone\n", unwinder_mapped());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3)
        return 2;
    const char *mode = argc == 3 ? argv[2] : NULL;
    printf("libunwind mapped at start: %s\n", unwinder_mapped());
    fflush(stdout);
    plugin = dlopen(argv[1], RTLD_NOW);
    if (mode && strcmp(mode, "fork") == 0) {
        pid_t child = fork();
        if (child == 0)
            exit(run(mode));
        int status;
        return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status)
                   ? WEXITSTATUS(status)
                   : 1;
    }
    return run(mode);
}
