/* run.c — one swarm run: the case on the engine, with every check (see swarm.h).
 *
 * The driver submits each request when the virtual clock reaches its arrival (jumping the
 * clock when the engine is idle), fires the planned aborts between steps during the fault
 * phase, and after the fault phase clears the faults and gives the drain a bound of steps:
 * 2 × Σ(prompt chunks + output tokens + 2) over the requests not yet ended, + 64. Each step
 * makes progress for at least one request (a chunk or a token each), so an engine that needs
 * more is starving someone or deadlocked.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/driver.h"
#include "core/harness/swarm/plant.h"
#include "core/harness/swarm/swarm.h"

enum { RIG__WAITING = 0, RIG__LIVE = 1, RIG__ENDED = 2 };

/* Iterations are steps plus idle jumps of the clock (at most one per arrival). */
#define RIG__ITERATIONS_MAX ((int64_t)1 << 22)

struct rig__drive {
    const struct rig_swarm_case *c;
    struct rig_swarm_result *out;
    struct rig_engine *engine;
    bool timing_only;
    int32_t eos_id;            /* the model's end-of-sequence token */
    int64_t step;
    uint8_t state[RIG_SWARM_REQUESTS_MAX];
    int32_t ends[RIG_SWARM_REQUESTS_MAX];
    int32_t outputs[RIG_SWARM_REQUESTS_MAX];          /* tokens streamed */
    enum rig_request_end reason[RIG_SWARM_REQUESTS_MAX];
    int32_t tokens[RIG_SWARM_REQUESTS_MAX][RIG_SWARM_SEQ_LEN_MAX]; /* streamed, for equivalence */
    int64_t abort_issued_ns[RIG_SWARM_REQUESTS_MAX]; /* -1: no abort issued */
    int32_t next;              /* the next request to submit (by arrival) */
    bool fault_phase;
    int64_t drain_end;         /* step at which the drain fails; -1 before it starts */
    int64_t drain_bound;
    int64_t iterations;        /* driver iterations (feeds) so far */
    int64_t origin_ns;         /* the engine's clock when it was ready */
    int64_t *abort_log;        /* (request_count) where rig_swarm_abort_times wants each abort
                                  as it is issued, relative to origin_ns; NULL: nowhere */
    int64_t *origin_log;       /* where rig_swarm_abort_times wants origin_ns; NULL: nowhere */
};

static void rig__fail(struct rig__drive *d, enum rig_swarm_verdict verdict, const char *fmt, ...)
{
    if (d->out->verdict != RIG_SWARM_PASS) return; /* the first failure is the one to report */
    d->out->verdict = verdict;
    d->out->step_failed = d->step;
    va_list args;
    va_start(args, fmt);
    vsnprintf(d->out->message, sizeof d->out->message, fmt, args);
    va_end(args);
}

static void rig__on_token(void *ctx, uint64_t uid, int32_t index, int32_t token, int64_t t_ns)
{
    struct rig__drive *d = ctx;
    (void)t_ns;
    if (uid >= (uint64_t)d->c->request_count) {
        rig__fail(d, RIG_SWARM_LIFECYCLE, "token for unknown request %llu",
                  (unsigned long long)uid);
        return;
    }
    if (d->state[uid] != RIG__LIVE || index != d->outputs[uid] ||
        index >= RIG_SWARM_SEQ_LEN_MAX) {
        rig__fail(d, RIG_SWARM_LIFECYCLE, "request %llu: token %d streamed %s (expected index "
                  "%d)", (unsigned long long)uid, index,
                  d->state[uid] == RIG__ENDED ? "after its end" : "out of order",
                  d->outputs[uid]);
        return;
    }
    if (token < 0 || token >= d->c->vocab_size)
        rig__fail(d, RIG_SWARM_LIFECYCLE, "request %llu: token %d outside the vocabulary",
                  (unsigned long long)uid, token);
    d->tokens[uid][index] = token;
    d->outputs[uid]++;
    d->out->tokens++;
}

/* Why the request should stop after output token `i` (an oracle independent of the
 * scheduler's), or RIG_END_NONE. */
