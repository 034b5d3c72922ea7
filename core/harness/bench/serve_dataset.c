/* serve_dataset.c — the prompts of `rig bench serve` (serve.h), as sglang.bench_serving
 * makes them.
 *
 *   random-ids  bench_serving's `random-ids`: input and output lengths uniform in
 *               [max(len x ratio, 1), len] and [len x ratio, len]; prompt i is the ids
 *               (offset_i + i + j) mod vocabulary, offset_i uniform in the vocabulary. With a
 *               tokenizer the vocabulary is its own and the prompt is sent as the decoded text
 *               (unless --tokenize-prompt); without one, ids below --random-vocab-size are sent
 *               as ids.
 *   random      bench_serving's `random`: the same lengths, the prompt made of a shuffled
 *               ShareGPT conversation's first turn, tokenized, repeated or cut to the length
 *               and decoded. It needs --dataset-path (a ShareGPT file; bench_serving downloads
 *               one) and a tokenizer; without a file it is random-ids, and says so.
 *   sharegpt    conversations with at least two turns, shuffled; the first turn is the prompt,
 *               the second's token count the output length (or --sharegpt-output-len); pairs
 *               shorter than 2 tokens, or longer together than --sharegpt-context-len, are
 *               skipped. Needs a tokenizer.
 *   trace       a rig scenario (.yaml / .yml: its requests, arrivals and lengths exactly as
 *               `rig run` replays them) or a JSONL trace: Qwen-Bailian (timestamps in seconds,
 *               16-token hash blocks) or Mooncake (no chat_id / turn fields: milliseconds,
 *               512-token blocks), read through the scenario's trace workload so equal hash
 *               ids give equal tokens. With a tokenizer the ids are sent as their decoded text
 *               (unless --tokenize-prompt), which the chat API needs.
 *
 * Output lengths below 1 (a range ratio of 0 allows them) become 1: a server refuses
 * max_tokens 0. Randomness is Philox keyed by the seed: the same options and files give the
 * same prompts everywhere (bench_serving's numpy draws are not reproduced number for number).
 */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/bench/serve.h"
#include "core/harness/scenario/scenario.h"
#include "core/text/tokenizer.h"
#include "hal/philox.h"

#define RIG__STREAM_LENGTHS  0x534c454eu /* "SLEN" */
#define RIG__STREAM_OFFSETS  0x534f4646u /* "SOFF" */
#define RIG__STREAM_SHUFFLE  0x53534846u /* "SSHF" */
#define RIG__PROMPTS_DEFAULT 1000

static int64_t rig__uniform(uint64_t seed, uint32_t stream, uint32_t index, uint32_t which,
                            int64_t lo, int64_t hi)
{
    RIG_ASSERT(lo <= hi);
    struct rig_philox_out r = rig_philox4x32(seed, index, which, stream, 0);
    uint64_t bits = ((uint64_t)r.v[0] << 32) | r.v[1];
    return lo + (int64_t)(bits % (uint64_t)(hi - lo + 1));
}

static bool rig__grow(void **array, int64_t *capacity, int64_t need, size_t size)
{
    if (need <= *capacity) return true;
    int64_t next = *capacity > 0 ? *capacity : 1024;
    while (next < need)
        next *= 2;
    void *grown = realloc(*array, (size_t)next * size);
    if (grown == NULL) return false;
    *array = grown;
    *capacity = next;
    return true;
}

enum rig_status rig_serve_dataset_add(struct rig_serve_dataset *d, const char *id,
                                      const int32_t *ids, int32_t id_count, const char *text,
                                      int32_t input_len, int32_t output_len, int64_t arrival_ns)
{
    RIG_ASSERT(id_count >= 0 && (ids != NULL || id_count == 0));
    if (d->count >= RIG_SERVE_PROMPTS_MAX) return RIG_E_CAPACITY;
    int64_t text_len = text != NULL ? (int64_t)strlen(text) + 1 : 0;
    if (!rig__grow((void **)&d->prompts, &d->prompt_capacity, d->count + 1, sizeof *d->prompts) ||
        !rig__grow((void **)&d->tokens, &d->token_capacity, d->token_count + id_count,
                   sizeof *d->tokens) ||
        !rig__grow((void **)&d->text, &d->text_capacity, d->text_len + text_len, 1))
        return RIG_E_NO_MEMORY;
    struct rig_serve_prompt *p = &d->prompts[d->count++];
    memset(p, 0, sizeof *p);
    snprintf(p->id, sizeof p->id, "%s", id);
    p->arrival_ns = arrival_ns;
    p->input_len = input_len;
    p->output_len = output_len < 1 ? 1 : output_len;
    p->token_offset = d->token_count;
    p->token_count = id_count;
    if (id_count > 0) memcpy(d->tokens + d->token_count, ids, (size_t)id_count * sizeof *ids);
    d->token_count += id_count;
    p->text_offset = -1;
    if (text != NULL) {
        p->text_offset = d->text_len;
        memcpy(d->text + d->text_len, text, (size_t)text_len);
        d->text_len += text_len;
    }
    p->body_offset = -1;
    return RIG_OK;
}

