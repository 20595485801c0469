/*
 * vmchild.h - whether the calling code is a child process that runs in this process's memory
 * (vmchild.c): a vfork child.
 */
#ifndef LT_VMCHILD_H
#define LT_VMCHILD_H

#include "spin.h"

/* vfork children alive that share the memory, plus LT_VM_FOR_GOOD once clone made a
 * CLONE_VM child (vmchild.c; written by interpose_vfork.c's vfork and clone). */
#define LT_VM_FOR_GOOD 0x40000000
extern _Atomic int lt_vm_children;

/* The process the tracer's state is of: the calling one (at start; again does nothing). */
void lt_vm_init(void);

/* Whether the caller is a child that shares this process's memory but not its kernel state
 * (a vfork child, or one clone made with CLONE_VM): what it asks the kernel for is its own. */
int lt_vm_child(void);

/* A fork's child is a process of its own, which no child shares yet. */
void lt_vm_fork(lt_fork_phase phase);

#endif
