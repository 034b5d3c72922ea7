/* test_hal_dispatch.c — the HAL dispatch layer (hal/hal.c, hal/op_check.c) on the simulator.
 *
 * For every op kind a valid op is built (tensors point into one static array: checks never
 * dereference them) and must pass rig_hal_op_check; then each case of a table breaks one
 * argument (data missing, wrong dtype, wrong dimension, wrong rank, padded innermost
 * stride, bad scalar) and rig_hal_op must return the expected status with a message naming
 * the op and the argument, and issue nothing (the device's op count stays 0). Also: bad
 * handles and handles of another device, out-of-range and misaligned copies and fills,
 * copies / records / synchronisation during capture (RIG_E_STATE), capture state errors,
 * event errors, allocation and open arguments, and collectives over a single-rank comm
 * (all-reduce is the identity, all-gather a copy). One rank of a group across processes: out
 * of range (more than one device, a rank outside the group, a group over RIG_DEVICES_MAX) is
 * RIG_E_RANGE, and without MPI initialised the simulator refuses it (RIG_E_STATE, or
 * RIG_E_UNSUPPORTED in a build without OpenMPI) instead of aborting in an MPI call. The real
 * backends' wall-clock wait never returns before its time. The GEMM's fused forms: each of
 * their rules broken once (test_gemm_fused_forms). An issue trace counts by kind what
 * a device issues (not what a capture records, nor a failed check).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/sim.h"
#include "tests/support/test_support.h"

enum { T = 4, H = 8, HQ = 4, HK = 2, D = 4, S = 16, ROWS = 2, L = 8, R = 2, V = 10, I = 6 };

static uint64_t rig__storage[8192]; /* what every tensor of the op table points at */
static uint64_t rig__gemm_out[8192]; /* a GEMM's out, which must not overlap its inputs */
static uint64_t rig__gemm_operand[8192]; /* a fused GEMM's operand: off a and out */
static struct rig_comm *rig__comm;  /* a single-rank comm on the test device */

static struct rig_tensor rig__t(enum rig_dtype dtype, int32_t ndim, int64_t n0, int64_t n1,
                                int64_t n2)
{
    int64_t shape[3] = {n0, n1, n2};
    return rig_tensor_make(rig__storage, dtype, ndim, shape);
}

#define BF16 RIG_DTYPE_BF16
#define F32  RIG_DTYPE_F32
#define I32  RIG_DTYPE_I32

static void rig__valid_attention(struct rig_op *op)
{
    if (op->kind == RIG_OP_ATTENTION_PREFILL) {
        struct rig_op_attention_prefill *p = &op->u.attention_prefill;
        *p = (struct rig_op_attention_prefill){
            rig__t(BF16, 3, T, HQ, D),   rig__t(BF16, 3, T, HQ, D),  rig__t(BF16, 3, S, HK, D),
            rig__t(BF16, 3, S, HK, D),   rig__t(I32, 2, ROWS, L, 1), rig__t(I32, 1, R, 1, 1),
            rig__t(I32, 1, R + 1, 1, 1), rig__t(I32, 1, R, 1, 1),    0.5f};
    } else {
        struct rig_op_attention_decode d = {rig__t(BF16, 3, R, HQ, D),  rig__t(BF16, 3, R, HQ, D),
                                            rig__t(BF16, 3, S, HK, D),  rig__t(BF16, 3, S, HK, D),
                                            rig__t(I32, 2, ROWS, L, 1), rig__t(I32, 1, R, 1, 1),
                                            rig__t(I32, 1, R, 1, 1),    0.5f};
        if (op->kind == RIG_OP_ATTENTION_DECODE) {
            op->u.attention_decode = d;
            return;
        }
        /* attention_decode_store: one token per request, q and the caches shared */
        op->u.attention_decode_store.attend = d;
        op->u.attention_decode_store.store = (struct rig_op_qk_norm_rope_store){
            d.q,         rig__t(BF16, 3, R, HK, D), rig__t(BF16, 3, R, HK, D),
            d.k_cache,   d.v_cache,                 rig__t(BF16, 1, D, 1, 1),
            rig__t(BF16, 1, D, 1, 1),               rig__t(I32, 1, R, 1, 1),
            rig__t(I32, 1, R, 1, 1),                1e-6f,
            {.theta = 10000.0f}};
    }
}

static void rig__valid_layer_ops(struct rig_op *op)
{
    struct rig_tensor th = rig__t(BF16, 2, T, H, 1), w = rig__t(BF16, 1, H, 1, 1);
    switch (op->kind) {
    case RIG_OP_EMBEDDING:
        op->u.embedding =
            (struct rig_op_embedding){th, rig__t(BF16, 2, V, H, 1), rig__t(I32, 1, T, 1, 1), 0};
        break;
    case RIG_OP_RMS_NORM: op->u.rms_norm = (struct rig_op_rms_norm){th, th, w, 1e-6f}; break;
    case RIG_OP_ADD_RMS_NORM:
        op->u.add_rms_norm = (struct rig_op_add_rms_norm){th, th, th, w, 1e-6f};
        break;
    case RIG_OP_GEMM:
        op->u.gemm = (struct rig_op_gemm){
            .out = rig_tensor_make(rig__gemm_out, BF16, 2, (int64_t[3]){T, V, 1}),
            .a = th, .b = rig__t(BF16, 2, V, H, 1), .bias = rig_tensor_none()};
        break;
    case RIG_OP_HEAD_RMS_NORM:
        op->u.head_rms_norm = (struct rig_op_head_rms_norm){rig__t(BF16, 3, T, HQ, D),
                                                            rig__t(BF16, 1, D, 1, 1), 1e-6f};
        break;
    case RIG_OP_ROPE:
        op->u.rope = (struct rig_op_rope){rig__t(BF16, 3, T, HQ, D),
                                          rig__t(BF16, 3, T, HK, D),
                                          rig__t(I32, 1, T, 1, 1),
                                          {.theta = 10000.0f}};
        break;
    case RIG_OP_STORE_KV:
        op->u.store_kv = (struct rig_op_store_kv){
            rig__t(BF16, 3, S, HK, D), rig__t(BF16, 3, S, HK, D), rig__t(BF16, 3, T, HK, D),
            rig__t(BF16, 3, T, HK, D), rig__t(I32, 1, T, 1, 1)};
        break;
    case RIG_OP_QK_NORM_ROPE_STORE:
        op->u.qk_norm_rope_store =
            (struct rig_op_qk_norm_rope_store){rig__t(BF16, 3, T, HQ, D), rig__t(BF16, 3, T, HK, D),
                                               rig__t(BF16, 3, T, HK, D), rig__t(BF16, 3, S, HK, D),
                                               rig__t(BF16, 3, S, HK, D), rig__t(BF16, 1, D, 1, 1),
                                               rig__t(BF16, 1, D, 1, 1),  rig__t(I32, 1, T, 1, 1),
                                               rig__t(I32, 1, T, 1, 1),   1e-6f,
                                               {.theta = 10000.0f}};
        break;
    case RIG_OP_SILU_MUL:
        op->u.silu_mul =
            (struct rig_op_silu_mul){rig__t(BF16, 2, T, I, 1), rig__t(BF16, 2, T, 2 * I, 1)};
        break;
    default: rig__valid_attention(op); break;
    }
}

/* A valid op of `kind`. */
static struct rig_op rig__valid(enum rig_op_kind kind)
{
    struct rig_op op = {.kind = kind};
    struct rig_tensor r32 = rig__t(I32, 1, R, 1, 1), rf = rig__t(F32, 1, R, 1, 1);
    switch (kind) {
    case RIG_OP_GATHER_ROWS:
        op.u.gather_rows =
            (struct rig_op_gather_rows){rig__t(BF16, 2, R, H, 1), rig__t(BF16, 2, T, H, 1), r32};
        break;
    case RIG_OP_INDEX_GATHER:
        op.u.index_gather = (struct rig_op_index_gather){r32, rig__t(I32, 1, 64, 1, 1), r32};
        break;
    case RIG_OP_INDEX_SCATTER:
        op.u.index_scatter = (struct rig_op_index_scatter){rig__t(I32, 1, 64, 1, 1), r32, r32};
        break;
    case RIG_OP_SAMPLE:
        op.u.sample = (struct rig_op_sample){r32, rig__t(F32, 2, R, V, 1),           rf, r32,
                                             rf,  rig__t(RIG_DTYPE_I64, 1, R, 1, 1), r32, rf,
                                             r32};
        break;
    case RIG_OP_PENALIZE:
        op.u.penalize = (struct rig_op_penalize){rig__t(F32, 2, R, V, 1), rig__t(I32, 2, R, V, 1),
                                                 rig__t(I32, 2, ROWS, L, 1), r32, r32, r32, rf,
                                                 rf, rf};
        break;
    case RIG_OP_LOGPROBS:
        op.u.logprobs = (struct rig_op_logprobs){rf, rig__t(I32, 2, R, 3, 1),
                                                 rig__t(F32, 2, R, 3, 1), rig__t(F32, 2, R, V, 1),
                                                 rf, r32};
        break;
    case RIG_OP_COPY:
        op.u.copy = (struct rig_op_copy){rig__t(F32, 2, T, H, 1), rig__t(BF16, 2, T, H, 1)};
        break;
    case RIG_OP_ALL_REDUCE:
        op.u.all_reduce = (struct rig_op_all_reduce){rig__t(BF16, 2, T, H, 1), rig__comm};
        break;
    case RIG_OP_ALL_GATHER:
        op.u.all_gather = (struct rig_op_all_gather){rig__t(BF16, 3, 1, T, H),
                                                     rig__t(BF16, 2, T, H, 1), rig__comm};
        break;
    default: rig__valid_layer_ops(&op); break;
    }
    return op;
}

