/*
 * channel.c - the launcher's socket for the datagrams of the tracer's report_channel.c: every
 * traced process of the tree says there how many distinct reports of each kind it has made
 * so far, so the launcher knows of a report whose file was never written (a full disk, a
 * read-only directory, one a child removed) and --exitcode still fires for it.
 *
 * The socket is in Linux's abstract namespace (no file to create, remove or lose), named
 * locktrace-<pid>-<random>; LOCKTRACE_LAUNCHER_SOCKET=@NAME:KEY hands it down. The name is
 * visible to every user (/proc/net/unix), the environment only to the user: a datagram counts
 * only with the key. Each datagram carries a process's running counts (its pid and the time
 * its tracer loaded tell one program from the next one exec'd under that pid), so the last
 * one heard of a process says everything, and one lost to a full queue is made up by the next.
 * The tracer's exec functions say on it which programs they start without the tracer, or
 * without this socket (interpose_exec.c): the launcher names them at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

#define MAX_KINDS LT_TOOL_KINDS

typedef struct heard_process {
    long pid, image;
    long counts[MAX_KINDS]; /* by the index of the kind in kinds */
} heard_process;

static char key[33];
static char kinds[MAX_KINDS][64];
static size_t nkinds;
static heard_process *procs;
static size_t nprocs, cap;

/* n bytes of the system's randomness as hex into out (2n + 1 bytes); the clock and pid mixed
 * in when there is none. */
static void random_hex(char *out, size_t n)
{
    unsigned char bytes[16] = {0};
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, bytes, n) : -1;
    if (fd >= 0)
        close(fd);
    if (got != (ssize_t)n) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        unsigned long long x = (unsigned long long)t.tv_nsec * 0x9e3779b97f4a7c15ull ^
                               (unsigned long long)getpid() << 20 ^ (unsigned long long)t.tv_sec;
        for (size_t i = 0; i < n; i++, x = x * 6364136223846793005ull + 1442695040888963407ull)
            bytes[i] ^= (unsigned char)(x >> 56);
    }
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", bytes[i]);
}

int lt_channel_open(void)
{
#ifdef __linux__
    char name[64], value[128];
    random_hex(key, 16);
    for (int tries = 0; tries < 4; tries++) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        char nonce[17];
        random_hex(nonce, 8);
        int n = snprintf(name, sizeof name, "locktrace-%d-%s", (int)getpid(), nonce);
        memcpy(a.sun_path + 1, name, (size_t)n);
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            return -1;
        if (bind(fd, (struct sockaddr *)&a,
                 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0) {
            snprintf(value, sizeof value, "@%s:%s", name, key);
            setenv("LOCKTRACE_LAUNCHER_SOCKET", value, 1);
            return fd;
        }
        close(fd);
        if (errno != EADDRINUSE)
            return -1;
    }
#endif
    return -1;
}

static long *count_of(heard_process *p, const char *kind)
{
    size_t k = 0;
    while (k < nkinds && strcmp(kinds[k], kind) != 0)
        k++;
    if (k == MAX_KINDS)
        return NULL;
    if (k == nkinds)
        snprintf(kinds[nkinds++], sizeof kinds[0], "%s", kind);
    return &p->counts[k];
}

static heard_process *process(long pid, long image)
{
    for (size_t i = 0; i < nprocs; i++)
        if (procs[i].pid == pid && procs[i].image == image)
            return &procs[i];
    if (nprocs == cap) {
        heard_process *p = realloc(procs, (cap = cap ? cap * 2 : 16) * sizeof *p);
        if (!p)
            return NULL;
        procs = p;
    }
    procs[nprocs] = (heard_process){pid, image, {0}};
    return &procs[nprocs++];
}

/* A kind's name as the tracer writes them: lowercase letters and '-'. */
static int kind_name(const char *s)
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz-");
    return n > 0 && n < 64 && s[n] == 0;
}

/* "locktrace-reports KEY PID IMAGE KIND=N[,KIND=N...]" */
static void heard(char *msg)
{
    char *save, *word = strtok_r(msg, " \n", &save);
    if (!word || strcmp(word, "locktrace-reports") != 0)
        return;
    const char *k = strtok_r(NULL, " \n", &save), *pid = strtok_r(NULL, " \n", &save),
               *image = strtok_r(NULL, " \n", &save);
    char *list = strtok_r(NULL, " \n", &save);
    if (!k || strcmp(k, key) != 0 || !pid || !image || !list)
        return;
    heard_process *p = process(atol(pid), atol(image));
    for (char *s2, *item = strtok_r(list, ",", &s2); p && item; item = strtok_r(NULL, ",", &s2)) {
        char *eq = strchr(item, '=');
        if (!eq)
            continue;
        *eq = 0;
        long n = atol(eq + 1), *c = kind_name(item) ? count_of(p, item) : NULL;
        if (c && n > *c) /* running counts: one that came late says less */
            *c = n;
    }
}

