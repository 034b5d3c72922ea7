/* launch.c — what each TP rank does with a batch (the executor behind ranks.h): uploads,
 * table writes, input gather, forward (graph replay or eager), token scatter and download;
 * decode-graph capture (engine_impl.h has the stream plan). A rank reads only the batch
 * descriptor and its metadata block, plus what it was given at start-up (its device, model,
 * buffers and the engine's fixed sizes); rank 0 also downloads the sampled tokens into the
 * scheduler's batch. Every rank runs the same ops on the same metadata, so all ranks stay in
 * step and the collectives inside the forward meet. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/engine/engine_impl.h"
#include "core/engine/ranks/mpi.h"
#include "hal/startup.h"

static size_t rig__align(size_t offset)
{
    return (offset + 255) & ~(size_t)255;
}

void rig__layout_init(struct rig__meta_layout *l, int32_t requests_max, int32_t tokens_max,
                      int32_t writes_max)
{
    size_t r = (size_t)requests_max, o = 0;
    l->table_idx = o, o = rig__align(o + 4 * r);
    l->cu_q = o, o = rig__align(o + 4 * (r + 1));
    l->kv_len = o, o = rig__align(o + 4 * r);
    l->last_idx = o, o = rig__align(o + 4 * r);
    l->temperature = o, o = rig__align(o + 4 * r);
    l->top_k = o, o = rig__align(o + 4 * r);
    l->top_p = o, o = rig__align(o + 4 * r);
    l->seed = o, o = rig__align(o + 8 * r);
    l->sample_pos = o, o = rig__align(o + 4 * r);
    l->write_idx = o, o = rig__align(o + 4 * r);
    l->request_block_bytes = o;
    size_t t = (size_t)tokens_max, w = (size_t)writes_max;
    l->input_idx = o, o = rig__align(o + 4 * t);
    l->positions = o, o = rig__align(o + 4 * t);
    l->out_loc = o, o = rig__align(o + 4 * t);
    l->pt_idx = o, o = rig__align(o + 4 * w);
    l->pt_val = o, o = rig__align(o + 4 * w);
    l->tp_idx = o, o = rig__align(o + 4 * w);
    l->tp_val = o, o = rig__align(o + 4 * w);
    l->extension_begin = o;
    l->min_p = o, o = rig__align(o + 4 * r);
    l->repetition = o, o = rig__align(o + 4 * r);
    l->frequency = o, o = rig__align(o + 4 * r);
    l->presence = o, o = rig__align(o + 4 * r);
    l->extension_bytes = o - l->extension_begin;
    l->bytes = o;
    l->requests_max = requests_max;
    l->tokens_max = tokens_max;
    l->writes_max = writes_max;
}

static struct rig_tensor rig__at(struct rig_buffer *buffer, size_t offset, enum rig_dtype dtype,
                                 int64_t n)
{
    return rig_tensor_1d((uint8_t *)rig_hal_buffer_ptr(buffer) + offset, dtype, n);
}

/* A batch that uses a sampling extension: it uploads the extension block and replays the
 * extended graph. */
static bool rig__desc_extended(const struct rig_batch_desc *b)
{
    return b->min_p || b->penalize || b->top_logprobs >= 0;
}

/* The tensors of the sampling extensions the batch uses (rig_forward_batch leaves the others
 * absent). */
static void rig__view_extensions(const struct rig__rank *rank, struct rig_buffer *meta,
                                 const struct rig_batch_desc *b, struct rig_forward_batch *v)
{
    const struct rig_engine *e = rank->engine;
    const struct rig__meta_layout *l = &e->layout;
    int64_t rp = b->padded, rmax = l->requests_max;
    if (b->min_p) v->min_p = rig__at(meta, l->min_p, RIG_DTYPE_F32, rp);
    if (b->penalize) {
        v->repetition = rig__at(meta, l->repetition, RIG_DTYPE_F32, rp);
        v->frequency = rig__at(meta, l->frequency, RIG_DTYPE_F32, rp);
        v->presence = rig__at(meta, l->presence, RIG_DTYPE_F32, rp);
        v->token_pool = rig_tensor_2d(rig_hal_buffer_ptr(rank->token_pool), RIG_DTYPE_I32,
                                      e->table.rows, e->max_seq_len);
    }
    if (b->top_logprobs < 0) return;
    uint8_t *out = rig_hal_buffer_ptr(rank->out_logprobs);
    v->out_logprob = rig_tensor_1d(out, RIG_DTYPE_F32, rp);
    if (b->top_logprobs == 0) return;
    v->out_top_ids = rig_tensor_2d(out + 4 * rmax, RIG_DTYPE_I32, rp, b->top_logprobs);
    v->out_top_logprobs = rig_tensor_2d(out + 4 * rmax * (1 + RIG_LOGPROBS_TOP_MAX),
                                        RIG_DTYPE_F32, rp, b->top_logprobs);
}

