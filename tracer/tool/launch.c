/*
 * launch.c - `locktrace [options] [--] program [args...]`: runs the program with liblocktrace
 * preloaded, passes its exit status (or its death by signal) through, and at the end says in
 * one line on stderr how many reports were written, of which kinds, and where - only when
 * there were some, so a clean program's output is unchanged. The reports are counted from
 * their files and from what every traced process says on the launcher's socket (channel.c),
 * so a report whose file could not be written still counts.
 *
 * The options are the LOCKTRACE_* variables of config.def: --report-dir for
 * LOCKTRACE_REPORT_DIR and so on, so an option added there is an option here.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "elf_probe.h"
#include "tool.h"

#ifdef __APPLE__
#include <mach-o/dyld.h>
#define LIB_NAME "liblocktrace.dylib"
#define PRELOAD_VAR "DYLD_INSERT_LIBRARIES"
#else
#define LIB_NAME "liblocktrace.so"
#define PRELOAD_VAR "LD_PRELOAD"
#endif
#define DEFAULT_REPORT_DIR "locktrace-reports"

typedef struct option_desc {
    const char *var, *def, *accepted, *help;
} option_desc;

static const option_desc options[] = {
#define LT_OPTION(kind, field, name, def, accepted, help) {name, def, accepted, help},
#include "config.def"
#undef LT_OPTION
};

/* "LOCKTRACE_REPORT_DIR" -> "report-dir"; NULL for the variables that are no options. */
static const char *option_name(const option_desc *o, char *buf, size_t size)
{
    const char *s = o->var + strlen("LOCKTRACE_");
    size_t i = 0;
    if (strcmp(s, "HELP") == 0 || strncmp(s, "LAUNCHER_", 9) == 0)
        return NULL; /* --help is the launcher's own; LAUNCHER_* are the launcher's to set */
    for (; s[i] && i + 1 < size; i++)
        buf[i] = s[i] == '_' ? '-' : (char)tolower((unsigned char)s[i]);
    buf[i] = 0;
    return buf;
}

void lt_tool_launch_usage(FILE *to)
{
    char name[64];
    fprintf(to, "usage: locktrace [options] [--] program [args...]\n"
                "       locktrace report [--json | --sarif | --html] [options] FILE|DIR...\n"
                "       locktrace dump PID\n"
                "       locktrace --help | --version\n\n"
                "Runs program with liblocktrace preloaded (" PRELOAD_VAR ", added in front of any\n"
                "existing value) and exits with the program's status. Reports are printed on\n"
                "stderr and written as JSON files to ./" DEFAULT_REPORT_DIR "/ unless\n"
                "LOCKTRACE_REPORT_DIR or --report-dir says otherwise (--report-dir= turns files\n"
                "off). When reports were written, one last line on stderr counts them by kind\n"
                "and names the directory (another, those whose file could not be written);\n"
                "traced processes the program left running (a daemon), and programs started\n"
                "with an environment that dropped the tracer (LD_PRELOAD cleared), are named\n"
                "in lines of their own; a clean run prints nothing of its own.\n\n"
                "Exit status: the program's own (or, when it died of a signal, the launcher\n"
                "dies of the same signal); --exitcode=N when the program exited and any\n"
                "process it started made a report (report files on or off, written or not);\n"
                "2 for a bad option or LOCKTRACE_* variable; 125 when the tracer could not be\n"
                "loaded into the program; 126 or 127 when the program could not be run.\n"
                "`locktrace report --help` explains the report command.\n\n"
                "A program that still hangs with no report waits for something other than a\n"
                "lock cycle (a lock whose holder waits elsewhere, a condition never signalled):\n"
                "run it with --wait-timeout=10 to name the holder of a lock waited for that\n"
                "long, or with --dump-signal=SIGUSR1 and then `locktrace dump PID` for every\n"
                "thread's held locks and waits.\n\n"
                "Without the launcher (liblocktrace put in " PRELOAD_VAR " by hand) the tracer\n"
                "reads the same LOCKTRACE_* variables, but writes no report files unless\n"
                "LOCKTRACE_REPORT_DIR is set; LOCKTRACE_HELP=1 makes it print every variable it\n"
                "reads with its accepted values, then exit before main.\n\n"
                "Options (each sets the LOCKTRACE_* variable named; --opt=value or\n"
                "--opt value; a word value in any case):\n");
    for (size_t i = 0; i < sizeof options / sizeof *options; i++) {
        if (!option_name(&options[i], name, sizeof name))
            continue;
        const char *def = options[i].def[0] ? options[i].def : "unset";
        if (strcmp(options[i].var, "LOCKTRACE_REPORT_DIR") == 0)
            def = "./" DEFAULT_REPORT_DIR " under this launcher";
        fprintf(to, "  --%s=%s  (%s, default %s)\n      %s\n", name, options[i].accepted,
                options[i].var, def, options[i].help);
    }
}

