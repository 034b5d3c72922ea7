/* cmd_selftest.c — `rig selftest`: the simulator end to end, one transformer layer on TP=2.
 *
 * Opens one simulated device and, separately, two TP ranks driven by one thread each; runs
 * the same small transformer step on random (seeded) weights on both: embedding (vocab
 * sharded) → RMSNorm → Q/K/V GEMMs (heads sharded) → q/k norm → RoPE → store K/V →
 * prefill attention over a cached prefix → O GEMM (row parallel) → all-reduce → add+RMSNorm
 * → gate/up GEMM → SiLU·mul → down GEMM → all-reduce → add+RMSNorm → last-position rows →
 * LM head (vocab sharded) → all-gather → greedy sampling; then one decode step of the sampled
 * tokens through decode attention. It checks that the TP=2 logits equal the single-device
 * logits within bf16 tolerance, that a second TP=2 run gives the same bytes and timestamps,
 * and prints the virtual timeline of each rank. Exit 0 when every check passes, 1 otherwise.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/hal.h"
#include "sim/sim.h"
#include "tools/rig/commands.h"

/* Model and batch shapes: two requests, the first with 3 tokens already cached. */
enum {
    RIG__H = 64,  /* hidden */
    RIG__HQ = 4,  /* query heads */
    RIG__HK = 2,  /* KV heads */
    RIG__D = 16,  /* head dim */
    RIG__I = 96,  /* intermediate */
    RIG__V = 128, /* vocabulary */
    RIG__R = 2,   /* requests */
    RIG__T = 7,   /* new tokens: 4 + 3 */
    RIG__S = 64,  /* KV slots */
    RIG__L = 16,  /* page-table row length */
    RIG__TP = 2,
};
static const int32_t rig__q_len[RIG__R] = {4, 3};
static const int32_t rig__cached[RIG__R] = {3, 0};

/* The full model's weights, generated once from a seed; ranks cut their shards from it. */
struct rig__model {
    uint16_t embed[RIG__V * RIG__H];             /* (V, H) */
    uint16_t lm_head[RIG__V * RIG__H];           /* (V, H) */
    uint16_t wq[RIG__HQ * RIG__D * RIG__H];      /* (HQ * D, H) */
    uint16_t wk[RIG__HK * RIG__D * RIG__H];      /* (HK * D, H) */
    uint16_t wv[RIG__HK * RIG__D * RIG__H];      /* (HK * D, H) */
    uint16_t wo[RIG__H * RIG__HQ * RIG__D];      /* (H, HQ * D) */
    uint16_t wgate[RIG__I * RIG__H];             /* (I, H) */
    uint16_t wup[RIG__I * RIG__H];               /* (I, H) */
    uint16_t wdown[RIG__H * RIG__I];             /* (H, I) */
    uint16_t norm[3][RIG__H];                    /* (3, H) input, post-attention, final */
    uint16_t qk_norm[2][RIG__D];                 /* (2, D) */
    uint16_t k_cache[RIG__S * RIG__HK * RIG__D]; /* (S, HK, D) the cached prefix's K */
    uint16_t v_cache[RIG__S * RIG__HK * RIG__D]; /* (S, HK, D) */
    int32_t ids[RIG__T];                         /* (T) prompt tokens of the step */
};

/* One rank's (or the single device's) handles, tensors and results. */
struct rig__rank {
    int32_t tp, rank;
    const struct rig__model *model;
    struct rig_device *device;
    struct rig_comm *comm; /* NULL on the single device */
    struct rig_stream *stream;
    struct rig_event *begin, *end;
    struct rig_buffer *buffers[3]; /* weights, activations + KV, metadata */
    size_t used[3];                /* bump offsets into buffers[] */
    struct {
        struct rig_tensor embed, lm_head, wq, wk, wv, wo, wgu, wdown, norm[3], qk_norm[2];
    } w;
    struct {
        struct rig_tensor h, x, q, k, v, attn, o, gu, act, down, last, logits_shard, gathered;
        struct rig_tensor logits, k_cache, v_cache;
    } a;
    struct {
        struct rig_tensor ids, positions, out_loc, page_table, table_idx, cu_q, kv_len;
        struct rig_tensor last_idx, temperature, top_k, top_p, seed, position, tokens;
        struct rig_tensor token_pool, write_idx;
    } m;
    struct { /* host copies of the metadata, alive until synced */
        int32_t ids[RIG__T], positions[RIG__T], out_loc[RIG__T]; /* (T) */
        int32_t page_table[RIG__R * RIG__L];                     /* (R, L) */
        int32_t table_idx[RIG__R], cu_q[RIG__R + 1], kv_len[RIG__R], last_idx[RIG__R];
        int32_t top_k[RIG__R], position[RIG__R], write_idx[RIG__R]; /* (R) */
        float temperature[RIG__R], top_p[RIG__R];                   /* (R) */
        int64_t seed[RIG__R];                                       /* (R) */
    } host;
    float logits[2][RIG__R * RIG__V]; /* (step, R, V) logits of the prefill and decode steps */
    int32_t tokens[2][RIG__R];        /* (step, R) sampled tokens */
    struct rig_sim_stats stats;
    int64_t host_ns, elapsed_ns;
    int failed;
};

enum { RIG__WEIGHTS = 0, RIG__ACTS = 1, RIG__META = 2 };

static struct rig_tensor rig__take(struct rig__rank *k, int32_t which, enum rig_dtype dtype,
                                   int32_t ndim, int64_t n0, int64_t n1, int64_t n2)
{
    int64_t shape[3] = {n0, n1, n2};
    struct rig_tensor t = rig_tensor_make(NULL, dtype, ndim, shape);
    size_t bytes = (size_t)rig_tensor_numel(&t) * rig_dtype_size(dtype);
    RIG_ASSERT(k->used[which] + bytes <= rig_hal_buffer_size(k->buffers[which]));
    t.data = (char *)rig_hal_buffer_ptr(k->buffers[which]) + k->used[which];
    k->used[which] += (bytes + 63) / 64 * 64;
    return t;
}

static void rig__check(struct rig__rank *k, enum rig_status status, const char *what)
{
    if (status == RIG_OK) return;
    fprintf(stderr, "rig selftest: rank %d of %d: %s: %s %s\n", k->rank, k->tp, what,
            rig_status_name(status), rig_hal_last_error());
    k->failed = 1;
}

static void rig__upload(struct rig__rank *k, int32_t which, const struct rig_tensor *t,
                        const void *host)
{
    size_t bytes = (size_t)rig_tensor_numel(t) * rig_dtype_size(t->dtype);
    size_t offset = (size_t)((char *)t->data - (char *)rig_hal_buffer_ptr(k->buffers[which]));
    rig__check(k, rig_hal_buffer_upload(k->stream, k->buffers[which], offset, host, bytes),
               "upload");
}

static void rig__download(struct rig__rank *k, int32_t which, const struct rig_tensor *t,
                          void *host)
{
    size_t bytes = (size_t)rig_tensor_numel(t) * rig_dtype_size(t->dtype);
    size_t offset = (size_t)((char *)t->data - (char *)rig_hal_buffer_ptr(k->buffers[which]));
    rig__check(k, rig_hal_buffer_download(k->stream, k->buffers[which], offset, host, bytes),
               "download");
}

