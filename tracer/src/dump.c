/*
 * dump.c - the thread dump: every live thread's held locks and what it waits for, like a JVM
 * thread dump. Printed on LOCKTRACE_DUMP_SIGNAL and before the tracer aborts.
 *
 * From a signal handler nothing may lock or allocate, and the other threads run on: the
 * registry and each held set are read with lt_platform_peek (a vanished thread or a held set
 * regrown meanwhile reads as an error, never a fault). The signal's dump becomes report data
 * whose frames are module+offset, printed and written as a thread-dump report file; at abort
 * the walk below prints symbolized stacks instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lt_internal.h"
#include "platform.h"
#include "report_data.h"

#define MAX_THREADS 100000 /* ends a walk that a racing list change sent in circles */

#ifndef SIGPWR
#define SIGPWR 0 /* not on every platform: the setting then does nothing */
#endif

/* In the order of LOCKTRACE_DUMP_SIGNAL's accepted values (config.def); 0 = none. */
static const int dump_signals[] = {0, SIGUSR1, SIGUSR2, SIGQUIT, SIGHUP, SIGPWR, SIGWINCH, SIGURG};

typedef struct dump_out {
    char buf[4096];
    size_t at;
    int symbolize;
} dump_out;

static void flush(dump_out *o)
{
    lt_platform_write(2, o->buf, o->at);
    o->at = 0;
}

/* Keeps a whole stack frame or line together: flush when little room is left. */
static void put(dump_out *o, const char *s)
{
    if (o->at + strlen(s) + 256 > sizeof o->buf)
        flush(o);
    o->at = lt_fmt_str(o->buf, sizeof o->buf, o->at, s);
}

static void put_hex(dump_out *o, uintptr_t v)
{
    o->at = lt_fmt_hex(o->buf, sizeof o->buf, o->at, v);
}

static void put_dec(dump_out *o, long v)
{
    o->at = lt_fmt_dec(o->buf, sizeof o->buf, o->at, v);
}

static void put_frames(dump_out *o, uint32_t id, uintptr_t site)
{
    size_t n = 0;
    const uintptr_t *ips = id ? lt_stack_get(id, &n) : NULL;
    const lt_rep_stack *s = o->symbolize && id ? lt_report_build_stack(id) : NULL;
    if (s) {
        flush(o);
        char text[8192];
        lt_platform_write(2, text, lt_rep_format_frames(s, text, sizeof text, 0));
        return;
    }
    if (!ips) {
        ips = &site;
        n = 1;
    }
    for (size_t i = 0; i < n; i++) {
        put(o, "      #");
        put_dec(o, (long)i);
        put(o, " ");
        put_hex(o, ips[i]);
        put(o, "\n");
    }
}

static const char *what(int kind, int mode)
{
    if (kind == LT_MUTEX)
        return " mutex";
    if (kind == LT_SPIN)
        return " spinlock";
    if (kind == LT_ONCE)
        return " once-control (running its init routine)";
    return mode == LT_MODE_READ ? " rwlock for read" : " rwlock for write";
}

static void dump_held(dump_out *o, const lt_thread *t)
{
    lt_held chunk[16];
    uint32_t end = t->held_end;
    for (uint32_t i = 0; i < end; i += 16) {
        uint32_t k = end - i < 16 ? end - i : 16;
        if (lt_platform_peek(chunk, t->held + i, k * sizeof *chunk) != 0) {
            put(o, "    (held set changed while read)\n");
            return;
        }
        for (uint32_t j = 0; j < k; j++) {
            if (!chunk[j].lock)
                continue; /* a removed entry of a large set */
            put(o, "    holds ");
            put_hex(o, (uintptr_t)chunk[j].addr);
            put(o, what(chunk[j].kind, chunk[j].mode));
            put(o, ", taken at:\n");
            put_frames(o, chunk[j].stack, chunk[j].ra);
        }
    }
}

static void dump_wait(dump_out *o, const lt_wait_slot *w)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (w->waits_for == LT_FOR_JOIN) {
        put(o, "    waits in pthread_join for ");
    } else if (w->waits_for == LT_FOR_SIGNAL) {
        put(o, "    waits on condition variable ");
        put_hex(o, w->target);
        put(o, " for ");
    } else {
        put(o, "    waits for ");
        put_hex(o, (uintptr_t)w->addr);
        put(o, what(w->kind, w->mode));
        put(o, w->wait == LT_WAIT_TIMED ? " (timed) for " : " for ");
    }
    put_dec(o, (now.tv_sec - w->since.tv_sec) * 1000 + (now.tv_nsec - w->since.tv_nsec) / 1000000);
    put(o, " ms, at:\n");
    put_frames(o, w->stack, 0);
}

static void dump_thread(dump_out *o, const lt_thread *t)
{
    int waiting = atomic_load(&t->waiting.seq) & 1;
    const lt_thread_info *i = waiting ? &t->waiting.who : &t->info;
    put(o, "  T");
    put_dec(o, i->seq);
    put(o, " (tid ");
    put_dec(o, i->tid);
    put(o, i->name[0] ? ") \"" : ")");
    put(o, i->name);
    put(o, i->name[0] ? "\": holds " : ": holds ");
    put_dec(o, (long)t->nheld);
    put(o, t->nheld == 1 ? " lock" : " locks");
    put(o, waiting ? ", waiting\n" : "\n");
    dump_held(o, t);
    if (waiting)
        dump_wait(o, &t->waiting);
}