static enum rig_request_end rig__expected_stop(const struct rig__drive *d, int32_t uid,
                                               int32_t i)
{
    const struct rig_swarm_request *q = &d->c->requests[uid];
    int32_t token = d->tokens[uid][i];
    if (!q->ignore_eos && token == d->eos_id) return RIG_END_EOS;
    for (int32_t k = 0; k < q->stop_count; k++)
        if (token == q->stop_ids[k]) return RIG_END_STOP_TOKEN;
    if (q->max_tokens > 0 && i + 1 >= q->max_tokens) return RIG_END_LENGTH;
    if (q->max_tokens == 0 && q->prompt_len + i + 1 >= d->c->max_seq_len) return RIG_END_CONTEXT;
    return RIG_END_NONE;
}

/* The end reason and the times of an ended request agree with its token stream. */
static void rig__check_end(struct rig__drive *d, int32_t uid, const struct rig_request_result *r)
{
    int32_t n = d->outputs[uid];
    for (int32_t i = 0; i + 1 < n; i++) {
        enum rig_request_end early = rig__expected_stop(d, uid, i);
        if (early != RIG_END_NONE)
            rig__fail(d, RIG_SWARM_LIFECYCLE, "request %d should have stopped (%s) at output "
                      "%d of %d", uid, rig_request_end_name(early), i, n);
    }
    bool generated = r->reason != RIG_END_ABORT && r->reason != RIG_END_REJECTED;
    enum rig_request_end last = n > 0 ? rig__expected_stop(d, uid, n - 1) : RIG_END_NONE;
    if (generated && last != r->reason)
        rig__fail(d, RIG_SWARM_LIFECYCLE, "request %d ended as %s after %d tokens; its tokens "
                  "say %s", uid, rig_request_end_name(r->reason), n, rig_request_end_name(last));
    if (r->reason == RIG_END_REJECTED) return;
    bool ordered = r->arrival_ns <= r->finish_ns &&
                   (r->first_scheduled_ns < 0 || r->arrival_ns <= r->first_scheduled_ns) &&
                   (r->first_token_ns < 0 || (r->first_scheduled_ns >= 0 &&
                                              r->first_scheduled_ns <= r->first_token_ns &&
                                              r->first_token_ns <= r->finish_ns));
    for (int32_t i = 1; i < r->output_len && ordered; i++)
        ordered = r->token_times_ns[i - 1] <= r->token_times_ns[i];
    if (!ordered)
        rig__fail(d, RIG_SWARM_LIFECYCLE, "request %d: times out of order (arrival %lld, "
                  "scheduled %lld, first token %lld, finish %lld)", uid,
                  (long long)r->arrival_ns, (long long)r->first_scheduled_ns,
                  (long long)r->first_token_ns, (long long)r->finish_ns);
}

static void rig__on_finish(void *ctx, const struct rig_request_result *r)
{
    struct rig__drive *d = ctx;
    if (r->uid >= (uint64_t)d->c->request_count) {
        rig__fail(d, RIG_SWARM_LIFECYCLE, "end of unknown request %llu",
                  (unsigned long long)r->uid);
        return;
    }
    int32_t uid = (int32_t)r->uid;
    d->ends[uid]++;
    d->reason[uid] = r->reason;
    if (d->ends[uid] > 1)
        rig__fail(d, RIG_SWARM_LIFECYCLE, "request %d ended %d times (now %s)", uid,
                  d->ends[uid], rig_request_end_name(r->reason));
    if (r->reason != RIG_END_REJECTED && r->output_len != d->outputs[uid])
        rig__fail(d, RIG_SWARM_LIFECYCLE, "request %d ended (%s) with output_len %d but %d "
                  "tokens streamed", uid, rig_request_end_name(r->reason), r->output_len,
                  d->outputs[uid]);
    const struct rig_swarm_request *q = &d->c->requests[uid];
    if (r->reason == RIG_END_LENGTH && q->max_tokens > 0 && r->output_len != q->max_tokens)
        rig__fail(d, RIG_SWARM_LIFECYCLE, "request %d ended by length after %d of %d tokens",
                  uid, r->output_len, q->max_tokens);
    if (d->ends[uid] == 1) rig__check_end(d, uid, r);
    if (r->reason == RIG_END_REJECTED) d->out->rejected++;
    else if (r->reason == RIG_END_ABORT) d->out->aborted++;
    else d->out->finished++;
    d->state[uid] = RIG__ENDED;
}

static void rig__report(void *ctx, const char *message)
{
    struct rig__drive *d = ctx;
    rig__fail(d, RIG_SWARM_INVARIANT, "%s", message);
}

