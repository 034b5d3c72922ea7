/* prepare.c — turning the scheduler's choice of requests into a batch (docs/architecture.md §2
 * steps 5–7, 11): KV slots for the tokens to compute, the page-table and token-pool entries the
 * devices do not have yet, per-token and per-request metadata, CUDA-graph padding; then the lengths
 * advance as the batch is launched. */
#include <string.h>

#include "core/engine/engine_impl.h"

#define RIG__I32(b, off) ((int32_t *)((b)->staging + (off)))
#define RIG__F32(b, off) ((float *)((b)->staging + (off)))
#define RIG__I64(b, off) ((int64_t *)((b)->staging + (off)))

static int32_t rig__round_up(int32_t n, int32_t ps)
{
    return (n + ps - 1) / ps * ps;
}

/* Slots for positions [alloc_len, device_len): whole pages, written to the row mirror. */
static void rig__alloc_kv(struct rig_engine *e, struct rig_request *r)
{
    int32_t ps = e->cache.page_size;
    int32_t have = rig__round_up(r->alloc_len, ps);
    if (r->device_len > have) {
        int32_t pages = (r->device_len - have + ps - 1) / ps;
        int32_t *row = rig_table_page_row(&e->table, r->table_idx);
        RIG_ASSERT(have + pages * ps <= e->max_seq_len);
        enum rig_status status = rig_cache_alloc(&e->cache, pages, row + have);
        RIG_ASSERT_MSG(status == RIG_OK, "KV reservation violated: allocation failed");
    }
    if (r->device_len > r->alloc_len) r->alloc_len = r->device_len;
}

/* Queues the page-table entries and prompt tokens of `r` that the devices lack. */
static void rig__stage_writes(struct rig_engine *e, struct rig__batch *b, struct rig_request *r)
{
    const struct rig__meta_layout *l = &e->layout;
    int32_t ps = e->cache.page_size, L = e->max_seq_len;
    int32_t base = r->table_idx * L;
    const int32_t *row = rig_table_page_row(&e->table, r->table_idx);
    int32_t end = rig__round_up(r->alloc_len, ps);
    for (int32_t pos = r->synced_len; pos < end; pos++) {
        RIG_ASSERT(b->page_writes < l->writes_max);
        RIG__I32(b, l->pt_idx)[b->page_writes] = base + pos;
        RIG__I32(b, l->pt_val)[b->page_writes++] = row[pos];
    }
    if (end > r->synced_len) r->synced_len = end;
    int32_t tokens_end = r->device_len < r->input_len ? r->device_len : r->input_len;
    for (int32_t pos = r->tokens_synced; pos < tokens_end; pos++) {
        RIG_ASSERT(b->token_writes < l->writes_max);
        RIG__I32(b, l->tp_idx)[b->token_writes] = base + pos;
        RIG__I32(b, l->tp_val)[b->token_writes++] = r->tokens[pos];
    }
    if (tokens_end > r->tokens_synced) r->tokens_synced = tokens_end;
}

/* Page-table entries rewritten by cache inserts since the last batch (duplicates). */
static void rig__stage_rewrites(struct rig_engine *e, struct rig__batch *b)
{
    const struct rig__meta_layout *l = &e->layout;
    for (int32_t i = 0; i < e->rewrite_count; i++) {
        int32_t flat = e->rewrites[i];
        RIG_ASSERT(b->page_writes < l->writes_max);
        RIG__I32(b, l->pt_idx)[b->page_writes] = flat;
        RIG__I32(b, l->pt_val)[b->page_writes++] = e->table.page_table[flat];
    }
    e->rewrite_count = 0;
}

/* Request i's sampling extensions (uploaded only when the batch uses any), and what it asks
 * of the batch. */
