/* scheduler.c — the scheduler loop (docs/architecture.md §2 steps 3, 9–16): choosing the next batch
 * under the policy, processing a batch's sampled tokens (stop conditions, streaming, prefix
 * caching), ending requests exactly once and releasing their resources only when no in-flight batch
 * uses them; the normal and the overlap loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/engine_impl.h"
#include "core/engine/debug.h"

static int64_t rig__now(struct rig_engine *e)
{
    RIG_ASSERT(rig_engine_leads(e)); /* only process 0 schedules */
    return rig_hal_now_ns(e->devices[0]);
}

void rig__host_term(struct rig_engine *e, enum rig_host_term term,
                    const int64_t counts[RIG_HOST_FACTORS])
{
    rig__host_work(e, rig_host_model_ns(&e->config.host_costs.model, term, counts));
}

void rig__host_loop_add(struct rig_engine *e, enum rig_host_factor factor)
{
    RIG_ASSERT(factor == RIG_HOST_NEW || factor == RIG_HOST_FINISHED);
    int64_t counts[RIG_HOST_FACTORS] = {0};
    counts[factor] = 1;
    rig__host_term(e, RIG_HOST_LOOP, counts);
    e->loop_counts[factor]++;
}

/* KV slots running requests may still need, in whole pages. */
static int64_t rig__reserved(const struct rig_engine *e)
{
    int64_t total = 0;
    for (int32_t i = 0; i < e->decode.count; i++)
        total += rig_request_unallocated(e->decode.running[i], e->cache.page_size);
    return total;
}

/* Longest first: more KV positions first, then admission order (a total order, so the sort
 * is deterministic whatever qsort does with equal keys). */
static int rig__longer_first(const void *a, const void *b)
{
    const struct rig_request *x = *(const struct rig_request *const *)a;
    const struct rig_request *y = *(const struct rig_request *const *)b;
    if (x->device_len != y->device_len) return x->device_len > y->device_len ? -1 : 1;
    return x->admit_seq < y->admit_seq ? -1 : x->admit_seq > y->admit_seq;
}

/* The running requests as a batch's decode rows, in the configured order. */
static int32_t rig__decode_rows(const struct rig_engine *e, struct rig_request **rows)
{
    int32_t n = e->decode.count;
    memcpy(rows, e->decode.running, (size_t)n * sizeof *rows);
    if (e->config.decode_order == RIG_DECODE_ORDER_LONGEST_FIRST)
        qsort(rows, (size_t)n, sizeof *rows, rig__longer_first);
    return n;
}

/* Fills b->reqs (decode requests first, then prefill) under the policy; returns R. */
static int32_t rig__schedule(struct rig_engine *e, struct rig__batch *b)
{
    int32_t budget = e->config.prefill_budget;
    int32_t rmax = e->layout.requests_max;
    int64_t reserved = rig__reserved(e);
    int32_t decodes = 0, prefills = 0;
    enum rig_policy policy = e->config.policy;
    bool decode_now = e->decode.count > 0 &&
                      (policy == RIG_POLICY_DECODE_FIRST || policy == RIG_POLICY_MIXED);
    if (decode_now) decodes = rig__decode_rows(e, b->reqs);
    if (policy != RIG_POLICY_DECODE_FIRST || decodes == 0) {
        /* Table writes this batch may still carry: the layout's capacity less the pending
         * rewrites and one page per decode request. */
        e->prefill.writes_left = (int64_t)e->layout.writes_max - e->rewrite_count -
                                 (int64_t)decodes * e->cache.page_size;
        prefills = rig_prefill_schedule(&e->prefill, &e->cache, &e->table, budget - decodes,
                                        reserved, b->reqs + decodes, rmax - decodes);
    }
    if (decodes == 0 && prefills == 0 && e->decode.count > 0)
        decodes = rig__decode_rows(e, b->reqs); /* prefill_first with nothing admissible */
    b->count = decodes + prefills;
    b->prefill_count = prefills;
    b->phase = prefills == 0 ? RIG_BATCH_DECODE
               : decodes == 0 ? RIG_BATCH_PREFILL
                              : RIG_BATCH_MIXED;
    return b->count;
}