static void rig__config(const struct rig_swarm_case *c, bool timing_only,
                        struct rig_engine_config *e)
{
    rig_engine_config_default(e);
    enum rig_status s = rig_model_config_preset("tiny", &e->model);
    RIG_ASSERT(s == RIG_OK);
    e->model.vocab_size = c->vocab_size;
    e->backend = "sim";
    e->device.timing_only = timing_only;
    e->device.seed = c->seed;
    e->seed = c->seed;
    e->tp_size = c->tp_size;
    e->num_pages = c->num_pages;
    e->page_size = c->page_size;
    e->max_running_req = c->max_running_req;
    e->max_seq_len = c->max_seq_len;
    e->prefill_budget = c->prefill_budget;
    e->max_requests = c->max_requests;
    e->cache_type = c->cache;
    e->policy = c->policy;
    e->overlap = c->overlap;
    e->cuda_graphs = c->graphs;
    e->cuda_graph_max_bs = c->graph_max_bs;
    e->check_invariants = false; /* the swarm runs the checker itself, to report not abort */
    e->debug_plant = rig_debug_plant;
}

static struct rig_sampling_params rig__sampling(const struct rig_swarm_request *q)
{
    struct rig_sampling_params p = rig_sampling_default();
    p.max_tokens = q->max_tokens;
    p.temperature = q->temperature;
    p.top_k = q->top_k;
    p.ignore_eos = q->ignore_eos;
    p.stop_token_count = q->stop_count;
    for (int32_t i = 0; i < q->stop_count; i++) p.stop_token_ids[i] = q->stop_ids[i];
    return p;
}

/* Creates the engine; with a start-up fault, first a creation that must fail cleanly (or
 * succeed when the fault lies beyond the allocations the engine makes). */
static enum rig_status rig__create(struct rig__drive *d, const struct rig_engine_config *e,
                                   const struct rig_engine_observer *observer)
{
    char error[512] = "";
    if (d->c->fail_alloc_at >= 0) {
        struct rig_hal_faults faults = {.fail_alloc_at = d->c->fail_alloc_at,
                                        .stall_op_at = -1};
        enum rig_status set = rig_hal_set_open_faults("sim", &faults);
        RIG_ASSERT(set == RIG_OK);
        struct rig_engine *doomed = NULL;
        enum rig_status s = rig_engine_create(e, observer, &doomed, error, sizeof error);
        rig_hal_set_open_faults("sim", NULL);
        if (s == RIG_OK) rig_engine_destroy(doomed);
        else if (s != RIG_E_DEVICE_MEMORY)
            rig__fail(d, RIG_SWARM_ERROR, "engine start with allocation %lld failing: %s (%s)",
                      (long long)d->c->fail_alloc_at, rig_status_message(s), error);
    }
    enum rig_status s = rig_engine_create(e, observer, &d->engine, error, sizeof error);
    if (s != RIG_OK) rig__fail(d, RIG_SWARM_ERROR, "engine start: %s", error);
    return s;
}

/* Sets the in-loop fault plan: any device allocation fails (the step loop must make none)
 * and, during the fault phase, the planned stall. */
static void rig__set_faults(struct rig__drive *d, bool fault_phase)
{
    for (int32_t r = 0; r < d->c->tp_size; r++) {
        struct rig_hal_faults f = {.fail_alloc_at = 0, .stall_op_at = -1, .stall_ns = 0};
        if (fault_phase && r == d->c->stall_rank && d->c->stall_op_at >= 0) {
            f.stall_op_at = d->c->stall_op_at;
            f.stall_ns = d->c->stall_ns;
        }
        enum rig_status s = rig_hal_set_faults(rig_engine_device(d->engine, r), &f);
        RIG_ASSERT(s == RIG_OK);
    }
}

/* Aborts `uid`, then again: the second must find no live request (ends exactly once). */
static void rig__abort(struct rig__drive *d, int32_t uid)
{
    if (rig_engine_abort(d->engine, (uint64_t)uid) != RIG_OK) return;
    d->abort_issued_ns[uid] = rig_engine_now_ns(d->engine);
    if (d->abort_log != NULL) d->abort_log[uid] = d->abort_issued_ns[uid] - d->origin_ns;
    enum rig_status again = rig_engine_abort(d->engine, (uint64_t)uid);
    if (again != RIG_E_NOT_FOUND)
        rig__fail(d, RIG_SWARM_LIFECYCLE, "request %d aborted twice: %s", uid,
                  rig_status_message(again));
}

