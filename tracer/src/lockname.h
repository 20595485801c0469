/*
 * lockname.h - where a lock lives, in the words reports use (lockname.c): the variable that
 * holds it, the thread stack and frame it is on, or the memory mapping around it.
 */
#ifndef LT_LOCKNAME_H
#define LT_LOCKNAME_H

#include <stddef.h>
#include <stdint.h>

/* A new report begins: what the last one learnt about this thread's frames is stale. */
void lt_lockname_begin(void);

/* The name of the lock at addr into buf (NUL-terminated, cut to size); 0 when nothing is
 * known. Report time only: under the report lock, never in a signal handler (it symbolizes,
 * unwinds, takes the thread registry's lock and reads /proc). */
int lt_lockname(uintptr_t addr, char *buf, size_t size);

/* "stack of T<seq>", and ", frame of <function>" when function is not NULL: the name of a
 * lock on a thread's stack, also for the signal-time dump, which knows no frames. */
size_t lt_lockname_stack(char *buf, size_t size, int seq, const char *function);

/* "<what>0x<start> (<len> bytes), offset <addr - start>": a lock inside a heap block or a
 * mapping, also for the block a free-held report knows. Returns the length, as lt_fmt_*. */
size_t lt_lockname_region(char *buf, size_t size, const char *what, uintptr_t start, size_t len,
                          uintptr_t addr);

#endif
