/* fleet.c — N engines behind a router model on one timeline (fleet.h). */
#include "core/harness/fleet/fleet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/engine.h"
#include "core/harness/results/results.h"
#include "core/harness/scenario/run.h"

static const char *const rig__router_names[] = {"round_robin", "least_load", "cache_aware"};

_Static_assert((int)RIG_SCENARIO_CACHE_AWARE == (int)RIG_FLEET_CACHE_AWARE &&
                   (int)RIG_SCENARIO_LEAST_LOAD == (int)RIG_FLEET_LEAST_LOAD &&
                   RIG_SCENARIO_REPLICAS_MAX == RIG_FLEET_REPLICAS_MAX &&
                   RIG_RESULTS_REPLICAS_MAX == RIG_FLEET_REPLICAS_MAX,
               "the scenario's cluster and the results name the fleet's routers and sizes");

void rig_fleet_config_default(struct rig_fleet_config *c)
{
    RIG_ASSERT(c != NULL);
    *c = (struct rig_fleet_config){.replicas = 1, .tp = 0, .router = RIG_FLEET_ROUND_ROBIN,
                                   .cache_threshold = 0.5, .load_cap = 0, .balance_abs = 32,
                                   .balance_rel = 1.5};
}

void rig_fleet_config_of_scenario(const struct rig_scenario *s, struct rig_fleet_config *c)
{
    RIG_ASSERT(s != NULL && c != NULL);
    rig_fleet_config_default(c);
    if (s->cluster.replicas == 0) return;
    c->replicas = s->cluster.replicas;
    c->tp = s->cluster.tp;
    c->router = (enum rig_fleet_router)s->cluster.router;
    c->load_cap = s->cluster.load_cap;
}

enum rig_status rig_fleet_router_parse(const char *name, enum rig_fleet_router *out)
{
    if (name == NULL || out == NULL) return RIG_E_INVALID;
    for (int32_t i = 0; i <= RIG_FLEET_CACHE_AWARE; i++) {
        if (strcmp(name, rig__router_names[i]) != 0) continue;
        *out = (enum rig_fleet_router)i;
        return RIG_OK;
    }
    return RIG_E_NOT_FOUND;
}

const char *rig_fleet_router_name(enum rig_fleet_router router)
{
    RIG_ASSERT(router >= RIG_FLEET_ROUND_ROBIN && router <= RIG_FLEET_CACHE_AWARE);
    return rig__router_names[router];
}

/* --- the router's prefix table: hash of a block-aligned prompt prefix → replicas ---------- */

struct rig__prefix_entry {
    uint64_t hash; /* 0 = empty */
    uint64_t mask; /* bit r: the prefix was sent to replica r */
};

struct rig__prefix_table {
    struct rig__prefix_entry *entries; /* (RIG_FLEET_PREFIX_TABLE) open addressing */
    int64_t used;
};

/* FNV-1a over one block, chained from the previous prefix's hash; never 0. */
static uint64_t rig__block_hash(uint64_t h, const int32_t *tokens)
{
    for (int32_t i = 0; i < RIG_FLEET_BLOCK; i++) {
        h ^= (uint32_t)tokens[i];
        h *= 0x100000001b3ull;
    }
    return h == 0 ? 1 : h;
}

static struct rig__prefix_entry *rig__slot(struct rig__prefix_table *t, uint64_t hash)
{
    uint64_t mask = RIG_FLEET_PREFIX_TABLE - 1;
    for (uint64_t i = hash & mask, n = 0; n < RIG_FLEET_PREFIX_TABLE; i = (i + 1) & mask, n++)
        if (t->entries[i].hash == hash || t->entries[i].hash == 0) return &t->entries[i];
    RIG_UNREACHABLE(); /* the table is cleared at 3/4 full */
}

/* Records that `prompt` was sent to `replica`. A full table is cleared: the router forgets
 * (as SGLang's router evicts), which costs hit rate, never correctness. */
static void rig__prefix_insert(struct rig__prefix_table *t, const int32_t *prompt, int32_t len,
                               int32_t replica)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int32_t b = 0; (b + 1) * RIG_FLEET_BLOCK <= len; b++) {
        if (t->used >= RIG_FLEET_PREFIX_TABLE / 4 * 3) {
            memset(t->entries, 0, sizeof *t->entries * RIG_FLEET_PREFIX_TABLE);
            t->used = 0;
        }
        h = rig__block_hash(h, prompt + (size_t)b * RIG_FLEET_BLOCK);
        struct rig__prefix_entry *e = rig__slot(t, h);
        if (e->hash == 0) t->used++;
        e->hash = h;
        e->mask |= 1ull << replica;
    }
}

