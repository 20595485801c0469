/*
 * test_io.c - .npy/.npz files numpy wrote and safetensors files written from the format's
 * description (fixtures/files, from gen_files.py) load with the values gen_files.py put in
 * them; malformed ones fail with a message naming the fault; what tensorlib saves loads back
 * bit for bit (and io_numpy.py checks numpy reads it). Argument: the fixture directory.
 */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tl_test.h"

static char dir[4096], tmp[4096];

static const char *at(const char *name)
{
    static char buf[8192];
    snprintf(buf, sizeof buf, "%s/files/%s", dir, name);
    return buf;
}

static const char *scratch(const char *name)
{
    static char buf[8192];
    snprintf(buf, sizeof buf, "%s/%s", tmp, name);
    return buf;
}

/* The entry called name in a list (NULL if absent). */
static tl_tensor *find(tl_named *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i].name, name))
            return tl_retain(list[i].tensor);
    CHECKF(0, "no entry %s", name);
    return NULL;
}

static void npy_from_numpy(void)
{
    EXPECT_FMT(tl_load_npy(at("f32_2x3.npy"), TL_CPU), "[[0.0, 0.25, 0.5], [0.75, 1.0, 1.25]]");
    tl_tensor *f = tl_load_npy(at("f64_fortran.npy"), TL_CPU);
    CHECK(f && tl_dtype_of(f) == TL_F64 && tl_is_contiguous(f));
    EXPECT_FMT(f, "[[0.0, 0.25, 0.5], [0.75, 1.0, 1.25]]");
    EXPECT_FMT(tl_load_npy(at("i32_big_endian.npy"), TL_CPU), "[1, -2, 70000]");
    EXPECT_FMT(tl_load_npy(at("i64_scalar.npy"), TL_CPU), "-7");
    tl_tensor *e = tl_load_npy(at("u8_empty.npy"), TL_CPU);
    CHECK(e && tl_ndim(e) == 2 && tl_shape(e)[0] == 0 && tl_shape(e)[1] == 3);
    tl_release(e);
    EXPECT_FMT(tl_load_npy(at("f16_3d.npy"), TL_CPU),
               "[[[-4.0, -3.0], [-2.0, -1.0]], [[0.0, 1.0], [2.0, 3.0]]]");
    EXPECT_FMT(tl_load_npy(at("bool.npy"), TL_CPU), "[1, 0, 1]");
    EXPECT_FAIL(tl_load_npy(at("c64.npy"), TL_CPU), TL_ERR_DTYPE, "<c8 is not supported");
    /* the descr as the header writes it (it read "|O0": a size the header never gave) */
    EXPECT_FAIL(tl_load_npy(at("object.npy"), TL_CPU), TL_ERR_DTYPE, "dtype |O is not supported");
    EXPECT_FAIL(tl_load_npy(at("model.safetensors"), TL_CPU), TL_ERR_ARG, "not a .npy file");
    EXPECT_FAIL(tl_load_npy(at("no-such-file.npy"), TL_CPU), TL_ERR_ARG, "cannot open");
}

static void npz_from_numpy(void)
{
    tl_named *list = NULL;
    size_t n = 0;
    CHECK(tl_load_npz(at("arrays.npz"), TL_CPU, &list, &n) == TL_OK && n == 3);
    EXPECT_FMT(find(list, n, "a"), "[[0.0, 0.25, 0.5], [0.75, 1.0, 1.25]]");
    EXPECT_FMT(find(list, n, "b"), "[5, 6, 7]");
    EXPECT_FMT(find(list, n, "c"), "[[1, 2]]");
    tl_named_free(list, n);
    EXPECT_STATUS(tl_load_npz(at("compressed.npz"), TL_CPU, &list, &n), TL_ERR_UNSUPPORTED,
                  "savez_compressed");
    CHECK(list == NULL && n == 0);
    EXPECT_STATUS(tl_load_npz(at("f32_2x3.npy"), TL_CPU, &list, &n), TL_ERR_ARG,
                  "not a zip archive");
}

