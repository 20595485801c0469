/*
 * report_build.c - turns a live lt_finding into a self-contained lt_rep: stack ids become
 * symbolized frames with module path, build-id and offset, the annotation callback becomes
 * its text, the lock's shadow becomes numbers. Runs under the report lock, so the storage is
 * static: fixed pools that a huge report can exhaust, in which case frames are dropped and
 * the report says how many, rather than allocating.
 */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lt_internal.h"
#include "lifetime.h"
#include "lockname.h"
#include "platform.h"
#include "report_data.h"

#define MAX_LOCKS 256    /* exit-held: locks listed; more are left out */
#define MAX_STEPS 1024   /* cross-thread kinds: links of a cycle listed; more are left out */
#define MAX_THREADS (MAX_STEPS + 2)
#define MAX_STACKS (MAX_LOCKS + 2 * MAX_STEPS + 4)
#define MAX_FRAMES 4096  /* over every stack of one report */
#define STRING_BYTES (512 * 1024)

static lt_rep_thread threads[MAX_THREADS];
static lt_rep_lock locks[MAX_LOCKS];
static lt_rep_stack stacks[MAX_STACKS];
static lt_rep_frame frames[MAX_FRAMES];
static lt_rep_step steps[MAX_STEPS];
static char strings[STRING_BYTES];
static size_t nframes, string_used;
static char thread_names[MAX_THREADS][16];
static lt_module module; /* scratch for one lookup */
static char exe[4096];
/* lt_report_build_raw, run on every occurrence to recognise repeats (report_seen.c): the
 * stacks as addresses only; whatever symbolizes, names a lock or calls into the program is
 * skipped, since only the stacks identify an occurrence. */
static int raw_only;

/* A copy of s in the string pool; NULL when s is NULL or the pool is full. */
static const char *keep(const char *s)
{
    size_t n = s ? strlen(s) + 1 : 0;
    if (!s || n > STRING_BYTES - string_used)
        return NULL;
    char *p = memcpy(strings + string_used, s, n);
    string_used += n;
    return p;
}

/* Module paths and build-ids repeat in every frame: reuse the previous frame's copies. */
static const char *keep_same(const char *s, const char *prev)
{
    return prev && s && strcmp(prev, s) == 0 ? prev : keep(s);
}

/* The signal frame's name, one copy: add_stack knows the frame after it by this pointer. */
static const char signal_frame[] = LT_REP_SIGNAL_FRAME;

/* The frames of one captured address into f (at most room, 1 or more): the calls inlined
 * there, innermost first, then its function. interrupted: ip is where a signal stopped the
 * thread (the frame before was the signal's), the instruction itself, not a return address
 * whose call is one byte before. */
static size_t fill_frames(lt_rep_frame *f, size_t room, uintptr_t ip, const lt_rep_frame *prev,
                          int interrupted)
{
    lt_symbol s[32];
    lt_rep_frame base = {.ip = ip};
    if (raw_only) {
        f[0] = base;
        return 1;
    }
    if (lt_platform_module(ip, &module)) {
        base.module = keep_same(module.path, prev ? prev->module : NULL);
        if (module.build_id[0])
            base.build_id = keep_same(module.build_id, prev ? prev->build_id : NULL);
        base.module_offset = ip - module.base;
    }
    if (lt_platform_is_sigreturn(ip)) {
        f[0] = base;
        f[0].function = signal_frame;
        return 1;
    }
    /* ip is a return address: look up the call */
    size_t n = lt_platform_symbolize(ip - !interrupted, s,
                                     room < LT_ARRAY_LEN(s) ? room : LT_ARRAY_LEN(s));
    int own_wrapper = lt_wrapper_at(ip) == 1;
    for (size_t i = 0; i < n; i++) {
        f[i] = base;
        f[i].wrapper = s[i].inlined ? lt_wrapper_named(s[i].function) : own_wrapper;
        f[i].function = keep(s[i].function);
        f[i].function_offset = s[i].function_offset;
        f[i].file = keep(s[i].file);
        f[i].line = s[i].line;
        f[i].inlined = s[i].inlined;
        f[i].split_missing = keep(s[i].split_missing);
        if (!f[i].module && s[i].module) {
            f[i].module = keep(s[i].module);
            f[i].module_offset = s[i].module_offset + !interrupted;
        }
    }
    return n;
}

