/*
 * local_symbols.c - reports one bad unlock (a report names every frame, so the tracer looks
 * for debug info for this stripped program and for libc), then says which network client
 * libraries its process has mapped: none may be, whatever DEBUGINFOD_URLS says.
 *   local_symbols clean   only takes a lock (for LOCKTRACE_STATS' table), reports nothing, and
 *                         says on stderr when main returns
 *   local_symbols retitle first writes zeros over its argument and environment strings, as
 *                         setproctitle does in nginx, redis and postgres, then reports
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const char *const network[] = {"libdebuginfod", "libcurl", "libssl", "libgnutls"};

extern char **environ;

/* The memory from argv[0] to the end of the last environment string, zeroed: where a process
 * title is written. */
static void retitle(char **argv)
{
    char *end = argv[0] + strlen(argv[0]) + 1;
    for (char **a = argv; *a; a++)
        end = *a + strlen(*a) + 1;
    for (char **e = environ; *e; e++)
        if (*e >= end)
            end = *e + strlen(*e) + 1;
    memset(argv[0], 0, (size_t)(end - argv[0]));
}

int main(int argc, char **argv)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    if (argc > 1 && strcmp(argv[1], "clean") == 0) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
        fprintf(stderr, "local_symbols: main returns\n");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "retitle") == 0)
        retitle(argv);
    pthread_mutex_unlock(&m);

    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (maps && fgets(line, sizeof line, maps))
        for (size_t i = 0; i < sizeof network / sizeof network[0]; i++)
            if (strstr(line, network[i]) && !strstr(line, "(deleted)")) {
                printf("mapped: %s", strchr(line, '/') ? strchr(line, '/') : line);
                found = 1;
            }
    if (!maps)
        return 1;
    fclose(maps);
    printf(found ? "network libraries loaded\n" : "no network libraries\n");
    return 0;
}
