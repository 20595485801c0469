/*
 * test_metal_launch.c - the Metal backend's op members (metal_ops.c) on Linux, against a fake
 * metal_device that records each launch instead of encoding it: which kernel family, op code,
 * dtypes, layout flag, kernel arguments, buffers and grid every member asks for, and the
 * errors for what the kernels do not cover.
 */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "kernels.h"
#include "metal_device.h"

extern const tl_backend_i tl_metal_backend;

/* ---- the fake device: records the last launch ---- */

static tlm_launch last;
static unsigned char last_args[1024];
static int launches;

bool tlm_metal_available(void) { return true; }
void *tlm_metal_alloc(size_t nbytes) { return malloc(nbytes ? nbytes : 1); }
void tlm_metal_free(void *buf) { free(buf); }

tl_status tlm_metal_write(void *buf, size_t offset, const void *src, size_t nbytes)
{
    memcpy((char *)buf + offset, src, nbytes);
    return TL_OK;
}

tl_status tlm_metal_read(const void *buf, size_t offset, void *dst, size_t nbytes)
{
    memcpy(dst, (const char *)buf + offset, nbytes);
    return TL_OK;
}

tl_status tlm_metal_encode(const tlm_launch *l)
{
    last = *l;
    memcpy(last_args, l->args, l->args_size < sizeof last_args ? l->args_size : sizeof last_args);
    last.args = last_args;
    launches++;
    return TL_OK;
}

/* ---- operands ---- */

static int buf_a, buf_b, buf_c, buf_d; /* distinct addresses standing for buffers */

static tl_layout strided(size_t ndim, const size_t *shape, const size_t *stride, size_t offset)
{
    tl_layout l = {.ndim = ndim, .offset = offset};
    memcpy(l.shape, shape, ndim * sizeof *shape);
    memcpy(l.stride, stride, ndim * sizeof *stride);
    return l;
}

static tl_layout contiguous(size_t ndim, const size_t *shape)
{
    tl_layout l;
    tl_layout_contiguous(&l, shape, ndim, 0);
    return l;
}

static bool selects(const char *name)
{
    tlm_kernel k;
    return tlm_select(&last.req, &k) && strcmp(k.name, name) == 0;
}

static const size_t s23[] = {2, 3}, s32[] = {3, 2}, t23[] = {1, 2};

static void test_unary_strided(void)
{
    tl_layout src = strided(2, s23, t23, 0), dst = contiguous(2, s23);
    tl_operand o_src = {&buf_a, &src, TL_F32}, o_dst = {&buf_b, &dst, TL_F32};
    CHECK(tl_metal_backend.unary(TL_SILU, &o_dst, &o_src) == TL_OK);
    CHECK(last.req.family == TLM_UNARY && last.req.op == TL_SILU && !last.req.contiguous);
    CHECK(last.grid == TLM_GRID_ELEMENTWISE && last.n == 6 && selects("unary_f32"));
    CHECK(last.nbufs == 2 && last.nreads == 1 && last.bufs[0] == &buf_a && last.bufs[1] == &buf_b);
    const tlk_map_args *a = last.args;
    CHECK(a->n == 6 && a->src.stride[0] == 1 && a->src.stride[1] == 2);
    CHECK(strcmp(last.op, "silu") == 0);
}

static void test_scalar_params(void)
{
    tl_layout l = contiguous(2, s23);
    tl_operand src = {&buf_a, &l, TL_F16}, dst = {&buf_b, &l, TL_F16};
    CHECK(tl_metal_backend.scalar(TL_SCALAR_CLAMP, &dst, &src, -1.5, 2.0) == TL_OK);
    const tlk_map_args *a = last.args;
    CHECK(last.req.family == TLM_SCALAR && last.req.op == TL_SCALAR_CLAMP && last.req.contiguous);
    CHECK(a->p0 == -1.5f && a->p1 == 2.0f && selects("scalar_f16"));
}