/* The model's view of a batch whose metadata sits in `meta` (a slot or the static region). */
static struct rig_forward_batch rig__view(const struct rig__rank *rank, struct rig_buffer *meta,
                                          const struct rig_batch_desc *b)
{
    const struct rig_engine *e = rank->engine;
    const struct rig__meta_layout *l = &e->layout;
    struct rig_forward_batch v;
    memset(&v, 0, sizeof v);
    v.phase = (enum rig_batch_phase)b->phase;
    v.num_requests = b->count;
    v.num_tokens = b->tokens;
    v.padded_requests = b->padded;
    v.padded_tokens = b->padded_tokens;
    v.max_q_len = b->max_q_len;
    v.max_kv_len = b->max_kv_len;
    v.sample = b->sample != 0;
    int64_t rp = b->padded, tp = b->padded_tokens;
    v.input_ids = rig__at(rank->input_ids, 0, RIG_DTYPE_I32, tp);
    v.positions = rig__at(meta, l->positions, RIG_DTYPE_I32, tp);
    v.out_loc = rig__at(meta, l->out_loc, RIG_DTYPE_I32, tp);
    v.table_idx = rig__at(meta, l->table_idx, RIG_DTYPE_I32, rp);
    v.cu_q = rig__at(meta, l->cu_q, RIG_DTYPE_I32, rp + 1);
    v.kv_len = rig__at(meta, l->kv_len, RIG_DTYPE_I32, rp);
    v.last_idx = rig__at(meta, l->last_idx, RIG_DTYPE_I32, rp);
    v.temperature = rig__at(meta, l->temperature, RIG_DTYPE_F32, rp);
    v.top_k = rig__at(meta, l->top_k, RIG_DTYPE_I32, rp);
    v.top_p = rig__at(meta, l->top_p, RIG_DTYPE_F32, rp);
    v.seed = rig__at(meta, l->seed, RIG_DTYPE_I64, rp);
    v.sample_pos = rig__at(meta, l->sample_pos, RIG_DTYPE_I32, rp);
    v.page_table = rig_tensor_2d(rig_hal_buffer_ptr(rank->page_table), RIG_DTYPE_I32,
                                 e->table.rows, e->max_seq_len);
    v.out_tokens = rig__at(rank->out_tokens, 0, RIG_DTYPE_I32, rp);
    v.out_checked = rig__at(rank->out_tokens, 4 * (size_t)l->requests_max, RIG_DTYPE_I32, rp);
    rig__view_extensions(rank, meta, b, &v);
    return v;
}

/* Uploads the used parts of the batch's metadata into its slot, on the meta stream. */
static enum rig_status rig__upload(struct rig__rank *rank, const struct rig_batch_desc *b,
                                   const uint8_t *metadata)
{
    const struct rig__meta_layout *l = &rank->engine->layout;
    int32_t slot = b->slot;
    struct rig_buffer *dst = rank->meta_slot[slot];
    RIG_ASSERT(b->metadata_bytes == (int64_t)l->bytes);
    if (rank->done_recorded[slot])
        RIG_TRY(rig_hal_stream_wait_event(rank->meta, rank->done[slot]));
    RIG_TRY(rig_hal_buffer_upload(rank->meta, dst, 0, metadata, l->request_block_bytes));
    size_t tokens = 4 * (size_t)b->padded_tokens;
    const size_t token_arrays[3] = {l->input_idx, l->positions, l->out_loc};
    for (int i = 0; i < 3; i++)
        RIG_TRY(rig_hal_buffer_upload(rank->meta, dst, token_arrays[i],
                                       metadata + token_arrays[i], tokens));
    const size_t writes[4][2] = {{l->pt_idx, (size_t)b->page_writes},
                                 {l->pt_val, (size_t)b->page_writes},
                                 {l->tp_idx, (size_t)b->token_writes},
                                 {l->tp_val, (size_t)b->token_writes}};
    for (int i = 0; i < 4; i++) {
        if (writes[i][1] == 0) continue;
        RIG_TRY(rig_hal_buffer_upload(rank->meta, dst, writes[i][0],
                                       metadata + writes[i][0], 4 * writes[i][1]));
    }
    if (rig__desc_extended(b))
        RIG_TRY(rig_hal_buffer_upload(rank->meta, dst, l->extension_begin,
                                      metadata + l->extension_begin, l->extension_bytes));
    return rig_hal_event_record(rank->uploaded[slot], rank->meta);
}