static uint16_t rig__random_bf16(uint64_t *state, float lo, float hi)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    float unit = (float)(*state >> 40) * (1.0f / 16777216.0f);
    return rig_f32_to_bf16(lo + (hi - lo) * unit);
}

static void rig__fill(uint64_t *state, uint16_t *w, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        w[i] = rig__random_bf16(state, lo, hi);
}

static void rig__model_init(struct rig__model *m, uint64_t seed)
{
    uint64_t s = seed;
    rig__fill(&s, m->embed, RIG_ARRAY_LEN(m->embed), -1.0f, 1.0f);
    rig__fill(&s, m->lm_head, RIG_ARRAY_LEN(m->lm_head), -0.2f, 0.2f);
    rig__fill(&s, m->wq, RIG_ARRAY_LEN(m->wq), -0.2f, 0.2f);
    rig__fill(&s, m->wk, RIG_ARRAY_LEN(m->wk), -0.2f, 0.2f);
    rig__fill(&s, m->wv, RIG_ARRAY_LEN(m->wv), -0.2f, 0.2f);
    rig__fill(&s, m->wo, RIG_ARRAY_LEN(m->wo), -0.2f, 0.2f);
    rig__fill(&s, m->wgate, RIG_ARRAY_LEN(m->wgate), -0.2f, 0.2f);
    rig__fill(&s, m->wup, RIG_ARRAY_LEN(m->wup), -0.2f, 0.2f);
    rig__fill(&s, m->wdown, RIG_ARRAY_LEN(m->wdown), -0.2f, 0.2f);
    rig__fill(&s, &m->norm[0][0], 3 * RIG__H, 0.8f, 1.2f);
    rig__fill(&s, &m->qk_norm[0][0], 2 * RIG__D, 0.8f, 1.2f);
    rig__fill(&s, m->k_cache, RIG_ARRAY_LEN(m->k_cache), -1.0f, 1.0f);
    rig__fill(&s, m->v_cache, RIG_ARRAY_LEN(m->v_cache), -1.0f, 1.0f);
    for (int32_t t = 0; t < RIG__T; t++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        m->ids[t] = (int32_t)((s >> 33) % RIG__V);
    }
}

/* Copies rows [row0, row0 + rows) and, of those, columns [col0, col0 + cn) of a row-major
 * matrix with `cols` columns into `out` (rows * cn values): how shards are cut. */
static void rig__cut(const uint16_t *w, int64_t cols, int64_t row0, int64_t rows, int64_t col0,
                     int64_t cn, uint16_t *out)
{
    for (int64_t r = 0; r < rows; r++)
        memcpy(out + r * cn, w + (row0 + r) * cols + col0, (size_t)cn * sizeof *w);
}

static enum rig_status rig__alloc_buffers(struct rig__rank *k)
{
    static const size_t bytes[3] = {1u << 20, 1u << 20, 1u << 16};
    static const enum rig_memory_use uses[3] = {RIG_MEMORY_WEIGHTS, RIG_MEMORY_ACTIVATIONS,
                                                RIG_MEMORY_METADATA};
    for (int32_t i = 0; i < 3; i++) {
        enum rig_status status = rig_hal_buffer_alloc(k->device, bytes[i], uses[i], &k->buffers[i]);
        if (status != RIG_OK) return status;
    }
    return RIG_OK;
}

static void rig__carve_weights(struct rig__rank *k)
{
    int64_t vr = RIG__V / k->tp, hqr = RIG__HQ / k->tp, hkr = RIG__HK / k->tp, ir = RIG__I / k->tp;
    k->w.embed = rig__take(k, RIG__WEIGHTS, RIG_DTYPE_BF16, 2, vr, RIG__H, 1);
    k->w.lm_head = rig__take(k, RIG__WEIGHTS, RIG_DTYPE_BF16, 2, vr, RIG__H, 1);
    k->w.wq = rig__take(k, RIG__WEIGHTS, RIG_DTYPE_BF16, 2, hqr * RIG__D, RIG__H, 1);
    k->w.wk = rig__take(k, RIG__WEIGHTS, RIG_DTYPE_BF16, 2, hkr * RIG__D, RIG__H, 1);
    k->w.wv = rig__take(k, RIG__WEIGHTS, RIG_DTYPE_BF16, 2, hkr * RIG__D, RIG__H, 1);
    k->w.wo = rig__take(k, RIG__WEIGHTS, RIG_DTYPE_BF16, 2, RIG__H, hqr * RIG__D, 1);
    k->w.wgu = rig__take(k, RIG__WEIGHTS, RIG_DTYPE_BF16, 2, 2 * ir, RIG__H, 1);
    k->w.wdown = rig__take(k, RIG__WEIGHTS, RIG_DTYPE_BF16, 2, RIG__H, ir, 1);
    for (int32_t i = 0; i < 3; i++)
        k->w.norm[i] = rig__take(k, RIG__WEIGHTS, RIG_DTYPE_BF16, 1, RIG__H, 1, 1);
    for (int32_t i = 0; i < 2; i++)
        k->w.qk_norm[i] = rig__take(k, RIG__WEIGHTS, RIG_DTYPE_BF16, 1, RIG__D, 1, 1);
}

static void rig__carve_activations(struct rig__rank *k)
{
    int64_t vr = RIG__V / k->tp, hqr = RIG__HQ / k->tp, hkr = RIG__HK / k->tp, ir = RIG__I / k->tp;
    enum rig_dtype bf16 = RIG_DTYPE_BF16;
    k->a.h = rig__take(k, RIG__ACTS, bf16, 2, RIG__T, RIG__H, 1);
    k->a.x = rig__take(k, RIG__ACTS, bf16, 2, RIG__T, RIG__H, 1);
    k->a.q = rig__take(k, RIG__ACTS, bf16, 3, RIG__T, hqr, RIG__D);
    k->a.k = rig__take(k, RIG__ACTS, bf16, 3, RIG__T, hkr, RIG__D);
    k->a.v = rig__take(k, RIG__ACTS, bf16, 3, RIG__T, hkr, RIG__D);
    k->a.attn = rig__take(k, RIG__ACTS, bf16, 3, RIG__T, hqr, RIG__D);
    k->a.o = rig__take(k, RIG__ACTS, bf16, 2, RIG__T, RIG__H, 1);
    k->a.gu = rig__take(k, RIG__ACTS, bf16, 2, RIG__T, 2 * ir, 1);
    k->a.act = rig__take(k, RIG__ACTS, bf16, 2, RIG__T, ir, 1);
    k->a.down = rig__take(k, RIG__ACTS, bf16, 2, RIG__T, RIG__H, 1);
    k->a.last = rig__take(k, RIG__ACTS, bf16, 2, RIG__R, RIG__H, 1);
    k->a.logits_shard = rig__take(k, RIG__ACTS, RIG_DTYPE_F32, 2, RIG__R, vr, 1);
    k->a.gathered = rig__take(k, RIG__ACTS, RIG_DTYPE_F32, 3, k->tp, RIG__R, vr);
    k->a.logits = rig__take(k, RIG__ACTS, RIG_DTYPE_F32, 2, RIG__R, RIG__V, 1);
    k->a.k_cache = rig__take(k, RIG__ACTS, bf16, 3, RIG__S, hkr, RIG__D);
    k->a.v_cache = rig__take(k, RIG__ACTS, bf16, 3, RIG__S, hkr, RIG__D);
}

