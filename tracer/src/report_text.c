/*
 * report_text.c - the one text formatter: an lt_rep in, the lines a person reads out. The
 * tracer prints them on stderr when it finds something, and `locktrace report` prints them
 * again from the JSON file, so both come from here. Also the name tables every writer and
 * reader of reports shares. No allocation and no stdio (fmt.h): the tracer calls this at
 * moments when malloc and stdio are off limits.
 */
#include <string.h>

#include "fmt.h"
#include "report_data.h"

static const char *const kind_names[LT_FIND_KIND_COUNT] = {
    [LT_FIND_SELF_DEADLOCK] = "self-deadlock",
    [LT_FIND_BAD_UNLOCK] = "bad-unlock",
    [LT_FIND_DESTROY_HELD] = "destroy-held",
    [LT_FIND_EXIT_HELD] = "exit-held",
    [LT_FIND_FREE_HELD] = "free-held",
    [LT_FIND_CONDVAR_MISUSE] = "condvar-misuse",
    [LT_FIND_DESTROYED_USE] = "use-after-destroy",
    [LT_FIND_BARRIER_MISUSE] = "barrier-misuse",
    [LT_FIND_DEADLOCK] = "deadlock",
    [LT_FIND_INVERSION] = "lock-order-inversion",
    [LT_FIND_LONG_WAIT] = "long-wait",
    [LT_FIND_THREAD_DUMP] = "thread-dump",
};

/* What the thread does to the lock, in the summary line; "" = the kind has its own line. */
static const char *const kind_verbs[LT_FIND_KIND_COUNT] = {
    [LT_FIND_SELF_DEADLOCK] = "requests",
    [LT_FIND_BAD_UNLOCK] = "unlocks",
    [LT_FIND_DESTROY_HELD] = "destroys",
    [LT_FIND_EXIT_HELD] = "",
    [LT_FIND_FREE_HELD] = "frees the memory of",
    [LT_FIND_CONDVAR_MISUSE] = "",
    [LT_FIND_DESTROYED_USE] = "uses",
    [LT_FIND_BARRIER_MISUSE] = "",
    [LT_FIND_DEADLOCK] = "",
    [LT_FIND_INVERSION] = "",
    [LT_FIND_LONG_WAIT] = "",
    [LT_FIND_THREAD_DUMP] = "",
};

/* Stable ids of the reasons, for JSON. */
static const char *const reason_names[LT_WHY_COUNT] = {
    [LT_WHY_WRITE_HELD] = "write-held",
    [LT_WHY_UPGRADE] = "upgrade",
    [LT_WHY_WRITER_QUEUED] = "writer-queued",
    [LT_WHY_REREAD_POSSIBLE] = "writer-preferring-reread",
    [LT_WHY_MUTEX_RELOCK] = "mutex-relock",
    [LT_WHY_ERRORCHECK_RELOCK] = "errorcheck-relock",
    [LT_WHY_SPIN_RELOCK] = "spin-relock",
    [LT_WHY_FORK_RELOCK] = "fork-relock",
    [LT_WHY_HELD_ELSEWHERE] = "held-elsewhere",
    [LT_WHY_ORPHANED] = "orphaned",
    [LT_WHY_ORPHANED_WAITING] = "orphaned-waiting",
    [LT_WHY_NOT_HELD] = "not-held",
    [LT_WHY_DESTROY] = "destroy",
    [LT_WHY_EXIT] = "exit",
    [LT_WHY_WAIT_CYCLE] = "wait-cycle",
    [LT_WHY_ORDER_CYCLE] = "order-cycle",
    [LT_WHY_WAIT_TIMEOUT] = "wait-timeout",
    [LT_WHY_FREED] = "freed",
    [LT_WHY_ONCE_RECURSION] = "once-recursion",
    [LT_WHY_DESTROY_WAITED] = "destroy-waited",
    [LT_WHY_TWO_MUTEXES] = "two-mutexes",
    [LT_WHY_WAIT_UNHELD] = "wait-unheld",
    [LT_WHY_RECURSIVE_WAIT] = "recursive-wait",
    [LT_WHY_PROCESS_EXIT] = "process-exit",
    [LT_WHY_DUMP_SIGNAL] = "dump-signal",
    [LT_WHY_DUMP_ABORT] = "after-abort",
    [LT_WHY_CLASS_CYCLE] = "class-cycle",
    [LT_WHY_CLASS_NESTING] = "class-nesting",
    [LT_WHY_CLASS_DECLARED] = "class-declared-order",
    [LT_WHY_DESTROYED] = "destroyed",
    [LT_WHY_NO_MUTEX] = "no-mutex",
    [LT_WHY_INIT_WAITED] = "init-waited",
    [LT_WHY_DESTROY_TIMED] = "destroy-timed-waited",
};

/* Why the request can never be granted (or what the misuse is), for the summary line. */
static const char *const reason_text[LT_WHY_COUNT] = {
    [LT_WHY_WRITE_HELD] = "it holds it for write (glibc returns EDEADLK, other libcs hang)",
    [LT_WHY_UPGRADE] = "it holds it for read (a read-to-write upgrade hangs on every platform)",
    [LT_WHY_WRITER_QUEUED] = "it holds it for read and the lock prefers a writer that is "
                             "waiting (hangs)",
    [LT_WHY_REREAD_POSSIBLE] = "it holds it for read, and the lock prefers writers (glibc's "
                               "writer-preferring rwlocks are not recursive): a writer that "
                               "queues between the two reads blocks both for good; none "
                               "waits now, the call goes on (a potential deadlock)",
    [LT_WHY_MUTEX_RELOCK] = "it holds it already (a normal mutex hangs)",
    [LT_WHY_ERRORCHECK_RELOCK] = "it holds it already (error-checking mutex: the call "
                                 "returns EDEADLK)",
    [LT_WHY_SPIN_RELOCK] = "it holds it already (a spinlock spins forever)",
    [LT_WHY_FORK_RELOCK] = "it holds it already, since before this process forked (the lock "
                           "word names its thread id in the parent: whatever the type, the "
                           "call hangs)",
    [LT_WHY_HELD_ELSEWHERE] = "its lock word names this thread its owner, though the thread "
                              "did not take it at this address (the same memory mapped at "
                              "two addresses, or a lock taken around the tracer): a normal "
                              "mutex hangs",
    [LT_WHY_ORPHANED] = "a thread that is gone (exited, or left behind by fork) holds it "
                        "(it can never be granted)",
    [LT_WHY_ORPHANED_WAITING] = "the thread that held it exited while this one waited for it, "
                                "and left it locked (the wait can never end)",
    [LT_WHY_NOT_HELD] = "it does not hold it",
    [LT_WHY_DESTROY] = "it is held",
    [LT_WHY_EXIT] = "",
    [LT_WHY_WAIT_CYCLE] = "",   /* the cross-thread kinds have their own text */
    [LT_WHY_ORDER_CYCLE] = "",
    [LT_WHY_WAIT_TIMEOUT] = "",
    [LT_WHY_FREED] = "it is held (its holder will unlock freed memory: a use after free)",
    [LT_WHY_ONCE_RECURSION] = "this thread is running its init routine (the call waits for "
                              "itself forever)",
    [LT_WHY_DESTROY_WAITED] = "(glibc's destroy waits for them forever)",
    [LT_WHY_TWO_MUTEXES] = "(one condition variable, two mutexes at once: undefined behaviour)",
    [LT_WHY_WAIT_UNHELD] = "but it does not hold that mutex (the wait would unlock a mutex "
                           "it does not own)",
    [LT_WHY_RECURSIVE_WAIT] = "but it holds that recursive mutex more than once (the wait "
                              "unlocks it once: it stays locked while the thread waits)",
    [LT_WHY_PROCESS_EXIT] = "",
    [LT_WHY_DUMP_SIGNAL] = "",
    [LT_WHY_DUMP_ABORT] = "",
    [LT_WHY_CLASS_CYCLE] = "",
    [LT_WHY_CLASS_NESTING] = "",
    [LT_WHY_CLASS_DECLARED] = "",
    [LT_WHY_DESTROYED] = "it is destroyed (libc refuses the call: EINVAL; init makes it a "
                         "mutex again)",
    [LT_WHY_NO_MUTEX] = "its memory holds no valid mutex (never initialised, or "
                        "overwritten; libc refuses the call: EINVAL)",
    [LT_WHY_INIT_WAITED] = "(undefined behaviour: glibc forgets their round, and they leave "
                           "with the next round the new count completes)",
    [LT_WHY_DESTROY_TIMED] = "(every wait timed: glibc's destroy waits until they end; "
                             "undefined behaviour)",
};