/* Tokens of `prompt` each replica holds as a prefix, per the table, into matched[]. */
static void rig__prefix_match(struct rig__prefix_table *t, const int32_t *prompt, int32_t len,
                              int32_t replicas, int32_t *matched)
{
    uint64_t alive = replicas == 64 ? ~0ull : (1ull << replicas) - 1;
    for (int32_t r = 0; r < replicas; r++) matched[r] = 0;
    uint64_t h = 0xcbf29ce484222325ull;
    for (int32_t b = 0; alive != 0 && (b + 1) * RIG_FLEET_BLOCK <= len; b++) {
        h = rig__block_hash(h, prompt + (size_t)b * RIG_FLEET_BLOCK);
        struct rig__prefix_entry *e = rig__slot(t, h);
        alive &= e->hash == h ? e->mask : 0;
        for (int32_t r = 0; r < replicas; r++)
            if (alive & (1ull << r)) matched[r] = (b + 1) * RIG_FLEET_BLOCK;
    }
}

/* --- replicas ------------------------------------------------------------------------------- */

struct rig__replica {
    struct rig_engine *engine;
    int64_t origin_ns;            /* its host clock when it was ready: fleet time 0 */
    struct rig_fleet_results *out;
    struct rig_results *record;   /* NULL: not recorded */
    int32_t index;
};

static void rig__on_token(void *ctx, uint64_t uid, int32_t index, int32_t token, int64_t t_ns)
{
    struct rig__replica *p = ctx;
    RIG_ASSERT(uid < (uint64_t)p->record->request_count);
    const struct rig_results_request *q = &p->record->requests[uid];
    RIG_ASSERT(index >= 0 && q->token_offset + index < p->record->token_count);
    p->record->token_ids[q->token_offset + index] = token;
    p->record->token_time_ns[q->token_offset + index] = t_ns - p->origin_ns;
}

/* The recorded request as run.c records one on a single engine. */
static void rig__record_finish(struct rig__replica *p, const struct rig_request_result *result)
{
    struct rig_results_request *q = &p->record->requests[result->uid];
    const struct rig_fleet_request *f = &p->out->requests[result->uid];
    q->finish_reason = f->finish_reason;
    q->cached_len = f->cached_len;
    q->output_len = f->output_len;
    q->first_scheduled_ns =
        result->first_scheduled_ns < 0 ? -1 : result->first_scheduled_ns - p->origin_ns;
    q->first_token_ns = f->first_token_ns;
    q->finish_ns = f->finish_ns;
}

static void rig__on_finish(void *ctx, const struct rig_request_result *result)
{
    struct rig__replica *p = ctx;
    RIG_ASSERT(result->uid < (uint64_t)p->out->request_count);
    struct rig_fleet_request *q = &p->out->requests[result->uid];
    struct rig_results_replica *s = &p->out->replicas[p->index];
    q->cached_len = result->cached_len;
    q->output_len = result->output_len;
    q->finish_reason = rig_results_finish_reason(result->reason);
    q->first_token_ns = result->first_token_ns < 0 ? -1 : result->first_token_ns - p->origin_ns;
    q->finish_ns = result->finish_ns - p->origin_ns;
    s->cached_tokens += result->cached_len;
    s->output_tokens += result->output_len;
    if (q->finish_ns > p->out->end_ns) p->out->end_ns = q->finish_ns;
    if (p->record != NULL) rig__record_finish(p, result);
}

static void rig__on_step(void *ctx, const struct rig_step_record *record)
{
    struct rig__replica *p = ctx;
    struct rig_results_replica *s = &p->out->replicas[p->index];
    s->steps++;
    s->busy_ns += record->device_end_ns - record->device_start_ns;
}

static int32_t rig__load(const struct rig__replica *p)
{
    struct rig_engine_stats stats;
    rig_engine_stats(p->engine, &stats);
    return stats.pending + stats.running;
}

/* Steps replica `p` until its clock reaches fleet time `t_ns` or it is idle. */
static enum rig_status rig__advance(struct rig__replica *p, int64_t t_ns, char *error,
                                    size_t error_len)
{
    for (int64_t guard = 0; guard < ((int64_t)1 << 40); guard++) {
        if (rig_engine_idle(p->engine) || rig_engine_now_ns(p->engine) >= p->origin_ns + t_ns)
            return RIG_OK;
        bool progress = false;
        enum rig_status status = rig_engine_step(p->engine, &progress);
        if (status < 0 || !progress) {
            const char *why = status < 0 ? rig_engine_error(p->engine) : "";
            snprintf(error, error_len, "replica %d: %s%s%s%s", p->index,
                     status < 0 ? "engine step failed: " : "stalled with work queued",
                     status < 0 ? rig_status_message(status) : "", why[0] != '\0' ? ": " : "",
                     why);
            return status < 0 ? status : RIG_E_STATE;
        }
    }
    RIG_UNREACHABLE();
}

