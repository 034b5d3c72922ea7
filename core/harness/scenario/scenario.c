/* scenario.c — rig_scenario_load: the top level of a scenario file, model/backend/engine/sim
 * settings, the growing arrays, the arrival sort (see scenario.h, build.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "core/harness/results/results.h"
#include "core/harness/scenario/build.h"
#include "hal/philox.h"

static const char *const rig__backend_names[] = {"sim", "cuda", NULL};
static const char *const rig__policy_names[] = {"prefill_first", "decode_first", "mixed", NULL};
static const char *const rig__cache_names[] = {"radix", "naive", NULL};
/* enum rig_decode_order's values in order (core/engine/engine.h) */
static const char *const rig__decode_order_names[] = {"admission", "longest_first", NULL};

const char *rig_scenario_policy_name(int32_t policy)
{
    if (policy < 0 || policy > RIG_SCENARIO_POLICY_MIXED) return "default";
    return rig__policy_names[policy];
}

const char *rig_scenario_cache_name(int32_t cache)
{
    if (cache < 0 || cache > RIG_SCENARIO_CACHE_NAIVE) return "default";
    return rig__cache_names[cache];
}

const char *rig_scenario_backend_name(enum rig_scenario_backend backend)
{
    RIG_ASSERT(backend == RIG_SCENARIO_BACKEND_SIM || backend == RIG_SCENARIO_BACKEND_CUDA);
    return rig__backend_names[backend];
}

int64_t rig_scenario_uniform(uint64_t key, uint32_t c0, uint32_t c1, uint32_t c2,
                             uint32_t stream, int64_t lo, int64_t hi)
{
    RIG_ASSERT(lo <= hi);
    struct rig_philox_out r = rig_philox4x32(key, c0, c1, c2, stream);
    uint64_t span = (uint64_t)(hi - lo) + 1;
    uint64_t word = ((uint64_t)r.v[0] << 32) | r.v[1];
    /* span <= 2^32 in every use; the modulo bias (< 2^-32) is far below anything observable. */
    return lo + (int64_t)(word % span);
}

/* Grows `*array` (elements of `size` bytes) to hold `needed`, doubling; false when out of
 * memory. */
static bool rig__grow(void **array, int64_t *capacity, int64_t needed, size_t size)
{
    if (needed <= *capacity) return true;
    int64_t next = *capacity > 0 ? *capacity : 16;
    while (next < needed) next *= 2;
    void *grown = realloc(*array, (size_t)next * size);
    if (grown == NULL) return false;
    memset((char *)grown + (size_t)*capacity * size, 0, (size_t)(next - *capacity) * size);
    *array = grown;
    *capacity = next;
    return true;
}

/* Host bytes per request, prompt token and output token (see RIG_SCENARIO_HOST_BYTES_MAX):
 * a request's rows here and in the results, and the run's per-request arrays; a prompt
 * token's id; an output token's id, time and the worst case of one results step (with its
 * request entry) for it, which rig_scenario_run reserves up front. */
#define RIG__BYTES_PER_REQUEST                                                              \
    ((double)sizeof(struct rig_scenario_request) + (double)sizeof(struct rig_results_request) + \
     32.0)
#define RIG__BYTES_PER_PROMPT_TOKEN ((double)sizeof(int32_t))
#define RIG__BYTES_PER_OUTPUT_TOKEN                                                     \
    ((double)(sizeof(int32_t) + sizeof(int64_t) + sizeof(struct rig_results_step) + \
              sizeof(int32_t)))

