// kernels.metal - every tensorlib Metal kernel, in Metal Shading Language.
//
// The build embeds kernels.h followed by this file into the library as one string
// (embed_msl.py); the backend compiles it with newLibraryWithSource on first use and caches
// one pipeline per (kernel name, function constants). Kernel names are "<family>_<dtype>"
// ("cast_<from>_<to>"); kernel_select.c produces exactly these names and a Linux test checks
// that each appears below as a host_name. The op within a family, contiguous-or-strided and
// the index/condition dtype are function constants, so the compiler folds the switches away.
//
// Half and bfloat values are computed in float, integers in 64 bits; results are stored the
// way the cpu backend stores them (integer results wrap, floats into integers saturate, NaN
// becomes 0). Indexing is 32-bit:
// layout_args.c refuses views whose element indices do not fit.

#ifndef TLK_KERNELS_H
#include "kernels.h"
#endif

#include <metal_stdlib>
using namespace metal;

constant uint FC_OP [[function_constant(TLK_FC_OP)]];
constant bool FC_CONTIGUOUS [[function_constant(TLK_FC_CONTIGUOUS)]];
constant uint FC_AUX [[function_constant(TLK_FC_AUX_DTYPE)]];

// bfloat needs MSL 3.1 (macOS 14); older compilers get every other kernel.
#if __METAL_VERSION__ >= 310
#define TLK_HAVE_BFLOAT 1
#endif

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

// Element index of logical (row-major) element i of layout l.
static inline uint strided_index(constant tlk_layout &l, uint i)
{
    uint off = l.offset;
    for (int d = int(l.ndim) - 1; d >= 0; d--) {
        uint s = l.shape[d];
        off += (i % s) * l.stride[d];
        i /= s;
    }
    return off;
}

static inline uint at(constant tlk_layout &l, uint i)
{
    return FC_CONTIGUOUS ? l.offset + i : strided_index(l, i);
}

// Buffers are bound untyped, so that every instantiation of a kernel template has one
// function type (the instantiation list below names it once per family); these type them.
template <typename T> static inline device const T *in(device const uchar *p)
{
    return (device const T *)p;
}
template <typename T> static inline device T *out(device uchar *p)
{
    return (device T *)p;
}

// The type arithmetic runs in (widen's result): float for the float dtypes, long for integers.
static inline float widen(float x) { return x; }
static inline float widen(half x) { return float(x); }
#ifdef TLK_HAVE_BFLOAT
static inline float widen(bfloat x) { return float(x); }
#endif
static inline long widen(uchar x) { return long(x); }
static inline long widen(uint x) { return long(x); }
static inline long widen(long x) { return x; }

template <typename T> struct acc_of { typedef long type; };
template <> struct acc_of<float> { typedef float type; };
template <> struct acc_of<half> { typedef float type; };
#ifdef TLK_HAVE_BFLOAT
template <> struct acc_of<bfloat> { typedef float type; };
#endif

// Back to a stored dtype as the cpu backend's tl_store does it: floats into integers truncate
// toward zero and saturate (i64 at INT64_MAX / INT64_MIN, Rust's `as`), NaN -> 0; integers
// into narrower integers keep the low bits (tl_store_i64), as candle and numpy wrap.

template <typename D> static inline D narrow(float x) { return D(x); }
template <> inline uchar narrow<uchar>(float x)
{
    return isnan(x) || x <= 0.0f ? uchar(0) : (x >= 255.0f ? uchar(255) : uchar(x));
}
template <> inline uint narrow<uint>(float x)
{
    return isnan(x) || x <= 0.0f ? 0u : (x >= 4294967296.0f ? 0xffffffffu : uint(x));
}
template <> inline long narrow<long>(float x)
{
    if (isnan(x))
        return 0;
    if (x >= 9223372036854775808.0f)
        return 0x7fffffffffffffffl;
    return x <= -9223372036854775808.0f ? long(0x8000000000000000ul) : long(x);
}