void rig_serve_dataset_free(struct rig_serve_dataset *d)
{
    if (d == NULL) return;
    free(d->prompts);
    free(d->tokens);
    free(d->text);
    free(d->bodies);
    memset(d, 0, sizeof *d);
}

/* Lengths of prompt i: bench_serving's randint ranges. */
static void rig__lengths(const struct rig_serve_options *o, uint32_t i, int32_t *in, int32_t *out)
{
    int64_t in_lo = (int64_t)(o->random_input_len * o->random_range_ratio);
    int64_t out_lo = (int64_t)(o->random_output_len * o->random_range_ratio);
    if (in_lo < 1) in_lo = 1;
    if (in_lo > o->random_input_len) in_lo = o->random_input_len;
    if (out_lo > o->random_output_len) out_lo = o->random_output_len;
    *in = (int32_t)rig__uniform(o->seed, RIG__STREAM_LENGTHS, i, 0, in_lo, o->random_input_len);
    *out = (int32_t)rig__uniform(o->seed, RIG__STREAM_LENGTHS, i, 1, out_lo, o->random_output_len);
}

/* Decodes `ids` into `text` (reset first); false on failure. */
static bool rig__decode(const struct rig_tokenizer *t, const int32_t *ids, size_t count,
                        struct rig_tokenizer_text *text)
{
    text->len = 0;
    if (text->data != NULL) text->data[0] = '\0';
    return rig_tokenizer_decode(t, ids, count, true, text, NULL, 0) == RIG_OK && text->data != NULL;
}

static enum rig_status rig__random_ids(const struct rig_serve_options *o,
                                       const struct rig_tokenizer *t, int32_t count,
                                       struct rig_serve_dataset *d, char *error, size_t error_len)
{
    int32_t vocab = t != NULL ? rig_tokenizer_vocab_size(t) : o->random_vocab_size;
    int32_t *ids = malloc(((size_t)o->random_input_len + 1) * sizeof *ids);
    struct rig_tokenizer_text text = {0};
    enum rig_status status = ids != NULL ? RIG_OK : RIG_E_NO_MEMORY;
    for (int32_t i = 0; i < count && status == RIG_OK; i++) {
        int32_t in = 0, out = 0;
        rig__lengths(o, (uint32_t)i, &in, &out);
        int64_t offset = rig__uniform(o->seed, RIG__STREAM_OFFSETS, (uint32_t)i, 0, 0, vocab - 1);
        for (int32_t j = 0; j < in; j++)
            ids[j] = (int32_t)((offset + i + j) % vocab);
        bool as_text = t != NULL && !o->tokenize_prompt;
        if (as_text && !rig__decode(t, ids, (size_t)in, &text)) status = RIG_E_NO_MEMORY;
        char id[RIG_RESULTS_ID_MAX];
        snprintf(id, sizeof id, "random-%d", i);
        if (status == RIG_OK)
            status = rig_serve_dataset_add(d, id, ids, in, as_text ? text.data : NULL, in, out, -1);
    }
    if (status < 0) snprintf(error, error_len, "random-ids: out of memory");
    snprintf(d->description, sizeof d->description,
             "random-ids: %d prompts, input %d x [%g, 1], output %d x [%g, 1], vocabulary %d%s",
             count, o->random_input_len, o->random_range_ratio, o->random_output_len,
             o->random_range_ratio, vocab, t != NULL ? " (tokenizer)" : "");
    free(ids);
    rig_tokenizer_text_free(&text);
    return status;
}

/* ShareGPT pairs (first turn, second turn) as borrowed strings, shuffled with the seed.
 * Returns the JSON root (caller decrefs) or NULL with a message. */
