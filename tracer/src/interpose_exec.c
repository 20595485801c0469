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
 * its children's tracing to their own linking. Nothing here allocates or takes a lock: the
 * caller may be a vfork child, or a fork child of a threaded program.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
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

static execve_fn real_execve, real_execvpe;
static execv_fn real_execv, real_execvp;
static fexecve_fn real_fexecve;
static spawn_fn real_spawn, real_spawnp;
static int (*real_system)(const char *);
static FILE *(*real_popen)(const char *, const char *);
static char tracer[256]; /* the tracer's file name (no directory); "" when not preloaded */

/* Whether the LD_PRELOAD of env (NULL: none) names a file called `tracer`; the dynamic
 * linker splits it at colons and spaces. */
static int names_tracer(const char *value)
{
    size_t n = strlen(tracer);
    for (const char *p = value; p && *p;) {
        size_t len = strcspn(p, ": ");
        const char *base = p + len;
        while (base > p && base[-1] != '/')
            base--;
        if ((size_t)(p + len - base) == n && memcmp(base, tracer, n) == 0)
            return 1;
        p += len + (p[len] != 0);
    }
    return 0;
}

__attribute__((constructor)) static void resolve(void)
{
    Dl_info self;
    real_execve = (execve_fn)lt_platform_real("execve", NULL);
    real_execvpe = (execve_fn)lt_platform_real("execvpe", NULL);
    real_execv = (execv_fn)lt_platform_real("execv", NULL);
    real_execvp = (execv_fn)lt_platform_real("execvp", NULL);
    real_fexecve = (fexecve_fn)lt_platform_real("fexecve", NULL);
    real_spawn = (spawn_fn)lt_platform_real("posix_spawn", NULL);
    real_spawnp = (spawn_fn)lt_platform_real("posix_spawnp", NULL);
    real_system = (int (*)(const char *))lt_platform_real("system", NULL);
    real_popen = (FILE * (*)(const char *, const char *))lt_platform_real("popen", NULL);
    if (dladdr((void *)resolve, &self) && self.dli_fname) {
        const char *base = strrchr(self.dli_fname, '/');
        lt_fmt_str(tracer, sizeof tracer, 0, base ? base + 1 : self.dli_fname);
        if (!names_tracer(getenv("LD_PRELOAD")))
            tracer[0] = 0;
    }
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
    if (!tracer[0])
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
    execve_fn real = search ? real_execvpe : real_execve;
    if (real)
        real(path, argv, envp);
    else
        errno = ENOSYS;
    return failed(said, path);
}

static int exec_environ(const char *path, char *const argv[], int search)
{
    int said = look(environ, (long)getpid(), path);
    execv_fn real = search ? real_execvp : real_execv;
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
    if (real_fexecve)
        real_fexecve(fd, argv, envp);
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
    return spawn(real_spawn, pid, path, fa, attr, argv, envp);
}

LT_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[],
                           char *const envp[])
{
    return spawn(real_spawnp, pid, file, fa, attr, argv, envp);
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
    if (command)
        look_shell("system: ", command);
    return real_system ? real_system(command) : -1;
}

LT_EXPORT FILE *popen(const char *command, const char *mode)
{
    FILE *f = real_popen ? real_popen(command, mode) : NULL;
    if (f)
        look_shell("popen: ", command);
    return f;
}