/* Why the stack ips[0 .. n) ends where it does, when that is not at the thread's outermost
 * frame: asked of its last frame only where that is where an unwind stopped: not at the depth
 * limit, nor with frames left out, nor in frames recorded lazily (partial: the walk that
 * records them stops at a frame without unwind information where libunwind may still go on,
 * by the frame pointer, so LOCKTRACE_STACKS=full can know more; they are marked as recorded
 * frames already). Report time only: the unwinder's look-up of one address (interrupted:
 * ips[n - 1] is the instruction a signal stopped, not a return address). */
static lt_rep_cut cut_at(const uintptr_t *ips, size_t n, int partial, size_t dropped,
                         int interrupted)
{
    if (raw_only || !n || partial || dropped || n >= lt_stack_depth())
        return LT_CUT_NONE;
    return lt_platform_unwind_info(ips[n - 1] + (uintptr_t)interrupted) == 0
               ? LT_CUT_NO_UNWIND_INFO
               : LT_CUT_NONE;
}

/* How many of the k frames of a stack's top address are calls of locktrace.h's inline
 * functions (locktrace_memory_recycled, locktrace_mutex_pre_lock): the tracer's interface,
 * inlined into the program's function. Left out, as the tracer's own frames are: the
 * program's line is #0, as in a report of a pthread call. */
static size_t annotation_frames(const lt_rep_frame *f, size_t k)
{
    size_t n = 0;
    while (n + 1 < k && f[n].inlined && f[n].function &&
           strncmp(f[n].function, "locktrace_", 10) == 0)
        n++;
    return n;
}

static lt_rep_stack *add_stack(lt_rep *r, const char *role, uint32_t id, int lock, int partial)
{
    int interrupted = 0;
    size_t n;
    const uintptr_t *ips = lt_stack_get(id, &n);
    if (r->nstacks == MAX_STACKS || !ips)
        return NULL;
    /* Frames recorded lazily that reach the thread's outermost frame are its whole stack:
     * where a lock was first seen in a shallow stack, or taken by a caller since returned. */
    if (partial && n && lt_callsite_outermost(ips[n - 1]))
        partial = 0;
    lt_rep_stack *s = &stacks[r->nstacks++];
    *s = (lt_rep_stack){.role = role, .thread = 0, .lock = lock, .step = -1, .partial = partial};
    s->frames = &frames[nframes];
    for (size_t i = 0; i < n; i++) {
        /* The tracer's own frames inside the program's stack are none of the program's calls:
         * a once-control's init routine runs from libc through interpose_once.c. */
        if (i && lt_platform_in_tracer(ips[i]))
            continue;
        if (nframes == MAX_FRAMES) {
            s->dropped = n - i;
            break;
        }
        interrupted = i && frames[nframes - 1].function == signal_frame;
        size_t k = fill_frames(&frames[nframes], MAX_FRAMES - nframes, ips[i],
                               i ? &frames[nframes - 1] : NULL, interrupted);
        size_t api = i ? 0 : annotation_frames(&frames[nframes], k);
        if (api) {
            k -= api;
            memmove(&frames[nframes], &frames[nframes + api], k * sizeof *frames);
        }
        nframes += k;
        s->nframes += k;
    }
    s->cut = cut_at(ips, n, partial, s->dropped, interrupted);
    return s;
}

static lt_rep_thread *add_thread(lt_rep *r, const lt_thread_info *t, int gone)
{
    lt_rep_thread *out = &threads[r->nthreads];
    memcpy(thread_names[r->nthreads], t->name, sizeof t->name);
    thread_names[r->nthreads][sizeof t->name - 1] = 0;
    *out = (lt_rep_thread){t->seq, t->tid, thread_names[r->nthreads], gone, 0};
    r->nthreads++;
    return out;
}

/* The annotation's text, from the program's describe callback (see locktrace.h). */
static const char *describe(const void *object, locktrace_describe_fn fn)
{
    static char desc[256];
    if (!fn || raw_only)
        return NULL;
    desc[0] = 0;
    fn(object, desc, sizeof desc);
    desc[sizeof desc - 1] = 0;
    return keep(desc);
}

