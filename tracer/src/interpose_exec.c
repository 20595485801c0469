/*
 * interpose_exec.c - a program that starts another with an environment that no longer
 * preloads the tracer (it cleared or replaced LD_PRELOAD: env -i, a sandbox, a test harness
 * that builds its children's environment) runs that one untraced. The tracer does not put
 * itself back: a program that clears LD_PRELOAD means it (a sandbox, a set-user-ID helper),
 * and valgrind does not follow children unless asked either. But under the launcher the user
 * is told: each exec function looks at the environment it is given and, when that one drops
 * the tracer, tells the launcher (report_channel.c), which names such programs at the end.
 * An exec that fails takes its word back; posix_spawn speaks only once the child is started.
 *
 * Only where the tracer was itself preloaded: a program that links it in (pkg-config) keeps
 * its children's tracing to their own linking. Nothing here allocates or takes a lock but the
 * first call of each function, which looks its real one up (dlsym: glibc makes its lock new in
 * a fork child, and a vfork child shares it with the running parent).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lt_internal.h"
#include "platform.h"

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);
typedef int (*system_fn)(const char *);
typedef FILE *(*popen_fn)(const char *, const char *);

/* Each function's real one is looked up at its first call (lt_platform_real_lazy), not at
 * every process start: nine lookups were 14,000 instructions of a traced /bin/true's 522,000. */

/* Whether an LD_PRELOAD value (NULL: none) names the tracer: a file whose name starts with
 * "liblocktrace" (the launcher's symlink for a path with spaces is one too); the dynamic
 * linker splits it at colons and spaces. */
static int names_tracer(const char *value)
{
    static const char tracer[] = "liblocktrace";
    for (const char *p = value; p && *p;) {
        size_t len = strcspn(p, ": ");
        const char *base = p + len;
        while (base > p && base[-1] != '/')
            base--;
        if ((size_t)(p + len - base) >= sizeof tracer - 1 &&
            memcmp(base, tracer, sizeof tracer - 1) == 0)
            return 1;
        p += len + (p[len] != 0);
    }
    return 0;
}

static int preloaded; /* the tracer came in through LD_PRELOAD, not linked in */

__attribute__((constructor)) static void preloaded_at_start(void)
{
    preloaded = names_tracer(getenv("LD_PRELOAD"));
}

static const char *var_of(char *const envp[], const char *name, size_t n)
{
    for (size_t i = 0; envp && envp[i]; i++)
        if (strncmp(envp[i], name, n) == 0)
            return envp[i] + n;
    return NULL;
}

/* What the program started with envp as process pid will be, said to the launcher: untraced
 * (no tracer in its LD_PRELOAD), or traced but out of the launcher's hearing (its
 * environment lost LOCKTRACE_LAUNCHER_SOCKET: its reports do not count there); 0 when
 * nothing was said. */
static int look(char *const envp[], long pid, const char *program)
{
    const char *what = NULL;
    if (!preloaded)
        return 0;
    if (!names_tracer(var_of(envp, "LD_PRELOAD=", 11)))
        what = "untraced";
    else if (!var_of(envp, "LOCKTRACE_LAUNCHER_SOCKET=", 26))
        what = "unheard";
    if (what)
        lt_report_channel_exec(what, pid, program);
    return what != NULL;
}

/* An exec that returned failed: what look said is taken back. errno kept. */
static int failed(int said, const char *program)
{
    if (said)
        lt_report_channel_exec("failed", (long)getpid(), program);
    return -1;
}

static int exec_env(const char *path, char *const argv[], char *const envp[], int search)
{
    int said = look(envp, (long)getpid(), path);
    static _Atomic(void *) slots[2];
    execve_fn real = (execve_fn)lt_platform_real_lazy(&slots[search], search ? "execvpe" : "execve");
    if (real)
        real(path, argv, envp);
    else
        errno = ENOSYS;
    return failed(said, path);
}