/* Whether request `uid`'s planned abort is due now (the request is live). */
static bool rig__abort_due(const struct rig__drive *d, int32_t uid)
{
    const struct rig_swarm_request *q = &d->c->requests[uid];
    const struct rig_request *r = rig_engine_find(d->engine, (uint64_t)uid);
    if (r == NULL || d->abort_issued_ns[uid] >= 0) return false;
    switch (q->abort) {
    case RIG_SWARM_ABORT_NONE: return false;
    case RIG_SWARM_ABORT_AT_TIME: return rig_engine_now_ns(d->engine) >= q->abort_ns;
    case RIG_SWARM_ABORT_QUEUED: return r->state == RIG_REQUEST_PENDING;
    case RIG_SWARM_ABORT_MID_CHUNK: return r->state == RIG_REQUEST_CHUNKED;
    case RIG_SWARM_ABORT_NO_FIRST_TOKEN:
        return r->first_scheduled_ns >= 0 && d->outputs[uid] == 0;
    case RIG_SWARM_ABORT_MID_DECODE: return d->outputs[uid] >= q->abort_after;
    case RIG_SWARM_ABORT_AT_FINISH:
        return r->state == RIG_REQUEST_RUNNING && r->max_device_len - r->device_len <= 1;
    default: RIG_UNREACHABLE();
    }
    return false;
}

/* Fault-phase probes of submission: a token outside the vocabulary, then (once request `uid`
 * is live) its uid again — both must be refused as RIG_E_INVALID and change nothing. */
static void rig__probe_submit(struct rig__drive *d, const struct rig_submit *good, bool live)
{
    struct rig_engine_stats before, after;
    rig_engine_stats(d->engine, &before);
    int32_t bad_prompt[2] = {good->prompt[0], rig_engine_get_config(d->engine)->model.vocab_size};
    struct rig_submit bad = *good;
    bad.uid = good->uid + 1000;
    bad.prompt = bad_prompt;
    bad.prompt_len = 2;
    char reason[256] = "";
    enum rig_status s = rig_engine_submit(d->engine, &bad, reason, sizeof reason);
    if (s != RIG_E_INVALID)
        rig__fail(d, RIG_SWARM_LIFECYCLE, "a token outside the vocabulary: %s, not refused",
                  rig_status_message(s));
    if (live && (s = rig_engine_submit(d->engine, good, reason, sizeof reason)) != RIG_E_INVALID)
        rig__fail(d, RIG_SWARM_LIFECYCLE, "uid %llu submitted twice: %s, not refused",
                  (unsigned long long)good->uid, rig_status_message(s));
    rig_engine_stats(d->engine, &after);
    if (after.submitted != before.submitted || after.pending != before.pending)
        rig__fail(d, RIG_SWARM_LIFECYCLE, "a refused submission changed the engine");
}

/* Submits request `uid`. Returns RIG_E_CAPACITY when the engine is full (retry later). */
static enum rig_status rig__submit(struct rig__drive *d, int32_t uid, bool fault_phase)
{
    const struct rig_swarm_request *q = &d->c->requests[uid];
    struct rig_submit submit = {(uint64_t)uid, d->c->tokens + q->prompt_offset, q->prompt_len,
                                rig__sampling(q), q->arrival_ns};
    char reason[256] = "";
    d->state[uid] = RIG__LIVE; /* before the call: a rejection ends it inside */
    enum rig_status s = rig_engine_submit(d->engine, &submit, reason, sizeof reason);
    if (s == RIG_E_CAPACITY) {
        d->state[uid] = RIG__WAITING;
        return s;
    }
    if (s == RIG_E_RANGE && d->state[uid] != RIG__ENDED)
        rig__fail(d, RIG_SWARM_LIFECYCLE, "request %d rejected without an end: %s", uid,
                  reason);
    if (s != RIG_OK && s != RIG_E_RANGE)
        rig__fail(d, RIG_SWARM_ERROR, "submit %d: %s (%s)", uid, rig_status_message(s), reason);
    if (fault_phase && uid % 5 == 2) rig__probe_submit(d, &submit, s == RIG_OK);
    return s;
}

/* Submits what has arrived (until the engine is full); an AT_TIME abort due before the
 * arrival means never submitted; fires the aborts due. */