void lt_dump_threads(int symbolize)
{
    dump_out o = {.at = 0, .symbolize = symbolize};
    lt_thread copy;
    put(&o, "locktrace: thread-dump: every thread's held locks and waits\n");
    const lt_thread *t = lt_thread_first();
    for (int n = 0; t && n < MAX_THREADS; n++, t = copy.next) {
        if (lt_platform_peek(&copy, t, sizeof copy) != 0) {
            put(&o, "  (a thread left while the list was read; the dump stops here)\n");
            break;
        }
        dump_thread(&o, &copy);
    }
    flush(&o);
}

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
    s->nframes++;
}

/* A stack of role for thread t (and lock l, step k): the depot's frames when it was recorded
 * whole, else the call site and the callers kept with it. */
static void add_stack(const char *role, int t, int l, int k, uint32_t id, uintptr_t ra,
                      const uintptr_t *callers, uint32_t ncallers)
{
    lt_rep *r = &d.rep;
    if (r->nstacks == DUMP_STACKS)
        return;
    lt_rep_stack *s = &d.stacks[r->nstacks++];
    *s = (lt_rep_stack){.role = role, .thread = t, .lock = l, .step = k,
                        .frames = d.frames + d.nframes};
    size_t n = 0;
    const uintptr_t *ips = id ? lt_stack_get(id, &n) : NULL;
    for (size_t i = 0; ips && i < n; i++)
        add_frame(s, ips[i]);
    if (ips)
        return;
    s->partial = 1;
    add_frame(s, ra);
    for (uint32_t i = 0; i < ncallers && i < LT_CALLERS; i++)
        add_frame(s, callers[i]);
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

static void add_held(const lt_thread *t, int ti)
{
    lt_held chunk[16];
    for (uint32_t i = 0; i < t->nheld; i += 16) {
        uint32_t k = t->nheld - i < 16 ? t->nheld - i : 16;
        if (lt_platform_peek(chunk, t->held + i, k * sizeof *chunk) != 0)
            return; /* the held set was regrown meanwhile: its locks are left out */
        for (uint32_t j = 0; j < k; j++) {
            const lt_held *h = &chunk[j];
            int l = add_lock(h->addr, h->kind, h->mode);
            add_stack("holding", ti, l, -1, h->stack, h->ra, h->callers, h->ncallers);
        }
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
    add_stack("waiting", ti, l, (int)r->nsteps++, w->stack, 0, NULL, 0);
}

static void build_dump(void)
{
    lt_rep *r = &d.rep;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (!d.exe[0])
        lt_platform_exe_path(d.exe, sizeof d.exe);
    d.nframes = d.nmodules = 0;
    *r = (lt_rep){.version = LT_REPORT_VERSION, .kind = LT_FIND_THREAD_DUMP,
                  .why = LT_WHY_DUMP_SIGNAL, .outcome = LT_OUTCOME_CONTINUE,
                  .time_sec = now.tv_sec, .time_nsec = now.tv_nsec, .pid = getpid(),
                  .program = d.exe, .launcher_pid = lt_cfg.launcher_pid, .threads = d.threads,
                  .locks = d.locks, .stacks = d.stacks, .steps = d.steps};
    lt_thread copy;
    const lt_thread *t = lt_thread_first();
    for (int n = 0; t && n < MAX_THREADS && r->nthreads < DUMP_THREADS; n++, t = copy.next) {
        if (lt_platform_peek(&copy, t, sizeof copy) != 0)
            break; /* a thread left while the list was read: the dump stops there */
        int waiting = atomic_load(&copy.waiting.seq) & 1;
        const lt_thread_info *info = waiting ? &copy.waiting.who : &copy.info;
        int ti = (int)r->nthreads++;
        memcpy(d.names[ti], info->name, sizeof d.names[ti]);
        d.names[ti][sizeof d.names[ti] - 1] = 0;
        d.threads[ti] = (lt_rep_thread){.seq = info->seq, .tid = info->tid, .name = d.names[ti]};
        add_held(&copy, ti);
        if (waiting)
            add_wait(&copy.waiting, ti);
    }
}

static void on_dump_signal(int sig)
{
    int saved = errno;
    (void)sig;
    if (!atomic_exchange(&dumping, 1)) {
        build_dump();
        lt_platform_write(2, d.text, lt_rep_format_text(&d.rep, d.text, sizeof d.text));
        size_t n = lt_rep_format_json(&d.rep, d.json, sizeof d.json, (size_t)-1);
        if (n < sizeof d.json)
            lt_report_file_write_dump(d.json, n);
        atomic_store(&dumping, 0);
    }
    errno = saved;
}

void lt_dump_install(void)
{
    size_t i = (size_t)lt_cfg.dump_signal;
    if (i >= LT_ARRAY_LEN(dump_signals) || dump_signals[i] == 0)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_dump_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(dump_signals[i], &sa, NULL);
}
