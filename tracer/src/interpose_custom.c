/*
 * interpose_custom.c - the custom-lock annotations of locktrace.h (locktrace_mutex_*): a lock
 * whose own code reports its create, destroy, lock and unlock goes through the same checker
 * events as a pthread lock, with api LT_API_CUSTOM so that nothing reads its memory
 * (detect.c's lt_lock_* functions) and reports name it "custom mutex" / "custom rwlock".
 *
 * The program does the try and the blocking itself: pre_lock is the checker's lt_before_lock
 * (the same-thread rules), block publishes the wait (the wait-for check), post_lock ends it
 * and records the result (held set, lock order). The wait lives in the thread's state
 * between block and post_lock.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "interpose.h"
#include "lt_internal.h"

#define CALLER (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa()

/* The event of a call on `lock`: its kind from the create flags (or this call's read flag),
 * its mode and wait from the call's flags. 0 when the call is not to be checked (tracer not
 * ready, re-entered, no memory for the thread). */
static int begin(lt_event *ev, const void *lock, unsigned flags, uintptr_t ra, uintptr_t cfa)
{
    *ev = (lt_event){.addr = lock, .ra = ra, .cfa = cfa, .api = LT_API_CUSTOM};
    if (!lt_interpose_ready() || !lt_enter(&lt_tls))
        return 0;
    ev->self = lt_self();
    if (!ev->self) {
        lt_leave(&lt_tls);
        return 0;
    }
    const lt_lock *l = lt_shadow_get(ev->self, lock, ra, cfa);
    int rw = (flags & (LOCKTRACE_MUTEX_RW | LOCKTRACE_MUTEX_READ)) ||
             (l && l->api == LT_API_CUSTOM && (l->custom_flags & LOCKTRACE_MUTEX_RW));
    ev->kind = rw ? LT_RWLOCK : LT_MUTEX;
    ev->mode = flags & LOCKTRACE_MUTEX_READ ? LT_MODE_READ : LT_MODE_WRITE;
    ev->wait = flags & LOCKTRACE_MUTEX_TRY     ? LT_WAIT_TRY
               : flags & LOCKTRACE_MUTEX_TIMED ? LT_WAIT_TIMED
                                               : LT_WAIT_BLOCK;
    return 1;
}

LT_EXPORT void locktrace_mutex_create_impl(const void *lock, unsigned flags)
{
    lt_event ev;
    if (!begin(&ev, lock, flags, CALLER))
        return;
    lt_on_init(&ev);
    lt_lock *l = lt_shadow_get(ev.self, lock, ev.ra, ev.cfa);
    if (l)
        l->custom_flags = (uint8_t)(flags & (LOCKTRACE_MUTEX_RW | LOCKTRACE_MUTEX_RECURSIVE));
    lt_leave(&lt_tls);
}

LT_EXPORT void locktrace_mutex_destroy_impl(const void *lock)
{
    lt_event ev;
    if (!begin(&ev, lock, 0, CALLER))
        return;
    lt_on_destroy(&ev);
    lt_leave(&lt_tls);
}

LT_EXPORT int locktrace_mutex_pre_lock_impl(const void *lock, unsigned flags)
{
    lt_event ev;
    if (!begin(&ev, lock, flags, CALLER))
        return 0;
    int rc = lt_before_lock(&ev);
    lt_leave(&lt_tls);
    return rc;
}

/* The wait ends in post_lock; a second block before it (a lock's retry loop) is the same wait. */
LT_EXPORT int locktrace_mutex_block_impl(const void *lock, unsigned flags)
{
    lt_event ev;
    int rc = 0;
    if (!begin(&ev, lock, flags, CALLER))
        return 0;
    if (ev.self->custom_wait != lock) {
        ev.lock = lt_shadow_get(ev.self, lock, ev.ra, ev.cfa);
        rc = lt_wait_begin(&ev);
        if (ev.published) {
            ev.self->custom_wait = lock;
            ev.self->custom_wait_kind = (uint8_t)ev.kind;
            ev.self->custom_wait_mode = (uint8_t)ev.mode;
        } else {
            lt_wait_end(&ev);
        }
    }
    lt_leave(&lt_tls);
    return rc;
}

LT_EXPORT void locktrace_mutex_post_lock_impl(const void *lock, unsigned flags, int acquired)
{
    lt_event ev;
    if (!begin(&ev, lock, flags, CALLER))
        return;
    ev.lock = lt_shadow_get(ev.self, lock, ev.ra, ev.cfa);
    if (ev.self->custom_wait == lock) {
        lt_event w = ev;
        w.kind = (lt_kind)ev.self->custom_wait_kind;
        w.mode = (lt_mode)ev.self->custom_wait_mode;
        w.published = 1;
        ev.self->custom_wait = NULL;
        lt_wait_end(&w);
    }
    ev.held = lt_held_find(ev.self, lock);
    lt_after_lock(&ev, acquired ? 0 : EBUSY);
    lt_leave(&lt_tls);
}

LT_EXPORT void locktrace_mutex_pre_unlock_impl(const void *lock, unsigned flags)
{
    lt_event ev;
    if (!begin(&ev, lock, flags, CALLER))
        return;
    lt_after_unlock(&ev, 0);
    lt_leave(&lt_tls);
}
