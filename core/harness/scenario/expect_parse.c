/* expect_parse.c — the `expect:` list of a scenario (see expect.h, docs/scenarios.md).
 * Forms: {request: ID, <request field>: V, same_output_as: ID, starts_after: ID},
 * {step: N, <step field>: V, requests: [IDs]}, {metric: NAME, min: X, max: Y} and
 * {<total>: V, ...}. V is a number (exact) or {min: X, max: Y}; time fields take durations.
 * One item may hold several checks; each becomes its own struct rig_scenario_expect. */
#include <math.h>
#include <string.h>

#include "core/harness/scenario/build.h"
#include "core/harness/scenario/expect.h"

/* `node` as bounds: a number (lo = hi) or {min, max}; durations in seconds when is_time. */
static enum rig_status rig__bounds(struct rig_scenario_build *b, struct fy_node *node,
                                   const char *what, bool is_time, double *lo, double *hi)
{
    static const char *const keys[] = {"min", "max", NULL};
    struct rig_yaml *y = &b->yaml;
    *lo = -INFINITY;
    *hi = INFINITY;
    struct fy_node *parts[2] = {node, NULL};
    enum rig_status status = RIG_OK;
    if (fy_node_is_mapping(node)) {
        status = rig_yaml_check_keys(y, node, what, keys);
        parts[0] = status == RIG_OK ? rig_yaml_get(node, "min") : NULL;
        parts[1] = status == RIG_OK ? rig_yaml_get(node, "max") : NULL;
        if (status == RIG_OK && parts[0] == NULL && parts[1] == NULL)
            status = rig_yaml_fail(y, node, RIG_E_INVALID, "'%s' needs min or max", what);
    }
    double values[2] = {0, 0};
    for (int i = 0; i < 2 && status == RIG_OK; i++) {
        if (parts[i] == NULL) continue;
        int64_t ns = 0;
        status = is_time ? rig_yaml_duration_ns(y, parts[i], what, &ns)
                         : rig_yaml_double(y, parts[i], what, -1e18, 1e18, &values[i]);
        if (is_time) values[i] = (double)ns * 1e-9;
    }
    if (status < 0) return status;
    if (!fy_node_is_mapping(node)) {
        *lo = *hi = values[0];
    } else {
        if (parts[0] != NULL) *lo = values[0];
        if (parts[1] != NULL) *hi = values[1];
    }
    return RIG_OK;
}

static enum rig_status rig__request_id(struct rig_scenario_build *b, struct fy_node *node,
                                       const char *what, int32_t *uid)
{
    char id[RIG_SCENARIO_ID_MAX];
    enum rig_status status = rig_yaml_string(&b->yaml, node, what, id, sizeof id);
    if (status < 0) return status;
    *uid = rig_scenario_find(b->scenario, id);
    if (*uid >= 0) return RIG_OK;
    return rig_yaml_fail(&b->yaml, node, RIG_E_INVALID, "'%s: %s' names no request", what, id);
}

/* Adds a check of `field` with the value at `node`; names map enum-valued fields. */
static enum rig_status rig__add(struct rig_scenario_build *b, struct fy_node *item,
                                struct fy_node *node, enum rig_expect_kind kind, int32_t field,
                                const char *what, int32_t request, int64_t step, bool is_time)
{
    double lo, hi;
    enum rig_status status;
    bool reason = kind == RIG_EXPECT_REQUEST && field == RIG_FIELD_FINISH_REASON;
    bool phase = kind == RIG_EXPECT_STEP && field == RIG_FIELD_PHASE;
    if (reason || phase) {
        static const char *const reasons[] = {"none", "length", "stop", "abort", "rejected",
                                              NULL};
        static const char *const phases[] = {"prefill", "decode", "mixed", NULL};
        int32_t value = 0;
        status = rig_yaml_enum(&b->yaml, node, what, reason ? reasons : phases, &value);
        lo = hi = value;
    } else {
        status = rig__bounds(b, node, what, is_time, &lo, &hi);
    }
    if (status < 0) return status;
    struct rig_scenario_expect *e = rig_scenario_build_expect(b, node);
    if (e == NULL) return RIG_E_CAPACITY;
    (void)item;
    e->kind = kind;
    e->field = field;
    e->request = request;
    e->step = step;
    e->lo = lo;
    e->hi = hi;
    return RIG_OK;
}

