/*
 * sigwait_server.c - signals left to one sigwait thread, as servers do (mariadbd): every
 * other thread blocks them. The first lock wait comes before main blocks anything (under
 * LOCKTRACE_WAIT_TIMEOUT it starts the tracer's watchdog); then every thread but the sigwait
 * one must block SIGTERM, and a SIGTERM sent to the process must reach sigwait. Prints that
 * the watchdog appeared, "blocked everywhere" and "sigwait got SIGTERM", or the thread that
 * would take it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static sigset_t term;
static volatile pid_t sigwait_tid;

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *sigwaiter(void *arg)
{
    int sig = 0;
    (void)arg;
    sigwait_tid = (pid_t)syscall(SYS_gettid);
    sigwait(&term, &sig);
    printf("sigwait got %s\n", sig == SIGTERM ? "SIGTERM" : "another signal");
    return NULL;
}

static int threads(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Whether thread tid blocks SIGTERM (its SigBlk line). */
static int blocks_term(const char *tid)
{
    char path[320], line[256];
    unsigned long long mask = 0;
    snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "SigBlk: %llx", &mask) == 1)
            break;
    if (f)
        fclose(f);
    return (mask >> (SIGTERM - 1)) & 1;
}

int main(void)
{
    pthread_t w, s;
    int before = threads();
    pthread_mutex_lock(&m);
    pthread_create(&w, NULL, waiter, NULL);
    /* the waiter blocks on m; under LOCKTRACE_WAIT_TIMEOUT the tracer's watchdog appears */
    for (int i = 0; i < 500 && threads() < before + 2; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    if (threads() >= before + 2)
        puts("a thread of the tracer's appeared");
    pthread_mutex_unlock(&m);
    pthread_join(w, NULL);

    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, NULL);
    pthread_create(&s, NULL, sigwaiter, NULL);
    while (!sigwait_tid)
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    int open_ones = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && atoi(e->d_name) != sigwait_tid && !blocks_term(e->d_name)) {
            printf("thread %s takes SIGTERM\n", e->d_name);
            open_ones++;
        }
    if (d)
        closedir(d);
    if (!open_ones)
        puts("blocked everywhere");
    fflush(stdout);
    kill(getpid(), SIGTERM);
    pthread_join(s, NULL);
    return 0;
}