/* How a case breaks its tensor. */
enum rig__break {
    B_NULL,   /* data missing */
    B_DTYPE,  /* u8 (or i32 where u8 would trip an earlier check) */
    B_DIM0,   /* shape[0] + 1 */
    B_DIM1,   /* shape[1] + 1 */
    B_DIM2,   /* shape[2] + 1 */
    B_NDIM,   /* one more dimension */
    B_STRIDE, /* innermost stride 2 */
    B_SCALAR, /* a scalar argument, broken by rig__break_scalar */
};

struct rig__case {
    enum rig_op_kind kind;
    size_t offset; /* of the tensor within struct rig_op */
    enum rig__break how;
    enum rig_status status;
    const char *message; /* exact message expected in the stream's error slot */
};

#define AT(field) offsetof(struct rig_op, u.field)
#define K(name)   RIG_OP_##name

static const struct rig__case rig__cases[] = {
    {K(EMBEDDING), AT(embedding.out), B_NULL, RIG_E_INVALID, "embedding: out: missing data"},
    {K(EMBEDDING), AT(embedding.table), B_DTYPE, RIG_E_DTYPE,
     "embedding: table: is u8, expected bf16"},
    {K(EMBEDDING), AT(embedding.ids), B_DIM0, RIG_E_SHAPE,
     "embedding: ids: dim 0 is 5, expected 4"},
    {K(EMBEDDING), AT(embedding.table), B_DIM1, RIG_E_SHAPE,
     "embedding: table: dim 1 is 9, expected 8"},
    {K(EMBEDDING), AT(embedding.ids), B_NDIM, RIG_E_SHAPE,
     "embedding: ids: has 2 dims, expected 1"},
    {K(EMBEDDING), AT(embedding.out), B_STRIDE, RIG_E_SHAPE,
     "embedding: out: innermost stride must be 1"},
    {K(EMBEDDING), 0, B_SCALAR, RIG_E_RANGE, "embedding: vocab_start: negative"},
    {K(RMS_NORM), AT(rms_norm.in), B_DIM0, RIG_E_SHAPE, "rms_norm: in: dim 0 is 5, expected 4"},
    {K(RMS_NORM), AT(rms_norm.in), B_DIM1, RIG_E_SHAPE, "rms_norm: in: dim 1 is 9, expected 8"},
    {K(RMS_NORM), AT(rms_norm.weight), B_DIM0, RIG_E_SHAPE,
     "rms_norm: weight: dim 0 is 9, expected 8"},
    {K(RMS_NORM), AT(rms_norm.weight), B_DTYPE, RIG_E_DTYPE,
     "rms_norm: weight: is u8, expected bf16"},
    {K(RMS_NORM), AT(rms_norm.out), B_NDIM, RIG_E_SHAPE, "rms_norm: out: has 3 dims, expected 2"},
    {K(RMS_NORM), 0, B_SCALAR, RIG_E_INVALID, "rms_norm: eps: must be > 0"},
    {K(ADD_RMS_NORM), AT(add_rms_norm.residual), B_DIM1, RIG_E_SHAPE,
     "add_rms_norm: residual: dim 1 is 9, expected 8"},
    {K(ADD_RMS_NORM), AT(add_rms_norm.in), B_DIM0, RIG_E_SHAPE,
     "add_rms_norm: in: dim 0 is 5, expected 4"},
    {K(ADD_RMS_NORM), AT(add_rms_norm.residual), B_NULL, RIG_E_INVALID,
     "add_rms_norm: residual: missing data"},
    {K(ADD_RMS_NORM), AT(add_rms_norm.weight), B_NULL, RIG_E_INVALID,
     "add_rms_norm: weight: missing data"},
    {K(GEMM), AT(gemm.a), B_DIM1, RIG_E_SHAPE, "gemm: b: dim 1 is 8, expected 9"},
    {K(GEMM), AT(gemm.b), B_DIM0, RIG_E_SHAPE, "gemm: b: dim 0 is 11, expected 10"},
    {K(GEMM), AT(gemm.a), B_DIM0, RIG_E_SHAPE, "gemm: a: dim 0 is 5, expected 4"},
    {K(GEMM), AT(gemm.out), B_DTYPE, RIG_E_DTYPE, "gemm: out: is u8, expected bf16"},
    {K(GEMM), AT(gemm.a), B_DTYPE, RIG_E_DTYPE, "gemm: a: is u8, expected bf16"},
    {K(GEMM), AT(gemm.b), B_NULL, RIG_E_INVALID, "gemm: b: missing data"},
    {K(GEMM), AT(gemm.b), B_STRIDE, RIG_E_SHAPE, "gemm: b: innermost stride must be 1"},
    {K(GEMM), 0, B_SCALAR, RIG_E_SHAPE, "gemm: bias: dim 0 is 3, expected 10"},
    {K(HEAD_RMS_NORM), AT(head_rms_norm.x), B_NDIM, RIG_E_SHAPE,
     "head_rms_norm: x: has 4 dims, expected 3"},
    {K(HEAD_RMS_NORM), AT(head_rms_norm.weight), B_DIM0, RIG_E_SHAPE,
     "head_rms_norm: weight: dim 0 is 5, expected 4"},
    {K(HEAD_RMS_NORM), 0, B_SCALAR, RIG_E_INVALID, "head_rms_norm: eps: must be > 0"},
    {K(ROPE), AT(rope.k), B_DIM0, RIG_E_SHAPE, "rope: k: dim 0 is 5, expected 4"},
    {K(ROPE), AT(rope.k), B_DIM2, RIG_E_SHAPE, "rope: k: dim 2 is 5, expected 4"},
    {K(ROPE), AT(rope.positions), B_DIM0, RIG_E_SHAPE, "rope: positions: dim 0 is 5, expected 4"},
    {K(ROPE), AT(rope.positions), B_DTYPE, RIG_E_DTYPE, "rope: positions: is u8, expected i32"},
    {K(ROPE), AT(rope.q), B_NULL, RIG_E_INVALID, "rope: q: missing data"},
    {K(ROPE), 0, B_SCALAR, RIG_E_INVALID, "rope: theta: must be > 0"},
    {K(STORE_KV), AT(store_kv.v), B_DIM1, RIG_E_SHAPE, "store_kv: v: dim 1 is 3, expected 2"},
    {K(STORE_KV), AT(store_kv.out_loc), B_DIM0, RIG_E_SHAPE,
     "store_kv: out_loc: dim 0 is 5, expected 4"},
    {K(STORE_KV), AT(store_kv.k_cache), B_DIM1, RIG_E_SHAPE,
     "store_kv: v_cache: dim 1 is 2, expected 3"},
    {K(STORE_KV), AT(store_kv.v_cache), B_DIM0, RIG_E_SHAPE,
     "store_kv: v_cache: dim 0 is 17, expected 16"},
    {K(STORE_KV), AT(store_kv.k_cache), B_DTYPE, RIG_E_DTYPE,
     "store_kv: k_cache: is u8, expected bf16"},
    {K(QK_NORM_ROPE_STORE), AT(qk_norm_rope_store.k), B_DIM0, RIG_E_SHAPE,
     "qk_norm_rope_store: k: dim 0 is 5, expected 4"},
    {K(QK_NORM_ROPE_STORE), AT(qk_norm_rope_store.v), B_DIM2, RIG_E_SHAPE,
     "qk_norm_rope_store: v: dim 2 is 5, expected 4"},
    {K(QK_NORM_ROPE_STORE), AT(qk_norm_rope_store.k), B_DIM1, RIG_E_SHAPE,
     "qk_norm_rope_store: v: dim 1 is 2, expected 3"},
    {K(QK_NORM_ROPE_STORE), AT(qk_norm_rope_store.q), B_DIM1, RIG_E_SHAPE,
     "qk_norm_rope_store: q: 5 query heads not a multiple of 2 KV heads"},
    {K(QK_NORM_ROPE_STORE), AT(qk_norm_rope_store.k_cache), B_DIM2, RIG_E_SHAPE,
     "qk_norm_rope_store: v_cache: dim 2 is 4, expected 5"},
    {K(QK_NORM_ROPE_STORE), AT(qk_norm_rope_store.v_cache), B_DTYPE, RIG_E_DTYPE,
     "qk_norm_rope_store: v_cache: is u8, expected bf16"},
    {K(QK_NORM_ROPE_STORE), AT(qk_norm_rope_store.q_norm), B_NULL, RIG_E_INVALID,
     "qk_norm_rope_store: q_norm/k_norm: both present or both absent"},
    {K(QK_NORM_ROPE_STORE), AT(qk_norm_rope_store.k_norm), B_DIM0, RIG_E_SHAPE,
     "qk_norm_rope_store: k_norm: dim 0 is 5, expected 4"},
    {K(QK_NORM_ROPE_STORE), AT(qk_norm_rope_store.q_norm), B_DTYPE, RIG_E_DTYPE,
     "qk_norm_rope_store: q_norm: is u8, expected bf16"},
    {K(QK_NORM_ROPE_STORE), AT(qk_norm_rope_store.positions), B_DIM0, RIG_E_SHAPE,
     "qk_norm_rope_store: positions: dim 0 is 5, expected 4"},
    {K(QK_NORM_ROPE_STORE), AT(qk_norm_rope_store.out_loc), B_DTYPE, RIG_E_DTYPE,
     "qk_norm_rope_store: out_loc: is u8, expected i32"},
    {K(QK_NORM_ROPE_STORE), AT(qk_norm_rope_store.q), B_STRIDE, RIG_E_SHAPE,
     "qk_norm_rope_store: q: innermost stride must be 1"},
    {K(QK_NORM_ROPE_STORE), 0, B_SCALAR, RIG_E_INVALID, "qk_norm_rope_store: eps: must be > 0"},
    {K(ATTENTION_PREFILL), AT(attention_prefill.q), B_DIM0, RIG_E_SHAPE,
     "attention_prefill: out: dim 0 is 4, expected 5"},
    {K(ATTENTION_PREFILL), AT(attention_prefill.k_cache), B_DIM1, RIG_E_SHAPE,
     "attention_prefill: q: 4 query heads not a multiple of 3 KV heads"},
    {K(ATTENTION_PREFILL), AT(attention_prefill.v_cache), B_DIM0, RIG_E_SHAPE,
     "attention_prefill: v_cache: dim 0 is 17, expected 16"},
    {K(ATTENTION_PREFILL), AT(attention_prefill.page_table), B_NDIM, RIG_E_SHAPE,
     "attention_prefill: page_table: has 3 dims, expected 2"},
    {K(ATTENTION_PREFILL), AT(attention_prefill.kv_len), B_DIM0, RIG_E_SHAPE,
     "attention_prefill: kv_len: dim 0 is 3, expected 2"},
    {K(ATTENTION_PREFILL), AT(attention_prefill.cu_q), B_DIM0, RIG_E_SHAPE,
     "attention_prefill: cu_q: dim 0 is 4, expected 3"},
    {K(ATTENTION_PREFILL), AT(attention_prefill.table_idx), B_DTYPE, RIG_E_DTYPE,
     "attention_prefill: table_idx: is u8, expected i32"},
    {K(ATTENTION_PREFILL), AT(attention_prefill.cu_q), B_NULL, RIG_E_INVALID,
     "attention_prefill: cu_q: missing data"},
    {K(ATTENTION_PREFILL), 0, B_SCALAR, RIG_E_INVALID, "attention_prefill: scale: must be > 0"},
    {K(ATTENTION_DECODE), AT(attention_decode.out), B_DIM0, RIG_E_SHAPE,
     "attention_decode: out: dim 0 is 3, expected 2"},
    {K(ATTENTION_DECODE), AT(attention_decode.kv_len), B_NULL, RIG_E_INVALID,
     "attention_decode: kv_len: missing data"},
    {K(ATTENTION_DECODE), AT(attention_decode.v_cache), B_DTYPE, RIG_E_DTYPE,
     "attention_decode: v_cache: is u8, expected bf16"},
    {K(ATTENTION_DECODE), 0, B_SCALAR, RIG_E_SHAPE,
     "attention_decode: table_idx: dim 0 is 3, expected 2"},
    {K(ATTENTION_DECODE_STORE), AT(attention_decode_store.store.k), B_DIM0, RIG_E_SHAPE,
     "attention_decode_store: k: dim 0 is 3, expected 2"},
    {K(ATTENTION_DECODE_STORE), AT(attention_decode_store.attend.kv_len), B_NULL, RIG_E_INVALID,
     "attention_decode_store: kv_len: missing data"},
    {K(ATTENTION_DECODE_STORE), 0, B_SCALAR, RIG_E_INVALID,
     "attention_decode_store: store.q: must be attend.q"},
    {K(ATTENTION_DECODE_STORE), AT(attention_decode_store.attend.k_cache), B_STRIDE, RIG_E_SHAPE,
     "attention_decode_store: k_cache: innermost stride must be 1"},
    {K(SILU_MUL), AT(silu_mul.in), B_DIM1, RIG_E_SHAPE, "silu_mul: in: dim 1 is 13, expected 12"},
    {K(SILU_MUL), AT(silu_mul.in), B_DIM0, RIG_E_SHAPE, "silu_mul: in: dim 0 is 5, expected 4"},
    {K(SILU_MUL), AT(silu_mul.out), B_DTYPE, RIG_E_DTYPE, "silu_mul: out: is u8, expected bf16"},
    {K(GATHER_ROWS), AT(gather_rows.in), B_DTYPE, RIG_E_DTYPE,
     "gather_rows: in: must be bf16 or f32"},
    {K(GATHER_ROWS), AT(gather_rows.out), B_DTYPE, RIG_E_DTYPE,
     "gather_rows: out: is u8, expected bf16"},
    {K(GATHER_ROWS), AT(gather_rows.idx), B_DIM0, RIG_E_SHAPE,
     "gather_rows: idx: dim 0 is 3, expected 2"},
    {K(GATHER_ROWS), AT(gather_rows.out), B_DIM1, RIG_E_SHAPE,
     "gather_rows: out: dim 1 is 9, expected 8"},
    {K(INDEX_GATHER), AT(index_gather.idx), B_DIM0, RIG_E_SHAPE,
     "index_gather: idx: dim 0 is 3, expected 2"},
    {K(INDEX_GATHER), AT(index_gather.src), B_DTYPE, RIG_E_DTYPE,
     "index_gather: src: is u8, expected i32"},
    {K(INDEX_GATHER), AT(index_gather.out), B_NDIM, RIG_E_SHAPE,
     "index_gather: out: has 2 dims, expected 1"},
    {K(INDEX_SCATTER), AT(index_scatter.dst), B_NULL, RIG_E_INVALID,
     "index_scatter: dst: missing data"},
    {K(INDEX_SCATTER), AT(index_scatter.src), B_DTYPE, RIG_E_DTYPE,
     "index_scatter: src: is u8, expected i32"},
    {K(INDEX_SCATTER), AT(index_scatter.idx), B_DIM0, RIG_E_SHAPE,
     "index_scatter: idx: dim 0 is 3, expected 2"},
    {K(SAMPLE), AT(sample.logits), B_DTYPE, RIG_E_DTYPE, "sample: logits: is u8, expected f32"},
    {K(SAMPLE), AT(sample.tokens), B_DIM0, RIG_E_SHAPE, "sample: tokens: dim 0 is 3, expected 2"},
    {K(SAMPLE), AT(sample.temperature), B_DTYPE, RIG_E_DTYPE,
     "sample: temperature: is u8, expected f32"},
    {K(SAMPLE), AT(sample.top_k), B_DIM0, RIG_E_SHAPE, "sample: top_k: dim 0 is 3, expected 2"},
    {K(SAMPLE), AT(sample.top_p), B_NULL, RIG_E_INVALID, "sample: top_p: missing data"},
    {K(SAMPLE), AT(sample.seed), B_DTYPE, RIG_E_DTYPE, "sample: seed: is u8, expected i64"},
    {K(SAMPLE), AT(sample.position), B_DIM0, RIG_E_SHAPE,
     "sample: position: dim 0 is 3, expected 2"},
    {K(SAMPLE), 0, B_SCALAR, RIG_E_SHAPE, "sample: logits: empty vocabulary"},
    {K(SAMPLE), AT(sample.min_p), B_DIM0, RIG_E_SHAPE, "sample: min_p: dim 0 is 3, expected 2"},
    {K(SAMPLE), AT(sample.min_p), B_DTYPE, RIG_E_DTYPE, "sample: min_p: is u8, expected f32"},
    {K(PENALIZE), AT(penalize.logits), B_NULL, RIG_E_INVALID, "penalize: logits: missing data"},
    {K(PENALIZE), AT(penalize.counts), B_DIM1, RIG_E_SHAPE,
     "penalize: counts: dim 1 is 11, expected 10"},
    {K(PENALIZE), AT(penalize.token_pool), B_DTYPE, RIG_E_DTYPE,
     "penalize: token_pool: is u8, expected i32"},
    {K(PENALIZE), AT(penalize.table_idx), B_DIM0, RIG_E_SHAPE,
     "penalize: table_idx: dim 0 is 3, expected 2"},
    {K(PENALIZE), AT(penalize.kv_len), B_NDIM, RIG_E_SHAPE,
     "penalize: kv_len: has 2 dims, expected 1"},
    {K(PENALIZE), AT(penalize.out_len), B_NULL, RIG_E_INVALID, "penalize: out_len: missing data"},
    {K(PENALIZE), AT(penalize.repetition), B_DTYPE, RIG_E_DTYPE,
     "penalize: repetition: is u8, expected f32"},
    {K(PENALIZE), AT(penalize.frequency), B_DIM0, RIG_E_SHAPE,
     "penalize: frequency: dim 0 is 3, expected 2"},
    {K(PENALIZE), AT(penalize.presence), B_STRIDE, RIG_E_SHAPE,
     "penalize: presence: innermost stride must be 1"},
    {K(PENALIZE), 0, B_SCALAR, RIG_E_SHAPE, "penalize: logits: empty vocabulary"},
    {K(LOGPROBS), AT(logprobs.logprob), B_DIM0, RIG_E_SHAPE,
     "logprobs: logprob: dim 0 is 3, expected 2"},
    {K(LOGPROBS), AT(logprobs.top_ids), B_NULL, RIG_E_INVALID, "logprobs: top_ids: missing data"},
    {K(LOGPROBS), AT(logprobs.top_logprobs), B_DIM1, RIG_E_SHAPE,
     "logprobs: top_logprobs: dim 1 is 4, expected 3"},
    {K(LOGPROBS), AT(logprobs.logits), B_DTYPE, RIG_E_DTYPE, "logprobs: logits: is u8, expected f32"},
    {K(LOGPROBS), AT(logprobs.temperature), B_DIM0, RIG_E_SHAPE,
     "logprobs: temperature: dim 0 is 3, expected 2"},
    {K(LOGPROBS), AT(logprobs.tokens), B_DTYPE, RIG_E_DTYPE, "logprobs: tokens: is u8, expected i32"},
    {K(LOGPROBS), 0, B_SCALAR, RIG_E_SHAPE, "logprobs: top_ids: 21 alternatives (1 .. min(V, 20))"},
    {K(COPY), AT(copy.out), B_NULL, RIG_E_INVALID, "copy: out/in: missing data"},
    {K(COPY), AT(copy.in), B_NDIM, RIG_E_SHAPE, "copy: in: rank differs from out"},
    {K(COPY), AT(copy.in), B_DIM1, RIG_E_SHAPE, "copy: in: dim 1 is 9, expected 8"},
    {K(COPY), AT(copy.in), B_DTYPE, RIG_E_DTYPE, "copy: out: u8 to f32 not supported"},
    {K(ALL_REDUCE), AT(all_reduce.data), B_DTYPE, RIG_E_DTYPE,
     "all_reduce: data: must be bf16 or f32"},
    {K(ALL_REDUCE), AT(all_reduce.data), B_NULL, RIG_E_INVALID, "all_reduce: data: missing data"},
    {K(ALL_REDUCE), AT(all_reduce.data), B_STRIDE, RIG_E_SHAPE, "all_reduce: data: not contiguous"},
    {K(ALL_REDUCE), 0, B_SCALAR, RIG_E_HANDLE, "all_reduce: comm: missing"},
    {K(ALL_GATHER), AT(all_gather.out), B_DIM0, RIG_E_SHAPE,
     "all_gather: out: dim 0 is 2, expected 1"},
    {K(ALL_GATHER), AT(all_gather.in), B_DIM0, RIG_E_SHAPE,
     "all_gather: out: dim 1 is 4, expected 5"},
    {K(ALL_GATHER), AT(all_gather.in), B_DIM1, RIG_E_SHAPE, "all_gather: in: not contiguous"},
    {K(ALL_GATHER), AT(all_gather.out), B_DTYPE, RIG_E_DTYPE,
     "all_gather: out: must be bf16 or f32"},
    {K(ALL_GATHER), AT(all_gather.in), B_NULL, RIG_E_INVALID, "all_gather: in: missing data"},
    {K(ALL_GATHER), 0, B_SCALAR, RIG_E_HANDLE, "all_gather: comm: missing"},
};

