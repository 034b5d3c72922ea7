/* requests.c — written-out requests of a scenario and the sampling keys every request source
 * shares (see scenario.h; docs/scenarios.md "Requests"). A prompt is: optionally the first
 * `prefix_len` tokens of an earlier request (`prefix_from`), then explicit `tokens` or
 * `random: N` seeded ids; or a copy of an earlier request (`same_prompt_as`). */
#include <stdio.h>
#include <string.h>

#include "core/harness/scenario/build.h"

/* c0 of the token counter for written-out requests; workloads use their index (< 64). */
#define RIG__EXPLICIT_STREAM 0xFFFFFFFFu

static enum rig_status rig__parse_stop(struct rig_scenario_build *b, struct fy_node *list,
                                       struct rig_scenario_sampling *sampling)
{
    struct rig_yaml *y = &b->yaml;
    enum rig_status status = rig_yaml_sequence(y, list, "stop_token_ids");
    if (status < 0) return status;
    if (fy_node_sequence_item_count(list) > RIG_SCENARIO_STOP_MAX)
        return rig_yaml_fail(y, list, RIG_E_CAPACITY, "at most %d stop_token_ids",
                             RIG_SCENARIO_STOP_MAX);
    sampling->stop_count = 0;
    void *iter = NULL;
    struct fy_node *item;
    while ((item = fy_node_sequence_iterate(list, &iter)) != NULL) {
        int64_t id = 0;
        status = rig_yaml_int(y, item, "stop_token_ids", 0, INT32_MAX, &id);
        if (status < 0) return status;
        sampling->stop_token_ids[sampling->stop_count++] = (int32_t)id;
    }
    return RIG_OK;
}

enum rig_status rig_scenario_parse_sampling(struct rig_scenario_build *b, struct fy_node *map,
                                            struct rig_scenario_sampling *sampling,
                                            int32_t *max_tokens)
{
    struct rig_yaml *y = &b->yaml;
    struct rig_scenario_sampling s = *sampling;
    double temperature = s.temperature, top_p = s.top_p;
    int64_t top_k = s.top_k, tokens = *max_tokens, seed = -1;
    enum rig_status status = rig_yaml_key_int(y, map, "max_tokens", 1, 1 << 24, &tokens);
    if (status == RIG_OK)
        status = rig_yaml_key_double(y, map, "temperature", 0.0, 100.0, &temperature);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "top_k", -1, 1 << 30, &top_k);
    if (status == RIG_OK && top_k == 0)
        status = rig_yaml_fail(y, rig_yaml_get(map, "top_k"), RIG_E_RANGE,
                               "'top_k' must be -1 (off) or at least 1");
    if (status == RIG_OK) status = rig_yaml_key_double(y, map, "top_p", 1e-6, 1.0, &top_p);
    if (status == RIG_OK) status = rig_yaml_key_bool(y, map, "ignore_eos", &s.ignore_eos);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "seed", 0, INT64_MAX, &seed);
    struct fy_node *stop = status == RIG_OK ? rig_yaml_get(map, "stop_token_ids") : NULL;
    if (stop != NULL) status = rig__parse_stop(b, stop, &s);
    if (status < 0) return status;
    s.temperature = (float)temperature;
    s.top_p = (float)top_p;
    s.top_k = (int32_t)top_k;
    if (seed >= 0) {
        s.has_seed = true;
        s.seed = (uint64_t)seed;
    }
    *sampling = s;
    *max_tokens = (int32_t)tokens;
    return RIG_OK;
}

/* The request declared before the current one whose id is the scalar `node`. */
static enum rig_status rig__earlier(struct rig_scenario_build *b, struct fy_node *node,
                                    const char *what, int32_t before, int32_t *out)
{
    char id[RIG_SCENARIO_ID_MAX];
    enum rig_status status = rig_yaml_string(&b->yaml, node, what, id, sizeof id);
    if (status < 0) return status;
    for (int32_t i = 0; i < before; i++) {
        if (strcmp(b->scenario->requests[i].id, id) == 0) {
            *out = i;
            return RIG_OK;
        }
    }
    return rig_yaml_fail(&b->yaml, node, RIG_E_INVALID,
                         "'%s: %s' names no request declared before this one", what, id);
}

