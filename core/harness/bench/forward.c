/* forward.c — decode and prefill steps of the model, driven directly (no scheduler).
 *
 * One model rank (dummy weights; phantom on the simulator) is created per benchmark with
 * limits sized for its largest case; a metadata buffer holds a hand-prepared batch exactly
 * as the scheduler would stage it (core/engine/batch.h). Every request owns distinct KV slots —
 * request r's position p is slot r x context + p — so decode attention really reads
 * batch x context slots and no two requests share cache lines. KV contents are whatever
 * the device memory holds: values do not change a kernel's time, and nothing here is
 * checked against a reference (the kernel tests do that).
 *
 * Decode: batch B of requests at context C (C - 1 cached tokens plus the new one), timed
 * eagerly and, where the backend captures graphs, as a graph replay (as the engine runs
 * decode). Prefill: one request with a chunk of N new tokens after P cached ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/bench/bench_impl.h"
#include "core/model/model.h"

static const int32_t rig__decode_batches[] = {1, 8, 64, 256};
static const int32_t rig__decode_contexts[] = {512, 2048};
static const int32_t rig__decode_batches_quick[] = {1, 8};
static const int32_t rig__decode_contexts_quick[] = {512};
static const int32_t rig__prefill_chunks[] = {512, 1024, 2048, 4096, 8192, 16384};
static const int32_t rig__prefill_chunks_quick[] = {512, 1024};

/* A model rank and one staged batch. */
struct rig__fwd {
    struct rig__bench_dev dev;
    struct rig_model_config config;
    struct rig_model *model;
    struct rig_buffer *meta; /* (meta_bytes) the batch's device metadata */
    uint8_t *host;           /* (meta_bytes) its host staging copy */
    size_t meta_bytes;
    size_t used; /* bump offset while carving */
    int32_t tokens_max, requests_max, slots_max;
    struct rig_forward_batch batch;
    struct rig_graph *graph;
};

/* Carves a contiguous 1-D or 2-D tensor from the metadata block (host copy at the same
 * offset). Sizes were reserved by rig__meta_bytes. */
static struct rig_tensor rig__carve(struct rig__fwd *f, enum rig_dtype dtype, int64_t n0,
                                    int64_t n1)
{
    size_t bytes = (size_t)(n0 * n1) * rig_dtype_size(dtype);
    RIG_ASSERT(f->used + bytes <= f->meta_bytes);
    struct rig_tensor t =
        n1 == 1 ? rig_tensor_1d(NULL, dtype, n0) : rig_tensor_2d(NULL, dtype, n0, n1);
    t.data = (uint8_t *)rig_hal_buffer_ptr(f->meta) + f->used;
    f->used += (bytes + 255) / 256 * 256;
    return t;
}

/* Host address of a carved tensor's staging copy. */
static void *rig__host(struct rig__fwd *f, const struct rig_tensor *t)
{
    return f->host + ((uint8_t *)t->data - (uint8_t *)rig_hal_buffer_ptr(f->meta));
}

static size_t rig__meta_bytes(int32_t tokens, int32_t requests, int64_t table_entries)
{
    return (size_t)(3 * tokens + 12 * (requests + 1) + table_entries) * 4 + 16 * 256;
}

static void rig__fwd_close(struct rig__fwd *f)
{
    if (f->graph != NULL) rig_hal_graph_destroy(f->graph);
    rig_model_destroy(f->model);
    rig_hal_buffer_free(f->meta);
    free(f->host);
    rig__bench_close(&f->dev);
}

/* Opens the device and creates the model with the given limits and a metadata buffer for a
 * page table of `table_entries` i32. */
