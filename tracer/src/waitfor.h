/*
 * waitfor.h - the wait-for check (waitfor.c): deadlocks between blocked threads, long
 * waits.
 */
#ifndef LT_WAITFOR_H
#define LT_WAITFOR_H

#include "lt_internal.h"
#include "report.h"

int lt_waitfor_begin(lt_event *ev);
int lt_waitfor_join_begin(lt_event *ev, uintptr_t target);
void lt_waitfor_cond_begin(lt_event *ev, const void *cond, const lt_cond_waiter *w);
void lt_waitfor_signalled(lt_thread *t, const void *cond);
void lt_waitfor_end(lt_event *ev);
void lt_waitfor_shown_end(void);
void lt_waitfor_thread_exit(lt_thread *t);
void lt_waitfor_detached(uintptr_t handle);
void lt_waitfor_detach_claim(lt_thread *t);
void lt_waitfor_fork(lt_fork_phase phase);
/* A published lock wait, as lt_waitfor_orphaned copies it. */
typedef struct lt_orphan_wait {
    lt_lock *lock;
    const void *addr;
    uint32_t stack;
    uint8_t kind, mode, wait, api;
    lt_thread_info who;
} lt_orphan_wait;
/* The published waits for locks that `gone` holds for good now (lt_orphan_locks), and the
 * condition waits that must retake such a lock, are given to the watchdog, which asks
 * detect.c whether one is hopeless (lt_orphan_wait_hopeless) and reports it
 * (lt_report_orphan_wait): at once when nothing but the gone thread could release the lock,
 * else once the rest of the process is stalled. */
void lt_waitfor_orphaned(const lt_gone *gone);
/* lt_orphan_wait_hopeless: the wait may end (0), ends only if another thread of the process
 * releases the lock, which glibc lets it do (LT_HOPELESS_UNLESS_RELEASED), or never ends
 * (LT_HOPELESS). */
enum { LT_HOPELESS_UNLESS_RELEASED = 1, LT_HOPELESS };
int lt_orphan_wait_hopeless(const lt_orphan_wait *w);
void lt_report_orphan_wait(const lt_orphan_wait *w);
void lt_lock_ref_fill(lt_lock_ref *r, const void *addr, lt_kind kind, const lt_lock *l);
uint32_t lt_held_stack(lt_held *h, uint32_t under, int *partial);
/* How lt_holders_find confirms a holder's entry (which outlives libc's unlock a moment): not
 * at all, by the tracer's record of the lock (its generation and exclusive holder), or by
 * that and the lock's word (the memory must be the program's still). */
enum { LT_CONFIRM_NONE, LT_CONFIRM_RECORD, LT_CONFIRM_WORD };
size_t lt_holders_find(const lt_lock *lock, uint32_t gen, int confirm, lt_wait_step *out,
                       size_t max);

#endif