template <typename D> static inline D narrow(long x) { return D(float(x)); }
template <> inline uchar narrow<uchar>(long x) { return uchar(ulong(x)); }
template <> inline uint narrow<uint>(long x) { return uint(ulong(x)); }
template <> inline long narrow<long>(long x) { return x; }

// An index or condition operand of dtype FC_AUX, read as a signed 64-bit value.
static inline long read_aux(device const uchar *p, uint i)
{
    switch (FC_AUX) {
    case TLK_AUX_U8: return long(p[i]);
    case TLK_AUX_U32: return long(((device const uint *)p)[i]);
    default: return ((device const long *)p)[i];
    }
}

// ---------------------------------------------------------------------------------------
// fill, copy
// ---------------------------------------------------------------------------------------

template <typename T> static inline T fill_value(constant tlk_fill_args &a)
{
    long v = long((ulong(a.ivalue_hi) << 32) | ulong(a.ivalue_lo));
    return T(v);
}
template <> inline float fill_value<float>(constant tlk_fill_args &a) { return a.fvalue; }
template <> inline half fill_value<half>(constant tlk_fill_args &a) { return half(a.fvalue); }
#ifdef TLK_HAVE_BFLOAT
template <> inline bfloat fill_value<bfloat>(constant tlk_fill_args &a) { return bfloat(a.fvalue); }
#endif

template <typename T>
kernel void fill_kernel(constant tlk_fill_args &args [[buffer(0)]],
                        device uchar *dst_ [[buffer(1)]],
                        uint i [[thread_position_in_grid]])
{
    if (i < args.n)
        out<T>(dst_)[at(args.dst, i)] = fill_value<T>(args);
}

template <typename T>
kernel void copy_kernel(constant tlk_copy_args &args [[buffer(0)]],
                        device const uchar *src_ [[buffer(1)]],
                        device uchar *dst_ [[buffer(2)]],
                        uint i [[thread_position_in_grid]])
{
    if (i < args.n)
        out<T>(dst_)[at(args.dst, i)] = in<T>(src_)[at(args.src, i)];
}

// ---------------------------------------------------------------------------------------
// unary, scalar-parameter, cast: contiguous dst[i] <- f(src at logical i)
// ---------------------------------------------------------------------------------------

// erf is not in the Metal standard library: Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7),
// which gives erfc(|x|) without forming 1 - erf (gelu_erf's tail needs it small but exact).
static inline float erfc_approx(float x)
{
    float t = 1.0f / (1.0f + 0.3275911f * fabs(x));
    float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f +
                 t * (-1.453152027f + t * 1.061405429f))));
    float c = poly * exp(-x * x);
    return x < 0.0f ? 2.0f - c : c;
}

static inline float erf_approx(float x)
{
    return 1.0f - erfc_approx(x);
}

static inline float unary_op(float x)
{
    switch (FC_OP) {
    case TLK_UNARY_EXP: return exp(x);
    case TLK_UNARY_LOG: return log(x);
    case TLK_UNARY_SIN: return sin(x);
    case TLK_UNARY_COS: return cos(x);
    case TLK_UNARY_TANH: return precise::tanh(x); // fast tanh gives NaN for large |x|
    case TLK_UNARY_ABS: return fabs(x);
    case TLK_UNARY_NEG: return -x;
    case TLK_UNARY_RECIP: return 1.0f / x;
    case TLK_UNARY_SQR: return x * x;
    case TLK_UNARY_SQRT: return sqrt(x);
    case TLK_UNARY_RELU: return max(x, 0.0f);
    case TLK_UNARY_GELU: // 0.5 * (1 + tanh(u)) is 1 / (1 + exp(-2u)), no cancellation for x < 0
        return x / (1.0f + exp(-1.5957691216f * (x + 0.044715f * x * x * x)));
    case TLK_UNARY_GELU_ERF: return 0.5f * x * erfc_approx(x * -0.7071067812f);
    case TLK_UNARY_SILU: return x / (1.0f + exp(-x));
    case TLK_UNARY_FLOOR: return floor(x);
    case TLK_UNARY_CEIL: return ceil(x);
    case TLK_UNARY_ROUND: return round(x);
    case TLK_UNARY_SIGMOID: return 1.0f / (1.0f + exp(-x));
    case TLK_UNARY_ERF: return erf_approx(x);
    default: return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); // TLK_UNARY_SIGN
    }
}

