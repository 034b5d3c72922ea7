/* run.c — replaying a scenario on the engine (see run.h). */
#include "core/harness/scenario/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/engine.h"
#include "core/engine/driver.h"

#define RIG__RUN_SMALL 64 /* requests: at or below, the checker runs after every step */

enum rig__request_state {
    RIG__WAITING = 0,   /* not submitted yet */
    RIG__SUBMITTED = 1, /* live in the engine */
    RIG__ENDED = 2,
};

/* The state of one run, shared with the observer callbacks. */
struct rig__run {
    const struct rig_scenario *scenario;
    const struct rig_run_options *options;
    struct rig_results *results;
    struct rig_engine *engine;
    int32_t page_size;
    int32_t ended;
    int64_t origin_ns;        /* engine clock when the run started: scenario time 0 */
    uint8_t *state;           /* (n) enum rig__request_state */
    uint8_t *has_token;       /* (n) got its first output token */
    int32_t *unscheduled;     /* (n) submitted, first step not known yet */
    int32_t unscheduled_count;
    int32_t *chunking;        /* (n) first step known, no token yet: in every prefill step */
    int32_t chunking_count;
    int32_t *step_tokens;     /* (n) uids that got a token since the last step record */
    int32_t step_token_count;
    int32_t *scratch;         /* (2n) the request list of the step being recorded */
    int32_t *abort_order;     /* (abort_count) uids by abort time */
    int32_t abort_count;
    int32_t next;             /* the next request to submit (by arrival) */
    int32_t next_abort;       /* the next entry of abort_order */
    bool check_every_step;
    int64_t violations;
    int64_t engine_steps;     /* rig_engine_step calls (the faults' until_step counts them) */
    bool stall_lifted;        /* the faults' stall was cleared at until_step */
};

/* Engine clock -> scenario time (0 = when the run started); -1 stays "never". */
static int64_t rig__since(const struct rig__run *run, int64_t engine_ns)
{
    return engine_ns < 0 ? -1 : engine_ns - run->origin_ns;
}

static void rig__on_token(void *ctx, uint64_t uid, int32_t index, int32_t token, int64_t t_ns)
{
    struct rig__run *run = ctx;
    RIG_ASSERT(uid < (uint64_t)run->scenario->request_count);
    const struct rig_results_request *q = &run->results->requests[uid];
    RIG_ASSERT(index >= 0 && index < run->scenario->requests[uid].max_tokens);
    run->results->token_ids[q->token_offset + index] = token;
    run->results->token_time_ns[q->token_offset + index] = t_ns - run->origin_ns;
    RIG_ASSERT(run->step_token_count < run->scenario->request_count);
    run->step_tokens[run->step_token_count++] = (int32_t)uid;
}

static void rig__on_finish(void *ctx, const struct rig_request_result *r)
{
    struct rig__run *run = ctx;
    RIG_ASSERT(r->uid < (uint64_t)run->scenario->request_count);
    RIG_ASSERT(run->state[r->uid] != RIG__ENDED);
    struct rig_results_request *q = &run->results->requests[r->uid];
    q->finish_reason = rig_results_finish_reason(r->reason);
    q->cached_len = r->cached_len;
    q->output_len = r->output_len;
    q->first_scheduled_ns = rig__since(run, r->first_scheduled_ns);
    q->first_token_ns = rig__since(run, r->first_token_ns);
    q->finish_ns = rig__since(run, r->finish_ns);
    /* Tokens end inside a step's processing, before that step's record. */
    if (q->finish_reason == RIG_FINISH_LENGTH || q->finish_reason == RIG_FINISH_STOP)
        q->finish_step = run->results->step_count;
    run->state[r->uid] = RIG__ENDED;
    run->ended++;
}

static int rig__compare_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Requests scheduled for the first time in this step (matched by schedule time) move from
 * `unscheduled` to `chunking`. */
static void rig__match_first_steps(struct rig__run *run, const struct rig_step_record *rec)
{
    int32_t kept = 0;
    for (int32_t i = 0; i < run->unscheduled_count; i++) {
        int32_t uid = run->unscheduled[i];
        struct rig_results_request *q = &run->results->requests[uid];
        const struct rig_request *live = rig_engine_find(run->engine, (uint64_t)uid);
        int64_t scheduled = live != NULL ? rig__since(run, live->first_scheduled_ns)
                                         : q->first_scheduled_ns;
        if (scheduled >= 0 && scheduled == rig__since(run, rec->host_schedule_ns)) {
            q->first_step = rec->step;
            run->chunking[run->chunking_count++] = uid;
        } else if (run->state[uid] != RIG__ENDED) {
            run->unscheduled[kept++] = uid;
        }
    }
    run->unscheduled_count = kept;
}

