/*
 * dump.c - the thread dump: every live thread's held locks and what it waits for, like a JVM
 * thread dump. On LOCKTRACE_DUMP_SIGNAL it is printed and written as a thread-dump report
 * file; before the tracer aborts it is printed for the other threads (the report has shown
 * the aborting one) with symbolized stacks.
 *
 * From a signal handler nothing may lock or allocate, and the other threads run on: the
 * registry's records (pooled, never unmapped) are read with lt_platform_read, each held set
 * with lt_held_copy (one regrown meanwhile reads as an error, never a fault): no
 * process_vm_readv, which sandboxes forbid. The dump is report data (lt_rep) in
 * static storage, printed by report_text.c's dump formatter; a signal's frames are
 * module+offset (lt_platform_module_safe) but for a signal handler's return trampoline, named
 * as in reports; the abort's are symbolized.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dumpsig.h"
#include "lockname.h"
#include "lt_internal.h"
#include "platform.h"
#include "report_data.h"

#define MAX_THREADS 100000 /* ends a walk that a racing list change sent in circles */

#ifndef SIGPWR
#define SIGPWR 0 /* not on every platform: the setting then does nothing */
#endif

/* In the order of LOCKTRACE_DUMP_SIGNAL's accepted values (config.def); 0 = none. */
static const int dump_signals[] = {0, SIGUSR1, SIGUSR2, SIGQUIT, SIGHUP, SIGPWR, SIGWINCH, SIGURG};

/* ------------------------------------------------------------------------------------------
 * The dump a signal asks for, as report data: every thread, each lock it holds with where it
 * took it, and what it waits for, with frames as module+offset (lt_platform_module_safe).
 * Printed by report_text.c's dump formatter and written as a thread-dump report file, which
 * `locktrace report` symbolizes like any other. All of it in static storage that one dump at a
 * time owns (a second signal meanwhile is ignored), so nothing allocates or locks.
 * ---------------------------------------------------------------------------------------- */
#define DUMP_THREADS 256
#define DUMP_LOCKS 512
#define DUMP_STACKS 768
#define DUMP_FRAMES 8192
#define DUMP_MODULES 32
#define DUMP_STRINGS (256 * 1024)

static struct dump_rep {
    lt_rep rep;
    lt_rep_thread threads[DUMP_THREADS];
    char names[DUMP_THREADS][sizeof(((lt_thread_info *)0)->name)];
    lt_rep_lock locks[DUMP_LOCKS];
    lt_rep_stack stacks[DUMP_STACKS];
    lt_rep_step steps[DUMP_THREADS];
    lt_rep_frame frames[DUMP_FRAMES];
    size_t nframes, nmodules;
    struct {
        lt_module m;
        uintptr_t lo, hi;
    } modules[DUMP_MODULES];
    char exe[4096];
    char strings[DUMP_STRINGS]; /* symbolized names, copied: report_build.c reuses its own */
    size_t string_used;
    struct {
        uintptr_t lo, hi;
        int seq;
    } stack_of[DUMP_THREADS]; /* every thread's stack, to name the locks on them */
    size_t nstack_of;
    int symbolize;
    char text[64 * 1024];
    char json[512 * 1024];
} d;
static _Atomic int dumping;

/* The module of ip from this dump's cache, else from /proc (the oldest entry gives way). */
static const lt_module *module_of(uintptr_t ip)
{
    for (size_t i = 0; i < d.nmodules; i++)
        if (ip >= d.modules[i].lo && ip < d.modules[i].hi)
            return &d.modules[i].m;
    size_t slot = d.nmodules < DUMP_MODULES ? d.nmodules++ : ip % DUMP_MODULES;
    if (!lt_platform_module_safe(ip, &d.modules[slot].m, &d.modules[slot].lo, &d.modules[slot].hi)) {
        d.modules[slot].lo = d.modules[slot].hi = 0;
        return NULL;
    }
    return &d.modules[slot].m;
}

static void add_frame(lt_rep_stack *s, uintptr_t ip)
{
    if (d.nframes == DUMP_FRAMES) {
        s->dropped++;
        return;
    }
    const lt_module *m = ip ? module_of(ip) : NULL;
    lt_rep_frame *f = &d.frames[d.nframes++];
    *f = (lt_rep_frame){.ip = ip};
    if (m) {
        f->module = m->path;
        f->build_id = m->build_id[0] ? m->build_id : NULL;
        f->module_offset = ip - m->base;
    }
    /* named as reports name it (report_build.c), so `locktrace report` looks the interrupted
     * frame after it up at its own address */
    if (ip && lt_platform_is_sigreturn(ip))
        f->function = LT_REP_SIGNAL_FRAME;
    s->nframes++;
}