template <typename T>
kernel void unary_kernel(constant tlk_map_args &args [[buffer(0)]],
                         device const uchar *src_ [[buffer(1)]],
                         device uchar *dst_ [[buffer(2)]],
                         uint i [[thread_position_in_grid]])
{
    if (i < args.n)
        out<T>(dst_)[i] = T(unary_op(float(in<T>(src_)[at(args.src, i)])));
}

static inline float scalar_op(float x, float p0, float p1)
{
    switch (FC_OP) {
    case TLK_SCALAR_AFFINE: return x * p0 + p1;
    case TLK_SCALAR_POWF: return precise::pow(x, p0); // fast pow is NaN for x < 0
    case TLK_SCALAR_CLAMP: return min(max(x, p0), p1);
    default: return x >= 0.0f ? x : p0 * (exp(x) - 1.0f); // TLK_SCALAR_ELU
    }
}

template <typename T>
kernel void scalar_kernel(constant tlk_map_args &args [[buffer(0)]],
                          device const uchar *src_ [[buffer(1)]],
                          device uchar *dst_ [[buffer(2)]],
                          uint i [[thread_position_in_grid]])
{
    if (i < args.n)
        out<T>(dst_)[i] = T(scalar_op(float(in<T>(src_)[at(args.src, i)]), args.p0, args.p1));
}

template <typename S, typename D>
kernel void cast_kernel(constant tlk_map_args &args [[buffer(0)]],
                        device const uchar *src_ [[buffer(1)]],
                        device uchar *dst_ [[buffer(2)]],
                        uint i [[thread_position_in_grid]])
{
    if (i < args.n)
        out<D>(dst_)[i] = narrow<D>(widen(in<S>(src_)[at(args.src, i)]));
}

// ---------------------------------------------------------------------------------------
// binary, cmp, where_cond: operands pre-broadcast to the output shape
// ---------------------------------------------------------------------------------------

template <typename A> static inline A binary_op(A x, A y)
{
    switch (FC_OP) {
    case TLK_BINARY_ADD: return x + y;
    case TLK_BINARY_SUB: return x - y;
    case TLK_BINARY_MUL: return x * y;
    case TLK_BINARY_DIV: return x / y;
    case TLK_BINARY_MAXIMUM: return x > y ? x : y;
    default: return x < y ? x : y; // TLK_BINARY_MINIMUM
    }
}

template <typename A> static inline bool cmp_op(A x, A y)
{
    switch (FC_OP) {
    case TLK_CMP_EQ: return x == y;
    case TLK_CMP_NE: return x != y;
    case TLK_CMP_LT: return x < y;
    case TLK_CMP_LE: return x <= y;
    case TLK_CMP_GT: return x > y;
    default: return x >= y; // TLK_CMP_GE
    }
}

template <typename T>
kernel void binary_kernel(constant tlk_binary_args &args [[buffer(0)]],
                          device const uchar *a_ [[buffer(1)]],
                          device const uchar *b_ [[buffer(2)]],
                          device uchar *dst_ [[buffer(3)]],
                          uint i [[thread_position_in_grid]])
{
    typedef typename acc_of<T>::type A;
    if (i < args.n)
        out<T>(dst_)[i] = narrow<T>(binary_op<A>(widen(in<T>(a_)[at(args.a, i)]), widen(in<T>(b_)[at(args.b, i)])));
}

