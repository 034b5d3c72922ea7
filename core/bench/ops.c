/* ops.c — a decode step and a prefill step taken apart: every op of the model's forward
 * timed alone on the model's shapes, with how many times a step issues it (profile before
 * tuning).
 *
 * Decode: for each batch (1 and 256; quick: 1 and 8) at context 512, the ops of one layer (norms,
 * the four GEMMs, q/k norm + RoPE + store K/V as one fused op, decode attention, SiLU·mul)
 * and of the step's ends (embedding, last-row gather, LM head, sampling) run on buffers of
 * their real shapes (q, k and v are strided views of the fused QKV rows, as in the model).
 * `share` is count x time / the sum over the step's ops: where a graph-replayed step's time
 * goes. Each time is one issue of the op inside a graph of 20 issues of it (graph node
 * overhead included, host launch time not; eager where the backend has no graphs), so the sum
 * is comparable with the decode rows' graph time. Buffers are filled with a finite bf16
 * constant on a real device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bench/bench_impl.h"
#include "core/model/model.h"

#define RIG__OPS_CONTEXT 512
#define RIG__OPS_REPEAT  20
#define RIG__OPS_PREFILL       8192
#define RIG__OPS_PREFILL_QUICK 512

/* The step taken apart: T tokens of R requests, each attending to C positions. Decode:
 * T = R, C = RIG__OPS_CONTEXT; prefill: R = 1, T = C (one causal chunk, no prefix). */
struct rig__step {
    int64_t T, R, C;
    bool prefill;
};

/* The tensors of one step over four buffers. */
struct rig__ops {
    struct rig_buffer *weights, *acts, *kv, *meta;
    size_t used[4];
    struct rig_tensor wqkv, wo, wgu, wdown, lm, norm, qk_norm;              /* weights */
    struct rig_tensor x, h, res, qkv, q, k, v, attn, gu, act, last, logits; /* [B, ...] */
    struct rig_tensor kc, vc;                                               /* [S, Hk, D] */
    struct rig_tensor ids, pos, loc, table, table_idx, kv_len, last_idx;    /* metadata */
    struct rig_tensor cu_q;                                                 /* [R + 1] */
    struct rig_tensor temp, top_k, top_p, seed, sample_pos, tokens;
};

static struct rig_tensor rig__take(struct rig__ops *s, int32_t which, enum rig_dtype dtype,
                                   int32_t ndim, int64_t n0, int64_t n1, int64_t n2)
{
    struct rig_buffer *buffers[4] = {s->weights, s->acts, s->kv, s->meta};
    int64_t shape[3] = {n0, n1, n2};
    struct rig_tensor t = rig_tensor_make(NULL, dtype, ndim, shape);
    size_t bytes = (size_t)rig_tensor_numel(&t) * rig_dtype_size(dtype);
    RIG_ASSERT(s->used[which] + bytes <= rig_hal_buffer_size(buffers[which]));
    t.data = (uint8_t *)rig_hal_buffer_ptr(buffers[which]) + s->used[which];
    s->used[which] += (bytes + 255) / 256 * 256;
    return t;
}

