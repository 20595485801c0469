/*
 * config.c - the LOCKTRACE_* environment variables (config.def), parsed once when the tracer
 * loads. A bad value is an error, not a warning: the message names the variable and the
 * accepted values and the process exits with status 2 before main runs. So is an unknown
 * LOCKTRACE_* variable, which is most likely a misspelt one.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lt_internal.h"
#include "platform.h"

enum { CHOICE, UINT, BOOL, STR, SIZE };

typedef struct option_desc {
    int kind;
    size_t offset; /* of the field in lt_config: an int, a string for STR, a size_t for SIZE */
    const char *name, *def, *accepted, *help;
} option_desc;

static const option_desc options[] = {
#define LT_OPTION(kind, field, name, def, accepted, help) \
    {kind, offsetof(lt_config, field), name, def, accepted, help},
#include "config.def"
#undef LT_OPTION
};

lt_config lt_cfg LT_START_DATA;

/* value is the n bytes at entry, in any case; a signal's name also without its "SIG" (USR1
 * for SIGUSR1, as kill -s and trap take it). */
static int same_choice(const char *entry, size_t n, const char *value, size_t len)
{
    if (n > 3 && strncmp(entry, "SIG", 3) == 0 && strncasecmp(value, "SIG", 3) != 0) {
        entry += 3;
        n -= 3;
    }
    return n == len && strncasecmp(entry, value, n) == 0;
}

/* Index of value in the '|'-separated list, -1 when absent. */
static int choice_index(const char *list, const char *value)
{
    size_t len = strlen(value);
    for (int i = 0; *list; i++) {
        const char *end = strchr(list, '|');
        size_t n = end ? (size_t)(end - list) : strlen(list);
        if (same_choice(list, n, value, len))
            return i;
        if (!end)
            break;
        list = end + 1;
    }
    return -1;
}

static int parse_uint(const char *accepted, const char *value)
{
    char *end;
    long min = strtol(accepted, &end, 10);
    long max = strtol(end + 2, NULL, 10); /* accepted is "min..max" */
    long v = strtol(value, &end, 10);
    return (*value && !*end && v >= min && v <= max) ? (int)v : -1;
}

/* Bytes: a number with an optional K, M, G or T (powers of 1024), at least 1M; "" is a
 * quarter of physical memory (no bound when that is unknown). 0 when bad. */
static size_t parse_size(const char *value)
{
    static const char units[] = "KMGT";
    if (!*value) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        return pages > 0 && page > 0 ? (size_t)pages / 4 * (size_t)page : SIZE_MAX;
    }
    if (!isdigit((unsigned char)*value))
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    const char *unit = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    int shift = unit ? 10 * (int)(unit - units + 1) : 0;
    if (errno || (*end && (!unit || end[1])) || v > (SIZE_MAX >> shift))
        return 0;
    v <<= shift;
    return v >= ((size_t)1 << 20) ? (size_t)v : 0;
}

/* Booleans are listed false, true, false, true...: the parity of the index is the value. */
static int parse(const option_desc *o, const char *value)
{
    switch (o->kind) {
    case UINT: return parse_uint(o->accepted, value);
    case BOOL: {
        int i = choice_index(o->accepted, value);
        return i < 0 ? -1 : i & 1;
    }
    default: return choice_index(o->accepted, value);
    }
}

/* value into o's field (not a STR); 0 when it is not one of o's accepted values. */
static int store(const option_desc *o, const char *value)
{
    char *field = (char *)&lt_cfg + o->offset;
    if (o->kind == SIZE)
        return (*(size_t *)field = parse_size(value)) != 0;
    return (*(int *)field = parse(o, value)) >= 0;
}

static void say(const char *a, const char *b, const char *c, const char *d)
{
    char buf[1024];
    size_t n = 0;
    n = lt_fmt_str(buf, sizeof buf, n, a);
    n = lt_fmt_str(buf, sizeof buf, n, b);
    n = lt_fmt_str(buf, sizeof buf, n, c);
    n = lt_fmt_str(buf, sizeof buf, n, d);
    lt_platform_write_err(buf, n);
}

/* s in buf as a message may show it (lt_fmt_shown): the environment may hold any bytes,
 * escape sequences among them. */
static const char *shown(char *buf, size_t size, const char *s)
{
    lt_fmt_shown(buf, size, 0, s, s ? strlen(s) : 0);
    return buf;
}

static void print_help(void)
{
    for (size_t i = 0; i < LT_ARRAY_LEN(options); i++) {
        const option_desc *o = &options[i];
        say(o->name, "=", o->accepted, " (default ");
        say(o->def[0] ? o->def : "unset", ")\n    ", o->help, "\n");
    }
}

static int known(const char *entry)
{
    for (size_t i = 0; i < LT_ARRAY_LEN(options); i++) {
        size_t n = strlen(options[i].name);
        if (strncmp(entry, options[i].name, n) == 0 && entry[n] == '=')
            return 1;
    }
    return 0;
}

/* A STR option whose value is a path says so in its accepted values (config.def). */
static int names_path(const option_desc *o)
{
    return strcmp(o->accepted, "FILE") == 0 || strcmp(o->accepted, "DIR") == 0;
}