/* The scalar (or multi-tensor) breakage of each kind's B_SCALAR case. */
static void rig__break_scalar(struct rig_op *op)
{
    switch (op->kind) {
    case RIG_OP_EMBEDDING: op->u.embedding.vocab_start = -1; break;
    case RIG_OP_RMS_NORM: op->u.rms_norm.eps = 0.0f; break;
    case RIG_OP_GEMM: op->u.gemm.bias = rig__t(BF16, 1, 3, 1, 1); break;
    case RIG_OP_HEAD_RMS_NORM: op->u.head_rms_norm.eps = -1.0f; break;
    case RIG_OP_ROPE: op->u.rope.params.theta = 0.0f; break;
    case RIG_OP_QK_NORM_ROPE_STORE: op->u.qk_norm_rope_store.eps = 0.0f; break;
    case RIG_OP_ATTENTION_PREFILL: op->u.attention_prefill.scale = 0.0f; break;
    case RIG_OP_ATTENTION_DECODE: /* table_idx and kv_len agree but not with q */
        op->u.attention_decode.table_idx.shape[0] = 3;
        op->u.attention_decode.kv_len.shape[0] = 3;
        break;
    case RIG_OP_ATTENTION_DECODE_STORE: /* q a view of its own: the same shape elsewhere */
        op->u.attention_decode_store.attend.q.data = rig__gemm_out;
        break;
    case RIG_OP_SAMPLE: op->u.sample.logits.shape[1] = 0; break;
    case RIG_OP_PENALIZE: op->u.penalize.logits.shape[1] = 0; break;
    case RIG_OP_LOGPROBS: op->u.logprobs.top_ids.shape[1] = 21; break;
    case RIG_OP_ALL_REDUCE: op->u.all_reduce.comm = NULL; break;
    case RIG_OP_ALL_GATHER: op->u.all_gather.comm = NULL; break;
    default: fail_msg("no scalar case for %s", rig_op_name(op->kind));
    }
}