/* --- routing ---------------------------------------------------------------------------------- */

struct rig__fleet {
    const struct rig_scenario *scenario;
    struct rig_fleet_config config;
    struct rig__replica replicas[RIG_FLEET_REPLICAS_MAX];
    struct rig__prefix_table prefixes;
    int32_t load_cap;
    int32_t loads[RIG_FLEET_REPLICAS_MAX];   /* scratch: live requests per replica */
    int32_t matched[RIG_FLEET_REPLICAS_MAX]; /* scratch: router's prefix match per replica */
};

static int32_t rig__least_loaded(const struct rig__fleet *f)
{
    int32_t best = 0;
    for (int32_t r = 1; r < f->config.replicas; r++)
        if (f->loads[r] < f->loads[best]) best = r;
    return best;
}

/* SGLang's cache-aware policy (fleet.h). */
static int32_t rig__cache_aware(struct rig__fleet *f, const int32_t *prompt, int32_t len)
{
    int32_t low = rig__least_loaded(f), high = 0;
    for (int32_t r = 1; r < f->config.replicas; r++)
        if (f->loads[r] > f->loads[high]) high = r;
    bool imbalanced = f->loads[high] - f->loads[low] > f->config.balance_abs &&
                      (double)f->loads[high] > f->config.balance_rel * (double)f->loads[low];
    if (imbalanced) return low;
    (void)prompt;
    int32_t best = -1;
    for (int32_t r = 0; r < f->config.replicas; r++) {
        if (f->loads[r] >= f->load_cap) continue;
        if (best < 0 || f->matched[r] > f->matched[best]) best = r;
    }
    if (best < 0 || (double)f->matched[best] < f->config.cache_threshold * (double)len)
        return low;
    return best;
}

static int32_t rig__route(struct rig__fleet *f, int32_t uid)
{
    const struct rig_scenario_request *r = &f->scenario->requests[uid];
    const int32_t *prompt = rig_scenario_prompt(f->scenario, uid);
    for (int32_t i = 0; i < f->config.replicas; i++) f->loads[i] = rig__load(&f->replicas[i]);
    int32_t chosen = 0;
    bool aware = f->config.router == RIG_FLEET_CACHE_AWARE;
    if (aware) rig__prefix_match(&f->prefixes, prompt, r->input_len, f->config.replicas, f->matched);
    switch (f->config.router) {
    case RIG_FLEET_ROUND_ROBIN: chosen = uid % f->config.replicas; break;
    case RIG_FLEET_LEAST_LOAD: chosen = rig__least_loaded(f); break;
    case RIG_FLEET_CACHE_AWARE: chosen = rig__cache_aware(f, prompt, r->input_len); break;
    default: RIG_UNREACHABLE();
    }
    if (aware) rig__prefix_insert(&f->prefixes, prompt, r->input_len, chosen);
    struct rig_fleet_request *q = &f->replicas[0].out->requests[uid];
    q->replica = chosen;
    q->matched = aware ? f->matched[chosen] : 0;
    q->load = f->loads[chosen];
    return chosen;
}

/* Submits request `uid` to replica `p` at its arrival; a full engine steps until it takes it
 * (the wait counts in the request's TTFT). */
static enum rig_status rig__submit(struct rig__fleet *f, struct rig__replica *p, int32_t uid,
                                   char *error, size_t error_len)
{
    struct rig_submit submit = rig_scenario_submit_of(f->scenario, uid, p->origin_ns);
    for (int64_t guard = 0; guard < ((int64_t)1 << 40); guard++) {
        char reason[256] = "";
        enum rig_status status = rig_engine_submit(p->engine, &submit, reason, sizeof reason);
        if (status == RIG_OK || status == RIG_E_RANGE) return RIG_OK; /* RANGE: rejected */
        if (status != RIG_E_CAPACITY) {
            snprintf(error, error_len, "request %s: %s", f->scenario->requests[uid].id, reason);
            return status;
        }
        bool progress = false;
        status = rig_engine_step(p->engine, &progress);
        if (status < 0 || !progress) {
            snprintf(error, error_len, "replica %d: full and not progressing", p->index);
            return status < 0 ? status : RIG_E_STATE;
        }
    }
    RIG_UNREACHABLE();
}

/* --- the run ----------------------------------------------------------------------------------- */