static void rig__carve_metadata(struct rig__rank *k)
{
    enum rig_dtype i32 = RIG_DTYPE_I32;
    k->m.ids = rig__take(k, RIG__META, i32, 1, RIG__T, 1, 1);
    k->m.positions = rig__take(k, RIG__META, i32, 1, RIG__T, 1, 1);
    k->m.out_loc = rig__take(k, RIG__META, i32, 1, RIG__T, 1, 1);
    k->m.page_table = rig__take(k, RIG__META, i32, 2, RIG__R, RIG__L, 1);
    k->m.table_idx = rig__take(k, RIG__META, i32, 1, RIG__R, 1, 1);
    k->m.cu_q = rig__take(k, RIG__META, i32, 1, RIG__R + 1, 1, 1);
    k->m.kv_len = rig__take(k, RIG__META, i32, 1, RIG__R, 1, 1);
    k->m.last_idx = rig__take(k, RIG__META, i32, 1, RIG__R, 1, 1);
    k->m.temperature = rig__take(k, RIG__META, RIG_DTYPE_F32, 1, RIG__R, 1, 1);
    k->m.top_k = rig__take(k, RIG__META, i32, 1, RIG__R, 1, 1);
    k->m.top_p = rig__take(k, RIG__META, RIG_DTYPE_F32, 1, RIG__R, 1, 1);
    k->m.seed = rig__take(k, RIG__META, RIG_DTYPE_I64, 1, RIG__R, 1, 1);
    k->m.position = rig__take(k, RIG__META, i32, 1, RIG__R, 1, 1);
    k->m.tokens = rig__take(k, RIG__META, i32, 1, RIG__R, 1, 1);
    k->m.token_pool = rig__take(k, RIG__META, i32, 1, RIG__R * RIG__L, 1, 1);
    k->m.write_idx = rig__take(k, RIG__META, i32, 1, RIG__R, 1, 1);
}

/* Cuts this rank's shards from the full model and uploads them (and the cached prefix's
 * K/V heads). `scratch` holds the largest shard. */
static void rig__upload_weights(struct rig__rank *k, uint16_t *scratch)
{
    const struct rig__model *m = k->model;
    int64_t r = k->rank, vr = RIG__V / k->tp, ir = RIG__I / k->tp;
    int64_t qd = RIG__HQ / k->tp * RIG__D, kd = RIG__HK / k->tp * RIG__D;
    rig__upload(k, RIG__WEIGHTS, &k->w.embed, m->embed + r * vr * RIG__H);
    rig__upload(k, RIG__WEIGHTS, &k->w.lm_head, m->lm_head + r * vr * RIG__H);
    rig__upload(k, RIG__WEIGHTS, &k->w.wq, m->wq + r * qd * RIG__H);
    rig__upload(k, RIG__WEIGHTS, &k->w.wk, m->wk + r * kd * RIG__H);
    rig__upload(k, RIG__WEIGHTS, &k->w.wv, m->wv + r * kd * RIG__H);
    rig__cut(m->wo, RIG__HQ * RIG__D, 0, RIG__H, r * qd, qd, scratch);
    rig__upload(k, RIG__WEIGHTS, &k->w.wo, scratch);
    rig__check(k, rig_hal_stream_synchronize(k->stream), "sync");
    memcpy(scratch, m->wgate + r * ir * RIG__H, (size_t)(ir * RIG__H) * sizeof *scratch);
    memcpy(scratch + ir * RIG__H, m->wup + r * ir * RIG__H,
           (size_t)(ir * RIG__H) * sizeof *scratch);
    rig__upload(k, RIG__WEIGHTS, &k->w.wgu, scratch);
    rig__check(k, rig_hal_stream_synchronize(k->stream), "sync");
    rig__cut(m->wdown, RIG__I, 0, RIG__H, r * ir, ir, scratch);
    rig__upload(k, RIG__WEIGHTS, &k->w.wdown, scratch);
    rig__check(k, rig_hal_stream_synchronize(k->stream), "sync");
    for (int32_t i = 0; i < 3; i++)
        rig__upload(k, RIG__WEIGHTS, &k->w.norm[i], m->norm[i]);
    for (int32_t i = 0; i < 2; i++)
        rig__upload(k, RIG__WEIGHTS, &k->w.qk_norm[i], m->qk_norm[i]);
    rig__cut(m->k_cache, RIG__HK * RIG__D, 0, RIG__S, r * kd, kd, scratch);
    rig__upload(k, RIG__ACTS, &k->a.k_cache, scratch);
    rig__check(k, rig_hal_stream_synchronize(k->stream), "sync");
    rig__cut(m->v_cache, RIG__HK * RIG__D, 0, RIG__S, r * kd, kd, scratch);
    rig__upload(k, RIG__ACTS, &k->a.v_cache, scratch);
    rig__check(k, rig_hal_stream_synchronize(k->stream), "sync");
}

/* KV slot of position `pos` of request `r`: rows are 32 slots apart. */
static int32_t rig__slot(int32_t r, int32_t pos)
{
    return r * (RIG__S / RIG__R) + pos;
}

static void rig__upload_metadata(struct rig__rank *k)
{
    rig__upload(k, RIG__META, &k->m.ids, k->host.ids);
    rig__upload(k, RIG__META, &k->m.positions, k->host.positions);
    rig__upload(k, RIG__META, &k->m.out_loc, k->host.out_loc);
    rig__upload(k, RIG__META, &k->m.page_table, k->host.page_table);
    rig__upload(k, RIG__META, &k->m.table_idx, k->host.table_idx);
    rig__upload(k, RIG__META, &k->m.cu_q, k->host.cu_q);
    rig__upload(k, RIG__META, &k->m.kv_len, k->host.kv_len);
    rig__upload(k, RIG__META, &k->m.last_idx, k->host.last_idx);
    rig__upload(k, RIG__META, &k->m.temperature, k->host.temperature);
    rig__upload(k, RIG__META, &k->m.top_k, k->host.top_k);
    rig__upload(k, RIG__META, &k->m.top_p, k->host.top_p);
    rig__upload(k, RIG__META, &k->m.seed, k->host.seed);
    rig__upload(k, RIG__META, &k->m.position, k->host.position);
    rig__upload(k, RIG__META, &k->m.write_idx, k->host.write_idx);
}

/* Prefill metadata: request r computes q_len[r] new tokens after cached[r] cached ones. */
static void rig__prefill_metadata(struct rig__rank *k)
{
    int32_t t = 0;
    k->host.cu_q[0] = 0;
    for (int32_t r = 0; r < RIG__R; r++) {
        for (int32_t i = 0; i < rig__q_len[r]; i++, t++) {
            k->host.ids[t] = k->model->ids[t];
            k->host.positions[t] = rig__cached[r] + i;
            k->host.out_loc[t] = rig__slot(r, rig__cached[r] + i);
        }
        for (int32_t pos = 0; pos < RIG__L; pos++)
            k->host.page_table[r * RIG__L + pos] = rig__slot(r, pos);
        k->host.table_idx[r] = r;
        k->host.cu_q[r + 1] = t;
        k->host.kv_len[r] = rig__cached[r] + rig__q_len[r];
        k->host.last_idx[r] = t - 1;
        k->host.temperature[r] = 0.0f; /* greedy */
        k->host.top_k[r] = 0;
        k->host.top_p[r] = 1.0f;
        k->host.seed[r] = 1000 + r;
        k->host.position[r] = 0;
        k->host.write_idx[r] = r * RIG__L + k->host.kv_len[r];
    }
    RIG_ASSERT(t == RIG__T);
}