template <typename T>
kernel void cmp_kernel(constant tlk_binary_args &args [[buffer(0)]],
                       device const uchar *a_ [[buffer(1)]],
                       device const uchar *b_ [[buffer(2)]],
                       device uchar *dst_ [[buffer(3)]],
                       uint i [[thread_position_in_grid]])
{
    typedef typename acc_of<T>::type A;
    if (i < args.n)
        dst_[i] = cmp_op<A>(widen(in<T>(a_)[at(args.a, i)]), widen(in<T>(b_)[at(args.b, i)])) ? 1 : 0;
}

template <typename T>
kernel void where_kernel(constant tlk_where_args &args [[buffer(0)]],
                         device const uchar *cond [[buffer(1)]],
                         device const uchar *on_true_ [[buffer(2)]],
                         device const uchar *on_false_ [[buffer(3)]],
                         device uchar *dst_ [[buffer(4)]],
                         uint i [[thread_position_in_grid]])
{
    if (i >= args.n)
        return;
    bool c = read_aux(cond, at(args.cond, i)) != 0;
    out<T>(dst_)[i] = c ? in<T>(on_true_)[at(args.on_true, i)] : in<T>(on_false_)[at(args.on_false, i)];
}

// ---------------------------------------------------------------------------------------
// reduce: one threadgroup per output element, a tree over threadgroup memory
// ---------------------------------------------------------------------------------------

template <typename A> struct reduce_limits;
template <> struct reduce_limits<float> {
    static float lowest() { return -INFINITY; }
    static float highest() { return INFINITY; }
};
template <> struct reduce_limits<long> {
    static long lowest() { return (long)0x8000000000000000ul; }
    static long highest() { return 0x7fffffffffffffffl; }
};

// Folds (v, vi) into (best, bi). Ties keep the lower index, like a sequential scan.
template <typename A> static inline void reduce_step(thread A &best, thread uint &bi, A v, uint vi)
{
    bool take;
    switch (FC_OP) {
    case TLK_REDUCE_SUM:
    case TLK_REDUCE_MEAN: best += v; return;
    case TLK_REDUCE_MAX:
    case TLK_REDUCE_ARGMAX: take = v > best || (v == best && vi < bi); break;
    default: take = v < best || (v == best && vi < bi); break;
    }
    if (take) {
        best = v;
        bi = vi;
    }
}

template <typename A> static inline A reduce_init()
{
    switch (FC_OP) {
    case TLK_REDUCE_MAX:
    case TLK_REDUCE_ARGMAX: return reduce_limits<A>::lowest();
    case TLK_REDUCE_MIN:
    case TLK_REDUCE_ARGMIN: return reduce_limits<A>::highest();
    default: return A(0);
    }
}