/* Page-table and token-pool writes, then the input ids from the token pool. */
static enum rig_status rig__apply_writes(struct rig__rank *rank, const struct rig_batch_desc *b,
                                         struct rig_buffer *meta)
{
    struct rig_engine *e = rank->engine;
    const struct rig__meta_layout *l = &e->layout;
    struct rig_buffer *src = rank->meta_slot[b->slot];
    int64_t cells = (int64_t)e->table.rows * e->max_seq_len;
    struct rig_tensor pt = rig__at(rank->page_table, 0, RIG_DTYPE_I32, cells);
    struct rig_tensor tp = rig__at(rank->token_pool, 0, RIG_DTYPE_I32, cells);
    if (b->page_writes > 0) {
        struct rig_op_index_scatter s = {pt, rig__at(src, l->pt_val, RIG_DTYPE_I32, b->page_writes),
                                         rig__at(src, l->pt_idx, RIG_DTYPE_I32, b->page_writes)};
        RIG_TRY(rig_hal_index_scatter(rank->compute, &s));
    }
    if (b->token_writes > 0) {
        struct rig_op_index_scatter s = {tp,
                                         rig__at(src, l->tp_val, RIG_DTYPE_I32, b->token_writes),
                                         rig__at(src, l->tp_idx, RIG_DTYPE_I32, b->token_writes)};
        RIG_TRY(rig_hal_index_scatter(rank->compute, &s));
    }
    struct rig_op_index_gather g = {
        rig__at(rank->input_ids, 0, RIG_DTYPE_I32, b->padded_tokens), tp,
        rig__at(meta, l->input_idx, RIG_DTYPE_I32, b->padded_tokens)};
    return rig_hal_index_gather(rank->compute, &g);
}

/* Copies what a graph reads from the slot into the static region. */
static enum rig_status rig__to_static(struct rig__rank *rank, const struct rig_batch_desc *b)
{
    const struct rig__meta_layout *l = &rank->engine->layout;
    struct rig_buffer *src = rank->meta_slot[b->slot];
    RIG_TRY(rig_hal_buffer_copy(rank->compute, rank->meta_static, 0, src, 0,
                                 l->request_block_bytes));
    if (rig__desc_extended(b))
        RIG_TRY(rig_hal_buffer_copy(rank->compute, rank->meta_static, l->extension_begin, src,
                                    l->extension_begin, l->extension_bytes));
    const size_t arrays[3] = {l->input_idx, l->positions, l->out_loc};
    for (int i = 0; i < 3; i++)
        RIG_TRY(rig_hal_buffer_copy(rank->compute, rank->meta_static, arrays[i], src, arrays[i],
                                     4 * (size_t)b->padded_tokens));
    return RIG_OK;
}

/* The logprobs of the batch's rows into its slot's host arrays (rows of top_logprobs). */
static enum rig_status rig__download_logprobs(struct rig__rank *rank,
                                              const struct rig_batch_desc *b)
{
    const struct rig__batch *host = &rank->engine->batches[b->slot];
    size_t rmax = (size_t)rank->engine->layout.requests_max, count = (size_t)b->count;
    size_t top = (size_t)b->top_logprobs;
    RIG_TRY(rig_hal_buffer_download(rank->compute, rank->out_logprobs, 0, host->logprob_out,
                                    4 * count));
    if (top == 0) return RIG_OK;
    RIG_TRY(rig_hal_buffer_download(rank->compute, rank->out_logprobs, 4 * rmax,
                                    host->top_ids_out, 4 * count * top));
    return rig_hal_buffer_download(rank->compute, rank->out_logprobs,
                                   4 * rmax * (1 + RIG_LOGPROBS_TOP_MAX), host->top_logprobs_out,
                                   4 * count * top);
}