static void rig__break(struct rig_op *op, const struct rig__case *c)
{
    if (c->how == B_SCALAR) {
        rig__break_scalar(op);
        return;
    }
    struct rig_tensor *t = (struct rig_tensor *)((char *)op + c->offset);
    switch (c->how) {
    case B_NULL: t->data = NULL; break;
    case B_DTYPE: t->dtype = RIG_DTYPE_U8; break;
    case B_DIM0: t->shape[0]++; break;
    case B_DIM1: t->shape[1]++; break;
    case B_DIM2: t->shape[2]++; break;
    case B_NDIM:
        t->shape[t->ndim] = 1;
        t->stride[t->ndim] = 1;
        t->ndim++;
        break;
    case B_STRIDE: t->stride[t->ndim - 1] = 2; break;
    case B_SCALAR: break;
    }
}

static struct rig_device *rig__device;
static struct rig_stream *rig__stream;

static int rig__setup(void **state)
{
    (void)state;
    rig_test_open_sim(1, false, &rig__device);
    if (rig_hal_stream_create(rig__device, &rig__stream) != RIG_OK) return -1;
    return rig_hal_comm_create(&rig__device, 1, &rig__comm) == RIG_OK ? 0 : -1;
}

static int rig__teardown(void **state)
{
    (void)state;
    rig_hal_comm_destroy(rig__comm);
    rig_hal_stream_destroy(rig__stream);
    rig_hal_close(rig__device);
    return 0;
}