static enum rig_status rig__fwd_open(const struct rig_bench_options *o, struct rig__fwd *f,
                                     int32_t tokens, int32_t requests, int64_t table_entries,
                                     char *error, size_t error_len)
{
    memset(f, 0, sizeof *f);
    enum rig_status status = rig__bench_open(o, &f->dev, error, error_len);
    if (status < 0) return status;
    status = rig_model_config_preset(rig__bench_model(o), &f->config);
    if (status < 0) {
        snprintf(error, error_len, "unknown model preset '%s'", rig__bench_model(o));
        rig__bench_close(&f->dev);
        return status;
    }
    f->tokens_max = tokens;
    f->requests_max = requests;
    f->slots_max = (int32_t)table_entries + 1;
    struct rig_model_limits limits = {tokens, requests, f->slots_max};
    struct rig_weights_source weights = {.path = NULL, .dummy_seed = 1};
    status = rig_model_create(&f->config, &weights, &limits, f->dev.device, f->dev.stream, NULL,
                              &f->model, error, error_len);
    f->meta_bytes = rig__meta_bytes(tokens, requests, table_entries);
    if (status == RIG_OK) {
        status = rig_hal_buffer_alloc(f->dev.device, f->meta_bytes, RIG_MEMORY_METADATA, &f->meta);
        if (status < 0) rig__bench_fail(&f->dev, status, "metadata buffer", error, error_len);
    }
    if (status == RIG_OK && (f->host = calloc(f->meta_bytes, 1)) == NULL) {
        snprintf(error, error_len, "out of host memory for the batch staging");
        status = RIG_E_NO_MEMORY;
    }
    if (status < 0) rig__fwd_close(f);
    return status;
}

/* Carves the batch's tensors for R requests, T tokens and rows x L page-table entries. */
static void rig__carve_batch(struct rig__fwd *f, int32_t R, int32_t T, int32_t rows, int32_t L)
{
    struct rig_forward_batch *b = &f->batch;
    f->used = 0;
    b->input_ids = rig__carve(f, RIG_DTYPE_I32, T, 1);
    b->positions = rig__carve(f, RIG_DTYPE_I32, T, 1);
    b->out_loc = rig__carve(f, RIG_DTYPE_I32, T, 1);
    b->table_idx = rig__carve(f, RIG_DTYPE_I32, R, 1);
    b->cu_q = rig__carve(f, RIG_DTYPE_I32, R + 1, 1);
    b->kv_len = rig__carve(f, RIG_DTYPE_I32, R, 1);
    b->last_idx = rig__carve(f, RIG_DTYPE_I32, R, 1);
    b->temperature = rig__carve(f, RIG_DTYPE_F32, R, 1);
    b->top_k = rig__carve(f, RIG_DTYPE_I32, R, 1);
    b->top_p = rig__carve(f, RIG_DTYPE_F32, R, 1);
    b->seed = rig__carve(f, RIG_DTYPE_I64, R, 1);
    b->sample_pos = rig__carve(f, RIG_DTYPE_I32, R, 1);
    b->out_tokens = rig__carve(f, RIG_DTYPE_I32, R, 1);
    b->page_table = rig__carve(f, RIG_DTYPE_I32, rows, L);
}

/* Per-request fields of request r: row `row`, kv_len, last token index, greedy sampling. */
static void rig__stage_request(struct rig__fwd *f, int32_t r, int32_t row, int32_t kv_len,
                               int32_t last)
{
    struct rig_forward_batch *b = &f->batch;
    ((int32_t *)rig__host(f, &b->table_idx))[r] = row;
    ((int32_t *)rig__host(f, &b->kv_len))[r] = kv_len;
    ((int32_t *)rig__host(f, &b->last_idx))[r] = last;
    ((float *)rig__host(f, &b->temperature))[r] = 0.0f;
    ((int32_t *)rig__host(f, &b->top_k))[r] = -1;
    ((float *)rig__host(f, &b->top_p))[r] = 1.0f;
    ((int64_t *)rig__host(f, &b->seed))[r] = r + 1;
    ((int32_t *)rig__host(f, &b->sample_pos))[r] = 0;
}

static enum rig_status rig__upload(struct rig__fwd *f)
{
    enum rig_status status = rig_hal_buffer_upload(f->dev.stream, f->meta, 0, f->host, f->used);
    return status == RIG_OK ? rig_hal_stream_synchronize(f->dev.stream) : status;
}