static enum rig_status rig__start(struct rig__fleet *f, struct rig_fleet_results *out,
                                  struct rig_results *record, char *error, size_t error_len)
{
    struct rig_engine_config config;
    enum rig_status status = rig_scenario_engine_config(f->scenario, &config, error, error_len);
    if (status != RIG_OK) return status;
    if (f->config.tp > 0) config.tp_size = f->config.tp;
    config.check_invariants = false; /* checked once per replica after the drain */
    f->load_cap = f->config.load_cap > 0 ? f->config.load_cap : config.max_running_req;
    for (int32_t r = 0; r < f->config.replicas; r++) {
        struct rig__replica *p = &f->replicas[r];
        *p = (struct rig__replica){.out = out, .record = record, .index = r};
        struct rig_engine_observer observer = {
            .ctx = p, .on_token = record != NULL ? rig__on_token : NULL,
            .on_finish = rig__on_finish, .on_step = rig__on_step};
        status = rig_engine_create(&config, &observer, &p->engine, error, error_len);
        if (status != RIG_OK) return status;
        if (r == 0 && record != NULL)
            rig_scenario_results_meta(f->scenario, &config, p->engine, record);
        p->origin_ns = rig_engine_now_ns(p->engine);
    }
    return RIG_OK;
}

static enum rig_status rig__feed(struct rig__fleet *f, char *error, size_t error_len)
{
    const struct rig_scenario *s = f->scenario;
    for (int32_t uid = 0; uid < s->request_count; uid++) {
        int64_t t = s->requests[uid].arrival_ns;
        for (int32_t r = 0; r < f->config.replicas; r++) {
            enum rig_status status = rig__advance(&f->replicas[r], t, error, error_len);
            if (status != RIG_OK) return status;
        }
        struct rig__replica *p = &f->replicas[rig__route(f, uid)];
        struct rig_results_replica *stats = &f->replicas[0].out->replicas[p->index];
        stats->requests++;
        stats->input_tokens += s->requests[uid].input_len;
        if (f->loads[p->index] + 1 > stats->peak_load) stats->peak_load = f->loads[p->index] + 1;
        if (rig_engine_now_ns(p->engine) < p->origin_ns + t)
            rig_engine_wait_until_ns(p->engine, p->origin_ns + t);
        enum rig_status status = rig__submit(f, p, uid, error, error_len);
        if (status != RIG_OK) return status;
    }
    for (int32_t r = 0; r < f->config.replicas; r++) {
        enum rig_status status = rig__advance(&f->replicas[r], INT64_MAX / 2, error, error_len);
        if (status != RIG_OK) return status;
    }
    return RIG_OK;
}

/* After the drain: each replica's checker and leaked pages. */
static void rig__totals(struct rig__fleet *f, struct rig_fleet_results *out)
{
    for (int32_t r = 0; r < f->config.replicas; r++) {
        struct rig_engine *engine = f->replicas[r].engine;
        struct rig_engine_stats stats;
        rig_engine_stats(engine, &stats);
        int32_t page_size = rig_engine_get_config(engine)->page_size;
        out->replicas[r].pages_leaked =
            (stats.kv.total - stats.kv.free - stats.kv.evictable) / page_size;
        out->replicas[r].invariant_violations = rig_engine_check(engine, NULL, NULL);
    }
}

/* Sizes `record` for the scenario: every request's id, arrival, prompt and token rows. */
static enum rig_status rig__record_init(const struct rig_scenario *s, struct rig_results *record)
{
    int64_t tokens = 0;
    for (int32_t i = 0; i < s->request_count; i++) tokens += s->requests[i].max_tokens;
    enum rig_status status = rig_results_init(record, s->request_count, tokens, 0, 0);
    if (status == RIG_OK) status = rig_results_init_fleet(record);
    if (status != RIG_OK) return status;
    for (int32_t i = 0; i < s->request_count; i++) {
        struct rig_results_request *q = &record->requests[i];
        snprintf(q->id, sizeof q->id, "%s", s->requests[i].id);
        q->arrival_ns = s->requests[i].arrival_ns;
        q->input_len = s->requests[i].input_len;
        q->token_offset = rig_results_reserve_tokens(record, s->requests[i].max_tokens);
        RIG_ASSERT(q->token_offset >= 0);
    }
    return RIG_OK;
}