template <typename T>
kernel void reduce_kernel(constant tlk_reduce_args &args [[buffer(0)]],
                          device const uchar *src_ [[buffer(1)]],
                          device uchar *dst_ [[buffer(2)]],
                          uint row [[threadgroup_position_in_grid]],
                          uint tid [[thread_position_in_threadgroup]],
                          uint threads [[threads_per_threadgroup]])
{
    typedef typename acc_of<T>::type A;
    threadgroup A vals[TLK_ROW_THREADS_MAX];
    threadgroup uint idx[TLK_ROW_THREADS_MAX];
    device const T *src = in<T>(src_);
    uint base = strided_index(args.kept, row);
    A best = reduce_init<A>();
    uint bi = 0xffffffffu;
    for (uint j = tid; j < args.reduced_n; j += threads)
        reduce_step<A>(best, bi, widen(src[base + strided_index(args.reduced, j)]), j);
    vals[tid] = best;
    idx[tid] = bi;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = threads / 2; s > 0; s /= 2) {
        if (tid < s) {
            A b = vals[tid];
            uint i = idx[tid];
            reduce_step<A>(b, i, vals[tid + s], idx[tid + s]);
            vals[tid] = b;
            idx[tid] = i;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (tid != 0)
        return;
    if (FC_OP == TLK_REDUCE_ARGMAX || FC_OP == TLK_REDUCE_ARGMIN)
        out<uint>(dst_)[row] = idx[0];
    else if (FC_OP == TLK_REDUCE_MEAN) // integer means divide as integers, like the cpu's
        out<T>(dst_)[row] = narrow<T>(args.reduced_n ? vals[0] / A(args.reduced_n) : A(0));
    else
        out<T>(dst_)[row] = narrow<T>(vals[0]);
}

// ---------------------------------------------------------------------------------------
// softmax / log_softmax along one dim: one threadgroup per row
// ---------------------------------------------------------------------------------------

// Tree-combines every thread's v (max or sum) through shared; all threads get the result.
static inline float row_combine(float v, bool take_max, threadgroup float *shared, uint tid, uint threads)
{
    shared[tid] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = threads / 2; s > 0; s /= 2) {
        if (tid < s)
            shared[tid] = take_max ? max(shared[tid], shared[tid + s]) : shared[tid] + shared[tid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    float r = shared[0];
    threadgroup_barrier(mem_flags::mem_threadgroup); // shared is reused by the next combine
    return r;
}

template <typename T>
kernel void softmax_kernel(constant tlk_softmax_args &args [[buffer(0)]],
                           device const uchar *src_ [[buffer(1)]],
                           device uchar *dst_ [[buffer(2)]],
                           uint row [[threadgroup_position_in_grid]],
                           uint tid [[thread_position_in_threadgroup]],
                           uint threads [[threads_per_threadgroup]])
{
    threadgroup float shared[TLK_ROW_THREADS_MAX];
    device const T *src = in<T>(src_) + strided_index(args.kept_src, row);
    device T *dst = out<T>(dst_) + strided_index(args.kept_dst, row);
    float m = -INFINITY;
    for (uint j = tid; j < args.len; j += threads)
        m = max(m, float(src[j * args.src_stride]));
    m = row_combine(m, true, shared, tid, threads);
    float sum = 0.0f;
    for (uint j = tid; j < args.len; j += threads)
        sum += exp(float(src[j * args.src_stride]) - m);
    sum = row_combine(sum, false, shared, tid, threads);
    for (uint j = tid; j < args.len; j += threads) {
        float x = float(src[j * args.src_stride]) - m;
        dst[j * args.dst_stride] = T(FC_OP == TLK_LOG_SOFTMAX ? x - log(sum) : exp(x) / sum);
    }
}

// ---------------------------------------------------------------------------------------
// matmul: TILE x TILE output tile per threadgroup, k walked in TILE steps through
// threadgroup memory; batch in z
// ---------------------------------------------------------------------------------------

template <typename T>
kernel void matmul_kernel(constant tlk_matmul_args &args [[buffer(0)]],
                          device const uchar *a_ [[buffer(1)]],
                          device const uchar *b_ [[buffer(2)]],
                          device uchar *dst_ [[buffer(3)]],
                          uint3 group [[threadgroup_position_in_grid]],
                          uint3 local [[thread_position_in_threadgroup]])
{
    threadgroup float ta[TLK_MATMUL_TILE][TLK_MATMUL_TILE];
    threadgroup float tb[TLK_MATMUL_TILE][TLK_MATMUL_TILE];
    device const T *a = in<T>(a_) + strided_index(args.a_batch, group.z);
    device const T *b = in<T>(b_) + strided_index(args.b_batch, group.z);
    uint row = group.y * TLK_MATMUL_TILE + local.y, col = group.x * TLK_MATMUL_TILE + local.x;
    float acc = 0.0f;
    for (uint t = 0; t < args.k; t += TLK_MATMUL_TILE) {
        uint ka = t + local.x, kb = t + local.y;
        ta[local.y][local.x] = row < args.m && ka < args.k
            ? float(a[row * args.a_row_stride + ka * args.a_col_stride]) : 0.0f;
        tb[local.y][local.x] = kb < args.k && col < args.n
            ? float(b[kb * args.b_row_stride + col * args.b_col_stride]) : 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint j = 0; j < TLK_MATMUL_TILE; j++)
            acc += ta[local.y][j] * tb[j][local.x];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (row < args.m && col < args.n)
        out<T>(dst_)[(group.z * args.m + row) * args.n + col] = T(acc);
}

// ---------------------------------------------------------------------------------------
// index_select, gather: contiguous dst; an out-of-range index gives 0
// ---------------------------------------------------------------------------------------

// Element index in src of output element i whose coordinate along dim is replaced by id.
static inline uint index_src(constant tlk_index_args &a, uint i, uint id)
{
    uint off = a.src.offset;
    for (int d = int(a.out.ndim) - 1; d >= 0; d--) {
        uint c = i % a.out.shape[d];
        i /= a.out.shape[d];
        off += (uint(d) == a.dim ? id : c) * a.src.stride[d];
    }
    return off;
}

template <typename T>
static inline void index_store(constant tlk_index_args &a, device const uchar *src_, device uchar *dst_,
                               uint i, long id)
{
    out<T>(dst_)[i] = id >= 0 && id < long(a.dim_size) ? in<T>(src_)[index_src(a, i, uint(id))] : T(0);
}

template <typename T>
kernel void index_select_kernel(constant tlk_index_args &args [[buffer(0)]],
                                device const uchar *src_ [[buffer(1)]],
                                device const uchar *ids [[buffer(2)]],
                                device uchar *dst_ [[buffer(3)]],
                                uint i [[thread_position_in_grid]])
{
    if (i >= args.n)
        return;
    uint along = (i / args.out.stride[args.dim]) % args.out.shape[args.dim];
    index_store<T>(args, src_, dst_, i, read_aux(ids, strided_index(args.ids, along)));
}

template <typename T>
kernel void gather_kernel(constant tlk_index_args &args [[buffer(0)]],
                          device const uchar *src_ [[buffer(1)]],
                          device const uchar *ids [[buffer(2)]],
                          device uchar *dst_ [[buffer(3)]],
                          uint i [[thread_position_in_grid]])
{
    if (i < args.n)
        index_store<T>(args, src_, dst_, i, read_aux(ids, strided_index(args.ids, i)));
}

// ---------------------------------------------------------------------------------------
// Instantiations: the host_name of each is what kernel_select.c asks for.
// ---------------------------------------------------------------------------------------

typedef decltype(fill_kernel<float>) fill_t;
template [[host_name("fill_f32")]] kernel fill_t fill_kernel<float>;
template [[host_name("fill_f16")]] kernel fill_t fill_kernel<half>;
template [[host_name("fill_u32")]] kernel fill_t fill_kernel<uint>;
template [[host_name("fill_u8")]] kernel fill_t fill_kernel<uchar>;
template [[host_name("fill_i64")]] kernel fill_t fill_kernel<long>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("fill_bf16")]] kernel fill_t fill_kernel<bfloat>;
#endif