static void rig__on_step(void *ctx, const struct rig_step_record *rec)
{
    struct rig__run *run = ctx;
    RIG_ASSERT(rec->step == run->results->step_count);
    rig__match_first_steps(run, rec);
    int32_t count = 0;
    for (int32_t i = 0; i < run->step_token_count; i++) {
        int32_t uid = run->step_tokens[i];
        run->scratch[count++] = uid;
        run->has_token[uid] = 1;
    }
    int32_t kept = 0;
    for (int32_t i = 0; i < run->chunking_count; i++) {
        int32_t uid = run->chunking[i];
        if (rec->phase != RIG_BATCH_DECODE) run->scratch[count++] = uid;
        if (!run->has_token[uid] && run->state[uid] != RIG__ENDED) run->chunking[kept++] = uid;
    }
    run->chunking_count = kept;
    qsort(run->scratch, (size_t)count, sizeof *run->scratch, rig__compare_i32);
    int32_t unique = 0;
    for (int32_t i = 0; i < count; i++)
        if (unique == 0 || run->scratch[unique - 1] != run->scratch[i])
            run->scratch[unique++] = run->scratch[i];
    struct rig_results_step step = {
        .phase = (int32_t)rec->phase, .batch_size = rec->batch_size, .tokens = rec->tokens,
        .padded_size = rec->padded_size, .graph_used = rec->graph_used,
        .start_ns = rec->device_start_ns, .end_ns = rec->device_end_ns,
        .pages_free = rec->pages_free, .pages_evictable = rec->pages_evictable,
        .pages_locked = rec->pages_locked, .pages_used = rec->pages_owned,
        .host_launch_ns = rec->host_launch_ns, .host_process_ns = rec->host_process_ns,
        .host_schedule_ns = rec->host_schedule_work_ns,
        .host_prepare_ns = rec->host_prepare_work_ns, .host_issue_ns = rec->host_issue_work_ns,
        .host_loop_ns = rec->host_loop_ns};
    if (run->results->host != NULL) { /* asked for: the calibration's */
        struct rig_results_host *host = &run->results->host[run->results->step_count];
        for (int32_t t = 0; t < RIG_HOST_TERMS; t++)
            for (int32_t f = 0; f < RIG_HOST_FACTORS; f++)
                host->counts[t][f] = (int32_t)rec->host_counts[t][f];
        host->loop_idle = rec->host_loop_idle;
    }
    /* Capacities are sized from the scenario's worst case: running out is a bug. */
    enum rig_status added = rig_results_add_step(run->results, &step, run->scratch, unique);
    RIG_ASSERT(added == RIG_OK);
    run->step_token_count = 0;
}

/* The model's config from the scenario: a preset, a config.json, or a model directory. */
static enum rig_status rig__model(const struct rig_scenario *s, struct rig_engine_config *c,
                                  char *error, size_t error_len)
{
    const struct rig_scenario_model *m = &s->model;
    enum rig_status status;
    if (m->preset[0] != '\0') {
        status = rig_model_config_preset(m->preset, &c->model);
        if (status < 0)
            snprintf(error, error_len, "%s: unknown model preset '%s'", s->path, m->preset);
    } else {
        char path[RIG_SCENARIO_PATH_MAX + 16];
        snprintf(path, sizeof path, "%s%s", m->config[0] ? m->config : m->path,
                 m->config[0] ? "" : "/config.json");
        status = rig_model_config_load(path, &c->model, error, error_len);
    }
    c->weights.path = m->dummy_weights ? NULL : m->path;
    c->weights.dummy_seed = m->weights_seed;
    c->weights.skip_weight_check = m->skip_weight_check;
    if (status == RIG_OK && s->token_id_max >= c->model.vocab_size) {
        snprintf(error, error_len, "%s: token id %d is outside the vocabulary of %s (%d)",
                 s->path, s->token_id_max, c->model.name, c->model.vocab_size);
        status = RIG_E_RANGE;
    }
    return status;
}

