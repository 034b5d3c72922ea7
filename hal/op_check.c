/* op_check.c — validation of every op before a backend sees it.
 *
 * Each check returns RIG_E_SHAPE / RIG_E_DTYPE / RIG_E_INVALID with a message naming the op
 * and the argument ("gemm: b: shape [64, 32] does not match ..."), written to the caller's
 * buffer (the dispatch layer passes the stream's error slot). Checks cover what a backend needs to
 * index memory safely: ranks, shapes that must agree, dtypes, contiguous innermost dimensions,
 * non-NULL data. Values inside index tensors live in device memory and cannot be checked here;
 * kernels clamp or trust them as documented per op.
 */
#include <stdarg.h>

#include "hal/hal_impl.h"

/* One op's check: the op's name, for messages, and where a failure's message goes. */
struct rig__check {
    const char *op; /* the op's name ("gemm") */
    char *error;    /* (error_len) the caller's buffer; NULL (or error_len 0) for no message */
    size_t error_len;
};

static enum rig_status rig__fail(const struct rig__check *check, enum rig_status status,
                                 const char *arg, const char *format, ...)
{
    if (check->error == NULL || check->error_len == 0) return status;
    int used = snprintf(check->error, check->error_len, "%s: %s: ", check->op, arg);
    if (used < 0 || (size_t)used >= check->error_len) return status;
    va_list ap;
    va_start(ap, format);
    vsnprintf(check->error + used, check->error_len - (size_t)used, format, ap);
    va_end(ap);
    return status;
}

const char *rig_op_name(enum rig_op_kind kind)
{
    switch (kind) {
#define RIG__OP_NAME(upper, lower)                                                         \
    case RIG_OP_##upper:                                                                   \
        return #lower;
        RIG_OP_MAP(RIG__OP_NAME)
#undef RIG__OP_NAME
    case RIG_OP_COUNT:
        break;
    }
    return "?";
}

/* Checks rank, dtype, presence and a contiguous innermost dimension. */
static enum rig_status rig__tensor(const struct rig__check *check, const char *arg,
                                   const struct rig_tensor *t, int32_t ndim, enum rig_dtype dtype)
{
    if (t->data == NULL) return rig__fail(check, RIG_E_INVALID, arg, "missing data");
    if (t->ndim != ndim)
        return rig__fail(check, RIG_E_SHAPE, arg, "has %d dims, expected %d", t->ndim, ndim);
    if (t->dtype != dtype)
        return rig__fail(check, RIG_E_DTYPE, arg, "is %s, expected %s", rig_dtype_name(t->dtype),
                         rig_dtype_name(dtype));
    for (int32_t d = 0; d < ndim; d++) {
        if (t->shape[d] < 0) return rig__fail(check, RIG_E_SHAPE, arg, "negative dim %d", d);
    }
    if (!rig_tensor_rows_contiguous(t))
        return rig__fail(check, RIG_E_SHAPE, arg, "innermost stride must be 1");
    return RIG_OK;
}

static enum rig_status rig__dim(const struct rig__check *check, const char *arg,
                                const struct rig_tensor *t, int32_t d, int64_t expected)
{
    if (t->shape[d] == expected) return RIG_OK;
    return rig__fail(check, RIG_E_SHAPE, arg, "dim %d is %lld, expected %lld", d,
                     (long long)t->shape[d], (long long)expected);
}