/* Prompt length: prefix + explicit tokens or random count; validates the combination. */
static enum rig_status rig__prompt_shape(struct rig_scenario_build *b, struct fy_node *map,
                                         int32_t self, int32_t *source, int64_t *prefix,
                                         int64_t *random_count)
{
    struct rig_yaml *y = &b->yaml;
    struct fy_node *same = rig_yaml_get(map, "same_prompt_as");
    struct fy_node *from = rig_yaml_get(map, "prefix_from");
    struct fy_node *tokens = rig_yaml_get(map, "tokens");
    struct fy_node *random = rig_yaml_get(map, "random");
    enum rig_status status = RIG_OK;
    *source = -1;
    *prefix = 0;
    *random_count = 0;
    if (same != NULL && (from != NULL || tokens != NULL || random != NULL))
        return rig_yaml_fail(y, same, RIG_E_INVALID,
                             "'same_prompt_as' cannot be combined with prefix_from, tokens or "
                             "random");
    if (tokens != NULL && random != NULL)
        return rig_yaml_fail(y, random, RIG_E_INVALID, "give either 'tokens' or 'random'");
    if (same != NULL) {
        status = rig__earlier(b, same, "same_prompt_as", self, source);
        if (status == RIG_OK) *prefix = b->scenario->requests[*source].input_len;
        return status;
    }
    if (from != NULL) {
        status = rig__earlier(b, from, "prefix_from", self, source);
        int64_t limit = status == RIG_OK ? b->scenario->requests[*source].input_len : 0;
        *prefix = limit;
        if (status == RIG_OK) status = rig_yaml_key_int(y, map, "prefix_len", 1, limit, prefix);
    } else if (rig_yaml_get(map, "prefix_len") != NULL) {
        return rig_yaml_fail(y, rig_yaml_get(map, "prefix_len"), RIG_E_INVALID,
                             "'prefix_len' needs 'prefix_from'");
    }
    if (status == RIG_OK && random != NULL)
        status = rig_yaml_int(y, random, "random", 1, RIG_SCENARIO_PROMPT_MAX, random_count);
    if (status == RIG_OK && tokens != NULL) status = rig_yaml_sequence(y, tokens, "tokens");
    if (status == RIG_OK && tokens != NULL) *random_count = fy_node_sequence_item_count(tokens);
    if (status == RIG_OK && *prefix + *random_count < 1)
        status = rig_yaml_fail(y, map, RIG_E_INVALID,
                               "a request needs a prompt: tokens, random, same_prompt_as or "
                               "prefix_from");
    if (status == RIG_OK && *prefix + *random_count > RIG_SCENARIO_PROMPT_MAX)
        status = rig_yaml_fail(y, map, RIG_E_CAPACITY, "a prompt longer than %d tokens",
                               RIG_SCENARIO_PROMPT_MAX);
    return status;
}

/* Fills the prompt of request `self` (its token range is already reserved). */
static enum rig_status rig__fill_prompt(struct rig_scenario_build *b, struct fy_node *map,
                                        int32_t self, int32_t source, int64_t prefix)
{
    struct rig_scenario *s = b->scenario;
    struct rig_scenario_request *r = &s->requests[self];
    int32_t *out = s->tokens + r->token_offset;
    if (source >= 0) memcpy(out, s->tokens + s->requests[source].token_offset,
                            (size_t)prefix * sizeof *out);
    struct fy_node *tokens = rig_yaml_get(map, "tokens");
    int64_t rest = r->input_len - prefix;
    if (tokens == NULL) {
        for (int64_t j = 0; j < rest; j++)
            out[prefix + j] = (int32_t)rig_scenario_uniform(
                s->seed, RIG__EXPLICIT_STREAM, (uint32_t)self, (uint32_t)j,
                RIG_SCENARIO_STREAM_TOKENS, 0, 999);
        return RIG_OK;
    }
    void *iter = NULL;
    struct fy_node *item;
    for (int64_t j = 0; (item = fy_node_sequence_iterate(tokens, &iter)) != NULL; j++) {
        int64_t id = 0;
        enum rig_status status = rig_yaml_int(&b->yaml, item, "tokens", 0, INT32_MAX, &id);
        if (status < 0) return status;
        out[prefix + j] = (int32_t)id;
    }
    return RIG_OK;
}

static enum rig_status rig__parse_request(struct rig_scenario_build *b, struct fy_node *map)
{
    static const char *const keys[] = {
        "id",          "at",          "tokens", "random", "same_prompt_as", "prefix_from",
        "prefix_len",  "max_tokens",  "temperature", "top_k", "top_p", "ignore_eos",
        "seed",        "stop_token_ids", "abort_at", NULL};
    struct rig_yaml *y = &b->yaml;
    enum rig_status status = rig_yaml_check_keys(y, map, "a request", keys);
    if (status < 0) return status;
    if (rig_yaml_get(map, "id") == NULL)
        return rig_yaml_fail(y, map, RIG_E_INVALID, "a request needs an 'id'");
    int32_t self = b->scenario->request_count;
    int32_t source;
    int64_t prefix, rest;
    status = rig__prompt_shape(b, map, self, &source, &prefix, &rest);
    struct rig_scenario_sampling sampling = b->defaults;
    int32_t max_tokens = b->default_max_tokens;
    if (status == RIG_OK) status = rig_scenario_parse_sampling(b, map, &sampling, &max_tokens);
    if (status == RIG_OK)
        status = rig_scenario_build_budget(b, map, "the requests up to this one", 1,
                                           prefix + rest, max_tokens);
    if (status < 0) return status;
    struct rig_scenario_request *r = rig_scenario_build_request(b, map);
    if (r == NULL) return RIG_E_NO_MEMORY;
    r->sampling = sampling;
    r->max_tokens = max_tokens;
    b->output_tokens += max_tokens;
    status = rig_yaml_key_string(y, map, "id", r->id, sizeof r->id);
    if (status == RIG_OK) status = rig_yaml_key_duration_ns(y, map, "at", &r->arrival_ns);
    if (status == RIG_OK) status = rig_yaml_key_duration_ns(y, map, "abort_at", &r->abort_ns);
    if (status < 0) return status;
    r->input_len = (int32_t)(prefix + rest);
    int64_t offset = rig_scenario_build_tokens(b, map, r->input_len);
    if (offset < 0) return RIG_E_CAPACITY;
    b->scenario->requests[self].token_offset = offset;
    return rig__fill_prompt(b, map, self, source, prefix);
}

enum rig_status rig_scenario_parse_requests(struct rig_scenario_build *b, struct fy_node *list)
{
    enum rig_status status = rig_yaml_sequence(&b->yaml, list, "requests");
    void *iter = NULL;
    struct fy_node *item;
    while (status == RIG_OK && (item = fy_node_sequence_iterate(list, &iter)) != NULL)
        status = rig__parse_request(b, item);
    return status;
}