static void test_binary_broadcast_and_cmp(void)
{
    const size_t zero_stride[] = {0, 1};
    tl_layout la = contiguous(2, s23), lb = strided(2, s23, zero_stride, 4), ld = contiguous(2, s23);
    tl_operand a = {&buf_a, &la, TL_I64}, b = {&buf_b, &lb, TL_I64}, d = {&buf_c, &ld, TL_I64};
    CHECK(tl_metal_backend.binary(TL_MAXIMUM, &d, &a, &b) == TL_OK);
    const tlk_binary_args *args = last.args;
    CHECK(last.req.family == TLM_BINARY && last.req.op == TL_MAXIMUM && !last.req.contiguous);
    CHECK(args->b.stride[0] == 0 && args->b.offset == 4 && selects("binary_i64"));
    CHECK(last.nbufs == 3 && last.nreads == 2 && last.bufs[2] == &buf_c);
    tl_operand same = {&buf_b, &la, TL_I64}, out = {&buf_c, &ld, TL_U8};
    CHECK(tl_metal_backend.cmp(TL_LE, &out, &a, &same) == TL_OK);
    CHECK(last.req.family == TLM_CMP && last.req.op == TL_LE && last.req.contiguous);
    CHECK(last.req.dtype == TL_I64 && selects("cmp_i64"));
}

static void test_where(void)
{
    tl_layout l = contiguous(2, s23);
    tl_operand c = {&buf_a, &l, TL_U32}, t = {&buf_b, &l, TL_BF16}, f = {&buf_c, &l, TL_BF16},
               d = {&buf_d, &l, TL_BF16};
    CHECK(tl_metal_backend.where(&d, &c, &t, &f) == TL_OK);
    CHECK(last.req.family == TLM_WHERE && last.req.aux == TL_U32 && selects("where_bf16"));
    CHECK(last.nbufs == 4 && last.nreads == 3 && last.bufs[3] == &buf_d);
}

static void test_reduce_and_softmax(void)
{
    tl_layout src = contiguous(2, s23);
    const size_t kept[] = {2, 1};
    tl_layout dst = contiguous(2, kept);
    tl_operand s = {&buf_a, &src, TL_F32}, d = {&buf_b, &dst, TL_U32};
    CHECK(tl_metal_backend.reduce(TL_ARGMAX, &d, &s, 1u << 1) == TL_OK);
    const tlk_reduce_args *r = last.args;
    CHECK(last.grid == TLM_GRID_ROWS && last.n == 2 && last.row_len == 3);
    CHECK(r->out_n == 2 && r->reduced_n == 3 && r->kept.stride[0] == 3 && selects("reduce_f32"));
    CHECK(last.req.op == TL_ARGMAX);
    tl_operand sd = {&buf_b, &src, TL_F32};
    CHECK(tl_metal_backend.softmax(&sd, &s, 0, true) == TL_OK);
    const tlk_softmax_args *m = last.args;
    CHECK(last.req.family == TLM_SOFTMAX && last.req.op == TLK_LOG_SOFTMAX);
    CHECK(last.n == 3 && last.row_len == 2 && m->src_stride == 3 && m->dst_stride == 3);
    CHECK(strcmp(last.op, "log_softmax") == 0);
}

static void test_matmul(void)
{
    const size_t sb[] = {3, 4}, sd[] = {2, 4};
    tl_layout la = contiguous(2, s23), lb = contiguous(2, sb), ld = contiguous(2, sd);
    tl_operand a = {&buf_a, &la, TL_F32}, b = {&buf_b, &lb, TL_F32}, d = {&buf_c, &ld, TL_F32};
    CHECK(tl_metal_backend.matmul(&d, &a, &b) == TL_OK);
    CHECK(last.grid == TLM_GRID_MATMUL && last.batch == 1 && last.m == 2 && last.cols == 4);
    CHECK(selects("matmul_f32") && last.nreads == 2);
}