/* The engine's configuration: its defaults, overridden where the scenario says. */
enum rig_status rig_scenario_engine_config(const struct rig_scenario *s,
                                           struct rig_engine_config *c,
                                   char *error, size_t error_len)
{
    const struct rig_scenario_engine *e = &s->engine;
    rig_engine_config_default(c);
    c->backend = rig_scenario_backend_name(s->backend);
    if (s->backend == RIG_SCENARIO_BACKEND_SIM) { /* the `sim:` section means nothing on CUDA */
        c->device.timing_only = s->sim.timing_only;
        c->device.profile = s->sim.profile[0] != '\0' ? s->sim.profile : NULL;
    }
    c->device.seed = s->seed;
    c->device.collective_timeout_ms = (e->collective_timeout_ns + 999999) / 1000000;
    c->seed = s->seed;
    c->tp_size = e->tp_size;
    if (e->num_pages != RIG_SCENARIO_DEFAULT) c->num_pages = (int32_t)e->num_pages;
    if (e->page_size != RIG_SCENARIO_DEFAULT) c->page_size = e->page_size;
    if (e->max_running_req != RIG_SCENARIO_DEFAULT) c->max_running_req = e->max_running_req;
    if (e->max_seq_len != RIG_SCENARIO_DEFAULT) c->max_seq_len = e->max_seq_len;
    if (e->prefill_budget != RIG_SCENARIO_DEFAULT) c->prefill_budget = e->prefill_budget;
    if (e->policy != RIG_SCENARIO_DEFAULT) c->policy = (enum rig_policy)e->policy;
    if (e->decode_order != RIG_SCENARIO_DEFAULT)
        c->decode_order = (enum rig_decode_order)e->decode_order;
    if (e->cache != RIG_SCENARIO_DEFAULT) c->cache_type = (enum rig_cache_type)e->cache;
    if (e->overlap != RIG_SCENARIO_DEFAULT) c->overlap = e->overlap != 0;
    if (e->cuda_graph_max_bs == 0) c->cuda_graphs = false;
    if (e->cuda_graph_max_bs > 0) c->cuda_graph_max_bs = e->cuda_graph_max_bs;
    /* Live requests at once: all of a small scenario; a window over a big one (each slot
     * holds max_seq_len tokens), arrivals beyond it wait in the runner. */
    int32_t window = 4 * c->max_running_req > 256 ? 4 * c->max_running_req : 256;
    c->max_requests = s->request_count < window ? s->request_count : window;
    if (e->max_requests != RIG_SCENARIO_DEFAULT) c->max_requests = e->max_requests;
    c->check_invariants = false; /* the runner counts violations instead of aborting */
    return rig__model(s, c, error, error_len);
}

static struct rig_sampling_params rig__sampling(const struct rig_scenario_request *r)
{
    struct rig_sampling_params p = rig_sampling_default();
    p.temperature = r->sampling.temperature;
    p.top_k = r->sampling.top_k;
    p.top_p = r->sampling.top_p;
    p.max_tokens = r->max_tokens;
    p.ignore_eos = r->sampling.ignore_eos;
    p.has_seed = r->sampling.has_seed;
    p.seed = r->sampling.seed;
    p.stop_token_count = r->sampling.stop_count;
    for (int32_t i = 0; i < r->sampling.stop_count && i < RIG_STOP_TOKENS_MAX; i++)
        p.stop_token_ids[i] = r->sampling.stop_token_ids[i];
    return p;
}

/* Submits request `uid`. RIG_E_CAPACITY: the engine is full, retry after a step. */
struct rig_submit rig_scenario_submit_of(const struct rig_scenario *s, int32_t uid,
                                         int64_t origin_ns)
{
    RIG_ASSERT(uid >= 0 && uid < s->request_count);
    const struct rig_scenario_request *r = &s->requests[uid];
    return (struct rig_submit){(uint64_t)uid, rig_scenario_prompt(s, uid), r->input_len,
                               rig__sampling(r), r->arrival_ns + origin_ns};
}

