/*
 * refuse_syscall.h - a seccomp filter that answers EPERM to one system call, or traps it
 * (SIGSYS), for the tests of the tracer's ways around a sandbox that refuses what it would use
 * (gate_alone.c: membarrier; noharm.c: process_vm_readv).
 */
#ifndef REFUSE_SYSCALL_H
#define REFUSE_SYSCALL_H

#ifdef __x86_64__
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>

/* System call nr (x86-64's numbers) gets the filter's `action` from now on, in this thread and
 * those it starts, when its argument number arg (from 0) is value (any, when arg is -1); 1
 * when the filter went in. A call made in another architecture's mode is let through. */
static inline int filter_syscall_if(long nr, int arg, unsigned value, unsigned action)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, /* the low half */
                 offsetof(struct seccomp_data, args) + 8 * (arg < 0 ? 0 : arg)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, arg < 0 ? 0 : 1),
        BPF_STMT(BPF_RET | BPF_K, action),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof code / sizeof code[0], code};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

static inline int filter_syscall(long nr, unsigned action)
{
    return filter_syscall_if(nr, -1, 0, action);
}

/* System call nr answers EPERM from now on (container profiles). */
static inline int refuse_syscall(long nr)
{
    return filter_syscall(nr, SECCOMP_RET_ERRNO | EPERM);
}

/* System call nr raises SIGSYS from now on, instead of running (Chromium's and Firefox's
 * sandboxes: their handlers crash the process, or log the call and make it fail). */
static inline int trap_syscall(long nr)
{
    return filter_syscall(nr, SECCOMP_RET_TRAP);
}
#endif

#endif
