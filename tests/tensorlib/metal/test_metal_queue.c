/*
 * test_metal_queue.c - the command-buffer state machine against a fake driver that logs
 * every Metal call as one letter: B begin buffer, E open encoder, e close encoder,
 * C commit, W wait.
 */
#include <string.h>

#include "check.h"
#include "command_queue.h"

typedef struct fake {
    char log[256];
    bool fail_wait;
} fake;

static void put(fake *f, char c)
{
    size_t n = strlen(f->log);
    if (n + 1 < sizeof f->log)
        f->log[n] = c;
}

static bool f_begin(void *ctx) { put(ctx, 'B'); return true; }
static bool f_open(void *ctx) { put(ctx, 'E'); return true; }
static void f_close(void *ctx) { put(ctx, 'e'); }
static void f_commit(void *ctx) { put(ctx, 'C'); }
static bool f_wait(void *ctx) { put(ctx, 'W'); return !((fake *)ctx)->fail_wait; }

static const tlm_driver driver = {f_begin, f_open, f_close, f_commit, f_wait};

static int A, B, X; /* three buffers, by address */

static tlm_qstatus encode(tlm_queue *q, const void *in, const void *out)
{
    const void *reads[] = {in}, *writes[] = {out};
    tlm_qstatus st = tlm_queue_begin(q, reads, 1, writes, 1);
    return st == TLM_Q_OK ? tlm_queue_end(q) : st;
}

static void test_lazy_encoder_and_commit_every_n(void)
{
    fake f = {{0}, false};
    tlm_queue q;
    tlm_queue_init(&q, &driver, &f, 3, 100);
    CHECK(strcmp(f.log, "") == 0); /* nothing until the first encode */
    for (int i = 0; i < 7; i++)
        CHECK(encode(&q, &A, &B) == TLM_Q_OK);
    CHECKF(strcmp(f.log, "BEeCBEeCBE") == 0, "log %s", f.log);
    CHECK(tlm_queue_destroy(&q) == TLM_Q_OK);
    CHECKF(strcmp(f.log, "BEeCBEeCBEeCW") == 0, "log %s", f.log);
}

static void test_host_read_waits_only_for_pending_writes(void)
{
    fake f = {{0}, false};
    tlm_queue q;
    tlm_queue_init(&q, &driver, &f, 50, 100);
    CHECK(encode(&q, &A, &B) == TLM_Q_OK);
    CHECK(tlm_queue_before_host_read(&q, &A) == TLM_Q_OK); /* GPU only reads A */
    CHECK(tlm_queue_before_host_read(&q, &X) == TLM_Q_OK); /* untouched */
    CHECKF(strcmp(f.log, "BE") == 0, "log %s", f.log);
    CHECK(tlm_queue_before_host_read(&q, &B) == TLM_Q_OK); /* GPU writes B: flush */
    CHECKF(strcmp(f.log, "BEeCW") == 0, "log %s", f.log);
    CHECK(tlm_queue_before_host_read(&q, &B) == TLM_Q_OK); /* done already */
    CHECKF(strcmp(f.log, "BEeCW") == 0, "log %s", f.log);
    tlm_queue_destroy(&q);
}

static void test_host_write_waits_for_pending_reads(void)
{
    fake f = {{0}, false};
    tlm_queue q;
    tlm_queue_init(&q, &driver, &f, 50, 100);
    CHECK(encode(&q, &A, &B) == TLM_Q_OK);
    CHECK(tlm_queue_before_host_write(&q, &X) == TLM_Q_OK);
    CHECKF(strcmp(f.log, "BE") == 0, "log %s", f.log);
    CHECK(tlm_queue_before_host_write(&q, &A) == TLM_Q_OK); /* the GPU still reads A */
    CHECKF(strcmp(f.log, "BEeCW") == 0, "log %s", f.log);
    tlm_queue_destroy(&q);
}

static void test_committed_work_counts_as_pending(void)
{
    fake f = {{0}, false};
    tlm_queue q;
    tlm_queue_init(&q, &driver, &f, 1, 100);
    CHECK(encode(&q, &A, &B) == TLM_Q_OK); /* committed at once, not waited */
    CHECKF(strcmp(f.log, "BEeC") == 0, "log %s", f.log);
    CHECK(tlm_queue_before_host_read(&q, &B) == TLM_Q_OK);
    CHECKF(strcmp(f.log, "BEeCW") == 0, "log %s", f.log);
    tlm_queue_destroy(&q);
}

static void test_in_flight_cap_forces_a_wait(void)
{
    fake f = {{0}, false};
    tlm_queue q;
    tlm_queue_init(&q, &driver, &f, 1, 2);
    for (int i = 0; i < 3; i++)
        CHECK(encode(&q, &A, &B) == TLM_Q_OK);
    CHECKF(strcmp(f.log, "BEeCBEeCWBEeC") == 0, "log %s", f.log);
    CHECK(q.npending == 2); /* only the last buffer's accesses are still pending */
    tlm_queue_destroy(&q);
}

static void test_gpu_failure_is_reported_and_clears(void)
{
    fake f = {{0}, true};
    tlm_queue q;
    tlm_queue_init(&q, &driver, &f, 50, 100);
    CHECK(encode(&q, &A, &B) == TLM_Q_OK);
    CHECK(tlm_queue_synchronize(&q) == TLM_Q_DEVICE);
    CHECK(q.npending == 0 && q.in_flight == 0);
    f.fail_wait = false;
    CHECK(tlm_queue_synchronize(&q) == TLM_Q_OK); /* nothing left to wait for */
    CHECKF(strcmp(f.log, "BEeCW") == 0, "log %s", f.log);
    tlm_queue_destroy(&q);
}

static bool f_open_fails(void *ctx) { put(ctx, 'X'); return false; }

static void test_failed_begin_unlocks(void)
{
    fake f = {{0}, false};
    tlm_driver bad = driver;
    bad.open_encoder = f_open_fails;
    tlm_queue q;
    tlm_queue_init(&q, &bad, &f, 50, 100);
    CHECK(encode(&q, &A, &B) == TLM_Q_DEVICE);
    CHECK(q.npending == 0);
    /* The queue is unlocked again: a second call gets as far as the driver. */
    CHECK(encode(&q, &A, &B) == TLM_Q_DEVICE);
    CHECKF(strcmp(f.log, "BXX") == 0, "log %s", f.log);
    tlm_queue_destroy(&q);
}

int main(void)
{
    test_lazy_encoder_and_commit_every_n();
    test_host_read_waits_only_for_pending_writes();
    test_host_write_waits_for_pending_reads();
    test_committed_work_counts_as_pending();
    test_in_flight_cap_forces_a_wait();
    test_gpu_failure_is_reported_and_clears();
    test_failed_begin_unlocks();
    return check_summary();
}
