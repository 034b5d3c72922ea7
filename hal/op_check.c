/* op_check.c — validation of every op before a backend sees it.
 *
 * Each check returns RIG_E_SHAPE / RIG_E_DTYPE / RIG_E_INVALID with a message naming the op
 * and the argument ("gemm: b: shape [64, 32] does not match ..."), kept per thread for
 * rig_hal_last_error(). Checks cover what a backend needs to index memory safely: ranks,
 * shapes that must agree, dtypes, contiguous innermost dimensions, non-NULL data. Values
 * inside index tensors live in device memory and cannot be checked here; kernels clamp or
 * trust them as documented per op.
 */
#include <stdarg.h>

#include "hal/hal_impl.h"

static _Thread_local char rig__error[256];

const char *rig_hal_last_error(void)
{
    return rig__error;
}

static enum rig_status rig__fail(enum rig_status status, const char *op, const char *arg,
                                 const char *format, ...)
{
    int used = snprintf(rig__error, sizeof rig__error, "%s: %s: ", op, arg);
    if (used < 0 || (size_t)used >= sizeof rig__error) return status;
    va_list ap;
    va_start(ap, format);
    vsnprintf(rig__error + used, sizeof rig__error - (size_t)used, format, ap);
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
static enum rig_status rig__tensor(const char *op, const char *arg, const struct rig_tensor *t,
                                   int32_t ndim, enum rig_dtype dtype)
{
    if (t->data == NULL) return rig__fail(RIG_E_INVALID, op, arg, "missing data");
    if (t->ndim != ndim)
        return rig__fail(RIG_E_SHAPE, op, arg, "has %d dims, expected %d", t->ndim, ndim);
    if (t->dtype != dtype)
        return rig__fail(RIG_E_DTYPE, op, arg, "is %s, expected %s", rig_dtype_name(t->dtype),
                         rig_dtype_name(dtype));
    for (int32_t d = 0; d < ndim; d++) {
        if (t->shape[d] < 0) return rig__fail(RIG_E_SHAPE, op, arg, "negative dim %d", d);
    }
    if (!rig_tensor_rows_contiguous(t))
        return rig__fail(RIG_E_SHAPE, op, arg, "innermost stride must be 1");
    return RIG_OK;
}

static enum rig_status rig__dim(const char *op, const char *arg, const struct rig_tensor *t,
                                int32_t d, int64_t expected)
{
    if (t->shape[d] == expected) return RIG_OK;
    return rig__fail(RIG_E_SHAPE, op, arg, "dim %d is %lld, expected %lld", d,
                     (long long)t->shape[d], (long long)expected);
}

static enum rig_status rig__check_embedding(const struct rig_op_embedding *p)
{
    const char *op = "embedding";
    RIG_TRY(rig__tensor(op, "out", &p->out, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "table", &p->table, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "ids", &p->ids, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(op, "ids", &p->ids, 0, p->out.shape[0]));
    RIG_TRY(rig__dim(op, "table", &p->table, 1, p->out.shape[1]));
    if (p->vocab_start < 0) return rig__fail(RIG_E_RANGE, op, "vocab_start", "negative");
    return RIG_OK;
}

static enum rig_status rig__check_norm_weight(const char *op, const struct rig_tensor *w,
                                              int64_t h, float eps)
{
    RIG_TRY(rig__tensor(op, "weight", w, 1, RIG_DTYPE_BF16));
    RIG_TRY(rig__dim(op, "weight", w, 0, h));
    if (!(eps > 0.0f)) return rig__fail(RIG_E_INVALID, op, "eps", "must be > 0");
    return RIG_OK;
}

static enum rig_status rig__check_rms_norm(const struct rig_op_rms_norm *p)
{
    const char *op = "rms_norm";
    RIG_TRY(rig__tensor(op, "out", &p->out, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "in", &p->in, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__dim(op, "in", &p->in, 0, p->out.shape[0]));
    RIG_TRY(rig__dim(op, "in", &p->in, 1, p->out.shape[1]));
    return rig__check_norm_weight(op, &p->weight, p->out.shape[1], p->eps);
}

static enum rig_status rig__check_add_rms_norm(const struct rig_op_add_rms_norm *p)
{
    const char *op = "add_rms_norm";
    RIG_TRY(rig__tensor(op, "out", &p->out, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "residual", &p->residual, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "in", &p->in, 2, RIG_DTYPE_BF16));
    for (int32_t d = 0; d < 2; d++) {
        RIG_TRY(rig__dim(op, "in", &p->in, d, p->out.shape[d]));
        RIG_TRY(rig__dim(op, "residual", &p->residual, d, p->out.shape[d]));
    }
    return rig__check_norm_weight(op, &p->weight, p->out.shape[1], p->eps);
}

static enum rig_status rig__check_gemm(const struct rig_op_gemm *p)
{
    const char *op = "gemm";
    enum rig_dtype out_dtype = p->out.dtype == RIG_DTYPE_F32 ? RIG_DTYPE_F32 : RIG_DTYPE_BF16;
    RIG_TRY(rig__tensor(op, "out", &p->out, 2, out_dtype));
    RIG_TRY(rig__tensor(op, "a", &p->a, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "b", &p->b, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__dim(op, "a", &p->a, 0, p->out.shape[0]));
    RIG_TRY(rig__dim(op, "b", &p->b, 0, p->out.shape[1]));
    RIG_TRY(rig__dim(op, "b", &p->b, 1, p->a.shape[1]));
    if (p->bias.data != NULL) {
        RIG_TRY(rig__tensor(op, "bias", &p->bias, 1, RIG_DTYPE_BF16));
        RIG_TRY(rig__dim(op, "bias", &p->bias, 0, p->out.shape[1]));
    }
    return RIG_OK;
}

static enum rig_status rig__check_head_rms_norm(const struct rig_op_head_rms_norm *p)
{
    const char *op = "head_rms_norm";
    RIG_TRY(rig__tensor(op, "x", &p->x, 3, RIG_DTYPE_BF16));
    return rig__check_norm_weight(op, &p->weight, p->x.shape[2], p->eps);
}

/* Even head dim of q, positive theta, known scaling with sane llama3 parameters. */
static enum rig_status rig__check_rope_params(const char *op, const struct rig_tensor *q,
                                              const struct rig_rope_params *params)
{
    if (q->shape[2] % 2 != 0) return rig__fail(RIG_E_SHAPE, op, "q", "head dim must be even");
    if (!(params->theta > 0.0f)) return rig__fail(RIG_E_INVALID, op, "theta", "must be > 0");
    if (params->scaling == RIG_ROPE_SCALING_LLAMA3) {
        if (!(params->factor > 0.0f) || !(params->high_freq_factor > params->low_freq_factor) ||
            params->original_max_position <= 0)
            return rig__fail(RIG_E_INVALID, op, "params", "bad llama3 scaling parameters");
    } else if (params->scaling != RIG_ROPE_SCALING_NONE) {
        return rig__fail(RIG_E_INVALID, op, "params", "unknown scaling type");
    }
    return RIG_OK;
}

static enum rig_status rig__check_rope(const struct rig_op_rope *p)
{
    const char *op = "rope";
    RIG_TRY(rig__tensor(op, "q", &p->q, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "k", &p->k, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "positions", &p->positions, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(op, "k", &p->k, 0, p->q.shape[0]));
    RIG_TRY(rig__dim(op, "k", &p->k, 2, p->q.shape[2]));
    RIG_TRY(rig__dim(op, "positions", &p->positions, 0, p->q.shape[0]));
    return rig__check_rope_params(op, &p->q, &p->params);
}

/* Shared checks of the KV cache pair against the head layout of k (or q). */
static enum rig_status rig__check_cache(const char *op, const struct rig_tensor *k_cache,
                                        const struct rig_tensor *v_cache, int64_t heads_kv,
                                        int64_t head_dim)
{
    RIG_TRY(rig__tensor(op, "k_cache", k_cache, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "v_cache", v_cache, 3, RIG_DTYPE_BF16));
    for (int32_t d = 0; d < 3; d++)
        RIG_TRY(rig__dim(op, "v_cache", v_cache, d, k_cache->shape[d]));
    RIG_TRY(rig__dim(op, "k_cache", k_cache, 1, heads_kv));
    RIG_TRY(rig__dim(op, "k_cache", k_cache, 2, head_dim));
    return RIG_OK;
}

static enum rig_status rig__check_store_kv(const struct rig_op_store_kv *p)
{
    const char *op = "store_kv";
    RIG_TRY(rig__tensor(op, "k", &p->k, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "v", &p->v, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "out_loc", &p->out_loc, 1, RIG_DTYPE_I32));
    for (int32_t d = 0; d < 3; d++) RIG_TRY(rig__dim(op, "v", &p->v, d, p->k.shape[d]));
    RIG_TRY(rig__dim(op, "out_loc", &p->out_loc, 0, p->k.shape[0]));
    return rig__check_cache(op, &p->k_cache, &p->v_cache, p->k.shape[1], p->k.shape[2]);
}

/* q, k, v: heads agree (GQA: Hq a multiple of Hk), norm weights both present or both absent. */
static enum rig_status rig__check_qk_norm_rope_store(const struct rig_op_qk_norm_rope_store *p)
{
    const char *op = "qk_norm_rope_store";
    RIG_TRY(rig__tensor(op, "q", &p->q, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "k", &p->k, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "v", &p->v, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__dim(op, "k", &p->k, 0, p->q.shape[0]));
    RIG_TRY(rig__dim(op, "k", &p->k, 2, p->q.shape[2]));
    for (int32_t d = 0; d < 3; d++)
        RIG_TRY(rig__dim(op, "v", &p->v, d, p->k.shape[d]));
    if (p->k.shape[1] <= 0 || p->q.shape[1] % p->k.shape[1] != 0)
        return rig__fail(RIG_E_SHAPE, op, "q", "%lld query heads not a multiple of %lld KV heads",
                         (long long)p->q.shape[1], (long long)p->k.shape[1]);
    RIG_TRY(rig__check_cache(op, &p->k_cache, &p->v_cache, p->k.shape[1], p->k.shape[2]));
    RIG_TRY(rig__tensor(op, "positions", &p->positions, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__tensor(op, "out_loc", &p->out_loc, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(op, "positions", &p->positions, 0, p->q.shape[0]));
    RIG_TRY(rig__dim(op, "out_loc", &p->out_loc, 0, p->q.shape[0]));
    if ((p->q_norm.data == NULL) != (p->k_norm.data == NULL))
        return rig__fail(RIG_E_INVALID, op, "q_norm/k_norm", "both present or both absent");
    if (p->q_norm.data != NULL) {
        RIG_TRY(rig__tensor(op, "q_norm", &p->q_norm, 1, RIG_DTYPE_BF16));
        RIG_TRY(rig__tensor(op, "k_norm", &p->k_norm, 1, RIG_DTYPE_BF16));
        RIG_TRY(rig__dim(op, "q_norm", &p->q_norm, 0, p->q.shape[2]));
        RIG_TRY(rig__dim(op, "k_norm", &p->k_norm, 0, p->q.shape[2]));
        if (!(p->eps > 0.0f)) return rig__fail(RIG_E_INVALID, op, "eps", "must be > 0");
    }
    return rig__check_rope_params(op, &p->q, &p->params);
}

/* Shared checks of attention: q/out heads, GQA ratio, cache, page table, per-request meta. */
static enum rig_status rig__check_attention(const char *op, const struct rig_tensor *out,
                                            const struct rig_tensor *q,
                                            const struct rig_tensor *k_cache,
                                            const struct rig_tensor *v_cache,
                                            const struct rig_tensor *page_table,
                                            const struct rig_tensor *table_idx,
                                            const struct rig_tensor *kv_len, float scale)
{
    RIG_TRY(rig__tensor(op, "out", out, 3, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "q", q, 3, RIG_DTYPE_BF16));
    for (int32_t d = 0; d < 3; d++) RIG_TRY(rig__dim(op, "out", out, d, q->shape[d]));
    RIG_TRY(rig__tensor(op, "k_cache", k_cache, 3, RIG_DTYPE_BF16));
    int64_t heads_kv = k_cache->shape[1];
    if (heads_kv <= 0 || q->shape[1] % heads_kv != 0)
        return rig__fail(RIG_E_SHAPE, op, "q", "%lld query heads not a multiple of %lld KV heads",
                         (long long)q->shape[1], (long long)heads_kv);
    RIG_TRY(rig__check_cache(op, k_cache, v_cache, heads_kv, q->shape[2]));
    RIG_TRY(rig__tensor(op, "page_table", page_table, 2, RIG_DTYPE_I32));
    RIG_TRY(rig__tensor(op, "table_idx", table_idx, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__tensor(op, "kv_len", kv_len, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(op, "kv_len", kv_len, 0, table_idx->shape[0]));
    if (!(scale > 0.0f)) return rig__fail(RIG_E_INVALID, op, "scale", "must be > 0");
    return RIG_OK;
}

static enum rig_status rig__check_attention_prefill(const struct rig_op_attention_prefill *p)
{
    const char *op = "attention_prefill";
    RIG_TRY(rig__check_attention(op, &p->out, &p->q, &p->k_cache, &p->v_cache, &p->page_table,
                                  &p->table_idx, &p->kv_len, p->scale));
    RIG_TRY(rig__tensor(op, "cu_q", &p->cu_q, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(op, "cu_q", &p->cu_q, 0, p->table_idx.shape[0] + 1));
    return RIG_OK;
}

static enum rig_status rig__check_attention_decode(const struct rig_op_attention_decode *p)
{
    const char *op = "attention_decode";
    RIG_TRY(rig__check_attention(op, &p->out, &p->q, &p->k_cache, &p->v_cache, &p->page_table,
                                  &p->table_idx, &p->kv_len, p->scale));
    RIG_TRY(rig__dim(op, "table_idx", &p->table_idx, 0, p->q.shape[0]));
    return RIG_OK;
}

static enum rig_status rig__check_silu_mul(const struct rig_op_silu_mul *p)
{
    const char *op = "silu_mul";
    RIG_TRY(rig__tensor(op, "out", &p->out, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__tensor(op, "in", &p->in, 2, RIG_DTYPE_BF16));
    RIG_TRY(rig__dim(op, "in", &p->in, 0, p->out.shape[0]));
    RIG_TRY(rig__dim(op, "in", &p->in, 1, 2 * p->out.shape[1]));
    return RIG_OK;
}

static enum rig_status rig__check_gather_rows(const struct rig_op_gather_rows *p)
{
    const char *op = "gather_rows";
    if (p->in.dtype != RIG_DTYPE_BF16 && p->in.dtype != RIG_DTYPE_F32)
        return rig__fail(RIG_E_DTYPE, op, "in", "must be bf16 or f32");
    RIG_TRY(rig__tensor(op, "in", &p->in, 2, p->in.dtype));
    RIG_TRY(rig__tensor(op, "out", &p->out, 2, p->in.dtype));
    RIG_TRY(rig__tensor(op, "idx", &p->idx, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(op, "idx", &p->idx, 0, p->out.shape[0]));
    RIG_TRY(rig__dim(op, "out", &p->out, 1, p->in.shape[1]));
    return RIG_OK;
}

/* `flat` / `values` name the arguments as the op's struct does, for the messages. */
static enum rig_status rig__check_index(const char *op, const char *flat_name,
                                        const struct rig_tensor *flat, const char *values_name,
                                        const struct rig_tensor *values,
                                        const struct rig_tensor *idx)
{
    RIG_TRY(rig__tensor(op, flat_name, flat, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__tensor(op, values_name, values, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__tensor(op, "idx", idx, 1, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(op, "idx", idx, 0, values->shape[0]));
    return RIG_OK;
}

/* A [rows] vector of `dtype`. */
static enum rig_status rig__per_row(const char *op, const char *arg, const struct rig_tensor *t,
                                    enum rig_dtype dtype, int64_t rows)
{
    RIG_TRY(rig__tensor(op, arg, t, 1, dtype));
    return rig__dim(op, arg, t, 0, rows);
}

/* The [R, V] f32 logits of a sampling op, V >= 1. */
static enum rig_status rig__logits(const char *op, const struct rig_tensor *logits)
{
    RIG_TRY(rig__tensor(op, "logits", logits, 2, RIG_DTYPE_F32));
    if (logits->shape[1] < 1) return rig__fail(RIG_E_SHAPE, op, "logits", "empty vocabulary");
    return RIG_OK;
}

static enum rig_status rig__check_sample(const struct rig_op_sample *p)
{
    const char *op = "sample";
    RIG_TRY(rig__logits(op, &p->logits));
    int64_t rows = p->logits.shape[0];
    RIG_TRY(rig__per_row(op, "tokens", &p->tokens, RIG_DTYPE_I32, rows));
    RIG_TRY(rig__per_row(op, "temperature", &p->temperature, RIG_DTYPE_F32, rows));
    RIG_TRY(rig__per_row(op, "top_k", &p->top_k, RIG_DTYPE_I32, rows));
    RIG_TRY(rig__per_row(op, "top_p", &p->top_p, RIG_DTYPE_F32, rows));
    RIG_TRY(rig__per_row(op, "seed", &p->seed, RIG_DTYPE_I64, rows));
    RIG_TRY(rig__per_row(op, "position", &p->position, RIG_DTYPE_I32, rows));
    if (p->min_p.data != NULL)
        RIG_TRY(rig__per_row(op, "min_p", &p->min_p, RIG_DTYPE_F32, rows));
    if (p->checked.data == NULL) return RIG_OK;
    return rig__per_row(op, "checked", &p->checked, RIG_DTYPE_I32, rows);
}

static enum rig_status rig__check_penalize(const struct rig_op_penalize *p)
{
    const char *op = "penalize";
    RIG_TRY(rig__logits(op, &p->logits));
    int64_t rows = p->logits.shape[0];
    RIG_TRY(rig__tensor(op, "counts", &p->counts, 2, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(op, "counts", &p->counts, 0, rows));
    RIG_TRY(rig__dim(op, "counts", &p->counts, 1, p->logits.shape[1]));
    RIG_TRY(rig__tensor(op, "token_pool", &p->token_pool, 2, RIG_DTYPE_I32));
    RIG_TRY(rig__per_row(op, "table_idx", &p->table_idx, RIG_DTYPE_I32, rows));
    RIG_TRY(rig__per_row(op, "kv_len", &p->kv_len, RIG_DTYPE_I32, rows));
    RIG_TRY(rig__per_row(op, "out_len", &p->out_len, RIG_DTYPE_I32, rows));
    RIG_TRY(rig__per_row(op, "repetition", &p->repetition, RIG_DTYPE_F32, rows));
    RIG_TRY(rig__per_row(op, "frequency", &p->frequency, RIG_DTYPE_F32, rows));
    return rig__per_row(op, "presence", &p->presence, RIG_DTYPE_F32, rows);
}

static enum rig_status rig__check_logprobs(const struct rig_op_logprobs *p)
{
    const char *op = "logprobs";
    RIG_TRY(rig__logits(op, &p->logits));
    int64_t rows = p->logits.shape[0], vocab = p->logits.shape[1];
    RIG_TRY(rig__per_row(op, "logprob", &p->logprob, RIG_DTYPE_F32, rows));
    RIG_TRY(rig__per_row(op, "temperature", &p->temperature, RIG_DTYPE_F32, rows));
    RIG_TRY(rig__per_row(op, "tokens", &p->tokens, RIG_DTYPE_I32, rows));
    if (p->top_ids.data == NULL && p->top_logprobs.data == NULL) return RIG_OK;
    RIG_TRY(rig__tensor(op, "top_ids", &p->top_ids, 2, RIG_DTYPE_I32));
    RIG_TRY(rig__dim(op, "top_ids", &p->top_ids, 0, rows));
    int64_t n = p->top_ids.shape[1];
    if (n < 1 || n > RIG_LOGPROBS_TOP_MAX || n > vocab)
        return rig__fail(RIG_E_SHAPE, op, "top_ids", "%lld alternatives (1 .. min(V, %d))",
                         (long long)n, RIG_LOGPROBS_TOP_MAX);
    RIG_TRY(rig__tensor(op, "top_logprobs", &p->top_logprobs, 2, RIG_DTYPE_F32));
    RIG_TRY(rig__dim(op, "top_logprobs", &p->top_logprobs, 0, rows));
    return rig__dim(op, "top_logprobs", &p->top_logprobs, 1, n);
}

static enum rig_status rig__check_copy(const struct rig_op_copy *p)
{
    const char *op = "copy";
    if (p->out.data == NULL || p->in.data == NULL)
        return rig__fail(RIG_E_INVALID, op, "out/in", "missing data");
    if (p->in.ndim != p->out.ndim || p->in.ndim < 1 || p->in.ndim > RIG_TENSOR_DIMS_MAX)
        return rig__fail(RIG_E_SHAPE, op, "in", "rank differs from out");
    for (int32_t d = 0; d < p->in.ndim; d++)
        RIG_TRY(rig__dim(op, "in", &p->in, d, p->out.shape[d]));
    bool float_pair = (p->in.dtype == RIG_DTYPE_BF16 || p->in.dtype == RIG_DTYPE_F32) &&
                      (p->out.dtype == RIG_DTYPE_BF16 || p->out.dtype == RIG_DTYPE_F32);
    if (p->in.dtype != p->out.dtype && !float_pair)
        return rig__fail(RIG_E_DTYPE, op, "out", "%s to %s not supported",
                         rig_dtype_name(p->in.dtype), rig_dtype_name(p->out.dtype));
    return RIG_OK;
}

static enum rig_status rig__check_collective_dtype(const char *op, const char *arg,
                                                  const struct rig_tensor *t)
{
    if (t->dtype != RIG_DTYPE_BF16 && t->dtype != RIG_DTYPE_F32)
        return rig__fail(RIG_E_DTYPE, op, arg, "must be bf16 or f32");
    if (t->data == NULL) return rig__fail(RIG_E_INVALID, op, arg, "missing data");
    if (!rig_tensor_is_contiguous(t)) return rig__fail(RIG_E_SHAPE, op, arg, "not contiguous");
    return RIG_OK;
}

static enum rig_status rig__check_all_gather(const struct rig_op_all_gather *p)
{
    const char *op = "all_gather";
    if (p->comm == NULL) return rig__fail(RIG_E_HANDLE, op, "comm", "missing");
    RIG_TRY(rig__check_collective_dtype(op, "in", &p->in));
    RIG_TRY(rig__check_collective_dtype(op, "out", &p->out));
    if (p->out.dtype != p->in.dtype) return rig__fail(RIG_E_DTYPE, op, "out", "dtype differs");
    if (p->out.ndim != p->in.ndim + 1)
        return rig__fail(RIG_E_SHAPE, op, "out", "must be [ranks, ...in shape]");
    RIG_TRY(rig__dim(op, "out", &p->out, 0, p->comm->size));
    for (int32_t d = 0; d < p->in.ndim; d++)
        RIG_TRY(rig__dim(op, "out", &p->out, d + 1, p->in.shape[d]));
    return RIG_OK;
}

enum rig_status rig_hal_op_check(const struct rig_op *op)
{
    rig__error[0] = '\0';
    if (op == NULL) return RIG_E_INVALID;
    switch (op->kind) {
    case RIG_OP_EMBEDDING: return rig__check_embedding(&op->u.embedding);
    case RIG_OP_RMS_NORM: return rig__check_rms_norm(&op->u.rms_norm);
    case RIG_OP_ADD_RMS_NORM: return rig__check_add_rms_norm(&op->u.add_rms_norm);
    case RIG_OP_GEMM: return rig__check_gemm(&op->u.gemm);
    case RIG_OP_HEAD_RMS_NORM: return rig__check_head_rms_norm(&op->u.head_rms_norm);
    case RIG_OP_ROPE: return rig__check_rope(&op->u.rope);
    case RIG_OP_STORE_KV: return rig__check_store_kv(&op->u.store_kv);
    case RIG_OP_QK_NORM_ROPE_STORE: return rig__check_qk_norm_rope_store(&op->u.qk_norm_rope_store);
    case RIG_OP_ATTENTION_PREFILL: return rig__check_attention_prefill(&op->u.attention_prefill);
    case RIG_OP_ATTENTION_DECODE: return rig__check_attention_decode(&op->u.attention_decode);
    case RIG_OP_SILU_MUL: return rig__check_silu_mul(&op->u.silu_mul);
    case RIG_OP_GATHER_ROWS: return rig__check_gather_rows(&op->u.gather_rows);
    case RIG_OP_INDEX_GATHER:
        return rig__check_index("index_gather", "src", &op->u.index_gather.src, "out",
                                &op->u.index_gather.out, &op->u.index_gather.idx);
    case RIG_OP_INDEX_SCATTER:
        return rig__check_index("index_scatter", "dst", &op->u.index_scatter.dst, "src",
                                &op->u.index_scatter.src, &op->u.index_scatter.idx);
    case RIG_OP_SAMPLE: return rig__check_sample(&op->u.sample);
    case RIG_OP_COPY: return rig__check_copy(&op->u.copy);
    case RIG_OP_ALL_REDUCE:
        if (op->u.all_reduce.comm == NULL)
            return rig__fail(RIG_E_HANDLE, "all_reduce", "comm", "missing");
        return rig__check_collective_dtype("all_reduce", "data", &op->u.all_reduce.data);
    case RIG_OP_ALL_GATHER: return rig__check_all_gather(&op->u.all_gather);
    case RIG_OP_PENALIZE: return rig__check_penalize(&op->u.penalize);
    case RIG_OP_LOGPROBS: return rig__check_logprobs(&op->u.logprobs);
    case RIG_OP_COUNT: break;
    }
    return rig__fail(RIG_E_INVALID, "op", "kind", "unknown op kind %d", (int)op->kind);
}
