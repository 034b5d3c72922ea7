/* attention.c — the attention ops alone, on the model's head shapes (one layer).
 *
 * Decode: batch B requests, each attending to C positions in distinct slots; its floor is
 * the KV bytes read (B x C x Hk x D x 2 bytes, K and V) over the measured copy bandwidth,
 * and the ratio floor / time is the fraction of bandwidth the kernel reaches (the issue's
 * target: >= 0.75 at B = 256, C = 1024). Prefill: one causal chunk of N tokens with no
 * prefix; floor = 4 x Hq x D x N (N + 1) / 2 FLOPs over the measured GEMM rate. These are
 * also the shapes tools/gpu/peers.py times FlashInfer's paged kernels on.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/bench/bench_impl.h"
#include "core/model/model.h"

struct rig__attn {
    struct rig_buffer *kv;   /* [2, S, Hk, D] bf16: K then V */
    struct rig_buffer *act;  /* [2, T, Hq, D] bf16: q then out */
    struct rig_buffer *meta; /* page table [rows, L], table_idx, kv_len, cu_q */
    struct rig_op op;
};

static enum rig_status rig__attn_once(void *ctx, struct rig_stream *stream)
{
    struct rig__attn *a = ctx;
    return rig_hal_op(stream, &a->op);
}

static void rig__attn_free(struct rig__attn *a)
{
    rig_hal_buffer_free(a->meta);
    rig_hal_buffer_free(a->act);
    rig_hal_buffer_free(a->kv);
}

/* Allocates and fills the buffers for R requests of `len` positions each (slots r * len +
 * p) with T query rows; stages metadata (cu_q: T / R rows per request). */
static enum rig_status rig__attn_alloc(struct rig__bench_dev *dev, const struct rig_model_config *c,
                                       struct rig__attn *a, int32_t R, int32_t len, int32_t T,
                                       int32_t *host)
{
    size_t slots = (size_t)R * (size_t)len;
    size_t kv_bytes = 2 * slots * (size_t)(c->num_kv_heads * c->head_dim) * 2;
    size_t act_bytes = 2 * (size_t)T * (size_t)(c->num_heads * c->head_dim) * 2;
    size_t meta_words = slots + 3 * (size_t)R + 1;
    enum rig_status status = rig_hal_buffer_alloc(dev->device, kv_bytes, RIG_MEMORY_KV, &a->kv);
    if (status == RIG_OK)
        status = rig_hal_buffer_alloc(dev->device, act_bytes, RIG_MEMORY_ACTIVATIONS, &a->act);
    if (status == RIG_OK)
        status = rig_hal_buffer_alloc(dev->device, meta_words * 4, RIG_MEMORY_METADATA, &a->meta);
    if (status == RIG_OK && !dev->timing_only) /* bf16 0.0078: finite, no NaN from junk */
        status = rig_hal_buffer_fill(dev->stream, a->kv, 0, 0x3c003c00u, kv_bytes / 4);
    if (status == RIG_OK && !dev->timing_only)
        status = rig_hal_buffer_fill(dev->stream, a->act, 0, 0x3c003c00u, act_bytes / 4);
    for (size_t s = 0; s < slots; s++)
        host[s] = (int32_t)s;
    for (int32_t r = 0; r < R; r++) {
        host[slots + (size_t)r] = r;                           /* table_idx */
        host[slots + (size_t)R + (size_t)r] = len;             /* kv_len */
        host[slots + 2 * (size_t)R + (size_t)r] = r * (T / R); /* cu_q */
    }
    host[slots + 3 * (size_t)R] = T;
    if (status == RIG_OK)
        status = rig_hal_buffer_upload(dev->stream, a->meta, 0, host, meta_words * 4);
    if (status == RIG_OK) status = rig_hal_stream_synchronize(dev->stream);
    return status;
}

/* The op's tensors over the buffers allocated by rig__attn_alloc. */
static void rig__attn_tensors(const struct rig_model_config *c, struct rig__attn *a, int32_t R,
                              int32_t len, int32_t T, bool decode)
{
    int64_t S = (int64_t)R * len, Hq = c->num_heads, Hk = c->num_kv_heads, D = c->head_dim;
    uint8_t *kv = rig_hal_buffer_ptr(a->kv), *act = rig_hal_buffer_ptr(a->act);
    int32_t *meta = rig_hal_buffer_ptr(a->meta);
    struct rig_tensor k = rig_tensor_3d(kv, RIG_DTYPE_BF16, S, Hk, D);
    struct rig_tensor v = rig_tensor_3d(kv + S * Hk * D * 2, RIG_DTYPE_BF16, S, Hk, D);
    struct rig_tensor q = rig_tensor_3d(act, RIG_DTYPE_BF16, T, Hq, D);
    struct rig_tensor out = rig_tensor_3d(act + (int64_t)T * Hq * D * 2, RIG_DTYPE_BF16, T, Hq, D);
    struct rig_tensor table = rig_tensor_2d(meta, RIG_DTYPE_I32, R, len);
    struct rig_tensor table_idx = rig_tensor_1d(meta + S, RIG_DTYPE_I32, R);
    struct rig_tensor kv_len = rig_tensor_1d(meta + S + R, RIG_DTYPE_I32, R);
    struct rig_tensor cu_q = rig_tensor_1d(meta + S + 2 * R, RIG_DTYPE_I32, R + 1);
    float scale = 1.0f / sqrtf((float)D);
    memset(&a->op, 0, sizeof a->op);
    if (decode) {
        a->op.kind = RIG_OP_ATTENTION_DECODE;
        a->op.u.attention_decode =
            (struct rig_op_attention_decode){out, q, k, v, table, table_idx, kv_len, scale};
    } else {
        a->op.kind = RIG_OP_ATTENTION_PREFILL;
        a->op.u.attention_prefill =
            (struct rig_op_attention_prefill){out, q, k, v, table, table_idx, cu_q, kv_len, scale};
    }
}

