/* ops.c — a decode step and a prefill step taken apart: every op of the model's forward
 * timed alone on the model's shapes, with how many times a step issues it (profile before
 * tuning).
 *
 * The ops are the model's own: a two-layer model of the benchmarked shapes (dummy weights)
 * hands its forward's ops to rig_model_forward_ops instead of issuing them, so this file lists
 * none of them. Layer 0 stands for itself (its first norm has no residual to add), layer 1 for
 * the other L − 1 layers; ops of one name share a row (its count is how often a step issues
 * it). Decode: batch 1 and 256 (quick: 1 and 8) at context 512; prefill: one chunk of 8192
 * (quick: 512) tokens. `share` is count x time / the sum over the step's ops: where a
 * graph-replayed step's time goes. Each time is one issue of the op inside a graph of 20
 * issues of it (graph node overhead included, host launch time not; eager where the backend
 * has no graphs), so the sum is comparable with the decode rows' graph time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/bench/bench_impl.h"
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

/* A step's metadata over one buffer, and a model of two layers to take the forward from. */
struct rig__ops {
    struct rig_buffer *meta;
    size_t used;
    struct rig_model *model;
    struct rig_tensor ids, pos, loc, table, table_idx, kv_len, last_idx; /* metadata */
    struct rig_tensor cu_q;                                              /* [R + 1] */
    struct rig_tensor temp, top_k, top_p, seed, sample_pos, tokens;
};

static struct rig_tensor rig__take(struct rig__ops *s, enum rig_dtype dtype, int32_t ndim,
                                   int64_t n0, int64_t n1)
{
    int64_t shape[2] = {n0, n1};
    struct rig_tensor t = rig_tensor_make(NULL, dtype, ndim, shape);
    size_t bytes = (size_t)rig_tensor_numel(&t) * rig_dtype_size(dtype);
    RIG_ASSERT(s->used + bytes <= rig_hal_buffer_size(s->meta));
    t.data = (uint8_t *)rig_hal_buffer_ptr(s->meta) + s->used;
    s->used += (bytes + 255) / 256 * 256;
    return t;
}

/* Bytes of the metadata buffer (what rig__carve takes, with alignment slack). */
static size_t rig__meta_bytes(const struct rig__step *st)
{
    return (size_t)(3 * st->T * 4 + st->R * (12 + st->C) * 4) + 16 * 256;
}

static void rig__carve(struct rig__ops *s, const struct rig__step *st)
{
    int64_t B = st->T, R = st->R, C = st->C;
    enum rig_dtype i32 = RIG_DTYPE_I32, f32 = RIG_DTYPE_F32;
    s->used = 0;
    struct rig_tensor *per_token[] = {&s->ids, &s->pos, &s->loc};
    for (size_t m = 0; m < RIG_ARRAY_LEN(per_token); m++)
        *per_token[m] = rig__take(s, i32, 1, B, 1);
    struct rig_tensor *per_request[] = {&s->table_idx,  &s->kv_len, &s->last_idx,
                                        &s->top_k,      &s->tokens, &s->sample_pos};
    for (size_t m = 0; m < RIG_ARRAY_LEN(per_request); m++)
        *per_request[m] = rig__take(s, i32, 1, R, 1);
    s->cu_q = rig__take(s, i32, 1, R + 1, 1);
    s->temp = rig__take(s, f32, 1, R, 1);
    s->top_p = rig__take(s, f32, 1, R, 1);
    s->seed = rig__take(s, RIG_DTYPE_I64, 1, R, 1);
    s->table = rig__take(s, i32, 2, R, C);
}

/* Host metadata. Decode: request r in row r, slots r * C + p, kv_len C. Prefill: one
 * request, token t at position and slot t, kv_len T. Greedy sampling. */
