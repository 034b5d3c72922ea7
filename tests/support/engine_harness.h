/* engine_harness.h — a small observer and config helpers for the engine tests
 * (tests/test_engine*.c): records every token, finished request and step record so tests
 * can assert exact values. Header-only (static inline) so each test binary takes what it
 * uses. */
#ifndef RIG_ENGINE_HARNESS_H
#define RIG_ENGINE_HARNESS_H

#include <stdio.h>
#include <string.h>

#include "core/engine/engine.h"
#include "core/engine/driver.h"
#include "tests/support/test_support.h"
#include "hal/backends.h"

#define HARNESS_REQUESTS 64
#define HARNESS_TOKENS 256
#define HARNESS_STEPS 4096
#define HARNESS_LOG 8192

struct harness_request {
    uint64_t uid;
    int32_t tokens[HARNESS_TOKENS];
    int32_t token_count;
    int32_t finish_calls;
    enum rig_request_end reason;
    char message[200];
    int32_t cached_len;
    int32_t output_len;
    int64_t first_token_ns, finish_ns, first_scheduled_ns;
    int64_t first_step, finish_step;
};

struct harness {
    struct rig_engine *engine;
    struct harness_request requests[HARNESS_REQUESTS];
    int32_t request_count;
    struct rig_step_record steps[HARNESS_STEPS]; /* uids pointers cleared (not kept) */
    uint64_t step_uids[HARNESS_STEPS][8];        /* the first 8 uids of each step */
    int32_t step_count;
    char log[HARNESS_LOG]; /* 'S' per step record, 'T' per token, 'F' per finish */
    int32_t log_len;
    uint64_t token_uids[HARNESS_LOG]; /* uid of each token in arrival order */
    int32_t token_uid_count;
};

static inline struct harness_request *harness_get(struct harness *h, uint64_t uid)
{
    for (int32_t i = 0; i < h->request_count; i++)
        if (h->requests[i].uid == uid) return &h->requests[i];
    assert_true(h->request_count < HARNESS_REQUESTS);
    struct harness_request *r = &h->requests[h->request_count++];
    memset(r, 0, sizeof *r);
    r->uid = uid;
    return r;
}

static inline void harness_log(struct harness *h, char c)
{
    if (h->log_len < HARNESS_LOG - 1) h->log[h->log_len++] = c;
}

static inline void harness_on_token(void *ctx, uint64_t uid, int32_t index, int32_t token,
                                    int64_t t_ns)
{
    (void)t_ns;
    struct harness *h = ctx;
    struct harness_request *r = harness_get(h, uid);
    assert_int_equal(index, r->token_count);
    if (r->token_count < HARNESS_TOKENS) r->tokens[r->token_count++] = token;
    if (h->token_uid_count < HARNESS_LOG) h->token_uids[h->token_uid_count++] = uid;
    harness_log(h, 'T');
}

static inline void harness_on_finish(void *ctx, const struct rig_request_result *res)
{
    struct harness *h = ctx;
    struct harness_request *r = harness_get(h, res->uid);
    r->finish_calls++;
    r->reason = res->reason;
    snprintf(r->message, sizeof r->message, "%s", res->message);
    r->cached_len = res->cached_len;
    r->output_len = res->output_len;
    r->first_token_ns = res->first_token_ns;
    r->first_scheduled_ns = res->first_scheduled_ns;
    r->finish_ns = res->finish_ns;
    r->first_step = res->first_step;
    r->finish_step = res->finish_step;
    for (int32_t i = 0; i < res->output_len && i < HARNESS_TOKENS; i++)
        assert_int_equal(res->output_ids[i], r->tokens[i]);
    harness_log(h, 'F');
}

static inline void harness_on_step(void *ctx, const struct rig_step_record *rec)
{
    struct harness *h = ctx;
    if (h->step_count < HARNESS_STEPS) {
        for (int32_t i = 0; i < rec->batch_size && i < 8; i++)
            h->step_uids[h->step_count][i] = rec->uids[i];
        h->steps[h->step_count] = *rec;
        h->steps[h->step_count++].uids = NULL;
    }
    harness_log(h, 'S');
}

