#!/bin/sh
# Fuzz the report reader with libFuzzer (clang). From the top of the tree:
#   tests/fuzz/run.sh [seconds]        default 600
# New inputs go to a scratch corpus; crashes to tests/fuzz/crashes/. Afterwards, merge what is
# new into the committed, minimised corpus with:  tests/fuzz/run.sh merge
set -eu
cd "$(dirname "$0")/../.."
out=build-fuzz
mkdir -p "$out/corpus" tests/fuzz/crashes
clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 \
    -Itracer/src -Itracer/tool -Itracer/include \
    tests/fuzz/fuzz_report.c tracer/tool/report_read.c tracer/tool/json.c \
    tracer/src/fmt.c tracer/src/report_text.c tracer/src/report_json.c \
    tracer/src/report_identity.c -lm -o "$out/fuzz_report"
if [ "${1-}" = merge ]; then
    rm -rf "$out/min" && mkdir -p "$out/min"
    "$out/fuzz_report" -merge=1 "$out/min" tests/fuzz/corpus "$out/corpus"
    rm -f tests/fuzz/corpus/* && cp "$out/min"/* tests/fuzz/corpus/
    exit 0
fi
exec "$out/fuzz_report" -max_total_time="${1-600}" -max_len=8192 -timeout=10 \
    -artifact_prefix=tests/fuzz/crashes/ -dict=tests/fuzz/report.dict \
    "$out/corpus" tests/fuzz/corpus