/* ------------------------------------------------------------------------------------------
 * Finding the library: beside the launcher (build tree), then in the installed libdir.
 * ---------------------------------------------------------------------------------------- */
/* The launcher's own path into self (PATH_MAX bytes); 0 when unknown. */
static int own_path(char *self)
{
#ifdef __APPLE__
    uint32_t size = PATH_MAX;
    return _NSGetExecutablePath(self, &size) == 0;
#else
    ssize_t n = readlink("/proc/self/exe", self, PATH_MAX - 1);
    if (n <= 0)
        return 0;
    self[n] = 0;
    return 1;
#endif
}

static int find_library(char *out, size_t size)
{
    char self[PATH_MAX];
    if (!own_path(self))
        return 0;
    char *slash = strrchr(self, '/');
    *slash = 0;
    const char *installed = LT_BIN_TO_LIB[0] == '/' ? LT_BIN_TO_LIB "/" LIB_NAME
                                                    : "%s/" LT_BIN_TO_LIB "/" LIB_NAME;
    const char *cands[] = {"%s/" LIB_NAME, installed};
    for (size_t i = 0; i < 2; i++)
        if ((size_t)snprintf(out, size, cands[i], self) < size && access(out, R_OK) == 0)
            return 1;
    fprintf(stderr, "locktrace: cannot find " LIB_NAME " beside %s or in %s\n", self,
            LT_BIN_TO_LIB);
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * Options.
 * ---------------------------------------------------------------------------------------- */
static const option_desc *lookup(const char *arg, size_t len)
{
    char name[64];
    for (size_t i = 0; i < sizeof options / sizeof *options; i++)
        if (option_name(&options[i], name, sizeof name) && strlen(name) == len &&
            strncmp(name, arg, len) == 0)
            return &options[i];
    return NULL;
}

/* Sets the variables the options name; returns the index of the program, -1 on error, -2
 * for --help. *spaced is the index of the last option whose value was the next word, or -1. */
static int parse_options(int argc, char **argv, int *spaced)
{
    *spaced = -1;
    int i = 0;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        if (strcmp(argv[i], "--") == 0)
            return i + 1;
        if (argv[i][1] != '-') { /* -h, -v...: no short options; "--" runs a program "-x" */
            fprintf(stderr, "locktrace: unknown option %s (locktrace --help lists them)\n",
                    argv[i]);
            return -1;
        }
        if (strcmp(argv[i], "--help") == 0) /* after other options too: they are not checked */
            return -2;
        const char *arg = argv[i] + 2, *eq = strchr(arg, '=');
        const option_desc *o = lookup(arg, eq ? (size_t)(eq - arg) : strlen(arg));
        if (!o) {
            fprintf(stderr, "locktrace: unknown option %s (locktrace --help lists them)\n",
                    argv[i]);
            return -1;
        }
        if (!eq && (i + 1 == argc || strcmp(argv[i + 1], "--") == 0)) {
            fprintf(stderr, "locktrace: %s needs a value: %s\n", argv[i], o->accepted);
            return -1;
        }
        if (!eq)
            *spaced = i;
        setenv(o->var, eq ? eq + 1 : argv[++i], 1);
    }
    return i;
}

/* Options and no program after them. Most often an option meant as a flag took the program
 * as its value ("--stats ./prog" sets --stats to ./prog), which printed the whole usage
 * without a word on what was wrong. */
static void no_program(char **argv, int spaced)
{
    const char *arg = spaced >= 0 ? argv[spaced] + 2 : NULL;
    const option_desc *o = arg ? lookup(arg, strlen(arg)) : NULL;
    if (o)
        fprintf(stderr, "locktrace: no program to run: %s took %s as its value (write "
                        "%s=VALUE, accepted: %s, then the program)\n",
                argv[spaced], argv[spaced + 1], argv[spaced], o->accepted);
    else
        fprintf(stderr, "locktrace: no program to run after the options (usage: locktrace "
                        "[options] [--] program [args...])\n");
}