static json_t *rig__sharegpt_pairs(const char *path, uint64_t seed, const char ***pairs,
                                   int32_t *count, char *error, size_t error_len)
{
    json_error_t problem;
    json_t *root = json_load_file(path, 0, &problem);
    if (!json_is_array(root)) {
        snprintf(error, error_len, "%s:%d: %s", path, problem.line,
                 root == NULL ? problem.text : "a ShareGPT file is a JSON list");
        json_decref(root);
        return NULL;
    }
    size_t n = json_array_size(root);
    *pairs = malloc((2 * n + 1) * sizeof **pairs);
    if (*pairs == NULL) {
        snprintf(error, error_len, "%s: out of memory", path);
        json_decref(root);
        return NULL;
    }
    int32_t kept = 0;
    for (size_t i = 0; i < n && kept < RIG_SERVE_PROMPTS_MAX; i++) {
        json_t *item = json_array_get(root, i);
        json_t *turns = json_object_get(item, "conversations");
        if (turns == NULL) turns = json_object_get(item, "conversation");
        const char *a = json_string_value(json_object_get(json_array_get(turns, 0), "value"));
        const char *b = json_string_value(json_object_get(json_array_get(turns, 1), "value"));
        if (json_array_size(turns) < 2 || a == NULL || b == NULL) continue;
        (*pairs)[2 * kept] = a;
        (*pairs)[2 * kept + 1] = b;
        kept++;
    }
    for (int32_t i = kept - 1; i > 0; i--) { /* Fisher-Yates */
        int32_t j = (int32_t)rig__uniform(seed, RIG__STREAM_SHUFFLE, (uint32_t)i, 0, 0, i);
        const char *a = (*pairs)[2 * i], *b = (*pairs)[2 * i + 1];
        (*pairs)[2 * i] = (*pairs)[2 * j];
        (*pairs)[2 * i + 1] = (*pairs)[2 * j + 1];
        (*pairs)[2 * j] = a;
        (*pairs)[2 * j + 1] = b;
    }
    *count = kept;
    return root;
}

/* Token count of `text`, or -1 when it does not encode. `ids` is scratch. */
static int64_t rig__encode(const struct rig_tokenizer *t, struct rig_tokenizer_work *work,
                           const char *text, struct rig_tokenizer_ids *ids)
{
    ids->count = 0;
    if (rig_tokenizer_encode(t, work, text, strlen(text), true, ids, NULL, 0) != RIG_OK) return -1;
    return (int64_t)ids->count;
}

struct rig__text_build {
    const struct rig_serve_options *o;
    const struct rig_tokenizer *t;
    struct rig_tokenizer_work *work;
    struct rig_tokenizer_ids ids, made;
    struct rig_tokenizer_text text;
    const char **pairs;
    int32_t pair_count;
};

/* bench_serving's sharegpt filter over the shuffled pairs. */
static enum rig_status rig__sharegpt(struct rig__text_build *b, int32_t count,
                                     struct rig_serve_dataset *d)
{
    const struct rig_serve_options *o = b->o;
    for (int32_t i = 0; i < b->pair_count && d->count < count; i++) {
        int64_t in = rig__encode(b->t, b->work, b->pairs[2 * i], &b->ids);
        int64_t out = o->sharegpt_output_len > 0
                          ? o->sharegpt_output_len
                          : rig__encode(b->t, b->work, b->pairs[2 * i + 1], &b->made);
        if (in < 2 || out < 2 || in > INT32_MAX || out > RIG_SERVE_OUTPUT_MAX) continue;
        if (o->sharegpt_context_len > 0 && in + out > o->sharegpt_context_len) continue;
        char id[RIG_RESULTS_ID_MAX];
        snprintf(id, sizeof id, "sharegpt-%d", d->count);
        enum rig_status status = rig_serve_dataset_add(
            d, id, b->ids.ids, (int32_t)in, b->pairs[2 * i], (int32_t)in, (int32_t)out, -1);
        if (status < 0) return status;
    }
    return RIG_OK;
}

/* bench_serving's `random` over ShareGPT: first turns repeated or cut to the lengths. */
static enum rig_status rig__random_sharegpt(struct rig__text_build *b, int32_t count,
                                            struct rig_serve_dataset *d)
{
    for (int32_t i = 0; i < b->pair_count && d->count < count; i++) {
        int32_t in = 0, out = 0;
        rig__lengths(b->o, (uint32_t)d->count, &in, &out);
        int64_t len = rig__encode(b->t, b->work, b->pairs[2 * i], &b->ids);
        if (len <= 0) continue;
        b->made.count = 0;
        for (int32_t j = 0; j < in; j++) {
            if (b->made.count == b->made.capacity) {
                size_t next = b->made.capacity > 0 ? 2 * b->made.capacity : 1024;
                int32_t *grown = realloc(b->made.ids, next * sizeof *grown);
                if (grown == NULL) return RIG_E_NO_MEMORY;
                b->made.ids = grown;
                b->made.capacity = next;
            }
            b->made.ids[b->made.count++] = b->ids.ids[j % len];
        }
        if (!rig__decode(b->t, b->made.ids, b->made.count, &b->text)) return RIG_E_NO_MEMORY;
        bool as_text = !b->o->tokenize_prompt;
        char id[RIG_RESULTS_ID_MAX];
        snprintf(id, sizeof id, "random-%d", d->count);
        enum rig_status status = rig_serve_dataset_add(d, id, b->made.ids, in,
                                                       as_text ? b->text.data : NULL, in, out, -1);
        if (status < 0) return status;
    }
    return RIG_OK;
}

