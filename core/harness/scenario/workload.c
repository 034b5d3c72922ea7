/* workload.c — seeded request generators (docs/scenarios.md "Workloads").
 *
 *   random          count requests, input/output lengths uniform in ranges, ids uniform in a
 *                   token range (sglang.bench_serving --dataset-name random);
 *   minisgl_offline random with Mini-SGLang's offline benchmark parameters as defaults
 *                   (256 requests, lengths 100..1024, ids 0..10000, seed 0, all at t = 0);
 *   shared_prefix   groups x per_group prompts: a group prefix + a per-prompt suffix
 *                   (sglang.bench_serving --dataset-name generated-shared-prefix);
 *   trace           a Qwen-Bailian JSONL trace: timestamp, input_length, output_length,
 *                   hash_ids of block_size-token blocks; equal hash ids give equal tokens.
 *
 * Every draw is Philox(key = seed; counter = (workload, request, index, stream)), so a
 * request's prompt does not depend on how many other requests were generated, and the same
 * file and seed give the same requests on every machine. A finite rate gives Poisson
 * arrivals (exponential gaps, the first request at `start`), as sglang.bench_serving does.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/scenario/build.h"
#include "hal/philox.h"

#define RIG__TRACE_BLOCK_MAX 4096

static const char *const rig__kind_names[] = {"random", "shared_prefix", "trace",
                                              "minisgl_offline", NULL};

/* The parameters of one workload entry, defaults filled in. */
struct rig__workload {
    int32_t index;                 /* in scenario->workloads: Philox counter word 0 */
    int32_t kind;                  /* index into rig__kind_names */
    char name[RIG_SCENARIO_NAME_MAX];
    uint64_t seed;
    int64_t count;
    int64_t input_lo, input_hi;    /* random */
    int64_t output_lo, output_hi;  /* random, shared_prefix (output_len) */
    int64_t token_lo, token_hi;    /* inclusive */
    double rate;                   /* requests per second; inf = all at start */
    int64_t start_ns;
    int64_t groups, per_group, prefix_len, suffix_len; /* shared_prefix */
    bool shuffle;                                      /* shared_prefix */
    char path[RIG_SCENARIO_PATH_MAX];                  /* trace */
    double time_scale;                                 /* trace */
    int64_t block_size;                                /* trace */
    struct rig_scenario_sampling sampling;
    int32_t max_tokens;            /* unused by generators: output_len decides */
};

/* `key: 7` or `key: [lo, hi]`, lo <= hi, inside [min, max]. */
static enum rig_status rig__range(struct rig_scenario_build *b, struct fy_node *map,
                                  const char *key, int64_t min, int64_t max, int64_t *lo,
                                  int64_t *hi)
{
    struct rig_yaml *y = &b->yaml;
    struct fy_node *node = rig_yaml_get(map, key);
    if (node == NULL) return RIG_OK;
    if (fy_node_is_scalar(node)) {
        enum rig_status status = rig_yaml_int(y, node, key, min, max, lo);
        *hi = *lo;
        return status;
    }
    if (!fy_node_is_sequence(node) || fy_node_sequence_item_count(node) != 2)
        return rig_yaml_fail(y, node, RIG_E_INVALID, "'%s' must be a number or [low, high]",
                             key);
    int64_t a = 0, c = 0;
    enum rig_status status = rig_yaml_int(y, fy_node_sequence_get_by_index(node, 0), key, min,
                                          max, &a);
    if (status == RIG_OK)
        status = rig_yaml_int(y, fy_node_sequence_get_by_index(node, 1), key, min, max, &c);
    if (status == RIG_OK && a > c)
        status = rig_yaml_fail(y, node, RIG_E_RANGE, "'%s': low %lld is above high %lld", key,
                               (long long)a, (long long)c);
    if (status == RIG_OK) {
        *lo = a;
        *hi = c;
    }
    return status;
}