/* A path variable made absolute (against the launcher's directory) into buf and set again:
 * every process of the tree reads it, and one that has changed directory first (a test
 * script's "cd sub && ./test", make -C, ctest's per-test directories) would look elsewhere:
 * a relative --suppressions file stopped every such process with "cannot read the file". */
static const char *absolute_var(const char *var, const char *dflt, char *buf, size_t size)
{
    const char *path = getenv(var);
    char cwd[PATH_MAX];
    if (!path)
        path = dflt;
    if (path[0] == '/' || !path[0] || !getcwd(cwd, sizeof cwd) ||
        (size_t)snprintf(buf, size, "%s%s%s", cwd, cwd[1] ? "/" : "", path) >= size)
        snprintf(buf, size, "%s", path);
    if (buf[0])
        setenv(var, buf, 1);
    return buf;
}

/* The report directory, made absolute so a program that changes directory still writes
 * where the launcher looks, without the trailing slashes "DIR/" came with (messages add one). */
static const char *report_dir(char *buf, size_t size)
{
    absolute_var("LOCKTRACE_REPORT_DIR", DEFAULT_REPORT_DIR, buf, size);
    for (size_t n = strlen(buf); n > 1 && buf[n - 1] == '/'; n--)
        buf[n - 1] = 0;
    setenv("LOCKTRACE_REPORT_DIR", buf, 1);
    return buf;
}

/* The directory temporary files go in: $TMPDIR when it can stand in LD_PRELOAD, else /tmp. */
static const char *temp_base(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && tmp[0] == '/' && !strpbrk(tmp, " :\t") ? tmp : "/tmp";
}

/* --exitcode counts the reports of the whole process tree from their files, and only a
 * process's own status sees its reports without them: with files off (--report-dir=), the
 * reports go to a private directory that is removed at the end, so a child's report still
 * fails the run. Returns 1 when dir is that private directory. */
static int private_report_dir(char *dir, size_t size)
{
    const char *code = getenv("LOCKTRACE_EXITCODE");
    if (dir[0] || !code || atoi(code) <= 0)
        return 0;
    snprintf(dir, size, "%s/locktrace-reports-XXXXXX", temp_base());
    if (!mkdtemp(dir)) {
        fprintf(stderr, "locktrace: cannot make a directory in %s to count the reports of the "
                        "program's children for --exitcode: %s; only the program's own reports "
                        "will change its status\n", temp_base(), strerror(errno));
        dir[0] = 0;
        return 0;
    }
    setenv("LOCKTRACE_REPORT_DIR", dir, 1);
    return 1;
}

static void remove_private_dir(const char *dir)
{
    char **names = lt_tool_list_all(dir);
    char path[PATH_MAX];
    for (size_t i = 0; names && names[i]; i++)
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) < sizeof path)
            unlink(path);
    lt_tool_free_list(names);
    rmdir(dir);
}

/* ------------------------------------------------------------------------------------------
 * The preload list. The dynamic linker splits LD_PRELOAD at spaces and colons with no way to
 * quote them, so a library whose path has one is preloaded through a symlink in a private
 * temporary directory, removed when the program ends.
 * ---------------------------------------------------------------------------------------- */
static char link_dir[PATH_MAX];

static const char *preloadable(const char *lib, char *buf, size_t size)
{
    if (!strpbrk(lib, " :\t"))
        return lib;
    const char *base = temp_base();
    snprintf(link_dir, sizeof link_dir, "%s/locktrace-XXXXXX", base);
    if (!mkdtemp(link_dir) || (size_t)snprintf(buf, size, "%s/" LIB_NAME, link_dir) >= size ||
        symlink(lib, buf) != 0) {
        fprintf(stderr, "locktrace: %s has a space or colon in its path, which " PRELOAD_VAR
                " cannot hold, and no symlink to it could be made in %s: %s\n", lib, base,
                strerror(errno));
        if (link_dir[0])
            rmdir(link_dir);
        link_dir[0] = 0;
        return NULL;
    }
    return buf;
}

