/* profile.c — the op sweep of `rig profile`, see profile.h.
 *
 * One device, seven buffers allocated once: weights, two activation areas (inputs, outputs),
 * KV, metadata (page tables, indices; staged from the host for each point), the sampler's
 * logits and a 128 MiB flush buffer. Each point builds one op over views of them, times it
 * cold and warm, and records its key and the op's analytic FLOPs and bytes (hal/optable.h). On a real device
 * the operand buffers are filled once with random finite bf16 values (rig__fill_random), the
 * logits with a language model's heavy-tailed rows (rig__fill_logits).
 *
 * The inputs stay as filled: no op writes the input buffer (rig__check_writes, at every
 * point), except the fused q/k norm + RoPE + store, whose in-place q and k lie at the
 * buffer's end, where no other point reads (rig__rowwise). Before 2026-11-29 add_rms_norm's
 * residual lay in it: summed in place some 40 times a point, over rows that later points
 * read as inputs, the values grew without bound (to 1e11-1e19 after the 8B rows, by an
 * emulation of the sweep's order), and silu_mul then met exp overflows, whose division takes
 * the slow path: its points ran 2-3 x slower than the same kernel in a step
 * (docs/simulator.md, "The sampler's rows"). Its points stayed as slow while they read the
 * rows the q/k norm + RoPE rewrote in place (seventh session, call 9).
 */
#include "core/harness/bench/profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/harness/bench/bench_impl.h"
#include "core/harness/bench/host_fit.h"
#include "core/model/model.h"
#include "core/harness/results/metrics.h"

#define RIG__FLUSH_BYTES   ((size_t)128 << 20)
#define RIG__WARM_ISSUES   8
#define RIG__WARM_REPLAYS  3
#define RIG__WARM_COLD_NS  1e6 /* ops this long cold are not timed warm (rig__point) */
#define RIG__SLOTS_MAX     (1 << 20)
#define RIG__META_WORDS    ((size_t)3 << 20)
#define RIG__POINTS_MAX    RIG_OPTABLE_POINTS_MAX
#define RIG__ALIGN_BYTES   256 /* where a point's second tensor in a buffer starts */

enum { RIG__W, RIG__IN, RIG__OUT, RIG__KV, RIG__META, RIG__LOGITS, RIG__FLUSH, RIG__BUFFERS };

/* Sized for the largest point: weights the 8B LM head (151936 x 4096 bf16); inputs the
 * 8B TP 1 gate_up output read by silu_mul at 16384 rows; outputs the gate_up GEMM at 16384
 * rows; KV 2^20 slots of Hk x D = 1024, K and V; logits 1024 rows of 151936 f32. */
static const size_t rig__buffer_bytes[RIG__BUFFERS] = {
    (size_t)1280 << 20, (size_t)1024 << 20, (size_t)1024 << 20,
    (size_t)RIG__SLOTS_MAX * 1024 * 2 * 2, RIG__META_WORDS * 4, (size_t)1024 << 20,
    RIG__FLUSH_BYTES};

struct rig__sweep {
    const struct rig_profile_options *options;
    struct rig__bench_dev dev;
    struct rig_buffer *buffers[RIG__BUFFERS];
    int32_t *host;         /* (RIG__META_WORDS) staging of the metadata buffer */
    size_t meta_used;      /* words of the metadata buffer carved for this point */
    struct rig_optable_point *points; /* (RIG__POINTS_MAX) */
    int64_t count;
    const char *family;    /* for progress */
    struct timespec started;
    bool out_of_time;      /* options->seconds_max passed: no more points */
    void *pinned;          /* (RIG__HOST_BYTES) pinned host memory of the host calls' copies */
    struct rig_graph *graph; /* the host calls' graph launch */
};

static uint8_t *rig__base(struct rig__sweep *s, int32_t which)
{
    return rig_hal_buffer_ptr(s->buffers[which]);
}

/* Whether `t` (non-empty) overlaps the input buffer. */
static bool rig__in_inputs(struct rig__sweep *s, const struct rig_tensor *t)
{
    const uint8_t *in = rig__base(s, RIG__IN), *p = t->data;
    return p != NULL && p >= in && p < in + rig__buffer_bytes[RIG__IN];
}

/* The sweep's invariant (file comment): the op writes nothing into the input buffer — its
 * output (an op's first tensor, hal/ops.h; decode attention's with the store prologue),
 * add_rms_norm's residual, summed in place, and a fused GEMM's operand; the q/k norm +
 * RoPE's in-place q and k (or scratch, with the prologue) are let be (they keep their size).
 * A bug if broken. */
static void rig__check_writes(struct rig__sweep *s, const struct rig_op *op)
{
    const struct rig_tensor *out = (const struct rig_tensor *)&op->u;
    if (op->kind == RIG_OP_ATTENTION_DECODE_STORE) out = &op->u.attention_decode_store.attend.out;
    if (op->kind != RIG_OP_QK_NORM_ROPE_STORE)
        RIG_ASSERT_MSG(!rig__in_inputs(s, out), "profile: an op writes the sweep's inputs");
    if (op->kind == RIG_OP_ADD_RMS_NORM)
        RIG_ASSERT_MSG(!rig__in_inputs(s, &op->u.add_rms_norm.residual),
                       "profile: add_rms_norm sums its residual into the sweep's inputs");
    if (op->kind == RIG_OP_GEMM)
        RIG_ASSERT_MSG(!rig__in_inputs(s, &op->u.gemm.operand),
                       "profile: a GEMM's prologue writes its operand into the sweep's inputs");
}

/* `n` int32 words of metadata for this point: the device tensor; *host is their staging. */
static struct rig_tensor rig__meta(struct rig__sweep *s, int64_t n, enum rig_dtype dtype,
                                   int32_t **host)
{
    size_t words = (size_t)n * (rig_dtype_size(dtype) / 4);
    RIG_ASSERT(s->meta_used + words <= RIG__META_WORDS);
    *host = s->host + s->meta_used;
    struct rig_tensor t = rig_tensor_1d(rig__base(s, RIG__META) + s->meta_used * 4, dtype, n);
    s->meta_used += (words + 63) / 64 * 64;
    return t;
}

static enum rig_status rig__stage(struct rig__sweep *s)
{
    enum rig_status status = RIG_OK;
    if (s->meta_used > 0)
        status = rig_hal_buffer_upload(s->dev.stream, s->buffers[RIG__META], 0, s->host,
                                       s->meta_used * 4);
    if (status == RIG_OK) status = rig_hal_stream_synchronize(s->dev.stream);
    s->meta_used = 0;
    return status;
}

static bool rig__seen(const struct rig__sweep *s, const struct rig_optable_key *key)
{
    for (int64_t i = s->count - 1; i >= 0; i--)
        if (rig_optable_key_equal(&s->points[i].key, key)) return true;
    return false;
}

/* Median of the warm issues: RIG__WARM_ISSUES captured in a graph, replayed (eager where the
 * backend has no graphs). */
static enum rig_status rig__warm(struct rig__sweep *s, const struct rig_op *op, double *ns)
{
    struct rig_stream *stream = s->dev.stream;
    enum rig_status status = rig_hal_graph_capture_begin(stream);
    bool graph = status == RIG_OK;
    if (status == RIG_E_UNSUPPORTED) status = RIG_OK;
    struct rig_graph *g = NULL;
    for (int32_t i = 0; graph && i < RIG__WARM_ISSUES && status == RIG_OK; i++)
        status = rig_hal_op(stream, op);
    if (graph) {
        enum rig_status end = rig_hal_graph_capture_end(stream, &g);
        if (status == RIG_OK) status = end;
    }
    int32_t replays = graph ? RIG__WARM_REPLAYS : RIG__WARM_REPLAYS * RIG__WARM_ISSUES;
    for (int32_t i = -1; i < replays && status == RIG_OK; i++) {
        if (i == 0) status = rig_hal_event_record(s->dev.start[0], stream);
        if (status == RIG_OK)
            status = graph ? rig_hal_graph_launch(g, stream) : rig_hal_op(stream, op);
    }
    if (status == RIG_OK) status = rig_hal_event_record(s->dev.end[0], stream);
    if (status == RIG_OK) status = rig_hal_stream_synchronize(stream);
    int64_t elapsed = 0;
    if (status == RIG_OK)
        status = rig_hal_event_elapsed_ns(s->dev.start[0], s->dev.end[0], &elapsed);
    *ns = (double)elapsed / (RIG__WARM_REPLAYS * RIG__WARM_ISSUES);
    if (g != NULL) rig_hal_graph_destroy(g);
    return status;
}