static int32_t rig__field(const char *const *names, const char *key)
{
    for (int32_t i = 0; names[i] != NULL; i++)
        if (strcmp(names[i], key) == 0) return i;
    return -1;
}

static enum rig_status rig__parse_request_item(struct rig_scenario_build *b, struct fy_node *map)
{
    static const char *const keys[] = {"request", "cached_len", "output_len", "input_len",
                                       "finish_reason", "ttft", "e2e", "same_output_as",
                                       "starts_after", NULL};
    int32_t uid = -1;
    enum rig_status status = rig_yaml_check_keys(&b->yaml, map, "a request expectation", keys);
    if (status == RIG_OK) status = rig__request_id(b, rig_yaml_get(map, "request"), "request",
                                                   &uid);
    void *iter = NULL;
    struct fy_node_pair *pair;
    while (status == RIG_OK && (pair = fy_node_mapping_iterate(map, &iter)) != NULL) {
        const char *key = fy_node_get_scalar0(fy_node_pair_key(pair));
        struct fy_node *value = fy_node_pair_value(pair);
        int32_t field = rig__field(rig_expect_request_fields, key);
        if (field >= 0) {
            bool is_time = field == RIG_FIELD_TTFT || field == RIG_FIELD_E2E;
            status = rig__add(b, map, value, RIG_EXPECT_REQUEST, field, key, uid, -1, is_time);
        } else if (strcmp(key, "same_output_as") == 0 || strcmp(key, "starts_after") == 0) {
            int32_t other = -1;
            status = rig__request_id(b, value, key, &other);
            struct rig_scenario_expect *e =
                status == RIG_OK ? rig_scenario_build_expect(b, value) : NULL;
            if (status == RIG_OK && e == NULL) status = RIG_E_CAPACITY;
            if (status < 0) break;
            e->kind = strcmp(key, "same_output_as") == 0 ? RIG_EXPECT_SAME_OUTPUT
                                                         : RIG_EXPECT_STARTS_AFTER;
            e->request = uid;
            e->other = other;
        }
    }
    return status;
}

static enum rig_status rig__parse_step_requests(struct rig_scenario_build *b,
                                                struct fy_node *list, int64_t step)
{
    enum rig_status status = rig_yaml_sequence(&b->yaml, list, "requests");
    if (status < 0) return status;
    int64_t count = fy_node_sequence_item_count(list);
    int64_t offset = rig_scenario_build_uids(b, list, count);
    if (offset < 0) return RIG_E_NO_MEMORY;
    void *iter = NULL;
    struct fy_node *item;
    for (int64_t k = 0; (item = fy_node_sequence_iterate(list, &iter)) != NULL; k++) {
        int32_t uid = -1;
        status = rig__request_id(b, item, "requests", &uid);
        if (status < 0) return status;
        b->scenario->expect_uids[offset + k] = uid;
    }
    struct rig_scenario_expect *e = rig_scenario_build_expect(b, list);
    if (e == NULL) return RIG_E_CAPACITY;
    e->kind = RIG_EXPECT_STEP_REQUESTS;
    e->step = step;
    e->ids_offset = offset;
    e->ids_count = (int32_t)count;
    return RIG_OK;
}

static enum rig_status rig__parse_step_item(struct rig_scenario_build *b, struct fy_node *map)
{
    static const char *const keys[] = {"step",        "phase",      "batch_size", "tokens",
                                       "padded_size", "graph_used", "requests",   NULL};
    int64_t step = -1;
    enum rig_status status = rig_yaml_check_keys(&b->yaml, map, "a step expectation", keys);
    if (status == RIG_OK) status = rig_yaml_key_int(&b->yaml, map, "step", 0, INT64_MAX, &step);
    void *iter = NULL;
    struct fy_node_pair *pair;
    while (status == RIG_OK && (pair = fy_node_mapping_iterate(map, &iter)) != NULL) {
        const char *key = fy_node_get_scalar0(fy_node_pair_key(pair));
        struct fy_node *value = fy_node_pair_value(pair);
        int32_t field = rig__field(rig_expect_step_fields, key);
        if (field >= 0)
            status = rig__add(b, map, value, RIG_EXPECT_STEP, field, key, -1, step, false);
        else if (strcmp(key, "requests") == 0)
            status = rig__parse_step_requests(b, value, step);
    }
    return status;
}

