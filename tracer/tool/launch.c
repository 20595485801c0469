/*
 * launch.c - `locktrace [options] [--] program [args...]`: runs the program with liblocktrace
 * preloaded, passes its exit status (or its death by signal) through, and at the end says in
 * one line on stderr how many reports were written, of which kinds, and where - only when
 * there were some, so a clean program's output is unchanged.
 *
 * The options are the LOCKTRACE_* variables of config.def: --report-dir for
 * LOCKTRACE_REPORT_DIR and so on, so an option added there is an option here.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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
    if (strcmp(s, "HELP") == 0 || strcmp(s, "LAUNCHER_PID") == 0)
        return NULL; /* --help is the launcher's own; the pid is the launcher's to set */
    for (; s[i] && i + 1 < size; i++)
        buf[i] = s[i] == '_' ? '-' : (char)tolower((unsigned char)s[i]);
    buf[i] = 0;
    return buf;
}

void lt_tool_launch_usage(FILE *to)
{
    char name[64];
    fprintf(to, "usage: locktrace [options] [--] program [args...]\n"
                "       locktrace report [--json | --sarif] [--as-recorded] FILE|DIR...\n"
                "       locktrace --help | --version\n\n"
                "Runs program with liblocktrace preloaded (" PRELOAD_VAR ", added in front of any\n"
                "existing value) and exits with the program's status. Reports are printed on\n"
                "stderr and written as JSON files to ./" DEFAULT_REPORT_DIR "/ unless\n"
                "LOCKTRACE_REPORT_DIR or --report-dir says otherwise (--report-dir= turns files\n"
                "off). When reports were written, one last line on stderr counts them by kind\n"
                "and names the directory; a clean run prints nothing of its own.\n\n"
                "Options (each sets the LOCKTRACE_* variable named; --opt=value or\n"
                "--opt value):\n");
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

/* Sets the variables the options name; returns the index of the program, -1 on error. */
static int parse_options(int argc, char **argv)
{
    int i = 0;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--") == 0)
            return i + 1;
        const char *arg = argv[i] + 2, *eq = strchr(arg, '=');
        const option_desc *o = lookup(arg, eq ? (size_t)(eq - arg) : strlen(arg));
        if (!o) {
            fprintf(stderr, "locktrace: unknown option %s (locktrace --help lists them)\n",
                    argv[i]);
            return -1;
        }
        if (!eq && i + 1 == argc) {
            fprintf(stderr, "locktrace: %s needs a value: %s\n", argv[i], o->accepted);
            return -1;
        }
        setenv(o->var, eq ? eq + 1 : argv[++i], 1);
    }
    return i;
}

/* The report directory, made absolute so a program that changes directory still writes
 * where the launcher looks. */
static const char *report_dir(char *buf, size_t size)
{
    const char *dir = getenv("LOCKTRACE_REPORT_DIR");
    char cwd[PATH_MAX];
    if (!dir)
        dir = DEFAULT_REPORT_DIR;
    if (dir[0] == '/' || !dir[0] || !getcwd(cwd, sizeof cwd) ||
        (size_t)snprintf(buf, size, "%s/%s", cwd, dir) >= size)
        snprintf(buf, size, "%s", dir);
    setenv("LOCKTRACE_REPORT_DIR", buf, 1);
    return buf;
}

static void preload(const char *lib)
{
    const char *prev = getenv(PRELOAD_VAR);
    size_t n = strlen(lib) + (prev ? strlen(prev) : 0) + 2;
    char *value = malloc(n);
    if (!value)
        return;
    snprintf(value, n, "%s%s%s", lib, prev && prev[0] ? ":" : "", prev ? prev : "");
    setenv(PRELOAD_VAR, value, 1);
    free(value);
}

/* ------------------------------------------------------------------------------------------
 * Running it.
 * ---------------------------------------------------------------------------------------- */
static pid_t child;

static void forward(int sig)
{
    if (child > 0)
        kill(child, sig);
}

/* Like a shell: the terminal's SIGINT/SIGQUIT reach the program directly, so the launcher
 * waits them out; SIGTERM and SIGHUP sent to the launcher are passed on. */
static int run(char **argv)
{
    struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward}, oldint, oldquit;
    sigaction(SIGINT, &ign, &oldint);
    sigaction(SIGQUIT, &ign, &oldquit);
    sigaction(SIGTERM, &fwd, NULL);
    sigaction(SIGHUP, &fwd, NULL);
    child = fork();
    if (child == 0) {
        sigaction(SIGINT, &oldint, NULL);
        sigaction(SIGQUIT, &oldquit, NULL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        execvp(argv[0], argv);
        fprintf(stderr, "locktrace: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    if (child < 0) {
        fprintf(stderr, "locktrace: cannot start %s: %s\n", argv[0], strerror(errno));
        return -1;
    }
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
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
    char lib[PATH_MAX], dir[PATH_MAX];
    int first = parse_options(argc, argv);
    if (first < 0)
        return 2;
    if (first == argc) {
        lt_tool_launch_usage(stderr);
        return 2;
    }
    if (!find_library(lib, sizeof lib))
        return 127;
    preload(lib);
    report_dir(dir, sizeof dir);
    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    setenv("LOCKTRACE_LAUNCHER_PID", pid, 1);
    char **before = dir[0] ? lt_tool_list_reports(dir) : NULL;
    int status = run(argv + first);
    if (status == -1)
        return 126;
    if (dir[0])
        lt_tool_summarize(dir, before);
    lt_tool_free_list(before);
    return pass_through(status);
}