/* Decode batch: B requests at context C; request r in row r, slots r * C + p. */
static enum rig_status rig__stage_decode(struct rig__fwd *f, int32_t B, int32_t C)
{
    struct rig_forward_batch *b = &f->batch;
    rig__carve_batch(f, B, B, B, C);
    int32_t *ids = rig__host(f, &b->input_ids), *pos = rig__host(f, &b->positions);
    int32_t *loc = rig__host(f, &b->out_loc), *cu = rig__host(f, &b->cu_q);
    int32_t *table = rig__host(f, &b->page_table);
    for (int32_t r = 0; r < B; r++) {
        ids[r] = (r * 7919) % 10000;
        pos[r] = C - 1;
        loc[r] = r * C + C - 1;
        cu[r] = r;
        rig__stage_request(f, r, r, C, r);
        for (int32_t p = 0; p < C; p++)
            table[(int64_t)r * C + p] = r * C + p;
    }
    cu[B] = B;
    b->phase = RIG_BATCH_DECODE;
    b->num_requests = b->padded_requests = B;
    b->num_tokens = b->padded_tokens = B;
    b->max_q_len = 1;
    b->max_kv_len = C;
    b->sample = true;
    return rig__upload(f);
}

/* Prefill batch: one request, N new tokens after P cached, slots 0 .. P + N - 1. */
static enum rig_status rig__stage_prefill(struct rig__fwd *f, int32_t N, int32_t P)
{
    struct rig_forward_batch *b = &f->batch;
    rig__carve_batch(f, 1, N, 1, P + N);
    int32_t *ids = rig__host(f, &b->input_ids), *pos = rig__host(f, &b->positions);
    int32_t *loc = rig__host(f, &b->out_loc), *cu = rig__host(f, &b->cu_q);
    int32_t *table = rig__host(f, &b->page_table);
    for (int32_t t = 0; t < N; t++) {
        ids[t] = (t * 7919) % 10000;
        pos[t] = P + t;
        loc[t] = P + t;
    }
    for (int32_t p = 0; p < P + N; p++)
        table[p] = p;
    cu[0] = 0;
    cu[1] = N;
    rig__stage_request(f, 0, 0, P + N, N - 1);
    b->phase = RIG_BATCH_PREFILL;
    b->num_requests = b->padded_requests = 1;
    b->num_tokens = b->padded_tokens = N;
    b->max_q_len = N;
    b->max_kv_len = P + N;
    b->sample = true;
    return rig__upload(f);
}

static enum rig_status rig__forward_once(void *ctx, struct rig_stream *stream)
{
    struct rig__fwd *f = ctx;
    return rig_model_forward(f->model, stream, &f->batch);
}

static enum rig_status rig__graph_once(void *ctx, struct rig_stream *stream)
{
    struct rig__fwd *f = ctx;
    return rig_hal_graph_launch(f->graph, stream);
}

/* Captures the staged batch's forward; RIG_E_UNSUPPORTED when the backend has no graphs
 * (f->graph stays NULL). */
static enum rig_status rig__capture(struct rig__fwd *f)
{
    if (f->graph != NULL) rig_hal_graph_destroy(f->graph);
    f->graph = NULL;
    enum rig_status status = rig_hal_graph_capture_begin(f->dev.stream);
    if (status < 0) return status;
    status = rig_model_forward(f->model, f->dev.stream, &f->batch);
    struct rig_graph *graph = NULL;
    enum rig_status end = rig_hal_graph_capture_end(f->dev.stream, &graph);
    if (status == RIG_OK) status = end;
    if (status == RIG_OK)
        f->graph = graph;
    else if (graph != NULL)
        rig_hal_graph_destroy(graph);
    return status;
}

/* Bytes of weights one forward reads: all of them, but an untied embedding table is only
 * gathered (T rows), not read whole. */
static double rig__weight_read_bytes(const struct rig_model_config *c)
{
    double bytes = (double)rig_model_weight_bytes(c, 1);
    if (!c->tie_word_embeddings) bytes -= (double)c->vocab_size * c->hidden_size * 2.0;
    return bytes;
}

