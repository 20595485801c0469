/*
 * dump_cmd.c - `locktrace dump PID`: asks a running traced program for its thread dump by
 * sending it the signal it was started with (LOCKTRACE_DUMP_SIGNAL, read from its initial
 * environment in /proc). PID may be the program, or a launcher: then every process of the
 * launcher's tree (they carry its pid in LOCKTRACE_LAUNCHER_PID) is asked. A program started
 * without a dump signal gets no signal (it would kill it); the command says how to start it.
 * Nor does a process without the tracer's handler for it (not yet, or never: LD_PRELOAD
 * dropped), whose default action would end it too.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "dumpsig.h"
#include "tool.h"

#define ENV_BYTES (1 << 20)
#define MAX_TREE 4096
#define DUMP_WAIT_MS 5000 /* for a launcher's program, its handler, the dump file (not instant) */

typedef struct proc_env {
    char dump_signal[32]; /* "" when unset */
    char report_dir[4096]; /* "" when unset */
    int launcher_pid;     /* 0 when unset */
    int traced;           /* any LOCKTRACE_* variable at all */
} proc_env;

/* Reads /proc/<pid>/environ; 0, or -1 when it cannot be read (gone, or someone else's). */
static int read_env(int pid, proc_env *e)
{
    char path[64];
    static char buf[ENV_BYTES];
    memset(e, 0, sizeof *e);
    snprintf(path, sizeof path, "/proc/%d/environ", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    for (char *v = buf; v < buf + n; v += strlen(v) + 1) {
        if (strncmp(v, "LOCKTRACE_", 10) == 0)
            e->traced = 1;
        if (strncmp(v, "LOCKTRACE_DUMP_SIGNAL=", 22) == 0)
            snprintf(e->dump_signal, sizeof e->dump_signal, "%s", v + 22);
        else if (strncmp(v, "LOCKTRACE_REPORT_DIR=", 21) == 0)
            snprintf(e->report_dir, sizeof e->report_dir, "%s", v + 21);
        else if (strncmp(v, "LOCKTRACE_LAUNCHER_PID=", 23) == 0)
            e->launcher_pid = atoi(v + 23);
    }
    return 0;
}

static void program_name(int pid, char *buf, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    FILE *f = fopen(path, "re");
    buf[0] = 0;
    if (f) {
        if (fgets(buf, (int)size, f))
            buf[strcspn(buf, "\n")] = 0;
        fclose(f);
    }
}

/* SIGUSR1 and the like, as LOCKTRACE_DUMP_SIGNAL spells them (the tracer takes any case, with
 * or without "SIG": config.c), with its usual name in *canon; 0 when off or unknown. */
static int signal_number(const char *name, const char **canon)
{
    static const struct {
        const char *name;
        int sig;
    } sigs[] = {{"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGQUIT", SIGQUIT},
                {"SIGHUP", SIGHUP},   {"SIGWINCH", SIGWINCH}, {"SIGURG", SIGURG},
#ifdef SIGPWR
                {"SIGPWR", SIGPWR},
#endif
    };
    if (strncasecmp(name, "SIG", 3) == 0)
        name += 3;
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        if (strcasecmp(name, sigs[i].name + 3) == 0) {
            *canon = sigs[i].name;
            return sigs[i].sig;
        }
    return 0;
}

/* Where the process writes its dump file: its report directory, a relative one seen from
 * its own working directory. 0 when it writes none. */
static int dump_dir(int pid, const proc_env *e, char *out, size_t size)
{
    if (!e->report_dir[0])
        return 0;
    if (e->report_dir[0] == '/')
        return (size_t)snprintf(out, size, "%s", e->report_dir) < size;
    return (size_t)snprintf(out, size, "/proc/%d/cwd/%s", pid, e->report_dir) < size;
}

/* The dump files of pid in dir: "<program>.<pid>.dump-<n>.json". */
static int count_dumps(const char *dir, int pid)
{
    char mark[32];
    int n = 0;
    snprintf(mark, sizeof mark, ".%d.dump-", pid);
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
        size_t len = strlen(de->d_name);
        n += de->d_name[0] != '.' && strstr(de->d_name, mark) && len > 5 &&
             strcmp(de->d_name + len - 5, ".json") == 0;
    }
    if (d)
        closedir(d);
    return n;
}