/* free-held: the lock's place in the memory being released, "heap block 0x... (N bytes),
 * offset K" (free, realloc), "mapping 0x... (N bytes), offset K" (munmap), "recycled memory
 * 0x... (N bytes), offset K" (locktrace_memory_recycled) or "library PATH, data 0x... (N
 * bytes), offset K" (dlclose; unloaded already, named from what was noted before: lifetime.h). */
static const char *block_name(const lt_finding *f)
{
    static const char *const kinds[] = {[LT_RELEASE_FREE] = "heap block ",
                                        [LT_RELEASE_REALLOC] = "heap block ",
                                        [LT_RELEASE_MUNMAP] = "mapping ",
                                        [LT_RELEASE_RECYCLED] = "recycled memory ",
                                        [LT_RELEASE_DLCLOSE] = "library data "};
    char buf[384], what[320];
    const char *kind = kinds[f->block_how];
    if (f->block_how == LT_RELEASE_DLCLOSE && !raw_only &&
        lt_platform_module((uintptr_t)f->lock, &module)) {
        size_t n = lt_fmt_str(what, sizeof what, 0, "library ");
        n = lt_fmt_str(what, sizeof what, n, module.path);
        lt_fmt_str(what, sizeof what, n, ", data ");
        kind = what;
    }
    lt_lockname_region(buf, sizeof buf, kind, f->block, f->block_size, (uintptr_t)f->lock);
    return keep(buf);
}

static void add_concerned_lock(lt_rep *r, const lt_finding *f)
{
    lt_rep_lock *l = &locks[r->nlocks++];
    *l = (lt_rep_lock){.addr = (uintptr_t)f->lock, .type = f->lock_kind,
                       .mutex_type = f->mutex_type, .writer_pref = f->writer_pref,
                       .held_mode = f->held_mode, .req_mode = f->req_mode, .wait = f->wait,
                       .generation = f->generation, .object = (uintptr_t)f->object,
                       .api = f->api};
    l->annotation = describe(f->object, f->describe);
    if (f->kind == LT_FIND_FREE_HELD)
        l->name = block_name(f);
}

/* Exit-held: every lock still held, each with where it was taken. */
static int thread_index(lt_rep *r, const lt_thread_info *t);

static void add_held_locks(lt_rep *r, const lt_finding *f)
{
    for (size_t i = 0; i < f->nheld && i < MAX_LOCKS; i++) {
        const lt_held *h = &f->held[i];
        lt_rep_lock *l = &locks[r->nlocks];
        *l = (lt_rep_lock){.addr = (uintptr_t)h->addr, .type = (lt_kind)h->kind,
                           .held_mode = (lt_mode)h->mode, .generation = h->gen};
        if (h->lock && atomic_load(&h->lock->gen) == h->gen) {
            l->object = (uintptr_t)lt_lock_object(h->lock);
            l->api = h->lock->api;
            l->annotation = describe(lt_lock_object(h->lock), lt_lock_describe(h->lock));
        }
        const lt_lock *live = l->api == LT_API_CUSTOM ? h->lock : NULL; /* gen checked above */
        l->mutex_type = h->kind == LT_MUTEX ? lt_lock_mutex_type(h->addr, live) : 0;
        /* lazily taken: the call site and the callers recorded with it (h->site), which
         * reach the program's function through a lock wrapper (HotSpot's Mutex::lock) */
        uint32_t id = h->stack ? h->stack : h->site ? h->site : lt_stack_intern(&h->ra, 1);
        lt_rep_stack *s = add_stack(r, "taken", id, (int)r->nlocks, !h->stack);
        if (s && f->owners)
            s->thread = thread_index(r, &f->owners[i]);
        r->nlocks++;
    }
}