static enum rig_status rig__submit(struct rig__run *run, int32_t uid, char *error,
                                   size_t error_len)
{
    const struct rig_scenario_request *r = &run->scenario->requests[uid];
    struct rig_submit submit = rig_scenario_submit_of(run->scenario, uid, run->origin_ns);
    char reason[256] = "";
    enum rig_status status = rig_engine_submit(run->engine, &submit, reason, sizeof reason);
    if (status == RIG_OK) {
        run->state[uid] = RIG__SUBMITTED;
        run->unscheduled[run->unscheduled_count++] = uid;
    }
    if (status == RIG_OK || status == RIG_E_RANGE || status == RIG_E_CAPACITY)
        return status == RIG_E_RANGE ? RIG_OK : status; /* a rejection ended it (observer) */
    snprintf(error, error_len, "request %s: %s", r->id, reason);
    return status;
}

/* Applies an abort due now: before arrival the request is never submitted. */
static void rig__abort(struct rig__run *run, int32_t uid)
{
    if (run->state[uid] == RIG__SUBMITTED) {
        rig_engine_abort(run->engine, (uint64_t)uid); /* NOT_FOUND: it just ended */
        return;
    }
    if (run->state[uid] == RIG__ENDED) return;
    struct rig_results_request *q = &run->results->requests[uid];
    q->finish_reason = RIG_FINISH_ABORT;
    q->finish_ns = run->scenario->requests[uid].abort_ns;
    run->state[uid] = RIG__ENDED;
    run->ended++;
}