/* Why `r` stops after its newest token, or NONE. */
static enum rig_request_end rig__stop_reason(const struct rig_engine *e,
                                               const struct rig_request *r, int32_t token)
{
    if (!r->sampling.ignore_eos) {
        const struct rig_model_config *m = &e->config.model;
        for (int32_t i = 0; i < m->eos_count; i++)
            if (token == m->eos_token_ids[i]) return RIG_END_EOS;
    }
    for (int32_t i = 0; i < r->sampling.stop_token_count; i++)
        if (token == r->sampling.stop_token_ids[i]) return RIG_END_STOP_TOKEN;
    /* max_tokens 0 asked for "as many as the context allows": the limit is the context. */
    if (r->output_len >= r->max_device_len - r->input_len)
        return r->sampling.max_tokens == 0 ? RIG_END_CONTEXT : RIG_END_LENGTH;
    return RIG_END_NONE;
}

void rig__request_end(struct rig_engine *e, struct rig_request *r,
                      enum rig_request_end reason, const char *message)
{
    RIG_ASSERT_MSG(rig_request_live(r), "a request ended twice");
    r->state = reason == RIG_END_ABORT ? RIG_REQUEST_ABORTED : RIG_REQUEST_FINISHED;
    r->finish_reason = reason;
    r->finish_ns = rig__now(e);
    e->ended++;
    if (reason == RIG_END_ABORT) e->stats.aborted++;
    else e->stats.finished++;
    if (e->observer.on_finish) {
        struct rig_request_result res = {
            r->uid, reason, message ? message : "", r->input_len, r->prompt_cached,
            r->output_len, r->tokens + r->input_len, r->token_times_ns, r->arrival_ns,
            r->first_scheduled_ns, r->first_token_ns, r->finish_ns, r->first_step,
            r->last_step};
        e->observer.on_finish(e->observer.ctx, &res);
    }
    RIG_ASSERT(e->releasing_count < e->config.max_requests);
    e->releasing[e->releasing_count++] = r;
}

/* Gives back a request's row, pages and lock (once, when nothing in flight uses it). */
static void rig__release(struct rig_engine *e, struct rig_request *r)
{
    RIG_ASSERT(r->inflight == 0 || rig_plant_on(e->config.debug_plant, RIG_PLANT_RELEASE_INFLIGHT));
    RIG_ASSERT(!r->released);
    if (r->table_idx >= 0) {
        int32_t known = r->input_len + r->output_len - 1;
        int32_t cached = r->cached_len < known ? r->cached_len : known;
        int32_t *row = rig_table_page_row(&e->table, r->table_idx);
        rig_cache_insert(&e->cache, r->tokens, row, cached, r->alloc_len, r->handle, true, NULL,
                         e->scratch_rewritten);
        int32_t L = e->max_seq_len, kept = 0;
        for (int32_t i = 0; i < e->rewrite_count; i++) /* its pending rewrites are moot */
            if (e->rewrites[i] / L != r->table_idx) e->rewrites[kept++] = e->rewrites[i];
        e->rewrite_count = kept;
        rig_table_release(&e->table, r->table_idx);
        r->table_idx = -1;
        r->has_handle = false;
    }
    r->released = true;
    rig_request_pool_remove(&e->pool, r);
    rig__host_loop_add(e, RIG_HOST_FINISHED);
}

static void rig__release_ready(struct rig_engine *e)
{
    int32_t kept = 0;
    for (int32_t i = 0; i < e->releasing_count; i++) {
        struct rig_request *r = e->releasing[i];
        bool planted = rig_plant_on(e->config.debug_plant, RIG_PLANT_RELEASE_INFLIGHT);
        if (r->inflight == 0 || planted) rig__release(e, r);
        else e->releasing[kept++] = r;
    }
    e->releasing_count = kept;
}

/* After a request's prompt is complete, its prefix joins the cache (still locked by it). */
static void rig__cache_prompt(struct rig_engine *e, struct rig_request *r)
{
    int32_t *row = rig_table_page_row(&e->table, r->table_idx);
    struct rig_radix_handle fresh;
    int32_t n = rig_cache_insert(&e->cache, r->tokens, row, r->input_len, r->alloc_len,
                                 r->handle, false, &fresh, e->scratch_rewritten);
    r->handle = fresh;
    e->stats.row_rewrites += n;
    int32_t base = r->table_idx * e->max_seq_len;
    for (int32_t i = 0; i < n; i++) {
        RIG_ASSERT(e->rewrite_count < e->layout.writes_max);
        e->rewrites[e->rewrite_count++] = base + e->scratch_rewritten[i];
    }
}