static void rig__stage_extensions(struct rig_engine *e, struct rig__batch *b, int32_t i,
                                  const struct rig_sampling_params *s)
{
    const struct rig__meta_layout *l = &e->layout;
    RIG__F32(b, l->min_p)[i] = s->min_p;
    RIG__F32(b, l->repetition)[i] = s->repetition_penalty;
    RIG__F32(b, l->frequency)[i] = s->frequency_penalty;
    RIG__F32(b, l->presence)[i] = s->presence_penalty;
    b->min_p |= s->min_p > 0.0f;
    b->penalize |= s->repetition_penalty != 1.0f || s->frequency_penalty != 0.0f ||
                   s->presence_penalty != 0.0f;
    if (s->logprobs > b->top_logprobs) b->top_logprobs = s->logprobs;
}

/* Per-token and per-request metadata of request i (tokens from index t). */
static void rig__stage_request(struct rig_engine *e, struct rig__batch *b, int32_t i,
                               int32_t t)
{
    const struct rig__meta_layout *l = &e->layout;
    struct rig_request *r = b->reqs[i];
    int32_t L = e->max_seq_len;
    const int32_t *row = rig_table_page_row(&e->table, r->table_idx);
    int32_t n = rig_request_extend_len(r);
    for (int32_t k = 0; k < n; k++) {
        int32_t pos = r->cached_len + k;
        RIG__I32(b, l->input_idx)[t + k] = r->table_idx * L + pos;
        RIG__I32(b, l->positions)[t + k] = pos;
        RIG__I32(b, l->out_loc)[t + k] = row[pos];
    }
    bool produces = r->device_len >= r->input_len;
    b->produces[i] = produces;
    RIG__I32(b, l->table_idx)[i] = r->table_idx;
    RIG__I32(b, l->cu_q)[i + 1] = t + n;
    RIG__I32(b, l->kv_len)[i] = r->device_len;
    RIG__I32(b, l->last_idx)[i] = t + n - 1;
    RIG__F32(b, l->temperature)[i] = r->sampling.temperature;
    RIG__I32(b, l->top_k)[i] = r->sampling.top_k;
    RIG__F32(b, l->top_p)[i] = r->sampling.top_p;
    RIG__I64(b, l->seed)[i] = (int64_t)r->sample_seed;
    RIG__I32(b, l->sample_pos)[i] = r->device_len - r->input_len;
    rig__stage_extensions(e, b, i, &r->sampling);
    int32_t dummy = rig_table_dummy_row(&e->table) * L + 1 + i;
    RIG__I32(b, l->write_idx)[i] = produces ? r->table_idx * L + r->device_len : dummy;
    if (n > b->max_q_len) b->max_q_len = n;
    if (r->device_len > b->max_kv_len) b->max_kv_len = r->device_len;
}

void rig__stage_padding(struct rig_engine *e, struct rig__batch *b, int32_t from, int32_t to,
                        int32_t token_from)
{
    const struct rig__meta_layout *l = &e->layout;
    int32_t L = e->max_seq_len, dummy_row = rig_table_dummy_row(&e->table);
    RIG__I32(b, l->cu_q)[0] = 0;
    for (int32_t i = from; i < to; i++) {
        int32_t t = token_from + (i - from);
        RIG__I32(b, l->input_idx)[t] = dummy_row * L;
        RIG__I32(b, l->positions)[t] = 0;
        RIG__I32(b, l->out_loc)[t] = e->dummy_slot;
        RIG__I32(b, l->table_idx)[i] = dummy_row;
        RIG__I32(b, l->cu_q)[i + 1] = t + 1;
        RIG__I32(b, l->kv_len)[i] = 1;
        RIG__I32(b, l->last_idx)[i] = t;
        RIG__F32(b, l->temperature)[i] = 0.0f;
        RIG__I32(b, l->top_k)[i] = 1;
        RIG__F32(b, l->top_p)[i] = 1.0f;
        RIG__I64(b, l->seed)[i] = 0;
        RIG__I32(b, l->sample_pos)[i] = 0;
        RIG__I32(b, l->write_idx)[i] = dummy_row * L + 1 + i;
        RIG__F32(b, l->min_p)[i] = 0.0f;
        RIG__F32(b, l->repetition)[i] = 1.0f;
        RIG__F32(b, l->frequency)[i] = 0.0f;
        RIG__F32(b, l->presence)[i] = 0.0f;
    }
}