typedef decltype(copy_kernel<float>) copy_t;
template [[host_name("copy_f32")]] kernel copy_t copy_kernel<float>;
template [[host_name("copy_f16")]] kernel copy_t copy_kernel<half>;
template [[host_name("copy_u32")]] kernel copy_t copy_kernel<uint>;
template [[host_name("copy_u8")]] kernel copy_t copy_kernel<uchar>;
template [[host_name("copy_i64")]] kernel copy_t copy_kernel<long>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("copy_bf16")]] kernel copy_t copy_kernel<bfloat>;
#endif

typedef decltype(unary_kernel<float>) unary_t;
template [[host_name("unary_f32")]] kernel unary_t unary_kernel<float>;
template [[host_name("unary_f16")]] kernel unary_t unary_kernel<half>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("unary_bf16")]] kernel unary_t unary_kernel<bfloat>;
#endif

typedef decltype(scalar_kernel<float>) scalar_t;
template [[host_name("scalar_f32")]] kernel scalar_t scalar_kernel<float>;
template [[host_name("scalar_f16")]] kernel scalar_t scalar_kernel<half>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("scalar_bf16")]] kernel scalar_t scalar_kernel<bfloat>;
#endif

typedef decltype(binary_kernel<float>) binary_t;
template [[host_name("binary_f32")]] kernel binary_t binary_kernel<float>;
template [[host_name("binary_f16")]] kernel binary_t binary_kernel<half>;
template [[host_name("binary_u32")]] kernel binary_t binary_kernel<uint>;
template [[host_name("binary_u8")]] kernel binary_t binary_kernel<uchar>;
template [[host_name("binary_i64")]] kernel binary_t binary_kernel<long>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("binary_bf16")]] kernel binary_t binary_kernel<bfloat>;
#endif