/* A misspelt variable would silently do nothing: refuse it like a bad value. */
static void reject_unknown(void)
{
    extern char **environ;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "LOCKTRACE_", 10) != 0 || known(*e))
            continue;
        size_t n = strcspn(*e, "=");
        char name[128];
        memcpy(name, *e, n < sizeof name ? n : sizeof name - 1);
        name[n < sizeof name ? n : sizeof name - 1] = 0;
        char seen[sizeof name * 4];
        say("locktrace: unknown variable ", shown(seen, sizeof seen, name),
            "; LOCKTRACE_HELP=1 lists the known ones", "\n");
        _exit(2);
    }
}

/* Under the launcher a variable was most likely set by its option: a message that named only
 * LOCKTRACE_WAIT_TIMEOUT left someone who typed --wait-timeout=abc to make the link. Both are
 * named, as the variable may have come from the environment all the same. */
static int launched;

size_t lt_config_named(char *buf, size_t size, size_t at, const char *var)
{
    /* LOCKTRACE_HELP and LOCKTRACE_LAUNCHER_* are no options (the launcher's own --help) */
    if (launched && strncmp(var, "LOCKTRACE_", 10) == 0 && strcmp(var + 10, "HELP") != 0 &&
        strncmp(var + 10, "LAUNCHER_", 9) != 0) {
        at = lt_fmt_str(buf, size, at, "--");
        for (const char *s = var + 10; *s; s++) {
            char c[2] = {*s == '_' ? '-' : (char)tolower((unsigned char)*s), 0};
            at = lt_fmt_str(buf, size, at, c);
        }
        at = lt_fmt_str(buf, size, at, " (");
        at = lt_fmt_str(buf, size, at, var);
        return lt_fmt_str(buf, size, at, ")");
    }
    return lt_fmt_str(buf, size, at, var);
}

/* The launcher hands down a pipe and waits for a word on it: without one it knows the
 * program runs untraced. Answered once, before anything else: a bad configuration found next
 * ends the process with status 2, which the launcher must pass on rather than say the tracer
 * never loaded. The variable goes after lt_config_load has checked it like the others (a
 * bad value set by hand is refused, not read as 0), so the program's children (a shell's
 * commands) do not write to a descriptor that may mean something else by then. */
static void answer_launcher(void)
{
    static const char word[] = "locktrace loaded\n";
    struct stat st;
    const char *var = getenv("LOCKTRACE_LAUNCHER_FD");
    int fd = var ? atoi(var) : 0;
    if (fd > 2 && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
        launched = 1;
        lt_platform_write(fd, word, sizeof word - 1);
        close(fd);
    }
}

/* A string of the environment, copied: a program that rewrites its process title (redis,
 * nginx, postgres: setproctitle) writes over the memory of its environment strings, and a
 * report directory read from there at report time named none (redis's reports were printed,
 * never filed). The original when memory is short. */
static const char *own_copy(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = lt_platform_map(n);
    if (!c)
        return s;
    memcpy(c, s, n);
    return c;
}

/* The report directory, made absolute against the directory the process starts in: it is
 * opened again at each report and at exit, and a program that changes directory in between (a
 * daemon's chdir("/"), a test's chdir into a scratch directory) put its later reports and its
 * summary elsewhere, or nowhere (harden-env.3). Left as it is where the current
 * directory cannot be named. */
static const char *absolute_dir(const char *dir)
{
    char buf[PATH_MAX + 4096];
    if (dir[0] == '/' || !dir[0] || !getcwd(buf, PATH_MAX))
        return dir;
    size_t at = strlen(buf);
    at = lt_fmt_str(buf, sizeof buf, at, buf[1] ? "/" : "");
    if (lt_fmt_str(buf, sizeof buf, at, dir) + 1 >= sizeof buf)
        return dir;
    return own_copy(buf);
}

void lt_config_load(void)
{
    answer_launcher();
    reject_unknown();
    for (size_t i = 0; i < LT_ARRAY_LEN(options); i++) {
        const option_desc *o = &options[i];
        const char *env = getenv(o->name);
        if (o->kind == STR) {
            if (env && *env && names_path(o) && lt_platform_secure()) {
                say("locktrace: ", o->name, " ignored: a setuid or setgid program takes no file ",
                    "names from the environment\n");
                env = NULL;
            }
            *(const char **)((char *)&lt_cfg + o->offset) = env ? own_copy(env) : o->def;
            continue;
        }
        if (!store(o, env ? env : o->def)) {
            char seen[1024], name[128];
            lt_config_named(name, sizeof name, 0, o->name);
            say("locktrace: bad value for ", name, ": '", shown(seen, sizeof seen, env));
            say("'; accepted values: ", o->accepted, "\n", "");
            _exit(2);
        }
    }
    lt_cfg.report_dir = absolute_dir(lt_cfg.report_dir);
    unsetenv("LOCKTRACE_LAUNCHER_FD");
    if (lt_cfg.help) {
        print_help();
        _exit(0);
    }
    lt_wrappers_load(lt_cfg.wrappers);
    lt_report_setup();
}