/* Cold issues: a fill of the flush buffer evicts L2, then the op alone between events. The
 * host time of each issue (the op call alone, the wall clock on a GPU) gives host_ns; that
 * of the shape's first issue (module loading, cuBLAS choosing a kernel for a new shape)
 * first_host_ns. */
static enum rig_status rig__cold(struct rig__sweep *s, const struct rig_op *op,
                                 struct rig_optable_point *point)
{
    struct rig_stream *stream = s->dev.stream;
    int32_t repeats = s->options->repeats;
    int64_t first = rig_hal_now_ns(s->dev.device);
    enum rig_status status = rig_hal_op(stream, op); /* first use: module load, tuning */
    point->first_host_ns = (double)(rig_hal_now_ns(s->dev.device) - first);
    double host[RIG_BENCH_REPEATS_MAX];
    for (int32_t i = 0; i < repeats && status == RIG_OK; i++) {
        status = rig_hal_buffer_fill(stream, s->buffers[RIG__FLUSH], 0, 0x3c003c00u + (uint32_t)i,
                                     RIG__FLUSH_BYTES / 4);
        if (status == RIG_OK) status = rig_hal_event_record(s->dev.start[i], stream);
        int64_t issued = rig_hal_now_ns(s->dev.device);
        if (status == RIG_OK) status = rig_hal_op(stream, op);
        host[i] = (double)(rig_hal_now_ns(s->dev.device) - issued);
        if (status == RIG_OK) status = rig_hal_event_record(s->dev.end[i], stream);
    }
    if (status == RIG_OK) status = rig_hal_stream_synchronize(stream);
    if (status == RIG_OK) {
        struct rig_metric_stats issue;
        rig_metrics_stats(host, repeats, &issue);
        point->host_ns = issue.median > 0 ? issue.median : 0;
    }
    double times[RIG_BENCH_REPEATS_MAX];
    for (int32_t i = 0; i < repeats && status == RIG_OK; i++) {
        int64_t elapsed = 0;
        status = rig_hal_event_elapsed_ns(s->dev.start[i], s->dev.end[i], &elapsed);
        times[i] = (double)elapsed;
    }
    if (status != RIG_OK) return status;
    struct rig_metric_stats stats;
    rig_metrics_stats(times, repeats, &stats);
    point->cold_ns = stats.median > 1 ? stats.median : 1;
    point->cold_p10_ns = rig_metrics_percentile(times, repeats, 10);
    point->cold_p90_ns = stats.p90;
    return RIG_OK;
}

/* Whether the sweep's time limit (wall clock; only ever set for real devices) has passed. */
static bool rig__out_of_time(struct rig__sweep *s)
{
    if (s->options->seconds_max <= 0 || s->out_of_time) return s->out_of_time;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double elapsed = (double)(now.tv_sec - s->started.tv_sec) +
                     1e-9 * (double)(now.tv_nsec - s->started.tv_nsec);
    s->out_of_time = elapsed > s->options->seconds_max;
    return s->out_of_time;
}

/* `t` pointed at its staging instead, when it lies in the metadata buffer. */
static struct rig_tensor rig__on_host(struct rig__sweep *s, struct rig_tensor t)
{
    uint8_t *base = rig__base(s, RIG__META);
    if ((uint8_t *)t.data >= base && (uint8_t *)t.data < base + RIG__META_WORDS * 4)
        t.data = (uint8_t *)s->host + ((uint8_t *)t.data - base);
    return t;
}

/* The tensors of `op` whose values (not only shapes) its key and analytic work read
 * (hal/optable.c): attention's lengths (decode: its rows and page table too, for the positions
 * requests share), the sampler's per-row parameters. Up to 4; the count. */
static int32_t rig__key_values(struct rig_op *op, struct rig_tensor *read[4])
{
    int32_t n = 0;
    if (op->kind == RIG_OP_ATTENTION_DECODE || op->kind == RIG_OP_ATTENTION_DECODE_STORE) {
        struct rig_op_attention_decode *a = op->kind == RIG_OP_ATTENTION_DECODE
                                                ? &op->u.attention_decode
                                                : &op->u.attention_decode_store.attend;
        read[n++] = &a->kv_len;
        read[n++] = &a->table_idx;
        read[n++] = &a->page_table; /* its shared positions */
    } else if (op->kind == RIG_OP_ATTENTION_PREFILL) {
        read[n++] = &op->u.attention_prefill.kv_len;
        read[n++] = &op->u.attention_prefill.cu_q;
    } else if (op->kind == RIG_OP_SAMPLE) {
        read[n++] = &op->u.sample.temperature;
        read[n++] = &op->u.sample.top_k;
        read[n++] = &op->u.sample.top_p;
        read[n++] = &op->u.sample.min_p;
    }
    return n;
}

/* The op as the host can read it: every value its key and work read (rig__key_values) from the
 * staging, never from a device buffer (on a GPU a device pointer is not the host's to read).
 * Asserted: such a value outside the metadata buffer would be a device read. */
static struct rig_op rig__host_view(struct rig__sweep *s, const struct rig_op *op)
{
    struct rig_op view = *op;
    struct rig_tensor *read[4];
    int32_t n = rig__key_values(&view, read);
    for (int32_t i = 0; i < n; i++) {
        if (read[i]->data == NULL) continue;
        *read[i] = rig__on_host(s, *read[i]);
        for (int32_t b = 0; b < RIG__BUFFERS; b++) {
            const uint8_t *base = rig__base(s, b), *p = read[i]->data;
            RIG_ASSERT_MSG(!(p >= base && p < base + rig__buffer_bytes[b]),
                           "profile: an op's key would read device memory");
        }
    }
    return view;
}

/* Times `op` and appends it (unless its key was swept). Its key is read before the metadata
 * is staged to the device: from the host's staging alone (rig__host_view), never from what
 * the device buffer held for the point before. */
static enum rig_status rig__point(struct rig__sweep *s, const struct rig_op *op)
{
    rig__check_writes(s, op);
    struct rig_op view = rig__host_view(s, op);
    struct rig_optable_point point = {.key = rig_optable_op_key(&view)};
    if (rig__seen(s, &point.key) || rig__out_of_time(s)) {
        s->meta_used = 0;
        return RIG_OK;
    }
    if (s->count == RIG__POINTS_MAX) return RIG_E_CAPACITY;
    enum rig_status status = rig__stage(s);
    if (status != RIG_OK) return status;
    struct rig_op_work work = rig_optable_op_work(&view);
    point.flops = work.flops;
    point.bytes = work.bytes;
    status = rig__cold(s, op, &point);
    /* An op of a millisecond or more moves far more than L2 holds: warm is cold, and its 24
     * warm issues would cost the sweep most of its time (the 16k-token prefills) */
    if (status == RIG_OK && point.cold_ns >= RIG__WARM_COLD_NS) point.warm_ns = point.cold_ns;
    else if (status == RIG_OK) status = rig__warm(s, op, &point.warm_ns);
    if (status == RIG_OK) s->points[s->count++] = point;
    if (s->options->progress != NULL && s->count % 64 == 0)
        s->options->progress(s->options->user, s->family, s->count, 0);
    return status;
}

/* --- the families ------------------------------------------------------------------------ */

struct rig__shape { /* one model at one TP degree, per rank */
    const struct rig_model_config *c;
    int64_t H, I, Hq, Hk, D, V;
};

/* Powers of two and the points halfway between them in log2 (x 1.5): GEMM kernels (cuBLAS's
 * choice of tile and split) change between powers of two. */
static const int64_t rig__rows_full[] = {1,    2,    3,    4,    6,    8,    12,   16,   24,
                                         32,   48,   64,   96,   128,  192,  256,  384,  512,
                                         768,  1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
                                         16384};
static const int64_t rig__rows_quick[] = {1, 16, 256};

/* A GEMM's fused form (hal/ops.h): its prologue and whether it accumulates into out. */
struct rig__form {
    enum rig_gemm_prologue prologue;
    bool accumulate;
};

/* Fused GEMMs are swept up to this many rows: the batches a model fuses at when asked to
 * (RIG_FUSE_ROWS 8 or 16; off by default, core/model/model.h), all of them on the CUDA
 * backend's small-batch kernel. */