static void remove_link(void)
{
    char path[PATH_MAX];
    if (!link_dir[0])
        return;
    snprintf(path, sizeof path, "%s/" LIB_NAME, link_dir);
    unlink(path);
    rmdir(link_dir);
}

/* PRELOAD_VAR = [asan runtime:]lib[:previous value]. */
static int preload(const char *lib, const char *first)
{
    char linked[PATH_MAX];
    const char *path = preloadable(lib, linked, sizeof linked);
    if (!path)
        return -1;
    const char *prev = getenv(PRELOAD_VAR);
    size_t n = strlen(first) + strlen(path) + (prev ? strlen(prev) : 0) + 3;
    char *value = malloc(n);
    if (!value)
        return -1;
    snprintf(value, n, "%s%s%s%s%s", first, first[0] ? ":" : "", path,
             prev && prev[0] ? ":" : "", prev ? prev : "");
    setenv(PRELOAD_VAR, value, 1);
    free(value);
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * What the program is: found like execvp finds it, probed before it runs.
 * ---------------------------------------------------------------------------------------- */
static int find_program(const char *name, char *out, size_t size)
{
    if (strchr(name, '/'))
        return (size_t)snprintf(out, size, "%s", name) < size;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        if ((size_t)snprintf(out, size, "%.*s%s%s", (int)n, p, n ? "/" : "", name) < size &&
            access(out, X_OK) == 0)
            return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

enum { RUN_TRACED, RUN_UNTRACED, RUN_REFUSED };

/* Decides how the program can run; fills asan with the runtime to preload first. */
static int check_program(const char *name, char *asan, size_t size)
{
    char path[PATH_MAX];
    lt_elf_info info;
    asan[0] = 0;
    if (!find_program(name, path, sizeof path) || lt_elf_probe(path, &info) != 0)
        return RUN_TRACED; /* execvp says what is wrong */
    if (info.tsan) {
        fprintf(stderr, "locktrace: %s is built with ThreadSanitizer, which already intercepts "
                        "pthread locks; run one or the other. Running it untraced.\n", name);
        return RUN_UNTRACED;
    }
    if (info.setuid) {
        fprintf(stderr, "locktrace: %s is set-user-ID or set-group-ID to another user or group, "
                        "so the dynamic linker will not preload the tracer into it; not running "
                        "it untraced (run it as that user, or trace a copy without the bit)\n",
                name);
        return RUN_REFUSED;
    }
    if (info.linkage == LT_ELF_STATIC) {
        fprintf(stderr, "locktrace: %s is statically linked, so the dynamic linker will not "
                        "preload the tracer into it; not running it untraced (link it "
                        "dynamically, or link liblocktrace in: pkg-config --libs locktrace)\n",
                name);
        return RUN_REFUSED;
    }
    /* ASan's shared runtime insists on being first in the library list. */
    snprintf(asan, size, "%s", info.asan_needed);
    return RUN_TRACED;
}

/* ------------------------------------------------------------------------------------------
 * Running it. Signals a process sends to the launcher (kill, timeout, a CI runner) are passed
 * on to the program and to every process it started (they name this launcher in their
 * environment), so a test run through `sh -c` gets them too; the ones the terminal sends to
 * the whole foreground group (Ctrl-C, Ctrl-\, window changes) reach them by themselves and
 * are not sent twice. The handler only notes a signal and wakes the waiting loop, which
 * passes it on (finding the tree reads /proc).
 * ---------------------------------------------------------------------------------------- */
#define HANDSHAKE_SECONDS 30
#define MAX_TREE 4096

static pid_t child;
static int channel = -1; /* the tracer's word of each report (channel.c), -1 when none */

static const int forwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGTERM, SIGALRM,
                                SIGWINCH, SIGURG,
#ifdef SIGPWR
                                SIGPWR,
#endif
};
static volatile sig_atomic_t pending[sizeof forwarded / sizeof *forwarded];
static int wake[2] = {-1, -1}; /* a byte per signal: the waiting loop never sleeps past one */

static void note(int sig, siginfo_t *si, void *uctx)
{
    int saved = errno;
    (void)uctx;
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        if (forwarded[i] == sig && si->si_code <= 0) /* SI_USER, SI_QUEUE, SI_TKILL */
            pending[i] = 1;
    (void)!write(wake[1], "", 1); /* SIGCHLD too */
    errno = saved;
}

static void forward_pending(void)
{
    static int tree[MAX_TREE];
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++) {
        if (!pending[i] || child <= 0)
            continue;
        pending[i] = 0;
        kill(child, forwarded[i]);
        int n = lt_tool_tree((int)getpid(), tree, MAX_TREE);
        for (int k = 0; k < n; k++)
            if (tree[k] != child)
                kill(tree[k], forwarded[i]);
    }
}