static void rig__defaults(struct rig_scenario_build *b, int32_t kind, struct rig__workload *w)
{
    memset(w, 0, sizeof *w);
    w->index = b->scenario->workload_count;
    w->kind = kind;
    snprintf(w->name, sizeof w->name, "%s", rig__kind_names[kind]);
    w->seed = b->scenario->seed;
    w->count = 16;
    w->input_lo = w->input_hi = 128;
    w->output_lo = w->output_hi = 128;
    w->token_lo = 0;
    w->token_hi = 999;
    w->rate = INFINITY;
    /* shared_prefix: sglang.bench_serving's --gsp-* defaults */
    w->groups = 64;
    w->per_group = 16;
    w->prefix_len = 2048;
    w->suffix_len = 128;
    w->time_scale = 1.0;
    w->block_size = 16;
    w->sampling = b->defaults;
    w->sampling.ignore_eos = true; /* benchmark outputs have the lengths asked for */
    w->max_tokens = b->default_max_tokens;
    if (kind == 1) w->output_lo = w->output_hi = 256;
    if (kind == 3) { /* minisgl_offline: Mini-SGLang benchmark/offline/bench.py */
        w->count = 256;
        w->input_lo = w->output_lo = 100;
        w->input_hi = w->output_hi = 1024;
        w->token_hi = 10000;
        w->seed = 0;
    }
}

static enum rig_status rig__parse_common(struct rig_scenario_build *b, struct fy_node *map,
                                         struct rig__workload *w)
{
    struct rig_yaml *y = &b->yaml;
    int64_t seed = (int64_t)w->seed;
    enum rig_status status = rig_yaml_key_string(y, map, "name", w->name, sizeof w->name);
    if (status == RIG_OK) status = rig_yaml_key_int(y, map, "seed", 0, INT64_MAX, &seed);
    if (status == RIG_OK) status = rig_yaml_key_double(y, map, "rate", 1e-9, INFINITY, &w->rate);
    if (status == RIG_OK) status = rig_yaml_key_duration_ns(y, map, "start", &w->start_ns);
    if (status == RIG_OK)
        status = rig__range(b, map, "token_range", 0, INT32_MAX, &w->token_lo, &w->token_hi);
    if (status == RIG_OK) status = rig_scenario_parse_sampling(b, map, &w->sampling,
                                                               &w->max_tokens);
    w->seed = (uint64_t)seed;
    if (status == RIG_OK && strlen(w->name) + 12 > RIG_SCENARIO_ID_MAX)
        status = rig_yaml_fail(y, rig_yaml_get(map, "name"), RIG_E_RANGE,
                               "a workload name must be shorter than %d characters",
                               RIG_SCENARIO_ID_MAX - 12);
    return status;
}

static enum rig_status rig__parse_kind(struct rig_scenario_build *b, struct fy_node *map,
                                       struct rig__workload *w)
{
    struct rig_yaml *y = &b->yaml;
    enum rig_status status = RIG_OK;
    if (w->kind == 0 || w->kind == 3) {
        status = rig_yaml_key_int(y, map, "count", 1, RIG_SCENARIO_REQUESTS_MAX, &w->count);
        if (status == RIG_OK) status = rig__range(b, map, "input_len", 1,
                                                  RIG_SCENARIO_PROMPT_MAX, &w->input_lo,
                                                  &w->input_hi);
    } else if (w->kind == 1) {
        status = rig_yaml_key_int(y, map, "groups", 1, 1 << 20, &w->groups);
        if (status == RIG_OK) status = rig_yaml_key_int(y, map, "per_group", 1, 1 << 20,
                                                        &w->per_group);
        if (status == RIG_OK) status = rig_yaml_key_int(y, map, "prefix_len", 0,
                                                        RIG_SCENARIO_PROMPT_MAX / 2,
                                                        &w->prefix_len);
        if (status == RIG_OK) status = rig_yaml_key_int(y, map, "suffix_len", 1,
                                                        RIG_SCENARIO_PROMPT_MAX / 2,
                                                        &w->suffix_len);
        if (status == RIG_OK) status = rig_yaml_key_bool(y, map, "shuffle", &w->shuffle);
        w->count = w->groups * w->per_group;
        if (status == RIG_OK && w->count > RIG_SCENARIO_REQUESTS_MAX)
            status = rig_yaml_fail(y, map, RIG_E_CAPACITY, "groups x per_group above %d",
                                   RIG_SCENARIO_REQUESTS_MAX);
    } else {
        w->count = RIG_SCENARIO_REQUESTS_MAX;
        status = rig_yaml_key_string(y, map, "path", w->path, sizeof w->path);
        if (status == RIG_OK && w->path[0] == '\0')
            status = rig_yaml_fail(y, map, RIG_E_INVALID, "a trace workload needs a 'path'");
        if (status == RIG_OK) status = rig_yaml_key_double(y, map, "time_scale", 0.0, 1e6,
                                                           &w->time_scale);
        if (status == RIG_OK) status = rig_yaml_key_int(y, map, "limit", 1,
                                                        RIG_SCENARIO_REQUESTS_MAX, &w->count);
        if (status == RIG_OK) status = rig_yaml_key_int(y, map, "block_size", 1,
                                                        RIG__TRACE_BLOCK_MAX, &w->block_size);
    }
    if (status == RIG_OK && w->kind != 2)
        status = rig__range(b, map, "output_len", 1, 1 << 24, &w->output_lo, &w->output_hi);
    return status;
}