/* Whether pid has a handler for sig: its SigCgt mask in /proc/<pid>/status. */
static int catches(int pid, int sig)
{
    char path[64], line[256];
    unsigned long long mask = 0;
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof line, f) && sscanf(line, "SigCgt: %llx", &mask) != 1)
        ;
    if (f)
        fclose(f);
    return (int)((mask >> (sig - 1)) & 1);
}

/* What is waited for: a dump file more than `before` in dir, a handler for sig, a tree. */
typedef struct awaited {
    const char *dir;
    int pid, before, sig;
} awaited;

static int dump_file_came(const awaited *a)
{
    return count_dumps(a->dir, a->pid) > a->before;
}

static int handler_came(const awaited *a)
{
    return catches(a->pid, a->sig);
}

static int tree_came(const awaited *a)
{
    int one;
    return lt_tool_tree(a->pid, &one, 1) > 0;
}

/* Polls ready(a) for up to DUMP_WAIT_MS; its last answer. */
static int within_wait(int (*ready)(const awaited *), const awaited *a)
{
    for (int waited = 0; waited < DUMP_WAIT_MS; waited += 50) {
        if (ready(a))
            return 1;
        nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
    }
    return ready(a);
}

/* Asks one traced process; 0 when the signal was sent and the dump, when it has a file,
 * was written. */
static int ask(int pid, const proc_env *e)
{
    char name[64];
    program_name(pid, name, sizeof name);
    const char *signame = "";
    int sig = signal_number(e->dump_signal, &signame);
    if (!sig) {
        /* the command as it was run: build/tracer/locktrace is not on a newcomer's PATH */
        fprintf(stderr, "locktrace dump: %d (%s) was not started with a dump signal, and any "
                        "signal sent now would end it. Start it again as\n"
                        "  %s --dump-signal=SIGUSR1 -- PROGRAM...   (or with "
                        "LOCKTRACE_DUMP_SIGNAL=SIGUSR1)\n"
                        "then run %s dump again. Meanwhile, gdb -p %d -batch -ex "
                        "'thread apply all bt' shows its threads' stacks.\n", pid, name,
                lt_tool_self, lt_tool_self, pid);
        return 1;
    }
    /* A process whose environment names the signal may not have the tracer's handler for
     * it: one just started (`locktrace ... & locktrace dump $!`) is still before the tracer's
     * constructor, and one started with LD_PRELOAD dropped never gets it. The signal's
     * default action would end it. */
    if (!within_wait(handler_came, &(awaited){.pid = pid, .sig = sig})) {
        fprintf(stderr, "locktrace dump: %d (%s) has no handler for %s after %d s, so the "
                        "tracer is not loaded into it (its environment dropped LD_PRELOAD, or "
                        "it is still starting), and the signal would end it: none was sent. "
                        "Meanwhile, gdb -p %d -batch -ex 'thread apply all bt' shows its "
                        "threads' stacks.\n", pid, name, signame, DUMP_WAIT_MS / 1000, pid);
        return 1;
    }
    char dir[4200];
    int files = dump_dir(pid, e, dir, sizeof dir), before = files ? count_dumps(dir, pid) : 0;
    if (sigqueue(pid, sig, (union sigval){.sival_int = LT_DUMP_SIGVAL}) != 0) {
        fprintf(stderr, "locktrace dump: cannot signal %d (%s): ", pid, name);
        perror(NULL);
        return 1;
    }
    fprintf(stderr, "locktrace dump: asked %d (%s) for its thread dump with %s; it prints it on "
                    "its standard error", pid, name, signame);
    if (files)
        fprintf(stderr, " and writes it to %s/ as *.%d.dump-<n>.json (read it with: %s report %s)",
                e->report_dir, pid, lt_tool_self, e->report_dir);
    fputc('\n', stderr);
    /* A program that blocks the dump signal in every thread, or takes it with sigwait,
     * prints no dump (one with a handler of its own still does: the signal carries
     * LT_DUMP_SIGVAL), so the dump's file is waited for. */
    if (!files || within_wait(dump_file_came, &(awaited){.dir = dir, .pid = pid, .before = before}))
        return 0;
    fprintf(stderr, "locktrace dump: no dump file from %d (%s) after %d s: if the program blocks "
                    "%s in every thread or takes it with sigwait or signalfd (servers' worker "
                    "processes often do), the tracer's handler never ran; start the program with "
                    "another --dump-signal. Meanwhile, gdb -p %d -batch -ex 'thread apply all bt' "
                    "shows its threads' stacks.\n", pid, name, DUMP_WAIT_MS / 1000, signame, pid);
    return 1;
}