static void rig__feed_due(struct rig__drive *d, int64_t now)
{
    for (; d->next < d->c->request_count && d->c->requests[d->next].arrival_ns <= now;
         d->next++) {
        const struct rig_swarm_request *q = &d->c->requests[d->next];
        if (d->fault_phase && q->abort == RIG_SWARM_ABORT_AT_TIME &&
            q->abort_ns < q->arrival_ns) {
            d->state[d->next] = RIG__ENDED; /* the client left before sending it */
            d->ends[d->next] = 1;
            if (d->abort_log != NULL) /* before the arrival, as a scenario says "never sent" */
                d->abort_log[d->next] =
                    q->abort_ns > d->origin_ns ? q->abort_ns - d->origin_ns : 0;
            d->out->aborted++;
            continue;
        }
        if (rig__submit(d, d->next, d->fault_phase) == RIG_E_CAPACITY) break;
    }
    if (!d->fault_phase) return;
    for (int32_t uid = 0; uid < d->next; uid++)
        if (d->state[uid] == RIG__LIVE && rig__abort_due(d, uid)) rig__abort(d, uid);
}

/* Steps the drain may take: see the file comment. */
static int64_t rig__drain_bound(const struct rig__drive *d)
{
    const struct rig_swarm_case *c = d->c;
    int64_t steps = 64;
    for (int32_t i = 0; i < c->request_count; i++) {
        if (d->state[i] == RIG__ENDED) continue;
        const struct rig_swarm_request *q = &c->requests[i];
        int32_t out = q->max_tokens > 0 ? q->max_tokens : c->max_seq_len;
        steps += 2 * ((q->prompt_len + c->prefill_budget - 1) / c->prefill_budget + out + 2);
    }
    return steps;
}

static void rig__check(struct rig__drive *d)
{
    if (rig_engine_check(d->engine, rig__report, d) > 0 && d->out->verdict == RIG_SWARM_PASS)
        rig__fail(d, RIG_SWARM_INVARIANT, "invariant violated");
}

/* Arrival source: ends the fault phase when its steps are done (and sets the drain's bound),
 * submits and aborts what is due, and fails a drain past its bound. A failure stops the run
 * (the verdict says why). */
static enum rig_status rig__feed(void *ctx, struct rig_engine *engine, int64_t now_ns,
                                 char *error, size_t error_len)
{
    struct rig__drive *d = ctx;
    (void)error;
    (void)error_len;
    if (d->iterations++ == RIG__ITERATIONS_MAX) {
        rig__fail(d, RIG_SWARM_LIVENESS, "the run did not end");
        return RIG_E_STATE;
    }
    if (d->fault_phase && d->step >= d->c->fault_steps) {
        d->fault_phase = false;
        rig__set_faults(d, false);
    }
    if (!d->fault_phase && d->drain_end < 0) {
        d->drain_bound = rig__drain_bound(d);
        d->drain_end = d->step + d->drain_bound;
    }
    rig__feed_due(d, now_ns);
    if (d->out->verdict != RIG_SWARM_PASS) return RIG_E_STATE;
    if (!rig_engine_idle(engine) && d->drain_end >= 0 && d->step >= d->drain_end) {
        struct rig_engine_stats stats;
        rig_engine_stats(engine, &stats);
        rig__fail(d, RIG_SWARM_LIVENESS, "the drain took more than %lld steps: %d pending, "
                  "%d running", (long long)d->drain_bound, stats.pending, stats.running);
        return RIG_E_STATE;
    }
    return RIG_OK;
}

/* Arrival source: the next arrival, or -1 when every request has been submitted. */
static int64_t rig__next_event(void *ctx)
{
    const struct rig__drive *d = ctx;
    return d->next < d->c->request_count ? d->c->requests[d->next].arrival_ns : -1;
}

/* Arrival source: the checks after a step; false when the run must stop. */
static bool rig__after_step(void *ctx, struct rig_engine *engine, bool progress)
{
    struct rig__drive *d = ctx;
    d->step++;
    rig__check(d);
    if (progress) return d->out->verdict == RIG_SWARM_PASS;
    /* No progress: fine while the next arrival lies ahead (the driver jumps to it); with
     * everything arrived (or waiting for room in a full engine) it is stuck. */
    int64_t now = rig_engine_now_ns(engine);
    bool ahead = d->next < d->c->request_count && d->c->requests[d->next].arrival_ns > now;
    if (!ahead && !rig_engine_idle(engine))
        rig__fail(d, RIG_SWARM_LIVENESS, "the engine is stuck: no progress with work queued");
    return d->out->verdict == RIG_SWARM_PASS;
}