static const char *keep(const char *str)
{
    size_t n = str ? strlen(str) + 1 : 0;
    if (!str || d.string_used + n > DUMP_STRINGS)
        return NULL;
    char *copy = memcpy(d.strings + d.string_used, str, n);
    d.string_used += n;
    return copy;
}

/* At abort: the depot's stack symbolized (report_build.c), copied in. 1 when it was. */
static int add_symbolized(lt_rep_stack *s, uint32_t id)
{
    const lt_rep_stack *sym = lt_report_build_stack(id, s->partial);
    if (!sym)
        return 0;
    for (size_t i = 0; i < sym->nframes && d.nframes < DUMP_FRAMES; i++, s->nframes++) {
        lt_rep_frame f = sym->frames[i];
        f.module = keep(f.module);
        f.build_id = keep(f.build_id);
        f.function = keep(f.function);
        f.file = keep(f.file);
        d.frames[d.nframes++] = f;
    }
    if (s->nframes == sym->nframes) /* said of its last frame: only when that one is here */
        s->cut = sym->cut;
    return 1;
}

/* A stack of role for thread t (and lock l, step k): the depot's frames when it was recorded
 * whole (id), else the call site and the callers kept with it (site; without one, the call
 * site ra alone). */
static lt_rep_stack *new_stack(const char *role, int t, int l, int k)
{
    lt_rep *r = &d.rep;
    if (r->nstacks == DUMP_STACKS)
        return NULL;
    lt_rep_stack *s = &d.stacks[r->nstacks++];
    *s = (lt_rep_stack){.role = role, .thread = t, .lock = l, .step = k,
                        .frames = d.frames + d.nframes};
    return s;
}

static void add_stack(const char *role, int t, int l, int k, uint32_t id, uint32_t site,
                      uintptr_t ra)
{
    lt_rep_stack *s = new_stack(role, t, l, k);
    if (!s)
        return;
    s->partial = !id;
    if (!id && !site && ra && d.symbolize) /* at abort: the call site alone, symbolized */
        site = lt_stack_intern(&ra, 1);
    if ((id || site) && d.symbolize && add_symbolized(s, id ? id : site))
        return;
    size_t n = 0;
    const uintptr_t *ips = id || site ? lt_stack_get(id ? id : site, &n) : NULL;
    for (size_t i = 0; ips && i < n; i++)
        add_frame(s, ips[i]);
    if (ips)
        return;
    s->partial = 1;
    add_frame(s, ra);
}

static int add_lock(const void *addr, int kind, int mode)
{
    lt_rep *r = &d.rep;
    for (size_t i = 0; i < r->nlocks; i++) {
        if (d.locks[i].addr != (uintptr_t)addr)
            continue;
        if (d.locks[i].held_mode == LT_MODE_NONE) /* first met as something waited for */
            d.locks[i].held_mode = (lt_mode)mode;
        return (int)i;
    }
    if (r->nlocks == DUMP_LOCKS)
        return -1;
    d.locks[r->nlocks] = (lt_rep_lock){.addr = (uintptr_t)addr, .type = (lt_kind)kind,
                                       .held_mode = (lt_mode)mode};
    return (int)r->nlocks++;
}

/* Where a held entry was taken, its recorded frames joined to `under`, the stack of the wait
 * its thread is in (lt_stack_join; 0 = none). */
static void add_held_stack(int ti, int l, const lt_held *h, uint32_t under)
{
    uintptr_t ips[LT_STACK_MAX];
    int partial;
    size_t n = h->stack || !under ? 0 : lt_stack_join(h, under, ips, &partial);
    if (!n || partial) {
        add_stack("holding", ti, l, -1, h->stack, h->site, h->ra);
        return;
    }
    lt_rep_stack *s = new_stack("holding", ti, l, -1);
    if (!s || (d.symbolize && add_symbolized(s, lt_stack_intern(ips, n))))
        return;
    for (size_t i = 0; i < n; i++)
        add_frame(s, ips[i]);
}

/* What add_held_entry needs: the thread's index and the wait stack to join (add_held_stack). */
typedef struct held_where {
    int ti;
    uint32_t under;
} held_where;

static int add_held_entry(const lt_held *h, void *arg)
{
    const held_where *w = arg;
    /* A lock that ended since it was taken (its memory freed while held, which the
     * free-held report said) is held no more: listed, it named a heap block that was gone,
     * as exitheld.c's process-exit list did until it left such entries out. */
    if (atomic_load_explicit(&h->lock->gen, memory_order_relaxed) != h->gen)
        return 0;
    add_held_stack(w->ti, add_lock(h->addr, h->kind, h->mode), h, w->under);
    return 0;
}