static void rig__carve(struct rig__ops *s, const struct rig_model_config *c,
                       const struct rig__step *st)
{
    int64_t B = st->T, R = st->R, C = st->C;
    enum rig_dtype bf = RIG_DTYPE_BF16, i32 = RIG_DTYPE_I32, f32 = RIG_DTYPE_F32;
    int64_t H = c->hidden_size, D = c->head_dim, Hq = c->num_heads, Hk = c->num_kv_heads;
    int64_t I = c->intermediate_size, V = c->vocab_size, W = (Hq + 2 * Hk) * D;
    memset(s->used, 0, sizeof s->used);
    s->wqkv = rig__take(s, 0, bf, 2, W, H, 1);
    s->wo = rig__take(s, 0, bf, 2, H, Hq * D, 1);
    s->wgu = rig__take(s, 0, bf, 2, 2 * I, H, 1);
    s->wdown = rig__take(s, 0, bf, 2, H, I, 1);
    s->lm = rig__take(s, 0, bf, 2, V, H, 1);
    s->norm = rig__take(s, 0, bf, 1, H, 1, 1);
    s->qk_norm = rig__take(s, 0, bf, 1, D, 1, 1);
    s->x = rig__take(s, 1, bf, 2, B, H, 1);
    s->h = rig__take(s, 1, bf, 2, B, H, 1);
    s->res = rig__take(s, 1, bf, 2, B, H, 1);
    s->qkv = rig__take(s, 1, bf, 2, B, W, 1);
    s->q = rig_tensor_3d(s->qkv.data, bf, B, Hq, D);
    s->k = rig_tensor_3d((uint8_t *)s->qkv.data + Hq * D * 2, bf, B, Hk, D);
    s->v = rig_tensor_3d((uint8_t *)s->qkv.data + (Hq + Hk) * D * 2, bf, B, Hk, D);
    s->q.stride[0] = s->k.stride[0] = s->v.stride[0] = W;
    s->attn = rig__take(s, 1, bf, 3, B, Hq, D);
    s->gu = rig__take(s, 1, bf, 2, B, 2 * I, 1);
    s->act = rig__take(s, 1, bf, 2, B, I, 1);
    s->last = rig__take(s, 1, bf, 2, R, H, 1);
    s->logits = rig__take(s, 1, f32, 2, R, V, 1);
    s->kc = rig__take(s, 2, bf, 3, R * C, Hk, D);
    s->vc = rig__take(s, 2, bf, 3, R * C, Hk, D);
    struct rig_tensor *per_token[] = {&s->ids, &s->pos, &s->loc};
    for (size_t m = 0; m < RIG_ARRAY_LEN(per_token); m++)
        *per_token[m] = rig__take(s, 3, i32, 1, B, 1, 1);
    struct rig_tensor *per_request[] = {&s->table_idx,  &s->kv_len, &s->last_idx,
                                        &s->top_k,      &s->tokens, &s->sample_pos};
    for (size_t m = 0; m < RIG_ARRAY_LEN(per_request); m++)
        *per_request[m] = rig__take(s, 3, i32, 1, R, 1, 1);
    s->cu_q = rig__take(s, 3, i32, 1, R + 1, 1, 1);
    s->temp = rig__take(s, 3, f32, 1, R, 1, 1);
    s->top_p = rig__take(s, 3, f32, 1, R, 1, 1);
    s->seed = rig__take(s, 3, RIG_DTYPE_I64, 1, R, 1, 1);
    s->table = rig__take(s, 3, i32, 2, R, C, 1);
}

/* Buffer sizes for a step (what rig__carve takes, with alignment slack). */
static void rig__sizes(const struct rig_model_config *c, const struct rig__step *st,
                       size_t bytes[4])
{
    int64_t H = c->hidden_size, D = c->head_dim, Hq = c->num_heads, Hk = c->num_kv_heads;
    int64_t I = c->intermediate_size, V = c->vocab_size, W = (Hq + 2 * Hk) * D;
    int64_t B = st->T, R = st->R, C = st->C;
    bytes[0] = (size_t)(W * H + H * Hq * D + 3 * I * H + V * H + H + D) * 2 + 8 * 256;
    bytes[1] = (size_t)(B * (3 * H + W + Hq * D + 3 * I) * 2 + R * (H * 2 + V * 4)) + 16 * 256;
    bytes[2] = (size_t)(2 * R * C * Hk * D * 2) + 2 * 256;
    bytes[3] = (size_t)(3 * B * 4 + R * (12 + C) * 4) + 16 * 256;
}

/* Host metadata. Decode: request r in row r, slots r * C + p, kv_len C. Prefill: one
 * request, token t at position and slot t, kv_len T. Greedy sampling. */
static enum rig_status rig__stage(struct rig__bench_dev *dev, struct rig__ops *s,
                                  const struct rig__step *st)
{
    size_t bytes = s->used[3];
    uint8_t *host = calloc(bytes, 1);
    if (host == NULL) return RIG_E_NO_MEMORY;
    uint8_t *base = rig_hal_buffer_ptr(s->meta);
#define RIG__AT(t, type) ((type *)(host + ((uint8_t *)(t).data - base)))
    int32_t C = (int32_t)st->C;
    for (int32_t t = 0; t < (int32_t)st->T; t++) {
        RIG__AT(s->ids, int32_t)[t] = (t * 7919) % 10000;
        RIG__AT(s->pos, int32_t)[t] = st->prefill ? t : C - 1;
        RIG__AT(s->loc, int32_t)[t] = st->prefill ? t : t * C + C - 1;
    }
    for (int32_t r = 0; r < (int32_t)st->R; r++) {
        RIG__AT(s->table_idx, int32_t)[r] = r;
        RIG__AT(s->kv_len, int32_t)[r] = C;
        RIG__AT(s->last_idx, int32_t)[r] = st->prefill ? (int32_t)st->T - 1 : r;
        RIG__AT(s->cu_q, int32_t)[r + 1] = st->prefill ? (int32_t)st->T : r + 1;
        RIG__AT(s->top_k, int32_t)[r] = -1;
        RIG__AT(s->top_p, float)[r] = 1.0f;
        RIG__AT(s->seed, int64_t)[r] = r + 1;
        for (int32_t p = 0; p < C; p++)
            RIG__AT(s->table, int32_t)[(int64_t)r * C + p] = r * C + p;
    }
#undef RIG__AT
    enum rig_status status = rig_hal_buffer_upload(dev->stream, s->meta, 0, host, bytes);
    if (status == RIG_OK) status = rig_hal_stream_synchronize(dev->stream);
    free(host);
    return status;
}