enum rig_status rig_scenario_build_budget(struct rig_scenario_build *b, struct fy_node *node,
                                          const char *what, int64_t requests,
                                          int64_t prompt_len, int64_t output_len)
{
    const struct rig_scenario *s = b->scenario;
    RIG_ASSERT(requests >= 0 && prompt_len >= 0 && output_len >= 0);
    double budget = (double)RIG_SCENARIO_HOST_BYTES_MAX;
    double loaded = s->request_count * RIG__BYTES_PER_REQUEST +
                    (double)s->token_count * RIG__BYTES_PER_PROMPT_TOKEN +
                    (double)b->output_tokens * RIG__BYTES_PER_OUTPUT_TOKEN;
    double each = RIG__BYTES_PER_REQUEST + (double)prompt_len * RIG__BYTES_PER_PROMPT_TOKEN +
                  (double)output_len * RIG__BYTES_PER_OUTPUT_TOKEN;
    double need = loaded + (double)requests * each;
    if (need <= budget) return RIG_OK;
    double fit = budget > loaded ? (budget - loaded) / each : 0.0;
    return rig_yaml_fail(&b->yaml, node, RIG_E_CAPACITY,
                         "%s need %.2f GiB of host memory, above the scenario budget of %lld "
                         "GiB: one request of %lld prompt and %lld output tokens takes %.2f "
                         "MiB, so at most %.0f such requests fit beside the %d before them",
                         what, need / 1073741824.0,
                         (long long)(RIG_SCENARIO_HOST_BYTES_MAX >> 30), (long long)prompt_len,
                         (long long)output_len, each / 1048576.0, floor(fit),
                         s->request_count);
}

struct rig_scenario_request *rig_scenario_build_request(struct rig_scenario_build *b,
                                                        struct fy_node *node)
{
    struct rig_scenario *s = b->scenario;
    if (s->request_count >= RIG_SCENARIO_REQUESTS_MAX) {
        rig_yaml_fail(&b->yaml, node, RIG_E_CAPACITY, "more than %d requests",
                      RIG_SCENARIO_REQUESTS_MAX);
        return NULL;
    }
    if (!rig__grow((void **)&s->requests, &b->request_capacity, s->request_count + 1,
                   sizeof *s->requests)) {
        rig_yaml_fail(&b->yaml, node, RIG_E_NO_MEMORY, "out of memory for requests");
        return NULL;
    }
    struct rig_scenario_request *r = &s->requests[s->request_count++];
    memset(r, 0, sizeof *r);
    r->abort_ns = -1;
    r->workload = -1;
    r->max_tokens = b->default_max_tokens;
    r->sampling = b->defaults;
    int32_t column;
    rig_yaml_position(node, &r->line, &column);
    return r;
}

int64_t rig_scenario_build_tokens(struct rig_scenario_build *b, struct fy_node *node,
                                  int64_t count)
{
    struct rig_scenario *s = b->scenario;
    RIG_ASSERT(count >= 0);
    if (s->token_count + count > RIG_SCENARIO_TOKENS_MAX) {
        rig_yaml_fail(&b->yaml, node, RIG_E_CAPACITY, "more than %lld prompt tokens in all",
                      (long long)RIG_SCENARIO_TOKENS_MAX);
        return -1;
    }
    if (!rig__grow((void **)&s->tokens, &b->token_capacity, s->token_count + count,
                   sizeof *s->tokens)) {
        rig_yaml_fail(&b->yaml, node, RIG_E_NO_MEMORY, "out of memory for prompt tokens");
        return -1;
    }
    int64_t offset = s->token_count;
    s->token_count += count;
    return offset;
}

struct rig_scenario_expect *rig_scenario_build_expect(struct rig_scenario_build *b,
                                                      struct fy_node *node)
{
    struct rig_scenario *s = b->scenario;
    if (s->expect_count >= RIG_SCENARIO_EXPECT_MAX) {
        rig_yaml_fail(&b->yaml, node, RIG_E_CAPACITY, "more than %d expectations",
                      RIG_SCENARIO_EXPECT_MAX);
        return NULL;
    }
    if (!rig__grow((void **)&s->expects, &b->expect_capacity, s->expect_count + 1,
                   sizeof *s->expects)) {
        rig_yaml_fail(&b->yaml, node, RIG_E_NO_MEMORY, "out of memory for expectations");
        return NULL;
    }
    struct rig_scenario_expect *e = &s->expects[s->expect_count++];
    memset(e, 0, sizeof *e);
    e->request = -1;
    e->other = -1;
    e->step = -1;
    rig_yaml_position(node, &e->line, &e->column);
    return e;
}

int64_t rig_scenario_build_uids(struct rig_scenario_build *b, struct fy_node *node,
                                int64_t count)
{
    struct rig_scenario *s = b->scenario;
    if (!rig__grow((void **)&s->expect_uids, &b->uid_capacity, s->expect_uid_count + count,
                   sizeof *s->expect_uids)) {
        rig_yaml_fail(&b->yaml, node, RIG_E_NO_MEMORY, "out of memory for expectations");
        return -1;
    }
    int64_t offset = s->expect_uid_count;
    s->expect_uid_count += count;
    return offset;
}