static void test_every_op_rejects_bad_arguments(void **state)
{
    (void)state;
    int32_t per_kind[RIG_OP_COUNT] = {0};
    for (enum rig_op_kind kind = 0; kind < RIG_OP_COUNT; kind++) {
        struct rig_op op = rig__valid(kind);
        char error[256] = "stale";
        if (rig_hal_op_check(&op, error, sizeof error) != RIG_OK)
            fail_msg("valid %s rejected: %s", rig_op_name(kind), error);
        assert_string_equal(error, "");
    }
    for (size_t i = 0; i < RIG_ARRAY_LEN(rig__cases); i++) {
        const struct rig__case *c = &rig__cases[i];
        struct rig_op op = rig__valid(c->kind);
        rig__break(&op, c);
        enum rig_status status = rig_hal_op(rig__stream, &op);
        const char *error = rig_hal_stream_error(rig__stream);
        if (status != c->status || strcmp(error, c->message) != 0)
            fail_msg("case %zu (%s): got %s \"%s\", expected %s \"%s\"", i, rig_op_name(c->kind),
                     rig_status_name(status), error, rig_status_name(c->status), c->message);
        per_kind[c->kind]++;
    }
    for (enum rig_op_kind kind = 0; kind < RIG_OP_COUNT; kind++) {
        if (per_kind[kind] < 3) fail_msg("only %d cases for %s", per_kind[kind], rig_op_name(kind));
    }
    struct rig_sim_stats stats;
    assert_int_equal(rig_sim_get_stats(rig__device, &stats), RIG_OK);
    assert_int_equal(stats.ops_issued, 0); /* nothing was issued */
    assert_int_equal(rig_hal_now_ns(rig__device), 0);
}

static void test_unknown_op_and_null_arguments(void **state)
{
    (void)state;
    struct rig_op op = {.kind = RIG_OP_COUNT};
    assert_int_equal(rig_hal_op(rig__stream, &op), RIG_E_INVALID);
    assert_string_equal(rig_hal_stream_error(rig__stream), "op: kind: unknown op kind 21");
    /* The message belongs to the stream the op was issued on, not to the thread. */
    struct rig_stream *other = NULL;
    assert_int_equal(rig_hal_stream_create(rig__device, &other), RIG_OK);
    assert_string_equal(rig_hal_stream_error(other), "");
    op = rig__valid(RIG_OP_SILU_MUL);
    op.u.silu_mul.in.data = NULL;
    assert_int_equal(rig_hal_op(other, &op), RIG_E_INVALID);
    assert_string_equal(rig_hal_stream_error(other), "silu_mul: in: missing data");
    assert_string_equal(rig_hal_stream_error(rig__stream), "op: kind: unknown op kind 21");
    rig_hal_stream_destroy(other);
    /* A check without a buffer still fails the same way. */
    op.kind = RIG_OP_COUNT;
    assert_int_equal(rig_hal_op_check(&op, NULL, 0), RIG_E_INVALID);
    op = rig__valid(RIG_OP_GEMM);
    assert_int_equal(rig_hal_op(NULL, &op), RIG_E_HANDLE);
    assert_int_equal(rig_hal_op(rig__stream, NULL), RIG_E_HANDLE);
    assert_int_equal(rig_hal_gemm(rig__stream, NULL), RIG_E_INVALID);
    assert_int_equal(rig_hal_op_check(NULL, NULL, 0), RIG_E_INVALID);
}

/* The fused op without q/k norm (Llama, Qwen2) is valid with both weights absent, whatever
 * eps is; its RoPE parameters are checked as rope's are. */
static void test_qk_norm_rope_store_variants(void **state)
{
    (void)state;
    struct rig_op op = rig__valid(RIG_OP_QK_NORM_ROPE_STORE);
    struct rig_op_qk_norm_rope_store *p = &op.u.qk_norm_rope_store;
    char error[256];
    p->q_norm = rig_tensor_none();
    p->k_norm = rig_tensor_none();
    p->eps = 0.0f;
    assert_int_equal(rig_hal_op_check(&op, error, sizeof error), RIG_OK);
    p->params = (struct rig_rope_params){.theta = 500000.0f,
                                         .scaling = RIG_ROPE_SCALING_LLAMA3,
                                         .factor = 8.0f,
                                         .low_freq_factor = 1.0f,
                                         .high_freq_factor = 4.0f,
                                         .original_max_position = 8192};
    assert_int_equal(rig_hal_op_check(&op, error, sizeof error), RIG_OK);
    p->params.high_freq_factor = 1.0f;
    assert_int_equal(rig_hal_op_check(&op, error, sizeof error), RIG_E_INVALID);
    assert_string_equal(error, "qk_norm_rope_store: params: bad llama3 scaling parameters");
    op = rig__valid(RIG_OP_QK_NORM_ROPE_STORE);
    p->k_norm = rig_tensor_none();
    assert_int_equal(rig_hal_op_check(&op, error, sizeof error), RIG_E_INVALID);
    op = rig__valid(RIG_OP_QK_NORM_ROPE_STORE);
    p->params.theta = -1.0f;
    assert_int_equal(rig_hal_op_check(&op, error, sizeof error), RIG_E_INVALID);
    assert_string_equal(error, "qk_norm_rope_store: theta: must be > 0");
    op = rig__valid(RIG_OP_QK_NORM_ROPE_STORE);
    for (int32_t i = 0; i < 3; i++) { /* an odd head dim everywhere */
        struct rig_tensor *t = i == 0 ? &p->q : i == 1 ? &p->k : &p->v;
        t->shape[2] = 3;
    }
    p->k_cache.shape[2] = p->v_cache.shape[2] = p->q_norm.shape[0] = p->k_norm.shape[0] = 3;
    assert_int_equal(rig_hal_op_check(&op, error, sizeof error), RIG_E_SHAPE);
    assert_string_equal(error, "qk_norm_rope_store: q: head dim must be even");
}

/* A GEMM's fused forms (hal/ops.h): `a` [T, H] (or [T, 2 I] for SILU_MUL) in the shared
 * storage, out in its own array, the operand [T, K] in another. */
static struct rig_op rig__fused_gemm(enum rig_gemm_prologue prologue, bool accumulate)
{
    struct rig_op op = rig__valid(RIG_OP_GEMM);
    struct rig_op_gemm *p = &op.u.gemm;
    int64_t depth = prologue == RIG_GEMM_PROLOGUE_SILU_MUL ? I : H;
    p->prologue = prologue;
    p->accumulate = accumulate;
    if (prologue == RIG_GEMM_PROLOGUE_SILU_MUL) {
        p->a = rig__t(BF16, 2, T, 2 * I, 1);
        p->b = rig__t(BF16, 2, V, I, 1);
    }
    if (prologue != RIG_GEMM_PROLOGUE_NONE)
        p->operand = rig_tensor_make(rig__gemm_operand, BF16, 2, (int64_t[3]){T, depth, 1});
    if (prologue == RIG_GEMM_PROLOGUE_RMS_NORM) {
        p->norm_weight = rig__t(BF16, 1, H, 1, 1);
        p->eps = 1e-6f;
    }
    return op;
}

/* Checks `op` fails with `status` and `message`. */
static void rig__rejects(const struct rig_op *op, enum rig_status status, const char *message)
{
    char error[256];
    assert_int_equal(rig_hal_op_check(op, error, sizeof error), status);
    assert_string_equal(error, message);
}

/* The fused forms are valid as built (RMS_NORM with a bias, SILU_MUL and no prologue with
 * accumulate); each breaks one of their rules: an unknown prologue, the operand missing, of
 * the wrong shape or overlapping a or out, out overlapping a, accumulate with an f32 out or a
 * bias, a norm weight without RMS_NORM (or missing with it), SILU_MUL over an odd width. */