static enum rig_status rig__rank_launch(struct rig__rank *rank, const struct rig_batch_desc *b,
                                        const uint8_t *metadata)
{
    struct rig_engine *e = rank->engine;
    int32_t slot = b->slot;
    RIG_TRY(rig__upload(rank, b, metadata));
    RIG_TRY(rig_hal_stream_wait_event(rank->compute, rank->uploaded[slot]));
    struct rig_buffer *meta = rank->meta_slot[slot];
    if (b->graph >= 0) {
        RIG_TRY(rig__to_static(rank, b));
        meta = rank->meta_static;
    }
    RIG_TRY(rig__apply_writes(rank, b, meta));
    RIG_TRY(rig_hal_event_record(rank->start[slot], rank->compute));
    if (b->graph >= 0) {
        const struct rig__graph *g = &rank->graphs[b->graph];
        RIG_TRY(rig_hal_graph_launch(rig__desc_extended(b) ? g->extended : g->graph,
                                     rank->compute));
    } else {
        struct rig_forward_batch view = rig__view(rank, meta, b);
        RIG_TRY(rig_model_forward(rank->model, rank->compute, &view));
    }
    RIG_TRY(rig_hal_event_record(rank->end[slot], rank->compute));
    const struct rig__meta_layout *l = &e->layout;
    int64_t cells = (int64_t)e->table.rows * e->max_seq_len;
    struct rig_op_index_scatter s = {rig__at(rank->token_pool, 0, RIG_DTYPE_I32, cells),
                                     rig__at(rank->out_tokens, 0, RIG_DTYPE_I32, b->padded),
                                     rig__at(meta, l->write_idx, RIG_DTYPE_I32, b->padded)};
    RIG_TRY(rig_hal_index_scatter(rank->compute, &s));
    if (rank->index == 0) /* `checked`: the tokens, -1 where the logits were not finite */
        RIG_TRY(rig_hal_buffer_download(rank->compute, rank->out_tokens,
                                         b->sample ? 4 * (size_t)l->requests_max : 0,
                                         e->batches[slot].tokens_out, 4 * (size_t)b->count));
    if (rank->index == 0 && b->sample && b->top_logprobs >= 0)
        RIG_TRY(rig__download_logprobs(rank, b));
    RIG_TRY(rig_hal_event_record(rank->done[slot], rank->compute));
    rank->done_recorded[slot] = true;
    return RIG_OK;
}

enum rig_status rig__rank_init_tables(struct rig__rank *rank)
{
    struct rig_engine *e = rank->engine;
    size_t cells = (size_t)e->table.rows * (size_t)e->max_seq_len;
    RIG_TRY(rig_hal_buffer_fill(rank->compute, rank->page_table, 0, (uint32_t)e->dummy_slot,
                                 cells));
    RIG_TRY(rig_hal_buffer_fill(rank->compute, rank->token_pool, 0, 0, cells));
    RIG_TRY(rig_hal_buffer_fill(rank->compute, rank->input_ids, 0, 0,
                                 (size_t)e->layout.tokens_max));
    RIG_TRY(rig_hal_event_record(rank->origin, rank->compute));
    return rig_hal_stream_synchronize(rank->compute);
}

/* The decode batch of `bs` requests that graphs are captured from, made from the all-padding
 * batch `base`: the plain sampling path, or (`extended`) every sampling extension with
 * top_logprobs_max alternatives. */
static struct rig_batch_desc rig__graph_desc(const struct rig_engine *e,
                                             const struct rig_batch_desc *base, int32_t bs,
                                             bool extended)
{
    struct rig_batch_desc tmp = *base;
    tmp.phase = RIG_BATCH_DECODE;
    tmp.count = bs;
    tmp.tokens = bs;
    tmp.padded = bs;
    tmp.padded_tokens = bs;
    tmp.max_q_len = 1;
    tmp.max_kv_len = e->max_seq_len; /* a graph serves any length up to the limit */
    tmp.sample = 1;
    tmp.min_p = tmp.penalize = extended ? 1 : 0;
    tmp.top_logprobs = extended ? e->top_logprobs_max : -1;
    return tmp;
}

