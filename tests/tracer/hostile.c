/*
 * hostile.c - correct programs in environments that the tracer, preloaded into every process
 * of a test run, must not turn into a failure or a lost report:
 *   hostile stderr-gone      stderr is a pipe whose reader has gone (a log collector that
 *                            died, `prog 2>&1 | head -1`); the program makes a report (one
 *                            thread takes two mutexes in both orders, which goes on) and
 *                            prints "survived": natively it never writes to stderr
 *   hostile stderr-full      stderr is a pipe nobody reads, already full; the same report; then
 *                            its file is looked for (in a copy of the program started with
 *                            LOCKTRACE_REPORT_DIR set to a new directory)
 *   hostile relative-dir     a copy started in a new directory with LOCKTRACE_REPORT_DIR=reports
 *                            makes a report, changes to the parent directory (as a daemon's
 *                            chdir("/") does), repeats it and makes another: the two report
 *                            files and the summary are in the directory it started in, none
 *                            in the parent
 *   hostile umask            a copy running as nobody (when started as root) with umask 0777
 *                            makes a report into a report directory that does not exist yet:
 *                            the directory is made, its file written and readable by its owner
 *   hostile long-name        a copy of the program under a 240-byte name (a file name may have
 *                            255) makes a report: its file is written, under a shortened name
 *   hostile nofile           a copy with a report directory opens files up to its descriptor
 *                            limit (64), makes a report there (no names, no file: said), closes
 *                            them and makes another: that one has its function names and its
 *                            file
 *   hostile abort-longjmp    a SIGABRT handler that jumps back into main (siglongjmp, as some
 *                            test frameworks do); then a self-deadlock, which the tracer
 *                            reports and aborts: the handler runs, and the process still ends
 *                            with SIGABRT rather than going on
 * Prints "done" at a normal end.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER, second = PTHREAD_MUTEX_INITIALIZER;

/* One thread takes both mutexes in both orders: a lock-order-inversion report, and on. */
static __attribute__((noinline)) void both_orders(void)
{
    pthread_mutex_lock(&first);
    pthread_mutex_lock(&second);
    pthread_mutex_unlock(&second);
    pthread_mutex_unlock(&first);
    pthread_mutex_lock(&second);
    pthread_mutex_lock(&first);
    pthread_mutex_unlock(&first);
    pthread_mutex_unlock(&second);
}

static pthread_mutex_t third = PTHREAD_MUTEX_INITIALIZER, fourth = PTHREAD_MUTEX_INITIALIZER;

/* The same at call sites of its own: another report. */
static __attribute__((noinline)) void both_orders_again(void)
{
    pthread_mutex_lock(&third);
    pthread_mutex_lock(&fourth);
    pthread_mutex_unlock(&fourth);
    pthread_mutex_unlock(&third);
    pthread_mutex_lock(&fourth);
    pthread_mutex_lock(&third);
    pthread_mutex_unlock(&third);
    pthread_mutex_unlock(&fourth);
}

/* A pipe in place of stderr: its read end closed, or kept open and filled. */
static int stderr_pipe(int full)
{
    int p[2];
    char block[4096];
    if (pipe(p) != 0 || dup2(p[1], 2) != 2)
        return 1;
    close(p[1]);
    if (!full)
        return close(p[0]);
    memset(block, 'x', sizeof block);
    if (fcntl(2, F_SETFL, O_NONBLOCK) != 0)
        return 1;
    while (write(2, block, sizeof block) > 0)
        ;
    return errno == EAGAIN ? fcntl(2, F_SETFL, 0) : 1;
}