static enum rig_status rig__parse_model(struct rig_scenario_build *b, struct fy_node *map)
{
    static const char *const keys[] = {"preset", "path", "config", "dummy_weights",
                                       "weights_seed", "skip_weight_check", NULL};
    struct rig_yaml *y = &b->yaml;
    struct rig_scenario_model *m = &b->scenario->model;
    enum rig_status status = rig_yaml_check_keys(y, map, "model", keys);
    int64_t seed = 0;
    if (status == RIG_OK) status = rig_yaml_key_string(y, map, "preset", m->preset,
                                                       sizeof m->preset);
    if (status == RIG_OK) status = rig_yaml_key_string(y, map, "path", m->path, sizeof m->path);
    if (status == RIG_OK) status = rig_yaml_key_string(y, map, "config", m->config,
                                                       sizeof m->config);
    if (status == RIG_OK) status = rig_yaml_key_bool(y, map, "dummy_weights", &m->dummy_weights);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "weights_seed", 0, INT64_MAX, &seed);
    if (status == RIG_OK)
        status = rig_yaml_key_bool(y, map, "skip_weight_check", &m->skip_weight_check);
    if (status < 0) return status;
    m->weights_seed = (uint64_t)seed;
    int32_t sources = (m->preset[0] != 0) + (m->path[0] != 0) + (m->config[0] != 0);
    if (sources != 1)
        return rig_yaml_fail(y, map, RIG_E_INVALID,
                             "model needs exactly one of preset, path or config");
    if (m->preset[0] != 0 || m->config[0] != 0) m->dummy_weights = true;
    return RIG_OK;
}

static enum rig_status rig__parse_engine_ints(struct rig_scenario_build *b, struct fy_node *map)
{
    struct rig_yaml *y = &b->yaml;
    struct rig_scenario_engine *e = &b->scenario->engine;
    int64_t v[8] = {e->num_pages, e->page_size,    e->max_running_req, e->max_seq_len,
                    e->prefill_budget, e->cuda_graph_max_bs, e->tp_size, e->max_requests};
    enum rig_status status = rig_yaml_key_int(y, map, "num_pages", 1, INT32_MAX, &v[0]);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "page_size", 1, 1024, &v[1]);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "max_running_req", 1, 65536, &v[2]);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "max_seq_len", 1, 1 << 24, &v[3]);
    if (status == RIG_OK)
        status = rig_yaml_key_int(y, map, "prefill_budget", 1, 1 << 24, &v[4]);
    if (status == RIG_OK)
        status = rig_yaml_key_int(y, map, "cuda_graph_max_bs", 0, 65536, &v[5]);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "tp_size", 1, 8, &v[6]);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "max_requests", 1, 65536, &v[7]);
    if (status < 0) return status;
    e->num_pages = v[0];
    e->page_size = (int32_t)v[1];
    e->max_running_req = (int32_t)v[2];
    e->max_seq_len = (int32_t)v[3];
    e->prefill_budget = (int32_t)v[4];
    e->cuda_graph_max_bs = (int32_t)v[5];
    e->tp_size = (int32_t)v[6];
    e->max_requests = (int32_t)v[7];
    return RIG_OK;
}

static enum rig_status rig__parse_engine(struct rig_scenario_build *b, struct fy_node *map)
{
    static const char *const keys[] = {"num_pages",      "page_size",         "max_running_req",
                                       "max_seq_len",    "prefill_budget",    "cuda_graph_max_bs",
                                       "tp_size",        "policy",            "cache",
                                       "overlap",        "collective_timeout", "max_requests",
                                       "decode_order",   NULL};
    struct rig_yaml *y = &b->yaml;
    struct rig_scenario_engine *e = &b->scenario->engine;
    enum rig_status status = rig_yaml_check_keys(y, map, "engine", keys);
    if (status == RIG_OK) status = rig__parse_engine_ints(b, map);
    if (status == RIG_OK) status = rig_yaml_key_enum(y, map, "policy", rig__policy_names,
                                                     &e->policy);
    if (status == RIG_OK) status = rig_yaml_key_enum(y, map, "cache", rig__cache_names,
                                                     &e->cache);
    if (status == RIG_OK)
        status = rig_yaml_key_enum(y, map, "decode_order", rig__decode_order_names,
                                   &e->decode_order);
    if (status == RIG_OK)
        status = rig_yaml_key_duration_ns(y, map, "collective_timeout", &e->collective_timeout_ns);
    bool overlap = false;
    struct fy_node *node = status == RIG_OK ? rig_yaml_get(map, "overlap") : NULL;
    if (node != NULL) {
        status = rig_yaml_bool(y, node, "overlap", &overlap);
        e->overlap = overlap;
    }
    return status;
}