/* Captures the decode graph of `bs` requests reading the static region (rig__graph_desc). */
static enum rig_status rig__capture_one(struct rig__rank *rank, const struct rig_batch_desc *base,
                                        int32_t bs, bool extended, struct rig_graph **out)
{
    struct rig_batch_desc tmp = rig__graph_desc(rank->engine, base, bs, extended);
    RIG_TRY(rig_hal_graph_capture_begin(rank->compute));
    struct rig_forward_batch view = rig__view(rank, rank->meta_static, &tmp);
    enum rig_status status = rig_model_forward(rank->model, rank->compute, &view);
    struct rig_graph *graph = NULL;
    enum rig_status end = rig_hal_graph_capture_end(rank->compute, &graph);
    if (status != RIG_OK || end != RIG_OK) {
        if (graph) rig_hal_graph_destroy(graph);
        return status != RIG_OK ? status : end;
    }
    *out = graph;
    return RIG_OK;
}

/* Captures the plain and the extended decode graph of each size in rank->graphs (largest
 * first), each reading the static metadata region, which holds `metadata`: an all-padding
 * batch of the largest size (padding rows are the same for every size), prepared by the
 * scheduler thread. Its extension block is not uploaded here (every replay of an extended
 * graph copies its batch's block first), so a start moves the same bytes as before the
 * extensions existed. */
static enum rig_status rig__rank_capture(struct rig__rank *rank, const struct rig_batch_desc *b,
                                         const uint8_t *metadata)
{
    struct rig_engine *e = rank->engine;
    const struct rig__meta_layout *l = &e->layout;
    if (rank->graph_count == 0) return RIG_OK;
    int32_t largest = rank->graphs[0].batch_size;
    RIG_ASSERT(b->metadata_bytes == (int64_t)l->bytes);
    RIG_TRY(rig_hal_buffer_upload(rank->compute, rank->meta_static, 0, metadata,
                                  l->extension_begin));
    RIG_TRY(rig_hal_stream_synchronize(rank->compute));
    for (int32_t g = 0; g < rank->graph_count; g++) {
        RIG_ASSERT(rank->graphs[g].batch_size <= largest);
        RIG_TRY(rig__capture_one(rank, b, rank->graphs[g].batch_size, false,
                                 &rank->graphs[g].graph));
    }
    for (int32_t g = 0; g < rank->graph_count; g++)
        RIG_TRY(rig__capture_one(rank, b, rank->graphs[g].batch_size, true,
                                 &rank->graphs[g].extended));
    rig_startup_mark("%d decode graphs captured (rank %d)", 2 * rank->graph_count, rank->index);
    /* On a GPU, one eager forward of the largest padding batch (it writes only the padding
     * slot and the rank's scratch outputs): the first use of each GEMM family outside a
     * capture, where the CUDA backend runs the algorithms it chose once, so that their kernels
     * load now and not in a serving step (cuda/ops/gemm_plan.cuh). Without its collectives
     * (local_only): a kernel's first launch can wait for the device's running kernels, and
     * an all-reduce among them waits for the other ranks, which at that moment may wait for
     * this thread (docs/gpu.md, "The hang"). Not on the simulator: its clock would move and
     * every scenario's timeline with it. */
    if (rig_hal_device_info(rank->device)->virtual_clock) return RIG_OK;
    struct rig_batch_desc warm = rig__graph_desc(e, b, largest, false);
    struct rig_forward_batch view = rig__view(rank, rank->meta_static, &warm);
    view.local_only = true;
    RIG_TRY(rig_model_forward(rank->model, rank->compute, &view));
    RIG_TRY(rig_hal_stream_synchronize(rank->compute));
    rig_startup_mark("warm forward (rank %d)", rank->index);
    return RIG_OK;
}

/* --- the executor and the engine's side of the seam ------------------------------------ */

/* A rank in another process replays the scheduler's host time since the previous job on
 * its own clock (rig__host_log), around the wait for the slot's previous uploads, as the
 * scheduler did to it in one process. A descriptor from the wire is input: checked. */