static void test_gemm_fused_forms(void **state)
{
    (void)state;
    struct rig_op op = rig__fused_gemm(RIG_GEMM_PROLOGUE_RMS_NORM, false);
    op.u.gemm.bias = rig__t(BF16, 1, V, 1, 1);
    assert_int_equal(rig_hal_op_check(&op, NULL, 0), RIG_OK);
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_SILU_MUL, true);
    assert_int_equal(rig_hal_op_check(&op, NULL, 0), RIG_OK);
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_NONE, true);
    assert_int_equal(rig_hal_op_check(&op, NULL, 0), RIG_OK);
    op.u.gemm.prologue = (enum rig_gemm_prologue)RIG_GEMM_PROLOGUES;
    rig__rejects(&op, RIG_E_INVALID, "gemm: prologue: unknown kind 3");
    op.u.gemm.prologue = (enum rig_gemm_prologue)-1;
    rig__rejects(&op, RIG_E_INVALID, "gemm: prologue: unknown kind -1");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_RMS_NORM, false);
    op.u.gemm.operand = rig_tensor_none();
    rig__rejects(&op, RIG_E_INVALID, "gemm: operand: missing data");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_SILU_MUL, false);
    op.u.gemm.operand.shape[1] = 2 * I; /* a's width, not K */
    rig__rejects(&op, RIG_E_SHAPE, "gemm: operand: dim 1 is 12, expected 6");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_RMS_NORM, false);
    op.u.gemm.operand.shape[0] = T + 1;
    rig__rejects(&op, RIG_E_SHAPE, "gemm: operand: dim 0 is 5, expected 4");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_RMS_NORM, false);
    op.u.gemm.operand.data = (uint16_t *)rig__storage + 3; /* inside a */
    rig__rejects(&op, RIG_E_INVALID, "gemm: operand: overlaps a or out");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_RMS_NORM, false);
    op.u.gemm.operand.data = (uint16_t *)rig__gemm_out + T * V - 1; /* out's last value */
    rig__rejects(&op, RIG_E_INVALID, "gemm: operand: overlaps a or out");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_NONE, false);
    op.u.gemm.out.data = (uint16_t *)rig__storage + T * H - 1; /* a's last value */
    rig__rejects(&op, RIG_E_INVALID, "gemm: out: overlaps an input");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_NONE, true);
    op.u.gemm.out.dtype = F32;
    rig__rejects(&op, RIG_E_DTYPE, "gemm: out: must be bf16 to accumulate");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_RMS_NORM, true);
    op.u.gemm.bias = rig__t(BF16, 1, V, 1, 1);
    rig__rejects(&op, RIG_E_INVALID, "gemm: bias: not allowed with accumulate");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_SILU_MUL, false);
    op.u.gemm.norm_weight = rig__t(BF16, 1, I, 1, 1);
    rig__rejects(&op, RIG_E_INVALID, "gemm: norm_weight: given without RMS_NORM");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_NONE, false);
    op.u.gemm.norm_weight = rig__t(BF16, 1, H, 1, 1);
    rig__rejects(&op, RIG_E_INVALID, "gemm: norm_weight: given without RMS_NORM");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_NONE, false);
    op.u.gemm.operand = rig_tensor_make(rig__gemm_operand, BF16, 2, (int64_t[3]){T, H, 1});
    rig__rejects(&op, RIG_E_INVALID, "gemm: operand: given without a prologue");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_RMS_NORM, false);
    op.u.gemm.norm_weight = rig_tensor_none();
    rig__rejects(&op, RIG_E_INVALID, "gemm: norm_weight: missing data");
    op.u.gemm.norm_weight = rig__t(BF16, 1, H, 1, 1);
    op.u.gemm.eps = 0.0f;
    rig__rejects(&op, RIG_E_INVALID, "gemm: eps: must be > 0");
    op = rig__fused_gemm(RIG_GEMM_PROLOGUE_SILU_MUL, false);
    op.u.gemm.a.shape[1] = 2 * I + 1; /* its half is still b's K */
    rig__rejects(&op, RIG_E_SHAPE, "gemm: a: width 13 is not [gate | up]");
}

/* Objects of one device used with another device's stream are refused. */
static void test_handles_of_another_device(void **state)
{
    (void)state;
    struct rig_device *other;
    struct rig_stream *other_stream;
    struct rig_buffer *mine, *theirs;
    struct rig_event *event;
    struct rig_comm *other_comm;
    rig_test_open_sim(1, false, &other);
    assert_int_equal(rig_hal_stream_create(other, &other_stream), RIG_OK);
    assert_int_equal(rig_hal_comm_create(&other, 1, &other_comm), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(rig__device, 64, RIG_MEMORY_METADATA, &mine), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(other, 64, RIG_MEMORY_METADATA, &theirs), RIG_OK);
    assert_int_equal(rig_hal_event_create(rig__device, &event), RIG_OK);
    char host[64] = {0};
    assert_int_equal(rig_hal_buffer_upload(other_stream, mine, 0, host, 8), RIG_E_HANDLE);
    assert_int_equal(rig_hal_buffer_download(other_stream, mine, 0, host, 8), RIG_E_HANDLE);
    assert_int_equal(rig_hal_buffer_copy(rig__stream, mine, 0, theirs, 0, 8), RIG_E_HANDLE);
    assert_int_equal(rig_hal_buffer_upload(NULL, mine, 0, host, 8), RIG_E_HANDLE);
    assert_int_equal(rig_hal_buffer_upload(rig__stream, NULL, 0, host, 8), RIG_E_HANDLE);
    assert_int_equal(rig_hal_event_record(event, other_stream), RIG_E_HANDLE);
    assert_int_equal(rig_hal_stream_wait_event(other_stream, event), RIG_E_HANDLE);
    struct rig_op op = rig__valid(RIG_OP_ALL_REDUCE);
    op.u.all_reduce.comm = other_comm;
    assert_int_equal(rig_hal_op(rig__stream, &op), RIG_E_HANDLE);
    struct rig_sim_faults none = {.fail_alloc_at = -1, .stall_op_at = -1};
    assert_int_equal(rig_sim_set_faults(NULL, &none), RIG_E_HANDLE);
    struct rig_sim_stats stats;
    assert_int_equal(rig_sim_get_stats(NULL, &stats), RIG_E_HANDLE);
    rig_hal_event_destroy(event);
    rig_hal_buffer_free(mine);
    rig_hal_buffer_free(theirs);
    rig_hal_comm_destroy(other_comm);
    rig_hal_stream_destroy(other_stream);
    assert_int_equal(other->live_objects, 0);
    rig_hal_close(other);
}

static void test_copy_ranges(void **state)
{
    (void)state;
    struct rig_buffer *a, *b;
    assert_int_equal(rig_hal_buffer_alloc(rig__device, 100, RIG_MEMORY_METADATA, &a), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(rig__device, 50, RIG_MEMORY_METADATA, &b), RIG_OK);
    char host[200] = {0};
    assert_int_equal(rig_hal_buffer_upload(rig__stream, a, 0, host, 100), RIG_OK);
    assert_int_equal(rig_hal_buffer_upload(rig__stream, a, 0, host, 101), RIG_E_RANGE);
    assert_int_equal(rig_hal_buffer_upload(rig__stream, a, 99, host, 2), RIG_E_RANGE);
    assert_int_equal(rig_hal_buffer_upload(rig__stream, a, 101, host, 0), RIG_E_RANGE);
    assert_int_equal(rig_hal_buffer_upload(rig__stream, a, SIZE_MAX, host, 2), RIG_E_RANGE);
    assert_int_equal(rig_hal_buffer_upload(rig__stream, a, 0, NULL, 4), RIG_E_INVALID);
    assert_int_equal(rig_hal_buffer_download(rig__stream, a, 60, host, 41), RIG_E_RANGE);
    assert_int_equal(rig_hal_buffer_download(rig__stream, a, 0, NULL, 4), RIG_E_INVALID);
    assert_int_equal(rig_hal_buffer_copy(rig__stream, b, 0, a, 0, 51), RIG_E_RANGE);
    assert_int_equal(rig_hal_buffer_copy(rig__stream, a, 0, b, 10, 41), RIG_E_RANGE);
    assert_int_equal(rig_hal_buffer_copy(rig__stream, a, 50, b, 0, 50), RIG_OK);
    assert_int_equal(rig_hal_buffer_fill(rig__stream, a, 2, 0, 1), RIG_E_INVALID);
    assert_int_equal(rig_hal_buffer_fill(rig__stream, a, 0, 0, 26), RIG_E_RANGE);
    assert_int_equal(rig_hal_buffer_fill(rig__stream, a, 0, 0, SIZE_MAX / 2), RIG_E_RANGE);
    assert_int_equal(rig_hal_buffer_fill(rig__stream, a, 96, 7, 1), RIG_OK);
    assert_int_equal(rig_hal_buffer_upload(rig__stream, a, 100, host, 0), RIG_OK);
    rig_hal_buffer_free(a);
    rig_hal_buffer_free(b);
}