static int64_t rig__div_up(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Sizes the results for the scenario's worst case and reserves every request's token rows
 * (max_tokens each), so nothing is allocated while the engine steps. */
static enum rig_status rig__init_results(struct rig__run *run, int32_t budget)
{
    const struct rig_scenario *s = run->scenario;
    int64_t tokens = 0, steps = 16, memberships = 16;
    for (int32_t i = 0; i < s->request_count; i++) {
        int64_t chunks = rig__div_up(s->requests[i].input_len, budget);
        tokens += s->requests[i].max_tokens;
        steps += chunks + s->requests[i].max_tokens;
        memberships += chunks + s->requests[i].max_tokens + 1;
    }
    enum rig_status status = rig_results_init(run->results, s->request_count, tokens, steps,
                                              memberships);
    if (status < 0) return status;
    for (int32_t i = 0; i < s->request_count; i++) {
        struct rig_results_request *q = &run->results->requests[i];
        snprintf(q->id, sizeof q->id, "%s", s->requests[i].id);
        q->arrival_ns = s->requests[i].arrival_ns;
        q->input_len = s->requests[i].input_len;
        q->token_offset = rig_results_reserve_tokens(run->results, s->requests[i].max_tokens);
        RIG_ASSERT(q->token_offset >= 0);
    }
    return RIG_OK;
}

static enum rig_status rig__init_run(struct rig__run *run, int32_t budget)
{
    const struct rig_scenario *s = run->scenario;
    size_t n = (size_t)s->request_count;
    run->state = calloc(n, 1);
    run->has_token = calloc(n, 1);
    run->unscheduled = calloc(n, sizeof(int32_t));
    run->chunking = calloc(n, sizeof(int32_t));
    run->step_tokens = calloc(n, sizeof(int32_t));
    run->scratch = calloc(2 * n, sizeof(int32_t));
    run->abort_order = calloc(n, sizeof(int32_t));
    if (run->state == NULL || run->has_token == NULL || run->unscheduled == NULL ||
        run->chunking == NULL || run->step_tokens == NULL || run->scratch == NULL ||
        run->abort_order == NULL)
        return RIG_E_NO_MEMORY;
    /* Aborts in time order; insertion keeps uid order among equal times (uids are few). */
    for (int32_t uid = 0; uid < s->request_count; uid++) {
        int64_t t = s->requests[uid].abort_ns;
        if (t < 0) continue;
        int32_t k = run->abort_count++;
        while (k > 0 && s->requests[run->abort_order[k - 1]].abort_ns > t) {
            run->abort_order[k] = run->abort_order[k - 1];
            k--;
        }
        run->abort_order[k] = uid;
    }
    enum rig_status status = rig__init_results(run, budget);
    if (status == RIG_OK && run->options->host_counts)
        status = rig_results_init_host(run->results);
    return status;
}

static void rig__free_run(struct rig__run *run)
{
    free(run->state);
    free(run->has_token);
    free(run->unscheduled);
    free(run->chunking);
    free(run->step_tokens);
    free(run->scratch);
    free(run->abort_order);
}

static void rig__check(struct rig__run *run)
{
    const struct rig_run_options *o = run->options;
    run->violations += rig_engine_check(run->engine, o->violation, o->user);
}

/* The in-loop fault plan of a scenario with `faults:` (the swarm's): every device
 * allocation fails (the step loop makes none) and, while `stall` holds, the planned stall. */
static enum rig_status rig__set_faults(struct rig__run *run, bool stall, char *error,
                                       size_t error_len)
{
    const struct rig_scenario_faults *f = &run->scenario->faults;
    int32_t ranks = rig_engine_get_config(run->engine)->tp_size;
    for (int32_t r = 0; r < ranks; r++) {
        struct rig_hal_faults plan = {.fail_alloc_at = 0, .stall_op_at = -1, .stall_ns = 0};
        if (stall && r == f->stall_rank && f->stall_op >= 0) {
            plan.stall_op_at = f->stall_op;
            plan.stall_ns = f->stall_ns;
        }
        enum rig_status status = rig_hal_set_faults(rig_engine_device(run->engine, r), &plan);
        if (status < 0) {
            snprintf(error, error_len, "faults: rank %d is not a simulator device", r);
            return status;
        }
    }
    return RIG_OK;
}

/* Arrival source: submits arrivals and applies aborts due at the engine's clock; lifts the
 * faults' stall before step until_step. */
static enum rig_status rig__feed(void *ctx, struct rig_engine *engine, int64_t now_ns,
                                 char *error, size_t error_len)
{
    struct rig__run *run = ctx;
    const struct rig_scenario *s = run->scenario;
    RIG_ASSERT(engine == run->engine);
    if (s->faults.set && !run->stall_lifted && run->engine_steps == s->faults.until_step) {
        run->stall_lifted = true; /* before step until_step, as the swarm's fault phase ends */
        enum rig_status status = rig__set_faults(run, false, error, error_len);
        if (status < 0) return status;
    }
    int64_t now = now_ns - run->origin_ns;
    while (run->next_abort < run->abort_count &&
           s->requests[run->abort_order[run->next_abort]].abort_ns <= now)
        rig__abort(run, run->abort_order[run->next_abort++]);
    while (run->next < s->request_count && s->requests[run->next].arrival_ns <= now) {
        if (run->state[run->next] == RIG__ENDED) { /* aborted before it arrived */
            run->next++;
            continue;
        }
        enum rig_status status = rig__submit(run, run->next, error, error_len);
        if (status == RIG_E_CAPACITY) break;
        if (status < 0) return status;
        run->next++;
    }
    return RIG_OK;
}

/* Arrival source: the next arrival or abort (engine clock), or -1 when nothing more will
 * happen. */
static int64_t rig__next_event(void *ctx)
{
    const struct rig__run *run = ctx;
    const struct rig_scenario *s = run->scenario;
    int64_t t = run->next < s->request_count ? s->requests[run->next].arrival_ns : -1;
    if (run->next_abort < run->abort_count) {
        int64_t a = s->requests[run->abort_order[run->next_abort]].abort_ns;
        if (t < 0 || a < t) t = a;
    }
    return t < 0 ? -1 : t + run->origin_ns;
}

/* Arrival source: the checker (every step when asked) and the progress report. */
static bool rig__after_step(void *ctx, struct rig_engine *engine, bool progress)
{
    struct rig__run *run = ctx;
    const struct rig_run_options *o = run->options;
    run->engine_steps++;
    if (run->check_every_step) rig__check(run);
    if (o->progress != NULL && o->progress_every > 0 &&
        run->results->step_count % o->progress_every == 0 && progress)
        o->progress(o->user, run->results->step_count, run->ended,
                    run->scenario->request_count, rig_engine_now_ns(engine) - run->origin_ns);
    return true;
}

static enum rig_status rig__loop(struct rig__run *run, char *error, size_t error_len)
{
    const struct rig_run_options *o = run->options;
    run->check_every_step = o->check == RIG_RUN_CHECK_STEP ||
                            (o->check == RIG_RUN_CHECK_AUTO &&
                             run->scenario->request_count <= RIG__RUN_SMALL);
    struct rig_arrival_source source = {run, rig__feed, rig__next_event, rig__after_step};
    struct rig_driver_options driver = {
        .pace = RIG_DRIVER_PACE_FAST,
        .max_iterations = 4 * run->results->step_capacity + 4 * run->scenario->request_count + 64};
    return rig_driver_run(run->engine, &source, &driver, error, error_len);
}

void rig_scenario_results_meta(const struct rig_scenario *s, const struct rig_engine_config *c,
                               struct rig_engine *engine, struct rig_results *r)
{
    struct rig_results_meta *m = &r->meta;
    snprintf(m->scenario, sizeof m->scenario, "%s", s->name);
    snprintf(m->scenario_sha256, sizeof m->scenario_sha256, "%s", s->sha256);
    snprintf(m->backend, sizeof m->backend, "%s", c->backend);
    /* The device's own name ("sim:h100", "NVIDIA H100 80GB HBM3"), as the backend reports it. */
    const struct rig_device_info *info =
        rig_hal_device_info(rig_model_device(rig_engine_model(engine, 0)));
    snprintf(m->device, sizeof m->device, "%s%s x%d", info->name,
             info->timing_only ? " (timing only)" : "", c->tp_size);
    snprintf(m->model, sizeof m->model, "%s", c->model.name);
    snprintf(m->policy, sizeof m->policy, "%s", rig_policy_name(c->policy));
    snprintf(m->decode_order, sizeof m->decode_order, "%s", rig_decode_order_name(c->decode_order));
    snprintf(m->cache, sizeof m->cache, "%s", rig_cache_type_name(c->cache_type));
    m->seed = s->seed;
    m->tp_size = c->tp_size;
    m->page_size = c->page_size;
    m->num_pages = c->num_pages;
    m->max_running_req = c->max_running_req;
    m->prefill_budget = c->prefill_budget;
    m->overlap = c->overlap;
    m->timing_only = c->device.timing_only;
    r->pages_total = c->num_pages;
}

/* After the drain: pages neither free nor cached-unlocked are leaked. */
static void rig__totals(struct rig__run *run)
{
    struct rig_engine_stats stats;
    rig_engine_stats(run->engine, &stats);
    int64_t held = stats.kv.total - stats.kv.free - stats.kv.evictable;
    run->results->pages_leaked = held / run->page_size;
    int64_t hits = 0;
    for (int64_t i = 0; i < run->results->request_count; i++)
        hits += run->results->requests[i].cached_len;
    run->results->cache_hit_tokens = hits;
    run->results->invariant_violations = run->violations;
    run->results->launches_behind_inflight = stats.launches_behind_inflight;
    run->results->launches_ahead = stats.launches_ahead;
    run->results->launch_host_ns = stats.launch_host_ns;
}

/* The scenario's sim.fault on its rank (nothing for kind "none"). */
static enum rig_status rig__apply_fault(const struct rig_scenario *s, struct rig_engine *engine,
                                        char *error, size_t error_len)
{
    const struct rig_scenario_fault *f = &s->sim.fault;
    enum rig_hal_collective_fault kind = RIG_HAL_COLLECTIVE_NONE;
    if (f->kind[0] == '\0' || rig_hal_collective_fault_parse(f->kind, &kind) != RIG_OK ||
        kind == RIG_HAL_COLLECTIVE_NONE)
        return RIG_OK;
    int32_t tp = rig_engine_get_config(engine)->tp_size;
    if (f->rank >= tp) {
        snprintf(error, error_len, "%s: sim.fault.rank %d: the engine has %d rank(s)", s->path,
                 f->rank, tp);
        return RIG_E_INVALID;
    }
    if (rig_engine_device(engine, f->rank) == NULL) return RIG_OK; /* another process's */
    struct rig_hal_faults plan = {.fail_alloc_at = -1, .stall_op_at = -1,
                                  .collective_fault = kind, .collective_at = f->collective,
                                  .collective_delay_ns = f->delay_ns};
    enum rig_status status = rig_hal_set_faults(rig_engine_device(engine, f->rank), &plan);
    if (status != RIG_OK)
        snprintf(error, error_len, "%s: sim.fault: the %s backend injects no faults", s->path,
                 rig_engine_get_config(engine)->backend);
    return status;
}

/* The swarm's start-up fault: a first start whose n-th device allocation fails must fail
 * cleanly (out of device memory) or succeed (the fault lies beyond its allocations). */
static enum rig_status rig__faulty_start(const struct rig_scenario *s,
                                         const struct rig_engine_config *config,
                                         const struct rig_engine_observer *observer,
                                         char *error, size_t error_len)
{
    struct rig_hal_faults faults = {.fail_alloc_at = s->faults.start_alloc_fail,
                                    .stall_op_at = -1};
    struct rig_engine *doomed = NULL;
    char why[RIG_SCENARIO_ERROR_MAX] = "";
    enum rig_status status = rig_hal_set_open_faults("sim", &faults);
    if (status == RIG_OK)
        status = rig_engine_create(config, observer, &doomed, why, sizeof why);
    else
        snprintf(why, sizeof why, "%s", rig_status_message(status));
    rig_hal_set_open_faults("sim", NULL);
    if (status == RIG_OK) rig_engine_destroy(doomed);
    if (status == RIG_OK || status == RIG_E_DEVICE_MEMORY) return RIG_OK;
    snprintf(error, error_len, "faults: the engine start with device allocation %lld failing "
             "did not fail cleanly: %s", (long long)s->faults.start_alloc_fail, why);
    return status;
}

/* A process other than 0 of ranks across processes: its rank's share of the run. */
static enum rig_status rig__follow(const struct rig_scenario *s, struct rig_engine *engine,
                                   char *error, size_t error_len)
{
    enum rig_status status = rig__apply_fault(s, engine, error, error_len);
    if (status != RIG_OK) return status;
    status = rig_engine_follow(engine);
    if (status != RIG_OK) snprintf(error, error_len, "%s", rig_engine_error(engine));
    return status;
}

/* Creates the engine (after the start-up fault, if planned) and arms the in-loop faults. */
static enum rig_status rig__start(struct rig__run *run, const struct rig_engine_config *config,
                                  const struct rig_engine_observer *observer, char *error,
                                  size_t error_len)
{
    const struct rig_scenario_faults *f = &run->scenario->faults;
    enum rig_status status = RIG_OK;
    if (f->set && config->ranks == RIG_RANKS_MPI) {
        snprintf(error, error_len, "%s: faults: the swarm's fault plans run with ranks as "
                 "threads only (sim.fault works across processes)", run->scenario->path);
        return RIG_E_UNSUPPORTED;
    }
    if (f->set && f->start_alloc_fail >= 0)
        status = rig__faulty_start(run->scenario, config, observer, error, error_len);
    if (status == RIG_OK)
        status = rig_engine_create(config, observer, &run->engine, error, error_len);
    if (status == RIG_OK && f->set) status = rig__set_faults(run, true, error, error_len);
    return status;
}

enum rig_status rig_scenario_run(const struct rig_scenario *scenario,
                                 const struct rig_run_options *options,
                                 struct rig_results *results, char *error, size_t error_len)
{
    RIG_ASSERT(scenario != NULL && options != NULL);
    RIG_ASSERT(results != NULL && scenario->request_count > 0);
    memset(results, 0, sizeof *results);
    struct rig_engine_config config;
    enum rig_status status = rig_scenario_engine_config(scenario, &config, error, error_len);
    if (status < 0) return status;
    config.debug_plant = options->debug_plant;
    config.ranks = options->ranks;
    struct rig__run run = {.scenario = scenario, .options = options, .results = results,
                           .page_size = config.page_size};
    status = rig__init_run(&run, config.prefill_budget);
    if (status < 0) snprintf(error, error_len, "out of memory for the run's records");
    struct rig_engine_observer observer = {.ctx = &run, .on_token = rig__on_token,
                                           .on_finish = rig__on_finish, .on_step = rig__on_step};
    if (status == RIG_OK) status = rig__start(&run, &config, &observer, error, error_len);
    if (status == RIG_OK && !rig_engine_leads(run.engine)) {
        status = rig__follow(scenario, run.engine, error, error_len);
        rig_engine_destroy(run.engine); /* ends the MPI job when the run failed */
        rig__free_run(&run);
        return status;
    }
    if (status == RIG_OK) {
        rig_scenario_results_meta(scenario, &config, run.engine, results);
        status = rig__apply_fault(scenario, run.engine, error, error_len);
    }
    if (status == RIG_OK) {
        /* Scenario time 0 is when the engine is ready (weights loaded, graphs captured). */
        run.origin_ns = rig_engine_now_ns(run.engine);
        status = rig__loop(&run, error, error_len);
    }
    if (status == RIG_OK) {
        rig__check(&run);
        rig__totals(&run);
    }
    if (run.engine != NULL) rig_engine_destroy(run.engine);
    rig__free_run(&run);
    return status;
}