static enum rig_status rig__follow_host(struct rig__rank *rank, const struct rig_batch_desc *b)
{
    for (int32_t i = 0; i < 2; i++)
        if (b->host_add_ns[i] < 0 || b->host_until_ns[i] < -1) return RIG_E_INVALID;
    if (b->job == RIG_RANK_JOB_LAUNCH && (b->slot < 0 || b->slot >= RIG__SLOTS))
        return RIG_E_INVALID;
    for (int32_t i = 0; i < 2; i++) {
        if (i == 1 && b->job == RIG_RANK_JOB_LAUNCH && rank->done_recorded[b->slot])
            RIG_TRY(rig_hal_event_synchronize(rank->uploaded[b->slot]));
        if (b->host_add_ns[i] > 0) rig_hal_host_work_ns(rank->device, b->host_add_ns[i]);
        if (b->host_until_ns[i] >= 0) rig_hal_host_wait_until_ns(rank->device, b->host_until_ns[i]);
    }
    return RIG_OK;
}

/* ranks.h's executor: rank `index` of the engine `ctx` runs the job. */
static enum rig_status rig__execute(void *ctx, int32_t index, const struct rig_batch_desc *desc,
                                    const uint8_t *metadata)
{
    struct rig_engine *e = ctx;
    RIG_ASSERT(index >= e->rank_first && index < e->rank_first + e->rank_count);
    struct rig__rank *rank = &e->ranks[index];
    enum rig_status status = RIG_OK;
    if (e->config.ranks == RIG_RANKS_MPI && index > 0) {
        status = rig__follow_host(rank, desc);
        if (status == RIG_OK && desc->metadata_bytes != (int64_t)e->layout.bytes)
            status = RIG_E_INVALID;
        /* The uploads read the slot's pinned staging block, as in process 0: a copy from
         * the pool's (pageable) receive buffer would block the host, and cost so. */
        if (status == RIG_OK) {
            int32_t slot = desc->job == RIG_RANK_JOB_LAUNCH ? desc->slot : 0;
            memcpy(e->batches[slot].staging, metadata, e->layout.bytes);
            metadata = e->batches[slot].staging;
        }
    }
    if (status == RIG_OK && desc->job == RIG_RANK_JOB_LAUNCH)
        status = rig__rank_launch(rank, desc, metadata);
    if (status == RIG_OK && desc->job == RIG_RANK_JOB_CAPTURE)
        status = rig__rank_capture(rank, desc, metadata);
    /* A rank that stops short of its collectives must not leave the others waiting in them
     * (a hang, not an error); a no-op when the group failed first. */
    if (status != RIG_OK && rank->comm != NULL) {
        char reason[96];
        snprintf(reason, sizeof reason, "its %s failed: %s",
                 desc->job == RIG_RANK_JOB_LAUNCH ? "step" : "graph capture",
                 rig_status_message(status));
        rig_hal_comm_abort(rank->comm, reason);
    }
    return status;
}

/* The descriptor of the batch prepared in `slot`. */
static struct rig_batch_desc rig__desc(const struct rig_engine *e, int32_t job, int32_t slot)
{
    const struct rig__batch *b = &e->batches[slot];
    const struct rig__host_log *h = &e->remote_host;
    return (struct rig_batch_desc){
        .job = job, .slot = slot, .step = b->step, .phase = (int32_t)b->phase,
        .count = b->count, .tokens = b->tokens, .padded = b->padded,
        .padded_tokens = b->padded_tokens, .max_q_len = b->max_q_len,
        .max_kv_len = b->max_kv_len, .graph = b->graph, .sample = b->sample,
        .min_p = b->min_p, .penalize = b->penalize, .top_logprobs = b->top_logprobs,
        .page_writes = b->page_writes, .token_writes = b->token_writes,
        .metadata_bytes = (int64_t)e->layout.bytes,
        .host_add_ns = {h->add_ns[0], h->add_ns[1]},
        .host_until_ns = {h->until_ns[0], h->until_ns[1]}};
}

static void rig__host_log_reset(struct rig__host_log *h)
{
    *h = (struct rig__host_log){.until_ns = {-1, -1}};
}

void rig__host_work(struct rig_engine *e, int64_t ns)
{
    if (ns <= 0) return;
    for (int32_t r = e->rank_first; r < e->rank_first + e->rank_count; r++)
        rig_hal_host_work_ns(e->devices[r], ns);
    struct rig__host_log *h = &e->remote_host;
    h->add_ns[h->phase] += ns; /* max(t + a, u) + ns = max(t + a + ns, u + ns) */
    if (h->until_ns[h->phase] >= 0) h->until_ns[h->phase] += ns;
}