/* The programs a traced process started untraced (no tracer in the environment it gave
 * them) or unheard (traced, but without this socket in their environment). */
typedef struct started {
    long pid;
    int unheard;
    char *program;
} started;

static started *starts;
static size_t nstarts, starts_cap;

/* "locktrace-exec KEY PID untraced|unheard|failed PROGRAM": a failed one takes back the
 * last word of that process about that program. */
static void heard_exec(char *rest)
{
    char *save, *k = strtok_r(rest, " ", &save), *pid = strtok_r(NULL, " ", &save),
                *what = strtok_r(NULL, " ", &save), *program = save;
    if (!k || strcmp(k, key) != 0 || !pid || !what || !program || !*program)
        return;
    program[strcspn(program, "\n")] = 0;
    for (char *c = program; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    if (strcmp(what, "failed") == 0) {
        for (size_t i = nstarts; i-- > 0;)
            if (starts[i].pid == atol(pid) && strcmp(starts[i].program, program) == 0) {
                free(starts[i].program);
                starts[i] = starts[--nstarts];
                break;
            }
        return;
    }
    if (strcmp(what, "untraced") != 0 && strcmp(what, "unheard") != 0)
        return;
    if (nstarts == starts_cap) {
        started *p = realloc(starts, (starts_cap = starts_cap ? starts_cap * 2 : 8) * sizeof *p);
        if (!p)
            return;
        starts = p;
    }
    char *copy = strdup(program);
    if (copy)
        starts[nstarts++] = (started){atol(pid), what[2] == 'h', copy};
}

/* One line for the programs that ran untraced (unheard = 0) or unheard (1), when any. */
static void say_started(int unheard)
{
    size_t n = 0, shown = 0;
    for (size_t i = 0; i < nstarts; i++)
        n += starts[i].unheard == unheard;
    if (!n)
        return;
    if (unheard)
        fprintf(stderr, "locktrace: %zu program%s ran traced but without LOCKTRACE_LAUNCHER_SOCKET "
                        "in %s environment (the program that started %s replaced it), so %s "
                        "reports do not count here unless %s files do: ", n, n == 1 ? "" : "s",
                n == 1 ? "its" : "their", n == 1 ? "it" : "them", n == 1 ? "its" : "their",
                n == 1 ? "its" : "their");
    else
        fprintf(stderr, "locktrace: %zu program%s ran without the tracer: the program that started "
                        "%s gave %s an environment whose LD_PRELOAD does not name it (cleared or "
                        "replaced): ", n, n == 1 ? "" : "s", n == 1 ? "it" : "them",
                n == 1 ? "it" : "them");
    for (size_t i = 0; i < nstarts && shown < 3; i++)
        if (starts[i].unheard == unheard)
            fprintf(stderr, "%s%s (in pid %ld)", shown++ ? ", " : "", starts[i].program,
                    starts[i].pid);
    if (n > shown)
        fprintf(stderr, " and %zu more", n - shown);
    fputc('\n', stderr);
}

void lt_channel_say_started(void)
{
    say_started(0);
    say_started(1);
}

void lt_channel_drain(int fd)
{
    char msg[1024]; /* the tracer's are 640 bytes at most */
    ssize_t n;
    while (fd >= 0 && (n = recv(fd, msg, sizeof msg - 1, MSG_DONTWAIT)) >= 0) {
        msg[n] = 0;
        if (strncmp(msg, "locktrace-exec ", 15) == 0)
            heard_exec(msg + 15);
        else
            heard(msg);
    }
}

void lt_channel_heard(lt_kind_counts *out)
{
    out->n = nkinds;
    for (size_t k = 0; k < nkinds; k++) {
        snprintf(out->k[k].kind, sizeof out->k[k].kind, "%s", kinds[k]);
        out->k[k].reports = 0;
        for (size_t i = 0; i < nprocs; i++)
            out->k[k].reports += procs[i].counts[k];
    }
}