/* The logprobs of row i of batch b, for a request that asked for them. */
static void rig__emit_logprobs(struct rig_engine *e, const struct rig__batch *b, int32_t i,
                               const struct rig_request *r, int32_t token)
{
    int32_t wanted = r->sampling.logprobs;
    if (wanted < 0 || !e->observer.on_logprobs) return;
    RIG_ASSERT(wanted <= b->top_logprobs);
    size_t row = (size_t)i * (size_t)b->top_logprobs;
    e->observer.on_logprobs(e->observer.ctx, r->uid, r->output_len - 1, token,
                            b->logprob_out[i], wanted, b->top_ids_out + row,
                            b->top_logprobs_out + row);
}

/* Appends the token of row i of batch b to a running request and ends it when a stop
 * condition holds. */
static void rig__accept_token(struct rig_engine *e, const struct rig__batch *b, int32_t i,
                              int64_t now)
{
    struct rig_request *r = b->reqs[i];
    int32_t token = b->tokens_out[i];
    bool prefill = i >= b->count - b->prefill_count;
    RIG_ASSERT(r->input_len + r->output_len < e->max_seq_len);
    r->tokens[r->input_len + r->output_len] = token;
    r->token_times_ns[r->output_len] = now;
    if (r->output_len == 0) r->first_token_ns = now;
    r->output_len++;
    if (e->observer.on_token)
        e->observer.on_token(e->observer.ctx, r->uid, r->output_len - 1, token, now);
    rig__emit_logprobs(e, b, i, r, token);
    enum rig_request_end reason = rig__stop_reason(e, r, token);
    if (reason != RIG_END_NONE) {
        rig_decode_remove(&e->decode, r);
        rig__request_end(e, r, reason, NULL);
    } else if (prefill) {
        rig__cache_prompt(e, r);
    }
}

static void rig__emit_step(struct rig_engine *e, const struct rig__batch *b, int32_t slot)
{
    if (!e->observer.on_step) return;
    const struct rig__rank *rank = &e->ranks[0];
    int64_t ps = e->cache.page_size;
    struct rig_step_record rec;
    memset(&rec, 0, sizeof rec);
    rec.step = b->step;
    rec.phase = b->phase;
    rec.batch_size = b->count;
    rec.prefill_requests = b->prefill_count;
    rec.tokens = b->tokens;
    rec.padded_size = b->padded;
    rec.graph_used = b->graph >= 0;
    rec.host_schedule_ns = b->host_schedule_ns;
    rec.host_launch_ns = b->host_launch_ns;
    rec.host_schedule_work_ns = b->host_schedule_work_ns;
    rec.host_prepare_work_ns = b->host_prepare_work_ns;
    rec.host_issue_work_ns = b->host_issue_work_ns;
    rec.host_process_ns = b->host_process_ns;
    rec.host_loop_ns = b->host_loop_ns;
    memcpy(rec.host_counts, b->host_counts, sizeof rec.host_counts);
    rec.host_loop_idle = b->host_loop_idle;
    rig_hal_event_elapsed_ns(rank->origin, rank->start[slot], &rec.device_start_ns);
    rig_hal_event_elapsed_ns(rank->origin, rank->end[slot], &rec.device_end_ns);
    rec.pages_free = b->kv.free / ps;
    rec.pages_evictable = b->kv.evictable / ps;
    rec.pages_locked = b->kv.protected_ / ps;
    rec.pages_owned = b->kv.owned / ps;
    for (int32_t i = 0; i < b->count; i++) e->scratch_uids[i] = b->reqs[i]->uid;
    rec.uids = e->scratch_uids;
    e->observer.on_step(e->observer.ctx, &rec);
}

/* A row whose logits were not finite (the sampler's -1): the step fails, naming it. */
static enum rig_status rig__nonfinite(struct rig_engine *e, const struct rig__batch *b,
                                      const struct rig_request *r)
{
    snprintf(e->error, sizeof e->error,
             "step %lld: request %llu: the logits are not finite (NaN or Inf): non-finite "
             "weights, or an overflow in the forward", (long long)b->step,
             (unsigned long long)r->uid);
    return RIG_E_RANGE;
}