/* Decode metadata: each request's sampled token at position kv_len. */
static void rig__decode_metadata(struct rig__rank *k)
{
    for (int32_t r = 0; r < RIG__R; r++) {
        int32_t pos = k->host.kv_len[r];
        k->host.positions[r] = pos;
        k->host.out_loc[r] = rig__slot(r, pos);
        k->host.kv_len[r] = pos + 1;
        k->host.last_idx[r] = r;
        k->host.position[r] = 1;
    }
}

static struct rig_tensor rig__rows(const struct rig_tensor *t, int64_t n)
{
    return rig_tensor_slice(t, 0, 0, n);
}

/* A [n, heads, D] tensor seen as the [n, heads * D] matrix a GEMM reads or writes. */
static struct rig_tensor rig__flat(const struct rig_tensor *t, int64_t n)
{
    return rig_tensor_2d(t->data, t->dtype, n, t->shape[1] * t->shape[2]);
}

static void rig__all_reduce(struct rig__rank *k, const struct rig_tensor *t)
{
    if (k->comm == NULL) return;
    struct rig_op_all_reduce p = {.data = *t, .comm = k->comm};
    rig__check(k, rig_hal_all_reduce(k->stream, &p), "all_reduce");
}

static void rig__gemm(struct rig__rank *k, struct rig_tensor out, struct rig_tensor a,
                      const struct rig_tensor *b)
{
    struct rig_op_gemm p = {.out = out, .a = a, .b = *b, .bias = rig_tensor_none()};
    rig__check(k, rig_hal_gemm(k->stream, &p), "gemm");
}

/* Embedding, input norm, Q/K/V, q/k norm, RoPE, store K/V, attention, O projection. */
static void rig__attention_block(struct rig__rank *k, int64_t n, bool decode)
{
    struct rig_tensor h = rig__rows(&k->a.h, n), x = rig__rows(&k->a.x, n);
    struct rig_tensor q = rig__rows(&k->a.q, n), kk = rig__rows(&k->a.k, n);
    struct rig_tensor v = rig__rows(&k->a.v, n), attn = rig__rows(&k->a.attn, n);
    struct rig_op_embedding embedding = {.out = h,
                                         .table = k->w.embed,
                                         .ids = rig__rows(&k->m.ids, n),
                                         .vocab_start = (int64_t)k->rank * (RIG__V / k->tp)};
    rig__check(k, rig_hal_embedding(k->stream, &embedding), "embedding");
    rig__all_reduce(k, &h);
    struct rig_op_rms_norm norm = {.out = x, .in = h, .weight = k->w.norm[0], .eps = 1e-6f};
    rig__check(k, rig_hal_rms_norm(k->stream, &norm), "rms_norm");
    rig__gemm(k, rig__flat(&q, n), x, &k->w.wq);
    rig__gemm(k, rig__flat(&kk, n), x, &k->w.wk);
    rig__gemm(k, rig__flat(&v, n), x, &k->w.wv);
    struct rig_op_head_rms_norm qn = {.x = q, .weight = k->w.qk_norm[0], .eps = 1e-6f};
    struct rig_op_head_rms_norm kn = {.x = kk, .weight = k->w.qk_norm[1], .eps = 1e-6f};
    rig__check(k, rig_hal_head_rms_norm(k->stream, &qn), "head_rms_norm");
    rig__check(k, rig_hal_head_rms_norm(k->stream, &kn), "head_rms_norm");
    struct rig_op_rope rope = {
        .q = q, .k = kk, .positions = rig__rows(&k->m.positions, n), .params = {.theta = 10000.0f}};
    rig__check(k, rig_hal_rope(k->stream, &rope), "rope");
    struct rig_op_store_kv store = {.k_cache = k->a.k_cache,
                                    .v_cache = k->a.v_cache,
                                    .k = kk,
                                    .v = v,
                                    .out_loc = rig__rows(&k->m.out_loc, n)};
    rig__check(k, rig_hal_store_kv(k->stream, &store), "store_kv");
    float scale = 1.0f / sqrtf((float)RIG__D);
    if (decode) {
        struct rig_op_attention_decode p = {
            attn,           q,           k->a.k_cache, k->a.v_cache, k->m.page_table,
            k->m.table_idx, k->m.kv_len, scale};
        rig__check(k, rig_hal_attention_decode(k->stream, &p), "attention_decode");
    } else {
        struct rig_op_attention_prefill p = {
            attn,           q,         k->a.k_cache, k->a.v_cache, k->m.page_table,
            k->m.table_idx, k->m.cu_q, k->m.kv_len,  scale};
        rig__check(k, rig_hal_attention_prefill(k->stream, &p), "attention_prefill");
    }
    rig__gemm(k, rig__rows(&k->a.o, n), rig__flat(&attn, n), &k->w.wo);
    struct rig_tensor o = rig__rows(&k->a.o, n);
    rig__all_reduce(k, &o);
}

/* Post-attention norm, MLP, final norm, last rows, LM head, logits, sampling. */
static void rig__mlp_and_head(struct rig__rank *k, int64_t n)
{
    struct rig_tensor h = rig__rows(&k->a.h, n), x = rig__rows(&k->a.x, n);
    struct rig_op_add_rms_norm post = {
        .out = x, .residual = h, .in = rig__rows(&k->a.o, n), .weight = k->w.norm[1], .eps = 1e-6f};
    rig__check(k, rig_hal_add_rms_norm(k->stream, &post), "add_rms_norm");
    rig__gemm(k, rig__rows(&k->a.gu, n), x, &k->w.wgu);
    struct rig_op_silu_mul silu = {.out = rig__rows(&k->a.act, n), .in = rig__rows(&k->a.gu, n)};
    rig__check(k, rig_hal_silu_mul(k->stream, &silu), "silu_mul");
    rig__gemm(k, rig__rows(&k->a.down, n), rig__rows(&k->a.act, n), &k->w.wdown);
    struct rig_tensor down = rig__rows(&k->a.down, n);
    rig__all_reduce(k, &down);
    struct rig_op_add_rms_norm final = {.out = x,
                                        .residual = h,
                                        .in = rig__rows(&k->a.down, n),
                                        .weight = k->w.norm[2],
                                        .eps = 1e-6f};
    rig__check(k, rig_hal_add_rms_norm(k->stream, &final), "add_rms_norm");
    struct rig_op_gather_rows last = {.out = k->a.last, .in = x, .idx = k->m.last_idx};
    rig__check(k, rig_hal_gather_rows(k->stream, &last), "gather_rows");
    struct rig_tensor logits = k->comm ? k->a.logits_shard : k->a.logits;
    rig__gemm(k, logits, k->a.last, &k->w.lm_head);
    if (k->comm != NULL) {
        struct rig_op_all_gather gather = {k->a.gathered, k->a.logits_shard, k->comm};
        rig__check(k, rig_hal_all_gather(k->stream, &gather), "all_gather");
        /* [tp, R, V/tp] → [R, V]: a strided view of the gathered shards, copied. */
        int64_t vr = RIG__V / k->tp, shape[3] = {RIG__R, k->tp, vr};
        struct rig_op_copy copy = {rig_tensor_make(k->a.logits.data, RIG_DTYPE_F32, 3, shape),
                                   rig_tensor_make(k->a.gathered.data, RIG_DTYPE_F32, 3, shape)};
        copy.in.stride[0] = vr;
        copy.in.stride[1] = RIG__R * vr;
        rig__check(k, rig_hal_copy(k->stream, &copy), "copy");
    }
    struct rig_op_sample sample = {k->m.tokens, k->a.logits, k->m.temperature, k->m.top_k,
                                   k->m.top_p,  k->m.seed,   k->m.position,
                                   rig_tensor_none()};
    rig__check(k, rig_hal_sample(k->stream, &sample), "sample");
}