void rig__host_wait_until(struct rig_engine *e, int64_t t_ns)
{
    for (int32_t r = e->rank_first; r < e->rank_first + e->rank_count; r++)
        rig_hal_host_wait_until_ns(e->devices[r], t_ns);
    struct rig__host_log *h = &e->remote_host;
    if (t_ns > h->until_ns[h->phase]) h->until_ns[h->phase] = t_ns;
}

void rig__host_upload_wait_passed(struct rig_engine *e)
{
    e->remote_host.phase = 1;
}

enum rig_status rig__ranks_run(struct rig_engine *e, int32_t job, int32_t slot)
{
    struct rig_batch_desc desc = rig__desc(e, job, slot);
    rig__host_log_reset(&e->remote_host);
    if (e->mpi_pool == NULL) return rig_ranks_run(e->rank_pool, &desc, e->batches[slot].staging);
#ifdef RIG_HAVE_MPI
    return rig_ranks_mpi_run(e->mpi_pool, &desc, e->batches[slot].staging);
#else
    return RIG_E_UNSUPPORTED;
#endif
}

/* A rank's wall-clock bound on process 0's next job or a peer's part of one: the
 * collective timeout. */
static int64_t rig__ranks_timeout_ms(const struct rig_engine *e)
{
    int64_t t = e->config.device.collective_timeout_ms;
    return t > 0 ? t : RIG_RANKS_TIMEOUT_MS_DEFAULT;
}

enum rig_status rig__ranks_join(struct rig_engine *e, char *error, size_t error_len)
{
    rig__host_log_reset(&e->remote_host);
    e->rank_first = 0;
    e->rank_count = e->tp_size;
    if (e->config.ranks != RIG_RANKS_MPI) return RIG_OK;
#ifdef RIG_HAVE_MPI
    enum rig_status status =
        rig_ranks_mpi_create(e->tp_size, (int64_t)e->layout.bytes, rig__ranks_timeout_ms(e),
                             rig__execute, e, error, error_len, &e->mpi_pool);
    if (status != RIG_OK) return status;
    e->rank_first = rig_ranks_mpi_rank(e->mpi_pool);
    e->rank_count = 1;
    return RIG_OK;
#else
    snprintf(error, error_len, "engine: ranks across processes need OpenMPI, and this build "
             "has none (install libopenmpi-dev and rebuild)");
    return RIG_E_UNSUPPORTED;
#endif
}

enum rig_status rig__ranks_start(struct rig_engine *e)
{
    if (e->config.ranks == RIG_RANKS_MPI) return RIG_OK; /* joined before the devices */
    return rig_ranks_create(e->tp_size, rig__execute, e, &e->rank_pool);
}

void rig__ranks_release(struct rig_engine *e)
{
#ifdef RIG_HAVE_MPI
    rig_ranks_mpi_release(e->mpi_pool);
#else
    (void)e;
#endif
}

void rig__ranks_stop(struct rig_engine *e)
{
    rig_ranks_destroy(e->rank_pool);
    e->rank_pool = NULL;
#ifdef RIG_HAVE_MPI
    rig_ranks_mpi_destroy(e->mpi_pool);
#endif
    e->mpi_pool = NULL;
}

bool rig_engine_leads(const struct rig_engine *e)
{
    RIG_ASSERT(e != NULL);
    return e->rank_first == 0;
}

enum rig_status rig_engine_follow(struct rig_engine *e)
{
    RIG_ASSERT(e != NULL && !rig_engine_leads(e));
#ifdef RIG_HAVE_MPI
    return rig_ranks_mpi_follow(e->mpi_pool, !e->config.follow_unbounded);
#else
    return RIG_E_UNSUPPORTED;
#endif
}

void rig__ranks_report(const struct rig_engine *e)
{
    /* A failed pool ends the MPI job when destroyed, before the caller could print why. */
    if (rig__ranks_error(e)[0] != '\0')
        fprintf(stderr, "rig: process %d: %s\n", (int)e->rank_first, rig_engine_error(e));
}

/* The rank pool's failure across processes ("" when none or in-process). */
const char *rig__ranks_error(const struct rig_engine *e)
{
#ifdef RIG_HAVE_MPI
    if (e->mpi_pool != NULL) return rig_ranks_mpi_error(e->mpi_pool);
#endif
    (void)e;
    return "";
}