/* After the run: the routes, the replicas' totals and their sums. */
static void rig__record_totals(const struct rig__fleet *f, const struct rig_fleet_results *out,
                               struct rig_results *record)
{
    struct rig_results_fleet *fleet = record->fleet;
    snprintf(fleet->router, sizeof fleet->router, "%s", rig_fleet_router_name(f->config.router));
    fleet->replica_count = f->config.replicas;
    fleet->tp_size = record->meta.tp_size;
    fleet->load_cap = f->load_cap;
    for (int64_t i = 0; i < out->request_count; i++)
        fleet->routes[i] = (struct rig_results_route){
            out->requests[i].replica, out->requests[i].matched, out->requests[i].load};
    for (int32_t r = 0; r < f->config.replicas; r++) {
        const struct rig_results_replica *p = &out->replicas[r];
        fleet->replicas[r] = *p;
        record->invariant_violations += p->invariant_violations;
        record->pages_leaked += p->pages_leaked;
        record->cache_hit_tokens += p->cached_tokens;
    }
    record->pages_total = record->meta.num_pages * f->config.replicas;
}

enum rig_status rig_fleet_run_recorded(const struct rig_scenario *scenario,
                                       const struct rig_fleet_config *config,
                                       struct rig_fleet_results *out, struct rig_results *record,
                                       char *error, size_t error_len)
{
    RIG_ASSERT(scenario != NULL && config != NULL && out != NULL);
    memset(out, 0, sizeof *out);
    if (record != NULL) memset(record, 0, sizeof *record);
    out->config = *config;
    if (config->replicas < 1 || config->replicas > RIG_FLEET_REPLICAS_MAX || config->tp < 0 ||
        config->router < RIG_FLEET_ROUND_ROBIN || config->router > RIG_FLEET_CACHE_AWARE) {
        snprintf(error, error_len, "fleet: replicas must be 1..%d, tp >= 0, a known router",
                 RIG_FLEET_REPLICAS_MAX);
        return RIG_E_INVALID;
    }
    struct rig__fleet *f = calloc(1, sizeof *f);
    out->requests = calloc((size_t)scenario->request_count + 1, sizeof *out->requests);
    if (f != NULL)
        f->prefixes.entries = calloc(RIG_FLEET_PREFIX_TABLE, sizeof(struct rig__prefix_entry));
    if (f == NULL || out->requests == NULL || f->prefixes.entries == NULL ||
        (record != NULL && rig__record_init(scenario, record) != RIG_OK)) {
        if (f != NULL) free(f->prefixes.entries);
        free(f);
        snprintf(error, error_len, "fleet: out of host memory");
        return RIG_E_NO_MEMORY;
    }
    out->request_count = scenario->request_count;
    for (int32_t i = 0; i < scenario->request_count; i++)
        out->requests[i] = (struct rig_fleet_request){
            .replica = -1, .input_len = scenario->requests[i].input_len,
            .arrival_ns = scenario->requests[i].arrival_ns, .first_token_ns = -1, .finish_ns = -1};
    f->scenario = scenario;
    f->config = *config;
    enum rig_status status = rig__start(f, out, record, error, error_len);
    if (status == RIG_OK) status = rig__feed(f, error, error_len);
    if (status == RIG_OK) rig__totals(f, out);
    if (status == RIG_OK && record != NULL) rig__record_totals(f, out, record);
    for (int32_t r = 0; r < config->replicas; r++)
        if (f->replicas[r].engine != NULL) rig_engine_destroy(f->replicas[r].engine);
    free(f->prefixes.entries);
    free(f);
    return status;
}

enum rig_status rig_fleet_run(const struct rig_scenario *scenario,
                              const struct rig_fleet_config *config,
                              struct rig_fleet_results *out, char *error, size_t error_len)
{
    return rig_fleet_run_recorded(scenario, config, out, NULL, error, error_len);
}

void rig_fleet_results_free(struct rig_fleet_results *results)
{
    if (results == NULL) return;
    free(results->requests);
    memset(results, 0, sizeof *results);
}

static int rig__compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

double rig_fleet_ttft_quantile(const struct rig_fleet_results *results, double q)
{
    RIG_ASSERT(results != NULL && q >= 0.0 && q <= 1.0);
    int64_t *ttft = malloc(sizeof *ttft * (size_t)(results->request_count + 1));
    if (ttft == NULL) return NAN;
    int64_t n = 0;
    for (int64_t i = 0; i < results->request_count; i++) {
        const struct rig_fleet_request *r = &results->requests[i];
        if (r->first_token_ns >= 0) ttft[n++] = r->first_token_ns - r->arrival_ns;
    }
    double value = NAN;
    if (n > 0) {
        qsort(ttft, (size_t)n, sizeof *ttft, rig__compare_i64);
        int64_t k = (int64_t)ceil(q * (double)n) - 1; /* nearest rank */
        value = (double)ttft[k < 0 ? 0 : k] * 1e-9;
    }
    free(ttft);
    return value;
}