/* One step: metadata up, forward, tokens into the token pool, results down. */
static void rig__step(struct rig__rank *k, int32_t step)
{
    bool decode = step == 1;
    int64_t n = decode ? RIG__R : RIG__T;
    rig__upload_metadata(k);
    if (decode) { /* the decode step reads its input ids back from the token pool */
        struct rig_op_index_gather load = {rig__rows(&k->m.ids, n), k->m.token_pool,
                                           k->m.write_idx};
        rig__check(k, rig_hal_index_gather(k->stream, &load), "index_gather");
    }
    rig__attention_block(k, n, decode);
    rig__mlp_and_head(k, n);
    struct rig_op_index_scatter write = {k->m.token_pool, k->m.tokens, k->m.write_idx};
    rig__check(k, rig_hal_index_scatter(k->stream, &write), "index_scatter");
    rig__download(k, RIG__ACTS, &k->a.logits, k->logits[step]);
    rig__download(k, RIG__META, &k->m.tokens, k->tokens[step]);
    rig__check(k, rig_hal_stream_synchronize(k->stream), "synchronize");
}

static void rig__release(struct rig__rank *k)
{
    rig_hal_event_destroy(k->begin);
    rig_hal_event_destroy(k->end);
    for (int32_t i = 0; i < 3; i++)
        rig_hal_buffer_free(k->buffers[i]);
    rig_hal_stream_destroy(k->stream);
}

/* Everything one rank does; runs on that rank's thread. */
static void *rig__run_rank(void *arg)
{
    struct rig__rank *k = arg;
    rig__check(k, rig_hal_stream_create(k->device, &k->stream), "stream_create");
    rig__check(k, rig_hal_event_create(k->device, &k->begin), "event_create");
    rig__check(k, rig_hal_event_create(k->device, &k->end), "event_create");
    if (!k->failed) rig__check(k, rig__alloc_buffers(k), "buffer_alloc");
    /* the largest shard: gate and up of a single device */
    uint16_t *scratch = malloc(2 * RIG__I * RIG__H * sizeof *scratch);
    if (scratch == NULL) k->failed = 1;
    if (!k->failed) {
        rig__carve_weights(k);
        rig__carve_activations(k);
        rig__carve_metadata(k);
        rig__upload_weights(k, scratch);
        rig__prefill_metadata(k);
        rig__check(k, rig_hal_event_record(k->begin, k->stream), "event_record");
        rig__step(k, 0);
        rig__decode_metadata(k);
        rig__step(k, 1);
        rig__check(k, rig_hal_event_record(k->end, k->stream), "event_record");
        rig__check(k, rig_hal_event_elapsed_ns(k->begin, k->end, &k->elapsed_ns), "elapsed");
        k->host_ns = rig_hal_now_ns(k->device);
        rig__check(k, rig_sim_get_stats(k->device, &k->stats), "stats");
    }
    free(scratch);
    rig__release(k);
    return NULL;
}

/* Opens `tp` simulated devices and runs the step on each, one thread per rank. */
static int rig__run_group(const struct rig__model *model, int32_t tp, struct rig__rank *ranks)
{
    struct rig_device *devices[RIG__TP];
    struct rig_comm *comms[RIG__TP];
    struct rig_device_config config = {.profile = "h100", .seed = 1};
    if (rig_hal_open("sim", &config, tp, devices) != RIG_OK) return 1;
    bool comm = tp > 1 && rig_hal_comm_create(devices, tp, comms) == RIG_OK;
    pthread_t threads[RIG__TP];
    int32_t started = 0;
    for (int32_t r = 0; r < tp; r++) {
        memset(&ranks[r], 0, sizeof ranks[r]);
        ranks[r] = (struct rig__rank){.tp = tp,
                                      .rank = r,
                                      .model = model,
                                      .device = devices[r],
                                      .comm = comm ? comms[r] : NULL};
    }
    if (tp == 1 || comm) {
        for (; started < tp; started++) {
            if (pthread_create(&threads[started], NULL, rig__run_rank, &ranks[started]) != 0) break;
        }
    }
    for (int32_t r = 0; r < started; r++)
        pthread_join(threads[r], NULL);
    int failed = started != tp;
    for (int32_t r = 0; r < tp; r++) {
        failed |= ranks[r].failed;
        if (comm) rig_hal_comm_destroy(comms[r]);
        rig_hal_close(devices[r]);
    }
    return failed;
}

/* Normalised squared error of `a` against the reference `b`. */
static double rig__nmse(const float *a, const float *b, size_t n)
{
    double err = 0, ref = 0;
    for (size_t i = 0; i < n; i++) {
        err += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        ref += (double)b[i] * b[i];
    }
    return ref > 0 ? err / ref : err;
}

static void rig__print_timeline(const char *label, const struct rig__rank *ranks, int32_t n)
{
    for (int32_t r = 0; r < n; r++) {
        const struct rig__rank *k = &ranks[r];
        printf("  %-6s rank %d: host %9.3f us, steps %9.3f us on the device, busy %9.3f us, "
               "%lld ops, %lld bytes allocated\n",
               label, r, (double)k->host_ns / 1e3, (double)k->elapsed_ns / 1e3,
               (double)k->stats.device_busy_ns / 1e3, (long long)k->stats.ops_issued,
               (long long)k->stats.bytes_allocated);
    }
}

/* The checks: TP logits match the single device's, tokens agree, reruns are identical. */
static int rig__compare(const struct rig__rank *single, const struct rig__rank *tp,
                        const struct rig__rank *again)
{
    int failed = 0;
    for (int32_t step = 0; step < 2; step++) {
        double nmse = rig__nmse(tp[0].logits[step], single->logits[step], RIG__R * RIG__V);
        bool same_tokens =
            memcmp(tp[0].tokens[step], single->tokens[step], sizeof single->tokens[step]) == 0;
        bool ranks_agree =
            memcmp(tp[0].logits[step], tp[1].logits[step], sizeof tp[0].logits[step]) == 0;
        printf("  %s: logits nmse TP=2 vs TP=1 %.3g (limit 1e-3); tokens TP=2 [%d %d], "
               "TP=1 [%d %d]; ranks agree: %s\n",
               step ? "decode " : "prefill", nmse, tp[0].tokens[step][0], tp[0].tokens[step][1],
               single->tokens[step][0], single->tokens[step][1], ranks_agree ? "yes" : "NO");
        failed |= !(nmse < 1e-3) || !same_tokens || !ranks_agree;
    }
    bool repeat = true;
    for (int32_t r = 0; r < RIG__TP; r++) {
        repeat = repeat && memcmp(tp[r].logits, again[r].logits, sizeof tp[r].logits) == 0;
        repeat = repeat && tp[r].host_ns == again[r].host_ns;
        repeat = repeat && tp[r].elapsed_ns == again[r].elapsed_ns;
    }
    printf("  rerun of TP=2: %s\n", repeat ? "identical bytes and timestamps" : "DIFFERENT");
    return failed || !repeat;
}

