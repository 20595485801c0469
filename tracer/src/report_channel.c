/*
 * report_channel.c - the reports the launcher hears of, whatever became of their files.
 * Under the launcher (LOCKTRACE_LAUNCHER_SOCKET=@NAME:KEY), each new report a process prints
 * sends one datagram to the launcher's socket:
 *     locktrace-reports KEY PID IMAGE KIND=N[,KIND=N...]
 * with the process's running count of distinct reports per kind; IMAGE tells an exec'd
 * program from the one before it under the same pid. The launcher counts these beside the
 * report files, for --exitcode and its last line: a process whose files could not be written
 * (a full disk, a read-only or removed directory) still fails the run, and the line says how
 * many reports have no file. Suppressed and expected reports send nothing (report.c).
 *
 * Why a datagram to an abstract unix socket: it needs no file system (what failed the files),
 * no descriptor kept for the program's life (a daemon closes them all, and an inherited
 * descriptor number may be the program's own file by then), only the environment, which
 * shells, make, fork and exec pass on, a set-user-ID program too. Never waiting: the socket is
 * non-blocking; when the launcher's queue is full (10 datagrams by default) the counts stay
 * pending and go again with the next report, before an abort and at exit: each datagram
 * carries the running counts, so any one that arrives says all the earlier ones did. Nothing
 * happens when there is no launcher any more (a daemon that outlived it). The key (in the
 * environment, which only the user can read) keeps other users' datagrams out: the socket's
 * name is visible to all in /proc/net/unix.
 *
 * The exec functions (interpose_exec.c) say here which programs they start untraced.
 *
 * Called under the report lock, or from the exit paths through lt_report_exclusive; the exec
 * messages from anywhere (a vfork child too): no allocation, no lock.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lt_internal.h"
#include "platform.h"
#include "report_data.h"

#define NAME_BYTES 108 /* sockaddr_un's sun_path */
#define KEY_BYTES 64

static char name[NAME_BYTES], key[KEY_BYTES];
static unsigned long counts[LT_FIND_KIND_COUNT] LT_START_DATA;
static int pending LT_START_DATA; /* counts not yet heard: the last send found the queue full */
static pid_t owner LT_START_DATA;  /* 0: no launcher; a vfork child shares these: it sends
                                      nothing */
static long image; /* when the tracer loaded: microseconds within 1000 s */

/* "@NAME:KEY" into name and key; off (name "") when the value is not of that form. */
void lt_report_channel_setup(void)
{
    const char *v = lt_cfg.launcher_socket, *colon = strrchr(v, ':');
    size_t n = colon ? (size_t)(colon - v) : 0;
    struct timespec t;
    if (v[0] != '@' || n < 2 || n - 1 >= sizeof name || !colon[1] ||
        strlen(colon + 1) >= sizeof key)
        return;
    owner = getpid();
    memcpy(name, v + 1, n - 1);
    name[n - 1] = 0;
    lt_fmt_str(key, sizeof key, 0, colon + 1);
    clock_gettime(CLOCK_REALTIME, &t);
    image = (long)(t.tv_sec % 1000) * 1000000 + t.tv_nsec / 1000;
}

#define MSG_BYTES 640

/* "<word> KEY PID " into msg (MSG_BYTES); its length. */
static size_t head(char *msg, const char *word, long pid)
{
    size_t at = lt_fmt_str(msg, MSG_BYTES, 0, word);
    at = lt_fmt_str(msg, MSG_BYTES, at, " ");
    at = lt_fmt_str(msg, MSG_BYTES, at, key);
    at = lt_fmt_str(msg, MSG_BYTES, at, " ");
    at = lt_fmt_dec(msg, MSG_BYTES, at, pid);
    return lt_fmt_str(msg, MSG_BYTES, at, " ");
}

/* With cancellation off: sendto is a cancellation point, and the exit paths call this under
 * the report lock. */
static void send_counts(void)
{
    char msg[MSG_BYTES];
    int state;
    if (!owner || owner != getpid())
        return;
    size_t at = head(msg, "locktrace-reports", (long)owner);
    at = lt_fmt_dec(msg, sizeof msg, at, image);
    for (int k = 0, first = 1; k < LT_FIND_KIND_COUNT; k++) {
        if (!counts[k])
            continue;
        at = lt_fmt_str(msg, sizeof msg, at, first ? " " : ",");
        at = lt_fmt_str(msg, sizeof msg, at, lt_rep_kind_name(k));
        at = lt_fmt_str(msg, sizeof msg, at, "=");
        at = lt_fmt_dec(msg, sizeof msg, at, (long)counts[k]);
        first = 0;
    }
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
    pending = lt_platform_datagram(name, msg, at) == 1;
    pthread_setcancelstate(state, NULL);
}

void lt_report_channel_new(lt_finding_kind kind)
{
    counts[kind]++;
    send_counts();
}

void lt_report_channel_flush(void)
{
    if (pending)
        send_counts();
}

int lt_report_channel_pending(void)
{
    return pending;
}

/* "locktrace-exec KEY PID WHAT PROGRAM": PROGRAM runs as process PID (or, from system and
 * popen, is started by it) untraced, or traced but unheard, or that is taken back (failed).
 * No lock, no state: the caller may be a vfork child. */
void lt_report_channel_exec(const char *what, long pid, const char *program)
{
    char msg[MSG_BYTES];
    int state;
    if (!owner)
        return;
    size_t at = head(msg, "locktrace-exec", pid);
    at = lt_fmt_str(msg, sizeof msg, at, what);
    at = lt_fmt_str(msg, sizeof msg, at, " ");
    at = lt_fmt_str(msg, sizeof msg, at, program);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
    lt_platform_datagram(name, msg, at);
    pthread_setcancelstate(state, NULL);
}

/* Nothing to do (no system call in every fork) when there is no launcher: owner is 0. */
LT_FORK_PATH void lt_report_channel_fork_child(void)
{
    if (!owner)
        return;
    owner = getpid();
    pending = 0;
    memset(counts, 0, sizeof counts);
}