/* A config for `preset` on the simulator with small limits; tests adjust fields. */
static inline void harness_config(struct rig_engine_config *c, const char *preset,
                                  bool timing_only)
{
    rig_engine_config_default(c);
    assert_int_equal(rig_model_config_preset(preset, &c->model), RIG_OK);
    c->device.timing_only = timing_only;
    c->device.seed = 1;
    c->weights.dummy_seed = 1234;
    c->num_pages = 512;
    c->max_running_req = 8;
    c->max_seq_len = 1024;
    c->prefill_budget = 512;
    c->max_requests = 32;
    c->check_invariants = true;
    c->seed = 99;
}

/* Opens an engine whose observer records into `h`; `on_finish` may replace the recorder's
 * (it should call harness_on_finish itself); `on_logprobs` (may be NULL) gets `h` as ctx. */
static inline void harness_open_observing(
    struct harness *h, const struct rig_engine_config *c,
    void (*on_finish)(void *, const struct rig_request_result *),
    void (*on_logprobs)(void *, uint64_t, int32_t, int32_t, float, int32_t, const int32_t *,
                        const float *))
{
    memset(h, 0, sizeof *h);
    rig_backends_register();
    struct rig_engine_observer obs = {.ctx = h, .on_token = harness_on_token,
                                      .on_finish = on_finish, .on_step = harness_on_step,
                                      .on_logprobs = on_logprobs};
    char error[256] = "";
    enum rig_status s = rig_engine_create(c, &obs, &h->engine, error, sizeof error);
    if (s != RIG_OK) fprintf(stderr, "engine create: %s\n", error);
    assert_int_equal(s, RIG_OK);
}

static inline void harness_open_with(struct harness *h, const struct rig_engine_config *c,
                                     void (*on_finish)(void *, const struct rig_request_result *))
{
    harness_open_observing(h, c, on_finish, NULL);
}

static inline void harness_open(struct harness *h, const struct rig_engine_config *c)
{
    harness_open_with(h, c, harness_on_finish);
}

static inline void harness_close(struct harness *h)
{
    assert_int_equal(rig_engine_check(h->engine, NULL, NULL), 0);
    rig_engine_destroy(h->engine);
    h->engine = NULL;
}

/* A submission of `prompt` with the default sampling parameters, ignore_eos, arriving now. */
static inline struct rig_submit harness_request_of(uint64_t uid, const int32_t *prompt,
                                                   int32_t len)
{
    struct rig_submit s;
    memset(&s, 0, sizeof s);
    s.uid = uid;
    s.prompt = prompt;
    s.prompt_len = len;
    s.sampling = rig_sampling_default();
    s.sampling.ignore_eos = true;
    s.arrival_ns = -1;
    return s;
}

/* Submits a request; asserts the status. */
static inline void harness_submit(struct harness *h, uint64_t uid, const int32_t *prompt,
                                  int32_t len, int32_t max_tokens, float temperature,
                                  enum rig_status expect)
{
    struct rig_submit s = harness_request_of(uid, prompt, len);
    s.sampling.max_tokens = max_tokens;
    s.sampling.temperature = temperature;
    char reason[256] = "";
    assert_int_equal(rig_engine_submit(h->engine, &s, reason, sizeof reason), expect);
}

/* Runs what was submitted to the end through the driver (no arrival source). */
static inline void harness_run(struct harness *h)
{
    struct rig_driver_options options = {.max_iterations = 100000};
    char error[256] = "";
    enum rig_status s = rig_driver_run(h->engine, NULL, &options, error, sizeof error);
    if (s != RIG_OK) fprintf(stderr, "driver: %s\n", error);
    assert_int_equal(s, RIG_OK);
    assert_true(rig_engine_idle(h->engine));
}

/* Deterministic prompt tokens in [1, vocab). */
static inline void harness_prompt(int32_t *out, int32_t len, int32_t base, int32_t vocab)
{
    for (int32_t i = 0; i < len; i++)
        out[i] = 1 + (int32_t)(((int64_t)base * 7919 + (int64_t)i * 104729) % (vocab - 1));
}

/* Non-root radix nodes and the tokens they hold. */
static inline void harness_tree(const struct harness *h, int32_t *nodes, int64_t *tokens)
{
    const struct rig_cache *cache = rig_engine_cache(h->engine);
    *nodes = cache->tree.live_nodes - 1;
    *tokens = cache->tree.evictable_tokens + cache->tree.protected_tokens;
}

#endif /* RIG_ENGINE_HARNESS_H */
