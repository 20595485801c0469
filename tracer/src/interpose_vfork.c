/*
 * interpose_vfork.c - vfork and clone, which tell vmchild.c when a child may run in the
 * process's memory, so that the tracer's sigaction need not ask getpid at each call (x86-64
 * with glibc: meson builds this file there only).
 *
 * vfork is made here, by the system call, as libc makes it, and not by a call to libc's: the
 * child returns from it first, and its calls then write over the stack the parent returns
 * through, so the return address is kept in a register (the parent's registers are its own).
 * The count is taken before the system call and given back by the parent once it runs again
 * (its child has exec'd or exited). The child goes back to its caller by a jump, not a
 * return, for the same reason on a shadow stack (CET), which the child shares too: a return
 * would let its next call write over the entry the parent's return is checked against.
 *
 * clone's child with CLONE_VM and without CLONE_THREAD shares the memory for as long as it
 * runs: it marks the process for good, and the call goes on to libc's clone (__clone, the
 * name glibc also exports it by), arguments and stack untouched.
 *
 * A child in a copy of the memory that does not come from libc's fork passes by the tracer's
 * atfork handlers: their work is done here, around the call that makes it. syscall makes the
 * system call as libc's does, but syscall(SYS_fork) and SYS_clone without CLONE_VM and
 * without a stack of its own (as ThreadSanitizer's fork tests make them) go through the
 * handlers; so does clone without CLONE_VM, whose child runs the child handler on its stack
 * before the program's function. Not seen: such a child made by SYS_clone3 or by the
 * instruction itself (inline assembly), nor one with a TLS of its own (CLONE_SETTLS), nor one
 * with CLONE_VFORK: its parent's call returns only once the child has exec'd or exited, and
 * the tracer's locks, held from the prepare handler to the parent's, would stop the parent's
 * other threads for as long (a child that waits for one of them would never end).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>

#include "interpose.h"
#include "lt_internal.h"
#include "vmchild.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* A vfork that failed: errno set, -1 (vfork's tail call, with its caller's stack). */
__attribute__((used)) static int vfork_failed(int err)
{
    errno = err;
    return -1;
}

/* A system call that failed: errno set, -1 (syscall's tail call). */
__attribute__((used)) static long syscall_failed(int err)
{
    errno = err;
    return -1;
}

/* The fork-like system call nr with its first five arguments (clone's flags, stack, parent
 * and child id words, TLS), between the atfork handlers' work; as syscall answers it. */
__attribute__((used)) static long fork_by_syscall(long nr, long a, long b, long c, long d, long e)
{
    int saved = errno;
    int traced = lt_interpose_fork_unseen_prepare();
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    if (traced) {
        if (r == 0)
            lt_interpose_fork_unseen_child();
        else
            lt_interpose_fork_unseen_parent();
    }
    errno = saved;
    return (unsigned long)r >= -4095UL ? syscall_failed((int)-r) : r;
}

int __clone(int (*fn)(void *), void *stack, int flags, void *arg, ...);

/* A child clone makes in a copy of the memory starts here, on its own stack: the child's
 * handler, then the program's function. */
struct clone_start {
    int (*fn)(void *);
    void *arg;
};

static int clone_child(void *arg)
{
    struct clone_start *start = arg; /* the child's copy of the parent's frame */
    lt_interpose_fork_unseen_child();
    return start->fn(start->arg);
}

/* clone without CLONE_VM, CLONE_SETTLS (a TLS of the child's own, which the tracer's state is
 * not in) and CLONE_VFORK (see the top of this file): libc's, between the atfork handlers'
 * work. Its arguments past arg are read whether the caller gave them or not, as libc's clone
 * reads them; they count only where flags say. */
__attribute__((used)) static int clone_forklike(int (*fn)(void *), void *stack, int flags,
                                                void *arg, pid_t *parent_tid, void *tls,
                                                pid_t *child_tid)
{
    struct clone_start start = {fn, arg};
    int saved = errno;
    if (!lt_interpose_fork_unseen_prepare()) {
        errno = saved;
        return __clone(fn, stack, flags, arg, parent_tid, tls, child_tid);
    }
    errno = saved;
    int r = __clone(clone_child, stack, flags, &start, parent_tid, tls, child_tid);
    saved = errno;
    lt_interpose_fork_unseen_parent();
    errno = saved;
    return r;
}

__asm__(
    "	.text\n"
    "	.globl syscall\n"
    "	.type syscall, @function\n"
    "	.p2align 4\n"
    "syscall:\n"
    "	cmpq $" STR(SYS_fork) ", %rdi\n"
    "	je 3f\n"
    "	cmpq $" STR(SYS_clone) ", %rdi\n"
    "	jne 1f\n"
    "	testl $" STR(CLONE_VM) ", %esi\n"
    "	jnz 1f\n"
    "	testl $" STR(CLONE_SETTLS) ", %esi\n"
    "	jnz 1f\n"
    "	testl $" STR(CLONE_VFORK) ", %esi\n"
    "	jnz 1f\n"
    "	testq %rdx, %rdx\n"
    "	jz 3f\n"
    "1:	movq %rdi, %rax\n"
    "	movq %rsi, %rdi\n"
    "	movq %rdx, %rsi\n"
    "	movq %rcx, %rdx\n"
    "	movq %r8, %r10\n"
    "	movq %r9, %r8\n"
    "	movq 8(%rsp), %r9\n"
    "	syscall\n"
    "	cmpq $-4095, %rax\n"
    "	jae 2f\n"
    "	ret\n"
    "2:	negl %eax\n"
    "	movl %eax, %edi\n"
    "	jmp syscall_failed\n"
    "3:	jmp fork_by_syscall\n"
    "	.size syscall, .-syscall\n"
    "\n"
    "	.globl vfork\n"
    "	.type vfork, @function\n"
    "	.p2align 4\n"
    "vfork:\n"
    "	lock incl lt_vm_children(%rip)\n"
    "	popq %rdi\n"
    "	movl $" STR(SYS_vfork) ", %eax\n"
    "	syscall\n"
    "	testl %eax, %eax\n"
    "	jnz 1f\n"
    "	jmp *%rdi\n"
    "1:	pushq %rdi\n"
    "	lock decl lt_vm_children(%rip)\n"
    "	cmpl $-4095, %eax\n"
    "	jae 2f\n"
    "	ret\n"
    "2:	negl %eax\n"
    "	movl %eax, %edi\n"
    "	jmp vfork_failed\n"
    "	.size vfork, .-vfork\n"
    "\n"
    "	.globl clone\n"
    "	.type clone, @function\n"
    "	.p2align 4\n"
    "clone:\n"
    "	testl $" STR(CLONE_VM) ", %edx\n"
    "	jz 2f\n"
    "	testl $" STR(CLONE_THREAD) ", %edx\n"
    "	jnz 1f\n"
    "	lock orl $" STR(LT_VM_FOR_GOOD) ", lt_vm_children(%rip)\n"
    "1:	jmp __clone@PLT\n"
    "2:	testl $" STR(CLONE_SETTLS) ", %edx\n"
    "	jnz 1b\n"
    "	testl $" STR(CLONE_VFORK) ", %edx\n"
    "	jnz 1b\n"
    "	jmp clone_forklike\n"
    "	.size clone, .-clone\n");