#define RIG__FUSED_ROWS_MAX 16

static size_t rig__aligned(int64_t bytes)
{
    return ((size_t)bytes + RIG__ALIGN_BYTES - 1) / RIG__ALIGN_BYTES * RIG__ALIGN_BYTES;
}

/* A point whose tensors do not fit the sweep's buffers (sized for Qwen3-8B's largest: a
 * larger model's rows at TP 1) is skipped, said once a kind on stderr; the table then reaches
 * those keys from its nearest points. Returns RIG_OK. */
static enum rig_status rig__too_big(const char *what, int64_t rows)
{
    static const char *said[4];
    for (int32_t i = 0; i < 4; i++) {
        if (said[i] == what) return RIG_OK;
        if (said[i] == NULL) {
            said[i] = what;
            fprintf(stderr, "rig profile: %s points whose tensors pass the sweep's buffers "
                            "are skipped (the first at %lld rows)\n", what, (long long)rows);
            return RIG_OK;
        }
    }
    return RIG_OK;
}

/* An [M, K] x [N, K] GEMM of `form`: a from the inputs (an [M, 2K] gate | up with SILU_MUL), b
 * from the weights, the norm weight after b; out at the outputs' start, read too when it
 * accumulates, and the operand the prologue writes after out (never into the inputs). */
static enum rig_status rig__gemm(struct rig__sweep *s, int64_t M, int64_t N, int64_t K,
                                 enum rig_dtype out, struct rig__form form)
{
    struct rig_op op = {.kind = RIG_OP_GEMM};
    struct rig_op_gemm *g = &op.u.gemm;
    int64_t width = form.prologue == RIG_GEMM_PROLOGUE_SILU_MUL ? 2 * K : K;
    size_t out_bytes = rig__aligned(M * N * (int64_t)rig_dtype_size(out));
    if ((size_t)(M * width * 2) > rig__buffer_bytes[RIG__IN] ||
        rig__aligned(N * K * 2) + (size_t)K * 2 > rig__buffer_bytes[RIG__W] ||
        out_bytes + (size_t)(M * K * 2) > rig__buffer_bytes[RIG__OUT])
        return rig__too_big("GEMM", M);
    uint8_t *weights = rig__base(s, RIG__W), *outputs = rig__base(s, RIG__OUT);
    g->a = rig_tensor_2d(rig__base(s, RIG__IN), RIG_DTYPE_BF16, M, width);
    g->b = rig_tensor_2d(weights, RIG_DTYPE_BF16, N, K);
    g->out = rig_tensor_2d(outputs, out, M, N);
    g->bias = rig_tensor_none();
    g->prologue = form.prologue;
    g->accumulate = form.accumulate;
    if (form.prologue != RIG_GEMM_PROLOGUE_NONE) {
        size_t after_out = rig__aligned(M * N * (int64_t)rig_dtype_size(out));
        g->operand = rig_tensor_2d(outputs + after_out, RIG_DTYPE_BF16, M, K);
    }
    if (form.prologue == RIG_GEMM_PROLOGUE_RMS_NORM) {
        g->norm_weight = rig_tensor_1d(weights + rig__aligned(N * K * 2), RIG_DTYPE_BF16, K);
        g->eps = 1e-6f;
    }
    return rig__point(s, &op);
}

static enum rig_status rig__gemms(struct rig__sweep *s, const struct rig__shape *x)
{
    const int64_t *rows = s->options->quick ? rig__rows_quick : rig__rows_full;
    size_t n = s->options->quick ? RIG_ARRAY_LEN(rig__rows_quick) : RIG_ARRAY_LEN(rig__rows_full);
    const int64_t linears[4][2] = {{(x->Hq + 2 * x->Hk) * x->D, x->H}, /* qkv */
                                   {x->H, x->Hq * x->D},               /* o */
                                   {2 * x->I, x->H},                   /* gate_up */
                                   {x->H, x->I}};                      /* down */
    /* each linear's fused form in a layer of a few rows (core/model/model.c): the norm before
     * qkv and gate_up, the residual add after o and down, silu_mul before down */
    const struct rig__form plain = {RIG_GEMM_PROLOGUE_NONE, false};
    const struct rig__form fused[4] = {{RIG_GEMM_PROLOGUE_RMS_NORM, false},
                                       {RIG_GEMM_PROLOGUE_NONE, true},
                                       {RIG_GEMM_PROLOGUE_RMS_NORM, false},
                                       {RIG_GEMM_PROLOGUE_SILU_MUL, true}};
    enum rig_status status = RIG_OK;
    for (size_t i = 0; i < n && status == RIG_OK; i++) {
        for (int32_t l = 0; l < 4 && status == RIG_OK; l++) {
            status = rig__gemm(s, rows[i], linears[l][0], linears[l][1], RIG_DTYPE_BF16, plain);
            if (rows[i] <= RIG__FUSED_ROWS_MAX && status == RIG_OK)
                status = rig__gemm(s, rows[i], linears[l][0], linears[l][1], RIG_DTYPE_BF16,
                                   fused[l]);
        }
        if (rows[i] <= 1024 && status == RIG_OK) /* the LM head: last rows only, f32 logits */
            status = rig__gemm(s, rows[i], x->V, x->H, RIG_DTYPE_F32, plain);
    }
    return status;
}

/* RIG_PROFILE_SLOTS, a measuring switch for where an attention point's positions live in
 * the KV cache (the table's slot numbers): unset or "contiguous", position i in slot i (the
 * op table's points); "stride:N", slot i N, as the decode tokens of N requests that step
 * together interleave (the engine's allocator hands each running request one slot a step);
 * "scatter", slot (i A) mod C for an odd A near C (sqrt 5 - 1) / 2, C the slots the cache
 * buffer holds at the point's Hk x D: positions far apart, as after a long online run's
 * churn. Both wrap modulo C, a power of two: scatter's odd multiplier makes a bijection, while
 * stride:N reuses slots past C / N positions (the largest points then reread some keys).
 * Read once. */
struct rig__slots {
    int64_t stride; /* 1: contiguous */
    bool scatter;
};

static struct rig__slots rig__slots_layout(void)
{
    static struct rig__slots layout;
    static bool read;
    if (read) return layout;
    read = true;
    layout.stride = 1;
    const char *value = getenv("RIG_PROFILE_SLOTS");
    if (value == NULL || strcmp(value, "contiguous") == 0) return layout;
    if (strcmp(value, "scatter") == 0) {
        layout.scatter = true;
    } else if (strncmp(value, "stride:", 7) == 0 && atol(value + 7) >= 1) {
        layout.stride = atol(value + 7);
    } else {
        fprintf(stderr, "rig profile: RIG_PROFILE_SLOTS=%s: expected contiguous, stride:N or "
                        "scatter; contiguous used\n", value);
        return layout;
    }
    fprintf(stderr, "rig profile: attention positions laid out as %s (RIG_PROFILE_SLOTS)\n",
            value);
    return layout;
}

/* Slots of the KV buffer at `x`'s Hk x D, K and V halves: the layouts' modulus. */
static int64_t rig__slots_held(const struct rig__shape *x)
{
    return (int64_t)RIG__SLOTS_MAX * 1024 / (x->Hk * x->D);
}

/* The slot of position `i` of a point at `x` under the sweep's layout (rig__slots_layout). */
static int32_t rig__slot(const struct rig__shape *x, int64_t i)
{
    struct rig__slots layout = rig__slots_layout();
    if (layout.stride == 1 && !layout.scatter) return (int32_t)i;
    int64_t held = rig__slots_held(x);
    RIG_ASSERT((held & (held - 1)) == 0);
    int64_t a = layout.scatter ? ((int64_t)((double)held * 0.6180339887) | 1) : layout.stride;
    return (int32_t)((uint64_t)i * (uint64_t)a & (uint64_t)(held - 1));
}

/* An attention point's K and V caches of S slots and its T query rows in and out (every slot
 * the buffer holds when the positions are not contiguous). */