/* The fault phase, then the drain with its bound, through the driver. */
static void rig__loop(struct rig__drive *d)
{
    d->fault_phase = d->c->faults;
    d->drain_end = -1;
    rig__set_faults(d, d->fault_phase);
    struct rig_arrival_source source = {d, rig__feed, rig__next_event, rig__after_step};
    /* The driver's bound lies beyond the swarm's own (counted in rig__feed). */
    struct rig_driver_options options = {.max_iterations = RIG__ITERATIONS_MAX + 1};
    char error[256] = "";
    enum rig_status s = rig_driver_run(d->engine, &source, &options, error, sizeof error);
    if (s < 0 && d->out->verdict == RIG_SWARM_PASS) {
        d->step++; /* the step that failed: the only error the swarm does not judge itself */
        rig__fail(d, RIG_SWARM_ERROR, "step failed: %s (%s)", rig_status_message(s),
                  rig_engine_error(d->engine));
    }
}

/* After the drain: every request ended once, every slot free or cached and unlocked. */
static void rig__conservation(struct rig__drive *d)
{
    for (int32_t i = 0; i < d->c->request_count; i++)
        if (d->ends[i] != 1)
            rig__fail(d, RIG_SWARM_LIFECYCLE, "request %d ended %d times", i, d->ends[i]);
    struct rig_engine_stats stats;
    rig_engine_stats(d->engine, &stats);
    if (stats.pending != 0 || stats.running != 0)
        rig__fail(d, RIG_SWARM_CONSERVATION, "idle engine with %d pending, %d running",
                  stats.pending, stats.running);
    if (stats.kv.free + stats.kv.evictable != stats.kv.total)
        rig__fail(d, RIG_SWARM_CONSERVATION, "slots not given back: total %lld = free %lld + "
                  "evictable %lld + protected %lld + owned %lld", (long long)stats.kv.total,
                  (long long)stats.kv.free, (long long)stats.kv.evictable,
                  (long long)stats.kv.protected_, (long long)stats.kv.owned);
    int64_t ended = stats.finished + stats.aborted + stats.rejected;
    if (ended != stats.submitted)
        rig__fail(d, RIG_SWARM_CONSERVATION, "%lld submitted but %lld ended",
                  (long long)stats.submitted, (long long)ended);
}

/* Runs case `c` (timing-only, or on the real tiny model when c->real_model); `d` must be
 * zeroed by the caller. */
static enum rig_swarm_verdict rig__drive(struct rig__drive *d, const struct rig_swarm_case *c,
                                         struct rig_swarm_result *out)
{
    bool timing_only = !c->real_model;
    memset(out, 0, sizeof *out);
    out->step_failed = -1;
    d->c = c;
    d->out = out;
    d->timing_only = timing_only;
    for (int32_t i = 0; i < RIG_SWARM_REQUESTS_MAX; i++) d->abort_issued_ns[i] = -1;
    struct rig_engine_config config;
    rig__config(c, timing_only, &config);
    RIG_ASSERT(config.model.eos_count == 1);
    d->eos_id = config.model.eos_token_ids[0];
    struct rig_engine_observer observer = {.ctx = d, .on_token = rig__on_token,
                                           .on_finish = rig__on_finish};
    if (rig__create(d, &config, &observer) == RIG_OK) {
        d->origin_ns = rig_engine_now_ns(d->engine);
        if (d->origin_log != NULL) *d->origin_log = d->origin_ns;
        rig__loop(d);
        if (out->verdict == RIG_SWARM_PASS) rig__conservation(d);
        rig_engine_destroy(d->engine);
    }
    out->steps = d->step;
    return out->verdict;
}

const char *rig_swarm_verdict_name(enum rig_swarm_verdict verdict)
{
    static const char *const names[RIG_SWARM_VERDICT_COUNT] = {
        "pass", "invariant", "lifecycle", "liveness", "conservation", "equivalence", "error",
        "crash"};
    return verdict >= 0 && verdict < RIG_SWARM_VERDICT_COUNT ? names[verdict] : "?";
}