/* A held set regrown meanwhile has its locks left out (lt_held_walk). */
static void add_held_entries(const lt_thread *t, const lt_thread *live, int ti, uint32_t under)
{
    held_where w = {ti, under};
    lt_held_walk(live, t->held, t->held_moves, t->held_start, t->held_end, add_held_entry, &w);
}

/* The held entries of thread t (a copy of the live thread at `live`), each where it was taken.
 * A waiting thread's are joined to its wait stack, which is right only if the thread is still
 * in that wait once they are read: else they are read again, with their recorded frames. */
static void add_held(const lt_thread *t, const lt_thread *live, int ti)
{
    lt_rep *r = &d.rep;
    size_t nstacks = r->nstacks, nframes = d.nframes, strings = d.string_used;
    uint32_t seq = atomic_load(&t->waiting.seq), now;
    uint32_t under = seq & 1 ? t->waiting.stack : 0;
    add_held_entries(t, live, ti, under);
    if (under && (lt_platform_read(&now, &live->waiting.seq, sizeof now) != 0 || now != seq)) {
        r->nstacks = nstacks;
        d.nframes = nframes;
        d.string_used = strings;
        add_held_entries(t, live, ti, 0);
    }
}

static void add_wait(const lt_wait_slot *w, int ti)
{
    lt_rep *r = &d.rep;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int l = w->waits_for == LT_FOR_LOCK ? add_lock(w->addr, w->kind, LT_MODE_NONE) : -1;
    d.steps[r->nsteps] = (lt_rep_step){
        .thread = ti, .waits_for = w->waits_for, .lock = l, .from = -1,
        .want_mode = (lt_mode)w->mode, .wait = (lt_wait)w->wait, .blocker = -1,
        .waited_ms = (now.tv_sec - w->since.tv_sec) * 1000 + (now.tv_nsec - w->since.tv_nsec) / 1000000,
        .cond = w->waits_for == LT_FOR_SIGNAL ? w->target : 0};
    add_stack("waiting", ti, l, (int)r->nsteps++, w->stack, 0, 0);
}

/* Where the lock or condition variable at a lives, kept; NULL when unknown. At abort, as
 * reports say it (lockname.c); in a signal handler only what needs no lock, allocation or
 * symbols: the thread whose stack holds it. */
static const char *name_of(uintptr_t a)
{
    char buf[1024];
    if (d.symbolize)
        return lt_lockname(a, buf, sizeof buf) ? keep(buf) : NULL;
    for (size_t k = 0; k < d.nstack_of; k++) {
        if (a >= d.stack_of[k].lo && a < d.stack_of[k].hi) {
            lt_lockname_stack(buf, sizeof buf, d.stack_of[k].seq, NULL);
            return keep(buf);
        }
    }
    return NULL;
}

/* Where each lock lives, and each condition variable a thread waits on. */
static void name_locks(void)
{
    if (d.symbolize)
        lt_lockname_begin();
    for (size_t i = 0; i < d.rep.nlocks; i++)
        d.locks[i].name = name_of(d.locks[i].addr);
    for (size_t i = 0; i < d.rep.nsteps; i++)
        if (d.steps[i].cond)
            d.steps[i].cond_name = name_of(d.steps[i].cond);
}

/* held_only: only the threads that hold a lock; skip_tid: a thread left out (0 = none). */
static void build_dump(int symbolize, int held_only, int skip_tid)
{
    lt_rep *r = &d.rep;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (!d.exe[0])
        lt_platform_exe_path(d.exe, sizeof d.exe);
    d.nframes = d.nmodules = d.string_used = d.nstack_of = 0;
    d.symbolize = symbolize;
    *r = (lt_rep){.version = LT_REPORT_VERSION, .kind = LT_FIND_THREAD_DUMP,
                  .why = LT_WHY_DUMP_SIGNAL, .outcome = LT_OUTCOME_CONTINUE,
                  .time_sec = now.tv_sec, .time_nsec = now.tv_nsec, .pid = getpid(),
                  .program = d.exe, .launcher_pid = lt_cfg.launcher_pid, .threads = d.threads,
                  .locks = d.locks, .stacks = d.stacks, .steps = d.steps};
    lt_thread copy;
    const lt_thread *t = lt_thread_first();
    for (int n = 0; t && n < MAX_THREADS && r->nthreads < DUMP_THREADS; n++, t = copy.next) {
        if (lt_platform_read(&copy, t, sizeof copy) != 0) /* pooled: never unmapped */
            break;
        if (d.nstack_of < DUMP_THREADS && copy.stack_hi > copy.stack_lo)
            d.stack_of[d.nstack_of++] = (__typeof__(d.stack_of[0])){copy.stack_lo, copy.stack_hi,
                                                                     copy.info.seq};
        if ((held_only && !copy.nheld) || copy.info.tid == skip_tid)
            continue;
        /* a condition wait of a thread that holds nothing is shown only to a joiner's search
         * (waitfor.c): a dump leaves it out, as it does every other such wait (a pool's
         * idle workers) */
        int waiting = atomic_load(&copy.waiting.seq) & 1 &&
                      !(copy.waiting.waits_for == LT_FOR_SIGNAL && !copy.nheld);
        const lt_thread_info *info = waiting ? &copy.waiting.who : &copy.info;
        int ti = (int)r->nthreads++;
        memcpy(d.names[ti], info->name, sizeof d.names[ti]);
        d.names[ti][sizeof d.names[ti] - 1] = 0;
        lt_platform_thread_name_of(info->tid, d.names[ti], sizeof d.names[ti]); /* kept: renamed since? */
        d.threads[ti] = (lt_rep_thread){.seq = info->seq, .tid = info->tid, .name = d.names[ti]};
        size_t nstacks = r->nstacks;
        add_held(&copy, t, ti);
        if (held_only && r->nstacks == nstacks) { /* every entry's lock had ended */
            r->nthreads--;
            continue;
        }
        if (waiting)
            add_wait(&copy.waiting, ti);
    }
    name_locks();
}