int lt_tool_tree(int launcher, int *pids, int max)
{
    DIR *d = opendir("/proc");
    int n = 0;
    for (struct dirent *de; d && n < max && (de = readdir(d)) != NULL;) {
        proc_env e;
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        int pid = atoi(de->d_name);
        if (pid != launcher && read_env(pid, &e) == 0 && e.launcher_pid == launcher)
            pids[n++] = pid;
    }
    if (d)
        closedir(d);
    return n;
}

/* Every process of the launcher's tree; returns how many were asked (failures in *failed). */
static int ask_tree(int launcher, int *failed)
{
    int pids[MAX_TREE], n = lt_tool_tree(launcher, pids, MAX_TREE);
    for (int i = 0; i < n; i++) {
        proc_env e;
        if (read_env(pids[i], &e) == 0)
            *failed |= ask(pids[i], &e);
    }
    return n;
}

/* The parent of pid, from /proc/<pid>/stat (after the command's closing parenthesis: the
 * state, then the parent); 0 when it cannot be read. */
static int parent_of(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "re");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    char *close = strrchr(buf, ')');
    int ppid = 0;
    return close && sscanf(close + 1, " %*c %d", &ppid) == 1 ? ppid : 0;
}

/* A launcher that pid started, as in a CI job's `timeout 600 locktrace -- test`, whose pid is
 * the one at hand: the launcher of a traced process, when its parent is pid; 0 when none. */
static int launcher_child(int pid)
{
    DIR *d = opendir("/proc");
    int found = 0;
    for (struct dirent *de; d && !found && (de = readdir(d)) != NULL;) {
        proc_env e;
        if (isdigit((unsigned char)de->d_name[0]) && read_env(atoi(de->d_name), &e) == 0 &&
            e.launcher_pid > 0 && parent_of(e.launcher_pid) == pid)
            found = e.launcher_pid;
    }
    if (d)
        closedir(d);
    return found;
}

int lt_tool_dump(int argc, char **argv)
{
    char *end;
    long pid = argc == 1 ? strtol(argv[0], &end, 10) : 0;
    if (argc != 1 || *end || pid <= 0) {
        fputs(lt_tool_dump_usage, stderr);
        return 2;
    }
    proc_env e;
    if (read_env((int)pid, &e) != 0) {
        fprintf(stderr, "locktrace dump: no process %ld that this user may look at\n", pid);
        return 1;
    }
    if (e.traced && e.launcher_pid != 0 && e.launcher_pid != pid)
        return ask((int)pid, &e); /* a program under a launcher */
    /* A launcher just started (`locktrace ... & locktrace dump $!`) has not started its
     * program yet, or the program is in the middle of its exec, showing no environment. */
    char self[64];
    program_name((int)pid, self, sizeof self);
    if (strcmp(self, "locktrace") == 0)
        within_wait(tree_came, &(awaited){.pid = (int)pid});
    int failed = 0;
    if (ask_tree((int)pid, &failed))
        return failed; /* a launcher: its whole tree */
    if (e.traced)
        return ask((int)pid, &e); /* run with LD_PRELOAD and LOCKTRACE_* by hand */
    int child = launcher_child((int)pid);
    if (child) {
        char name[64];
        program_name((int)pid, name, sizeof name);
        fprintf(stderr, "locktrace dump: %ld (%s) is not running under locktrace, but it started "
                        "the launcher %d: run %s dump %d\n", pid, name, child, lt_tool_self,
                child);
        return 1;
    }
    fprintf(stderr, "locktrace dump: %ld is not running under locktrace (no LOCKTRACE_* "
                    "variable in its environment, and no process names it as its launcher)\n",
            pid);
    return 1;
}