static enum rig_status rig__stage(struct rig__bench_dev *dev, struct rig__ops *s,
                                  const struct rig__step *st)
{
    size_t bytes = s->used;
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

/* The model's view of the step. */
static struct rig_forward_batch rig__batch(const struct rig__ops *s, const struct rig__step *st)
{
    return (struct rig_forward_batch){
        .phase = st->prefill ? RIG_BATCH_PREFILL : RIG_BATCH_DECODE,
        .num_requests = (int32_t)st->R, .num_tokens = (int32_t)st->T,
        .padded_requests = (int32_t)st->R, .padded_tokens = (int32_t)st->T,
        .max_q_len = st->prefill ? (int32_t)st->T : 1, .max_kv_len = (int32_t)st->C,
        .sample = true, .input_ids = s->ids, .positions = s->pos, .out_loc = s->loc,
        .table_idx = s->table_idx, .cu_q = s->cu_q, .kv_len = s->kv_len,
        .last_idx = s->last_idx, .temperature = s->temp, .top_k = s->top_k, .top_p = s->top_p,
        .seed = s->seed, .sample_pos = s->sample_pos, .page_table = s->table,
        .out_tokens = s->tokens};
}

struct rig__op_entry {
    const char *name;
    int32_t count; /* per step */
    struct rig_op op;
};

#define RIG__OPS_ENTRIES 16

/* Collects the step's ops from the model's forward. The model has two layers: layer 0
 * stands for itself (its first norm has no residual to add), layer 1 for the other L − 1;
 * ops of one name share a row (timed once, counted as often as the forward issues them). */
struct rig__collect {
    int32_t layers; /* L of the real model */
    struct rig__op_entry entries[RIG__OPS_ENTRIES];
    int32_t count;
};

static enum rig_status rig__collect_op(void *ctx, int32_t layer, const char *name,
                                       const struct rig_op *op)
{
    struct rig__collect *c = ctx;
    int32_t times = layer == 1 ? c->layers - 1 : 1;
    for (int32_t i = 0; i < c->count; i++) {
        if (strcmp(c->entries[i].name, name) != 0) continue;
        c->entries[i].count += times;
        return RIG_OK;
    }
    if (c->count == RIG__OPS_ENTRIES) return RIG_E_CAPACITY;
    c->entries[c->count++] = (struct rig__op_entry){name, times, *op};
    return RIG_OK;
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

/* The metadata of step `st` and a two-layer model of `c` sized for it (dummy weights). */
static enum rig_status rig__alloc(struct rig__bench_dev *dev, const struct rig_model_config *c,
                                  struct rig__ops *s, const struct rig__step *st)
{
    enum rig_status status = rig_hal_buffer_alloc(dev->device, rig__meta_bytes(st),
                                                  RIG_MEMORY_METADATA, &s->meta);
    if (status != RIG_OK) return status;
    rig__carve(s, st);
    status = rig__stage(dev, s, st);
    struct rig_model_config two = *c;
    two.num_layers = c->num_layers < 2 ? c->num_layers : 2;
    struct rig_weights_source weights = {.path = NULL, .dummy_seed = 1};
    struct rig_model_limits limits = {.max_tokens = (int32_t)st->T, .max_requests = (int32_t)st->R,
                                      .kv_slots = (int32_t)(st->R * st->C)};
    char error[256];
    if (status == RIG_OK)
        status = rig_model_create(&two, &weights, &limits, dev->device, dev->stream, NULL,
                                  &s->model, error, sizeof error);
    return status;
}

static void rig__free(struct rig__ops *s)
{
    rig_model_destroy(s->model);
    rig_hal_buffer_free(s->meta);
    memset(s, 0, sizeof *s);
}

/* Times every op of one step into report->ops. */
static enum rig_status rig__ops_step(const struct rig_bench_options *o, struct rig__bench_dev *dev,
                                     const struct rig_model_config *c, const struct rig__step *st,
                                     struct rig_bench_report *report)
{
    struct rig__ops s = {0};
    struct rig__collect *ops = calloc(1, sizeof *ops);
    enum rig_status status = ops != NULL ? rig__alloc(dev, c, &s, st) : RIG_E_NO_MEMORY;
    if (status == RIG_OK) {
        ops->layers = c->num_layers;
        struct rig_forward_batch batch = rig__batch(&s, st);
        struct rig_model_op_sink sink = {ops, rig__collect_op};
        status = rig_model_forward_ops(s.model, &batch, &sink);
    }
    int32_t n = status == RIG_OK ? ops->count : 0;
    if (report->op_count + n > RIG_BENCH_OPS_MAX) status = RIG_E_CAPACITY;
    int32_t first = report->op_count;
    double total = 0.0;
    for (int32_t i = 0; i < n && status == RIG_OK; i++) {
        struct rig_bench_op_row *row = &report->ops[report->op_count];
        memset(row, 0, sizeof *row);
        snprintf(row->op, sizeof row->op, "%s", ops->entries[i].name);
        row->batch = (int32_t)st->R;
        row->tokens = (int32_t)st->T;
        row->context = (int32_t)st->C;
        row->count = ops->entries[i].count;
        status = rig__time_op(o, dev, &ops->entries[i].op, &row->ns);
        if (status < 0) break;
        total += row->ns * row->count;
        report->op_count++;
    }
    for (int32_t i = first; i < report->op_count; i++)
        report->ops[i].share = report->ops[i].ns * report->ops[i].count / total;
    rig__free(&s);
    free(ops);
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
    if (status < 0) rig__bench_fail(&dev, status, "op breakdown", error, error_len);
    rig__bench_close(&dev);
    return status;
}