static void test_capture_state(void **state)
{
    (void)state;
    struct rig_buffer *a;
    struct rig_event *event;
    struct rig_graph *graph = NULL;
    assert_int_equal(rig_hal_buffer_alloc(rig__device, 64, RIG_MEMORY_METADATA, &a), RIG_OK);
    assert_int_equal(rig_hal_event_create(rig__device, &event), RIG_OK);
    assert_int_equal(rig_hal_graph_capture_end(rig__stream, &graph), RIG_E_STATE);
    assert_int_equal(rig_hal_graph_capture_begin(rig__stream), RIG_OK);
    assert_int_equal(rig_hal_graph_capture_begin(rig__stream), RIG_E_STATE);
    char host[64] = {0};
    assert_int_equal(rig_hal_buffer_upload(rig__stream, a, 0, host, 8), RIG_E_STATE);
    assert_int_equal(rig_hal_buffer_download(rig__stream, a, 0, host, 8), RIG_E_STATE);
    assert_int_equal(rig_hal_buffer_fill(rig__stream, a, 0, 1, 2), RIG_E_STATE);
    assert_int_equal(rig_hal_buffer_copy(rig__stream, a, 0, a, 32, 8), RIG_E_STATE);
    assert_int_equal(rig_hal_stream_synchronize(rig__stream), RIG_E_STATE);
    assert_int_equal(rig_hal_event_record(event, rig__stream), RIG_E_STATE);
    assert_int_equal(rig_hal_stream_wait_event(rig__stream, event), RIG_E_STATE);
    struct rig_op op = rig__valid(RIG_OP_ALL_REDUCE); /* single rank: counted, nothing run */
    assert_int_equal(rig_hal_op(rig__stream, &op), RIG_OK);
    assert_int_equal(rig_hal_graph_capture_end(rig__stream, &graph), RIG_OK);
    assert_int_equal(rig_hal_graph_op_count(graph), 1);
    assert_int_equal(rig_hal_graph_launch(graph, rig__stream), RIG_OK);
    assert_int_equal(rig_hal_graph_launch(NULL, rig__stream), RIG_E_HANDLE);
    assert_int_equal(rig_hal_graph_capture_begin(NULL), RIG_E_HANDLE);
    assert_int_equal(rig_hal_buffer_upload(rig__stream, a, 0, host, 8), RIG_OK);
    rig_hal_graph_destroy(graph);
    rig_hal_event_destroy(event);
    rig_hal_buffer_free(a);
}

static void test_events(void **state)
{
    (void)state;
    struct rig_event *a, *b;
    int64_t ns = -1;
    assert_int_equal(rig_hal_event_create(rig__device, &a), RIG_OK);
    assert_int_equal(rig_hal_event_create(rig__device, &b), RIG_OK);
    assert_int_equal(rig_hal_event_elapsed_ns(a, b, &ns), RIG_E_STATE); /* never recorded */
    assert_int_equal(rig_hal_event_synchronize(a), RIG_OK);             /* as CUDA: no-op */
    assert_int_equal(rig_hal_stream_wait_event(rig__stream, a), RIG_OK);
    assert_int_equal(rig_hal_event_record(a, rig__stream), RIG_OK);
    rig_hal_host_work_ns(rig__device, 5000);
    assert_int_equal(rig_hal_event_elapsed_ns(a, b, &ns), RIG_E_STATE);
    assert_int_equal(rig_hal_event_elapsed_ns(a, NULL, &ns), RIG_E_HANDLE);
    assert_int_equal(rig_hal_event_elapsed_ns(a, a, &ns), RIG_OK);
    assert_int_equal(ns, 0);
    assert_int_equal(rig_hal_event_record(NULL, rig__stream), RIG_E_HANDLE);
    assert_int_equal(rig_hal_event_synchronize(NULL), RIG_E_HANDLE);
    assert_int_equal(rig_hal_stream_synchronize(NULL), RIG_E_HANDLE);
    rig_hal_event_destroy(a);
    rig_hal_event_destroy(b);
}

static void test_open_and_alloc_arguments(void **state)
{
    (void)state;
    struct rig_device *devices[RIG_DEVICES_MAX + 1];
    struct rig_device_config config = {.profile = "h100"};
    struct rig_buffer *buffer = NULL;
    assert_int_equal(rig_hal_open("sim", &config, 0, devices), RIG_E_RANGE);
    assert_int_equal(rig_hal_open("sim", &config, RIG_DEVICES_MAX + 1, devices), RIG_E_RANGE);
    assert_int_equal(rig_hal_open("tpu", &config, 1, devices), RIG_E_NOT_FOUND);
    assert_int_equal(rig_hal_open("sim", NULL, 1, devices), RIG_E_INVALID);
    config.profile = "no-such-gpu";
    assert_int_equal(rig_hal_open("sim", &config, 1, devices), RIG_E_NOT_FOUND);
    assert_int_equal(rig_hal_buffer_alloc(rig__device, 0, RIG_MEMORY_KV, &buffer), RIG_E_INVALID);
    assert_int_equal(rig_hal_buffer_alloc(rig__device, 8, (enum rig_memory_use)9, &buffer),
                     RIG_E_INVALID);
    assert_int_equal(rig_hal_buffer_alloc(NULL, 8, RIG_MEMORY_KV, &buffer), RIG_E_HANDLE);
    assert_null(buffer);
    assert_non_null(strstr(rig_hal_backends(), "sim"));
}

/* rig_hal_open of one rank of a group across processes (hal.h, group_rank / group_size). */
static void test_open_group_across_processes(void **state)
{
    (void)state;
    struct rig_device *devices[2] = {NULL, NULL};
    struct rig_device_config config = {.profile = "h100", .group_rank = 1, .group_size = 4};
    assert_int_equal(rig_hal_open("sim", &config, 2, devices), RIG_E_RANGE);
    config.group_rank = 4;
    assert_int_equal(rig_hal_open("sim", &config, 1, devices), RIG_E_RANGE);
    config.group_rank = -1;
    assert_int_equal(rig_hal_open("sim", &config, 1, devices), RIG_E_RANGE);
    config = (struct rig_device_config){.profile = "h100", .group_size = RIG_DEVICES_MAX + 1};
    assert_int_equal(rig_hal_open("sim", &config, 1, devices), RIG_E_RANGE);
    config.group_size = 2;
    enum rig_status status = rig_hal_open("sim", &config, 1, devices);
#ifdef RIG_HAVE_MPI
    assert_int_equal(status, RIG_E_STATE); /* this test does not initialise MPI */
#else
    assert_int_equal(status, RIG_E_UNSUPPORTED);
#endif
    assert_null(devices[0]);
    config.group_size = 1; /* a group of one is the device opened alone */
    assert_int_equal(rig_hal_open("sim", &config, 1, devices), RIG_OK);
    assert_int_equal(rig_hal_device_info(devices[0])->group_size, 1);
    rig_hal_close(devices[0]);
}

/* One rank: all-reduce leaves the data, all-gather copies `in` into out[0]. */
/* Faults through the HAL (the swarm's way): a device's plan, the plan devices open with, and
 * the refusals (no device, a negative stall, an unknown backend). */
/* With RIG_ISSUE_TRACE set at open, a device counts the host time of every op and copy it is
 * asked to issue, by kind; ops recorded into a graph capture and failed issues are not
 * counted; without it there is no trace. */