/* --- timing only: a Qwen3-32B decode step on 4 simulated H100s ------------------------- */

/* Qwen3-32B (config.json) per rank at TP=4, decoding a batch of 64 requests that each hold
 * 4096 tokens of context. Only shapes matter: every buffer but the metadata is phantom. */
enum {
    Q_LAYERS = 64,
    Q_H = 5120,
    Q_I = 25600,
    Q_HQ = 64,
    Q_HK = 8,
    Q_D = 128,
    Q_V = 151936,
    Q_TP = 4,
    Q_B = 64,
    Q_CONTEXT = 4096,
    Q_HQR = Q_HQ / Q_TP,
    Q_HKR = Q_HK / Q_TP,
    Q_IR = Q_I / Q_TP,
    Q_VR = Q_V / Q_TP,
    Q_SLOTS = Q_B * Q_CONTEXT + Q_B,
};

struct rig__qrank {
    int32_t rank;
    struct rig_device *device;
    struct rig_comm *comm;
    struct rig_stream *stream;
    struct rig_buffer *weights, *acts, *kv, *meta;
    size_t used[4];              /* bump offsets into weights, acts, kv, meta */
    int32_t host_table_idx[Q_B]; /* (B) uploaded metadata */
    int32_t host_kv_len[Q_B];    /* (B) */
    int32_t tokens[Q_B];         /* (B) sampled by the last step */
    int64_t eager_ns, graph_ns, eager_host_ns, graph_host_ns;
    int32_t graph_ops;
    struct rig_sim_stats graph_stats; /* what one graph replay added: the step's breakdown */
    int failed;
};

static struct rig_tensor rig__qtake(struct rig__qrank *k, int32_t which, enum rig_dtype dtype,
                                    int32_t ndim, int64_t n0, int64_t n1, int64_t n2)
{
    struct rig_buffer *buffers[4] = {k->weights, k->acts, k->kv, k->meta};
    int64_t shape[3] = {n0, n1, n2};
    struct rig_tensor t = rig_tensor_make(NULL, dtype, ndim, shape);
    size_t bytes = (size_t)rig_tensor_numel(&t) * rig_dtype_size(dtype);
    RIG_ASSERT(k->used[which] + bytes <= rig_hal_buffer_size(buffers[which]));
    t.data = (char *)rig_hal_buffer_ptr(buffers[which]) + k->used[which];
    k->used[which] += (bytes + 255) / 256 * 256;
    return t;
}

static void rig__qcheck(struct rig__qrank *k, enum rig_status status)
{
    if (status != RIG_OK && !k->failed) {
        fprintf(stderr, "rig selftest: qwen3-32b rank %d: %s %s\n", k->rank,
                rig_status_name(status), rig_hal_last_error());
        k->failed = 1;
    }
}

/* The tensors one decode step reads and writes (views; layer weights carved per layer). */
struct rig__qstep {
    struct rig_tensor h, x, qkv, q, kk, v, attn, o, gu, act, down, logits_shard, gathered, logits;
    struct rig_tensor ids, positions, out_loc, page_table, table_idx, kv_len, last_idx;
    struct rig_tensor temperature, top_k, top_p, seed, position, tokens, embed, lm_head, norm;
};

static void rig__qlayer(struct rig__qrank *k, const struct rig__qstep *s)
{
    struct rig_tensor wqkv = rig__qtake(k, 0, RIG_DTYPE_BF16, 2, (Q_HQR + 2 * Q_HKR) * Q_D, Q_H, 1);
    struct rig_tensor wo = rig__qtake(k, 0, RIG_DTYPE_BF16, 2, Q_H, Q_HQR * Q_D, 1);
    struct rig_tensor wgu = rig__qtake(k, 0, RIG_DTYPE_BF16, 2, 2 * Q_IR, Q_H, 1);
    struct rig_tensor wdown = rig__qtake(k, 0, RIG_DTYPE_BF16, 2, Q_H, Q_IR, 1);
    struct rig_tensor norm = rig__qtake(k, 0, RIG_DTYPE_BF16, 1, Q_H, 1, 1);
    struct rig_tensor qk_norm = rig__qtake(k, 0, RIG_DTYPE_BF16, 1, Q_D, 1, 1);
    struct rig_tensor k_cache = rig__qtake(k, 2, RIG_DTYPE_BF16, 3, Q_SLOTS, Q_HKR, Q_D);
    struct rig_tensor v_cache = rig__qtake(k, 2, RIG_DTYPE_BF16, 3, Q_SLOTS, Q_HKR, Q_D);
    struct rig_stream *st = k->stream;
    struct rig_op_add_rms_norm pre = {s->x, s->h, s->down, norm, 1e-6f};
    rig__qcheck(k, rig_hal_add_rms_norm(st, &pre));
    rig__qcheck(k, rig_hal_gemm(st, &(struct rig_op_gemm){s->qkv, s->x, wqkv, rig_tensor_none()}));
    rig__qcheck(k, rig_hal_head_rms_norm(st, &(struct rig_op_head_rms_norm){s->q, qk_norm, 1e-6f}));
    rig__qcheck(k,
                rig_hal_head_rms_norm(st, &(struct rig_op_head_rms_norm){s->kk, qk_norm, 1e-6f}));
    struct rig_op_rope rope = {s->q, s->kk, s->positions, {.theta = 1000000.0f}};
    rig__qcheck(k, rig_hal_rope(st, &rope));
    struct rig_op_store_kv store = {k_cache, v_cache, s->kk, s->v, s->out_loc};
    rig__qcheck(k, rig_hal_store_kv(st, &store));
    struct rig_op_attention_decode attention = {s->attn,       s->q,         k_cache,   v_cache,
                                                s->page_table, s->table_idx, s->kv_len, 0.0884f};
    rig__qcheck(k, rig_hal_attention_decode(st, &attention));
    struct rig_tensor attn2d = rig_tensor_2d(s->attn.data, RIG_DTYPE_BF16, Q_B, Q_HQR * Q_D);
    rig__qcheck(k, rig_hal_gemm(st, &(struct rig_op_gemm){s->o, attn2d, wo, rig_tensor_none()}));
    rig__qcheck(k, rig_hal_all_reduce(st, &(struct rig_op_all_reduce){s->o, k->comm}));
    struct rig_op_add_rms_norm post = {s->x, s->h, s->o, norm, 1e-6f};
    rig__qcheck(k, rig_hal_add_rms_norm(st, &post));
    rig__qcheck(k, rig_hal_gemm(st, &(struct rig_op_gemm){s->gu, s->x, wgu, rig_tensor_none()}));
    rig__qcheck(k, rig_hal_silu_mul(st, &(struct rig_op_silu_mul){s->act, s->gu}));
    rig__qcheck(k,
                rig_hal_gemm(st, &(struct rig_op_gemm){s->down, s->act, wdown, rig_tensor_none()}));
    rig__qcheck(k, rig_hal_all_reduce(st, &(struct rig_op_all_reduce){s->down, k->comm}));
}