/* sim.fault: {kind: late|stall|fail, rank: R, collective: N, delay: 5ms}. */
static enum rig_status rig__parse_fault(struct rig_scenario_build *b, struct fy_node *map)
{
    static const char *const keys[] = {"kind", "rank", "collective", "delay", NULL};
    static const char *const kinds[] = {"none", "late", "stall", "fail", NULL};
    struct rig_yaml *y = &b->yaml;
    struct rig_scenario_fault *f = &b->scenario->sim.fault;
    int32_t kind = 0;
    int64_t rank = 0, collective = 0;
    enum rig_status status = rig_yaml_mapping(y, map, "sim.fault");
    if (status == RIG_OK) status = rig_yaml_check_keys(y, map, "sim.fault", keys);
    if (status == RIG_OK) status = rig_yaml_key_enum(y, map, "kind", kinds, &kind);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "rank", 0, 7, &rank);
    if (status == RIG_OK)
        status = rig_yaml_key_int(y, map, "collective", 0, INT64_MAX / 2, &collective);
    if (status == RIG_OK) status = rig_yaml_key_duration_ns(y, map, "delay", &f->delay_ns);
    if (status < 0) return status;
    snprintf(f->kind, sizeof f->kind, "%s", kinds[kind]);
    f->rank = (int32_t)rank;
    f->collective = collective;
    return RIG_OK;
}

static enum rig_status rig__parse_sim(struct rig_scenario_build *b, struct fy_node *map)
{
    static const char *const keys[] = {"profile", "timing_only", "fault", NULL};
    struct rig_yaml *y = &b->yaml;
    struct rig_scenario_sim *sim = &b->scenario->sim;
    enum rig_status status = rig_yaml_check_keys(y, map, "sim", keys);
    if (status == RIG_OK)
        status = rig_yaml_key_string(y, map, "profile", sim->profile, sizeof sim->profile);
    if (status == RIG_OK) status = rig_yaml_key_bool(y, map, "timing_only", &sim->timing_only);
    struct fy_node *fault = status == RIG_OK ? rig_yaml_get(map, "fault") : NULL;
    if (fault != NULL) status = rig__parse_fault(b, fault);
    return status;
}

/* cluster: {replicas: N, tp: T, router: round_robin|least_load|cache_aware, load_cap: L}. */
static enum rig_status rig__parse_cluster(struct rig_scenario_build *b, struct fy_node *map)
{
    static const char *const keys[] = {"replicas", "tp", "router", "load_cap", NULL};
    static const char *const routers[] = {"round_robin", "least_load", "cache_aware", NULL};
    struct rig_yaml *y = &b->yaml;
    struct rig_scenario_cluster *c = &b->scenario->cluster;
    int64_t replicas = 1, tp = 0, load_cap = 0;
    int32_t router = RIG_SCENARIO_ROUND_ROBIN;
    enum rig_status status = rig_yaml_mapping(y, map, "cluster");
    if (status == RIG_OK) status = rig_yaml_check_keys(y, map, "cluster", keys);
    if (status == RIG_OK)
        status = rig_yaml_key_int(y, map, "replicas", 1, RIG_SCENARIO_REPLICAS_MAX, &replicas);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "tp", 1, 8, &tp);
    if (status == RIG_OK) status = rig_yaml_key_enum(y, map, "router", routers, &router);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "load_cap", 1, 1 << 20, &load_cap);
    if (status == RIG_OK && b->scenario->backend != RIG_SCENARIO_BACKEND_SIM)
        status = rig_yaml_fail(y, map, RIG_E_INVALID,
                               "cluster: a fleet runs on the simulator only (backend: sim)");
    if (status < 0) return status;
    *c = (struct rig_scenario_cluster){(int32_t)replicas, (int32_t)tp, router, (int32_t)load_cap};
    return RIG_OK;
}