struct rig__op_entry {
    const char *name;
    int32_t count; /* per decode step */
    struct rig_op op;
};

#define RIG__OP(kind_, member, ...)                                                                \
    ((struct rig_op){.kind = RIG_OP_##kind_, .u.member = {__VA_ARGS__}})

/* The step's ops in issue order; returns how many. */
static int32_t rig__op_list(const struct rig__ops *s, const struct rig_model_config *c,
                            bool prefill, struct rig__op_entry *e)
{
    int32_t L = c->num_layers, n = 0;
    float eps = c->rms_norm_eps, scale = 1.0f / sqrtf((float)c->head_dim);
    struct rig_tensor none = rig_tensor_none();
    struct rig_tensor attn2d = rig_tensor_2d(s->attn.data, RIG_DTYPE_BF16, s->attn.shape[0],
                                             s->attn.shape[1] * s->attn.shape[2]);
    e[n++] = (struct rig__op_entry){"embedding", 1,
                                    RIG__OP(EMBEDDING, embedding, s->res, s->lm, s->ids, 0)};
    e[n++] = (struct rig__op_entry){
        "add_rms_norm", 2 * L + 1,
        RIG__OP(ADD_RMS_NORM, add_rms_norm, s->h, s->res, s->x, s->norm, eps)};
    e[n++] =
        (struct rig__op_entry){"gemm qkv", L, RIG__OP(GEMM, gemm, s->qkv, s->h, s->wqkv, none)};
    struct rig_tensor q_norm = c->qk_norm ? s->qk_norm : none;
    e[n++] =
        (struct rig__op_entry){"qk_norm_rope_store", L,
                               RIG__OP(QK_NORM_ROPE_STORE, qk_norm_rope_store, s->q, s->k, s->v,
                                       s->kc, s->vc, q_norm, q_norm, s->pos, s->loc, eps, c->rope)};
    if (prefill)
        e[n++] = (struct rig__op_entry){
            "attention_prefill", L,
            RIG__OP(ATTENTION_PREFILL, attention_prefill, s->attn, s->q, s->kc, s->vc, s->table,
                    s->table_idx, s->cu_q, s->kv_len, scale)};
    else
        e[n++] = (struct rig__op_entry){
            "attention_decode", L,
            RIG__OP(ATTENTION_DECODE, attention_decode, s->attn, s->q, s->kc, s->vc, s->table,
                    s->table_idx, s->kv_len, scale)};
    e[n++] = (struct rig__op_entry){"gemm o", L, RIG__OP(GEMM, gemm, s->x, attn2d, s->wo, none)};
    e[n++] =
        (struct rig__op_entry){"gemm gate_up", L, RIG__OP(GEMM, gemm, s->gu, s->h, s->wgu, none)};
    e[n++] = (struct rig__op_entry){"silu_mul", L, RIG__OP(SILU_MUL, silu_mul, s->act, s->gu)};
    e[n++] =
        (struct rig__op_entry){"gemm down", L, RIG__OP(GEMM, gemm, s->x, s->act, s->wdown, none)};
    e[n++] = (struct rig__op_entry){"gather_rows", 1,
                                    RIG__OP(GATHER_ROWS, gather_rows, s->last, s->h, s->last_idx)};
    e[n++] = (struct rig__op_entry){"gemm lm_head", 1,
                                    RIG__OP(GEMM, gemm, s->logits, s->last, s->lm, none)};
    e[n++] = (struct rig__op_entry){"sample", 1,
                                    RIG__OP(SAMPLE, sample, s->tokens, s->logits, s->temp, s->top_k,
                                            s->top_p, s->seed, s->sample_pos, none)};
    return n;
}

static enum rig_status rig__op_once(void *ctx, struct rig_stream *stream)
{
    return rig_hal_op(stream, ctx);
}

static enum rig_status rig__graph_once(void *ctx, struct rig_stream *stream)
{
    return rig_hal_graph_launch(ctx, stream);
}

/* Median device time of one issue of `op`: RIG__OPS_REPEAT issues captured in one graph and
 * replayed (so host launch time, which eager back-to-back timing would measure for short
 * ops, is left out); eagerly where the backend has no graphs. */
static enum rig_status rig__time_op(const struct rig_bench_options *o, struct rig__bench_dev *dev,
                                    struct rig_op *op, double *ns)
{
    enum rig_status status = rig_hal_graph_capture_begin(dev->stream);
    if (status == RIG_E_UNSUPPORTED)
        return rig__bench_time(dev, 2, o->repeats, rig__op_once, op, ns);
    for (int32_t i = 0; i < RIG__OPS_REPEAT && status == RIG_OK; i++)
        status = rig_hal_op(dev->stream, op);
    struct rig_graph *graph = NULL;
    enum rig_status end = rig_hal_graph_capture_end(dev->stream, &graph);
    if (status == RIG_OK) status = end;
    if (status == RIG_OK) status = rig__bench_time(dev, 1, o->repeats, rig__graph_once, graph, ns);
    if (graph != NULL) rig_hal_graph_destroy(graph);
    *ns /= RIG__OPS_REPEAT;
    return status;
}

static enum rig_status rig__alloc(struct rig__bench_dev *dev, const struct rig_model_config *c,
                                  struct rig__ops *s, const struct rig__step *st)
{
    size_t bytes[4];
    rig__sizes(c, st, bytes);
    static const enum rig_memory_use uses[4] = {RIG_MEMORY_WEIGHTS, RIG_MEMORY_ACTIVATIONS,
                                                RIG_MEMORY_KV, RIG_MEMORY_METADATA};
    struct rig_buffer **out[4] = {&s->weights, &s->acts, &s->kv, &s->meta};
    enum rig_status status = RIG_OK;
    for (int32_t i = 0; i < 4 && status == RIG_OK; i++)
        status = rig_hal_buffer_alloc(dev->device, bytes[i], uses[i], out[i]);
    for (int32_t i = 0; i < 3 && status == RIG_OK && !dev->timing_only; i++)
        status = rig_hal_buffer_fill(dev->stream, *out[i], 0, 0x3c003c00u, bytes[i] / 4);
    if (status == RIG_OK) rig__carve(s, c, st);
    if (status == RIG_OK) status = rig__stage(dev, s, st);
    return status;
}

static void rig__free(struct rig__ops *s)
{
    rig_hal_buffer_free(s->meta);
    rig_hal_buffer_free(s->kv);
    rig_hal_buffer_free(s->acts);
    rig_hal_buffer_free(s->weights);
    memset(s, 0, sizeof *s);
}

/* Times every op of one step into report->ops. */
static enum rig_status rig__ops_step(const struct rig_bench_options *o, struct rig__bench_dev *dev,
                                     const struct rig_model_config *c, const struct rig__step *st,
                                     struct rig_bench_report *report)
{
    struct rig__ops s = {0};
    struct rig__op_entry entries[16];
    enum rig_status status = rig__alloc(dev, c, &s, st);
    int32_t n = status == RIG_OK ? rig__op_list(&s, c, st->prefill, entries) : 0;
    RIG_ASSERT(n <= (int32_t)RIG_ARRAY_LEN(entries));
    if (report->op_count + n > RIG_BENCH_OPS_MAX) status = RIG_E_CAPACITY;
    int32_t first = report->op_count;
    double total = 0.0;
    for (int32_t i = 0; i < n && status == RIG_OK; i++) {
        struct rig_bench_op_row *row = &report->ops[report->op_count];
        memset(row, 0, sizeof *row);
        snprintf(row->op, sizeof row->op, "%s", entries[i].name);
        row->batch = (int32_t)st->R;
        row->tokens = (int32_t)st->T;
        row->context = (int32_t)st->C;
        row->count = entries[i].count;
        status = rig__time_op(o, dev, &entries[i].op, &row->ns);
        if (status < 0) break;
        total += row->ns * row->count;
        report->op_count++;
    }
    for (int32_t i = first; i < report->op_count; i++)
        report->ops[i].share = report->ops[i].ns * report->ops[i].count / total;
    rig__free(&s);
    return status;
}

enum rig_status rig_bench_ops(const struct rig_bench_options *o, struct rig_bench_report *report,
                              char *error, size_t error_len)
{
    struct rig_model_config c;
    if (rig_model_config_preset(rig__bench_model(o), &c) != RIG_OK) {
        snprintf(error, error_len, "unknown model preset '%s'", rig__bench_model(o));
        return RIG_E_NOT_FOUND;
    }
    struct rig__bench_dev dev;
    enum rig_status status = rig__bench_open(o, &dev, error, error_len);
    if (status < 0) return status;
    int64_t chunk = o->quick ? RIG__OPS_PREFILL_QUICK : RIG__OPS_PREFILL;
    int64_t batch = o->quick ? 8 : 256;
    const struct rig__step steps[3] = {{1, 1, RIG__OPS_CONTEXT, false},
                                       {batch, batch, RIG__OPS_CONTEXT, false},
                                       {chunk, 1, chunk, true}};
    for (int32_t i = 0; i < 3 && status == RIG_OK; i++) {
        rig__bench_progress(o, "ops", i, 3);
        status = rig__ops_step(o, &dev, &c, &steps[i], report);
    }
    rig__bench_progress(o, "ops", 3, 3);
    if (status < 0) rig__bench_fail(status, "op breakdown", error, error_len);
    rig__bench_close(&dev);
    return status;
}