/* The files of this process named `what` in dir: "<program>.<pid>.<what>.json". */
static int filed(const char *dir, const char *what)
{
    char name[4096];
    struct stat st;
    snprintf(name, sizeof name, "%s/hostile.%d.%s.json", dir, (int)getpid(), what);
    return stat(name, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/* Runs this program again as `mode` in dir (made here) with LOCKTRACE_REPORT_DIR=report_dir;
 * its status. */
static int run_copy(const char *dir, const char *mode, const char *report_dir)
{
    pid_t pid = fork();
    int status;
    if (pid == 0) {
        if (chdir(dir) != 0 || setenv("LOCKTRACE_REPORT_DIR", report_dir, 1) != 0)
            _exit(2);
        execl("/proc/self/exe", "hostile", mode, (char *)NULL);
        _exit(127);
    }
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status)
                                                                            : 1;
}

/* rm -r dir, one level of subdirectories deep. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    char path[4096];
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0)
            remove_tree(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static int stderr_full(void)
{
    char dir[] = "/tmp/hostile-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    int rc = run_copy(dir, "stderr-full-run", "reports");
    remove_tree(dir);
    return rc;
}

static int stderr_full_run(void)
{
    if (stderr_pipe(1) != 0)
        return 1;
    both_orders();
    printf("survived, its report file written: %s\n", filed("reports", "1") ? "yes" : "no");
    fflush(stdout);
    return 0;
}

static int relative_dir(void)
{
    char dir[] = "/tmp/hostile-XXXXXX", start[64], parent[64];
    if (!mkdtemp(dir))
        return 1;
    snprintf(start, sizeof start, "%s/start", dir);
    snprintf(parent, sizeof parent, "%s/reports", dir);
    if (mkdir(start, 0755) != 0)
        return 1;
    int rc = run_copy(start, "relative-dir-run", "reports"), summaries = 0;
    DIR *d = opendir(parent);
    printf("files in the parent directory: %s\n", d ? "yes" : "none");
    if (d)
        closedir(d);
    snprintf(start, sizeof start, "%s/start/reports", dir);
    d = opendir(start);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        summaries += n > 13 && !strcmp(e->d_name + n - 13, ".summary.json");
    }
    if (d)
        closedir(d);
    printf("its summary in the directory it started in: %s\n", summaries == 1 ? "yes" : "no");
    snprintf(start, sizeof start, "%s/start", dir);
    remove_tree(start);
    remove_tree(dir);
    return rc;
}

static int relative_dir_run(void)
{
    char cwd[4096], reports[4200];
    if (!getcwd(cwd, sizeof cwd))
        return 1;
    snprintf(reports, sizeof reports, "%s/reports", cwd);
    both_orders();
    if (chdir("..") != 0)
        return 1;
    both_orders(); /* a repeat: its count goes into the first file at exit */
    both_orders_again();
    printf("report files in the directory it started in: %s\n",
           filed(reports, "1") && filed(reports, "2") ? "yes" : "no");
    fflush(stdout);
    return 0;
}

/* A copy of this program, as nobody when started as root, with a report directory in a new
 * directory it may write. */
static int umask_copy(void)
{
    char dir[] = "/tmp/hostile-XXXXXX", reports[64];
    int rc = 1, status;
    if (!mkdtemp(dir))
        return 1;
    snprintf(reports, sizeof reports, "%s/reports", dir);
    pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0 && (chown(dir, 65534, 65534) != 0 || setgid(65534) != 0 ||
                               setuid(65534) != 0))
            _exit(2);
        setenv("LOCKTRACE_REPORT_DIR", reports, 1);
        execl("/proc/self/exe", "hostile", "umask-run", reports, (char *)NULL);
        _exit(127);
    }
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
        rc = WEXITSTATUS(status);
    remove_tree(reports);
    remove_tree(dir);
    return rc;
}

static int umask_run(const char *reports)
{
    char name[4096];
    umask(0777);
    both_orders();
    snprintf(name, sizeof name, "%s/hostile.%d.1.json", reports, (int)getpid());
    int fd = open(name, O_RDONLY);
    printf("its report file written and readable: %s\n", fd >= 0 ? "yes" : "no");
    fflush(stdout);
    if (fd >= 0)
        close(fd);
    return 0;
}

