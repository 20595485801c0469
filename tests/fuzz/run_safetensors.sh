#!/bin/sh
# Fuzz tensorlib's safetensors reader with libFuzzer (clang). From the top of the tree:
#   tests/fuzz/run_safetensors.sh [seconds]     default 600
#   tests/fuzz/run_safetensors.sh merge         fold new inputs into the committed corpus
# Crashes go to tests/fuzz/crashes_safetensors/.
set -eu
cd "$(dirname "$0")/../.."
out=build-fuzz
mkdir -p "$out/corpus_safetensors" tests/fuzz/crashes_safetensors
clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 -D_POSIX_C_SOURCE=200809L \
    -D_DEFAULT_SOURCE -Itensorlib/include -Itensorlib/src -Itracer/include \
    $(pkg-config --cflags jansson openblas) \
    tests/fuzz/fuzz_safetensors.c tensorlib/src/*.c tensorlib/src/cpu/*.c \
    $(pkg-config --libs jansson openblas) -lm -lpthread -o "$out/fuzz_safetensors"
if [ "${1-}" = merge ]; then
    rm -rf "$out/min_safetensors" && mkdir -p "$out/min_safetensors"
    "$out/fuzz_safetensors" -merge=1 "$out/min_safetensors" tests/fuzz/corpus_safetensors \
        "$out/corpus_safetensors"
    rm -f tests/fuzz/corpus_safetensors/* && cp "$out/min_safetensors"/* tests/fuzz/corpus_safetensors/
    exit 0
fi
exec "$out/fuzz_safetensors" -max_total_time="${1-600}" -max_len=4096 -timeout=10 \
    -artifact_prefix=tests/fuzz/crashes_safetensors/ "$out/corpus_safetensors" \
    tests/fuzz/corpus_safetensors