/* A generated workload's worst case (every request at the longest lengths drawn) against
 * the scenario's host budget, before a token of it is generated; a trace is checked line by
 * line as it is read (rig__trace_line). */
static enum rig_status rig__check_budget(struct rig_scenario_build *b, struct fy_node *map,
                                         const struct rig__workload *w)
{
    if (w->kind == 2) return RIG_OK;
    char what[RIG_SCENARIO_NAME_MAX + 64];
    snprintf(what, sizeof what, "workload '%s': %lld requests", w->name, (long long)w->count);
    int64_t input = w->kind == 1 ? w->prefix_len + w->suffix_len : w->input_hi;
    return rig_scenario_build_budget(b, map, what, w->count, input, w->output_hi);
}

/* Poisson arrival times: request i arrives after i exponential gaps of mean 1/rate. */
static void rig__arrivals(const struct rig__workload *w, struct rig_scenario_request *first,
                          int64_t count)
{
    double t = 0.0;
    for (int64_t i = 0; i < count; i++) {
        first[i].arrival_ns = w->start_ns + (int64_t)llround(t * 1e9);
        if (isinf(w->rate)) continue;
        struct rig_philox_out r = rig_philox4x32(w->seed, (uint32_t)w->index, (uint32_t)i, 0,
                                                 RIG_SCENARIO_STREAM_ARRIVALS);
        t += -log((double)rig_philox_u32_to_unit(r.v[0])) / w->rate;
    }
}

static int32_t rig__token(const struct rig__workload *w, uint32_t request, uint32_t j)
{
    return (int32_t)rig_scenario_uniform(w->seed, (uint32_t)w->index, request, j,
                                         RIG_SCENARIO_STREAM_TOKENS, w->token_lo, w->token_hi);
}

/* Appends one generated request with `input_len` tokens; returns it, NULL on error. */
static struct rig_scenario_request *rig__append(struct rig_scenario_build *b,
                                                struct fy_node *map,
                                                const struct rig__workload *w, int64_t n,
                                                int64_t input_len, int64_t output_len)
{
    struct rig_scenario_request *r = rig_scenario_build_request(b, map);
    if (r == NULL) return NULL;
    int64_t offset = rig_scenario_build_tokens(b, map, input_len);
    if (offset < 0) return NULL;
    r = &b->scenario->requests[b->scenario->request_count - 1];
    snprintf(r->id, sizeof r->id, "%.35s-%lld", w->name, (long long)n);
    r->token_offset = offset;
    r->input_len = (int32_t)input_len;
    r->max_tokens = (int32_t)output_len;
    r->sampling = w->sampling;
    r->workload = w->index;
    r->line = 0;
    b->output_tokens += output_len;
    return r;
}

