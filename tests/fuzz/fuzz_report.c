/*
 * fuzz_report.c - the fuzz target for everything `locktrace report` does with a file before
 * symbolizing: parse the JSON, check it into an lt_rep, format it as text and as JSON. A
 * report that reads back must also round-trip: its JSON re-read and re-written is the same
 * text, or the target aborts (a crash the fuzzer keeps).
 *
 * Built two ways: with clang -fsanitize=fuzzer,address by tests/fuzz/run.sh, and with the
 * normal compiler plus regress_main.c as the `fuzz-regress` test over the committed corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report_read.h"

#define OUT_BYTES (1 << 20)

static char text_buf[OUT_BYTES], json_a[OUT_BYTES], json_b[OUT_BYTES];

static void round_trip(const lt_rep *r)
{
    char err[512];
    size_t a = lt_rep_format_json(r, json_a, sizeof json_a, (size_t)-1);
    if (a >= sizeof json_a)
        return;
    lt_rep_file *again = lt_rep_read(json_a, a, err, sizeof err);
    if (!again)
        abort(); /* what we write, we must read */
    size_t b = lt_rep_format_json(lt_rep_of(again), json_b, sizeof json_b, (size_t)-1);
    if (a != b || memcmp(json_a, json_b, a) != 0)
        abort();
    lt_rep_file_free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    lt_rep_file *f = lt_rep_read((const char *)data, size, err, sizeof err);
    if (!f)
        return 0;
    lt_rep_format_text(lt_rep_of(f), text_buf, sizeof text_buf);
    round_trip(lt_rep_of(f));
    lt_rep_file_free(f);
    return 0;
}
