/*
 * start_deferred.c - a program that names none of the tracer's lock entry points (as sh, sed
 * or grep): the tracer loads no unwinder at its start, and loads it at the first lock call,
 * here a plugin's (start_plugin.c), whose inversion is then reported with its whole stacks.
 *   start_deferred PLUGIN
 * Prints whether libunwind is mapped before the plugin is loaded and after its lock calls.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    printf("libunwind mapped at start: %s\n", unwinder_mapped());
    void *plugin = dlopen(argv[1], RTLD_NOW);
    void (*run)(void) = plugin ? (void (*)(void))dlsym(plugin, "plugin_run") : NULL;
    if (!run)
        return 1;
    run();
    printf("libunwind mapped after the plugin's lock calls: %s\ndone\n", unwinder_mapped());
    return 0;
}