static void safetensors_files(void)
{
    tl_named *list = NULL;
    size_t n = 0;
    CHECK(tl_load_safetensors(at("model.safetensors"), TL_CPU, &list, &n) == TL_OK && n == 5);
    CHECK(n == 5 && !strcmp(list[0].name, "bias") && !strcmp(list[4].name, "weight"));
    EXPECT_FMT(find(list, n, "weight"), "[[0.0, 0.25, 0.5], [0.75, 1.0, 1.25]]");
    tl_tensor *b = find(list, n, "bias");
    CHECK(b && tl_dtype_of(b) == TL_BF16);
    EXPECT_FMT(b, "[1.5, -2.0, 0.25]");
    EXPECT_FMT(find(list, n, "ids"), "[3, -4]");
    EXPECT_FMT(find(list, n, "mask"), "[1, 0, 0, 1]");
    tl_tensor *e = find(list, n, "empty");
    CHECK(e && tl_elem_count(e) == 0 && tl_shape(e)[1] == 2);
    tl_release(e);
    tl_named_free(list, n);
    CHECK(tl_load_safetensors(at("ok_metadata.safetensors"), TL_CPU, &list, &n) == TL_OK &&
          n == 1);
    tl_named_free(list, n);
    const struct {
        const char *file;
        tl_status st;
        const char *part;
    } bad[] = {
        {"gap.safetensors", TL_ERR_ARG, "without gaps or overlaps"},
        {"bad_dtype.safetensors", TL_ERR_DTYPE, "F8_E4M3 is not supported"},
        {"bad_size.safetensors", TL_ERR_SHAPE, "8 bytes for a F32 tensor of 12"},
        {"long_header.safetensors", TL_ERR_ARG, "header length 1099511627776"},
        {"f32_2x3.npy", TL_ERR_ARG, "header"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECKF(tl_load_safetensors(at(bad[i].file), TL_CPU, &list, &n) == bad[i].st &&
                   strstr(tl_last_error(), bad[i].part) && !list && !n,
               "%s: %s", bad[i].file, tl_last_error());
    }
}

/* Malformed headers built here, byte by byte. */
static void safetensors_headers(void)
{
    const char *headers[] = {
        "[1, 2]", "{\"x\": 1}", "{\"x\": {\"dtype\": \"F32\", \"shape\": [1]}}",
        "{\"x\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}",
        "{\"x\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 0]}}",
        "{\"x\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4], \"y\": 1}}",
        "{\"x\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
        "\"x\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
        "{\"__metadata__\": {\"k\": 1}}", "{\"x\": {", "",
        "{\"x\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904, 4], "
        "\"data_offsets\": [0, 4]}}",
        "{\"x\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}",
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        unsigned char buf[512] = {0};
        size_t len = strlen(headers[i]);
        buf[0] = (unsigned char)len;
        memcpy(buf + 8, headers[i], len);
        tl_named *list = (tl_named *)1;
        size_t n = 7;
        tl_status st = tl_load_safetensors_buffer(buf, 8 + len + 4, TL_CPU, &list, &n);
        CHECKF(st != TL_OK && !list && !n && strstr(tl_last_error(), "load_safetensors"),
               "header %zu accepted (%s)", i, tl_last_error());
    }
    tl_named *list;
    size_t n;
    EXPECT_STATUS(tl_load_safetensors_buffer("short", 5, TL_CPU, &list, &n), TL_ERR_ARG,
                  "too short");
}

/* Every dtype each format holds, saved and loaded back bit for bit. */
static void round_trips(void)
{
    tl_dtype all[] = {TL_U8, TL_U32, TL_I16, TL_I32, TL_I64, TL_F16, TL_BF16, TL_F32, TL_F64};
    tl_named list[9];
    char names[9][8];
    for (size_t i = 0; i < 9; i++) {
        tl_tensor *r = tl_rand(-100, 100, SHAPE(3, 2, 5), TL_F64, TL_CPU, i);
        tl_tensor *t = tl_to_dtype(r, all[i]);
        snprintf(names[i], sizeof names[i], "t%zu", i);
        list[i] = (tl_named){names[i], tl_transpose(t, 0, 2)}; /* strided: saved row-major */
        RELEASE(r, t);
    }
    CHECK(tl_save_safetensors(scratch("all.safetensors"), list, 9) == TL_OK);
    tl_named *back = NULL;
    size_t n = 0;
    CHECK(tl_load_safetensors(scratch("all.safetensors"), TL_CPU, &back, &n) == TL_OK && n == 9);
    for (size_t i = 0; i < n && i < 9; i++) {
        tl_tensor *eq = tl_cmp(TL_EQ, back[i].tensor, list[i].tensor);
        tl_tensor *all_eq = eq ? tl_reduce(TL_MIN, eq, NULL, 0, false) : NULL;
        EXPECT_FMT(all_eq, "1");
        tl_release(eq);
    }
    tl_named_free(back, n);
    /* npz and npy: bf16 has no numpy dtype */
    tl_tensor *bf16 = list[6].tensor;
    list[6] = list[8];
    CHECK(tl_save_npz(scratch("all.npz"), list, 8) == TL_OK);
    CHECK(tl_load_npz(scratch("all.npz"), TL_CPU, &back, &n) == TL_OK && n == 8);
    for (size_t i = 0; i < n && i < 8; i++) {
        CHECK(!strcmp(back[i].name, list[i].name));
        tl_tensor *eq = tl_cmp(TL_EQ, back[i].tensor, list[i].tensor);
        EXPECT_FMT(eq ? tl_reduce(TL_MIN, eq, NULL, 0, false) : NULL, "1");
        tl_release(eq);
    }
    tl_named_free(back, n);
    tl_tensor *h = tl_zeros(SHAPE(2), TL_BF16, TL_CPU);
    EXPECT_STATUS(tl_save_npy(h, scratch("bf16.npy")), TL_ERR_DTYPE, "numpy has no bf16");
    tl_tensor *k = tl_arange(0, 6, 1, TL_F32, TL_CPU), *k2 = tl_reshape(k, SHAPE(2, 3));
    tl_tensor *kt = tl_transpose(k2, 0, 1); /* numpy must see [[0, 3], [1, 4], [2, 5]] */
    CHECK(tl_save_npy(kt, scratch("known.npy")) == TL_OK);
    RELEASE(k, k2, kt);
    tl_tensor *s = tl_full(2.5, SCALAR, TL_F32, TL_CPU);
    CHECK(tl_save_npy(s, scratch("scalar.npy")) == TL_OK);
    EXPECT_FMT(tl_load_npy(scratch("scalar.npy"), TL_CPU), "2.5");
    tl_named dup[2] = {{names[0], h}, {names[0], s}};
    EXPECT_STATUS(tl_save_safetensors(scratch("dup.safetensors"), dup, 2), TL_ERR_ARG, "twice");
    /* a safetensors name is a JSON string: bytes that are no UTF-8 are the caller's error (it
     * said "out of memory for the header") */
    tl_named latin1[1] = {{(char *)"caf\xe9", s}};
    EXPECT_STATUS(tl_save_safetensors(scratch("latin1.safetensors"), latin1, 1), TL_ERR_ARG,
                  "entry 0's name is not UTF-8");
    EXPECT_STATUS(tl_save_npy(s, "/nonexistent-dir/x.npy"), TL_ERR_ARG, "cannot create");
    RELEASE(h, s);
    for (size_t i = 0; i < 9; i++)
        if (i != 6)
            tl_release(list[i].tensor);
    tl_release(bf16);
}

/* A FIFO with no writer is no file to load: opening it to read waited for a writer (it hung),
 * so the check that it is no regular file never came. */
static void special_files(void)
{
    char fifo[8192];
    snprintf(fifo, sizeof fifo, "%s", scratch("fifo.npy"));
    if (!CHECK(mkfifo(fifo, 0600) == 0))
        return;
    EXPECT_FAIL(tl_load_npy(fifo, TL_CPU), TL_ERR_ARG, "is not a regular file");
    tl_named *list = NULL;
    size_t n = 0;
    EXPECT_STATUS(tl_load_safetensors(fifo, TL_CPU, &list, &n), TL_ERR_ARG,
                  "is not a regular file");
    unlink(fifo);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("usage: %s FIXTURE_DIR [SCRATCH_DIR]\n", argv[0]);
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    snprintf(tmp, sizeof tmp, "%s", argc > 2 ? argv[2] : "/tmp/tl_io_XXXXXX");
    if (argc < 3 && !mkdtemp(tmp)) {
        printf("cannot make a scratch directory\n");
        return 2;
    }
    npy_from_numpy();
    npz_from_numpy();
    safetensors_files();
    safetensors_headers();
    round_trips();
    special_files();
    if (argc < 3) { /* our own scratch directory: clean it up */
        const char *files[] = {"all.safetensors", "all.npz", "scalar.npy", "known.npy"};
        for (size_t i = 0; i < 4; i++)
            unlink(scratch(files[i]));
        rmdir(tmp);
    }
    return check_summary();
}