/* Condvar misuse: the condition variable, then each mutex once. */
static int plain_lock(lt_rep *r, const void *addr, lt_kind kind, int api)
{
    for (size_t i = 0; i < r->nlocks; i++)
        if (locks[i].addr == (uintptr_t)addr)
            return (int)i;
    if (r->nlocks == MAX_LOCKS)
        return -1;
    locks[r->nlocks] = (lt_rep_lock){.addr = (uintptr_t)addr, .type = kind, .api = api,
                                     .mutex_type = kind == LT_MUTEX ? lt_platform_mutex_type(addr)
                                                                    : 0};
    return (int)r->nlocks++;
}

/* ... and the waiters it names, each with the call site of its wait (a barrier's waiters:
 * with the barrier). */
static void add_condvar(lt_rep *r, const lt_finding *f)
{
    plain_lock(r, f->lock, f->lock_kind, f->api);
    if (f->mutex)
        plain_lock(r, f->mutex, LT_MUTEX, f->api);
    if (f->other_mutex)
        plain_lock(r, f->other_mutex, LT_MUTEX, f->nwaiters ? f->waiters[0].api : f->api);
    add_stack(r, "request", f->request_stack, 0, 0);
    add_stack(r, "held", f->held_stack, 1, f->held_partial); /* the recursive mutex kept */
    for (size_t i = 0; i < f->nwaiters && r->nthreads < MAX_THREADS; i++) {
        const lt_cond_waiter *w = &f->waiters[i];
        add_thread(r, &w->who, 0);
        lt_rep_stack *s = add_stack(r, "waiting", lt_stack_intern(&w->ra, 1),
                                    w->mutex ? plain_lock(r, w->mutex, LT_MUTEX, w->api) : 0, 1);
        if (s)
            s->thread = (int)r->nthreads - 1;
    }
}

/* Outside a report: for the exit-time statistics table, when no report runs, and for the
 * thread dump at abort, which runs under the report lock after the report is out. */
const lt_rep_stack *lt_report_build_stack(uint32_t id, int partial)
{
    static lt_rep r;
    nframes = string_used = 0;
    r = (lt_rep){.stacks = stacks};
    return add_stack(&r, "first-seen", id, -1, partial);
}

/* ------------------------------------------------------------------------------------------
 * Cross-thread kinds: threads and locks are listed once each, steps refer to them by index.
 * ---------------------------------------------------------------------------------------- */
static int thread_index(lt_rep *r, const lt_thread_info *t)
{
    for (size_t i = 0; i < r->nthreads; i++)
        if (threads[i].seq == t->seq)
            return (int)i;
    if (r->nthreads == MAX_THREADS)
        return -1;
    add_thread(r, t, 0);
    return (int)r->nthreads - 1;
}

/* A site class's name: "site <function> <file>:<line>" of the call site. */
static const char *site_class_name(uintptr_t site)
{
    lt_symbol s;
    char buf[512];
    size_t n = lt_fmt_str(buf, sizeof buf, 0, "site ");
    if (lt_platform_symbolize(site - 1, &s, 1) && s.function) {
        n = lt_fmt_str(buf, sizeof buf, n, s.function);
        if (s.file) {
            n = lt_fmt_str(buf, sizeof buf, n, " ");
            n = lt_fmt_str(buf, sizeof buf, n, s.file);
            n = lt_fmt_str(buf, sizeof buf, n, ":");
            n = lt_fmt_dec(buf, sizeof buf, n, s.line);
        }
    } else {
        lt_fmt_hex(buf, sizeof buf, n, site);
    }
    return keep(buf);
}

/* Two refs to one address are one lock unless both know their generations and they differ
 * (a prediction names locks that may have come and gone at one address), or one of them
 * ended and the other did not (an inversion through a lock that ended, beside a new lock at
 * its address). */
static int same_lock(const lt_rep_lock *l, const lt_lock_ref *ref)
{
    return l->addr == (uintptr_t)ref->addr && l->ended == ref->ended &&
           (!l->generation || !ref->generation || l->generation == ref->generation);
}