/* One decode step: embedding, 64 layers, final norm, LM head, all-gather, sampling. */
static void rig__qforward(struct rig__qrank *k, const struct rig__qstep *s)
{
    k->used[0] = k->used[2] = 0; /* every step walks the same per-layer weights and caches */
    struct rig_tensor embed = rig__qtake(k, 0, RIG_DTYPE_BF16, 2, Q_VR, Q_H, 1);
    struct rig_tensor lm_head = rig__qtake(k, 0, RIG_DTYPE_BF16, 2, Q_VR, Q_H, 1);
    struct rig_tensor norm = rig__qtake(k, 0, RIG_DTYPE_BF16, 1, Q_H, 1, 1);
    struct rig_stream *st = k->stream;
    struct rig_op_embedding embedding = {s->h, embed, s->ids, (int64_t)k->rank * Q_VR};
    rig__qcheck(k, rig_hal_embedding(st, &embedding));
    rig__qcheck(k, rig_hal_all_reduce(st, &(struct rig_op_all_reduce){s->h, k->comm}));
    for (int32_t layer = 0; layer < Q_LAYERS; layer++)
        rig__qlayer(k, s);
    struct rig_op_add_rms_norm final = {s->x, s->h, s->down, norm, 1e-6f};
    rig__qcheck(k, rig_hal_add_rms_norm(st, &final));
    rig__qcheck(k, rig_hal_gemm(st, &(struct rig_op_gemm){s->logits_shard, s->x, lm_head,
                                                          rig_tensor_none()}));
    struct rig_op_all_gather gather = {s->gathered, s->logits_shard, k->comm};
    rig__qcheck(k, rig_hal_all_gather(st, &gather));
    int64_t shape[3] = {Q_B, Q_TP, Q_VR};
    struct rig_op_copy copy = {rig_tensor_make(s->logits.data, RIG_DTYPE_F32, 3, shape),
                               rig_tensor_make(s->gathered.data, RIG_DTYPE_F32, 3, shape)};
    copy.in.stride[0] = Q_VR;
    copy.in.stride[1] = (int64_t)Q_B * Q_VR;
    rig__qcheck(k, rig_hal_copy(st, &copy));
    struct rig_op_sample sample = {s->tokens, s->logits, s->temperature, s->top_k,
                                   s->top_p,  s->seed,   s->position,
                                   rig_tensor_none()};
    rig__qcheck(k, rig_hal_sample(st, &sample));
}
/* Carves the step's activations (phantom) and metadata (real), uploads the metadata. */
static void rig__qupload(struct rig__qrank *k, const struct rig_tensor *t, const void *host)
{
    size_t at = (size_t)((char *)t->data - (char *)rig_hal_buffer_ptr(k->meta));
    size_t bytes = (size_t)rig_tensor_numel(t) * rig_dtype_size(t->dtype);
    rig__qcheck(k, rig_hal_buffer_upload(k->stream, k->meta, at, host, bytes));
}

static void rig__qsetup(struct rig__qrank *k, struct rig__qstep *s)
{
    enum rig_dtype bf16 = RIG_DTYPE_BF16, i32 = RIG_DTYPE_I32, f32 = RIG_DTYPE_F32;
    int32_t qkv_width = (Q_HQR + 2 * Q_HKR) * Q_D;
    s->h = rig__qtake(k, 1, bf16, 2, Q_B, Q_H, 1);
    s->x = rig__qtake(k, 1, bf16, 2, Q_B, Q_H, 1);
    s->qkv = rig__qtake(k, 1, bf16, 2, Q_B, qkv_width, 1);
    s->q = rig_tensor_3d(s->qkv.data, bf16, Q_B, Q_HQR, Q_D); /* views into qkv's rows */
    s->q.stride[0] = qkv_width;
    s->kk = rig_tensor_3d((char *)s->qkv.data + Q_HQR * Q_D * 2, bf16, Q_B, Q_HKR, Q_D);
    s->kk.stride[0] = qkv_width;
    s->v = rig_tensor_3d((char *)s->qkv.data + (Q_HQR + Q_HKR) * Q_D * 2, bf16, Q_B, Q_HKR, Q_D);
    s->v.stride[0] = qkv_width;
    s->attn = rig__qtake(k, 1, bf16, 3, Q_B, Q_HQR, Q_D);
    s->o = rig__qtake(k, 1, bf16, 2, Q_B, Q_H, 1);
    s->gu = rig__qtake(k, 1, bf16, 2, Q_B, 2 * Q_IR, 1);
    s->act = rig__qtake(k, 1, bf16, 2, Q_B, Q_IR, 1);
    s->down = rig__qtake(k, 1, bf16, 2, Q_B, Q_H, 1);
    s->logits_shard = rig__qtake(k, 1, f32, 2, Q_B, Q_VR, 1);
    s->gathered = rig__qtake(k, 1, f32, 3, Q_TP, Q_B, Q_VR);
    s->logits = rig__qtake(k, 1, f32, 2, Q_B, Q_V, 1);
    struct rig_tensor *meta[] = {&s->ids,       &s->positions, &s->out_loc,
                                 &s->table_idx, &s->kv_len,    &s->last_idx,
                                 &s->top_k,     &s->position,  &s->tokens};
    for (size_t m = 0; m < RIG_ARRAY_LEN(meta); m++)
        *meta[m] = rig__qtake(k, 3, i32, 1, Q_B, 1, 1);
    s->temperature = rig__qtake(k, 3, f32, 1, Q_B, 1, 1);
    s->top_p = rig__qtake(k, 3, f32, 1, Q_B, 1, 1);
    s->seed = rig__qtake(k, 3, RIG_DTYPE_I64, 1, Q_B, 1, 1);
    s->page_table = rig__qtake(k, 3, i32, 2, Q_B, Q_CONTEXT + 1, 1);
    /* Request r sits in table row r with 4096 tokens of context and decodes token 4097; the
     * cost model reads kv_len (the page table's slots do not change the cost). */
    for (int32_t r = 0; r < Q_B; r++) {
        k->host_table_idx[r] = r;
        k->host_kv_len[r] = Q_CONTEXT + 1;
    }
    rig__qupload(k, &s->table_idx, k->host_table_idx);
    rig__qupload(k, &s->kv_len, k->host_kv_len);
    rig__qcheck(k, rig_hal_stream_synchronize(k->stream));
}
/* One step issued eagerly, then captured as a graph and replayed: device and host times. */
static void rig__qsteps(struct rig__qrank *k, const struct rig__qstep *s)
{
    struct rig_event *begin = NULL, *end = NULL;
    struct rig_graph *graph = NULL;
    rig__qcheck(k, rig_hal_event_create(k->device, &begin));
    rig__qcheck(k, rig_hal_event_create(k->device, &end));
    if (k->failed) return;
    int64_t t0 = rig_hal_now_ns(k->device);
    rig__qcheck(k, rig_hal_event_record(begin, k->stream));
    rig__qforward(k, s);
    k->eager_host_ns = rig_hal_now_ns(k->device) - t0;
    rig__qcheck(k, rig_hal_event_record(end, k->stream));
    rig__qcheck(k, rig_hal_event_synchronize(end));
    rig__qcheck(k, rig_hal_event_elapsed_ns(begin, end, &k->eager_ns));
    rig__qcheck(k, rig_hal_graph_capture_begin(k->stream));
    rig__qforward(k, s);
    rig__qcheck(k, rig_hal_graph_capture_end(k->stream, &graph));
    if (graph != NULL) {
        k->graph_ops = rig_hal_graph_op_count(graph);
        struct rig_sim_stats before;
        rig__qcheck(k, rig_sim_get_stats(k->device, &before));
        t0 = rig_hal_now_ns(k->device);
        rig__qcheck(k, rig_hal_event_record(begin, k->stream));
        rig__qcheck(k, rig_hal_graph_launch(graph, k->stream));
        k->graph_host_ns = rig_hal_now_ns(k->device) - t0;
        rig__qcheck(k, rig_hal_event_record(end, k->stream));
        rig__qcheck(k, rig_hal_event_synchronize(end));
        rig__qcheck(k, rig_hal_event_elapsed_ns(begin, end, &k->graph_ns));
        rig__qcheck(k, rig_sim_get_stats(k->device, &k->graph_stats));
        for (int32_t kind = 0; kind < RIG_OP_COUNT; kind++) {
            k->graph_stats.op_ns[kind] -= before.op_ns[kind];
            k->graph_stats.op_count[kind] -= before.op_count[kind];
        }
    }
    rig_hal_graph_destroy(graph);
    rig_hal_event_destroy(begin);
    rig_hal_event_destroy(end);
}