/* `stall: {rank, op, duration}` of the faults section. */
static enum rig_status rig__parse_stall(struct rig_scenario_build *b, struct fy_node *map)
{
    static const char *const keys[] = {"rank", "op", "duration", NULL};
    struct rig_yaml *y = &b->yaml;
    struct rig_scenario_faults *f = &b->scenario->faults;
    int64_t rank = 0, op = -1, ns = 0;
    enum rig_status status = rig_yaml_mapping(y, map, "stall");
    if (status == RIG_OK) status = rig_yaml_check_keys(y, map, "stall", keys);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "rank", 0, 7, &rank);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "op", 0, INT64_MAX, &op);
    if (status == RIG_OK) status = rig_yaml_key_duration_ns(y, map, "duration", &ns);
    if (status < 0) return status;
    if (rig_yaml_get(map, "op") == NULL || rig_yaml_get(map, "duration") == NULL)
        return rig_yaml_fail(y, map, RIG_E_INVALID, "stall needs 'op' and 'duration'");
    f->stall_rank = (int32_t)rank;
    f->stall_op = op;
    f->stall_ns = ns;
    return RIG_OK;
}

static enum rig_status rig__parse_faults(struct rig_scenario_build *b, struct fy_node *map)
{
    static const char *const keys[] = {"start_alloc_fail", "stall", "until_step", NULL};
    struct rig_yaml *y = &b->yaml;
    struct rig_scenario_faults *f = &b->scenario->faults;
    enum rig_status status = rig_yaml_mapping(y, map, "faults");
    if (status == RIG_OK) status = rig_yaml_check_keys(y, map, "faults", keys);
    if (status == RIG_OK)
        status = rig_yaml_key_int(y, map, "start_alloc_fail", 0, INT64_MAX,
                                  &f->start_alloc_fail);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "until_step", 0, INT64_MAX,
                                                    &f->until_step);
    struct fy_node *stall = status == RIG_OK ? rig_yaml_get(map, "stall") : NULL;
    if (stall != NULL) status = rig__parse_stall(b, stall);
    if (status < 0) return status;
    if (b->scenario->backend != RIG_SCENARIO_BACKEND_SIM)
        return rig_yaml_fail(y, map, RIG_E_INVALID, "faults are injected on the simulator "
                             "only (backend: sim)");
    if (b->scenario->cluster.replicas > 0)
        return rig_yaml_fail(y, map, RIG_E_INVALID, "faults: a fleet (cluster:) injects none");
    const char *kind = b->scenario->sim.fault.kind;
    if (kind[0] != '\0' && strcmp(kind, "none") != 0) /* each would replace the other's plan */
        return rig_yaml_fail(y, map, RIG_E_INVALID, "faults: not with sim.fault (one plan a rank)");
    if (f->stall_op >= 0 && f->stall_rank >= b->scenario->engine.tp_size)
        return rig_yaml_fail(y, stall, RIG_E_RANGE, "stall rank %d: the engine has %d rank%s",
                             f->stall_rank, b->scenario->engine.tp_size,
                             b->scenario->engine.tp_size == 1 ? "" : "s");
    f->set = true;
    return RIG_OK;
}

static enum rig_status rig__parse_defaults(struct rig_scenario_build *b, struct fy_node *map)
{
    static const char *const keys[] = {"max_tokens", "temperature", "top_k", "top_p",
                                       "ignore_eos", "seed", "stop_token_ids", NULL};
    enum rig_status status = rig_yaml_check_keys(&b->yaml, map, "defaults", keys);
    if (status < 0) return status;
    return rig_scenario_parse_sampling(b, map, &b->defaults, &b->default_max_tokens);
}

/* A scenario's name is an identifier: it becomes the default results file out/<name>.h5, so
 * '/', "..", a leading '.' or '-' and the empty name would write elsewhere or oddly. */