static void set_forwarding(int on)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    if (on) {
        sa.sa_sigaction = note;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
    } else {
        sa.sa_handler = SIG_DFL;
    }
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaction(forwarded[i], &sa, NULL);
    sa.sa_flags |= SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
}

/* Waits for the program to end, passing signals on meanwhile and reading the channel as
 * its datagrams come (its queue is short); the program's wait status. */
static int wait_program(void)
{
    char drain[64];
    int status;
    for (;;) {
        forward_pending();
        lt_channel_drain(channel);
        if (waitpid(child, &status, WNOHANG) == child)
            return status;
        struct pollfd p[2] = {{wake[0], POLLIN, 0}, {channel, POLLIN, 0}};
        if (poll(p, channel >= 0 ? 2 : 1, 1000) > 0)
            while (read(wake[0], drain, sizeof drain) > 0)
                ;
    }
}

/* ENOENT about a file that is there: what the kernel runs it with is missing, the
 * interpreter its #! line names (a script with DOS line ends names "/bin/sh\r") or the
 * dynamic loader of an ELF program (one built for a 32-bit system or another libc). NULL
 * when path is no such file. */
static const char *missing_interpreter(const char *path)
{
    static char why[PATH_MAX + 160];
    char head[PATH_MAX];
    lt_elf_info info;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, head, sizeof head - 1);
    if (fd >= 0)
        close(fd);
    if (n < 2)
        return NULL;
    head[n] = 0;
    if (head[0] == '#' && head[1] == '!') {
        char *interp = head + 2 + strspn(head + 2, " \t");
        interp[strcspn(interp, " \t\n")] = 0;
        char *cr = strchr(interp, '\r');
        if (access(interp, F_OK) == 0)
            return NULL;
        if (cr) {
            *cr = 0;
            snprintf(why, sizeof why, "its #! line ends in a carriage return, so the interpreter "
                     "sought is \"%s\\r\", which does not exist (DOS line ends: dos2unix)", interp);
        } else {
            snprintf(why, sizeof why, "its interpreter %s (its #! line) does not exist", interp);
        }
        return why;
    }
    if (memcmp(head, "\177ELF", 4) != 0)
        return NULL;
    if (lt_elf_probe(path, &info) == 0 && info.interp[0] && access(info.interp, F_OK) == 0)
        return NULL;
    if (info.interp[0])
        snprintf(why, sizeof why, "its dynamic loader %s is not installed (a program built for "
                 "another system or libc?)", info.interp);
    else
        snprintf(why, sizeof why, "its dynamic loader is not installed (a 32-bit program, or one "
                 "built for another machine or libc?)");
    return why;
}

/* what, then the two ways to run the file name: a script through the interpreter its #! line
 * names (python3 prog.py), or made executable. */
static const char *not_executable(const char *name, const char *what)
{
    static char why[PATH_MAX * 2 + 512];
    char head[256] = "", run[PATH_MAX + 8];
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, head, sizeof head - 1);
    if (fd >= 0)
        close(fd);
    head[n > 0 ? n : 0] = 0;
    snprintf(run, sizeof run, "%s%s", strchr(name, '/') ? "" : "./", name);
    if (head[0] == '#' && head[1] == '!') {
        char *interp = head + 2 + strspn(head + 2, " \t");
        interp[strcspn(interp, "\r\n")] = 0;
        snprintf(why, sizeof why, "%s (run it through its interpreter: locktrace -- %s %s; or "
                 "chmod +x %s, then locktrace -- %s)", what, interp, name, name, run);
    } else {
        snprintf(why, sizeof why, "%s (chmod +x %s, then locktrace -- %s)", what, name, run);
    }
    return why;
}