static const char *const outcome_names[] = {"continue", "abort", "edeadlk"};
static const char *const type_names[] = {"rwlock", "mutex", "spinlock", "once", "condvar",
                                         "barrier"};
static const char *const mutex_type_names[] = {"normal", "recursive", "errorcheck"};
static const char *const mode_names[] = {"none", "read", "write"};
static const char *const wait_names[] = {"try", "blocking", "timed"};
static const char *const waits_for_names[] = {"lock", "join", "signal"};
static const char *const api_names[] = {"pthread", "c11", "custom", "cxx"};
static const char *const ended_names[] = {"no", "destroyed", "initialised-again", "freed",
                                          "reused"};
static const char *const cut_names[] = {"none", "no-unwind-info"};

_Static_assert(LT_FIND_KIND_COUNT == 12, "name every finding kind in kind_names and kind_verbs");
_Static_assert(LT_ARRAY_LEN(waits_for_names) == LT_FOR_SIGNAL + 1, "name every wait target");
_Static_assert(LT_WHY_COUNT == 33, "name and explain every reason");
_Static_assert(LT_ARRAY_LEN(type_names) == LT_BARRIER + 1, "name every lock type");
_Static_assert(LT_ARRAY_LEN(outcome_names) == LT_OUTCOME_EDEADLK + 1, "name every outcome");
_Static_assert(LT_ARRAY_LEN(api_names) == LT_API_CXX + 1, "name every api");
_Static_assert(LT_ARRAY_LEN(ended_names) == LT_ENDED_REUSE + 1, "name every end of a lock");

#define NAME_OF(table, i) ((i) >= 0 && (size_t)(i) < LT_ARRAY_LEN(table) ? (table)[i] : NULL)

const char *lt_rep_kind_name(int kind) { return NAME_OF(kind_names, kind); }

int lt_rep_counts_waiters(int why)
{
    return why == LT_WHY_DESTROY_WAITED || why == LT_WHY_DESTROY_TIMED ||
           why == LT_WHY_INIT_WAITED;
}

const char *lt_rep_reason_name(int why) { return NAME_OF(reason_names, why); }
const char *lt_rep_outcome_name(int outcome) { return NAME_OF(outcome_names, outcome); }
const char *lt_rep_type_name(int type) { return NAME_OF(type_names, type); }
const char *lt_rep_mutex_type_name(int type) { return NAME_OF(mutex_type_names, type); }
const char *lt_rep_mode_name(int mode) { return NAME_OF(mode_names, mode); }
const char *lt_rep_wait_name(int wait) { return NAME_OF(wait_names, wait); }
const char *lt_rep_waits_for_name(int waits_for) { return NAME_OF(waits_for_names, waits_for); }
const char *lt_rep_api_name(int api) { return NAME_OF(api_names, api); }
const char *lt_rep_ended_name(int ended) { return NAME_OF(ended_names, ended); }
const char *lt_rep_cut_name(int cut) { return NAME_OF(cut_names, cut); }

/* Index whose name is name[0..len), -1 when none: names(i) is NULL past the end. */
int lt_rep_lookup(const char *(*names)(int), const char *name, size_t len)
{
    for (int i = 0; names(i); i++)
        if (strlen(names(i)) == len && memcmp(names(i), name, len) == 0)
            return i;
    return -1;
}

typedef struct out {
    char *buf;
    size_t size, at;
} out;

static void put(out *o, const char *s) { o->at = lt_fmt_str(o->buf, o->size, o->at, s); }
/* A string from the report's data (a name, a path): a control character would let a file
 * forge lines or drive the terminal, so each prints as '?'. */