/* This program copied to dir/name, executable; 0 on success. */
static int copy_self(const char *dir, const char *name, char *to, size_t size)
{
    char buf[65536];
    ssize_t n = 0;
    snprintf(to, size, "%s/%s", dir, name);
    int in = open("/proc/self/exe", O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0755);
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            n = -1;
    if (in >= 0)
        close(in);
    return out >= 0 && close(out) == 0 && n == 0 ? 0 : 1;
}

static int long_name(void)
{
    char dir[] = "/tmp/hostile-XXXXXX", name[241], copy[4096], reports[64];
    int rc = 1, status, files = 0;
    if (!mkdtemp(dir))
        return 1;
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = 0;
    snprintf(reports, sizeof reports, "%s/reports", dir);
    pid_t pid = copy_self(dir, name, copy, sizeof copy) == 0 ? fork() : -1;
    if (pid == 0) {
        setenv("LOCKTRACE_REPORT_DIR", reports, 1);
        execl(copy, "hostile", "long-name-run", (char *)NULL);
        _exit(127);
    }
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
        rc = WEXITSTATUS(status);
    DIR *d = opendir(reports);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        files += n > 7 && !strcmp(e->d_name + n - 7, ".1.json");
    }
    if (d)
        closedir(d);
    printf("report files of the long-named program: %d\n", files);
    remove_tree(reports);
    remove_tree(dir);
    return rc;
}

static int nofile_copy(void)
{
    char dir[] = "/tmp/hostile-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    int rc = run_copy(dir, "nofile-run", "reports");
    remove_tree(dir);
    return rc;
}

static int nofile_run(void)
{
    struct rlimit r;
    int fds[64], n = 0, fd;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_max < 64)
        return 1;
    r.rlim_cur = 64;
    if (setrlimit(RLIMIT_NOFILE, &r) != 0)
        return 1;
    while (n < 64 && (fd = open("/dev/null", O_RDONLY)) >= 0)
        fds[n++] = fd;
    both_orders(); /* no descriptor free */
    while (n > 0)
        close(fds[--n]);
    both_orders_again();
    printf("its second report filed: %s\n", filed("reports", "2") ? "yes" : "no");
    fflush(stdout);
    return 0;
}

static sigjmp_buf back;

static void jump_back(int sig)
{
    static const char line[] = "SIGABRT handler ran\n";
    (void)sig;
    write(1, line, sizeof line - 1);
    siglongjmp(back, 1);
}

static int abort_longjmp(void)
{
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    signal(SIGABRT, jump_back);
    if (sigsetjmp(back, 1)) {
        printf("back in main after the abort\n");
        return 0;
    }
    pthread_mutex_lock(&m);
    pthread_mutex_lock(&m);
    return 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int rc;
    if (!strcmp(mode, "stderr-gone")) {
        if ((rc = stderr_pipe(0)) == 0) {
            both_orders();
            printf("survived\n");
        }
    } else if (!strcmp(mode, "stderr-full"))
        rc = stderr_full();
    else if (!strcmp(mode, "stderr-full-run"))
        return stderr_full_run();
    else if (!strcmp(mode, "relative-dir"))
        rc = relative_dir();
    else if (!strcmp(mode, "relative-dir-run"))
        return relative_dir_run();
    else if (!strcmp(mode, "umask"))
        rc = umask_copy();
    else if (!strcmp(mode, "umask-run") && argc > 2)
        return umask_run(argv[2]);
    else if (!strcmp(mode, "long-name"))
        rc = long_name();
    else if (!strcmp(mode, "long-name-run")) {
        both_orders();
        return 0;
    } else if (!strcmp(mode, "nofile"))
        rc = nofile_copy();
    else if (!strcmp(mode, "nofile-run"))
        return nofile_run();
    else if (!strcmp(mode, "abort-longjmp"))
        rc = abort_longjmp();
    else {
        fprintf(stderr, "usage: hostile stderr-gone|stderr-full|relative-dir|umask|"
                        "long-name|nofile|abort-longjmp\n");
        return 2;
    }
    if (rc == 0)
        printf("done\n");
    return rc;
}
