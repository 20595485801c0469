/*
 * fuzz_safetensors.c - the fuzz target for tensorlib's safetensors reader: load the input as a
 * file image. Whatever loads must also save and load back to the same names, dtypes and
 * shapes, or the target aborts (a crash the fuzzer keeps).
 *
 * Built two ways: with clang -fsanitize=fuzzer,address by tests/fuzz/run_safetensors.sh, and
 * with the normal compiler plus regress_main.c as the `fuzz-regress safetensors` test over
 * the committed corpus (corpus_safetensors/).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tl.h"

/* list saved to a scratch file and loaded back must describe the same tensors. */
static void round_trip(const tl_named *list, size_t n)
{
    char path[] = "/tmp/fuzz_safetensors_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return;
    close(fd);
    tl_named *back = NULL;
    size_t m = 0;
    if (tl_save_safetensors(path, list, n) != TL_OK ||
        tl_load_safetensors(path, TL_CPU, &back, &m) != TL_OK || m != n)
        abort();
    for (size_t i = 0; i < n; i++)
        if (strcmp(back[i].name, list[i].name) != 0 ||
            tl_dtype_of(back[i].tensor) != tl_dtype_of(list[i].tensor) ||
            tl_ndim(back[i].tensor) != tl_ndim(list[i].tensor) ||
            memcmp(tl_shape(back[i].tensor), tl_shape(list[i].tensor),
                   tl_ndim(list[i].tensor) * sizeof(size_t)) != 0)
            abort();
    tl_named_free(back, m);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tl_named *list = NULL;
    size_t n = 0;
    if (tl_load_safetensors_buffer(data, size, TL_CPU, &list, &n) == TL_OK) {
        round_trip(list, n);
        tl_named_free(list, n);
    } else if (list || n || !tl_last_error()[0]) {
        abort(); /* a failure leaves nothing behind and says why */
    }
    return 0;
}