enum rig_swarm_verdict rig_swarm_run(const struct rig_swarm_case *c,
                                     struct rig_swarm_result *out)
{
    RIG_ASSERT(c != NULL && out != NULL);
    RIG_ASSERT(c->request_count >= 0 && c->request_count <= RIG_SWARM_REQUESTS_MAX);
    struct rig__drive *d = calloc(1, sizeof *d);
    RIG_ASSERT_MSG(d != NULL, "out of memory for a swarm run");
    rig__drive(d, c, out);
    free(d);
    return out->verdict;
}

enum rig_status rig_swarm_abort_times(const struct rig_swarm_case *c, int64_t *abort_ns,
                                      int64_t *origin_ns)
{
    struct rig__drive *d = calloc(1, sizeof *d);
    if (d == NULL) return RIG_E_NO_MEMORY;
    for (int32_t i = 0; i < c->request_count; i++) abort_ns[i] = -1;
    *origin_ns = -1;
    d->abort_log = abort_ns;
    d->origin_log = origin_ns;
    struct rig_swarm_result result;
    rig__drive(d, c, &result);
    free(d);
    return RIG_OK;
}

/* The equivalence traces: no faults or aborts. `small` (for the real model on the CPU): at
 * most 6 requests, prompts of at most 40 tokens, 1..6 output tokens. */
static void rig__cut(const struct rig_swarm_case *c, bool small, struct rig_swarm_case *cut)
{
    memcpy(cut, c, sizeof *cut);
    cut->faults = false;
    cut->fail_alloc_at = -1;
    cut->stall_op_at = -1;
    if (small && cut->request_count > 6) cut->request_count = 6;
    for (int32_t i = 0; i < cut->request_count; i++) {
        struct rig_swarm_request *q = &cut->requests[i];
        q->abort = RIG_SWARM_ABORT_NONE;
        if (small && q->prompt_len > 40) q->prompt_len = 40;
        if (small && (q->max_tokens == 0 || q->max_tokens > 6)) q->max_tokens = 6;
    }
}

/* Variant v of the cut: one setting changed (v = 0: as drawn). */
static void rig__variant(const struct rig_swarm_case *cut, int32_t v, struct rig_swarm_case *out)
{
    static const int32_t next_tp[5] = {0, 2, 4, 0, 1};
    memcpy(out, cut, sizeof *out);
    switch (v) {
    case 0: break;
    case 1: out->cache = cut->cache == RIG_CACHE_RADIX ? RIG_CACHE_NAIVE : RIG_CACHE_RADIX; break;
    case 2: out->overlap = !cut->overlap; break;
    case 3: out->prefill_budget = cut->prefill_budget <= 3 ? 512 : 3; break;
    case 4: out->policy = (enum rig_policy)((cut->policy + 1) % 3); break;
    case 5: out->policy = (enum rig_policy)((cut->policy + 2) % 3); break;
    case 6: out->tp_size = next_tp[cut->tp_size]; break;
    case 7: out->graphs = !cut->graphs; break;
    default: RIG_UNREACHABLE();
    }
}

#define RIG__VARIANTS 8

static const char *const rig__variant_names[RIG__VARIANTS] = {
    "as drawn", "cache flipped", "overlap flipped", "budget changed", "next policy",
    "other policy", "other TP degree", "graphs flipped"};

/* Compares run `b` (variant v) with the base run `a`; false on the first difference. */
static bool rig__same(const struct rig__drive *a, const struct rig__drive *b, int32_t v,
                      struct rig_swarm_result *out)
{
    for (int32_t i = 0; i < a->c->request_count; i++) {
        bool same = a->reason[i] == b->reason[i] && a->outputs[i] == b->outputs[i] &&
                    memcmp(a->tokens[i], b->tokens[i], (size_t)a->outputs[i] * sizeof(int32_t))
                        == 0;
        if (same) continue;
        int32_t at = 0;
        while (at < a->outputs[i] && at < b->outputs[i] && a->tokens[i][at] == b->tokens[i][at])
            at++;
        out->verdict = RIG_SWARM_EQUIVALENCE;
        snprintf(out->message, sizeof out->message, "request %d differs with %s: %s/%d tokens "
                 "vs %s/%d, first difference at output %d", i, rig__variant_names[v],
                 rig_request_end_name(a->reason[i]), a->outputs[i],
                 rig_request_end_name(b->reason[i]), b->outputs[i], at);
        return false;
    }
    return true;
}

/* Equivalence stages: 1 + v runs variant v of the whole trace's cut timing-only, 1 + 8 + v
 * variant v of the small cut on the real model. */
#define RIG__STAGE_REAL (1 + RIG__VARIANTS)