static void rig__attention_tensors(struct rig__sweep *s, const struct rig__shape *x, int64_t S,
                                   int64_t T, struct rig_tensor *k, struct rig_tensor *v,
                                   struct rig_tensor *q, struct rig_tensor *out)
{
    struct rig__slots layout = rig__slots_layout();
    if (layout.stride != 1 || layout.scatter) S = rig__slots_held(x);
    uint8_t *cache = rig__base(s, RIG__KV);
    *k = rig_tensor_3d(cache, RIG_DTYPE_BF16, S, x->Hk, x->D);
    *v = rig_tensor_3d(cache + S * x->Hk * x->D * 2, RIG_DTYPE_BF16, S, x->Hk, x->D);
    *q = rig_tensor_3d(rig__base(s, RIG__IN), RIG_DTYPE_BF16, T, x->Hq, x->D);
    *out = rig_tensor_3d(rig__base(s, RIG__OUT), RIG_DTYPE_BF16, T, x->Hq, x->D);
}

/* The decode point `a` (its metadata staged from table_h and len_h, s->meta_used where they
 * end) again as attention_decode_store, the model's decode op: q, k, v views of one qkv
 * buffer at the inputs' end (as rig__rowwise keeps the q/k norm + RoPE's rows past what other
 * points read), each request's newest position its RoPE position and its slot the store's.
 * Its key is the attention's (hal/optable.c), so the simulator pairs the two points
 * (rig_sim_optable_store_extra). */
static enum rig_status rig__attention_store(struct rig__sweep *s, const struct rig__shape *x,
                                            const struct rig_op_attention_decode *a,
                                            const int32_t *table_h, const int32_t *len_h)
{
    enum rig_dtype bf = RIG_DTYPE_BF16;
    int64_t R = a->q.shape[0], W = (x->Hq + 2 * x->Hk) * x->D, D = x->D;
    size_t qkv_bytes = rig__aligned(R * W * 2);
    if (qkv_bytes > rig__buffer_bytes[RIG__IN]) return rig__too_big("decode + store", R);
    uint8_t *qkv = rig__base(s, RIG__IN) + rig__buffer_bytes[RIG__IN] - qkv_bytes;
    int32_t *pos_h, *loc_h;
    struct rig_tensor pos = rig__meta(s, R, RIG_DTYPE_I32, &pos_h);
    struct rig_tensor loc = rig__meta(s, R, RIG_DTYPE_I32, &loc_h);
    int64_t cols = a->page_table.shape[1];
    for (int64_t r = 0; r < R; r++) {
        pos_h[r] = len_h[r] - 1;
        loc_h[r] = table_h[r * cols + len_h[r] - 1];
    }
    struct rig_op op = {.kind = RIG_OP_ATTENTION_DECODE_STORE};
    struct rig_op_qk_norm_rope_store *p = &op.u.attention_decode_store.store;
    p->q = rig_tensor_3d(qkv, bf, R, x->Hq, D);
    p->k = rig_tensor_3d(qkv + x->Hq * D * 2, bf, R, x->Hk, D);
    p->v = rig_tensor_3d(qkv + (x->Hq + x->Hk) * D * 2, bf, R, x->Hk, D);
    p->q.stride[0] = p->k.stride[0] = p->v.stride[0] = W;
    p->k_cache = a->k_cache;
    p->v_cache = a->v_cache;
    struct rig_tensor norm =
        x->c->qk_norm ? rig_tensor_1d(rig__base(s, RIG__W), bf, D) : rig_tensor_none();
    p->q_norm = p->k_norm = norm;
    p->positions = pos;
    p->out_loc = loc;
    p->eps = 1e-6f;
    p->params = x->c->rope;
    op.u.attention_decode_store.attend = *a;
    op.u.attention_decode_store.attend.q = p->q;
    return rig__point(s, &op);
}

/* RIG_PROFILE_RAGGED=descending, a measuring switch: the ragged decode points' rows longest
 * first, as the engine orders a batch's decode rows (docs/engine.md, "Decode order"); by
 * default shortest first. The kernel's blocks are dispatched in row order, so the order moves
 * a ragged batch's tail: longest first measured 5-9 % faster at 72-256 rows of Qwen3-0.6B's
 * heads, yet the table swept that way priced the engine's calibration run 6 % short where the
 * shortest-first table priced it within 1.4 % (docs/simulator.md, thirteenth session). */
static bool rig__ragged_descending(void)
{
    const char *value = getenv("RIG_PROFILE_RAGGED");
    return value != NULL && strcmp(value, "descending") == 0;
}

/* Attention over R requests, each with q query rows and kv positions (slots r * kv + p);
 * `ragged` (decode): request r has only kv (r + 1) / R of them, a batch of mixed lengths
 * (mean about kv / 2, max kv) as online batches are (rig__ragged_descending: reversed). */
static enum rig_status rig__attention(struct rig__sweep *s, const struct rig__shape *x, int64_t R,
                                      int64_t q, int64_t kv, bool decode, bool ragged)
{
    int64_t S = R * kv, T = R * q;
    struct rig_tensor k, v, qt, out;
    rig__attention_tensors(s, x, S, T, &k, &v, &qt, &out);
    int32_t *table_h, *idx_h, *len_h, *cu_h;
    struct rig_tensor table = rig__meta(s, S, RIG_DTYPE_I32, &table_h);
    table = rig_tensor_2d(table.data, RIG_DTYPE_I32, R, kv);
    struct rig_tensor table_idx = rig__meta(s, R, RIG_DTYPE_I32, &idx_h);
    struct rig_tensor kv_len = rig__meta(s, R, RIG_DTYPE_I32, &len_h);
    struct rig_tensor cu_q = rig__meta(s, R + 1, RIG_DTYPE_I32, &cu_h);
    for (int64_t i = 0; i < S; i++) table_h[i] = rig__slot(x, i);
    bool descending = rig__ragged_descending();
    for (int64_t r = 0; r <= R; r++) {
        int64_t share = descending ? R - r : r + 1;
        int64_t len = ragged ? (kv * share + R - 1) / R : kv;
        if (r < R) idx_h[r] = (int32_t)r, len_h[r] = (int32_t)len;
        cu_h[r] = (int32_t)(r * q);
    }
    float scale = 1.0f / sqrtf((float)x->D);
    struct rig_op op = {.kind = decode ? RIG_OP_ATTENTION_DECODE : RIG_OP_ATTENTION_PREFILL};
    if (decode)
        op.u.attention_decode =
            (struct rig_op_attention_decode){out, qt, k, v, table, table_idx, kv_len, scale};
    else
        op.u.attention_prefill = (struct rig_op_attention_prefill){
            out, qt, k, v, table, table_idx, cu_q, kv_len, scale};
    size_t meta_used = s->meta_used;
    enum rig_status status = rig__point(s, &op);
    if (status != RIG_OK || !decode) return status;
    s->meta_used = meta_used; /* the same metadata, staged again with the store's */
    return rig__attention_store(s, x, &op.u.attention_decode, table_h, len_h);
}

/* Decode attention over R requests in `groups` groups (request r in group r % groups): each
 * request reads its group's `prefix` positions, the same slots for the whole group, then
 * `own` positions of its own: the batch of a radix cache serving a shared system prompt
 * (scenarios/shared-prefix.yaml). The key's mean KV length counts a shared position once
 * (hal/optable.c, rig__decode_distinct): (groups prefix + R own) / R. */
static enum rig_status rig__attention_shared(struct rig__sweep *s, const struct rig__shape *x,
                                             int64_t R, int64_t groups, int64_t prefix,
                                             int64_t own)
{
    int64_t S = groups * prefix + R * own, L = prefix + own;
    RIG_ASSERT(groups >= 1 && groups <= R && S <= RIG__SLOTS_MAX);
    struct rig_tensor k, v, qt, out;
    rig__attention_tensors(s, x, S, R, &k, &v, &qt, &out);
    int32_t *table_h, *idx_h, *len_h;
    struct rig_tensor table = rig__meta(s, R * L, RIG_DTYPE_I32, &table_h);
    table = rig_tensor_2d(table.data, RIG_DTYPE_I32, R, L);
    struct rig_tensor table_idx = rig__meta(s, R, RIG_DTYPE_I32, &idx_h);
    struct rig_tensor kv_len = rig__meta(s, R, RIG_DTYPE_I32, &len_h);
    for (int64_t r = 0; r < R; r++) {
        int32_t *row = table_h + r * L;
        for (int64_t p = 0; p < prefix; p++) row[p] = rig__slot(x, (r % groups) * prefix + p);
        for (int64_t p = 0; p < own; p++)
            row[prefix + p] = rig__slot(x, groups * prefix + r * own + p);
        idx_h[r] = (int32_t)r;
        len_h[r] = (int32_t)L;
    }
    float scale = 1.0f / sqrtf((float)x->D);
    struct rig_op op = {.kind = RIG_OP_ATTENTION_DECODE};
    op.u.attention_decode =
        (struct rig_op_attention_decode){out, qt, k, v, table, table_idx, kv_len, scale};
    return rig__point(s, &op);
}

