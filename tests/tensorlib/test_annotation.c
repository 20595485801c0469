/*
 * test_annotation.c - every storage lock is annotated for locktrace when the storage is made.
 * This program stands in for liblocktrace: it defines the annotation entry point that
 * locktrace.h references weakly (exported with --export-dynamic, so libtensorlib.so binds to
 * it) and records what tensorlib tells it.
 */
#include "locktrace.h"
#include "tl_test.h"

#define MAX_SEEN 16

typedef struct annotation {
    const void *lock, *object;
    locktrace_describe_fn describe;
} annotation;

static annotation seen[MAX_SEEN];
static int nseen;

void locktrace_annotate_lock_impl(const void *lock, const void *object,
                                  locktrace_describe_fn describe)
{
    if (nseen < MAX_SEEN)
        seen[nseen++] = (annotation){lock, object, describe};
}

/* The description of the i-th annotated lock, as the tracer would print it. */
static const char *describe(int i, char *buf, size_t size)
{
    buf[0] = '\0';
    if (i < nseen && seen[i].describe)
        seen[i].describe(seen[i].object, buf, size);
    return buf;
}

int main(void)
{
    char buf[128];
    tl_tensor *m = tl_zeros(SHAPE(2, 2), TL_F32, TL_CPU);
    CHECK(nseen == 1 && seen[0].lock != NULL && seen[0].object != NULL);
    CHECKF(strcmp(describe(0, buf, sizeof buf), "tensorlib storage f32[2,2] cpu 16 B") == 0,
           "got \"%s\"", buf);

    /* views share the storage: no new lock, no new annotation */
    tl_tensor *row = tl_get(m, 0), *t = tl_transpose(m, 0, 1), *c = tl_clone(m);
    CHECK(nseen == 1);

    /* a copy is new storage with its own annotated lock, named for its own shape */
    tl_tensor *cp = tl_copy(row);
    CHECK(nseen == 2 && seen[1].lock != seen[0].lock);
    CHECKF(strcmp(describe(1, buf, sizeof buf), "tensorlib storage f32[2] cpu 8 B") == 0,
           "got \"%s\"", buf);
    tl_tensor *s = tl_arange(0, 3, 1, TL_I64, TL_CPU);
    CHECKF(strcmp(describe(2, buf, sizeof buf), "tensorlib storage i64[3] cpu 24 B") == 0,
           "got \"%s\"", buf);
    tl_tensor *scalar = tl_full(1, SCALAR, TL_BF16, TL_CPU);
    CHECKF(strcmp(describe(3, buf, sizeof buf), "tensorlib storage bf16[] cpu 2 B") == 0,
           "got \"%s\"", buf);
    /* the describe function never writes past the size it is given */
    char small[12];
    memset(small, 'x', sizeof small);
    describe(0, small, 8);
    CHECK(strlen(small) == 7 && small[8] == 'x');

    tl_release(scalar);
    tl_release(s);
    tl_release(cp);
    tl_release(c);
    tl_release(t);
    tl_release(row);
    tl_release(m);
    return check_summary();
}