static enum rig_status rig__attn_row(const struct rig_bench_options *o, struct rig__bench_dev *dev,
                                     const struct rig_model_config *c,
                                     const struct rig_bench_floors *fl, bool decode, int32_t R,
                                     int32_t len, struct rig_bench_attention_row *row)
{
    int32_t T = decode ? R : len;
    size_t words = (size_t)R * (size_t)len + 3 * (size_t)R + 1;
    int32_t *host = malloc(words * sizeof *host);
    if (host == NULL) return RIG_E_NO_MEMORY;
    struct rig__attn a = {0};
    enum rig_status status = rig__attn_alloc(dev, c, &a, R, len, T, host);
    if (status == RIG_OK) {
        rig__attn_tensors(c, &a, R, len, T, decode);
        status = rig__bench_time_spread(dev, 2, o->repeats, rig__attn_once, &a, &row->ns,
                                        &row->min_ns, &row->max_ns);
    }
    rig__attn_free(&a);
    free(host);
    memset(row->op, 0, sizeof row->op);
    snprintf(row->op, sizeof row->op, "%s", decode ? "decode" : "prefill");
    row->batch = R;
    row->context = len;
    double hk_d = (double)c->num_kv_heads * c->head_dim, hq_d = (double)c->num_heads * c->head_dim;
    double pairs = decode ? (double)R * len : (double)len * (len + 1.0) / 2.0;
    row->bytes = decode ? (double)R * len * hk_d * 4.0 : 2.0 * len * (hq_d * 4.0 + hk_d * 4.0);
    row->flops = 4.0 * hq_d * pairs;
    row->floor_ns = (decode ? row->bytes / fl->bandwidth : row->flops / fl->gemm_flops) * 1e9;
    row->ratio = status == RIG_OK ? row->floor_ns / row->ns : 0.0;
    return status;
}

/* RIG_BENCH_ATTENTION_PREFILL=N times a lone N-token chunk instead (1..65536; a timing switch
 * for the prefill kernels' short-chunk paths). */
static int32_t rig__attn_prefill_tokens(int32_t fallback)
{
    const char *value = getenv("RIG_BENCH_ATTENTION_PREFILL");
    long tokens = value != NULL ? strtol(value, NULL, 10) : 0;
    return tokens >= 1 && tokens <= 65536 ? (int32_t)tokens : fallback;
}

enum rig_status rig_bench_attention(const struct rig_bench_options *o,
                                    struct rig_bench_report *report, char *error, size_t error_len)
{
    RIG_ASSERT(report->have_floors);
    struct rig_model_config c;
    if (rig_model_config_preset(rig__bench_model(o), &c) != RIG_OK) {
        snprintf(error, error_len, "unknown model preset '%s'", rig__bench_model(o));
        return RIG_E_NOT_FOUND;
    }
    struct rig__bench_dev dev;
    enum rig_status status = rig__bench_open(o, &dev, error, error_len);
    if (status < 0) return status;
    /* decode 256 x 1024 and 64 x 8192 (the issues' target shapes: many short rows, few long
     * ones), prefill one 8192-token chunk */
    enum { ROWS = 3 };
    const struct {
        bool decode;
        int32_t batch, context;
    } shapes[ROWS] = {{true, o->quick ? 8 : 256, o->quick ? 256 : 1024},
                      {true, o->quick ? 2 : 64, o->quick ? 1024 : 8192},
                      {false, 1, rig__attn_prefill_tokens(o->quick ? 512 : 8192)}};
    _Static_assert(ROWS <= RIG_BENCH_ATTENTION_MAX, "attention rows fit the report");
    for (int32_t i = 0; i < ROWS && status == RIG_OK; i++) {
        rig__bench_progress(o, "attention", i, ROWS);
        struct rig_bench_attention_row *row = &report->attention[report->attention_count];
        status = rig__attn_row(o, &dev, &c, &report->floors, shapes[i].decode, shapes[i].batch,
                               shapes[i].context, row);
        if (status == RIG_OK) report->attention_count++;
    }
    rig__bench_progress(o, "attention", ROWS, ROWS);
    if (status < 0) rig__bench_fail(&dev, status, "attention op", error, error_len);
    rig__bench_close(&dev);
    return status;
}
