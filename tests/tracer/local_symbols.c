/*
 * local_symbols.c - reports one bad unlock (a report names every frame, so the tracer looks
 * for debug info for this stripped program and for libc), then says which network client
 * libraries its process has mapped: none may be, whatever DEBUGINFOD_URLS says.
 *   local_symbols clean   only takes a lock (for LOCKTRACE_STATS' table), reports nothing, and
 *                         says on stderr when main returns
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const char *const network[] = {"libdebuginfod", "libcurl", "libssl", "libgnutls"};

int main(int argc, char **argv)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    if (argc > 1 && strcmp(argv[1], "clean") == 0) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
        fprintf(stderr, "local_symbols: main returns\n");
        return 0;
    }
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