/* The shared-prefix decode points of one head shape: batches 2 to 64, one group, 4, 8 or 16
 * (fewer than the batch), prefixes of 1024 and 4096 positions, 128 or 512 of each request's
 * own (quick: one). 8 and 16 groups give the batches whose prefix a few requests share (log2
 * of positions read per distinct position 0.5-1: a radix cache serving several system
 * prompts at once, scenarios/shared-prefix.yaml's 8), which one group and four (1.6 and up)
 * left to a blend with unshared points (docs/simulator.md). */
static enum rig_status rig__attentions_shared(struct rig__sweep *s, const struct rig__shape *x)
{
    static const int64_t batches[] = {2, 4, 8, 16, 32, 64}, groups[] = {1, 4, 8, 16};
    static const int64_t prefixes[] = {1024, 4096}, owns[] = {128, 512};
    bool quick = s->options->quick;
    enum rig_status status = RIG_OK;
    for (size_t b = quick ? 2 : 0; b < RIG_ARRAY_LEN(batches) && status == RIG_OK; b += quick ? 8 : 1)
        for (size_t g = 0; g < RIG_ARRAY_LEN(groups) && status == RIG_OK; g++)
            for (size_t p = 0; p < RIG_ARRAY_LEN(prefixes) && status == RIG_OK; p += quick ? 2 : 1)
                for (size_t o = 0; o < RIG_ARRAY_LEN(owns) && status == RIG_OK; o += quick ? 2 : 1)
                    if (groups[g] < batches[b])
                        status = rig__attention_shared(s, x, batches[b], groups[g], prefixes[p],
                                                       owns[o]);
    return status;
}

/* A measuring switch's list "N1,N2,..." from `name` (at most `capacity` values, each
 * 1..`most`), for the decode points' grid: RIG_PROFILE_CONTEXTS (KV lengths) and
 * RIG_PROFILE_BATCHES (requests, e.g. every CUDA-graph size). *count 0 when unset or
 * malformed (said once: the grid's values are used). */
static void rig__list_override(const char *name, int64_t most, int64_t *values, size_t capacity,
                               size_t *count)
{
    *count = 0;
    const char *value = getenv(name);
    if (value == NULL) return;
    const char *at = value;
    while (*at != '\0' && *count < capacity) {
        char *end = NULL;
        long long n = strtoll(at, &end, 10);
        if (end == at || n < 1 || n > most || (*end != ',' && *end != '\0')) {
            fprintf(stderr,
                    "rig profile: %s=%s: expected at most %zu values 1..%lld separated by "
                    "commas; the grid's used\n",
                    name, value, capacity, (long long)most);
            *count = 0;
            return;
        }
        values[(*count)++] = n;
        at = *end == ',' ? end + 1 : end;
    }
}

static enum rig_status rig__attentions(struct rig__sweep *s, const struct rig__shape *x)
{
    /* x 1.5 between the powers of two: the decode kernel's split and its waves of blocks
     * (requests x KV heads) change between them, and so do its splits' lengths with the
     * context (a split takes whole steps of keys: cuda/ops/attention_decode.cu); 40 and 56
     * too, the engine's decode graphs between 32 and 64 rows (core/engine/engine.c,
     * rig__graph_sizes: 1, 2, 4, 8, then every 8), whose waves the neighbours do not tell */
    static const int64_t grid_batches[] = {1,  2,  3,  4,  6,  8,   12,  16,  24,
                                           32, 40, 48, 56, 64, 96, 128, 192, 256};
    static const int64_t grid_contexts[] = {128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072,
                                            4096};
    int64_t contexts[32], batches[64];
    size_t context_count, batch_count;
    rig__list_override("RIG_PROFILE_CONTEXTS", RIG__SLOTS_MAX, contexts, RIG_ARRAY_LEN(contexts),
                       &context_count);
    if (context_count == 0) {
        context_count = RIG_ARRAY_LEN(grid_contexts);
        memcpy(contexts, grid_contexts, sizeof grid_contexts);
    }
    rig__list_override("RIG_PROFILE_BATCHES", 1024, batches, RIG_ARRAY_LEN(batches),
                       &batch_count);
    if (batch_count == 0) {
        batch_count = RIG_ARRAY_LEN(grid_batches);
        memcpy(batches, grid_batches, sizeof grid_batches);
    }
    static const int64_t requests[] = {1, 4, 16}, prefixes[] = {0, 256, 1024, 8192};
    static const int64_t tokens[] = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
    bool quick = s->options->quick;
    enum rig_status status = RIG_OK;
    /* Decode at the shape's head dim and, for head dim 128, also at 64 (the same heads): a
     * head-dim axis, since the tensor-core decode kernel's cost per 128-key tile does not
     * shrink with D (docs/simulator.md), so D 64 cannot be scaled from D 128 points by bytes. */
    struct rig__shape half = *x;
    half.D = 64;
    const struct rig__shape *dims[2] = {x, x->D == 128 && !quick ? &half : NULL};
    for (int32_t d = 0; d < 2 && dims[d] != NULL; d++)
        for (int32_t ragged = 0; ragged <= (quick ? 0 : 1); ragged++)
            for (size_t b = 0; b < batch_count && status == RIG_OK; b += quick ? 4 : 1)
                for (size_t c = 0; c < context_count && status == RIG_OK;
                     c += quick ? 3 : 1)
                    if (batches[b] * contexts[c] <= RIG__SLOTS_MAX &&
                        (!ragged || batches[b] > 1)) /* a ragged batch has two rows or more */
                        status =
                            rig__attention(s, dims[d], batches[b], 1, contexts[c], true, ragged);
    for (int32_t d = 0; d < 2 && dims[d] != NULL && status == RIG_OK; d++)
        status = rig__attentions_shared(s, dims[d]);
    for (size_t r = 0; r < RIG_ARRAY_LEN(requests) && status == RIG_OK; r++)
        for (size_t t = 0; t < RIG_ARRAY_LEN(tokens) && status == RIG_OK; t += quick ? 4 : 1)
            for (size_t p = 0; p < RIG_ARRAY_LEN(prefixes) && status == RIG_OK; p += quick ? 2 : 1) {
                int64_t q = tokens[t] / requests[r];
                if (q < 4 || (quick && tokens[t] > 1024)) continue;
                status = rig__attention(s, x, requests[r], q, q + prefixes[p], false, false);
            }
    return status;
}

/* `n` bf16 values of random sign, exponent (2^-6 .. 2^0) and mantissa from the xorshift
 * `state` (advanced): the sweep's operands (rig__fill_random, rig__refill). */
static void rig__random_bf16(uint64_t *state, uint16_t *values, size_t n)
{
    uint64_t x = *state;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint16_t sign = (uint16_t)((x >> 20) & 1u), exponent = (uint16_t)(121 + x % 7);
        values[i] = (uint16_t)(sign << 15 | exponent << 7 | ((x >> 32) & 0x7fu));
    }
    *state = x;
}

/* RIG_PROFILE_REFILL=1, a measuring switch: the input bytes a silu_mul point reads are
 * filled afresh (rig__fill_random's values) before it, to tell whether what earlier points
 * left there (the q/k norm + RoPE's in-place rows) changes its time. */
static bool rig__refill_wanted(void)
{
    const char *value = getenv("RIG_PROFILE_REFILL");
    return value != NULL && strcmp(value, "1") == 0;
}

/* Uploads `bytes` (at most the input buffer's) of fresh random bf16 values to the input
 * buffer's start, from a host buffer of its own (s->host stages the point's metadata). */
static enum rig_status rig__refill(struct rig__sweep *s, size_t bytes)
{
    if (bytes > rig__buffer_bytes[RIG__IN]) bytes = rig__buffer_bytes[RIG__IN];
    uint16_t *values = malloc(bytes);
    if (values == NULL) return RIG_E_NO_MEMORY;
    uint64_t state = 0x2545f4914f6cdd1dull;
    rig__random_bf16(&state, values, bytes / 2);
    enum rig_status status = rig_hal_buffer_upload(s->dev.stream, s->buffers[RIG__IN], 0, values,
                                                   bytes);
    if (status == RIG_OK) status = rig_hal_stream_synchronize(s->dev.stream);
    free(values);
    return status;
}