static double rig__decode_flops(const struct rig_model_config *c, int32_t B, int32_t C)
{
    double h = c->hidden_size, q = (double)c->num_heads * c->head_dim;
    double kv = (double)c->num_kv_heads * c->head_dim, inter = c->intermediate_size;
    double linear = h * (q + 2.0 * kv) + q * h + 3.0 * inter * h;
    return c->num_layers * (2.0 * linear * B + 4.0 * q * (double)B * C) +
           2.0 * h * c->vocab_size * B;
}

static enum rig_status rig__decode_row(const struct rig_bench_options *o, struct rig__fwd *f,
                                       const struct rig_bench_floors *fl, int32_t B, int32_t C,
                                       struct rig_bench_decode_row *row)
{
    memset(row, 0, sizeof *row);
    row->batch = B;
    row->context = C;
    row->graph_ns = -1.0;
    enum rig_status status = rig__stage_decode(f, B, C);
    if (status == RIG_OK)
        status = rig__bench_time(&f->dev, 2, o->repeats, rig__forward_once, f, &row->eager_ns);
    if (status == RIG_OK) {
        status = rig__capture(f);
        if (status == RIG_OK)
            status = rig__bench_time(&f->dev, 2, o->repeats, rig__graph_once, f, &row->graph_ns);
        else if (status == RIG_E_UNSUPPORTED)
            status = RIG_OK;
    }
    row->weight_bytes = rig__weight_read_bytes(&f->config);
    row->kv_bytes = (double)B * C * (double)rig_model_kv_bytes_per_slot(&f->config, 1);
    row->flops = rig__decode_flops(&f->config, B, C);
    double bytes_ns = (row->weight_bytes + row->kv_bytes) / fl->bandwidth * 1e9;
    double flops_ns = row->flops / fl->gemm_flops * 1e9;
    row->floor_ns = bytes_ns > flops_ns ? bytes_ns : flops_ns;
    double best =
        row->graph_ns > 0 && row->graph_ns < row->eager_ns ? row->graph_ns : row->eager_ns;
    row->ratio = best / row->floor_ns;
    return status;
}

/* Opens the decode benchmark's model for the largest point whose KV cache fits on the device:
 * when the largest (batch x context) runs out of device memory, the next smaller product is
 * tried, and *slots_cap says which points can run (the caller skips the others, saying so).
 * Products are tried largest first among the sweep's points; any other failure is returned. */
static enum rig_status rig__decode_open(const struct rig_bench_options *o, struct rig__fwd *f,
                                        int32_t B_max, int64_t slots, int64_t *slots_cap,
                                        char *error, size_t error_len)
{
    const int32_t *batches = o->quick ? rig__decode_batches_quick : rig__decode_batches;
    const int32_t *contexts = o->quick ? rig__decode_contexts_quick : rig__decode_contexts;
    int32_t nb = o->quick ? 2 : 4, nc = o->quick ? 1 : 2;
    for (;;) {
        enum rig_status status = rig__fwd_open(o, f, B_max, B_max, slots, error, error_len);
        if (status != RIG_E_DEVICE_MEMORY) {
            *slots_cap = slots;
            return status;
        }
        int64_t next = 0; /* the largest point's product below `slots` */
        for (int32_t c = 0; c < nc; c++)
            for (int32_t i = 0; i < nb; i++) {
                int64_t p = (int64_t)batches[i] * contexts[c];
                if (p < slots && p > next) next = p;
            }
        if (next == 0) return status;
        slots = next;
    }
}