/* The smallest captured graph that holds `count` decode requests, or -1; for a batch with
 * sampling extensions, one of which an extended graph was captured. */
static int32_t rig__pick_graph(const struct rig_engine *e, const struct rig__batch *b)
{
    const struct rig__rank *rank = &e->ranks[0];
    if (b->phase != RIG_BATCH_DECODE) return -1;
    bool extended = rig__batch_extended(b);
    int32_t best = -1;
    for (int32_t g = 0; g < rank->graph_count; g++) {
        int32_t bs = rank->graphs[g].batch_size;
        if (extended && rank->graphs[g].extended == NULL) continue;
        if (bs >= b->count && (best < 0 || bs < rank->graphs[best].batch_size)) best = g;
    }
    return best;
}

/* The launch moves each request on: its computed positions become cached and, once the
 * prompt is complete, the token being sampled becomes the next input (Req.complete_one). */
static void rig__advance(struct rig_engine *e, struct rig__batch *b, int64_t now)
{
    for (int32_t i = 0; i < b->count; i++) {
        struct rig_request *r = b->reqs[i];
        bool prefill = i >= b->count - b->prefill_count;
        if (prefill) e->stats.prefill_tokens += rig_request_extend_len(r);
        else e->stats.decode_tokens += 1;
        r->inflight++;
        if (r->first_scheduled_ns < 0) {
            r->first_scheduled_ns = now;
            r->first_step = b->step;
            e->stats.cached_tokens += r->prompt_cached;
        }
        r->cached_len = r->device_len;
        if (r->device_len < r->input_len) continue; /* more chunks to come */
        r->device_len += 1;
        if (r->state == RIG_REQUEST_CHUNKED) r->state = RIG_REQUEST_RUNNING;
        bool running = rig_decode_contains(&e->decode, r);
        if (rig_request_remain_len(r) > 0 && !running) rig_decode_add(&e->decode, r);
        if (rig_request_remain_len(r) == 0 && running) rig_decode_remove(&e->decode, r);
    }
}

void rig__prepare(struct rig_engine *e, struct rig__batch *b)
{
    RIG_ASSERT(b->count > 0 && b->count <= e->layout.requests_max);
    b->page_writes = 0;
    b->token_writes = 0;
    b->max_q_len = 0;
    b->max_kv_len = 0;
    b->min_p = b->penalize = false;
    b->top_logprobs = -1;
    rig__stage_rewrites(e, b);
    int32_t t = 0;
    RIG__I32(b, e->layout.cu_q)[0] = 0;
    for (int32_t i = 0; i < b->count; i++) {
        struct rig_request *r = b->reqs[i];
        rig__alloc_kv(e, r);
        rig__stage_writes(e, b, r);
        rig__stage_request(e, b, i, t);
        t += rig_request_extend_len(r);
    }
    RIG_ASSERT(t <= e->layout.tokens_max);
    b->tokens = t;
    b->sample = false;
    for (int32_t i = 0; i < b->count; i++) b->sample |= b->produces[i];
    b->graph = rig__pick_graph(e, b);
    b->padded = b->graph >= 0 ? e->ranks[0].graphs[b->graph].batch_size : b->count;
    /* An extended graph computes every alternative: the host arrays take its row stride. */
    if (b->graph >= 0 && b->top_logprobs >= 0) b->top_logprobs = e->top_logprobs_max;
    rig__stage_padding(e, b, b->count, b->padded, t);
    b->padded_tokens = t + (b->padded - b->count);
    b->kv = rig_cache_sizes(&e->cache);
    rig__advance(e, b, b->host_schedule_ns);
}
