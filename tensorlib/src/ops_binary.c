/*
 * ops_binary.c - two- and three-input elementwise ops: arithmetic, comparisons (u8 result) and
 * where_cond. candle's shape contract: the plain ops want operands of one shape (an error
 * names both), the broadcast_* ops broadcast numpy-style, and a scalar operand is a 0-d tensor
 * of the other operand's dtype broadcast to its shape (but integer tensors with + - * / of a
 * scalar are candle's affine maps, computed in the dtype). Inputs are read-locked together,
 * in argument order.
 */
#include "backend.h"

static const char *const binary_names[2][TL_BINARY_COUNT] = {
    {[TL_ADD] = "add", [TL_SUB] = "sub", [TL_MUL] = "mul", [TL_DIV] = "div",
     [TL_MAXIMUM] = "maximum", [TL_MINIMUM] = "minimum"},
    {[TL_ADD] = "broadcast_add", [TL_SUB] = "broadcast_sub", [TL_MUL] = "broadcast_mul",
     [TL_DIV] = "broadcast_div", [TL_MAXIMUM] = "broadcast_maximum",
     [TL_MINIMUM] = "broadcast_minimum"},
};

static const char *const cmp_names[2][TL_CMP_COUNT] = {
    {[TL_EQ] = "eq", [TL_NE] = "ne", [TL_LT] = "lt", [TL_LE] = "le", [TL_GT] = "gt",
     [TL_GE] = "ge"},
    {[TL_EQ] = "broadcast_eq", [TL_NE] = "broadcast_ne", [TL_LT] = "broadcast_lt",
     [TL_LE] = "broadcast_le", [TL_GT] = "broadcast_gt", [TL_GE] = "broadcast_ge"},
};

/* The result shape of a and b, and each seen with that shape: numpy broadcasting when
 * `broadcast`, else the shapes must be equal. */
typedef struct pair_shape {
    size_t shape[TL_MAX_DIMS];
    size_t ndim;
    tl_layout la, lb;
} pair_shape;

static tl_status same_shape(const char *op, const tl_tensor *a, const tl_tensor *b)
{
    char sa[TL_SHAPE_STR], sb[TL_SHAPE_STR];
    if (tl_same_shape(&a->layout, &b->layout))
        return TL_OK;
    return tl_fail(TL_ERR_SHAPE, "%s: shape mismatch, lhs %s, rhs %s (the broadcast_ ops "
                   "broadcast)", op, tl_shape_str(a->layout.shape, a->layout.ndim, sa),
                   tl_shape_str(b->layout.shape, b->layout.ndim, sb));
}

static tl_status pair(const char *op, const tl_tensor *a, const tl_tensor *b, bool broadcast,
                      pair_shape *ps)
{
    tl_status st = tl_check_same(op, a, b);
    if (st == TL_OK && !broadcast && (st = same_shape(op, a, b)) == TL_OK) {
        ps->ndim = a->layout.ndim;
        memcpy(ps->shape, a->layout.shape, sizeof ps->shape);
        ps->la = a->layout;
        ps->lb = b->layout;
        return TL_OK;
    }
    if (st == TL_OK)
        st = tl_broadcast_shape(op, &a->layout, &b->layout, ps->shape, &ps->ndim);
    if (st == TL_OK)
        st = tl_layout_broadcast(op, &a->layout, ps->shape, ps->ndim, &ps->la);
    if (st == TL_OK)
        st = tl_layout_broadcast(op, &b->layout, ps->shape, ps->ndim, &ps->lb);
    return st;
}

/* a op b into a new tensor of dtype (TL_DTYPE_COUNT: a's). */
static tl_tensor *pair_op(const char *name, const tl_tensor *a, const tl_tensor *b,
                          bool broadcast, tl_dtype dtype, tl_kernel_fn fn, const void *ctx)
{
    pair_shape ps;
    if (pair(name, a, b, broadcast, &ps) != TL_OK)
        return NULL;
    const tl_tensor *in[2] = {a, b};
    const tl_layout *ls[2] = {&ps.la, &ps.lb};
    return tl_run_elementwise(name, in, ls, 2, ps.shape, ps.ndim,
                              dtype == TL_DTYPE_COUNT ? a->dtype : dtype, fn, ctx);
}

static tl_status binary_kernel(const tl_backend_i *b, const tl_operand *dst, const tl_operand *in,
                               const void *ctx)
{
    return b->binary(*(const tl_binary_op *)ctx, dst, &in[0], &in[1]);
}

static tl_tensor *binary(tl_binary_op op, const tl_tensor *a, const tl_tensor *b, bool broadcast)
{
    if ((unsigned)op >= TL_BINARY_COUNT)
        return tl_fail(TL_ERR_ARG, "binary: invalid op %d", (int)op), NULL;
    const char *name = binary_names[broadcast][op];
    if (a && TL_NEED(name, a, binary) != TL_OK) /* a NULL a fails below */
        return NULL;
    return pair_op(name, a, b, broadcast, TL_DTYPE_COUNT, binary_kernel, &op);
}

tl_tensor *tl_binary(tl_binary_op op, const tl_tensor *a, const tl_tensor *b)
{
    return binary(op, a, b, false);
}

tl_tensor *tl_broadcast_binary(tl_binary_op op, const tl_tensor *a, const tl_tensor *b)
{
    return binary(op, a, b, true);
}

static tl_status cmp_kernel(const tl_backend_i *b, const tl_operand *dst, const tl_operand *in,
                            const void *ctx)
{
    return b->cmp(*(const tl_cmp_op *)ctx, dst, &in[0], &in[1]);
}