#define RIG__OP(kind_, member, ...)                                                                \
    ((struct rig_op){.kind = RIG_OP_##kind_, .u.member = {__VA_ARGS__}})

/* The per-token ops at T rows of one shape. */
static enum rig_status rig__rowwise(struct rig__sweep *s, const struct rig__shape *x, int64_t T)
{
    enum rig_dtype bf = RIG_DTYPE_BF16, i32 = RIG_DTYPE_I32;
    uint8_t *in = rig__base(s, RIG__IN), *out = rig__base(s, RIG__OUT), *w = rig__base(s, RIG__W);
    int64_t H = x->H, W = (x->Hq + 2 * x->Hk) * x->D, D = x->D;
    /* q, k and v (normalised and rotated in place) at the inputs' end, past every row the
     * other per-token ops read: silu_mul's points ran 2-4 x slower than in a step while
     * they read rows this op had rewritten (call 9 of docs/data/round-h200-ee0d72d) */
    size_t qkv_bytes = rig__aligned(T * W * 2);
    if (qkv_bytes > rig__buffer_bytes[RIG__IN] ||
        (size_t)(T * 4 * x->I) > rig__buffer_bytes[RIG__IN] - qkv_bytes ||
        (size_t)(T * 2 * H) > rig__buffer_bytes[RIG__IN] - qkv_bytes ||
        (size_t)(T * x->I * 2) > rig__buffer_bytes[RIG__OUT])
        return rig__too_big("per-token ops", T);
    uint8_t *qkv = in + rig__buffer_bytes[RIG__IN] - qkv_bytes;
    struct rig_tensor weight = rig_tensor_1d(w, bf, H);
    struct rig_tensor xin = rig_tensor_2d(in, bf, T, H), xout = rig_tensor_2d(out, bf, T, H);
    struct rig_tensor res = rig_tensor_2d(out + T * H * 2, bf, T, H); /* after xout */
    struct rig_op ops[6];
    int32_t n = 0;
    ops[n++] = RIG__OP(RMS_NORM, rms_norm, xout, xin, weight, 1e-6f);
    ops[n++] = RIG__OP(ADD_RMS_NORM, add_rms_norm, xout, res, xin, weight, 1e-6f);
    ops[n++] = RIG__OP(SILU_MUL, silu_mul, rig_tensor_2d(out, bf, T, x->I),
                       rig_tensor_2d(in, bf, T, 2 * x->I));
    int32_t *ids_h, *pos_h, *loc_h;
    struct rig_tensor ids = rig__meta(s, T, i32, &ids_h), pos = rig__meta(s, T, i32, &pos_h);
    struct rig_tensor loc = rig__meta(s, T, i32, &loc_h);
    for (int64_t t = 0; t < T; t++)
        ids_h[t] = (int32_t)((t * 7919) % x->V), pos_h[t] = (int32_t)t, loc_h[t] = (int32_t)t;
    ops[n++] = RIG__OP(EMBEDDING, embedding, xout, rig_tensor_2d(w, bf, x->V, H), ids, 0);
    ops[n++] = RIG__OP(GATHER_ROWS, gather_rows, xout, xin, pos);
    struct rig_tensor q = rig_tensor_3d(qkv, bf, T, x->Hq, D);
    struct rig_tensor k = rig_tensor_3d(qkv + x->Hq * D * 2, bf, T, x->Hk, D);
    struct rig_tensor v = rig_tensor_3d(qkv + (x->Hq + x->Hk) * D * 2, bf, T, x->Hk, D);
    q.stride[0] = k.stride[0] = v.stride[0] = W;
    uint8_t *cache = rig__base(s, RIG__KV);
    struct rig_tensor kc = rig_tensor_3d(cache, bf, T, x->Hk, D);
    struct rig_tensor vc = rig_tensor_3d(cache + T * x->Hk * D * 2, bf, T, x->Hk, D);
    struct rig_tensor norm = x->c->qk_norm ? rig_tensor_1d(w, bf, D) : rig_tensor_none();
    ops[n++] = RIG__OP(QK_NORM_ROPE_STORE, qk_norm_rope_store, q, k, v, kc, vc, norm, norm, pos,
                       loc, 1e-6f, x->c->rope);
    enum rig_status status = RIG_OK;
    for (int32_t i = 0; i < n && status == RIG_OK; i++) {
        if (i > 0) s->meta_used = 3 * ((size_t)(T + 63) / 64 * 64); /* re-stage the same words */
        if (ops[i].kind == RIG_OP_SILU_MUL && rig__refill_wanted())
            status = rig__refill(s, (size_t)T * (size_t)(4 * x->I));
        if (status == RIG_OK) status = rig__point(s, &ops[i]);
    }
    s->meta_used = 0;
    return status;
}

/* Sampling R rows of the vocabulary, every row of one kind (hal/optable.h): whole (temperature
 * 1, no cut-off: what the sweep timed alone before the kinds were told apart), greedy
 * (temperature 0: the first maximum) and cut (temperature 0.8, top-p 0.9: the cut-off search,
 * as the quickstart's sampled request asks). */
static const struct {
    float temperature, top_p;
} rig__sample_kinds[RIG_SAMPLE_KINDS] = {
    [RIG_SAMPLE_WHOLE] = {1.0f, 1.0f},
    [RIG_SAMPLE_GREEDY] = {0.0f, 1.0f},
    [RIG_SAMPLE_CUT] = {0.8f, 0.9f},
};

static enum rig_status rig__sample(struct rig__sweep *s, const struct rig__shape *x, int64_t R,
                                   int32_t kind)
{
    int32_t *tok_h, *temp_h, *topk_h, *topp_h, *seed_h, *pos_h;
    struct rig_tensor tokens = rig__meta(s, R, RIG_DTYPE_I32, &tok_h);
    struct rig_tensor temp = rig__meta(s, R, RIG_DTYPE_F32, &temp_h);
    struct rig_tensor top_k = rig__meta(s, R, RIG_DTYPE_I32, &topk_h);
    struct rig_tensor top_p = rig__meta(s, R, RIG_DTYPE_F32, &topp_h);
    struct rig_tensor seed = rig__meta(s, R, RIG_DTYPE_I64, &seed_h);
    struct rig_tensor pos = rig__meta(s, R, RIG_DTYPE_I32, &pos_h);
    for (int64_t r = 0; r < R; r++) {
        memcpy(&temp_h[r], &rig__sample_kinds[kind].temperature, 4);
        memcpy(&topp_h[r], &rig__sample_kinds[kind].top_p, 4);
        topk_h[r] = -1, pos_h[r] = 0, tok_h[r] = 0;
        seed_h[2 * r] = (int32_t)r + 1, seed_h[2 * r + 1] = 0;
    }
    struct rig_tensor logits = rig_tensor_2d(rig__base(s, RIG__LOGITS), RIG_DTYPE_F32, R, x->V);
    struct rig_op op =
        RIG__OP(SAMPLE, sample, tokens, logits, temp, top_k, top_p, seed, pos, rig_tensor_none(),
                rig_tensor_none());
    return rig__point(s, &op);
}

static enum rig_status rig__elementwise(struct rig__sweep *s, const struct rig__shape *x)
{
    const int64_t *rows = s->options->quick ? rig__rows_quick : rig__rows_full;
    size_t n = s->options->quick ? RIG_ARRAY_LEN(rig__rows_quick) : RIG_ARRAY_LEN(rig__rows_full);
    enum rig_status status = RIG_OK;
    for (size_t i = 0; i < n && status == RIG_OK; i++) {
        status = rig__rowwise(s, x, rows[i]);
        for (int32_t k = 0; k < RIG_SAMPLE_KINDS && status == RIG_OK && rows[i] <= 1024; k++)
            status = rig__sample(s, x, rows[i], k);
    }
    return status;
}

static enum rig_status rig__family(struct rig__sweep *s, const struct rig__shape *x, int32_t f)
{
    static const char *const names[3] = {"gemm", "attention", "elementwise"};
    s->family = names[f];
    if (s->options->progress != NULL)
        s->options->progress(s->options->user, s->family, s->count, 0);
    if (f == 0) return rig__gemms(s, x);
    if (f == 1) return rig__attentions(s, x);
    return rig__elementwise(s, x);
}

/* The host calls' times (hal/optable.h, rig_optable_host): each call issued RIG__HOST_ISSUES
 * times on the sweep's stream, the wall clock around the call alone (the virtual clock on the
 * simulator, which then gives back its profile's keys), the median. The copies move
 * RIG__HOST_BYTES between the metadata buffer and pinned host memory, as the engine's staged
 * step inputs and sampled tokens do; the graph is RIG_OPTABLE_HOST_GRAPH_NODES small index
 * gathers, the kernel launch one of them issued eagerly (an op no table point covers). */
#define RIG__HOST_ISSUES 256 /* enough that a mean holds the calls' tails */
#define RIG__HOST_BYTES  4096
typedef enum rig_status (*rig__host_fn)(struct rig__sweep *s, int32_t i);

static struct rig_op rig__small_gather(struct rig__sweep *s)
{
    uint8_t *meta = rig__base(s, RIG__META);
    int64_t n = 64; /* out, src and idx: the first 3 x 64 words, indices 0 (staged zeros) */
    return RIG__OP(INDEX_GATHER, index_gather, rig_tensor_1d(meta, RIG_DTYPE_I32, n),
                   rig_tensor_1d(meta + 4 * n, RIG_DTYPE_I32, n),
                   rig_tensor_1d(meta + 8 * n, RIG_DTYPE_I32, n));
}

static enum rig_status rig__host_upload(struct rig__sweep *s, int32_t i)
{
    return rig_hal_buffer_upload(s->dev.stream, s->buffers[RIG__META],
                                 (size_t)(i % 8 + 1) * RIG__HOST_BYTES, s->pinned, RIG__HOST_BYTES);
}

static enum rig_status rig__host_download(struct rig__sweep *s, int32_t i)
{
    return rig_hal_buffer_download(s->dev.stream, s->buffers[RIG__META],
                                   (size_t)(i % 8 + 1) * RIG__HOST_BYTES, s->pinned,
                                   RIG__HOST_BYTES);
}

static enum rig_status rig__host_copy(struct rig__sweep *s, int32_t i)
{
    return rig_hal_buffer_copy(s->dev.stream, s->buffers[RIG__META],
                               (size_t)(i % 8 + 10) * RIG__HOST_BYTES, s->buffers[RIG__META],
                               (size_t)(i % 8 + 1) * RIG__HOST_BYTES, RIG__HOST_BYTES);
}

static enum rig_status rig__host_record(struct rig__sweep *s, int32_t i)
{
    return rig_hal_event_record(s->dev.start[i % s->dev.events], s->dev.stream);
}

static enum rig_status rig__host_wait(struct rig__sweep *s, int32_t i)
{
    return rig_hal_stream_wait_event(s->dev.stream, s->dev.start[i % s->dev.events]);
}

static enum rig_status rig__host_graph(struct rig__sweep *s, int32_t i)
{
    (void)i;
    return rig_hal_graph_launch(s->graph, s->dev.stream);
}

static enum rig_status rig__host_kernel(struct rig__sweep *s, int32_t i)
{
    (void)i;
    struct rig_op op = rig__small_gather(s);
    return rig_hal_op(s->dev.stream, &op);
}

/* The median and mean host time of one call of `fn`, issued after a synchronised stream. */
static enum rig_status rig__host_time(struct rig__sweep *s, rig__host_fn fn, double *ns,
                                      double *mean_ns)
{
    double host[RIG__HOST_ISSUES];
    enum rig_status status = rig_hal_stream_synchronize(s->dev.stream);
    for (int32_t i = 0; i < RIG__HOST_ISSUES && status == RIG_OK; i++) {
        if (i % 16 == 0) status = rig_hal_stream_synchronize(s->dev.stream); /* a short queue */
        int64_t issued = rig_hal_now_ns(s->dev.device);
        if (status == RIG_OK) status = fn(s, i);
        host[i] = (double)(rig_hal_now_ns(s->dev.device) - issued);
    }
    if (status == RIG_OK) status = rig_hal_stream_synchronize(s->dev.stream);
    if (status != RIG_OK) return status;
    struct rig_metric_stats stats;
    rig_metrics_stats(host, RIG__HOST_ISSUES, &stats);
    *ns = stats.median > 0 ? stats.median : 0;
    *mean_ns = stats.mean > 0 ? stats.mean : 0;
    return RIG_OK;
}

static enum rig_status rig__host_calls(struct rig__sweep *s, struct rig_optable_host *host)
{
    static const rig__host_fn calls[RIG_OPTABLE_HOST_CALLS] = {
        [RIG_OPTABLE_HOST_UPLOAD] = rig__host_upload,
        [RIG_OPTABLE_HOST_DOWNLOAD] = rig__host_download,
        [RIG_OPTABLE_HOST_DEVICE_COPY] = rig__host_copy,
        [RIG_OPTABLE_HOST_EVENT_RECORD] = rig__host_record,
        [RIG_OPTABLE_HOST_STREAM_WAIT] = rig__host_wait,
        [RIG_OPTABLE_HOST_GRAPH_LAUNCH] = rig__host_graph,
        [RIG_OPTABLE_HOST_KERNEL_LAUNCH] = rig__host_kernel,
    };
    memset(host, 0, sizeof *host);
    enum rig_status status =
        rig_hal_host_alloc(s->dev.device, RIG__HOST_BYTES, &s->pinned);
    if (status == RIG_OK) status = rig_hal_buffer_fill(s->dev.stream, s->buffers[RIG__META], 0,
                                                       0, RIG__HOST_BYTES / 4 * 20);
    if (status == RIG_OK) status = rig_hal_graph_capture_begin(s->dev.stream);
    bool graph = status == RIG_OK;
    if (status == RIG_E_UNSUPPORTED) status = RIG_OK; /* no graphs: no graph launch time */
    for (int32_t i = 0; graph && i < RIG_OPTABLE_HOST_GRAPH_NODES && status == RIG_OK; i++)
        status = rig__host_kernel(s, i);
    if (graph) {
        enum rig_status end = rig_hal_graph_capture_end(s->dev.stream, &s->graph);
        if (status == RIG_OK) status = end;
    }
    for (int32_t k = 0; k < RIG_OPTABLE_HOST_CALLS && status == RIG_OK; k++) {
        if (k == RIG_OPTABLE_HOST_GRAPH_LAUNCH && s->graph == NULL) continue;
        status = rig__host_time(s, calls[k], &host->ns[k], &host->mean_ns[k]);
    }
    return status;
}

/* Every family for every model and TP degree (points already swept are skipped). */
static enum rig_status rig__sweep_all(struct rig__sweep *s, char *error, size_t error_len)
{
    const struct rig_profile_options *o = s->options;
    enum rig_status status = RIG_OK;
    /* TP 1 of every model first: a sweep cut short by its time limit keeps the most used */
    for (int32_t tp = 1; tp <= (o->quick ? 1 : o->tp_max) && status == RIG_OK; tp *= 2) {
        for (int32_t m = 0; m < o->model_count && status == RIG_OK && !s->out_of_time; m++) {
            struct rig_model_config c;
            if (rig_model_config_preset(o->models[m], &c) != RIG_OK) {
                snprintf(error, error_len, "unknown model preset '%s'", o->models[m]);
                return RIG_E_NOT_FOUND;
            }
            if (c.num_heads % tp != 0 || c.intermediate_size % tp != 0) continue;
            struct rig__shape x = {&c, c.hidden_size, c.intermediate_size / tp,
                                   c.num_heads / tp, rig_model_kv_heads_per_rank(&c, tp),
                                   c.head_dim, (c.vocab_size + tp - 1) / tp};
            for (int32_t f = 0; f < 3 && status == RIG_OK; f++) status = rig__family(s, &x, f);
        }
    }
    if (status < 0 && error[0] == '\0')
        rig__bench_fail(&s->dev, status, "profile sweep", error, error_len);
    return status;
}

/* Fills buffer `which` with finite bf16 values of random sign, exponent (2^-6 .. 2^0) and
 * mantissa, staged through s->host: GEMMs on constant operands run faster than on real
 * weights (less switching in the tensor cores; 13 % seen on an H200), and the prefill rows
 * the table predicts run on the engine's random weights. Deterministic (xorshift). */
static enum rig_status rig__fill_random(struct rig__sweep *s, int32_t which)
{
    uint64_t state = 0x9e3779b97f4a7c15ull + (uint64_t)which;
    uint16_t *values = (uint16_t *)s->host;
    size_t chunk = RIG__META_WORDS * 4, total = rig__buffer_bytes[which];
    rig__random_bf16(&state, values, chunk / 2);
    enum rig_status status = RIG_OK;
    for (size_t at = 0; at < total && status == RIG_OK; at += chunk) {
        size_t bytes = total - at < chunk ? total - at : chunk;
        status = rig_hal_buffer_upload(s->dev.stream, s->buffers[which], at, values, bytes);
    }
    return status;
}

/* Fills the logits buffer with rows of a language model's shape: the logit of the token of
 * rank k (a random order of a row of RIG__LOGITS_ROW) is 20 - 1.5 ln(k), so the softmax falls
 * as k^-1.5 (at temperature 0.8, top-p 0.9 keeps about 8 tokens), rows one after another.
 * Greedy and whole-vocabulary rows cost the same whatever the values; a cut-off row's search
 * depends on how many tokens survive it, and random bits (almost all of a vocabulary) are no
 * model's. Deterministic (xorshift). */
#define RIG__LOGITS_ROW 151936
static enum rig_status rig__fill_logits(struct rig__sweep *s)
{
    size_t chunk_floats = RIG__META_WORDS / RIG__LOGITS_ROW * RIG__LOGITS_ROW;
    float *row = (float *)s->host;
    uint64_t state = 0x2545f4914f6cdd1dull;
    for (int64_t k = 0; k < RIG__LOGITS_ROW; k++)
        row[k] = 20.0f - 1.5f * logf((float)(k + 1));
    for (int64_t k = RIG__LOGITS_ROW - 1; k > 0; k--) { /* Fisher-Yates: ranks in random order */
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        int64_t j = (int64_t)(state % (uint64_t)(k + 1));
        float t = row[k];
        row[k] = row[j], row[j] = t;
    }
    for (size_t i = RIG__LOGITS_ROW; i < chunk_floats; i++) row[i] = row[i - RIG__LOGITS_ROW];
    size_t chunk = chunk_floats * sizeof(float), total = rig__buffer_bytes[RIG__LOGITS];
    enum rig_status status = RIG_OK;
    for (size_t at = 0; at < total && status == RIG_OK; at += chunk) {
        size_t bytes = total - at < chunk ? total - at : chunk;
        status = rig_hal_buffer_upload(s->dev.stream, s->buffers[RIG__LOGITS], at, row, bytes);
    }
    return status;
}

static enum rig_status rig__setup(struct rig__sweep *s, char *error, size_t error_len)
{
    struct rig_bench_options bench;
    rig_bench_options_default(&bench);
    bench.backend = s->options->backend;
    bench.profile = s->options->profile;
    bench.repeats = s->options->repeats;
    enum rig_status status = rig__bench_open(&bench, &s->dev, error, error_len);
    if (status < 0) return status;
    static const enum rig_memory_use uses[RIG__BUFFERS] = {
        RIG_MEMORY_WEIGHTS,  RIG_MEMORY_ACTIVATIONS, RIG_MEMORY_ACTIVATIONS, RIG_MEMORY_KV,
        RIG_MEMORY_METADATA, RIG_MEMORY_ACTIVATIONS, RIG_MEMORY_ACTIVATIONS};
    s->host = calloc(RIG__META_WORDS, sizeof *s->host);
    s->points = calloc(RIG__POINTS_MAX, sizeof *s->points);
    if (s->host == NULL || s->points == NULL) status = RIG_E_NO_MEMORY;
    for (int32_t i = 0; i < RIG__BUFFERS && status == RIG_OK; i++) {
        status = rig_hal_buffer_alloc(s->dev.device, rig__buffer_bytes[i], uses[i],
                                      &s->buffers[i]);
        bool operands = i != RIG__META && i != RIG__FLUSH && i != RIG__LOGITS;
        if (status == RIG_OK && !s->dev.timing_only && operands)
            status = rig__fill_random(s, i);
        if (status == RIG_OK && !s->dev.timing_only && i == RIG__LOGITS)
            status = rig__fill_logits(s);
    }
    if (status == RIG_OK) status = rig_hal_stream_synchronize(s->dev.stream);
    if (status < 0)
        rig__bench_fail(&s->dev, status, "allocating the sweep's buffers", error, error_len);
    return status;
}

static void rig__teardown(struct rig__sweep *s)
{
    if (s->graph != NULL) rig_hal_graph_destroy(s->graph);
    if (s->pinned != NULL) rig_hal_host_free(s->dev.device, s->pinned);
    for (int32_t i = 0; i < RIG__BUFFERS; i++) rig_hal_buffer_free(s->buffers[i]);
    if (s->dev.device != NULL) rig__bench_close(&s->dev);
    free(s->host);
    s->graph = NULL, s->pinned = NULL, s->dev.device = NULL, s->host = NULL;
    memset(s->buffers, 0, sizeof s->buffers);
}

void rig_profile_options_default(struct rig_profile_options *options)
{
    RIG_ASSERT(options != NULL);
    memset(options, 0, sizeof *options);
    options->backend = "sim";
    options->models[0] = "qwen3-0.6b";
    options->models[1] = "qwen3-8b";
    options->model_count = 2;
    options->tp_max = 8;
    options->repeats = 7;
    options->host_fit = true;
}

/* The calibration stage (host_fit.h): the engine's host time on this machine, fitted, into
 * host->model (least squares) and host->model_median. */
static enum rig_status rig__host_model(const struct rig_profile_options *o,
                                       struct rig_optable_host *host, char *error,
                                       size_t error_len)
{
    struct rig_host_fit_options fit_options = {.backend = o->backend,
                                               .profile = o->profile,
                                               .model = o->host_fit_model,
                                               .results_path = o->host_fit_out,
                                               .quick = o->quick};
    if (o->progress) o->progress(o->user, "host calibration", -1, -1);
    struct rig_host_fit fit;
    enum rig_status status = rig_host_fit_run(&fit_options, &fit, error, error_len);
    if (status != RIG_OK) return status;
    host->model = fit.mean;
    host->model_median = fit.median;
    for (int32_t t = 0; t < RIG_HOST_TERMS; t++) {
        for (int32_t f = 0; f < RIG_HOST_FACTORS; f++)
            host->model_given[t][f] = host->model_median_given[t][f] = true;
        char line[160]; /* what was fitted on how much, and how well */
        snprintf(line, sizeof line, "host calibration: %s over %lld of %lld steps: mean %.2f us, "
                 "median |residual| %.2f us", rig_host_model_keys[t][RIG_HOST_BASE],
                 (long long)fit.rows[t], (long long)fit.steps, 1e-3 * fit.measured_ns[t],
                 1e-3 * fit.residual_ns[t]);
        if (o->progress) o->progress(o->user, line, -1, -1);
    }
    return RIG_OK;
}

enum rig_status rig_profile_run(const struct rig_profile_options *options,
                                struct rig_optable_point **points, int64_t *count,
                                struct rig_optable_host *host, char *device, size_t device_len,
                                char *error, size_t error_len)
{
    RIG_ASSERT(options != NULL && points != NULL && count != NULL && host != NULL);
    RIG_ASSERT(options->repeats >= 3 && options->repeats <= RIG_BENCH_REPEATS_MAX);
    error[0] = '\0';
    struct rig__sweep s = {.options = options};
    clock_gettime(CLOCK_MONOTONIC, &s.started);
    enum rig_status status = rig__setup(&s, error, error_len);
    if (status == RIG_OK) {
        snprintf(device, device_len, "%s", rig_hal_device_info(s.dev.device)->name);
        status = rig__host_calls(&s, host); /* first, on a quiet device */
        if (status < 0) rig__bench_fail(&s.dev, status, "timing the host calls", error, error_len);
    }
    if (status == RIG_OK) {
        status = rig__sweep_all(&s, error, error_len);
    }
    rig__teardown(&s); /* the calibration opens its own engine: the GPU's memory is free */
    if (status == RIG_OK && options->host_fit)
        status = rig__host_model(options, host, error, error_len);
    if (status == RIG_OK) {
        *points = s.points;
        *count = s.count;
        s.points = NULL;
    }
    free(s.points);
    return status;
}