static void test_index_ops(void)
{
    const size_t ids_shape[] = {5}, out_shape[] = {5, 2};
    tl_layout src = contiguous(2, s32), ids = contiguous(1, ids_shape), out = contiguous(2, out_shape);
    tl_operand s = {&buf_a, &src, TL_U8}, i = {&buf_b, &ids, TL_I64}, d = {&buf_c, &out, TL_U8};
    CHECK(tl_metal_backend.index_select(&d, &s, &i, 0) == TL_OK);
    CHECK(last.req.family == TLM_INDEX_SELECT && last.req.aux == TL_I64 && last.n == 10);
    CHECK(selects("index_select_u8"));
    tl_layout gi = contiguous(2, s32);
    tl_operand g = {&buf_b, &gi, TL_U32}, gd = {&buf_c, &gi, TL_U8};
    CHECK(tl_metal_backend.gather(&gd, &s, &g, 1) == TL_OK);
    CHECK(last.req.family == TLM_GATHER && last.req.aux == TL_U32 && selects("gather_u8"));
}

static void test_copy_and_fill(void)
{
    tl_layout src = strided(2, s23, t23, 0), dst = contiguous(2, s23);
    tl_operand s = {&buf_a, &src, TL_F32}, d = {&buf_b, &dst, TL_F32}, h = {&buf_b, &dst, TL_F16};
    CHECK(tl_metal_backend.copy(&d, &s) == TL_OK);
    CHECK(last.req.family == TLM_COPY && !last.req.contiguous && selects("copy_f32"));
    CHECK(tl_metal_backend.copy(&h, &s) == TL_OK);
    CHECK(last.req.family == TLM_CAST && last.req.aux == TL_F16 && selects("cast_f32_f16"));
    /* A dtype change into a view that does not start at element 0: refused, by name. */
    tl_layout off = contiguous(2, s23);
    off.offset = 3;
    tl_operand ho = {&buf_b, &off, TL_F16};
    int before = launches;
    CHECK(tl_metal_backend.copy(&ho, &s) == TL_ERR_UNSUPPORTED && launches == before);
    CHECK(strstr(tl_last_error(), "no metal implementation for to_dtype") != NULL);

    tl_operand u8 = {&buf_b, &src, TL_U8};
    CHECK(tl_metal_backend.fill(&u8, 300.0) == TL_OK);
    const tlk_fill_args *f = last.args;
    CHECK(f->ivalue_lo == 255 && f->ivalue_hi == 0 && !last.req.contiguous); /* saturates like cpu */
    tl_operand i64 = {&buf_b, &dst, TL_I64};
    CHECK(tl_metal_backend.fill(&i64, -2.0) == TL_OK);
    f = last.args;
    CHECK(f->ivalue_lo == 0xfffffffeu && f->ivalue_hi == 0xffffffffu && last.req.contiguous);
    CHECK(tl_metal_backend.fill(&i64, 1e30) == TL_OK); /* saturates as the cpu stores it: INT64_MAX */
    f = last.args;
    CHECK(f->ivalue_lo == 0xffffffffu && f->ivalue_hi == 0x7fffffffu);
}

static void test_refusals(void)
{
    const size_t big[] = {70000, 70000};
    tl_layout l = contiguous(2, big);
    tl_operand s = {&buf_a, &l, TL_F32}, d = {&buf_b, &l, TL_F32};
    int before = launches;
    CHECK(tl_metal_backend.unary(TL_EXP, &d, &s) == TL_ERR_UNSUPPORTED && launches == before);
    CHECK(strstr(tl_last_error(), "no metal implementation for exp on this view") != NULL);
    CHECK(tl_metal_backend.conv1d == NULL && tl_metal_backend.conv2d == NULL);
    CHECK(tl_metal_backend.scatter == NULL && tl_metal_backend.index_add == NULL);
    CHECK(strcmp(tl_metal_backend.name, "metal") == 0);
}

int main(void)
{
    test_unary_strided();
    test_scalar_params();
    test_binary_broadcast_and_cmp();
    test_where();
    test_reduce_and_softmax();
    test_matmul();
    test_index_ops();
    test_copy_and_fill();
    test_refusals();
    return check_summary();
}