static enum rig_status rig__parse_metric_item(struct rig_scenario_build *b, struct fy_node *map)
{
    static const char *const keys[] = {"metric", "min", "max", NULL};
    struct rig_yaml *y = &b->yaml;
    char name[64];
    enum rig_status status = rig_yaml_check_keys(y, map, "a metric expectation", keys);
    if (status == RIG_OK) status = rig_yaml_key_string(y, map, "metric", name, sizeof name);
    int32_t index = status == RIG_OK ? rig_metrics_find(name) : -1;
    if (status == RIG_OK && index < 0)
        status = rig_yaml_fail(y, rig_yaml_get(map, "metric"), RIG_E_INVALID,
                               "unknown metric '%s' (docs/scenarios.md lists them)", name);
    if (status == RIG_OK && rig_yaml_get(map, "min") == NULL && rig_yaml_get(map, "max") == NULL)
        status = rig_yaml_fail(y, map, RIG_E_INVALID, "a metric expectation needs min or max");
    if (status < 0) return status;
    /* The item itself is the {min, max} mapping once "metric" is set aside. */
    bool is_time = rig_metric_names[index].is_time;
    double bounds[2] = {-INFINITY, INFINITY};
    const char *names[2] = {"min", "max"};
    for (int i = 0; i < 2 && status == RIG_OK; i++) {
        struct fy_node *node = rig_yaml_get(map, names[i]);
        int64_t ns = 0;
        if (node == NULL) continue;
        status = is_time ? rig_yaml_duration_ns(y, node, names[i], &ns)
                         : rig_yaml_double(y, node, names[i], -1e18, 1e18, &bounds[i]);
        if (is_time) bounds[i] = (double)ns * 1e-9;
    }
    struct rig_scenario_expect *e = status == RIG_OK ? rig_scenario_build_expect(b, map) : NULL;
    if (status == RIG_OK && e == NULL) status = RIG_E_CAPACITY;
    if (status < 0) return status;
    e->kind = RIG_EXPECT_METRIC;
    e->field = index;
    e->lo = bounds[0];
    e->hi = bounds[1];
    return RIG_OK;
}

static enum rig_status rig__parse_total_item(struct rig_scenario_build *b, struct fy_node *map)
{
    enum rig_status status =
        rig_yaml_check_keys(&b->yaml, map, "an expectation", rig_expect_total_fields);
    void *iter = NULL;
    struct fy_node_pair *pair;
    while (status == RIG_OK && (pair = fy_node_mapping_iterate(map, &iter)) != NULL) {
        const char *key = fy_node_get_scalar0(fy_node_pair_key(pair));
        int32_t field = rig__field(rig_expect_total_fields, key);
        status = rig__add(b, map, fy_node_pair_value(pair), RIG_EXPECT_TOTAL, field, key, -1,
                          -1, false);
    }
    return status;
}

enum rig_status rig_scenario_parse_expects(struct rig_scenario_build *b, struct fy_node *list)
{
    struct rig_yaml *y = &b->yaml;
    enum rig_status status = rig_yaml_sequence(y, list, "expect");
    void *iter = NULL;
    struct fy_node *item;
    while (status == RIG_OK && (item = fy_node_sequence_iterate(list, &iter)) != NULL) {
        status = rig_yaml_mapping(y, item, "an expectation");
        if (status < 0) break;
        if (rig_yaml_get(item, "request") != NULL) status = rig__parse_request_item(b, item);
        else if (rig_yaml_get(item, "step") != NULL) status = rig__parse_step_item(b, item);
        else if (rig_yaml_get(item, "metric") != NULL) status = rig__parse_metric_item(b, item);
        else status = rig__parse_total_item(b, item);
    }
    return status;
}
