/*
 * order_oracle.h - what the parts of the randomized differential test of lock-order
 * inversion detection share (order_oracle.c says what the test is).
 *
 * A program is a list of operations on lock slots. Slots live in heap blocks (slot s is in
 * block s / per_block), so freeing a block ends every lock in it and a block allocated again
 * usually gets the same memory back (address reuse). Every operation names the thread that
 * runs it; threads run in turns, one at a time, and the generator never lets a thread ask
 * for a lock it would have to wait for, so the program never blocks.
 */
#ifndef ORDER_ORACLE_H
#define ORDER_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#define ORACLE_THREADS 4
#define ORACLE_MAX_HELD 6 /* below the tracer's walk of the 8 newest held locks (README) */

/* Lock types: mutexes, rwlocks (default; PREFER_WRITER_NONRECURSIVE_NP, the one glibc makes
 * writer-preferring; PREFER_WRITER_NP, which glibc keeps reader-preferring), spinlocks. */
enum oracle_type {
    TY_NORMAL,
    TY_RECURSIVE,
    TY_ERRORCHECK,
    TY_RW,
    TY_RW_WP,
    TY_SPIN,
    TY_RW_PW,
    TY_COUNT
};

static inline int oracle_is_rw(int type)
{
    return type == TY_RW || type == TY_RW_WP || type == TY_RW_PW;
}

enum oracle_op {
    OP_ALLOC,   /* block `lock` gets memory (its slots hold no lock yet) */
    OP_FREE,    /* block `lock` is freed: every lock in it ends ("freed") */
    OP_INIT,    /* slot `lock` becomes a new lock of `type` (ending the one there, if any) */
    OP_DESTROY, /* slot `lock` is destroyed */
    OP_LOCK,    /* blocking acquisition in `mode` */
    OP_TIMED,   /* timed acquisition (a deadline it never reaches) */
    OP_TRY,     /* trylock; `ok` says whether it succeeds */
    OP_UNLOCK,
};

enum { MODE_READ, MODE_WRITE }; /* mutexes and spinlocks are taken for write */

typedef struct oracle_step {
    uint8_t op, thread, mode, type, ok;
    uint16_t lock; /* a slot, or a block for OP_ALLOC / OP_FREE */
} oracle_step;

typedef struct oracle_program {
    uint64_t seed;
    int nthreads, nblocks, per_block;
    int nsteps;
    oracle_step *steps;
} oracle_program;

/* What the traced run left: its stderr and, for each step, how long stderr was after it and
 * the base address of the block an OP_ALLOC step got. */
typedef struct oracle_run {
    char *text;
    size_t len;
    size_t *end;     /* nsteps: length of stderr after step i */
    uintptr_t *base; /* nsteps: OP_ALLOC's block address, else 0 */
    int failed_step; /* a step whose return code was not the expected one, or -1 */
    int status;      /* the child's wait status */
} oracle_run;

/* What programs may use: lock types by bit (1 << TY_*), and the kinds of step. */
typedef struct oracle_features {
    unsigned types;
    int timed, try, ends, again; /* again: take a held lock again where legal */
} oracle_features;

void oracle_generate(oracle_program *p, uint64_t seed, const oracle_features *f);
void oracle_program_free(oracle_program *p);
void oracle_print_program(const oracle_program *p);

size_t oracle_slot_size(void);
/* f(arg) called from a call site of step's own (order_oracle_sites.c). */
int oracle_at_site(int step, int (*f)(void *), void *arg);
void oracle_execute(const oracle_program *p, oracle_run *r);

/* The reference model's verdict on one acquisition. */
enum { V_NONE, V_MUST, V_MAY };

typedef struct oracle_model oracle_model;
oracle_model *oracle_model_new(const oracle_program *p, const oracle_run *r);
void oracle_model_free(oracle_model *m);
/* Steps the model through step i; returns V_NONE when no report may come of it, V_MUST when
 * one must, V_MAY when either is right (two cycles equally short, one already reported). */
int oracle_model_step(oracle_model *m, int i);
/* A report at the last step named the cycle `addr` (n addresses in the report's order, ended[k]
 * nonzero where the report says addr[k] is a lock that no longer exists): 1
 * when it is one the model expects there (it is then remembered as reported), else 0 with
 * what was expected in `why`. addr NULL and n 0: a report printed as a repeat of an earlier
 * one (the same stacks), whose locks are not shown: 1 when the model has exactly one new
 * cycle there (several: oracle_model_beyond says so). addr NULL, n -1: only `why`. */
int oracle_model_accept(oracle_model *m, const uintptr_t *addr, const unsigned char *ended, int n,
                        char *why, size_t size);
/* Nonzero when the program went past a documented limit of the tracer (the comparison of its
 * later steps is then meaningless): a string saying which. */
const char *oracle_model_beyond(const oracle_model *m);
/* The model's live edges, for a failure's listing. */
void oracle_model_dump(const oracle_model *m);
/* Print each edge as the model makes it (ORDER_ORACLE_TRACE=1 with ORDER_ORACLE_SEED). */
void oracle_model_trace(oracle_model *m, int on);

#endif