static tl_tensor *cmp(tl_cmp_op op, const tl_tensor *a, const tl_tensor *b, bool broadcast)
{
    if ((unsigned)op >= TL_CMP_COUNT)
        return tl_fail(TL_ERR_ARG, "cmp: invalid op %d", (int)op), NULL;
    const char *name = cmp_names[broadcast][op];
    if (a && TL_NEED(name, a, cmp) != TL_OK)
        return NULL;
    return pair_op(name, a, b, broadcast, TL_U8, cmp_kernel, &op);
}

tl_tensor *tl_cmp(tl_cmp_op op, const tl_tensor *a, const tl_tensor *b)
{
    return cmp(op, a, b, false);
}

tl_tensor *tl_broadcast_cmp(tl_cmp_op op, const tl_tensor *a, const tl_tensor *b)
{
    return cmp(op, a, b, true);
}

/* s as a 0-d tensor of t's dtype on t's device, seen with t's shape (stride 0 everywhere). */
static tl_tensor *scalar_like(const char *op, const tl_tensor *t, double s)
{
    if (tl_check_tensor(op, t) != TL_OK)
        return NULL;
    tl_tensor *one = tl_full(s, NULL, 0, t->dtype, t->device);
    tl_tensor *b = one ? tl_broadcast_as(one, t->layout.shape, t->layout.ndim) : NULL;
    tl_release(one);
    return b;
}

/* candle's `t + s`, `t - s`, `t * s`, `t / s` are affine maps (tensor.rs, bin_trait!: affine(1,
 * s), affine(1, -s), affine(s, 0), affine(1 / s, 0)), which an integer tensor computes in its
 * dtype with mul and add converted to it first (tl_cpu_scalar): u8 1 - 2 is 1, u8 3 * 0.5 is
 * 0, u8 6 / 2 is 6 * 0 (1 / 2 becomes 0) and a division by 0 multiplies by the dtype's maximum
 * (1 / 0 is inf). A float tensor takes s as a tensor of its dtype. */
static bool scalar_is_affine(tl_binary_op op, const tl_tensor *t)
{
    return !tl_dtype_is_float(t->dtype) &&
           (op == TL_ADD || op == TL_SUB || op == TL_MUL || op == TL_DIV);
}

/* Both name the op in their errors ("mul: ...", "eq: ..."), as tl_binary and tl_cmp do. */
tl_tensor *tl_binary_scalar(tl_binary_op op, const tl_tensor *t, double s)
{
    if ((unsigned)op >= TL_BINARY_COUNT)
        return tl_fail(TL_ERR_ARG, "binary_scalar: invalid op %d", (int)op), NULL;
    const char *name = binary_names[0][op];
    if (tl_check_tensor(name, t) != TL_OK)
        return NULL;
    tl_tensor *out = NULL;
    if (scalar_is_affine(op, t)) {
        out = tl_affine(t, op == TL_MUL ? s : op == TL_DIV ? 1.0 / s : 1.0,
                        op == TL_ADD ? s : op == TL_SUB ? -s : 0.0);
    } else {
        tl_tensor *b = scalar_like(name, t, s);
        out = b ? binary(op, t, b, false) : NULL;
        tl_release(b);
    }
    return tl_within(name, out);
}

tl_tensor *tl_cmp_scalar(tl_cmp_op op, const tl_tensor *t, double s)
{
    if ((unsigned)op >= TL_CMP_COUNT)
        return tl_fail(TL_ERR_ARG, "cmp_scalar: invalid op %d", (int)op), NULL;
    const char *name = cmp_names[0][op];
    tl_tensor *b = scalar_like(name, t, s);
    tl_tensor *out = b ? cmp(op, t, b, false) : NULL;
    tl_release(b);
    return tl_within(name, out);
}

static tl_status where_kernel(const tl_backend_i *b, const tl_operand *dst, const tl_operand *in,
                              const void *ctx)
{
    (void)ctx;
    return b->where(dst, &in[0], &in[1], &in[2]);
}

/* candle's where_cond: cond, on_true and on_false of one shape. Three operands and no
 * broadcast_ variant, so a mismatch names all three (not lhs/rhs) and the way out. */
tl_tensor *tl_where_cond(const tl_tensor *cond, const tl_tensor *on_true, const tl_tensor *on_false)
{
    const char *op = "where_cond";
    char d[TL_DESC_STR], sc[TL_SHAPE_STR], st[TL_SHAPE_STR], sf[TL_SHAPE_STR];
    if (tl_check_tensor(op, cond) != TL_OK || tl_check_same(op, on_true, on_false) != TL_OK)
        return NULL;
    if (!tl_same_shape(&cond->layout, &on_true->layout) ||
        !tl_same_shape(&on_true->layout, &on_false->layout))
        return tl_fail(TL_ERR_SHAPE, "%s: shape mismatch, cond %s, on_true %s, on_false %s "
                       "(tl_broadcast_as them to one shape first)", op,
                       tl_shape_str(cond->layout.shape, cond->layout.ndim, sc),
                       tl_shape_str(on_true->layout.shape, on_true->layout.ndim, st),
                       tl_shape_str(on_false->layout.shape, on_false->layout.ndim, sf)), NULL;
    if (tl_dtype_is_float(cond->dtype))
        return tl_fail(TL_ERR_DTYPE, "%s: condition must be an integer dtype, got %s", op,
                       tl_describe(cond, d)), NULL;
    if (TL_NEED(op, on_true, where) != TL_OK)
        return NULL;
    if (cond->device != on_true->device)
        return tl_fail(TL_ERR_DEVICE, "%s: condition on %s, values on %s", op,
                       tl_device_name(cond->device), tl_device_name(on_true->device)), NULL;
    const tl_tensor *in[3] = {cond, on_true, on_false};
    return tl_run_elementwise(op, in, NULL, 3, cond->layout.shape, cond->layout.ndim,
                              on_true->dtype, where_kernel, NULL);
}
