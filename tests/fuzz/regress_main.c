/*
 * regress_main.c - runs the fuzz target (fuzz_report.c) once on every file named on the
 * command line or found in the directories named: the committed corpus and every crash the
 * fuzzer ever found. Built with the normal compiler as the `fuzz-regress` test; a crash or an
 * abort fails it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    char err[256];
    size_t len;
    char *text = lt_read_file(path, 64u << 20, &len, err, sizeof err);
    if (!text) {
        printf("%s: %s\n", path, err);
        return 1;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)text, len);
    free(text);
    return 0;
}

static int run_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    int failed = 0;
    if (!d)
        return 0; /* no crashes directory yet: nothing to replay */
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[4096];
        struct stat st;
        if (e->d_name[0] == '.' ||
            (size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path ||
            stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        failed |= run_file(path);
        (*count)++;
    }
    closedir(d);
    return failed;
}

int main(int argc, char **argv)
{
    int count = 0, failed = 0;
    for (int i = 1; i < argc; i++)
        failed |= run_dir(argv[i], &count);
    printf("%d inputs replayed without a crash\n", count);
    return failed || count == 0;
}
