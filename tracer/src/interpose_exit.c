/*
 * interpose_exit.c - _exit and _Exit end the process without exit handlers, so the report
 * files' pending occurrence counts (report_file.c writes a repeated report's file at most
 * every few hundred milliseconds) are written first; then libc's own function runs.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lt_internal.h"
#include "platform.h"

static void (*real_exit)(int);
static void (*real_Exit)(int);

__attribute__((constructor)) static void resolve(void)
{
    real_exit = (void (*)(int))lt_platform_real("_exit", NULL);
    real_Exit = (void (*)(int))lt_platform_real("_Exit", NULL);
}

LT_FORK_PATH static _Noreturn void end(void (*real)(int), int status)
{
    lt_report_file_at_exit();
    if (real)
        real(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

LT_FORK_PATH LT_EXPORT void _exit(int status)
{
    end(real_exit, status);
}

LT_FORK_PATH LT_EXPORT void _Exit(int status)
{
    end(real_Exit, status);
}