static void *rig__qrun(void *arg)
{
    struct rig__qrank *k = arg;
    static const size_t bytes[4] = {(size_t)17 << 30, (size_t)256 << 20, (size_t)35 << 29,
                                    (size_t)2 << 20};
    static const enum rig_memory_use uses[4] = {RIG_MEMORY_WEIGHTS, RIG_MEMORY_ACTIVATIONS,
                                                RIG_MEMORY_KV, RIG_MEMORY_METADATA};
    struct rig_buffer **buffers[4] = {&k->weights, &k->acts, &k->kv, &k->meta};
    rig__qcheck(k, rig_hal_stream_create(k->device, &k->stream));
    for (int32_t i = 0; i < 4 && !k->failed; i++)
        rig__qcheck(k, rig_hal_buffer_alloc(k->device, bytes[i], uses[i], buffers[i]));
    static struct rig__qstep steps[Q_TP];
    struct rig__qstep *s = &steps[k->rank];
    if (!k->failed) {
        rig__qsetup(k, s);
        rig__qsteps(k, s);
        size_t at = (size_t)((char *)s->tokens.data - (char *)rig_hal_buffer_ptr(k->meta));
        rig__qcheck(k,
                    rig_hal_buffer_download(k->stream, k->meta, at, k->tokens, sizeof k->tokens));
        rig__qcheck(k, rig_hal_stream_synchronize(k->stream));
    }
    for (int32_t i = 0; i < 4; i++)
        rig_hal_buffer_free(*buffers[i]);
    rig_hal_stream_destroy(k->stream);
    return NULL;
}

/* Opens 4 timing-only H100s, runs the step on a thread per rank, prints what the simulator
 * predicts and checks it is self-consistent. Returns 0 when it is. */
static int rig__predict_qwen3_32b(void)
{
    struct rig_device *devices[Q_TP];
    struct rig_comm *comms[Q_TP];
    static struct rig__qrank ranks[Q_TP];
    pthread_t threads[Q_TP];
    struct rig_device_config config = {.timing_only = true, .profile = "h100", .seed = 1};
    if (rig_hal_open("sim", &config, Q_TP, devices) != RIG_OK) return 1;
    int failed = rig_hal_comm_create(devices, Q_TP, comms) != RIG_OK;
    int32_t started = 0;
    for (int32_t r = 0; r < Q_TP && !failed; r++) {
        ranks[r] = (struct rig__qrank){.rank = r, .device = devices[r], .comm = comms[r]};
        if (pthread_create(&threads[r], NULL, rig__qrun, &ranks[r]) != 0) break;
        started++;
    }
    for (int32_t r = 0; r < started; r++)
        pthread_join(threads[r], NULL);
    failed |= started != Q_TP;
    for (int32_t r = 0; r < Q_TP; r++) {
        failed |= ranks[r].failed || ranks[r].eager_ns != ranks[0].eager_ns ||
                  ranks[r].graph_ns != ranks[0].graph_ns;
        for (int32_t b = 0; b < Q_B; b++)
            failed |= ranks[r].tokens[b] < 0 || ranks[r].tokens[b] >= Q_V;
        if (!failed) rig_hal_comm_destroy(comms[r]);
        rig_hal_close(devices[r]);
    }
    const struct rig__qrank *k = &ranks[0];
    failed |= !(k->graph_ns <= k->eager_ns) || k->eager_ns < 1000000 || k->eager_ns > 100000000;
    printf("timing only: Qwen3-32B decode step, batch %d x %d tokens of context, TP=%d on "
           "simulated H100s:\n  eager %.2f ms on the device (host %.2f ms issuing %d ops); "
           "CUDA graph %.2f ms (host %.3f ms)\n",
           Q_B, Q_CONTEXT, Q_TP, (double)k->eager_ns / 1e6, (double)k->eager_host_ns / 1e6,
           k->graph_ops, (double)k->graph_ns / 1e6, (double)k->graph_host_ns / 1e6);
    printf("  device time of the graph step by op:");
    const char *separator = " ";
    for (int32_t kind = 0; kind < RIG_OP_COUNT; kind++) {
        if (k->graph_stats.op_count[kind] == 0) continue;
        printf("%s%s %.2f ms (%lld)", separator, rig_op_name((enum rig_op_kind)kind),
               (double)k->graph_stats.op_ns[kind] / 1e6, (long long)k->graph_stats.op_count[kind]);
        separator = ", ";
    }
    printf("\n");
    return failed;
}

int rig_cmd_selftest(int argc, char **argv)
{
    if (argc > 1) {
        bool help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        fprintf(help ? stdout : stderr,
                "usage: rig selftest\n\nRuns one transformer layer (prefill with a cached "
                "prefix, then a decode step) on the\nsimulator, on one device and on two TP "
                "ranks in threads; checks that they agree and\nthat a rerun is identical; "
                "prints the virtual timeline. Then predicts a Qwen3-32B decode step on\n4 "
                "simulated H100s in timing-only mode, eagerly and as a graph. Exit 0 on "
                "success.\n");
        return help ? 0 : 2;
    }
    static struct rig__model model;
    static struct rig__rank single[1], tp[RIG__TP], again[RIG__TP];
    rig__model_init(&model, 0x5eed);
    int failed = rig__run_group(&model, 1, single);
    failed |= rig__run_group(&model, RIG__TP, tp);
    failed |= rig__run_group(&model, RIG__TP, again);
    printf("rig selftest: one layer of H=%d, %d/%d heads, D=%d, I=%d, V=%d; %d requests, "
           "%d prefill tokens\n",
           RIG__H, RIG__HQ, RIG__HK, RIG__D, RIG__I, RIG__V, RIG__R, RIG__T);
    if (!failed) failed |= rig__compare(single, tp, again);
    rig__print_timeline("TP=1", single, 1);
    rig__print_timeline("TP=2", tp, RIG__TP);
    failed |= rig__predict_qwen3_32b();
    printf("rig selftest: %s\n", failed ? "FAILED" : "ok");
    return failed ? 1 : 0;
}