static enum rig_status rig__check_name(struct rig_scenario_build *b, struct fy_node *root)
{
    const char *name = b->scenario->name;
    size_t good = strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789_-.");
    if (name[0] != '\0' && name[good] == '\0' && name[0] != '.' && name[0] != '-')
        return RIG_OK;
    return rig_yaml_fail(&b->yaml, rig_yaml_get(root, "name"), RIG_E_INVALID,
                         "'name' must be an identifier (letters, digits, '_', '-' and '.', "
                         "not first), not '%s'", name);
}

static enum rig_status rig__parse_settings(struct rig_scenario_build *b, struct fy_node *root)
{
    struct rig_yaml *y = &b->yaml;
    struct rig_scenario *s = b->scenario;
    int32_t backend = RIG_SCENARIO_BACKEND_SIM;
    int64_t seed = 0;
    enum rig_status status = rig_yaml_key_string(y, root, "name", s->name, sizeof s->name);
    if (status == RIG_OK && rig_yaml_get(root, "name") == NULL)
        status = rig_yaml_fail(y, root, RIG_E_INVALID, "the scenario needs a 'name'");
    if (status == RIG_OK) status = rig__check_name(b, root);
    struct fy_node *description = rig_yaml_get(root, "description");
    if (status == RIG_OK && description != NULL)
        status = rig_yaml_text(y, description, "description");
    if (status == RIG_OK)
        status = rig_yaml_key_enum(y, root, "backend", rig__backend_names, &backend);
    if (status == RIG_OK) status = rig_yaml_key_int(y, root, "seed", 0, INT64_MAX, &seed);
    if (status < 0) return status;
    s->backend = (enum rig_scenario_backend)backend;
    s->seed = (uint64_t)seed;
    struct fy_node *node = rig_yaml_get(root, "model");
    if (node == NULL) return rig_yaml_fail(y, root, RIG_E_INVALID, "the scenario needs a 'model'");
    status = rig__parse_model(b, node);
    node = rig_yaml_get(root, "engine");
    if (status == RIG_OK && node != NULL) status = rig__parse_engine(b, node);
    node = rig_yaml_get(root, "sim");
    if (status == RIG_OK && node != NULL) status = rig__parse_sim(b, node);
    node = rig_yaml_get(root, "cluster");
    if (status == RIG_OK && node != NULL) status = rig__parse_cluster(b, node);
    node = rig_yaml_get(root, "defaults");
    if (status == RIG_OK && node != NULL) status = rig__parse_defaults(b, node);
    node = rig_yaml_get(root, "faults");
    if (status == RIG_OK && node != NULL) status = rig__parse_faults(b, node);
    return status;
}

/* Sort keys: ties keep declaration order (the index), so the sort is stable. */
struct rig__arrival_key {
    int64_t arrival_ns;
    int32_t index;
};

struct rig__id_key {
    const char *id;
    int32_t index;
};