typedef decltype(cmp_kernel<float>) cmp_t;
template [[host_name("cmp_f32")]] kernel cmp_t cmp_kernel<float>;
template [[host_name("cmp_f16")]] kernel cmp_t cmp_kernel<half>;
template [[host_name("cmp_u32")]] kernel cmp_t cmp_kernel<uint>;
template [[host_name("cmp_u8")]] kernel cmp_t cmp_kernel<uchar>;
template [[host_name("cmp_i64")]] kernel cmp_t cmp_kernel<long>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("cmp_bf16")]] kernel cmp_t cmp_kernel<bfloat>;
#endif

typedef decltype(where_kernel<float>) where_t;
template [[host_name("where_f32")]] kernel where_t where_kernel<float>;
template [[host_name("where_f16")]] kernel where_t where_kernel<half>;
template [[host_name("where_u32")]] kernel where_t where_kernel<uint>;
template [[host_name("where_u8")]] kernel where_t where_kernel<uchar>;
template [[host_name("where_i64")]] kernel where_t where_kernel<long>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("where_bf16")]] kernel where_t where_kernel<bfloat>;
#endif

typedef decltype(reduce_kernel<float>) reduce_t;
template [[host_name("reduce_f32")]] kernel reduce_t reduce_kernel<float>;
template [[host_name("reduce_f16")]] kernel reduce_t reduce_kernel<half>;
template [[host_name("reduce_u32")]] kernel reduce_t reduce_kernel<uint>;
template [[host_name("reduce_u8")]] kernel reduce_t reduce_kernel<uchar>;
template [[host_name("reduce_i64")]] kernel reduce_t reduce_kernel<long>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("reduce_bf16")]] kernel reduce_t reduce_kernel<bfloat>;
#endif

typedef decltype(matmul_kernel<float>) matmul_t;
template [[host_name("matmul_f32")]] kernel matmul_t matmul_kernel<float>;
template [[host_name("matmul_f16")]] kernel matmul_t matmul_kernel<half>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("matmul_bf16")]] kernel matmul_t matmul_kernel<bfloat>;
#endif

typedef decltype(index_select_kernel<float>) index_select_t;
template [[host_name("index_select_f32")]] kernel index_select_t index_select_kernel<float>;
template [[host_name("index_select_f16")]] kernel index_select_t index_select_kernel<half>;
template [[host_name("index_select_u32")]] kernel index_select_t index_select_kernel<uint>;
template [[host_name("index_select_u8")]] kernel index_select_t index_select_kernel<uchar>;
template [[host_name("index_select_i64")]] kernel index_select_t index_select_kernel<long>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("index_select_bf16")]] kernel index_select_t index_select_kernel<bfloat>;
#endif