/* Waits for a launched batch and processes its sampled tokens. */
static enum rig_status rig__process(struct rig_engine *e, int32_t slot)
{
    struct rig__batch *b = &e->batches[slot];
    RIG_ASSERT(b->active);
    enum rig_status status = rig_hal_event_synchronize(e->ranks[0].done[slot]);
    if (status != RIG_OK) return status;
    int64_t process_start = rig__now(e);
    int64_t *counts = b->host_counts[RIG_HOST_PROCESS];
    int64_t ended_before = e->ended;
    rig__host_term(e, RIG_HOST_PROCESS, counts); /* FINISHED is 0 until the tokens are in */
    int64_t now = rig__now(e);
    for (int32_t i = 0; i < b->count; i++) {
        struct rig_request *r = b->reqs[i];
        RIG_ASSERT(r->inflight > 0);
        r->inflight--;
        /* A non-final chunk samples nothing; an ended request's extra token is dropped. */
        if (!b->produces[i] || r->state != RIG_REQUEST_RUNNING) continue;
        if (b->tokens_out[i] < 0) return rig__nonfinite(e, b, r);
        r->last_step = b->step;
        rig__accept_token(e, b, i, now);
    }
    if (b->graph >= 0) e->stats.graph_replays++;
    int64_t ended[RIG_HOST_FACTORS] = {[RIG_HOST_FINISHED] = e->ended - ended_before};
    counts[RIG_HOST_FINISHED] = ended[RIG_HOST_FINISHED];
    rig__host_term(e, RIG_HOST_PROCESS, ended);
    e->processed_end_ns = rig__now(e); /* the step record below is between-steps work */
    b->host_process_ns = e->processed_end_ns - process_start;
    rig__emit_step(e, b, slot);
    b->active = false;
    /* the next launch's window begins (rig_step_record host_loop_ns): the step record and the
     * loop's own work */
    int64_t loop[RIG_HOST_FACTORS] = {1, b->count, b->tokens, 0, 0};
    memcpy(e->loop_counts, loop, sizeof loop);
    e->loop_idle = false;
    rig__host_term(e, RIG_HOST_LOOP, loop);
    return RIG_OK;
}

/* Just after batch `slot` was issued: was the other slot's batch, still unprocessed, also
 * still running on the device? That is the overlap loop working: the host prepared and
 * issued this batch while the previous one ran. */
static void rig__count_ahead(struct rig_engine *e, int32_t slot)
{
    int32_t previous = (slot + RIG__SLOTS - 1) % RIG__SLOTS;
    if (!e->batches[previous].active) return;
    e->stats.launches_behind_inflight++;
    bool ended = true;
    if (rig_hal_event_query(e->ranks[0].end[previous], &ended) == RIG_OK && !ended)
        e->stats.launches_ahead++;
}

/* What the batch just chosen carries, for the host model's SCHEDULE, PREPARE and PROCESS
 * terms (hal/host_model.h; PROCESS's ended requests are counted when it is processed). */
static void rig__batch_counts(struct rig__batch *b)
{
    int64_t tokens = 0, fresh = 0;
    for (int32_t i = 0; i < b->count; i++) {
        tokens += rig_request_extend_len(b->reqs[i]);
        fresh += b->reqs[i]->first_scheduled_ns < 0;
    }
    RIG_ASSERT(tokens >= b->count);
    const int64_t counts[RIG_HOST_FACTORS] = {1, b->count, tokens, fresh, 0};
    for (int32_t t = RIG_HOST_SCHEDULE; t <= RIG_HOST_PROCESS; t++)
        memcpy(b->host_counts[t], counts, sizeof counts);
}

/* The window from the latest processing to this launch: its LOOP counts go to the batch's
 * record (none where host_loop_ns is 0 by definition, before the first processing). A second
 * launch in the same window (overlap, after a launch with nothing to process) spans the
 * first one's host time as well: not the loop's alone. */
static void rig__take_loop(struct rig_engine *e, struct rig__batch *b)
{
    bool measured = e->processed_end_ns >= 0;
    for (int32_t f = 0; f < RIG_HOST_FACTORS; f++)
        b->host_counts[RIG_HOST_LOOP][f] = measured ? e->loop_counts[f] : 0;
    b->host_loop_idle = measured && e->loop_idle;
    e->loop_idle = true; /* for a later launch in this window */
}