static enum rig_status rig__gen_random(struct rig_scenario_build *b, struct fy_node *map,
                                       const struct rig__workload *w)
{
    for (int64_t i = 0; i < w->count; i++) {
        int64_t in = rig_scenario_uniform(w->seed, (uint32_t)w->index, (uint32_t)i, 0,
                                          RIG_SCENARIO_STREAM_LENGTHS, w->input_lo, w->input_hi);
        int64_t out = rig_scenario_uniform(w->seed, (uint32_t)w->index, (uint32_t)i, 1,
                                           RIG_SCENARIO_STREAM_LENGTHS, w->output_lo,
                                           w->output_hi);
        struct rig_scenario_request *r = rig__append(b, map, w, i, in, out);
        if (r == NULL) return RIG_E_CAPACITY;
        int32_t *tokens = b->scenario->tokens + r->token_offset;
        for (int64_t j = 0; j < in; j++) tokens[j] = rig__token(w, (uint32_t)i, (uint32_t)j);
    }
    return RIG_OK;
}

/* A seeded Fisher-Yates permutation of 0..count-1 (sglang shuffles the generated prompts). */
static int64_t *rig__permutation(const struct rig__workload *w)
{
    int64_t *order = malloc((size_t)w->count * sizeof *order);
    if (order == NULL) return NULL;
    for (int64_t i = 0; i < w->count; i++) order[i] = i;
    for (int64_t i = w->count - 1; w->shuffle && i > 0; i--) {
        int64_t j = rig_scenario_uniform(w->seed, (uint32_t)w->index, (uint32_t)i, 0,
                                         RIG_SCENARIO_STREAM_SHUFFLE, 0, i);
        int64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    return order;
}

/* Shared prefix: group g's prefix is drawn with request counter 0x80000000 + g, so every
 * prompt of the group starts with the same tokens; prompt k (before shuffling) is the
 * (k % per_group)-th question of group k / per_group. */
static enum rig_status rig__gen_shared_prefix(struct rig_scenario_build *b, struct fy_node *map,
                                              const struct rig__workload *w)
{
    int64_t length = w->prefix_len + w->suffix_len;
    int64_t *order = rig__permutation(w);
    if (order == NULL) return rig_yaml_fail(&b->yaml, map, RIG_E_NO_MEMORY, "out of memory");
    for (int64_t n = 0; n < w->count; n++) {
        int64_t k = order[n];
        int64_t group = k / w->per_group;
        int64_t out = rig_scenario_uniform(w->seed, (uint32_t)w->index, (uint32_t)k, 1,
                                           RIG_SCENARIO_STREAM_LENGTHS, w->output_lo,
                                           w->output_hi);
        struct rig_scenario_request *r = rig__append(b, map, w, n, length, out);
        if (r == NULL) {
            free(order);
            return RIG_E_CAPACITY;
        }
        int32_t *tokens = b->scenario->tokens + r->token_offset;
        for (int64_t j = 0; j < w->prefix_len; j++)
            tokens[j] = rig__token(w, 0x80000000u + (uint32_t)group, (uint32_t)j);
        for (int64_t j = 0; j < w->suffix_len; j++)
            tokens[w->prefix_len + j] = rig__token(w, (uint32_t)k, (uint32_t)j);
    }
    free(order);
    return RIG_OK;
}

struct rig__trace_line {
    double timestamp_s;
    int64_t input_len;
    int64_t output_len;
    json_t *hash_ids; /* borrowed from the parsed line */
};

/* Reads one JSONL record; an error names the trace file and line. The timestamp, scaled,
 * has the bounds of a request's `at:` ([0, 1e9 s]): beyond them the conversion to integer
 * nanoseconds overflows. */
static enum rig_status rig__trace_record(struct rig_scenario_build *b, const char *path,
                                         int64_t line_no, json_t *root, double time_scale,
                                         struct rig__trace_line *out)
{
    const char *problem = NULL;
    char range[96];
    json_t *ts = json_object_get(root, "timestamp");
    json_t *in = json_object_get(root, "input_length");
    json_t *outl = json_object_get(root, "output_length");
    out->hash_ids = json_object_get(root, "hash_ids");
    if (!json_is_object(root)) problem = "a line must be a JSON object";
    else if (!json_is_number(ts)) problem = "'timestamp' must be a number (seconds)";
    else if (!json_is_integer(in) || json_integer_value(in) < 1 ||
             json_integer_value(in) > RIG_SCENARIO_PROMPT_MAX)
        problem = "'input_length' must be an integer in [1, 4194304]";
    else if (!json_is_integer(outl) || json_integer_value(outl) < 1 ||
             json_integer_value(outl) > (1 << 24))
        problem = "'output_length' must be an integer in [1, 16777216]";
    else if (out->hash_ids != NULL && !json_is_array(out->hash_ids))
        problem = "'hash_ids' must be a list of integers";
    double ns = problem == NULL ? json_number_value(ts) * time_scale * 1e9 : 0.0;
    if (problem == NULL && !(ns >= 0.0 && ns <= 1e18)) {
        snprintf(range, sizeof range, "'timestamp' = %g is outside [0, 1e9 s]%s",
                 json_number_value(ts), time_scale != 1.0 ? " (after time_scale)" : "");
        problem = range;
    }
    if (problem != NULL) {
        if (b->yaml.error[0] == '\0')
            snprintf(b->yaml.error, b->yaml.error_len, "%s:%lld: %s", path,
                     (long long)line_no, problem);
        return RIG_E_PARSE;
    }
    out->timestamp_s = json_number_value(ts);
    out->input_len = json_integer_value(in);
    out->output_len = json_integer_value(outl);
    return RIG_OK;
}

/* Prompt of trace request n: block k is hash_ids[k]'s tokens, drawn from the hash alone
 * (counter (hash low, hash high, position in block)), so equal ids give equal tokens in any
 * request; positions past the listed blocks get tokens of their own. */
static void rig__trace_tokens(const struct rig__workload *w, const struct rig__trace_line *t,
                              int64_t n, int32_t *tokens)
{
    size_t blocks = t->hash_ids != NULL ? json_array_size(t->hash_ids) : 0;
    for (int64_t j = 0; j < t->input_len; j++) {
        size_t k = (size_t)(j / w->block_size);
        json_t *h = k < blocks ? json_array_get(t->hash_ids, k) : NULL;
        if (h != NULL && json_is_integer(h)) {
            uint64_t hash = (uint64_t)json_integer_value(h);
            tokens[j] = (int32_t)rig_scenario_uniform(
                w->seed, (uint32_t)hash, (uint32_t)(hash >> 32), (uint32_t)(j % w->block_size),
                RIG_SCENARIO_STREAM_BLOCKS, w->token_lo, w->token_hi);
        } else {
            tokens[j] = rig__token(w, (uint32_t)n, (uint32_t)j);
        }
    }
}

static enum rig_status rig__trace_line(struct rig_scenario_build *b, struct fy_node *map,
                                       const struct rig__workload *w, const char *path,
                                       int64_t line_no, const char *text, int64_t n)
{
    json_error_t json_error;
    json_t *root = json_loads(text, 0, &json_error);
    if (root == NULL) {
        if (b->yaml.error[0] == '\0')
            snprintf(b->yaml.error, b->yaml.error_len, "%s:%lld:%d: %s", path,
                     (long long)line_no, json_error.column, json_error.text);
        return RIG_E_PARSE;
    }
    struct rig__trace_line t;
    enum rig_status status = rig__trace_record(b, path, line_no, root, w->time_scale, &t);
    if (status == RIG_OK) {
        char what[2 * RIG_SCENARIO_PATH_MAX + 64];
        snprintf(what, sizeof what, "trace '%s': the requests up to line %lld", path,
                 (long long)line_no);
        status = rig_scenario_build_budget(b, rig_yaml_get(map, "path"), what, 1, t.input_len,
                                           t.output_len);
    }
    struct rig_scenario_request *r =
        status == RIG_OK ? rig__append(b, map, w, n, t.input_len, t.output_len) : NULL;
    if (status == RIG_OK && r == NULL) status = RIG_E_CAPACITY;
    if (status == RIG_OK) {
        rig__trace_tokens(w, &t, n, b->scenario->tokens + r->token_offset);
        /* Scaled trace time for now; rebased on the earliest one when the file is read. */
        r->arrival_ns = (int64_t)llround(t.timestamp_s * w->time_scale * 1e9);
    }
    json_decref(root);
    return status;
}

/* Bounds on what a trace may make us read: a line holds one request (its hash ids for a
 * prompt of RIG_SCENARIO_PROMPT_MAX tokens in 16-token blocks take about 6 MB), the file at
 * most RIG_SCENARIO_REQUESTS_MAX of them. A file without a newline (/dev/zero) or without an
 * end stops at one of them with an error instead of growing a buffer without bound. */
#define RIG__TRACE_LINE_MAX ((size_t)16 << 20)
#define RIG__TRACE_FILE_MAX ((int64_t)1 << 30)

/* Reads one line into *line (grown as needed up to RIG__TRACE_LINE_MAX bytes, NUL-terminated;
 * a NUL byte inside it ends the text there, and JSON then refuses what is left); returns its
 * length in bytes, -1 at the end of the file, -2 when the line is longer than the bound. */
static int64_t rig__read_line(FILE *file, char **line, size_t *capacity)
{
    size_t length = 0;
    for (int c = getc_unlocked(file); c != EOF; c = getc_unlocked(file)) {
        if (length + 2 > *capacity) {
            if (*capacity >= RIG__TRACE_LINE_MAX) return -2;
            size_t grown = *capacity == 0 ? 4096 : 2 * *capacity;
            char *bigger = realloc(*line, grown);
            if (bigger == NULL) return -2;
            *line = bigger;
            *capacity = grown;
        }
        (*line)[length++] = (char)c;
        if (c == '\n') break;
    }
    if (length == 0) return -1;
    (*line)[length] = '\0';
    return (int64_t)length;
}

static enum rig_status rig__gen_trace(struct rig_scenario_build *b, struct fy_node *map,
                                      struct rig__workload *w)
{
    char path[2 * RIG_SCENARIO_PATH_MAX];
    snprintf(path, sizeof path, "%s%s", w->path[0] == '/' ? "" : b->dir, w->path);
    FILE *file = fopen(path, "r");
    if (file == NULL)
        return rig_yaml_fail(&b->yaml, rig_yaml_get(map, "path"), RIG_E_IO,
                             "cannot open trace '%s'", path);
    int32_t first = b->scenario->request_count;
    char *line = NULL;
    size_t capacity = 0;
    enum rig_status status = RIG_OK;
    int64_t n = 0, bytes = 0;
    for (int64_t line_no = 1; status == RIG_OK && n < w->count; line_no++) {
        int64_t length = rig__read_line(file, &line, &capacity);
        if (length == -1) break;
        bytes += length > 0 ? length : 0;
        if (length == -2 || bytes > RIG__TRACE_FILE_MAX) {
            status = rig_yaml_fail(&b->yaml, rig_yaml_get(map, "path"), RIG_E_CAPACITY,
                                   length == -2 ? "trace '%s': line %lld is longer than %lld "
                                                  "bytes (the line limit)"
                                                : "trace '%s': more than %lld bytes by line "
                                                  "%lld (the file size limit)",
                                   path, length == -2 ? (long long)line_no
                                                      : (long long)RIG__TRACE_FILE_MAX,
                                   length == -2 ? (long long)RIG__TRACE_LINE_MAX
                                                : (long long)line_no);
            break;
        }
        if (strspn(line, " \t\r\n") == (size_t)length) continue;
        status = rig__trace_line(b, map, w, path, line_no, line, n++);
    }
    free(line);
    fclose(file);
    if (status == RIG_OK && n == 0)
        status = rig_yaml_fail(&b->yaml, rig_yaml_get(map, "path"), RIG_E_INVALID,
                               "trace '%s' has no requests", path);
    if (status < 0) return status;
    int64_t earliest = INT64_MAX;
    for (int32_t i = first; i < b->scenario->request_count; i++)
        if (b->scenario->requests[i].arrival_ns < earliest)
            earliest = b->scenario->requests[i].arrival_ns;
    for (int32_t i = first; i < b->scenario->request_count; i++)
        b->scenario->requests[i].arrival_ns += w->start_ns - earliest;
    w->count = n;
    return RIG_OK;
}

static enum rig_status rig__parse_workload(struct rig_scenario_build *b, struct fy_node *map)
{
    /* Keys every kind takes, then each kind's own: a key of another kind is an error. */
#define RIG__COMMON_KEYS                                                                   \
    "kind", "name", "seed", "rate", "start", "token_range", "temperature", "top_k", "top_p", \
        "ignore_eos", "stop_token_ids"
    static const char *const random_keys[] = {RIG__COMMON_KEYS, "count", "input_len",
                                              "output_len", NULL};
    static const char *const prefix_keys[] = {RIG__COMMON_KEYS, "groups",     "per_group",
                                              "prefix_len",     "suffix_len", "output_len",
                                              "shuffle",        NULL};
    static const char *const trace_keys[] = {RIG__COMMON_KEYS, "path", "time_scale", "limit",
                                             "block_size", NULL};
#undef RIG__COMMON_KEYS
    static const char *const *const kind_keys[] = {random_keys, prefix_keys, trace_keys,
                                                   random_keys};
    struct rig_yaml *y = &b->yaml;
    struct rig_scenario *s = b->scenario;
    enum rig_status status = rig_yaml_mapping(y, map, "a workload");
    if (status == RIG_OK && s->workload_count == RIG_SCENARIO_WORKLOADS_MAX)
        status = rig_yaml_fail(y, map, RIG_E_CAPACITY, "more than %d workloads",
                               RIG_SCENARIO_WORKLOADS_MAX);
    int32_t kind = -1;
    if (status == RIG_OK && rig_yaml_get(map, "kind") == NULL)
        status = rig_yaml_fail(y, map, RIG_E_INVALID, "a workload needs a 'kind'");
    if (status == RIG_OK) status = rig_yaml_key_enum(y, map, "kind", rig__kind_names, &kind);
    if (status == RIG_OK) status = rig_yaml_check_keys(y, map, rig__kind_names[kind],
                                                       kind_keys[kind]);
    if (status < 0) return status;
    struct rig__workload w;
    rig__defaults(b, kind, &w);
    status = rig__parse_common(b, map, &w);
    if (status == RIG_OK) status = rig__parse_kind(b, map, &w);
    if (status == RIG_OK) status = rig__check_budget(b, map, &w);
    int32_t first = s->request_count;
    if (status == RIG_OK && (kind == 0 || kind == 3)) status = rig__gen_random(b, map, &w);
    if (status == RIG_OK && kind == 1) status = rig__gen_shared_prefix(b, map, &w);
    if (status == RIG_OK && kind == 2) status = rig__gen_trace(b, map, &w);
    if (status < 0) return status;
    if (kind != 2) rig__arrivals(&w, s->requests + first, s->request_count - first);
    struct rig_scenario_workload *out = &s->workloads[s->workload_count++];
    out->kind = kind == 3 ? RIG_WORKLOAD_RANDOM : (enum rig_workload_kind)kind;
    snprintf(out->name, sizeof out->name, "%s", w.name);
    out->first_request = first;
    out->count = s->request_count - first;
    return RIG_OK;
}

enum rig_status rig_scenario_parse_workloads(struct rig_scenario_build *b, struct fy_node *list)
{
    enum rig_status status = rig_yaml_sequence(&b->yaml, list, "workloads");
    void *iter = NULL;
    struct fy_node *item;
    while (status == RIG_OK && (item = fy_node_sequence_iterate(list, &iter)) != NULL)
        status = rig__parse_workload(b, item);
    return status;
}