enum rig_status rig_bench_decode(const struct rig_bench_options *o, struct rig_bench_report *report,
                                 char *error, size_t error_len)
{
    RIG_ASSERT(report->have_floors);
    const int32_t *batches = o->quick ? rig__decode_batches_quick : rig__decode_batches;
    const int32_t *contexts = o->quick ? rig__decode_contexts_quick : rig__decode_contexts;
    int32_t nb = o->quick ? 2 : 4, nc = o->quick ? 1 : 2;
    int32_t B_max = batches[nb - 1], C_max = contexts[nc - 1];
    _Static_assert(4 * 2 <= RIG_BENCH_DECODE_MAX, "decode rows fit the report");
    struct rig__fwd f;
    int64_t slots_cap = 0;
    enum rig_status status = rig__decode_open(o, &f, B_max, (int64_t)B_max * C_max, &slots_cap,
                                              error, error_len);
    if (status < 0) return status;
    for (int32_t c = 0; c < nc && status == RIG_OK; c++) {
        for (int32_t i = 0; i < nb && status == RIG_OK; i++) {
            rig__bench_progress(o, "decode", c * nb + i, nb * nc);
            if ((int64_t)batches[i] * contexts[c] > slots_cap) {
                double gb = (double)batches[i] * contexts[c] *
                            (double)rig_model_kv_bytes_per_slot(&f.config, 1) / 1e9;
                fprintf(stderr,
                        "rig bench: decode %d x %d skipped: its KV cache (%.1f GB) does not fit "
                        "beside the model on this device\n",
                        (int)batches[i], (int)contexts[c], gb);
                continue;
            }
            struct rig_bench_decode_row *row = &report->decode[report->decode_count];
            status = rig__decode_row(o, &f, &report->floors, batches[i], contexts[c], row);
            if (status == RIG_OK) report->decode_count++;
        }
    }
    if (status < 0) rig__bench_fail(&f.dev, status, "decode step", error, error_len);
    rig__bench_progress(o, "decode", nb * nc, nb * nc);
    rig__fwd_close(&f);
    return status;
}

/* RIG_BENCH_PREFILL_CHUNK=N times only the N-token chunk (no prefix and after N cached;
 * 1..65536; a timing switch for one kernel's effect on the step). */
static int32_t rig__prefill_chunk_only(void)
{
    const char *value = getenv("RIG_BENCH_PREFILL_CHUNK");
    long tokens = value != NULL ? strtol(value, NULL, 10) : 0;
    return tokens >= 1 && tokens <= 65536 ? (int32_t)tokens : 0;
}

enum rig_status rig_bench_prefill(const struct rig_bench_options *o,
                                  struct rig_bench_report *report, char *error, size_t error_len)
{
    RIG_ASSERT(report->have_floors);
    const int32_t *chunks = o->quick ? rig__prefill_chunks_quick : rig__prefill_chunks;
    int32_t n = o->quick ? 2 : 6;
    int32_t only = rig__prefill_chunk_only();
    if (only > 0) {
        chunks = &only;
        n = 1;
    }
    int32_t N_max = chunks[n - 1];
    _Static_assert(6 * 2 <= RIG_BENCH_PREFILL_MAX, "prefill rows fit the report");
    struct rig__fwd f;
    enum rig_status status = rig__fwd_open(o, &f, N_max, 1, 2 * (int64_t)N_max, error, error_len);
    if (status < 0) return status;
    const struct rig_bench_floors *fl = &report->floors;
    for (int32_t k = 0; k < 2 * n && status == RIG_OK; k++) {
        rig__bench_progress(o, "prefill", k, 2 * n);
        int32_t N = chunks[k / 2], P = k % 2 == 0 ? 0 : N;
        struct rig_bench_prefill_row *row = &report->prefill[report->prefill_count];
        memset(row, 0, sizeof *row);
        row->chunk = N;
        row->prefix = P;
        status = rig__stage_prefill(&f, N, P);
        if (status == RIG_OK)
            status = rig__bench_time(&f.dev, 1, o->repeats, rig__forward_once, &f, &row->ns);
        if (status < 0) break;
        row->flops = rig_bench_prefill_flops(rig__bench_model(o), N, P);
        double flops_ns = row->flops / fl->gemm_flops * 1e9;
        double bytes_ns = rig__weight_read_bytes(&f.config) / fl->bandwidth * 1e9;
        row->floor_ns = flops_ns > bytes_ns ? flops_ns : bytes_ns;
        row->flops_per_s = row->flops / (row->ns * 1e-9);
        row->mfu = row->flops_per_s / fl->gemm_flops;
        report->prefill_count++;
    }
    if (status < 0) rig__bench_fail(&f.dev, status, "prefill step", error, error_len);
    rig__bench_progress(o, "prefill", 2 * n, 2 * n);
    rig__fwd_close(&f);
    return status;
}
