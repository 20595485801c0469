/*
 * stack.h - the stack depot (stack.c): stacks interned once, named by a 32-bit id
 * (0 = none), and lazily taken stacks completed (lt_stack_lazy).
 */
#ifndef LT_STACK_H
#define LT_STACK_H

#include "lt_internal.h"

uint32_t lt_stack_here(uintptr_t from_ra);
uint32_t lt_stack_whole(lt_thread *t, uintptr_t ra, uintptr_t cfa);
uint32_t lt_stack_intern(const uintptr_t *ips, size_t n);
const uintptr_t *lt_stack_get(uint32_t id, size_t *n);
#define LT_STACK_MAX 256 /* frames of a stack at most: LOCKTRACE_STACK_DEPTH's upper bound */

uint32_t lt_stack_lazy(const lt_held *h, uint32_t under, int *partial);
size_t lt_stack_join(const lt_held *h, uint32_t under, uintptr_t *out, int *partial);
uint32_t lt_stack_site(lt_thread *t, uintptr_t ra, uintptr_t cfa, int *partial);
void lt_stack_fork(lt_fork_phase phase);

#endif