/* Why execvp failed, as a shell would put it: EACCES is most often a directory or a file
 * without its execute bit; ENOENT for a file that is there, a missing interpreter, and for a
 * bare name, a program in this directory that PATH does not hold. */
static const char *exec_error(const char *name, int err)
{
    struct stat st;
    char path[PATH_MAX];
    const char *interp = err == ENOENT && find_program(name, path, sizeof path)
                             ? missing_interpreter(path) : NULL;
    if (interp)
        return interp;
    int here = err == ENOENT && !strchr(name, '/') && stat(name, &st) == 0 && S_ISREG(st.st_mode);
    if (here && (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
        return "not found in PATH (a program in this directory is run as ./NAME)";
    if (here) /* one message for both steps, not "./NAME" and then "chmod +x" */
        return not_executable(name, "not found in PATH, and the file of that name in this "
                                    "directory is not executable");
    if (err != EACCES || !strchr(name, '/') || stat(name, &st) != 0)
        return strerror(err);
    if (S_ISDIR(st.st_mode))
        return "it is a directory";
    if (S_ISREG(st.st_mode) && !(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
        return not_executable(name, "the file is not executable");
    return strerror(err);
}

/* In the child: announce fd to the tracer, then become the program. */
static void exec_program(char **argv, int traced, int fd)
{
    char num[16];
    set_forwarding(0);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a launcher killed outright takes its program along */
#endif
    if (traced) {
        fcntl(fd, F_SETFD, 0);
        snprintf(num, sizeof num, "%d", fd);
        setenv("LOCKTRACE_LAUNCHER_FD", num, 1);
    }
    execvp(argv[0], argv);
    int err = errno;
    fprintf(stderr, "locktrace: cannot run %s: %s\n", argv[0], exec_error(argv[0], err));
    (void)!write(fd, "E", 1); /* not the tracer's word: the launcher must not wait for it */
    _exit(err == ENOENT ? 127 : 126);
}

/* 1 when the tracer announced itself on fd, 0 when it did not (the program ended, or did not
 * announce it in time), -1 when the program could not be started. *ended: 1 when the
 * program has ended, its status in *status. */
static int await_handshake(int fd, int *status, int *ended)
{
    char word[64];
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int open = 1;; forward_pending()) {
        struct pollfd p = {fd, POLLIN, 0};
        lt_channel_drain(channel);
        if (poll(&p, open, 50) > 0) {
            ssize_t n = read(fd, word, sizeof word);
            if (n > 0)
                return word[0] == 'E' ? -1 : 1;
            open = n != 0; /* EOF: every copy closed without a word */
        }
        if (waitpid(child, status, WNOHANG) == child) {
            *ended = 1;
            ssize_t n = read(fd, word, sizeof word); /* written just before it ended? */
            return n > 0 ? (word[0] == 'E' ? -1 : 1) : 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= HANDSHAKE_SECONDS)
            return 0;
    }
}

static void say_not_loaded(const char *name, int ended)
{
    fprintf(stderr, "locktrace: the tracer did not load into %s (it never answered on "
                    "LOCKTRACE_LAUNCHER_FD%s); the program may be statically linked, "
                    "set-user-ID, or started through something that drops " PRELOAD_VAR
                    ". Its run was not traced: exit status 125.\n", name,
            ended ? " before the program ended" : " within 30 s, so it was stopped");
}

/* pipe2(O_CLOEXEC [| O_NONBLOCK]) where there is no pipe2 (macOS). */
static int make_pipe(int fds[2], int nonblock)
{
    if (pipe(fds) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
        if (nonblock)
            fcntl(fds[i], F_SETFL, O_NONBLOCK);
    }
    return 0;
}

/* Runs argv; returns its wait status, or -1 (with the launcher's own exit status in *own). */
static int run(char **argv, int traced, int *own)
{
    int hs[2], status = 0, ended = 0;
    if ((wake[0] < 0 && make_pipe(wake, 1) != 0) || make_pipe(hs, 0) != 0) {
        fprintf(stderr, "locktrace: cannot make a pipe: %s\n", strerror(errno));
        *own = 126;
        return -1;
    }
    set_forwarding(1);
    child = fork();
    if (child == 0) {
        close(hs[0]);
        exec_program(argv, traced, hs[1]);
    }
    close(hs[1]);
    if (child < 0) {
        fprintf(stderr, "locktrace: cannot start %s: %s\n", argv[0], strerror(errno));
        close(hs[0]);
        *own = 126;
        return -1;
    }
    int said = traced ? await_handshake(hs[0], &status, &ended) : 1;
    close(hs[0]);
    if (said == 0 && !ended) {
        kill(child, SIGKILL);
        say_not_loaded(argv[0], 0);
    }
    if (!ended)
        status = wait_program();
    if (said == 0 && ended)
        say_not_loaded(argv[0], 1);
    if (said == 0) {
        *own = 125;
        return -1;
    }
    return status;
}

/* Processes of this launcher's tree still running when the program ended (a daemon it
 * started, a job it left in the background): whatever they report comes after the
 * launcher's count and status, so one line says they are there and where that goes. A
 * process that is just exiting (killed by the program as it ended) is given a moment; one
 * in the middle of an exec shows no environment for an instant, so none is only believed
 * twice in a row. */
#define LEFT_GRACE_MS 200
#define LEFT_POLL_MS 20
static void say_left_running(const char *dir, int private)
{
    static int tree[MAX_TREE];
    int n = 0;
    for (int waited = 0, empty = 0;; waited += LEFT_POLL_MS) {
        n = lt_tool_tree((int)getpid(), tree, MAX_TREE);
        empty = n ? 0 : empty + 1;
        if (empty == 2)
            return;
        if (n && waited >= LEFT_GRACE_MS)
            break;
        nanosleep(&(struct timespec){0, LEFT_POLL_MS * 1000000L}, NULL);
    }
    int files = dir[0] && !private;
    fprintf(stderr, "locktrace: the program left %d traced process%s running (pid %d%s): what "
                    "they report from now on goes to their stderr%s%s%s and does not count in "
                    "this launcher's status\n", n, n == 1 ? "" : "es", tree[0],
            n == 1 ? "" : ", ...", files ? " and to " : "", files ? dir : "", files ? "/" : "");
}

/* Ends the launcher the way the program ended: same status, or death by the same signal
 * (without a core dump of the launcher). */
static int pass_through(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    int sig = WTERMSIG(status);
    setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    return 128 + sig;
}

int lt_tool_launch(int argc, char **argv)
{
    char lib[PATH_MAX], dir[PATH_MAX], asan[64];
    int spaced;
    int first = parse_options(argc, argv, &spaced);
    if (first == -2) {
        lt_tool_launch_usage(stdout);
        return 0;
    }
    if (first < 0)
        return 2;
    if (first == argc) {
        if (argc)
            no_program(argv, spaced);
        else
            lt_tool_launch_usage(stderr);
        return 2;
    }
    int how = check_program(argv[first], asan, sizeof asan);
    if (how == RUN_REFUSED)
        return 125;
    int own = 0;
    if (how == RUN_UNTRACED) {
        int status = run(argv + first, 0, &own);
        return status == -1 ? own : pass_through(status);
    }
    if (!find_library(lib, sizeof lib))
        return 127;
    if (preload(lib, asan) != 0)
        return 125;
    report_dir(dir, sizeof dir);
    char supp[PATH_MAX];
    absolute_var("LOCKTRACE_SUPPRESSIONS", "", supp, sizeof supp);
    int private = private_report_dir(dir, sizeof dir);
    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    setenv("LOCKTRACE_LAUNCHER_PID", pid, 1);
    channel = lt_channel_open();
    char **before = dir[0] ? lt_tool_list_reports(dir) : NULL;
    int status = run(argv + first, 1, &own);
    remove_link();
    if (status != -1)
        say_left_running(dir, private);
    lt_channel_drain(channel); /* what the tree said up to its end */
    lt_kind_counts heard;
    lt_channel_heard(&heard);
    lt_channel_say_started();
    int reports = lt_tool_summarize(dir, before, dir[0] && !private, &heard);
    lt_tool_free_list(before);
    if (private)
        remove_private_dir(dir);
    if (status == -1)
        return own;
    /* LOCKTRACE_EXITCODE over the whole tree: a report of any process this launcher started
     * (a shell's child, say) makes the status N, whatever the first process returned. */
    const char *code = getenv("LOCKTRACE_EXITCODE");
    if (reports > 0 && code && atoi(code) > 0 && WIFEXITED(status))
        return atoi(code);
    return pass_through(status);
}
