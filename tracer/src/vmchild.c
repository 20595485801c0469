/*
 * vmchild.c - whether the calling code is a vfork child: it runs in its parent's memory, on
 * the vforking thread's stack and TLS, until it execs or exits, but its signal actions are
 * its own (Python's subprocess sets every handled signal back to the default between vfork and
 * exec). What it asks the kernel for must not change the tracer's state of its parent
 * (sigdefer.c's and dumpsig.c's kept actions). glibc caches no pid, so telling it by getpid
 * was a system call at each sigaction: ThreadSanitizer's signal_reset, 2,000,000 of them,
 * took 43 s traced against 20 s natively, its runner allowing 60 s.
 *
 * So, where interpose_vfork.c is built (LT_VFORK_COUNTED: x86-64 Linux with glibc), the
 * tracer's vfork counts the children alive that share the memory, and only while one is does
 * the check cost a getpid; clone, with CLONE_VM and without CLONE_THREAD, marks it for good
 * (such a child runs beside its parent, for as long as it likes). Elsewhere every check asks
 * getpid, as it did. Not told apart where counted: a child in the memory that the system
 * call makes directly (syscall(SYS_clone, CLONE_VM ...), inline assembly as the Go runtime's,
 * which sets its actions by the system call too); its sigaction would change its parent's
 * kept actions. (A child the system call makes as fork does is a fork's: interpose_vfork.c.)
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <unistd.h>

#include "lt_internal.h"
#include "vmchild.h"

/* The process the tracer's state is of; 0 until lt_vm_init. */
static _Atomic int owner LT_START_DATA;

/* interpose_vfork.c adds one before vfork's system call and the parent takes it back once it
 * runs again; so it is never 0 in a vfork child, which reads what its parent's thread wrote
 * last. Another thread of the parent that finds it nonzero asks getpid, and is told apart. */
_Atomic int lt_vm_children LT_START_DATA;

void lt_vm_init(void)
{
    if (!atomic_load_explicit(&owner, memory_order_relaxed))
        atomic_store(&owner, getpid());
}

int lt_vm_child(void)
{
#if LT_VFORK_COUNTED
    if (lt_likely(!atomic_load_explicit(&lt_vm_children, memory_order_relaxed)))
        return 0;
#endif
    int o = atomic_load_explicit(&owner, memory_order_relaxed);
    return o && getpid() != o;
}

LT_FORK_PATH void lt_vm_fork(lt_fork_phase phase)
{
    if (phase != LT_FORK_CHILD)
        return;
    atomic_store(&owner, getpid());
    /* (written only when set: a page the child writes is a page copied) */
    if (atomic_load_explicit(&lt_vm_children, memory_order_relaxed))
        atomic_store(&lt_vm_children, 0);
}
