/*
 * verdicts.h - what the generated-scenario programs (matrix.c, peer_orders.c) share: run a
 * scenario in a child process of its own with its stderr captured, and read the set of
 * report kinds the tracer printed there. A child that hangs is ended by an alarm.
 */
#ifndef VERDICTS_H
#define VERDICTS_H

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define VERDICT_ALARM_S 20 /* a child still running then has hung */

/* Runs fn(arg) in a child whose stderr goes into out (size bytes, NUL-terminated); returns
 * the child's wait status, or -1 when no child could be made. */
static inline int verdict_child(void (*fn)(const void *), const void *arg, char *out,
                                size_t size)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[0]);
        dup2(p[1], 2);
        close(p[1]);
        alarm(VERDICT_ALARM_S);
        fn(arg);
        _exit(0);
    }
    close(p[1]);
    size_t len = 0;
    ssize_t n;
    while ((n = read(p[0], out + len, size - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = 0;
    close(p[0]);
    int status;
    waitpid(pid, &status, 0);
    return status;
}

/* The kinds (bit k for names[k]) of the "locktrace: KIND:" lines in text. */
static inline unsigned verdict_kinds(const char *text, const char *const *names, size_t n)
{
    unsigned got = 0;
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line) {
        if (strncmp(line, "locktrace: ", 11) != 0)
            continue;
        for (size_t k = 0; k < n; k++) {
            size_t len = strlen(names[k]);
            if (strncmp(line + 11, names[k], len) == 0 && line[11 + len] == ':')
                got |= 1u << k;
        }
    }
    return got;
}

static inline void verdict_print(unsigned set, const char *const *names, size_t n)
{
    printf("{");
    for (size_t k = 0, first = 1; k < n; k++)
        if (set & (1u << k)) {
            printf("%s%s", first ? "" : ", ", names[k]);
            first = 0;
        }
    printf("}");
}

/* How a child ended, when not with status 0: ", killed by signal N" or ", exit status N". */
static inline void verdict_print_ending(int status)
{
    if (status == -1)
        printf(", no child process");
    else if (WIFSIGNALED(status))
        printf(", killed by signal %d", WTERMSIG(status));
    else if (WEXITSTATUS(status) != 0)
        printf(", exit status %d", WEXITSTATUS(status));
}

/* A program of generated scenarios: `prog [--list] [SUBSTRING]` runs every scenario (whose
 * name contains SUBSTRING), or lists it with its expected verdict, and ends with the line
 * "PROG: N scenarios, M failed". */
typedef struct verdict_suite {
    const char *prog;
    int count;
    const char *(*name)(int i);
    void (*print_expected)(int i);
    int (*run)(int i); /* 1 when scenario i got its expected verdict */
} verdict_suite;

static inline int verdict_main(int argc, char **argv, const verdict_suite *v)
{
    int list = argc > 1 && strcmp(argv[1], "--list") == 0;
    const char *only = argc > 1 + list ? argv[1 + list] : NULL;
    int ran = 0, failed = 0;
    for (int i = 0; i < v->count; i++) {
        if (only && !strstr(v->name(i), only))
            continue;
        ran++;
        if (list) {
            printf("%s: ", v->name(i));
            v->print_expected(i);
            printf("\n");
        } else {
            failed += !v->run(i);
        }
    }
    printf("%s: %d scenarios, %d failed\n", v->prog, ran, failed);
    return failed != 0;
}

#endif