static enum rig_status rig__check_embedding(const struct rig__check *check,
                                            const struct rig_op_embedding *p)
{
    RIG_TRY(rig__tensor(check, "out", &p->out, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "table", &p->table, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "ids", &p->ids, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(check, "ids", &p->ids, 0, p->out.shape[0]));
    RIG_TRY(rig__dim(check, "table", &p->table, 1, p->out.shape[1]));
    if (p->vocab_start < 0) return rig__fail(check, RIG_E_RANGE, "vocab_start", "negative");
    return RIG_OK;
}

static enum rig_status rig__check_norm_weight(const struct rig__check *check, const char *arg,
                                              const struct rig_tensor *w, int64_t h, float eps)
{
    RIG_TRY(rig__tensor(check, arg, w, 1, RIG_DTYPE_BF16));
    RIG_TRY(rig__dim(check, arg, w, 0, h));
    if (!(eps > 0.0f)) return rig__fail(check, RIG_E_INVALID, "eps", "must be > 0");
    return RIG_OK;
}

static enum rig_status rig__check_rms_norm(const struct rig__check *check,
                                           const struct rig_op_rms_norm *p)
{
    RIG_TRY(rig__tensor(check, "out", &p->out, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "in", &p->in, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__dim(check, "in", &p->in, 0, p->out.shape[0]));
    RIG_TRY(rig__dim(check, "in", &p->in, 1, p->out.shape[1]));
    return rig__check_norm_weight(check, "weight", &p->weight, p->out.shape[1], p->eps);
}

static enum rig_status rig__check_add_rms_norm(const struct rig__check *check,
                                               const struct rig_op_add_rms_norm *p)
{
    RIG_TRY(rig__tensor(check, "out", &p->out, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "residual", &p->residual, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "in", &p->in, 2, RIG_DTYPE_BF16));
    for (int32_t d = 0; d < 2; d++) {
        RIG_TRY(rig__dim(check, "in", &p->in, d, p->out.shape[d]));
        RIG_TRY(rig__dim(check, "residual", &p->residual, d, p->out.shape[d]));
    }
    return rig__check_norm_weight(check, "weight", &p->weight, p->out.shape[1], p->eps);
}

/* Whether the bytes a 2-D tensor's rows span meet another's (both non-empty). */
static bool rig__overlap(const struct rig_tensor *x, const struct rig_tensor *y)
{
    if (x->data == NULL || y->data == NULL || rig_tensor_numel(x) == 0 || rig_tensor_numel(y) == 0)
        return false;
    const uint8_t *x0 = x->data, *y0 = y->data;
    const uint8_t *x1 = x0 + (size_t)((x->shape[0] - 1) * x->stride[0] + x->shape[1]) *
                                 rig_dtype_size(x->dtype);
    const uint8_t *y1 = y0 + (size_t)((y->shape[0] - 1) * y->stride[0] + y->shape[1]) *
                                 rig_dtype_size(y->dtype);
    return x0 < y1 && y0 < x1;
}

/* The fused forms' fields (ops.h): a prologue's operand and weight, accumulate's out. */
static enum rig_status rig__check_gemm_fused(const struct rig__check *check,
                                             const struct rig_op_gemm *p, int64_t depth)
{
    if ((int32_t)p->prologue < 0 || (int32_t)p->prologue >= RIG_GEMM_PROLOGUES)
        return rig__fail(check, RIG_E_INVALID, "prologue", "unknown kind %d", (int)p->prologue);
    if (p->accumulate) {
        if (p->out.dtype != RIG_DTYPE_BF16)
            return rig__fail(check, RIG_E_DTYPE, "out", "must be bf16 to accumulate");
        if (p->bias.data != NULL)
            return rig__fail(check, RIG_E_INVALID, "bias", "not allowed with accumulate");
    }
    if (rig__overlap(&p->out, &p->a) || rig__overlap(&p->out, &p->b))
        return rig__fail(check, RIG_E_INVALID, "out", "overlaps an input");
    if (p->prologue != RIG_GEMM_PROLOGUE_RMS_NORM && p->norm_weight.data != NULL)
        return rig__fail(check, RIG_E_INVALID, "norm_weight", "given without RMS_NORM");
    if (p->prologue == RIG_GEMM_PROLOGUE_NONE) {
        if (p->operand.data != NULL)
            return rig__fail(check, RIG_E_INVALID, "operand", "given without a prologue");
        return RIG_OK;
    }
    if (p->prologue == RIG_GEMM_PROLOGUE_SILU_MUL && p->a.shape[1] % 2 != 0)
        return rig__fail(check, RIG_E_SHAPE, "a", "width %lld is not [gate | up]",
                         (long long)p->a.shape[1]);
    RIG_TRY(rig__tensor(check, "operand", &p->operand, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__dim(check, "operand", &p->operand, 0, p->out.shape[0]));
    RIG_TRY(rig__dim(check, "operand", &p->operand, 1, depth));
    if (rig__overlap(&p->operand, &p->a) || rig__overlap(&p->operand, &p->out))
        return rig__fail(check, RIG_E_INVALID, "operand", "overlaps a or out");
    if (p->prologue == RIG_GEMM_PROLOGUE_RMS_NORM)
        return rig__check_norm_weight(check, "norm_weight", &p->norm_weight, depth, p->eps);
    return RIG_OK;
}

static enum rig_status rig__check_gemm(const struct rig__check *check, const struct rig_op_gemm *p)
{
    enum rig_dtype out_dtype = p->out.dtype == RIG_DTYPE_F32 ? RIG_DTYPE_F32 : RIG_DTYPE_BF16;
    RIG_TRY(rig__tensor(check, "out", &p->out, 2, out_dtype));
    RIG_TRY(rig__tensor(check, "a", &p->a, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "b", &p->b, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__dim(check, "a", &p->a, 0, p->out.shape[0]));
    RIG_TRY(rig__dim(check, "b", &p->b, 0, p->out.shape[1]));
    int64_t depth = p->prologue == RIG_GEMM_PROLOGUE_SILU_MUL ? p->a.shape[1] / 2 : p->a.shape[1];
    RIG_TRY(rig__dim(check, "b", &p->b, 1, depth));
    if (p->bias.data != NULL) {
        RIG_TRY(rig__tensor(check, "bias", &p->bias, 1, RIG_DTYPE_BF16));
        RIG_TRY(rig__dim(check, "bias", &p->bias, 0, p->out.shape[1]));
    }
    return rig__check_gemm_fused(check, p, depth);
}

static enum rig_status rig__check_head_rms_norm(const struct rig__check *check,
                                                const struct rig_op_head_rms_norm *p)
{
    RIG_TRY(rig__tensor(check, "x", &p->x, 3, RIG_DTYPE_BF16));
    return rig__check_norm_weight(check, "weight", &p->weight, p->x.shape[2], p->eps);
}

/* Even head dim of q, positive theta, known scaling with sane llama3 parameters. */
static enum rig_status rig__check_rope_params(const struct rig__check *check,
                                              const struct rig_tensor *q,
                                              const struct rig_rope_params *params)
{
    if (q->shape[2] % 2 != 0) return rig__fail(check, RIG_E_SHAPE, "q", "head dim must be even");
    if (!(params->theta > 0.0f)) return rig__fail(check, RIG_E_INVALID, "theta", "must be > 0");
    if (params->scaling == RIG_ROPE_SCALING_LLAMA3) {
        if (!(params->factor > 0.0f) || !(params->high_freq_factor > params->low_freq_factor) ||
            params->original_max_position <= 0)
            return rig__fail(check, RIG_E_INVALID, "params", "bad llama3 scaling parameters");
    } else if (params->scaling != RIG_ROPE_SCALING_NONE) {
        return rig__fail(check, RIG_E_INVALID, "params", "unknown scaling type");
    }
    return RIG_OK;
}

static enum rig_status rig__check_rope(const struct rig__check *check, const struct rig_op_rope *p)
{
    RIG_TRY(rig__tensor(check, "q", &p->q, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "k", &p->k, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "positions", &p->positions, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(check, "k", &p->k, 0, p->q.shape[0]));
    RIG_TRY(rig__dim(check, "k", &p->k, 2, p->q.shape[2]));
    RIG_TRY(rig__dim(check, "positions", &p->positions, 0, p->q.shape[0]));
    return rig__check_rope_params(check, &p->q, &p->params);
}

/* Shared checks of the KV cache pair against the head layout of k (or q). */
static enum rig_status rig__check_cache(const struct rig__check *check,
                                        const struct rig_tensor *k_cache,
                                        const struct rig_tensor *v_cache, int64_t heads_kv,
                                        int64_t head_dim)
{
    RIG_TRY(rig__tensor(check, "k_cache", k_cache, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "v_cache", v_cache, 3, RIG_DTYPE_BF16));
    for (int32_t d = 0; d < 3; d++)
        RIG_TRY(rig__dim(check, "v_cache", v_cache, d, k_cache->shape[d]));
    RIG_TRY(rig__dim(check, "k_cache", k_cache, 1, heads_kv));
    RIG_TRY(rig__dim(check, "k_cache", k_cache, 2, head_dim));
    return RIG_OK;
}

static enum rig_status rig__check_store_kv(const struct rig__check *check,
                                           const struct rig_op_store_kv *p)
{
    RIG_TRY(rig__tensor(check, "k", &p->k, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "v", &p->v, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "out_loc", &p->out_loc, 1, RIG_DTYPE_I32));
    for (int32_t d = 0; d < 3; d++)
        RIG_TRY(rig__dim(check, "v", &p->v, d, p->k.shape[d]));
    RIG_TRY(rig__dim(check, "out_loc", &p->out_loc, 0, p->k.shape[0]));
    return rig__check_cache(check, &p->k_cache, &p->v_cache, p->k.shape[1], p->k.shape[2]);
}

/* q, k, v: heads agree (GQA: Hq a multiple of Hk), norm weights both present or both absent. */
static enum rig_status rig__check_qk_norm_rope_store(const struct rig__check *check,
                                                     const struct rig_op_qk_norm_rope_store *p)
{
    RIG_TRY(rig__tensor(check, "q", &p->q, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "k", &p->k, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "v", &p->v, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__dim(check, "k", &p->k, 0, p->q.shape[0]));
    RIG_TRY(rig__dim(check, "k", &p->k, 2, p->q.shape[2]));
    for (int32_t d = 0; d < 3; d++)
        RIG_TRY(rig__dim(check, "v", &p->v, d, p->k.shape[d]));
    if (p->k.shape[1] <= 0 || p->q.shape[1] % p->k.shape[1] != 0)
        return rig__fail(check, RIG_E_SHAPE, "q",
                         "%lld query heads not a multiple of %lld KV heads",
                         (long long)p->q.shape[1], (long long)p->k.shape[1]);
    RIG_TRY(rig__check_cache(check, &p->k_cache, &p->v_cache, p->k.shape[1], p->k.shape[2]));
    RIG_TRY(rig__tensor(check, "positions", &p->positions, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__tensor(check, "out_loc", &p->out_loc, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(check, "positions", &p->positions, 0, p->q.shape[0]));
    RIG_TRY(rig__dim(check, "out_loc", &p->out_loc, 0, p->q.shape[0]));
    if ((p->q_norm.data == NULL) != (p->k_norm.data == NULL))
        return rig__fail(check, RIG_E_INVALID, "q_norm/k_norm", "both present or both absent");
    if (p->q_norm.data != NULL) {
        RIG_TRY(rig__tensor(check, "q_norm", &p->q_norm, 1, RIG_DTYPE_BF16));
        RIG_TRY(rig__tensor(check, "k_norm", &p->k_norm, 1, RIG_DTYPE_BF16));
        RIG_TRY(rig__dim(check, "q_norm", &p->q_norm, 0, p->q.shape[2]));
        RIG_TRY(rig__dim(check, "k_norm", &p->k_norm, 0, p->q.shape[2]));
        if (!(p->eps > 0.0f)) return rig__fail(check, RIG_E_INVALID, "eps", "must be > 0");
    }
    return rig__check_rope_params(check, &p->q, &p->params);
}

/* Shared checks of attention: q/out heads, GQA ratio, cache, page table, per-request meta. */
static enum rig_status
rig__check_attention(const struct rig__check *check, const struct rig_tensor *out,
                     const struct rig_tensor *q, const struct rig_tensor *k_cache,
                     const struct rig_tensor *v_cache, const struct rig_tensor *page_table,
                     const struct rig_tensor *table_idx, const struct rig_tensor *kv_len,
                     float scale)
{
    RIG_TRY(rig__tensor(check, "out", out, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "q", q, 3, RIG_DTYPE_BF16));
    for (int32_t d = 0; d < 3; d++)
        RIG_TRY(rig__dim(check, "out", out, d, q->shape[d]));
    RIG_TRY(rig__tensor(check, "k_cache", k_cache, 3, RIG_DTYPE_BF16));
    int64_t heads_kv = k_cache->shape[1];
    if (heads_kv <= 0 || q->shape[1] % heads_kv != 0)
        return rig__fail(check, RIG_E_SHAPE, "q",
                         "%lld query heads not a multiple of %lld KV heads", (long long)q->shape[1],
                         (long long)heads_kv);
    RIG_TRY(rig__check_cache(check, k_cache, v_cache, heads_kv, q->shape[2]));
    RIG_TRY(rig__tensor(check, "page_table", page_table, 2, RIG_DTYPE_I32));
    RIG_TRY(rig__tensor(check, "table_idx", table_idx, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__tensor(check, "kv_len", kv_len, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(check, "kv_len", kv_len, 0, table_idx->shape[0]));
    if (!(scale > 0.0f)) return rig__fail(check, RIG_E_INVALID, "scale", "must be > 0");
    return RIG_OK;
}

static enum rig_status rig__check_attention_prefill(const struct rig__check *check,
                                                    const struct rig_op_attention_prefill *p)
{
    RIG_TRY(rig__check_attention(check, &p->out, &p->q, &p->k_cache, &p->v_cache, &p->page_table,
                                 &p->table_idx, &p->kv_len, p->scale));
    RIG_TRY(rig__tensor(check, "cu_q", &p->cu_q, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(check, "cu_q", &p->cu_q, 0, p->table_idx.shape[0] + 1));
    return RIG_OK;
}

static enum rig_status rig__check_attention_decode(const struct rig__check *check,
                                                   const struct rig_op_attention_decode *p)
{
    RIG_TRY(rig__check_attention(check, &p->out, &p->q, &p->k_cache, &p->v_cache, &p->page_table,
                                 &p->table_idx, &p->kv_len, p->scale));
    RIG_TRY(rig__dim(check, "table_idx", &p->table_idx, 0, p->q.shape[0]));
    return RIG_OK;
}

/* True when a and b are the same view: data, dtype, shape and strides. */
static bool rig__same_view(const struct rig_tensor *a, const struct rig_tensor *b)
{
    if (a->data != b->data || a->dtype != b->dtype || a->ndim != b->ndim) return false;
    for (int32_t d = 0; d < a->ndim; d++) {
        if (a->shape[d] != b->shape[d] || a->stride[d] != b->stride[d]) return false;
    }
    return true;
}

/* Each op as its own, then what they share (hal/ops.h): q and the caches the same views, one
 * token of store per request of attend. */
static enum rig_status rig__check_attention_decode_store(
    const struct rig__check *check, const struct rig_op_attention_decode_store *p)
{
    RIG_TRY(rig__check_qk_norm_rope_store(check, &p->store));
    RIG_TRY(rig__check_attention_decode(check, &p->attend));
    if (!rig__same_view(&p->store.q, &p->attend.q))
        return rig__fail(check, RIG_E_INVALID, "store.q", "must be attend.q");
    if (!rig__same_view(&p->store.k_cache, &p->attend.k_cache) ||
        !rig__same_view(&p->store.v_cache, &p->attend.v_cache))
        return rig__fail(check, RIG_E_INVALID, "store.k_cache/v_cache",
                         "must be attend's caches");
    return RIG_OK;
}

static enum rig_status rig__check_silu_mul(const struct rig__check *check,
                                           const struct rig_op_silu_mul *p)
{
    RIG_TRY(rig__tensor(check, "out", &p->out, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(check, "in", &p->in, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__dim(check, "in", &p->in, 0, p->out.shape[0]));
    RIG_TRY(rig__dim(check, "in", &p->in, 1, 2 * p->out.shape[1]));
    return RIG_OK;
}

static enum rig_status rig__check_gather_rows(const struct rig__check *check,
                                              const struct rig_op_gather_rows *p)
{
    if (p->in.dtype != RIG_DTYPE_BF16 && p->in.dtype != RIG_DTYPE_F32)
        return rig__fail(check, RIG_E_DTYPE, "in", "must be bf16 or f32");
    RIG_TRY(rig__tensor(check, "in", &p->in, 2, p->in.dtype));
    RIG_TRY(rig__tensor(check, "out", &p->out, 2, p->in.dtype));
    RIG_TRY(rig__tensor(check, "idx", &p->idx, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(check, "idx", &p->idx, 0, p->out.shape[0]));
    RIG_TRY(rig__dim(check, "out", &p->out, 1, p->in.shape[1]));
    return RIG_OK;
}

/* `flat` / `values` name the arguments as the op's struct does, for the messages. */
static enum rig_status rig__check_index(const struct rig__check *check, const char *flat_name,
                                        const struct rig_tensor *flat, const char *values_name,
                                        const struct rig_tensor *values,
                                        const struct rig_tensor *idx)
{
    RIG_TRY(rig__tensor(check, flat_name, flat, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__tensor(check, values_name, values, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__tensor(check, "idx", idx, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(check, "idx", idx, 0, values->shape[0]));
    return RIG_OK;
}

/* A [rows] vector of `dtype`. */
static enum rig_status rig__per_row(const struct rig__check *check, const char *arg,
                                    const struct rig_tensor *t, enum rig_dtype dtype, int64_t rows)
{
    RIG_TRY(rig__tensor(check, arg, t, 1, dtype));
    return rig__dim(check, arg, t, 0, rows);
}

/* The [R, V] f32 logits of a sampling op, V >= 1. */
static enum rig_status rig__logits(const struct rig__check *check, const struct rig_tensor *logits)
{
    RIG_TRY(rig__tensor(check, "logits", logits, 2, RIG_DTYPE_F32));
    if (logits->shape[1] < 1) return rig__fail(check, RIG_E_SHAPE, "logits", "empty vocabulary");
    return RIG_OK;
}

static enum rig_status rig__check_sample(const struct rig__check *check,
                                         const struct rig_op_sample *p)
{
    RIG_TRY(rig__logits(check, &p->logits));
    int64_t rows = p->logits.shape[0];
    RIG_TRY(rig__per_row(check, "tokens", &p->tokens, RIG_DTYPE_I32, rows));
    RIG_TRY(rig__per_row(check, "temperature", &p->temperature, RIG_DTYPE_F32, rows));
    RIG_TRY(rig__per_row(check, "top_k", &p->top_k, RIG_DTYPE_I32, rows));
    RIG_TRY(rig__per_row(check, "top_p", &p->top_p, RIG_DTYPE_F32, rows));
    RIG_TRY(rig__per_row(check, "seed", &p->seed, RIG_DTYPE_I64, rows));
    RIG_TRY(rig__per_row(check, "position", &p->position, RIG_DTYPE_I32, rows));
    if (p->min_p.data != NULL)
        RIG_TRY(rig__per_row(check, "min_p", &p->min_p, RIG_DTYPE_F32, rows));
    if (p->checked.data == NULL) return RIG_OK;
    return rig__per_row(check, "checked", &p->checked, RIG_DTYPE_I32, rows);
}

static enum rig_status rig__check_penalize(const struct rig__check *check,
                                           const struct rig_op_penalize *p)
{
    RIG_TRY(rig__logits(check, &p->logits));
    int64_t rows = p->logits.shape[0];
    RIG_TRY(rig__tensor(check, "counts", &p->counts, 2, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(check, "counts", &p->counts, 0, rows));
    RIG_TRY(rig__dim(check, "counts", &p->counts, 1, p->logits.shape[1]));
    RIG_TRY(rig__tensor(check, "token_pool", &p->token_pool, 2, RIG_DTYPE_I32));
    RIG_TRY(rig__per_row(check, "table_idx", &p->table_idx, RIG_DTYPE_I32, rows));
    RIG_TRY(rig__per_row(check, "kv_len", &p->kv_len, RIG_DTYPE_I32, rows));
    RIG_TRY(rig__per_row(check, "out_len", &p->out_len, RIG_DTYPE_I32, rows));
    RIG_TRY(rig__per_row(check, "repetition", &p->repetition, RIG_DTYPE_F32, rows));
    RIG_TRY(rig__per_row(check, "frequency", &p->frequency, RIG_DTYPE_F32, rows));
    return rig__per_row(check, "presence", &p->presence, RIG_DTYPE_F32, rows);
}

static enum rig_status rig__check_logprobs(const struct rig__check *check,
                                           const struct rig_op_logprobs *p)
{
    RIG_TRY(rig__logits(check, &p->logits));
    int64_t rows = p->logits.shape[0], vocab = p->logits.shape[1];
    RIG_TRY(rig__per_row(check, "logprob", &p->logprob, RIG_DTYPE_F32, rows));
    RIG_TRY(rig__per_row(check, "temperature", &p->temperature, RIG_DTYPE_F32, rows));
    RIG_TRY(rig__per_row(check, "tokens", &p->tokens, RIG_DTYPE_I32, rows));
    if (p->top_ids.data == NULL && p->top_logprobs.data == NULL) return RIG_OK;
    RIG_TRY(rig__tensor(check, "top_ids", &p->top_ids, 2, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(check, "top_ids", &p->top_ids, 0, rows));
    int64_t n = p->top_ids.shape[1];
    if (n < 1 || n > RIG_LOGPROBS_TOP_MAX || n > vocab)
        return rig__fail(check, RIG_E_SHAPE, "top_ids", "%lld alternatives (1 .. min(V, %d))",
                         (long long)n, RIG_LOGPROBS_TOP_MAX);
    RIG_TRY(rig__tensor(check, "top_logprobs", &p->top_logprobs, 2, RIG_DTYPE_F32));
    RIG_TRY(rig__dim(check, "top_logprobs", &p->top_logprobs, 0, rows));
    return rig__dim(check, "top_logprobs", &p->top_logprobs, 1, n);
}

static enum rig_status rig__check_copy(const struct rig__check *check, const struct rig_op_copy *p)
{
    if (p->out.data == NULL || p->in.data == NULL)
        return rig__fail(check, RIG_E_INVALID, "out/in", "missing data");
    if (p->in.ndim != p->out.ndim || p->in.ndim < 1 || p->in.ndim > RIG_TENSOR_DIMS_MAX)
        return rig__fail(check, RIG_E_SHAPE, "in", "rank differs from out");
    for (int32_t d = 0; d < p->in.ndim; d++)
        RIG_TRY(rig__dim(check, "in", &p->in, d, p->out.shape[d]));
    bool float_pair = (p->in.dtype == RIG_DTYPE_BF16 || p->in.dtype == RIG_DTYPE_F32) &&
                      (p->out.dtype == RIG_DTYPE_BF16 || p->out.dtype == RIG_DTYPE_F32);
    if (p->in.dtype != p->out.dtype && !float_pair)
        return rig__fail(check, RIG_E_DTYPE, "out", "%s to %s not supported",
                         rig_dtype_name(p->in.dtype), rig_dtype_name(p->out.dtype));
    return RIG_OK;
}

static enum rig_status rig__check_collective_dtype(const struct rig__check *check, const char *arg,
                                                   const struct rig_tensor *t)
{
    if (t->dtype != RIG_DTYPE_BF16 && t->dtype != RIG_DTYPE_F32)
        return rig__fail(check, RIG_E_DTYPE, arg, "must be bf16 or f32");
    if (t->data == NULL) return rig__fail(check, RIG_E_INVALID, arg, "missing data");
    if (!rig_tensor_is_contiguous(t)) return rig__fail(check, RIG_E_SHAPE, arg, "not contiguous");
    return RIG_OK;
}

static enum rig_status rig__check_all_gather(const struct rig__check *check,
                                             const struct rig_op_all_gather *p)
{
    if (p->comm == NULL) return rig__fail(check, RIG_E_HANDLE, "comm", "missing");
    RIG_TRY(rig__check_collective_dtype(check, "in", &p->in));
    RIG_TRY(rig__check_collective_dtype(check, "out", &p->out));
    if (p->out.dtype != p->in.dtype) return rig__fail(check, RIG_E_DTYPE, "out", "dtype differs");
    if (p->out.ndim != p->in.ndim + 1)
        return rig__fail(check, RIG_E_SHAPE, "out", "must be [ranks, ...in shape]");
    RIG_TRY(rig__dim(check, "out", &p->out, 0, p->comm->size));
    for (int32_t d = 0; d < p->in.ndim; d++)
        RIG_TRY(rig__dim(check, "out", &p->out, d + 1, p->in.shape[d]));
    return RIG_OK;
}

/* The op's own check; `check` carries its name. */
static enum rig_status rig__check_op(const struct rig__check *check, const struct rig_op *op)
{
    switch (op->kind) {
    case RIG_OP_EMBEDDING: return rig__check_embedding(check, &op->u.embedding);
    case RIG_OP_RMS_NORM: return rig__check_rms_norm(check, &op->u.rms_norm);
    case RIG_OP_ADD_RMS_NORM: return rig__check_add_rms_norm(check, &op->u.add_rms_norm);
    case RIG_OP_GEMM: return rig__check_gemm(check, &op->u.gemm);
    case RIG_OP_HEAD_RMS_NORM: return rig__check_head_rms_norm(check, &op->u.head_rms_norm);
    case RIG_OP_ROPE: return rig__check_rope(check, &op->u.rope);
    case RIG_OP_STORE_KV: return rig__check_store_kv(check, &op->u.store_kv);
    case RIG_OP_QK_NORM_ROPE_STORE:
        return rig__check_qk_norm_rope_store(check, &op->u.qk_norm_rope_store);
    case RIG_OP_ATTENTION_PREFILL:
        return rig__check_attention_prefill(check, &op->u.attention_prefill);
    case RIG_OP_ATTENTION_DECODE:
        return rig__check_attention_decode(check, &op->u.attention_decode);
    case RIG_OP_SILU_MUL: return rig__check_silu_mul(check, &op->u.silu_mul);
    case RIG_OP_GATHER_ROWS: return rig__check_gather_rows(check, &op->u.gather_rows);
    case RIG_OP_INDEX_GATHER:
        return rig__check_index(check, "src", &op->u.index_gather.src, "out",
                                &op->u.index_gather.out, &op->u.index_gather.idx);
    case RIG_OP_INDEX_SCATTER:
        return rig__check_index(check, "dst", &op->u.index_scatter.dst, "src",
                                &op->u.index_scatter.src, &op->u.index_scatter.idx);
    case RIG_OP_SAMPLE: return rig__check_sample(check, &op->u.sample);
    case RIG_OP_COPY: return rig__check_copy(check, &op->u.copy);
    case RIG_OP_ALL_REDUCE:
        if (op->u.all_reduce.comm == NULL) return rig__fail(check, RIG_E_HANDLE, "comm", "missing");
        return rig__check_collective_dtype(check, "data", &op->u.all_reduce.data);
    case RIG_OP_ALL_GATHER: return rig__check_all_gather(check, &op->u.all_gather);
    case RIG_OP_PENALIZE: return rig__check_penalize(check, &op->u.penalize);
    case RIG_OP_LOGPROBS: return rig__check_logprobs(check, &op->u.logprobs);
    case RIG_OP_ATTENTION_DECODE_STORE:
        return rig__check_attention_decode_store(check, &op->u.attention_decode_store);
    case RIG_OP_COUNT: break;
    }
    RIG_UNREACHABLE(); /* rig_hal_op_check let only known kinds through */
}

enum rig_status rig_hal_op_check(const struct rig_op *op, char *error, size_t error_len)
{
    if (error != NULL && error_len > 0) error[0] = '\0';
    if (op == NULL) return RIG_E_INVALID;
    if ((unsigned)op->kind >= RIG_OP_COUNT) {
        const struct rig__check check = {"op", error, error_len};
        return rig__fail(&check, RIG_E_INVALID, "kind", "unknown op kind %d", (int)op->kind);
    }
    const struct rig__check check = {rig_op_name(op->kind), error, error_len};
    return rig__check_op(&check, op);
}