/* Schedules, prepares and launches the next batch into `slot`; false when none. */
static enum rig_status rig__launch_next(struct rig_engine *e, int32_t slot, bool *launched)
{
    struct rig__batch *b = &e->batches[slot];
    RIG_ASSERT(!b->active);
    *launched = false;
    int64_t launch_start = rig__now(e);
    const int64_t once[RIG_HOST_FACTORS] = {[RIG_HOST_BASE] = 1};
    rig__host_term(e, RIG_HOST_SCHEDULE, once);
    if (rig__schedule(e, b) == 0) {
        e->loop_idle = true; /* host time in the window that is not the loop's */
        return RIG_OK;
    }
    rig__batch_counts(b);
    int64_t chosen[RIG_HOST_FACTORS];
    memcpy(chosen, b->host_counts[RIG_HOST_SCHEDULE], sizeof chosen);
    chosen[RIG_HOST_BASE] = 0; /* paid above */
    rig__host_term(e, RIG_HOST_SCHEDULE, chosen);
    b->host_schedule_ns = rig__now(e);
    b->step = e->next_step;
    b->host_loop_ns = e->processed_end_ns >= 0 && launch_start > e->processed_end_ns
                          ? launch_start - e->processed_end_ns
                          : 0;
    rig__take_loop(e, b);
    /* The staging block of this slot was last read by the uploads of batch step − 2. */
    for (int32_t r = e->rank_first; r < e->rank_first + e->rank_count; r++) {
        if (!e->ranks[r].done_recorded[slot]) continue;
        enum rig_status s = rig_hal_event_synchronize(e->ranks[r].uploaded[slot]);
        if (s != RIG_OK) return s;
    }
    rig__host_upload_wait_passed(e); /* ranks in other processes wait there themselves */
    int64_t prepare_ns = rig__now(e);
    /* the modelled cost of preparing (a simulator's; 0 on a GPU, whose clock is the wall's),
     * where the engine prepares: after the staging block is free */
    rig__host_term(e, RIG_HOST_PREPARE, b->host_counts[RIG_HOST_PREPARE]);
    rig__prepare(e, b);
    RIG_ASSERT(b->tokens == b->host_counts[RIG_HOST_PREPARE][RIG_HOST_TOKENS]);
    int64_t issue_ns = rig__now(e);
    enum rig_status status = rig__ranks_run(e, RIG_RANK_JOB_LAUNCH, slot);
    if (status != RIG_OK) return status;
    e->stats.launch_host_ns += rig__now(e) - issue_ns;
    b->host_schedule_work_ns = b->host_schedule_ns - launch_start;
    b->host_prepare_work_ns = issue_ns - prepare_ns;
    b->host_issue_work_ns = rig__now(e) - issue_ns;
    rig__count_ahead(e, slot);
    b->active = true;
    b->host_launch_ns = rig__now(e) - launch_start;
    e->next_step++;
    *launched = true;
    return RIG_OK;
}

static void rig__print_violation(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "rig: invariant violated: %s\n", msg);
}

enum rig_status rig_engine_step(struct rig_engine *e, bool *progress)
{
    int32_t slot = (int32_t)(e->next_step % RIG__SLOTS);
    int32_t previous = (slot + RIG__SLOTS - 1) % RIG__SLOTS;
    bool launched = false, processed = false;
    enum rig_status status = rig__launch_next(e, slot, &launched);
    if (status != RIG_OK) return status;
    if (e->config.overlap) {
        /* Batch N runs while batch N−1's results are processed. */
        if (e->batches[previous].active) {
            status = rig__process(e, previous);
            processed = true;
        }
    } else if (launched) {
        status = rig__process(e, slot);
        processed = true;
    }
    if (status != RIG_OK) return status;
    size_t before = (size_t)e->releasing_count;
    rig__release_ready(e);
    e->stats.steps++;
    if (e->config.check_invariants) {
        int32_t violations = rig_engine_check(e, rig__print_violation, NULL);
        RIG_ASSERT_MSG(violations == 0, "engine invariants violated (see above)");
    }
    if (progress) *progress = launched || processed || before != (size_t)e->releasing_count;
    return RIG_OK;
}

bool rig_engine_idle(const struct rig_engine *e)
{
    for (int32_t s = 0; s < RIG__SLOTS; s++)
        if (e->batches[s].active) return false;
    return e->prefill.count == 0 && e->decode.count == 0 && e->releasing_count == 0;
}