typedef decltype(gather_kernel<float>) gather_t;
template [[host_name("gather_f32")]] kernel gather_t gather_kernel<float>;
template [[host_name("gather_f16")]] kernel gather_t gather_kernel<half>;
template [[host_name("gather_u32")]] kernel gather_t gather_kernel<uint>;
template [[host_name("gather_u8")]] kernel gather_t gather_kernel<uchar>;
template [[host_name("gather_i64")]] kernel gather_t gather_kernel<long>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("gather_bf16")]] kernel gather_t gather_kernel<bfloat>;
#endif

typedef decltype(softmax_kernel<float>) softmax_t;
template [[host_name("softmax_f32")]] kernel softmax_t softmax_kernel<float>;
template [[host_name("softmax_f16")]] kernel softmax_t softmax_kernel<half>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("softmax_bf16")]] kernel softmax_t softmax_kernel<bfloat>;
#endif

typedef decltype(cast_kernel<float, half>) cast_t;
template [[host_name("cast_f32_f16")]] kernel cast_t cast_kernel<float, half>;
template [[host_name("cast_f32_u32")]] kernel cast_t cast_kernel<float, uint>;
template [[host_name("cast_f32_u8")]] kernel cast_t cast_kernel<float, uchar>;
template [[host_name("cast_f32_i64")]] kernel cast_t cast_kernel<float, long>;
template [[host_name("cast_f16_f32")]] kernel cast_t cast_kernel<half, float>;
template [[host_name("cast_f16_u32")]] kernel cast_t cast_kernel<half, uint>;
template [[host_name("cast_f16_u8")]] kernel cast_t cast_kernel<half, uchar>;
template [[host_name("cast_f16_i64")]] kernel cast_t cast_kernel<half, long>;
template [[host_name("cast_u32_f32")]] kernel cast_t cast_kernel<uint, float>;
template [[host_name("cast_u32_f16")]] kernel cast_t cast_kernel<uint, half>;
template [[host_name("cast_u32_u8")]] kernel cast_t cast_kernel<uint, uchar>;
template [[host_name("cast_u32_i64")]] kernel cast_t cast_kernel<uint, long>;
template [[host_name("cast_u8_f32")]] kernel cast_t cast_kernel<uchar, float>;
template [[host_name("cast_u8_f16")]] kernel cast_t cast_kernel<uchar, half>;
template [[host_name("cast_u8_u32")]] kernel cast_t cast_kernel<uchar, uint>;
template [[host_name("cast_u8_i64")]] kernel cast_t cast_kernel<uchar, long>;
template [[host_name("cast_i64_f32")]] kernel cast_t cast_kernel<long, float>;
template [[host_name("cast_i64_f16")]] kernel cast_t cast_kernel<long, half>;
template [[host_name("cast_i64_u32")]] kernel cast_t cast_kernel<long, uint>;
template [[host_name("cast_i64_u8")]] kernel cast_t cast_kernel<long, uchar>;
#ifdef TLK_HAVE_BFLOAT
template [[host_name("cast_f32_bf16")]] kernel cast_t cast_kernel<float, bfloat>;
template [[host_name("cast_f16_bf16")]] kernel cast_t cast_kernel<half, bfloat>;
template [[host_name("cast_bf16_f32")]] kernel cast_t cast_kernel<bfloat, float>;
template [[host_name("cast_bf16_f16")]] kernel cast_t cast_kernel<bfloat, half>;
template [[host_name("cast_bf16_u32")]] kernel cast_t cast_kernel<bfloat, uint>;
template [[host_name("cast_bf16_u8")]] kernel cast_t cast_kernel<bfloat, uchar>;
template [[host_name("cast_bf16_i64")]] kernel cast_t cast_kernel<bfloat, long>;
template [[host_name("cast_u32_bf16")]] kernel cast_t cast_kernel<uint, bfloat>;
template [[host_name("cast_u8_bf16")]] kernel cast_t cast_kernel<uchar, bfloat>;
template [[host_name("cast_i64_bf16")]] kernel cast_t cast_kernel<long, bfloat>;
#endif