static int lock_index(lt_rep *r, const lt_lock_ref *ref)
{
    for (size_t i = 0; i < r->nlocks; i++)
        if (same_lock(&locks[i], ref))
            return (int)i;
    if (r->nlocks == MAX_LOCKS)
        return -1;
    lt_rep_lock *l = &locks[r->nlocks++];
    *l = (lt_rep_lock){.addr = (uintptr_t)ref->addr, .type = ref->kind,
                       .mutex_type = ref->mutex_type, .writer_pref = ref->writer_pref,
                       .object = (uintptr_t)ref->object, .api = ref->api,
                       .generation = ref->generation, .ended = ref->ended};
    l->annotation = describe(ref->object, ref->describe);
    if (!raw_only) /* a site class is named by symbolizing */
        l->class_name = ref->class_site ? site_class_name(ref->class_site) : keep(ref->class_name);
    return (int)r->nlocks - 1;
}

static void add_step_stack(lt_rep *r, const char *role, uint32_t id, int step, int thread,
                           int partial)
{
    lt_rep_stack *s = add_stack(r, role, id, steps[step].lock, partial);
    if (s) {
        s->thread = thread;
        s->step = step;
    }
}

/* Deadlock and long-wait: the waits of a cycle, or a waiter and the holders of its lock. */
static void add_wait_steps(lt_rep *r, const lt_finding *f)
{
    for (size_t i = 0; i < f->nsteps && i < MAX_STEPS; i++) {
        const lt_wait_step *w = &f->steps[i];
        lt_rep_step *st = &steps[r->nsteps++];
        *st = (lt_rep_step){.thread = thread_index(r, &w->thread), .waits_for = w->waits_for,
                            .lock = -1, .from = -1, .want_mode = w->want_mode,
                            .held_mode = w->held_mode, .wait = w->wait, .blocker = -1,
                            .waited_ms = w->waited_ms};
        /* a long-wait holder's own wait is told as a waiter's */
        st->now_waits = f->kind == LT_FIND_LONG_WAIT && i > 0 && w->now_waits;
        if (f->kind == LT_FIND_LONG_WAIT && i > 0 && !w->now_waits && w->now_in[0])
            st->now_in = w->now_in;
        int waits = f->kind == LT_FIND_DEADLOCK || i == 0 || st->now_waits;
        if (f->kind == LT_FIND_DEADLOCK ||
            (st->now_waits && w->waits_for == LT_FOR_JOIN && w->blocker.seq >= 0))
            st->blocker = thread_index(r, &w->blocker);
        if (!waits)
            continue;
        if (w->waits_for != LT_FOR_LOCK)
            st->api = w->wants.api;
        if (w->waits_for == LT_FOR_SIGNAL)
            st->cond = (uintptr_t)w->wants.addr;
        else if (w->waits_for == LT_FOR_LOCK)
            st->lock = lock_index(r, &w->wants);
    }
    /* A deadlock step's lock is held by its blocker; a long-wait holder step is the holder. */
    int deadlock = f->kind == LT_FIND_DEADLOCK;
    for (size_t i = 0; i < r->nsteps; i++) {
        const lt_wait_step *w = &f->steps[i];
        const lt_rep_step *st = &steps[i];
        if (deadlock || i == 0 || st->now_waits)
            add_step_stack(r, "waiting", w->wait_stack, (int)i, st->thread, 0);
        if (deadlock ? w->held_mode != LT_MODE_NONE : i > 0)
            add_step_stack(r, "holding", w->held_stack, (int)i,
                           deadlock ? st->blocker : st->thread, w->held_partial);
    }
}

/* Lock-order inversion: each edge of the cycle with where both of its locks were taken. */
static void add_edge_steps(lt_rep *r, const lt_finding *f)
{
    for (size_t i = 0; i < f->nedges && i < MAX_STEPS; i++) {
        const lt_edge_info *e = f->edges[i];
        lt_rep_step *st = &steps[r->nsteps++];
        *st = (lt_rep_step){.thread = thread_index(r, &e->thread), .lock = lock_index(r, &e->to),
                            .from = lock_index(r, &e->from), .want_mode = e->to_mode,
                            .held_mode = e->from_mode, .blocker = -1};
    }
    for (size_t i = 0; i < r->nsteps; i++) {
        const lt_edge_info *e = f->edges[i];
        add_step_stack(r, "edge-from", e->from_stack, (int)i, steps[i].thread, e->from_partial);
        add_step_stack(r, "edge-to", e->to_stack, (int)i, steps[i].thread, e->to_partial);
    }
    /* A lock that ended: where it was first seen, as the program may no longer have it. */
    for (size_t i = 0; i < r->nsteps; i++) {
        const lt_lock_ref *to = &f->edges[i]->to;
        if (to->ended && to->first_stack)
            add_stack(r, "first-seen", to->first_stack, steps[i].lock, to->first_partial);
    }
}