static void put_data(out *o, const char *s)
{
    for (; s && *s && o->at + 1 < o->size; s++)
        o->buf[o->at++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
    if (o->at < o->size)
        o->buf[o->at] = 0;
}

static void put_hex(out *o, uint64_t v)
{
    o->at = lt_fmt_hex(o->buf, o->size, o->at, (uintptr_t)v);
}
static void put_dec(out *o, long v) { o->at = lt_fmt_dec(o->buf, o->size, o->at, v); }

static const char *lock_name(const lt_rep_lock *l)
{
    static const char *const mutex[] = {"mutex (normal)", "mutex (recursive)",
                                        "mutex (error-checking)"};
    static const char *const mtx[] = {"mtx_t (plain)", "mtx_t (recursive)", "mtx_t"};
    static const char *const custom[] = {"custom mutex", "custom mutex (recursive)", "custom mutex"};
    if (l->api == LT_API_C11 && l->type == LT_MUTEX)
        return NAME_OF(mtx, l->mutex_type) ? mtx[l->mutex_type] : "mtx_t";
    if (l->api == LT_API_CUSTOM && l->type == LT_MUTEX)
        return NAME_OF(custom, l->mutex_type) ? custom[l->mutex_type] : "custom mutex";
    if (l->api == LT_API_CUSTOM && l->type == LT_RWLOCK)
        return "custom rwlock";
    switch (l->type) {
    case LT_RWLOCK:
        return l->writer_pref ? "rwlock (writer-preferring)" : "rwlock (reader-preferring)";
    case LT_MUTEX: return NAME_OF(mutex, l->mutex_type) ? mutex[l->mutex_type] : "mutex";
    case LT_ONCE:
        return l->api == LT_API_C11   ? "once_flag"
               : l->api == LT_API_CXX ? "C++ static's guard"
                                      : "pthread_once_t";
    case LT_COND: return l->api == LT_API_C11 ? "cnd_t" : "condition variable";
    case LT_BARRIER: return "barrier";
    default: return "spinlock";
    }
}

/* How a lock's identity ended, as a report's sentence says it. */
static const char *ended_word(int how)
{
    static const char *const words[] = {"live", "destroyed", "initialised again", "freed",
                                        "reused as another lock"};
    return NAME_OF(words, how) ? words[how] : "ended";
}

static const char *mode_word(lt_kind type, lt_mode mode)
{
    if (mode == LT_MODE_NONE)
        return "none";
    if (type == LT_ONCE)
        return "init";
    if (type != LT_RWLOCK)
        return "lock";
    return mode == LT_MODE_READ ? "read" : "write";
}

static void put_thread(out *o, const lt_rep_thread *t)
{
    put(o, "T");
    put_dec(o, t->seq);
    put(o, " (tid ");
    put_dec(o, t->tid);
    put(o, ")");
    if (t->name && t->name[0]) {
        put(o, " \"");
        put_data(o, t->name);
        put(o, "\"");
    }
}

static void put_frame(out *o, size_t i, const lt_rep_frame *f)
{
    put(o, "    #");
    put_dec(o, (long)i);
    put(o, " ");
    put_hex(o, f->ip);
    put(o, f->inlined ? " in (inlined) " : " in ");
    put_data(o, f->function ? f->function : "??");
    if (f->file) {
        put(o, " ");
        put_data(o, f->file);
        put(o, ":");
        put_dec(o, f->line);
        /* DWARF's line 0: clang gives it to code it merged from several lines (one call
         * instruction for two identical calls), so no line of the file is the right one */
        if (f->line == 0)
            put(o, " (no single line: code the compiler merged from several lines)");
        /* -gsplit-dwarf without its .dwo file: the line table is there, the inlined calls
         * are not, so the line may be an inlined call's, shown under the outer function */
        if (f->split_missing) {
            put(o, " (");
            put_data(o, f->split_missing);
            put(o, " not found: the calls inlined here, whose line this may be, are unknown)");
        }
    }
    if (f->module) {
        put(o, " (");
        put_data(o, f->module);
        put(o, "+");
        put_hex(o, f->module_offset);
        put(o, ")");
    }
    put(o, "\n");
}

/* After a stack the unwinder could not follow to the thread's outermost frame: where and why
 * it stopped, so that its last frame is not taken for the thread's first. */
static void put_cut(out *o, const lt_rep_stack *s)
{
    const lt_rep_frame *f = s->nframes ? &s->frames[s->nframes - 1] : NULL;
    if (s->cut != LT_CUT_NO_UNWIND_INFO || !f)
        return;
    put(o, "    ... stack cut short: no unwind information for ");
    if (f->function)
        put_data(o, f->function);
    if (f->function && f->module)
        put(o, " (");
    if (f->module) {
        put_data(o, f->module);
        put(o, "+");
        put_hex(o, f->module_offset);
    }
    if (f->function && f->module)
        put(o, ")");
    if (!f->function && !f->module)
        put_hex(o, f->ip);
    put(o, ", so its callers are not known (-fasynchronous-unwind-tables keeps it)\n");
}

static void put_frames(out *o, const lt_rep_stack *s)
{
    if (!s->nframes)
        put(o, "    (no stack)\n");
    for (size_t i = 0; i < s->nframes; i++)
        put_frame(o, i, &s->frames[i]);
    if (s->dropped) {
        put(o, "    (");
        put_dec(o, (long)s->dropped);
        put(o, " more frames left out of the report)\n");
    }
    put_cut(o, s);
}

/* After a lazily taken stack that could not be completed: what the frames are. */
static void put_partial(out *o, const lt_rep_stack *s)
{
    if (s->partial)
        put(o, "    (frames recorded when it was taken; its callers beyond them then are not known "
               "now; LOCKTRACE_STACKS=full records whole stacks)\n");
}

/* One stack's frame lines, for other tables that show stacks (stats.c). */
size_t lt_rep_format_frames(const lt_rep_stack *s, char *buf, size_t size, size_t at)
{
    out o = {buf, size, at};
    put_frames(&o, s);
    return o.at;
}

/* ------------------------------------------------------------------------------------------
 * The sections of a report.
 * ---------------------------------------------------------------------------------------- */
static const lt_rep_lock *lock0(const lt_rep *r)
{
    static const lt_rep_lock none;
    return r->nlocks ? &r->locks[0] : &none;
}

/* ' "name"' of a lock that has one: where it lives (a variable, a heap block, a frame). */
static void put_name(out *o, const char *name)
{
    if (!name)
        return;
    put(o, " \"");
    put_data(o, name);
    put(o, "\"");
}

/* A lock by its address and, when it has one, its name: 0x... "name". */
static void put_addr(out *o, const lt_rep_lock *l)
{
    put_hex(o, l->addr);
    put_name(o, l->name);
}

static void put_summary(out *o, const lt_rep *r)
{
    const lt_rep_lock *l = lock0(r);
    put(o, "locktrace: ");
    put(o, lt_rep_kind_name(r->kind));
    put(o, ": thread ");
    put_thread(o, &r->threads[0]);
    if (r->kind == LT_FIND_EXIT_HELD && r->why == LT_WHY_PROCESS_EXIT) {
        put(o, " ends the process while threads hold ");
        put_dec(o, (long)r->nlocks);
        put(o, r->nlocks == 1 ? " lock (LOCKTRACE_EXIT_HELD=report)\n"
                              : " locks (LOCKTRACE_EXIT_HELD=report)\n");
        return;
    }
    if (r->kind == LT_FIND_EXIT_HELD) {
        put(o, " exits holding ");
        put_dec(o, (long)r->nlocks);
        put(o, r->nlocks == 1 ? " lock\n" : " locks\n");
        return;
    }
    put(o, " ");
    put(o, kind_verbs[r->kind]);
    if (r->kind == LT_FIND_SELF_DEADLOCK) {
        put(o, " ");
        put(o, mode_word(l->type, l->req_mode));
        put(o, " on");
    }
    put(o, " ");
    put(o, lock_name(l));
    put(o, " ");
    put_addr(o, l);
    put(o, r->kind == LT_FIND_DESTROY_HELD || r->kind == LT_FIND_FREE_HELD ? " while " : " but ");
    put(o, reason_text[r->why]);
    put(o, "\n");
}

static void put_object(out *o, const char *label, const lt_rep_lock *l)
{
    if (!l->object && !l->annotation)
        return;
    put(o, label);
    put_hex(o, l->object);
    put(o, l->annotation && l->annotation[0] ? " " : "");
    put_data(o, l->annotation);
    put(o, "\n");
}

/* `mine`: held_mode says how this thread holds it (a bad unlock's says how its holder does:
 * put_unheld). */
static void put_lock(out *o, const lt_rep_lock *l, int mine)
{
    put(o, "  lock:      ");
    put_hex(o, l->addr);
    put(o, " ");
    put(o, lock_name(l));
    put_name(o, l->name);
    if (l->held_mode == LT_MODE_NONE || !mine) {
        put(o, ", not held by this thread");
    } else {
        put(o, ", held for ");
        put(o, mode_word(l->type, l->held_mode));
    }
    if (l->req_mode != LT_MODE_NONE) {
        put(o, ", requested for ");
        put(o, mode_word(l->type, l->req_mode));
        put(o, " (");
        put(o, lt_rep_wait_name(l->wait));
        put(o, ")");
    }
    put(o, "\n");
    put_object(o, "  guards:    ", l);
}

/* A lock still held at thread exit, and where it was taken. */
static void put_taken(out *o, const lt_rep *r, const lt_rep_stack *s)
{
    const lt_rep_lock *l = &r->locks[s->lock];
    static const char *const held_as[] = {" rwlock for ", " mutex, ", " spinlock, ",
                                          " once-control, running its ", " condvar, ",
                                          " barrier, "};
    put(o, "  still held: ");
    put_addr(o, l);
    put(o, l->api == LT_API_C11 && l->type == LT_MUTEX ? " mtx_t, " : held_as[l->type]);
    put(o, mode_word(l->type, l->held_mode));
    if (r->why == LT_WHY_PROCESS_EXIT) {
        put(o, ", by ");
        put_thread(o, &r->threads[s->thread >= 0 && (size_t)s->thread < r->nthreads ? s->thread : 0]);
    }
    put(o, "\n");
    put_object(o, "    guards: ", l);
    put(o, "    taken at:\n");
    put_frames(o, s);
    put_partial(o, s);
}

static void put_held(out *o, const lt_rep *r, const lt_rep_stack *s)
{
    if (lock0(r)->type == LT_ONCE) {
        put(o, "  the outer call into the once-control (its init routine is running):\n");
    } else {
        put(o, "  earlier acquisition by this thread (held for ");
        put(o, mode_word(lock0(r)->type, lock0(r)->held_mode));
        put(o, "):\n");
    }
    put_frames(o, s);
    put_partial(o, s);
}

/* free-held: who holds the lock whose memory is released, and where they took it. */
static void put_holder(out *o, const lt_rep *r, const lt_rep_stack *s)
{
    const lt_rep_lock *l = lock0(r);
    put(o, "  held for ");
    put(o, mode_word(l->type, l->held_mode));
    put(o, " by ");
    put_thread(o, s->thread >= 0 && (size_t)s->thread < r->nthreads ? &r->threads[s->thread]
                                                                     : &r->threads[0]);
    put(o, s->thread == 0 ? " (this thread), taken at:\n" : ", taken at:\n");
    put_frames(o, s);
    put_partial(o, s);
}

/* The other threads a report names: for now the gone owner of an orphaned lock, and where it
 * took the lock when known (its "holder" stack: a fork child has no exit-held report). */
static void put_others(out *o, const lt_rep *r)
{
    for (size_t i = 1; i < r->nthreads; i++) {
        if (!r->threads[i].gone)
            continue;
        const lt_rep_stack *taken = NULL;
        for (size_t k = 0; k < r->nstacks; k++)
            if (!strcmp(r->stacks[k].role, "holder") && r->stacks[k].thread == (int)i)
                taken = &r->stacks[k];
        put(o, "  held by ");
        put_thread(o, &r->threads[i]);
        /* no exit-held report tells of a thread fork left behind: say what that means */
        put(o, r->threads[i].by_fork
                   ? ", which is gone: a thread of the parent that fork did not copy into this "
                     "child (only the thread that forks is), so nothing here will unlock it; take "
                     "the lock around fork (pthread_atfork) or lock nothing a child needs\n"
               : taken ? ", which is gone (it exited)\n"
                       : ", which is gone (an exit-held report shows where it took the lock)\n");
        if (taken) {
            put(o, "  it took the lock at:\n");
            put_frames(o, taken);
            put_partial(o, taken);
        }
    }
}

/* A bad unlock of a lock no thread holds on the tracer's record (its holder, when one does,
 * is named by its "holder" stack, as a free-held report's is, or by put_others when gone). */
static void put_unheld(out *o, const lt_rep *r)
{
    if (r->kind == LT_FIND_BAD_UNLOCK && r->nlocks && r->locks[0].held_mode == LT_MODE_NONE)
        put(o, "  held by no thread (none took it since its last release, as far as the tracer "
               "saw)\n");
}

/* Headings of the stack roles that have no section of their own; an unknown role prints
 * under its own name, so a new kind's stacks show up before it gets a heading here. */
static const char *const role_heading[][2] = {
    {"request", "  request (this call):\n"},
    {"first-seen", "  lock first seen:\n"},
    {"free", "  released (this call):\n"},
};

static void put_stack(out *o, const lt_rep *r, const lt_rep_stack *s)
{
    if (strcmp(s->role, "taken") == 0 && s->lock >= 0) {
        put_taken(o, r, s);
        return;
    }
    if (strcmp(s->role, "held") == 0) {
        put_held(o, r, s);
        return;
    }
    if (strcmp(s->role, "holder") == 0) {
        put_holder(o, r, s);
        return;
    }
    for (size_t i = 0; i < LT_ARRAY_LEN(role_heading); i++) {
        if (strcmp(s->role, role_heading[i][0]) == 0) {
            put(o, role_heading[i][1]);
            put_frames(o, s);
            put_partial(o, s); /* where a lock was first seen, when it is recorded frames */
            return;
        }
    }
    put(o, "  ");
    put_data(o, s->role);
    put(o, ":\n");
    put_frames(o, s);
}

/* Stacks of one role, in the order the report lists them; role NULL = every role that has
 * no place of its own in the order below. */
static int placed(const lt_rep *r, const lt_rep_stack *s)
{
    if (!strcmp(s->role, "holder")) /* a gone holder's: with it, put_others */
        return s->thread > 0 && (size_t)s->thread < r->nthreads && r->threads[s->thread].gone;
    return !strcmp(s->role, "taken") || !strcmp(s->role, "held") || !strcmp(s->role, "first-seen");
}

static void put_role(out *o, const lt_rep *r, const char *role)
{
    for (size_t i = 0; i < r->nstacks; i++) {
        const lt_rep_stack *s = &r->stacks[i];
        if (role ? strcmp(s->role, role) == 0 : !placed(r, s))
            put_stack(o, r, s);
    }
}

/* ------------------------------------------------------------------------------------------
 * Cross-thread kinds: deadlock (a wait-for cycle), lock-order-inversion (a cycle in the
 * lock-order graph), long-wait. Their text is built from the steps; each stack belongs to
 * one step by role.
 * ---------------------------------------------------------------------------------------- */
static const lt_rep_thread unknown_thread = {.seq = -1};
static const lt_rep_lock unknown_lock;

static const lt_rep_thread *thread_at(const lt_rep *r, int i)
{
    return i >= 0 && (size_t)i < r->nthreads ? &r->threads[i] : &unknown_thread;
}

static const lt_rep_lock *lock_at(const lt_rep *r, int i)
{
    return i >= 0 && (size_t)i < r->nlocks ? &r->locks[i] : &unknown_lock;
}

/* The action line of a report that stops a call (a self-deadlock's request, the wait that
 * closes a deadlock), after "  action: ": what abort leaves undone and what
 * LOCKTRACE_ACTION=edeadlk does instead, each API in its own words. A C++ static's guard
 * cannot fail: under edeadlk the runtime's call is made as without the tracer. */
typedef struct action_text {
    const char *abort, *edeadlk;
} action_text;

#define REFUSED(fails, returns)                                                          \
    ((action_text){"abort (LOCKTRACE_ACTION=edeadlk makes " fails " instead)",           \
                   returns " (LOCKTRACE_ACTION=edeadlk)"})

static action_text action_of(const lt_rep *r)
{
    int type = -1, api = LT_API_PTHREAD, waits_for = LT_FOR_LOCK;
    if (r->kind == LT_FIND_DEADLOCK && r->nsteps) {
        const lt_rep_step *s = &r->steps[0];
        waits_for = s->waits_for;
        type = lock_at(r, s->lock)->type;
        api = waits_for == LT_FOR_LOCK ? lock_at(r, s->lock)->api : s->api;
    } else if (r->nlocks) {
        type = r->locks[0].type;
        api = r->locks[0].api;
    }
    if (waits_for == LT_FOR_JOIN)
        return api == LT_API_C11 ? REFUSED("thrd_join fail with thrd_error",
                                           "thrd_join returns thrd_error without waiting")
                                 : REFUSED("the join fail with EDEADLK",
                                           "the join returns EDEADLK without waiting");
    if (type == LT_ONCE && api == LT_API_CXX && r->kind == LT_FIND_DEADLOCK)
        return (action_text){"abort (with LOCKTRACE_ACTION=edeadlk the thread waits as without "
                             "the tracer: a C++ static's guard cannot fail)",
                             "none possible (LOCKTRACE_ACTION=edeadlk): a C++ static's guard "
                             "cannot fail, so the thread waits as without the tracer"};
    if (type == LT_ONCE && api == LT_API_CXX)
        return (action_text){"abort (with LOCKTRACE_ACTION=edeadlk the call goes on: a C++ "
                             "static's guard cannot fail, and the C++ runtime's own answer "
                             "follows: libstdc++ throws recursive_init_error, libc++abi aborts)",
                             "none possible (LOCKTRACE_ACTION=edeadlk): a C++ static's guard "
                             "cannot fail, so the call goes on and the C++ runtime's own answer "
                             "follows (libstdc++ throws recursive_init_error, libc++abi aborts)"};
    if (type == LT_ONCE)
        return api == LT_API_C11
                   ? REFUSED("call_once return without running the init routine",
                             "call_once returns without running the init routine")
                   : REFUSED("pthread_once return EDEADLK without running the init routine",
                             "pthread_once returns EDEADLK without running the init routine");
    if (api == LT_API_C11)
        return REFUSED("the call fail with thrd_error", "the call returns thrd_error without locking");
    if (api == LT_API_CUSTOM)
        return REFUSED("the annotation call return EDEADLK to the lock's own code",
                       "the annotation call returns EDEADLK to the lock's own code");
    return REFUSED("the call fail with EDEADLK", "the call returns EDEADLK without locking");
}

static void put_outcome(out *o, const lt_rep *r)
{
    if (r->kind == LT_FIND_SELF_DEADLOCK && r->outcome == LT_OUTCOME_CONTINUE && r->nlocks &&
        r->locks[0].wait == LT_WAIT_TIMED) {
        put(o, "  action: none (the request is timed: it fails, at the latest at its deadline)\n");
        return;
    }
    if (r->why == LT_WHY_ORPHANED_WAITING) { /* reported by the watchdog: no call to fail */
        put(o, "  action: none (the thread waits in libc already, and waits on as without the "
               "tracer: only a signal or the end of the process can end the wait now)\n");
        return;
    }
    if (r->kind == LT_FIND_SELF_DEADLOCK && r->outcome == LT_OUTCOME_CONTINUE &&
        r->why != LT_WHY_ERRORCHECK_RELOCK && r->why != LT_WHY_REREAD_POSSIBLE) {
        /* the one other request that goes on (detect.c: report_self) */
        put(o, "  action: none (the thread's cancellation is enabled and asynchronous: a "
               "cancellation ends the wait, as without the tracer)\n");
        return;
    }
    if (r->outcome != LT_OUTCOME_ABORT && r->outcome != LT_OUTCOME_EDEADLK)
        return;
    action_text a = action_of(r);
    put(o, "  action: ");
    put(o, r->outcome == LT_OUTCOME_ABORT ? a.abort : a.edeadlk);
    put(o, "\n");
}

static void put_ref(out *o, const lt_rep_lock *l)
{
    put(o, lock_name(l));
    put(o, " ");
    put_addr(o, l);
}

static void put_tref(out *o, const lt_rep_thread *t)
{
    put(o, "T");
    put_dec(o, t->seq);
}

/* The frames of step i's stack of this role, "(no stack)" when the report has none. */
static void put_step_stack(out *o, const lt_rep *r, const char *role, size_t i)
{
    static const lt_rep_stack none = {.role = ""};
    const lt_rep_stack *s = &none;
    for (size_t k = 0; k < r->nstacks; k++)
        if (r->stacks[k].step == (int)i && strcmp(r->stacks[k].role, role) == 0)
            s = &r->stacks[k];
    put_frames(o, s);
    put_partial(o, s);
}

/* "read on rwlock ... 0x... "name" (blocking": how step s wants lock l, the parenthesis open. */
static void put_wanted(out *o, const lt_rep_lock *l, const lt_rep_step *s)
{
    put(o, mode_word(l->type, s->want_mode));
    put(o, " on ");
    put_ref(o, l);
    put(o, " (");
    put(o, NAME_OF(wait_names, s->wait) ? wait_names[s->wait] : "?");
}

/* What the thread of step i waits for, and who holds it up. */
static void put_cycle_wait(out *o, const lt_rep *r, size_t i)
{
    const lt_rep_step *s = &r->steps[i];
    const lt_rep_lock *l = lock_at(r, s->lock);
    if (s->waits_for != LT_FOR_LOCK) {
        if (s->waits_for == LT_FOR_JOIN) {
            put(o, s->api == LT_API_C11 ? "\n    waits in thrd_join for " : "\n    waits in pthread_join for ");
            put_tref(o, thread_at(r, s->blocker));
            put(o, " to exit\n");
        } else {
            put(o, s->api == LT_API_C11 ? "\n    waits on condition variable (cnd_t) "
                                        : "\n    waits on condition variable ");
            put_hex(o, s->cond);
            put_name(o, s->cond_name);
            put(o, " for a signal; the last one came from ");
            put_tref(o, thread_at(r, s->blocker));
            put(o, "\n");
        }
        put(o, "    waiting at:\n");
        put_step_stack(o, r, "waiting", i);
        return;
    }
    put(o, "\n    waits for ");
    put_wanted(o, l, s);
    put(o, s->held_mode == LT_MODE_NONE ? "), queued behind " : "), held for ");
    if (s->held_mode != LT_MODE_NONE) {
        put(o, mode_word(l->type, s->held_mode));
        put(o, " by ");
    }
    put_tref(o, thread_at(r, s->blocker));
    put(o, s->held_mode == LT_MODE_NONE ? "'s write request (the lock prefers writers)\n" : "\n");
    put_object(o, "    guards:    ", l);
    put(o, "    waiting at:\n");
    put_step_stack(o, r, "waiting", i);
}

/* Thread i of a cycle: what it waits for (step i) and what it holds (step i-1). */
static void put_cycle_thread(out *o, const lt_rep *r, size_t i)
{
    size_t p = (i + r->nsteps - 1) % r->nsteps;
    const lt_rep_step *prev = &r->steps[p];
    const lt_rep_lock *l = lock_at(r, prev->lock);
    put(o, "  thread ");
    put_thread(o, thread_at(r, r->steps[i].thread));
    put_cycle_wait(o, r, i);
    if (prev->held_mode == LT_MODE_NONE)
        return;
    put(o, "    holds ");
    put_ref(o, l);
    put(o, " for ");
    put(o, mode_word(l->type, prev->held_mode));
    put(o, ", wanted by ");
    put_tref(o, thread_at(r, prev->thread));
    put(o, "\n");
    put_object(o, "    guards:    ", l);
    put(o, "    taken at:\n");
    put_step_stack(o, r, "holding", p);
}

static void put_deadlock(out *o, const lt_rep *r)
{
    put(o, "locktrace: deadlock: ");
    put_dec(o, (long)r->nsteps);
    put(o, r->nsteps == 1 ? " thread waits for itself (" : " threads wait for each other (");
    for (size_t i = 0; i < r->nsteps; i++) {
        put_tref(o, thread_at(r, r->steps[i].thread));
        put(o, " -> ");
    }
    put_tref(o, thread_at(r, r->nsteps ? r->steps[0].thread : -1));
    put(o, r->warning == 2 ? "); warning: a condition wait is in the cycle, only a signal from "
                             "another thread ends it\n"
           : r->warning  ? "); warning: a timed wait is in the cycle, it ends when that times out\n"
           : r->nsteps == 1 ? "); it can never go on\n"
                            : "); none of them can go on\n");
    for (size_t i = 0; i < r->nsteps; i++)
        put_cycle_thread(o, r, i);
    if (r->warning)
        put(o, r->warning == 2 ? "  action: none (another thread may still signal)\n"
                               : "  action: none (the timed wait will fail with ETIMEDOUT)\n");
}

/* "lock A [annotation] (mode)" as the inversion's table says it. */
static void put_end(out *o, const lt_rep_lock *l, lt_mode m)
{
    put_ref(o, l);
    if (l->annotation && l->annotation[0]) {
        put(o, " [");
        put_data(o, l->annotation);
        put(o, "]");
    }
    put(o, " (");
    put(o, mode_word(l->type, m));
    if (l->ended) {
        put(o, "; ");
        put(o, ended_word(l->ended));
        put(o, " since");
    }
    put(o, ")");
}

/* The stack of this role for lock index `lock`, NULL when the report has none. */
static const lt_rep_stack *lock_stack(const lt_rep *r, const char *role, int lock)
{
    for (size_t k = 0; k < r->nstacks; k++)
        if (r->stacks[k].lock == lock && strcmp(r->stacks[k].role, role) == 0)
            return &r->stacks[k];
    return NULL;
}

/* Edges i .. j of an inversion pass through locks that ended since (each edge's second lock
 * but the last's): the first lock was held when the last was taken, an order that outlives
 * them. Each is named, with where it was first seen. */
static void put_ended_run(out *o, const lt_rep *r, size_t i, size_t j)
{
    put(o, "  ");
    put_addr(o, lock_at(r, r->steps[j].lock));
    put(o, " was taken while ");
    put_addr(o, lock_at(r, r->steps[i].from));
    put(o, " was held (edges ");
    put_dec(o, (long)i + 1);
    put(o, " to ");
    put_dec(o, (long)j + 1);
    put(o, "), under locks that no longer exist:\n");
    for (size_t k = i; k < j; k++) {
        const lt_rep_lock *l = lock_at(r, r->steps[k].lock);
        const lt_rep_stack *s = lock_stack(r, "first-seen", r->steps[k].lock);
        put(o, "    ");
        put(o, lock_name(l));
        put(o, " ");
        put_addr(o, l);
        put(o, ", ");
        put(o, ended_word(l->ended));
        put(o, s ? " after these edges were made; first seen at:\n"
                 : " after these edges were made\n");
        if (s) {
            put_frames(o, s);
            put_partial(o, s);
        }
    }
}

/* Every run of edges through ended locks in the inversion r. */
static void put_ended(out *o, const lt_rep *r)
{
    for (size_t i = 0; i < r->nsteps; i++) {
        size_t j = i;
        while (j + 1 < r->nsteps && lock_at(r, r->steps[j].lock)->ended)
            j++;
        if (j > i)
            put_ended_run(o, r, i, j);
        i = j;
    }
}

/* Where edge i's two locks were taken, each after its guards: line (the second lock's only
 * with to_guards: in a cycle of instances the next edge names it). */
static void put_edge_stacks(out *o, const lt_rep *r, size_t i, int to_guards)
{
    const lt_rep_lock *from = lock_at(r, r->steps[i].from), *to = lock_at(r, r->steps[i].lock);
    put_object(o, "    guards:    ", from);
    put(o, "    ");
    put_addr(o, from);
    put(o, " taken at:\n");
    put_step_stack(o, r, "edge-from", i);
    if (to_guards)
        put_object(o, "    guards:    ", to);
    put(o, "    ");
    put_addr(o, to);
    put(o, " taken at:\n");
    put_step_stack(o, r, "edge-to", i);
}

/* Who row i of an inversion's table is: the thread that made edge i; a thread already named
 * in an earlier row (a cycle one thread made alone) stands for another thread doing the same. */
static void put_row_thread(out *o, const lt_rep *r, size_t i)
{
    const lt_rep_thread *t = thread_at(r, r->steps[i].thread);
    for (size_t k = 0; k < i; k++) {
        if (r->steps[k].thread == r->steps[i].thread) {
            put(o, "another thread, as ");
            put_tref(o, t);
            put(o, " did,");
            return;
        }
    }
    put_tref(o, t);
}

static void put_inversion(out *o, const lt_rep *r)
{
    put(o, "locktrace: lock-order-inversion: ");
    put_dec(o, (long)r->nsteps);
    put(o, " locks are taken in a cycle (");
    for (size_t i = 0; i < r->nsteps; i++) {
        put_addr(o, lock_at(r, r->steps[i].from));
        put(o, " -> ");
    }
    put_addr(o, lock_at(r, r->nsteps ? r->steps[0].from : -1));
    put(o, "): a potential deadlock\n");
    if (r->one_thread) {
        put(o, "  seen in one thread only: ");
        put_thread(o, &r->threads[0]);
        put(o, " took these locks in both orders; two threads doing so deadlock\n");
    }
    put_ended(o, r);
    put(o, "  how it deadlocks:\n");
    for (size_t i = 0; i < r->nsteps; i++) {
        put(o, "    ");
        put_row_thread(o, r, i);
        put(o, " holds ");
        put_end(o, lock_at(r, r->steps[i].from), r->steps[i].held_mode);
        put(o, " and wants ");
        put_end(o, lock_at(r, r->steps[i].lock), r->steps[i].want_mode);
        put(o, "\n");
    }
    for (size_t i = 0; i < r->nsteps; i++) {
        const lt_rep_lock *from = lock_at(r, r->steps[i].from), *to = lock_at(r, r->steps[i].lock);
        put(o, "  edge ");
        put_dec(o, (long)i + 1);
        put(o, ": ");
        put_addr(o, to);
        put(o, " taken while holding ");
        put_addr(o, from);
        put(o, ", first by thread ");
        put_thread(o, thread_at(r, r->steps[i].thread));
        put(o, "\n");
        put_edge_stacks(o, r, i, 0);
    }
    put(o, r->outcome == LT_OUTCOME_ABORT
               ? "  action: abort (LOCKTRACE_INVERSION=report reports and goes on)\n"
               : "  action: none, reported once (LOCKTRACE_INVERSION=abort aborts)\n");
}

/* ------------------------------------------------------------------------------------------
 * Predicted inversions (lock classes): the steps are edges between classes, each made by
 * its own pair of locks; the locks of consecutive edges are other instances of one class.
 * ---------------------------------------------------------------------------------------- */
static void put_class(out *o, const lt_rep_lock *l)
{
    put(o, "\"");
    put_data(o, l->class_name ? l->class_name : "?");
    put(o, "\"");
}

/* What discipline the class broke, or that a cycle of classes is no order at all. */
static void put_prediction_why(out *o, const lt_rep *r)
{
    const lt_rep_lock *c = lock_at(r, r->steps[0].from);
    if (r->why == LT_WHY_CLASS_CYCLE) {
        put(o, "  a prediction (LOCKTRACE_CLASSES): locks of these classes were taken in a "
               "cycle, each edge by other locks; two threads doing so on shared locks "
               "deadlock\n");
        return;
    }
    put(o, "  a prediction (LOCKTRACE_CLASSES): locks of class ");
    put_class(o, c);
    put(o, " nest inside each other; discipline broken: ");
    if (r->why == LT_WHY_CLASS_DECLARED) {
        const lt_rep_lock *to = lock_at(r, r->steps[0].lock);
        put(o, c->addr < to->addr ? "the declared descending address order (a lock was taken "
                                    "while holding one at a lower address)\n"
                                  : "the declared ascending address order (a lock was taken "
                                    "while holding one at a higher address)\n");
        return;
    }
    put(o, "address order (a lock was taken while holding one at a lower address, and "
           "another while holding one at a higher address); two threads doing these on the "
           "same two locks deadlock\n");
}

static void put_predicted(out *o, const lt_rep *r)
{
    put(o, "locktrace: lock-order-inversion: predicted (classes ");
    for (size_t i = 0; i < r->nsteps; i++) {
        put_class(o, lock_at(r, r->steps[i].from));
        put(o, " -> ");
    }
    put_class(o, lock_at(r, r->steps[r->nsteps - 1].lock));
    put(o, "): a potential deadlock between locks that never met\n");
    put_prediction_why(o, r);
    put(o, "  how it deadlocks:\n");
    if (r->nsteps == 1) /* a nesting against the declared order */
        put(o, "    a thread keeping the declared order takes the same two locks the other "
               "way round, and:\n");
    for (size_t i = 0; i < r->nsteps; i++) {
        const lt_rep_step *s = &r->steps[i];
        const lt_rep_lock *from = lock_at(r, s->from), *to = lock_at(r, s->lock);
        put(o, i ? "    another thread holds a lock of class " : "    a thread holds a lock of class ");
        put_class(o, from);
        put(o, " (");
        put(o, mode_word(from->type, s->held_mode));
        put(o, ") and wants ");
        put(o, i + 1 < r->nsteps || r->nsteps == 1 ? "one of class "
                                                   : "the first thread's, of class ");
        put_class(o, to);
        put(o, " (");
        put(o, mode_word(to->type, s->want_mode));
        put(o, "), as ");
        put_tref(o, thread_at(r, s->thread));
        put(o, " did with ");
        put_addr(o, from);
        put(o, " then ");
        put_addr(o, to);
        put(o, "\n");
    }
    for (size_t i = 0; i < r->nsteps; i++) {
        const lt_rep_step *s = &r->steps[i];
        const lt_rep_lock *from = lock_at(r, s->from), *to = lock_at(r, s->lock);
        put(o, "  edge ");
        put_dec(o, (long)i + 1);
        put(o, ": class ");
        put_class(o, from);
        put(o, " -> class ");
        put_class(o, to);
        put(o, ": ");
        put_ref(o, to);
        put(o, " taken while holding ");
        put_ref(o, from);
        put(o, ", first by thread ");
        put_thread(o, thread_at(r, s->thread));
        put(o, "\n");
        put_edge_stacks(o, r, i, 1);
    }
    put(o, "  action: none, reported once (a prediction; LOCKTRACE_INVERSION=abort does not "
           "apply to it)\n");
}

static int predicted(const lt_rep *r)
{
    return r->why == LT_WHY_CLASS_CYCLE || r->why == LT_WHY_CLASS_NESTING ||
           r->why == LT_WHY_CLASS_DECLARED;
}

/* A long-wait holder that waits itself: what for, and where (as a deadlock's thread). */
static void put_holder_wait(out *o, const lt_rep *r, size_t i)
{
    const lt_rep_step *s = &r->steps[i];
    put(o, "  and ");
    put_tref(o, thread_at(r, s->thread));
    if (s->waits_for == LT_FOR_JOIN) {
        put(o, s->api == LT_API_C11 ? " waits itself in thrd_join for " : " waits itself in "
                                                                          "pthread_join for ");
        if (s->blocker >= 0)
            put_tref(o, thread_at(r, s->blocker));
        else
            put(o, "a thread");
        put(o, " to exit");
    } else if (s->waits_for == LT_FOR_SIGNAL) {
        put(o, s->api == LT_API_C11 ? " waits itself on condition variable (cnd_t) "
                                    : " waits itself on condition variable ");
        put_hex(o, s->cond);
        put_name(o, s->cond_name);
        put(o, " for a signal, keeping this lock (a thread that takes it before it signals "
               "waits for ever)");
    } else {
        put(o, " waits itself for ");
        put_wanted(o, lock_at(r, s->lock), s);
        put(o, ")");
    }
    put(o, ", for ");
    put_dec(o, s->waited_ms);
    put(o, " ms now, at:\n");
    put_step_stack(o, r, "waiting", i);
}

/* A holder that waits for no lock, condition or join: what /proc said it did at the report
 * (a slow holder, most often: its waiters go on when it returns and unlocks). */
static void put_holder_doing(out *o, const lt_rep *r, size_t i)
{
    const lt_rep_step *s = &r->steps[i];
    put(o, "  and ");
    put_tref(o, thread_at(r, s->thread));
    put(o, " waits for no lock, condition or join now: it is ");
    if (strcmp(s->now_in, "running") == 0) {
        put(o, "running (a holder computing for long?)\n");
        return;
    }
    put(o, "in ");
    put_data(o, s->now_in);
    put(o, " (a holder in slow I/O or a sleep, or waiting for what the tracer does not see)\n");
}

static void put_long_wait(out *o, const lt_rep *r)
{
    const lt_rep_step *w = &r->steps[0];
    const lt_rep_lock *l = lock_at(r, w->lock);
    put(o, "locktrace: long-wait: thread ");
    put_thread(o, thread_at(r, w->thread));
    put(o, " has waited ");
    put_dec(o, w->waited_ms);
    put(o, " ms for ");
    put(o, mode_word(l->type, w->want_mode));
    put(o, " on ");
    put_ref(o, l);
    put(o, " (LOCKTRACE_WAIT_TIMEOUT=");
    put_dec(o, r->wait_timeout);
    put(o, ")\n");
    put_object(o, "  guards:    ", l);
    put(o, "  waiting at:\n");
    put_step_stack(o, r, "waiting", 0);
    if (r->nsteps == 1)
        put(o, "  no holder is on record (the lock may have been taken before the tracer "
               "loaded, or released just now)\n");
    for (size_t i = 1; i < r->nsteps; i++) {
        put(o, "  held for ");
        put(o, mode_word(l->type, r->steps[i].held_mode));
        put(o, " by ");
        put_thread(o, thread_at(r, r->steps[i].thread));
        put(o, ", taken at:\n");
        put_step_stack(o, r, "holding", i);
        if (r->steps[i].now_waits)
            put_holder_wait(o, r, i);
        else if (r->steps[i].now_in)
            put_holder_doing(o, r, i);
    }
}

static size_t format_cross(const lt_rep *r, char *buf, size_t size)
{
    out o = {buf, size, 0};
    if (!r->nsteps) { /* only a damaged file has none: say so rather than index steps[0] */
        put(&o, "locktrace: ");
        put(&o, lt_rep_kind_name(r->kind));
        put(&o, ": (the report lists no threads or locks)\n");
    } else if (r->kind == LT_FIND_DEADLOCK)
        put_deadlock(&o, r);
    else if (r->kind == LT_FIND_INVERSION && predicted(r))
        put_predicted(&o, r);
    else if (r->kind == LT_FIND_INVERSION)
        put_inversion(&o, r);
    else
        put_long_wait(&o, r);
    if (r->kind == LT_FIND_DEADLOCK) /* the others follow LOCKTRACE_INVERSION, or go on */
        put_outcome(&o, r);
    return o.at;
}

/* ------------------------------------------------------------------------------------------
 * condvar-misuse: locks[0] is the condition variable, locks[1] the mutex of this thread's
 * wait (or of the first waiter), locks[2] another mutex; threads[1..] wait on it, each with a
 * "waiting" stack naming the mutex it waits with.
 * barrier-misuse: locks[0] is the barrier; threads[1..] wait on it, each with a "waiting"
 * stack naming the barrier.
 * ---------------------------------------------------------------------------------------- */
static void put_waiting(out *o, const lt_rep *r, const lt_rep_stack *s, const char *with)
{
    put_thread(o, thread_at(r, s->thread));
    put(o, with);
    put_ref(o, lock_at(r, s->lock));
}

static void put_condvar(out *o, const lt_rep *r)
{
    const lt_rep_lock *cv = lock0(r);
    int barrier = r->kind == LT_FIND_BARRIER_MISUSE;
    put(o, barrier ? "locktrace: barrier-misuse: thread " : "locktrace: condvar-misuse: thread ");
    put_thread(o, &r->threads[0]);
    if (lt_rep_counts_waiters(r->why)) {
        put(o, r->why == LT_WHY_INIT_WAITED ? " initialises " : " destroys ");
        put_ref(o, cv);
        put(o, r->why == LT_WHY_INIT_WAITED ? " again while " : " while ");
        put_dec(o, r->waiting);
        if (r->waiting_max > r->waiting) {
            put(o, " to ");
            put_dec(o, r->waiting_max);
        }
        put(o, r->waiting_max == 1 ? " thread waits on it " : " threads wait on it ");
        if (barrier)
            put(o, "in an unfinished round ");
    } else {
        put(o, " waits on ");
        put_ref(o, cv);
        put(o, " with ");
        put_ref(o, lock_at(r, 1));
        put(o, " ");
        for (size_t i = 0; i < r->nstacks; i++) {
            if (strcmp(r->stacks[i].role, "waiting") == 0) {
                put(o, "while ");
                put_waiting(o, r, &r->stacks[i], " waits on it with ");
                put(o, " ");
            }
        }
    }
    if (barrier && r->why == LT_WHY_DESTROY_WAITED) /* no signal can end it, an arrival can */
        put(o, "(glibc's destroy waits for the round to complete: forever, unless more threads "
               "arrive at the barrier it destroys)");
    else
        put(o, NAME_OF(reason_text, r->why) ? reason_text[r->why] : "");
    put(o, "\n  thread:    ");
    put_thread(o, &r->threads[0]);
    put(o, "\n");
    put_role(o, r, "request");
    for (size_t i = 0; i < r->nstacks; i++) {
        const lt_rep_stack *s = &r->stacks[i];
        if (strcmp(s->role, "held") != 0)
            continue;
        put(o, "  the mutex stays locked from its outermost acquisition by this thread:\n");
        put_frames(o, s);
        put_partial(o, s);
    }
    for (size_t i = 0; i < r->nstacks; i++) {
        const lt_rep_stack *s = &r->stacks[i];
        if (strcmp(s->role, "waiting") != 0)
            continue;
        put(o, "  waiting: ");
        if (barrier)
            put_thread(o, thread_at(r, s->thread));
        else
            put_waiting(o, r, s, " with ");
        put(o, ", waits at:\n");
        put_frames(o, s);
        if (s->partial)
            put(o, "    (call site only)\n");
    }
    /* cnd_destroy returns nothing: a refused one just does not destroy */
    int c11 = r->nlocks && r->locks[0].api == LT_API_C11;
    if (r->outcome == LT_OUTCOME_EDEADLK)
        put(o, c11 ? "  action: cnd_destroy returns without destroying (LOCKTRACE_ACTION=edeadlk)\n"
                   : "  action: the destroy returns EBUSY without destroying (LOCKTRACE_ACTION=edeadlk)\n");
    else if (r->outcome == LT_OUTCOME_ABORT)
        put(o, c11 ? "  action: abort (LOCKTRACE_ACTION=edeadlk makes cnd_destroy return without "
                     "destroying instead)\n"
                   : "  action: abort (LOCKTRACE_ACTION=edeadlk makes the destroy return EBUSY "
                     "instead)\n");
}

/* Order: summary, thread, the locks still held at exit or the lock concerned, the request
 * (and any other stacks), the gone owner, the earlier acquisition, where the
 * lock was first seen, the action. */
/* ------------------------------------------------------------------------------------------
 * The thread dump: each thread, the locks it holds with where it took them, what it waits
 * for. Its steps are the waits; its "holding" stacks name their thread and lock.
 * ---------------------------------------------------------------------------------------- */
static void put_dump_lock(out *o, const lt_rep *r, int l, int mode)
{
    const lt_rep_lock *k = l >= 0 && (size_t)l < r->nlocks ? &r->locks[l] : NULL;
    put_hex(o, k ? k->addr : 0);
    put(o, " ");
    put(o, k ? lt_rep_type_name(k->type) : "lock");
    put_name(o, k ? k->name : NULL);
    if (k && k->type == LT_RWLOCK) {
        put(o, mode == LT_MODE_READ ? " for read" : " for write");
    }
}

static void put_dump_wait(out *o, const lt_rep *r, const lt_rep_step *s)
{
    if (s->waits_for == LT_FOR_JOIN) {
        put(o, "    waits in a join for ");
    } else if (s->waits_for == LT_FOR_SIGNAL) {
        put(o, "    waits on condition variable ");
        put_hex(o, s->cond);
        put_name(o, s->cond_name);
        put(o, " for ");
    } else {
        put(o, "    waits for ");
        put_dump_lock(o, r, s->lock, s->want_mode);
        put(o, s->wait == LT_WAIT_TIMED ? " (timed) for " : " for ");
    }
    put_dec(o, s->waited_ms);
    put(o, " ms, at:\n");
}

static size_t format_dump(const lt_rep *r, char *buf, size_t size)
{
    out o = {buf, size, 0};
    put(&o, r->why == LT_WHY_DUMP_ABORT
                ? "locktrace: thread-dump: the other threads' held locks and waits\n"
                : "locktrace: thread-dump: every thread's held locks and waits\n");
    if (r->why == LT_WHY_DUMP_ABORT && !r->nthreads)
        put(&o, "  (no other thread)\n");
    for (size_t t = 0; t < r->nthreads; t++) {
        size_t held = 0, waits = 0;
        for (size_t i = 0; i < r->nstacks; i++)
            held += r->stacks[i].thread == (int)t && strcmp(r->stacks[i].role, "holding") == 0;
        for (size_t i = 0; i < r->nsteps; i++)
            waits += r->steps[i].thread == (int)t;
        put(&o, "  ");
        put_thread(&o, &r->threads[t]);
        put(&o, ": holds ");
        put_dec(&o, (long)held);
        put(&o, held == 1 ? " lock" : " locks");
        put(&o, waits ? ", waiting\n" : "\n");
        for (size_t i = 0; i < r->nstacks; i++) {
            const lt_rep_stack *s = &r->stacks[i];
            if (s->thread != (int)t)
                continue;
            if (strcmp(s->role, "holding") == 0) {
                put(&o, "    holds ");
                put_dump_lock(&o, r, s->lock, s->lock >= 0 ? r->locks[s->lock].held_mode : 0);
                put(&o, ", taken at:\n");
            } else if (s->step >= 0) {
                put_dump_wait(&o, r, &r->steps[s->step]);
            }
            put_frames(&o, s);
        }
    }
    return o.at;
}

/* Why the program's frame of the report's main stack shows no file:line, when it does not:
 * its module was looked up (a frame left as an address on purpose, in a signal handler's
 * thread dump, has none) and has no line for it. */
static void put_no_line(out *o, const lt_rep *r)
{
    const lt_rep_frame *f = lt_rep_own_frame(lt_rep_primary_stack(r));
    if (!f || f->file || !f->module ||
        (f->function && strcmp(f->function, LT_REP_SIGNAL_FRAME) == 0))
        return;
    put(o, "  note: no file:line for ");
    put_data(o, f->function ? f->function : "the program's frame");
    put(o, ": ");
    put_data(o, f->module);
    put(o, " has no debug info for it (build with -g; a stripped file's debug file is found "
           "under /usr/lib/debug/.build-id, and `locktrace report` also asks DEBUGINFOD_URLS)\n");
}

static size_t format_kind(const lt_rep *r, char *buf, size_t size)
{
    out o = {buf, size, 0};
    if (r->kind >= LT_FIND_DEADLOCK)
        return format_cross(r, buf, size);
    if (r->kind == LT_FIND_CONDVAR_MISUSE || r->kind == LT_FIND_BARRIER_MISUSE) {
        put_condvar(&o, r);
        return o.at;
    }
    put_summary(&o, r);
    put(&o, "  thread:    ");
    put_thread(&o, &r->threads[0]);
    put(&o, "\n");
    put_role(&o, r, "taken");
    if (r->kind != LT_FIND_EXIT_HELD && r->nlocks)
        put_lock(&o, &r->locks[0], r->kind != LT_FIND_BAD_UNLOCK);
    put_role(&o, r, NULL);
    put_others(&o, r);
    put_unheld(&o, r);
    put_role(&o, r, "held");
    put_role(&o, r, "first-seen");
    put_outcome(&o, r);
    return o.at;
}

size_t lt_rep_format_text(const lt_rep *r, char *buf, size_t size)
{
    if (r->kind == LT_FIND_THREAD_DUMP)
        return format_dump(r, buf, size);
    out o = {buf, size, format_kind(r, buf, size)};
    put_no_line(&o, r);
    return o.at;
}