void rig_swarm_stage_case(const struct rig_swarm_case *c, int32_t stage,
                          struct rig_swarm_case *out)
{
    RIG_ASSERT(stage >= 0 && stage < RIG_SWARM_STAGES);
    if (stage == 0) {
        memcpy(out, c, sizeof *out);
        return;
    }
    bool real = stage >= RIG__STAGE_REAL;
    struct rig_swarm_case *cut = malloc(sizeof *cut);
    RIG_ASSERT_MSG(cut != NULL, "out of memory for a swarm case");
    rig__cut(c, real, cut);
    cut->real_model = real;
    rig__variant(cut, (stage - 1) % RIG__VARIANTS, out);
    out->stage = stage;
    free(cut);
}

void rig_swarm_stage_name(int32_t stage, char *out, size_t len)
{
    RIG_ASSERT(stage >= 0 && stage < RIG_SWARM_STAGES);
    if (stage == 0)
        snprintf(out, len, "the case");
    else
        snprintf(out, len, "equivalence run %d (%s, %s)", stage,
                 stage >= RIG__STAGE_REAL ? "real model" : "timing-only",
                 rig__variant_names[(stage - 1) % RIG__VARIANTS]);
}

/* Runs the variants of `cut` against variant 0 (stages from `first_stage`, written to *stage
 * before each run when not NULL); skips variant `skip` (-1: none). */
static enum rig_swarm_verdict rig__compare(const struct rig_swarm_case *cut, int32_t first_stage,
                                           int32_t skip, volatile int32_t *stage,
                                           struct rig__drive *d, struct rig_swarm_case *variant,
                                           struct rig_swarm_result *out)
{
    memset(&d[0], 0, sizeof d[0]);
    if (stage != NULL) *stage = first_stage;
    rig__drive(&d[0], cut, out);
    out->stage = first_stage;
    for (int32_t v = 1; v < RIG__VARIANTS && out->verdict == RIG_SWARM_PASS; v++) {
        if (v == skip) continue;
        rig__variant(cut, v, variant);
        memset(&d[1], 0, sizeof d[1]);
        struct rig_swarm_result result;
        if (stage != NULL) *stage = first_stage + v;
        out->stage = first_stage + v;
        if (rig__drive(&d[1], variant, &result) != RIG_SWARM_PASS) {
            *out = result;
            out->stage = first_stage + v;
            int n = snprintf(out->message, sizeof out->message, "equivalence run (%s): ",
                             rig__variant_names[v]);
            RIG_ASSERT(n > 0 && (size_t)n < sizeof out->message);
            memcpy(out->message + n, result.message, sizeof out->message - (size_t)n - 1);
            out->message[sizeof out->message - 1] = '\0';
            break;
        }
        rig__same(&d[0], &d[1], v, out);
    }
    if (out->verdict == RIG_SWARM_EQUIVALENCE) {
        size_t n = strlen(out->message);
        snprintf(out->message + n, sizeof out->message - n, " (%s)",
                 cut->real_model ? "real model" : "timing-only");
    }
    if (out->verdict == RIG_SWARM_PASS) out->stage = 0;
    return out->verdict;
}

/* Timing-only tokens are a pure function of (seed, request, position): every variant of the
 * whole trace, TP degree included, must agree exactly. On the real model a different TP degree
 * sums partial products in a different order, which moves logits in the last bits and may flip
 * a near tie (measured: 8 of 60 seeds with the tiny model's dummy weights), so the real-model
 * comparison covers every variant but the TP degree. */
enum rig_swarm_verdict rig_swarm_equivalence(const struct rig_swarm_case *c,
                                             volatile int32_t *stage,
                                             struct rig_swarm_result *out)
{
    struct rig_swarm_case *cases = malloc(2 * sizeof *cases);
    struct rig__drive *d = malloc(2 * sizeof *d);
    RIG_ASSERT_MSG(cases != NULL && d != NULL, "out of memory for a swarm run");
    rig__cut(c, false, &cases[0]);
    cases[0].real_model = false;
    if (rig__compare(&cases[0], 1, -1, stage, d, &cases[1], out) == RIG_SWARM_PASS) {
        rig__cut(c, true, &cases[0]);
        cases[0].real_model = true;
        rig__compare(&cases[0], RIG__STAGE_REAL, 6, stage, d, &cases[1], out);
    }
    free(d);
    free(cases);
    return out->verdict;
}