static enum rig_status rig__text_dataset(const struct rig_serve_options *o,
                                         const struct rig_tokenizer *t, bool sharegpt,
                                         int32_t count, struct rig_serve_dataset *d, char *error,
                                         size_t error_len)
{
    struct rig__text_build b = {.o = o, .t = t};
    json_t *root =
        rig__sharegpt_pairs(o->dataset_path, o->seed, &b.pairs, &b.pair_count, error, error_len);
    if (root == NULL) return RIG_E_PARSE;
    enum rig_status status = rig_tokenizer_work_create(t, &b.work, NULL, 0);
    if (status == RIG_OK)
        status = sharegpt ? rig__sharegpt(&b, count, d) : rig__random_sharegpt(&b, count, d);
    if (status < 0) snprintf(error, error_len, "%s: out of memory", o->dataset_path);
    snprintf(d->description, sizeof d->description, "%s: %d prompts from %s (%d conversations)",
             sharegpt ? "sharegpt" : "random", d->count, o->dataset_path, b.pair_count);
    rig_tokenizer_work_free(b.work);
    rig_tokenizer_ids_free(&b.ids);
    rig_tokenizer_ids_free(&b.made);
    rig_tokenizer_text_free(&b.text);
    free(b.pairs);
    json_decref(root);
    return status;
}

static bool rig__ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The scenario text that reads a JSONL trace through the scenario's trace workload. */
static enum rig_status rig__trace_yaml(const struct rig_serve_options *o, int32_t limit, char *yaml,
                                       size_t yaml_len, char *error, size_t error_len)
{
    const char *path = o->dataset_path;
    FILE *f = fopen(path, "r");
    char line[4096] = "";
    if (f == NULL || fgets(line, sizeof line, f) == NULL) {
        snprintf(error, error_len, "%s: cannot read the trace", path);
        if (f != NULL) fclose(f);
        return RIG_E_IO;
    }
    fclose(f);
    if (strpbrk(path, "\"\\\n") != NULL) {
        snprintf(error, error_len, "%s: a trace path may not hold quotes or backslashes", path);
        return RIG_E_INVALID;
    }
    /* Bailian lines carry chat_id / turn; Mooncake's do not and count milliseconds. */
    bool bailian = strstr(line, "\"chat_id\"") != NULL || strstr(line, "\"turn\"") != NULL;
    char extra[64] = "";
    if (limit > 0) snprintf(extra, sizeof extra, ", limit: %d", limit);
    snprintf(yaml, yaml_len,
             "name: trace\nmodel: {preset: tiny}\nseed: %llu\nworkloads:\n"
             "  - {kind: trace, name: trace, path: \"%s\", time_scale: %s, block_size: %d%s}\n",
             (unsigned long long)o->seed, path, bailian ? "1" : "0.001", bailian ? 16 : 512, extra);
    return RIG_OK;
}

static enum rig_status rig__trace(const struct rig_serve_options *o, const struct rig_tokenizer *t,
                                  int32_t limit, struct rig_serve_dataset *d, char *error,
                                  size_t error_len)
{
    struct rig_tokenizer_text text = {0};
    struct rig_scenario s;
    enum rig_status status;
    bool yaml = rig__ends_with(o->dataset_path, ".yaml") || rig__ends_with(o->dataset_path, ".yml");
    if (yaml) {
        status = rig_scenario_load(o->dataset_path, NULL, 0, &s, error, error_len);
    } else {
        char text[RIG_SCENARIO_PATH_MAX + 256];
        status = rig__trace_yaml(o, limit, text, sizeof text, error, error_len);
        if (status == RIG_OK)
            status = rig_scenario_load_string(text, o->dataset_path, NULL, 0, &s, error, error_len);
    }
    if (status < 0) return status;
    int32_t n = limit > 0 && limit < s.request_count ? limit : s.request_count;
    for (int32_t i = 0; i < n && status == RIG_OK; i++) {
        const struct rig_scenario_request *r = &s.requests[i];
        const int32_t *ids = rig_scenario_prompt(&s, i);
        bool as_text = t != NULL && !o->tokenize_prompt;
        if (as_text && !rig__decode(t, ids, (size_t)r->input_len, &text)) status = RIG_E_NO_MEMORY;
        if (status == RIG_OK)
            status = rig_serve_dataset_add(d, r->id, ids, r->input_len, as_text ? text.data : NULL,
                                           r->input_len, r->max_tokens, r->arrival_ns);
    }
    rig_tokenizer_text_free(&text);
    if (status < 0) snprintf(error, error_len, "%s: out of memory", o->dataset_path);
    int64_t first = n > 0 ? s.requests[0].arrival_ns : 0;
    for (int32_t i = 0; i < d->count; i++)
        d->prompts[i].arrival_ns -= first;
    d->timed = true;
    snprintf(d->description, sizeof d->description, "trace: %d requests from %s (%s)", n,
             o->dataset_path, yaml ? "rig scenario" : "JSONL trace");
    rig_scenario_free(&s);
    return status;
}