static int exec_environ(const char *path, char *const argv[], int search)
{
    int said = look(environ, (long)getpid(), path);
    static _Atomic(void *) slots[2];
    execv_fn real = (execv_fn)lt_platform_real_lazy(&slots[search], search ? "execvp" : "execv");
    if (real)
        real(path, argv);
    else
        errno = ENOSYS;
    return failed(said, path);
}

LT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    return exec_env(path, argv, envp, 0);
}

LT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return exec_env(file, argv, envp, 1);
}

LT_EXPORT int execv(const char *path, char *const argv[])
{
    return exec_environ(path, argv, 0);
}

LT_EXPORT int execvp(const char *file, char *const argv[])
{
    return exec_environ(file, argv, 1);
}

LT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    const char *name = argv[0] ? argv[0] : "(fexecve)";
    int said = look(envp, (long)getpid(), name);
    static _Atomic(void *) slot;
    fexecve_fn real = (fexecve_fn)lt_platform_real_lazy(&slot, "fexecve");
    if (real)
        real(fd, argv, envp);
    else
        errno = ENOSYS;
    return failed(said, name);
}

/* execl, execlp and execle: their arguments as an argv array, as glibc's own do. */
#define COLLECT(arg, argv, ap)                                                 \
    size_t argc = 1;                                                           \
    va_start(ap, arg);                                                         \
    while (va_arg(ap, char *))                                                 \
        argc++;                                                                \
    va_end(ap);                                                                \
    char *argv[argc + 1];                                                      \
    argv[0] = (char *)arg;                                                     \
    va_start(ap, arg);                                                         \
    for (size_t i = 1; i <= argc; i++)                                         \
        argv[i] = va_arg(ap, char *);

LT_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    COLLECT(arg, argv, ap)
    va_end(ap);
    return exec_environ(path, argv, 0);
}

LT_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    COLLECT(arg, argv, ap)
    va_end(ap);
    return exec_environ(file, argv, 1);
}

LT_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    COLLECT(arg, argv, ap)
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return exec_env(path, argv, envp, 0);
}

static int spawn(spawn_fn real, pid_t *pid, const char *path,
                 const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                 char *const argv[], char *const envp[])
{
    pid_t child;
    if (!real)
        return ENOSYS;
    int rc = real(&child, path, fa, attr, argv, envp);
    if (rc == 0)
        look(envp, (long)child, path);
    if (rc == 0 && pid)
        *pid = child;
    return rc;
}

LT_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    static _Atomic(void *) slot;
    return spawn((spawn_fn)lt_platform_real_lazy(&slot, "posix_spawn"), pid, path, fa, attr, argv, envp);
}

LT_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[],
                           char *const envp[])
{
    static _Atomic(void *) slot;
    return spawn((spawn_fn)lt_platform_real_lazy(&slot, "posix_spawnp"), pid, file, fa, attr, argv, envp);
}

/* system and popen start /bin/sh with the program's environment (libc's own spawn inside,
 * which no interposer sees): a program that removed LD_PRELOAD from it first runs the
 * command untraced. Named "system: COMMAND" in the caller's pid (the shell's is not known). */
static void look_shell(const char *how, const char *command)
{
    char what[512];
    size_t at = lt_fmt_str(what, sizeof what, 0, how);
    lt_fmt_str(what, sizeof what, at, command);
    look(environ, (long)getpid(), what);
}

LT_EXPORT int system(const char *command)
{
    static _Atomic(void *) slot;
    system_fn real = (system_fn)lt_platform_real_lazy(&slot, "system");
    if (command)
        look_shell("system: ", command);
    return real ? real(command) : -1;
}

LT_EXPORT FILE *popen(const char *command, const char *mode)
{
    static _Atomic(void *) slot;
    popen_fn real = (popen_fn)lt_platform_real_lazy(&slot, "popen");
    FILE *f = real ? real(command, mode) : NULL;
    if (f)
        look_shell("popen: ", command);
    return f;
}