static void test_issue_trace(void **state)
{
    (void)state;
    setenv("RIG_ISSUE_TRACE", "1", 1);
    struct rig_device *device;
    rig_test_open_sim(1, false, &device);
    unsetenv("RIG_ISSUE_TRACE");
    const struct rig_issue_trace *trace = rig_hal_issue_trace(device);
    assert_non_null(trace);
    struct rig_stream *stream;
    struct rig_buffer *meta, *other;
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 256, RIG_MEMORY_METADATA, &meta), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 256, RIG_MEMORY_METADATA, &other), RIG_OK);
    int32_t words[8] = {5, 6, 7, 8, 0, 3, 1, 2}, got[4];
    assert_int_equal(rig_hal_buffer_upload(stream, meta, 0, words, sizeof words), RIG_OK);
    int32_t *m = rig_hal_buffer_ptr(meta);
    struct rig_op_index_gather g = {rig_tensor_1d(m + 16, RIG_DTYPE_I32, 4),
                                    rig_tensor_1d(m, RIG_DTYPE_I32, 4),
                                    rig_tensor_1d(m + 4, RIG_DTYPE_I32, 4)};
    assert_int_equal(rig_hal_index_gather(stream, &g), RIG_OK);
    assert_int_equal(rig_hal_index_gather(stream, &g), RIG_OK);
    assert_int_equal(rig_hal_buffer_copy(stream, other, 0, meta, 64, 16), RIG_OK);
    assert_int_equal(rig_hal_buffer_download(stream, other, 0, got, sizeof got), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    assert_int_equal(got[0], 5);
    assert_int_equal(got[1], 8);
    struct rig_op_index_gather bad = g; /* a failed check issues nothing */
    bad.idx = rig_tensor_1d(m + 4, RIG_DTYPE_F32, 4);
    assert_int_not_equal(rig_hal_index_gather(stream, &bad), RIG_OK);
    struct rig_graph *graph = NULL;
    assert_int_equal(rig_hal_graph_capture_begin(stream), RIG_OK);
    assert_int_equal(rig_hal_index_gather(stream, &g), RIG_OK); /* recorded, not issued */
    assert_int_equal(rig_hal_graph_capture_end(stream, &graph), RIG_OK);
    assert_int_equal(trace->count[RIG_OP_INDEX_GATHER], 2);
    assert_int_equal(trace->count[RIG_ISSUE_UPLOAD], 1);
    assert_int_equal(trace->count[RIG_ISSUE_COPY], 1);
    assert_int_equal(trace->count[RIG_ISSUE_DOWNLOAD], 1);
    assert_int_equal(trace->count[RIG_OP_GEMM], 0);
    assert_int_equal(trace->count[RIG_ISSUE_GRAPH_LAUNCH], 0);
    struct rig_event *event;
    assert_int_equal(rig_hal_event_create(device, &event), RIG_OK);
    assert_int_equal(rig_hal_event_record(event, stream), RIG_OK);
    assert_int_equal(rig_hal_stream_wait_event(stream, event), RIG_OK);
    assert_int_equal(rig_hal_graph_launch(graph, stream), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    rig_hal_event_destroy(event);
    assert_int_equal(trace->count[RIG_ISSUE_EVENT_RECORD], 1);
    assert_int_equal(trace->count[RIG_ISSUE_STREAM_WAIT], 1);
    assert_int_equal(trace->count[RIG_ISSUE_GRAPH_LAUNCH], 1);
    /* the host time between consecutive issues: one fewer than the issues traced (all well
     * under a millisecond apart here), each gap at least 0 */
    int64_t traced = 0;
    for (int32_t k = 0; k < RIG_ISSUE_BETWEEN; k++) traced += trace->count[k];
    assert_in_range(trace->count[RIG_ISSUE_BETWEEN], 1, traced);
    assert_true(trace->total_ns[RIG_OP_INDEX_GATHER] >= trace->max_ns[RIG_OP_INDEX_GATHER]);
    char text[2048] = {0};
    FILE *out = tmpfile();
    assert_non_null(out);
    rig_issue_trace_print(trace, "sim:test", out);
    rewind(out);
    size_t n = fread(text, 1, sizeof text - 1, out);
    fclose(out);
    assert_true(n > 0);
    assert_non_null(strstr(text, "rig issue trace, sim:test"));
    assert_non_null(strstr(text, "median us"));
    assert_non_null(strstr(text, "  index_gather                  2"));
    assert_non_null(strstr(text, "  download                      1"));
    assert_null(strstr(text, "gemm"));
    rig_hal_graph_destroy(graph);
    rig_hal_buffer_free(meta);
    rig_hal_buffer_free(other);
    rig_hal_stream_destroy(stream);
    rig_hal_close(device); /* prints the trace on stderr */
    rig_test_open_sim(1, false, &device);
    assert_null(rig_hal_issue_trace(device));
    rig_hal_close(device);
    /* percentiles by bucket: nine issues of 2.1 us and one first use of 80 ms */
    static struct rig_issue_trace t;
    for (int32_t i = 0; i < 9; i++)
        rig_issue_trace_add(&t, RIG_OP_GEMM, 2100);
    rig_issue_trace_add(&t, RIG_OP_GEMM, 80000000);
    assert_float_equal(rig_issue_trace_percentile_ns(&t, RIG_OP_GEMM, 50), 2125, 0);
    assert_float_equal(rig_issue_trace_percentile_ns(&t, RIG_OP_GEMM, 90), 2125, 0);
    assert_float_equal(rig_issue_trace_percentile_ns(&t, RIG_OP_GEMM, 99), 80000000, 0);
    assert_float_equal(rig_issue_trace_percentile_ns(&t, RIG_OP_COPY, 50), 0, 0);
    /* between issues: counted under a millisecond apart, not across an idle wait */
    rig_issue_trace_end(&t, 1000000);
    rig_issue_trace_start(&t, 1004000);
    rig_issue_trace_end(&t, 1006000);
    rig_issue_trace_start(&t, 9000000);
    assert_int_equal(t.count[RIG_ISSUE_BETWEEN], 1);
    assert_float_equal(rig_issue_trace_percentile_ns(&t, RIG_ISSUE_BETWEEN, 50), 4125, 0);
}

static int64_t rig__monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The real backends' wait for a replayed arrival never returns before its time, whether the
 * time is far (sleep, then spin), near (spin only) or past (at once). How late it wakes is a
 * benchmark's business (docs/simulator.md), not a test's. */
static void test_wall_wait_never_early(void **state)
{
    (void)state;
    const int64_t ahead[] = {3000000, 250000, 100000, 40000, 1, 0, -5000000};
    for (size_t i = 0; i < sizeof ahead / sizeof ahead[0]; i++) {
        int64_t start = rig__monotonic_ns(), t = start + ahead[i];
        rig_hal_wall_wait_until_ns(t);
        int64_t now = rig__monotonic_ns();
        assert_true(now >= t);
        if (ahead[i] < 0) assert_true(now - start < -ahead[i]); /* past: returned at once */
    }
}

static void test_faults_through_hal(void **state)
{
    (void)state;
    struct rig_device *device = NULL;
    struct rig_buffer *buffer = NULL;
    struct rig_hal_faults faults = {.fail_alloc_at = 0, .stall_op_at = -1};
    assert_int_equal(rig_hal_set_faults(NULL, &faults), RIG_E_HANDLE);
    assert_int_equal(rig_hal_set_open_faults("nope", &faults), RIG_E_NOT_FOUND);
    faults.stall_ns = -1;
    assert_int_equal(rig_hal_set_open_faults("sim", &faults), RIG_E_INVALID);
    faults.stall_ns = 0;
    assert_int_equal(rig_hal_set_open_faults("sim", &faults), RIG_OK);
    rig_test_open_sim(1, false, &device);
    assert_int_equal(rig_hal_set_open_faults("sim", NULL), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 64, RIG_MEMORY_KV, &buffer),
                     RIG_E_DEVICE_MEMORY);
    assert_int_equal(rig_hal_buffer_alloc(device, 64, RIG_MEMORY_KV, &buffer), RIG_OK);
    rig_hal_buffer_free(buffer);
    faults.fail_alloc_at = 1;
    assert_int_equal(rig_hal_set_faults(device, &faults), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 64, RIG_MEMORY_KV, &buffer), RIG_OK);
    rig_hal_buffer_free(buffer);
    assert_int_equal(rig_hal_buffer_alloc(device, 64, RIG_MEMORY_KV, &buffer),
                     RIG_E_DEVICE_MEMORY);
    faults.stall_ns = -5;
    assert_int_equal(rig_hal_set_faults(device, &faults), RIG_E_INVALID);
    rig_hal_close(device);
}

static void test_single_rank_collectives(void **state)
{
    (void)state;
    struct rig_buffer *buf;
    assert_int_equal(rig_hal_buffer_alloc(rig__device, 1024, RIG_MEMORY_ACTIVATIONS, &buf), RIG_OK);
    char *base = rig_hal_buffer_ptr(buf);
    float values[8] = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -8.5f, 1e-3f, 42.0f}, back[16];
    assert_int_equal(rig_hal_buffer_upload(rig__stream, buf, 0, values, sizeof values), RIG_OK);
    struct rig_op_all_reduce reduce = {rig_tensor_1d(base, F32, 8), rig__comm};
    assert_int_equal(rig_hal_all_reduce(rig__stream, &reduce), RIG_OK);
    int64_t shape[2] = {1, 8};
    struct rig_op_all_gather gather = {rig_tensor_make(base + 512, F32, 2, shape),
                                       rig_tensor_1d(base, F32, 8), rig__comm};
    assert_int_equal(rig_hal_all_gather(rig__stream, &gather), RIG_OK);
    assert_int_equal(rig_hal_buffer_download(rig__stream, buf, 0, back, 32), RIG_OK);
    assert_int_equal(rig_hal_buffer_download(rig__stream, buf, 512, back + 8, 32), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(rig__stream), RIG_OK);
    assert_memory_equal(back, values, sizeof values);
    assert_memory_equal(back + 8, values, sizeof values);
    rig_hal_buffer_free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_op_rejects_bad_arguments),
        cmocka_unit_test(test_unknown_op_and_null_arguments),
        cmocka_unit_test(test_qk_norm_rope_store_variants),
        cmocka_unit_test(test_gemm_fused_forms),
        cmocka_unit_test(test_handles_of_another_device),
        cmocka_unit_test(test_copy_ranges),
        cmocka_unit_test(test_capture_state),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_open_and_alloc_arguments),
        cmocka_unit_test(test_open_group_across_processes),
        cmocka_unit_test(test_single_rank_collectives),
        cmocka_unit_test(test_faults_through_hal),
        cmocka_unit_test(test_wall_wait_never_early),
        cmocka_unit_test(test_issue_trace),
    };
    return cmocka_run_group_tests(tests, rig__setup, rig__teardown);
}