/* Checks the options a dataset needs before any file is read. */
static enum rig_status rig__check(const struct rig_serve_options *o, const struct rig_tokenizer *t,
                                  const char *name, char *error, size_t error_len)
{
    bool random = strcmp(name, "random") == 0 || strcmp(name, "random-ids") == 0;
    bool needs_path = strcmp(name, "sharegpt") == 0 || strcmp(name, "trace") == 0;
    if (!random && !needs_path) {
        snprintf(error, error_len,
                 "--dataset-name takes random, random-ids, sharegpt or trace, not '%s'", name);
        return RIG_E_INVALID;
    }
    if (needs_path && o->dataset_path == NULL) {
        snprintf(error, error_len, "--dataset-name %s needs --dataset-path", name);
        return RIG_E_INVALID;
    }
    bool text =
        strcmp(name, "sharegpt") == 0 || (strcmp(name, "random") == 0 && o->dataset_path != NULL);
    if (text && t == NULL) {
        snprintf(error, error_len, "--dataset-name %s%s needs --tokenizer", name,
                 strcmp(name, "random") == 0 ? " with --dataset-path" : "");
        return RIG_E_INVALID;
    }
    if (random && (o->random_input_len < 1 || o->random_output_len < 1 ||
                   o->random_output_len > RIG_SERVE_OUTPUT_MAX || !(o->random_range_ratio >= 0.0) ||
                   o->random_range_ratio > 1.0 || o->random_vocab_size < 1)) {
        snprintf(error, error_len,
                 "random lengths must be >= 1 (output <= %d), the range "
                 "ratio in [0, 1], the vocabulary >= 1",
                 RIG_SERVE_OUTPUT_MAX);
        return RIG_E_INVALID;
    }
    return RIG_OK;
}

enum rig_status rig_serve_dataset_load(const struct rig_serve_options *o,
                                       const struct rig_tokenizer *t, struct rig_serve_dataset *out,
                                       char *error, size_t error_len)
{
    memset(out, 0, sizeof *out);
    const char *name = o->dataset_name;
    enum rig_status status = rig__check(o, t, name, error, error_len);
    if (status < 0) return status;
    int32_t count = o->num_prompts > 0 ? o->num_prompts : RIG__PROMPTS_DEFAULT;
    if (strcmp(name, "trace") == 0)
        status = rig__trace(o, t, o->num_prompts, out, error, error_len);
    else if (strcmp(name, "sharegpt") == 0 ||
             (strcmp(name, "random") == 0 && o->dataset_path != NULL))
        status =
            rig__text_dataset(o, t, strcmp(name, "sharegpt") == 0, count, out, error, error_len);
    else
        status = rig__random_ids(o, t, count, out, error, error_len);
    if (status == RIG_OK && out->count == 0) {
        snprintf(error, error_len, "%s: the dataset gave no prompts", name);
        status = RIG_E_INVALID;
    }
    if (status < 0) {
        rig_serve_dataset_free(out);
        return status;
    }
    if (!out->timed || o->request_rate_given) {
        int64_t *arrivals = malloc((size_t)out->count * sizeof *arrivals);
        if (arrivals == NULL) {
            rig_serve_dataset_free(out);
            snprintf(error, error_len, "out of memory");
            return RIG_E_NO_MEMORY;
        }
        rig_serve_schedule(out->count, o->request_rate, o->burstiness, o->seed, arrivals);
        for (int32_t i = 0; i < out->count; i++)
            out->prompts[i].arrival_ns = arrivals[i];
        free(arrivals);
        out->timed = false;
    }
    return RIG_OK;
}