/* After a dump made in a signal handler: its frames are module+offset, which alone told a
 * reader nothing of where to look (with LD_PRELOAD and no report directory there is no file
 * either). */
static void frames_hint(void)
{
    static const char how[] = "  (frames as module+offset: a signal handler cannot look up "
                              "names; `locktrace report` on the dump's file, or addr2line -f "
                              "-i -e MODULE OFFSET, gives functions and lines)\n";
    if (d.nframes)
        lt_platform_write_err(how, sizeof how - 1);
}

/* Prints the dump (symbolized at abort, under the report lock, whose pools report_build.c
 * symbolizes with); a dump the signal asked for is also written as a file. Skipped while
 * another thread's dump holds the storage. */
void lt_dump_threads(int symbolize)
{
    if (atomic_exchange(&dumping, 1))
        return;
    build_dump(symbolize, 0, 0);
    lt_platform_write_err(d.text, lt_rep_format_text(&d.rep, d.text, sizeof d.text));
    if (!symbolize)
        frames_hint();
    size_t n = symbolize ? 0 : lt_rep_format_json(&d.rep, d.json, sizeof d.json, (size_t)-1);
    if (n && n < sizeof d.json)
        lt_report_file_write_dump(d.json, n);
    atomic_store(&dumping, 0);
}

/* After a report that aborts (under the report lock): the other threads, symbolized; the
 * report has shown this one. */
void lt_dump_other_threads(void)
{
    if (atomic_exchange(&dumping, 1))
        return;
    build_dump(1, 0, lt_platform_tid());
    d.rep.why = LT_WHY_DUMP_ABORT;
    lt_platform_write_err(d.text, lt_rep_format_text(&d.rep, d.text, sizeof d.text));
    atomic_store(&dumping, 0);
}

/* LOCKTRACE_EXIT_HELD=report at a fatal signal (exitheld.c): from its handler, the threads
 * that hold locks, under a heading of its own instead of the dump's. */
void lt_dump_held_at_signal(int sig, const char *name)
{
    char head[256];
    if (atomic_exchange(&dumping, 1))
        return;
    build_dump(0, 1, 0);
    if (!d.rep.nthreads) { /* no thread holds a lock: nothing to say, as at exit (exit-4.4) */
        atomic_store(&dumping, 0);
        return;
    }
    size_t len = lt_rep_format_text(&d.rep, d.text, sizeof d.text);
    const char *body = memchr(d.text, '\n', len < sizeof d.text ? len : sizeof d.text);
    size_t at = lt_fmt_str(head, sizeof head, 0, "locktrace: exit-held: the process dies of signal ");
    at = lt_fmt_dec(head, sizeof head, at, sig);
    at = lt_fmt_str(head, sizeof head, at, " (");
    at = lt_fmt_str(head, sizeof head, at, name);
    at = lt_fmt_str(head, sizeof head, at, ") while these threads hold locks (LOCKTRACE_EXIT_HELD=report)\n");
    lt_platform_write_err(head, at);
    if (body && len < sizeof d.text)
        lt_platform_write_err(body + 1, len - (size_t)(body + 1 - d.text));
    frames_hint();
    atomic_store(&dumping, 0);
}

static void on_dump_signal(void)
{
    lt_dump_threads(0);
}

/* dumpsig.c keeps the handler installed when the program sets its own for the signal. */
void lt_dump_install(void)
{
    size_t i = (size_t)lt_cfg.dump_signal;
    if (i >= LT_ARRAY_LEN(dump_signals) || dump_signals[i] == 0)
        return;
    lt_dumpsig_install(dump_signals[i], on_dump_signal);
}