/* The finding's threads, locks, steps and stacks into r. */
static void add_finding(lt_rep *r, const lt_finding *f)
{
    add_thread(r, &f->thread, 0);
    if (f->kind >= LT_FIND_DEADLOCK) {
        if (f->kind == LT_FIND_INVERSION)
            add_edge_steps(r, f);
        else
            add_wait_steps(r, f);
        return;
    }
    if (f->kind == LT_FIND_CONDVAR_MISUSE || f->kind == LT_FIND_BARRIER_MISUSE) {
        add_condvar(r, f);
        return;
    }
    if (f->other)
        add_thread(r, f->other, f->other_gone)->by_fork = f->other_by_fork;
    if (f->kind == LT_FIND_EXIT_HELD)
        add_held_locks(r, f);
    else
        add_concerned_lock(r, f);
    if (f->kind == LT_FIND_FREE_HELD) {
        add_stack(r, "free", f->request_stack, -1, 0);
        lt_rep_stack *s = add_stack(r, "holder", f->held_stack, 0, f->held_partial);
        if (s)
            s->thread = f->other ? 1 : 0;
    } else {
        add_stack(r, "request", f->request_stack, -1, 0);
    }
    if (!f->other && f->kind != LT_FIND_FREE_HELD) {
        add_stack(r, "held", f->held_stack, 0, f->held_partial);
    } else if ((f->other_gone || f->kind == LT_FIND_BAD_UNLOCK) && f->held_stack) {
        /* the gone thread, or the holder of what this thread unlocks: thread 1 */
        lt_rep_stack *s = add_stack(r, "holder", f->held_stack, 0, f->held_partial);
        if (s)
            s->thread = 1;
    }
    add_stack(r, "first-seen", f->first_stack, 0, f->first_partial);
}

/* Where each lock lives (lockname.c), for those the finding did not name, and each condition
 * variable a step waits on. */
static void name_locks(lt_rep *r)
{
    char buf[1024];
    lt_lockname_begin();
    for (size_t i = 0; i < r->nlocks; i++)
        if (!locks[i].name && lt_lockname((uintptr_t)locks[i].addr, buf, sizeof buf))
            locks[i].name = keep(buf);
    for (size_t i = 0; i < r->nsteps; i++)
        if (steps[i].cond && lt_lockname((uintptr_t)steps[i].cond, buf, sizeof buf))
            steps[i].cond_name = keep(buf);
}

/* The report with its stacks as captured addresses only (one frame each, no module, no
 * symbol) and no annotation text: what identifies an occurrence, cheaply (report_seen.c). */
const lt_rep *lt_report_build_raw(const lt_finding *f)
{
    raw_only = 1;
    const lt_rep *r = lt_report_build(f);
    raw_only = 0;
    return r;
}

const lt_rep *lt_report_build(const lt_finding *f)
{
    static lt_rep r;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    nframes = string_used = 0;
    if (!exe[0])
        lt_platform_exe_path(exe, sizeof exe);
    r = (lt_rep){.version = LT_REPORT_VERSION, .kind = f->kind, .why = f->why,
                 .outcome = f->outcome, .time_sec = now.tv_sec, .time_nsec = now.tv_nsec,
                 .pid = getpid(), .program = exe, .launcher_pid = lt_cfg.launcher_pid,
                 .warning = f->warning, .one_thread = f->one_thread,
                 .wait_timeout = f->kind == LT_FIND_LONG_WAIT ? lt_cfg.wait_timeout : 0,
                 .waiting = (long)f->waiting, .waiting_max = (long)f->waiting_max,
                 .threads = threads, .locks = locks, .stacks = stacks, .steps = steps};
    add_finding(&r, f);
    if (!raw_only) /* a name reads symbols and /proc: not for an occurrence's identity */
        name_locks(&r);
    return &r;
}