static int rig__by_arrival(const void *a, const void *b)
{
    const struct rig__arrival_key *x = a, *y = b;
    if (x->arrival_ns != y->arrival_ns) return x->arrival_ns < y->arrival_ns ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int rig__by_id(const void *a, const void *b)
{
    const struct rig__id_key *x = a, *y = b;
    int order = strcmp(x->id, y->id);
    return order != 0 ? order : (x->index > y->index) - (x->index < y->index);
}

static enum rig_status rig__check_unique_ids(struct rig_scenario_build *b,
                                             struct rig__id_key *keys)
{
    const struct rig_scenario *s = b->scenario;
    int32_t n = s->request_count;
    for (int32_t i = 0; i < n; i++) keys[i] = (struct rig__id_key){s->requests[i].id, i};
    qsort(keys, (size_t)n, sizeof *keys, rig__by_id);
    for (int32_t i = 1; i < n; i++) {
        if (strcmp(keys[i].id, keys[i - 1].id) != 0) continue;
        return rig_yaml_fail(&b->yaml, NULL, RIG_E_INVALID,
                             "request id '%s' is used twice (lines %d and %d)", keys[i].id,
                             s->requests[keys[i - 1].index].line,
                             s->requests[keys[i].index].line);
    }
    return RIG_OK;
}

/* Sorts the requests by arrival (uid = position) and rejects duplicate ids. */
static enum rig_status rig__finish_requests(struct rig_scenario_build *b, struct fy_node *root)
{
    struct rig_scenario *s = b->scenario;
    int32_t n = s->request_count;
    if (n == 0)
        return rig_yaml_fail(&b->yaml, root, RIG_E_INVALID,
                             "the scenario has no requests (add 'requests' or 'workloads')");
    struct rig__id_key *ids = malloc((size_t)n * sizeof *ids);
    struct rig__arrival_key *order = malloc((size_t)n * sizeof *order);
    struct rig_scenario_request *sorted = malloc((size_t)n * sizeof *sorted);
    enum rig_status status = RIG_OK;
    if (ids == NULL || order == NULL || sorted == NULL)
        status = rig_yaml_fail(&b->yaml, root, RIG_E_NO_MEMORY, "out of memory");
    if (status == RIG_OK) status = rig__check_unique_ids(b, ids);
    if (status == RIG_OK) {
        for (int32_t i = 0; i < n; i++)
            order[i] = (struct rig__arrival_key){s->requests[i].arrival_ns, i};
        qsort(order, (size_t)n, sizeof *order, rig__by_arrival);
        for (int32_t i = 0; i < n; i++) sorted[i] = s->requests[order[i].index];
        memcpy(s->requests, sorted, (size_t)n * sizeof *sorted);
    }
    free(ids);
    free(order);
    free(sorted);
    return status;
}

static enum rig_status rig__load_document(struct rig_scenario_build *b, struct fy_document *doc,
                                          const char *const *sets, int32_t set_count)
{
    static const char *const keys[] = {"name",     "description", "model",     "backend",
                                       "sim",      "engine",      "seed",      "defaults",
                                       "requests", "workloads",   "expect",    "cluster",
                                       "faults",
                                       NULL};
    struct rig_yaml *y = &b->yaml;
    enum rig_status status = RIG_OK;
    if (set_count < 0 || set_count > RIG_SCENARIO_SETS_MAX)
        return rig_yaml_fail(y, NULL, RIG_E_CAPACITY, "at most %d --set overrides",
                             RIG_SCENARIO_SETS_MAX);
    for (int32_t i = 0; i < set_count && status == RIG_OK; i++)
        status = rig_yaml_override(y, doc, sets[i]);
    struct fy_node *root = fy_document_root(doc);
    if (status == RIG_OK) status = rig_yaml_check_keys(y, root, "the scenario", keys);
    if (status == RIG_OK) status = rig__parse_settings(b, root);
    struct fy_node *node = status == RIG_OK ? rig_yaml_get(root, "requests") : NULL;
    if (node != NULL) status = rig_scenario_parse_requests(b, node);
    node = status == RIG_OK ? rig_yaml_get(root, "workloads") : NULL;
    if (node != NULL) status = rig_scenario_parse_workloads(b, node);
    if (status == RIG_OK) status = rig__finish_requests(b, root);
    node = status == RIG_OK ? rig_yaml_get(root, "expect") : NULL;
    if (node != NULL) status = rig_scenario_parse_expects(b, node);
    return status;
}

static void rig__init_build(struct rig_scenario_build *b, struct rig_scenario *out,
                            const char *name, char *error, size_t error_len)
{
    memset(out, 0, sizeof *out);
    memset(b, 0, sizeof *b);
    b->yaml.file = name;
    b->yaml.error = error;
    b->yaml.error_len = error_len;
    if (error != NULL && error_len > 0) error[0] = '\0';
    b->scenario = out;
    b->defaults.temperature = 0.0f;
    b->defaults.top_k = -1;
    b->defaults.top_p = 1.0f;
    b->default_max_tokens = 128;
    struct rig_scenario_engine *e = &out->engine;
    e->num_pages = e->page_size = e->max_running_req = e->max_seq_len = RIG_SCENARIO_DEFAULT;
    e->prefill_budget = e->cuda_graph_max_bs = RIG_SCENARIO_DEFAULT;
    e->policy = e->cache = e->overlap = e->max_requests = RIG_SCENARIO_DEFAULT;
    e->decode_order = RIG_SCENARIO_DEFAULT;
    e->tp_size = 1;
    out->faults = (struct rig_scenario_faults){.start_alloc_fail = -1, .stall_op = -1,
                                               .until_step = -1};
    snprintf(out->path, sizeof out->path, "%s", name);
    const char *slash = strrchr(name, '/');
    if (slash != NULL && (size_t)(slash - name) < sizeof b->dir)
        memcpy(b->dir, name, (size_t)(slash - name) + 1);
}

/* out->sha256: SHA-256 (OpenSSL) of the text (or the file's bytes, read in blocks) followed
 * by "\n--set " and each override. RIG_E_IO when the file cannot be read again. */
static enum rig_status rig__content_hash(const char *text, const char *path,
                                         const char *const *sets, int32_t set_count,
                                         struct rig_scenario *out)
{
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    FILE *file = text == NULL ? fopen(path, "rb") : NULL;
    bool ok = context != NULL && EVP_DigestInit_ex(context, EVP_sha256(), NULL) == 1 &&
              (text != NULL || file != NULL);
    if (ok && text != NULL) ok = EVP_DigestUpdate(context, text, strlen(text)) == 1;
    char block[65536];
    for (size_t n; ok && file != NULL && (n = fread(block, 1, sizeof block, file)) > 0;)
        ok = EVP_DigestUpdate(context, block, n) == 1;
    if (file != NULL) ok = ok && !ferror(file);
    for (int32_t i = 0; ok && i < set_count; i++)
        ok = EVP_DigestUpdate(context, "\n--set ", 7) == 1 &&
             EVP_DigestUpdate(context, sets[i], strlen(sets[i])) == 1;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    ok = ok && EVP_DigestFinal_ex(context, digest, &length) == 1 && length == 32;
    for (unsigned int i = 0; ok && i < length; i++)
        snprintf(out->sha256 + 2 * i, 3, "%02x", digest[i]);
    if (file != NULL) fclose(file);
    EVP_MD_CTX_free(context);
    return ok ? RIG_OK : RIG_E_IO;
}

static enum rig_status rig__load(const char *text, const char *name, const char *const *sets,
                                 int32_t set_count, struct rig_scenario *out, char *error,
                                 size_t error_len)
{
    RIG_ASSERT(name != NULL && out != NULL);
    struct rig_scenario_build build;
    rig__init_build(&build, out, name, error, error_len);
    if (text != NULL) build.dir[0] = '\0';
    enum rig_status status;
    struct fy_document *doc = rig_yaml_parse(&build.yaml, text, &status);
    if (doc == NULL) return status;
    status = rig__load_document(&build, doc, sets, set_count);
    fy_document_destroy(doc);
    if (status == RIG_OK && rig__content_hash(text, name, sets, set_count, out) != RIG_OK)
        status = rig_yaml_fail(&build.yaml, NULL, RIG_E_IO, "cannot read the file again to "
                               "hash it");
    if (status < 0) {
        rig_scenario_free(out);
        return status;
    }
    for (int64_t i = 0; i < out->token_count; i++) {
        if (out->tokens[i] > out->token_id_max) out->token_id_max = out->tokens[i];
    }
    return RIG_OK;
}

enum rig_status rig_scenario_load(const char *path, const char *const *sets, int32_t set_count,
                                  struct rig_scenario *out, char *error, size_t error_len)
{
    return rig__load(NULL, path, sets, set_count, out, error, error_len);
}

enum rig_status rig_scenario_load_string(const char *text, const char *name,
                                         const char *const *sets, int32_t set_count,
                                         struct rig_scenario *out, char *error,
                                         size_t error_len)
{
    RIG_ASSERT(text != NULL);
    return rig__load(text, name, sets, set_count, out, error, error_len);
}

void rig_scenario_free(struct rig_scenario *scenario)
{
    if (scenario == NULL) return;
    free(scenario->requests);
    free(scenario->tokens);
    free(scenario->expects);
    free(scenario->expect_uids);
    memset(scenario, 0, sizeof *scenario);
}

int32_t rig_scenario_find(const struct rig_scenario *scenario, const char *id)
{
    for (int32_t i = 0; i < scenario->request_count; i++) {
        if (strcmp(scenario->requests[i].id, id) == 0) return i;
    }
    return -1;
}

const int32_t *rig_scenario_prompt(const struct rig_scenario *scenario, int32_t uid)
{
    RIG_ASSERT(uid >= 0 && uid < scenario->request_count);
    return scenario->tokens + scenario->requests[uid].token_offset;
}
