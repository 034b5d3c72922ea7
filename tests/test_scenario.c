/* test_scenario.c — the scenario loader (core/harness/scenario/): YAML text in, plain data out.
 *
 * Checks, on scenarios written inline: every setting lands in its field; requests are sorted
 * by arrival with declaration order breaking ties; prompts built from tokens, random ids,
 * same_prompt_as and prefix_from are what they say; sampling defaults and overrides; --set
 * overrides (and their errors); and that each kind of mistake — syntax error, unknown key,
 * wrong type, value out of range, missing key, duplicate id, a reference to an unknown
 * request — fails with a message naming file:line:column and the key. Expectation items are
 * checked to become the right checks with the right bounds.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/engine/engine.h"
#include "core/harness/scenario/expect.h"
#include "core/harness/scenario/scenario.h"
#include "tests/support/test_support.h"

static char error[RIG_SCENARIO_ERROR_MAX];

static struct rig_scenario load_ok(const char *text)
{
    struct rig_scenario s;
    enum rig_status status = rig_scenario_load_string(text, "t.yaml", NULL, 0, &s, error,
                                                      sizeof error);
    if (status != RIG_OK) fprintf(stderr, "unexpected error: %s\n", error);
    assert_int_equal(status, RIG_OK);
    return s;
}

/* Loads `text` expecting `status` and a message containing `needle`. */
static void load_fails(const char *text, enum rig_status expected, const char *needle)
{
    struct rig_scenario s;
    enum rig_status status = rig_scenario_load_string(text, "t.yaml", NULL, 0, &s, error,
                                                      sizeof error);
    if (status != expected || strstr(error, needle) == NULL)
        fprintf(stderr, "status %d, message '%s', wanted '%s'\n", status, error, needle);
    assert_int_equal(status, expected);
    assert_non_null(strstr(error, needle));
    assert_null(s.requests);
    assert_int_equal(s.request_count, 0);
}

static const char *const basic =
    "name: basic\n"
    "model: {preset: tiny}\n"
    "backend: sim\n"
    "sim: {profile: h100, timing_only: true}\n"
    "engine: {num_pages: 4096, max_running_req: 16, prefill_budget: 256, policy: mixed,\n"
    "         cache: naive, overlap: false, cuda_graph_max_bs: 8, tp_size: 2, page_size: 1}\n"
    "seed: 7\n"
    "defaults: {max_tokens: 4, ignore_eos: true}\n"
    "requests:\n"
    "  - {id: late, at: 50ms, tokens: [5, 6, 7], temperature: 0.5, top_k: 20, top_p: 0.9,\n"
    "     seed: 11, stop_token_ids: [2, 3], max_tokens: 9, abort_at: 1.5s}\n"
    "  - {id: a, at: 0ms, tokens: [1, 2, 3, 4]}\n"
    "  - {id: b, at: 0ms, same_prompt_as: a}\n"
    "  - {id: c, at: 10us, prefix_from: a, prefix_len: 2, tokens: [9]}\n"
    "  - {id: r, at: 2, random: 6}\n";

static void test_basic_settings(void **state)
{
    (void)state;
    struct rig_scenario s = load_ok(basic);
    assert_string_equal(s.name, "basic");
    assert_string_equal(s.model.preset, "tiny");
    assert_true(s.model.dummy_weights);
    assert_int_equal(s.backend, RIG_SCENARIO_BACKEND_SIM);
    assert_string_equal(s.sim.profile, "h100");
    assert_true(s.sim.timing_only);
    assert_int_equal(s.engine.num_pages, 4096);
    assert_int_equal(s.engine.max_running_req, 16);
    assert_int_equal(s.engine.prefill_budget, 256);
    assert_int_equal(s.engine.policy, RIG_SCENARIO_POLICY_MIXED);
    assert_int_equal(s.engine.cache, RIG_SCENARIO_CACHE_NAIVE);
    assert_int_equal(s.engine.overlap, 0);
    assert_int_equal(s.engine.cuda_graph_max_bs, 8);
    assert_int_equal(s.engine.tp_size, 2);
    assert_int_equal(s.engine.decode_order, RIG_SCENARIO_DEFAULT);
    assert_int_equal(s.engine.max_seq_len, RIG_SCENARIO_DEFAULT);
    assert_int_equal(s.seed, 7);
    rig_scenario_free(&s);
    assert_null(s.requests);
}

static void test_requests_sorted_and_prompts(void **state)
{
    (void)state;
    struct rig_scenario s = load_ok(basic);
    assert_int_equal(s.request_count, 5);
    /* arrival order, ties in declaration order: a, b (0), c (10us), late (50ms), r (2s) */
    const char *order[] = {"a", "b", "c", "late", "r"};
    const int64_t arrivals[] = {0, 0, 10000, 50000000, 2000000000};
    for (int i = 0; i < 5; i++) {
        assert_string_equal(s.requests[i].id, order[i]);
        assert_int_equal(s.requests[i].arrival_ns, arrivals[i]);
        assert_int_equal(rig_scenario_find(&s, order[i]), i);
    }
    assert_int_equal(rig_scenario_find(&s, "nope"), -1);
    const int32_t *a = rig_scenario_prompt(&s, 0), *b = rig_scenario_prompt(&s, 1);
    const int32_t *c = rig_scenario_prompt(&s, 2);
    assert_int_equal(s.requests[0].input_len, 4);
    assert_int_equal(s.requests[1].input_len, 4);
    assert_memory_equal(a, b, 4 * sizeof *a);
    assert_int_equal(s.requests[2].input_len, 3);
    assert_int_equal(c[0], 1);
    assert_int_equal(c[1], 2);
    assert_int_equal(c[2], 9);
    assert_int_equal(s.requests[4].input_len, 6);
    for (int j = 0; j < 6; j++) assert_in_range(rig_scenario_prompt(&s, 4)[j], 0, 999);
    assert_int_equal(s.token_id_max, 999 < 9 ? 9 : s.token_id_max);
    assert_true(s.token_id_max >= 9);
    rig_scenario_free(&s);
}

static void test_sampling_defaults_and_overrides(void **state)
{
    (void)state;
    struct rig_scenario s = load_ok(basic);
    const struct rig_scenario_request *a = &s.requests[0], *late = &s.requests[3];
    assert_int_equal(a->max_tokens, 4);
    assert_true(a->sampling.ignore_eos);
    assert_true(a->sampling.temperature == 0.0f);
    assert_int_equal(a->sampling.top_k, -1);
    assert_true(a->sampling.top_p == 1.0f);
    assert_false(a->sampling.has_seed);
    assert_int_equal(a->abort_ns, -1);
    assert_int_equal(a->workload, -1);
    assert_int_equal(late->max_tokens, 9);
    assert_true(late->sampling.temperature == 0.5f);
    assert_int_equal(late->sampling.top_k, 20);
    assert_true(fabsf(late->sampling.top_p - 0.9f) < 1e-6f);
    assert_true(late->sampling.has_seed);
    assert_int_equal(late->sampling.seed, 11);
    assert_int_equal(late->sampling.stop_count, 2);
    assert_int_equal(late->sampling.stop_token_ids[1], 3);
    assert_int_equal(late->abort_ns, 1500000000);
    assert_int_equal(late->line, 10);
    rig_scenario_free(&s);
}

static void test_set_overrides(void **state)
{
    (void)state;
    const char *sets[] = {"engine.prefill_budget=2048", "seed=99", "model.preset=qwen3-0.6b",
                          "engine.num_pages=12"};
    struct rig_scenario s;
    assert_int_equal(rig_scenario_load_string(basic, "t.yaml", sets, 4, &s, error, sizeof error),
                     RIG_OK);
    assert_int_equal(s.engine.prefill_budget, 2048);
    assert_int_equal(s.engine.num_pages, 12);
    assert_int_equal(s.seed, 99);
    assert_string_equal(s.model.preset, "qwen3-0.6b");
    rig_scenario_free(&s);

    const char *unknown[] = {"engine.prefill_budgett=1"};
    assert_int_equal(rig_scenario_load_string(basic, "t.yaml", unknown, 1, &s, error,
                                              sizeof error),
                     RIG_E_INVALID);
    assert_non_null(strstr(error, "--set engine.prefill_budgett=1"));
    assert_non_null(strstr(error, "unknown key 'prefill_budgett'"));
    const char *bad_value[] = {"engine.prefill_budget=lots"};
    assert_int_equal(rig_scenario_load_string(basic, "t.yaml", bad_value, 1, &s, error,
                                              sizeof error),
                     RIG_E_INVALID);
    assert_non_null(strstr(error, "--set engine.prefill_budget=lots"));
    const char *no_equals[] = {"engine.prefill_budget"};
    assert_int_equal(rig_scenario_load_string(basic, "t.yaml", no_equals, 1, &s, error,
                                              sizeof error),
                     RIG_E_INVALID);
    const char *through_scalar[] = {"seed.x=1"};
    assert_int_equal(rig_scenario_load_string(basic, "t.yaml", through_scalar, 1, &s, error,
                                              sizeof error),
                     RIG_E_INVALID);
}

#define HEAD "name: x\nmodel: {preset: tiny}\n"

static void test_errors_name_position_and_key(void **state)
{
    (void)state;
    load_fails(HEAD "engin: {}\nrequests: [{id: a, tokens: [1]}]\n", RIG_E_INVALID,
               "t.yaml:3:1: unknown key 'engin' in the scenario");
    load_fails(HEAD "engine: {prefil_budget: 5}\n", RIG_E_INVALID,
               "t.yaml:3:10: unknown key 'prefil_budget' in engine");
    load_fails(HEAD "engine:\n  prefill_budget: many\n", RIG_E_INVALID,
               "t.yaml:4:19: 'prefill_budget' must be an integer, not 'many'");
    load_fails(HEAD "engine: {max_running_req: 0}\n", RIG_E_RANGE,
               "t.yaml:3:27: 'max_running_req' = 0 is outside [1, 65536]");
    load_fails(HEAD "engine: {policy: fastest}\n", RIG_E_INVALID,
               "'policy' must be one of prefill_first, decode_first, mixed, not 'fastest'");
    struct rig_scenario order =
        load_ok(HEAD "engine: {decode_order: admission}\nrequests: [{id: a, tokens: [1]}]\n");
    assert_int_equal(order.engine.decode_order, RIG_DECODE_ORDER_ADMISSION);
    rig_scenario_free(&order);
    load_fails(HEAD "engine: {decode_order: shortest_first}\n", RIG_E_INVALID,
               "'decode_order' must be one of admission, longest_first, not 'shortest_first'");
    load_fails(HEAD "requests: [{id: a, tokens: [1, 2}]\n", RIG_E_PARSE, "t.yaml:3:");
    load_fails("model: {preset: tiny}\nrequests: [{id: a, tokens: [1]}]\n", RIG_E_INVALID,
               "the scenario needs a 'name'");
    load_fails("name: x\nrequests: [{id: a, tokens: [1]}]\n", RIG_E_INVALID,
               "the scenario needs a 'model'");
    load_fails(HEAD "seed: 1\n", RIG_E_INVALID, "the scenario has no requests");
    load_fails(HEAD "requests: [{id: a, tokens: [1]}, {id: a, tokens: [2]}]\n", RIG_E_INVALID,
               "request id 'a' is used twice");
    load_fails(HEAD "requests: [{id: a, same_prompt_as: b}, {id: b, tokens: [2]}]\n",
               RIG_E_INVALID, "'same_prompt_as: b' names no request declared before");
    load_fails(HEAD "requests: [{id: a, tokens: [1, x]}]\n", RIG_E_INVALID,
               "t.yaml:3:32: 'tokens' must be an integer, not 'x'");
    load_fails(HEAD "requests: [{id: a}]\n", RIG_E_INVALID, "a request needs a prompt");
    load_fails(HEAD "requests: [{tokens: [1]}]\n", RIG_E_INVALID, "a request needs an 'id'");
    load_fails(HEAD "requests: [{id: a, tokens: [1], at: soon}]\n", RIG_E_INVALID,
               "'at' must be a duration");
    load_fails(HEAD "requests: [{id: a, tokens: [1], top_k: 0}]\n", RIG_E_RANGE,
               "'top_k' must be -1 (off) or at least 1");
    load_fails(HEAD "requests: [{id: a, tokens: [1, 2]}, {id: b, prefix_from: a,"
                    " prefix_len: 3, tokens: [1]}]\n",
               RIG_E_RANGE, "'prefix_len' = 3 is outside [1, 2]");
    load_fails(HEAD "requests: {id: a}\n", RIG_E_INVALID, "'requests' must be a list");
    load_fails(HEAD "model: {preset: tiny}\n", RIG_E_PARSE, "t.yaml:3:1: duplicate key");
    load_fails("name: x\nmodel: {preset: tiny, path: /m}\nrequests: [{id: a, tokens: [1]}]\n",
               RIG_E_INVALID, "model needs exactly one of preset, path or config");
    load_fails("", RIG_E_PARSE, "t.yaml");
    /* The name is the default results file's: an identifier, never a path (issue 15). */
    static const char *const names[] = {"../../../../tmp/x", "''", "a/b", ".hidden", "-x",
                                        "'a b'", "..", "'x\\ty'"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char text[160];
        snprintf(text, sizeof text, "name: %s\nmodel: {preset: tiny}\n"
                 "requests: [{id: a, tokens: [1]}]\n", names[i]);
        load_fails(text, RIG_E_INVALID, "'name' must be an identifier");
    }
}

/* The swarm's fault plan and back-pressure, so a swarm case replays with them (issue 15). */
static void test_faults_and_back_pressure(void **state)
{
    (void)state;
    struct rig_scenario s = load_ok(HEAD "requests: [{id: a, tokens: [1]}]\n");
    assert_false(s.faults.set);
    assert_int_equal(s.faults.stall_op, -1);
    assert_int_equal(s.faults.start_alloc_fail, -1);
    assert_int_equal(s.engine.max_requests, RIG_SCENARIO_DEFAULT);
    rig_scenario_free(&s);
    s = load_ok(HEAD "engine: {tp_size: 2, max_requests: 3}\n"
                     "faults: {until_step: 120, start_alloc_fail: 19,\n"
                     "         stall: {rank: 1, op: 1756, duration: 7ms}}\n"
                     "requests: [{id: a, tokens: [1]}]\n");
    assert_true(s.faults.set);
    assert_int_equal(s.engine.max_requests, 3);
    assert_int_equal(s.faults.until_step, 120);
    assert_int_equal(s.faults.start_alloc_fail, 19);
    assert_int_equal(s.faults.stall_rank, 1);
    assert_int_equal(s.faults.stall_op, 1756);
    assert_int_equal(s.faults.stall_ns, 7000000);
    rig_scenario_free(&s);
    load_fails(HEAD "faults: {stall: {rank: 1, op: 5, duration: 1ms}}\n"
                    "requests: [{id: a, tokens: [1]}]\n",
               RIG_E_RANGE, "t.yaml:3:18: stall rank 1: the engine has 1 rank");
    load_fails(HEAD "faults: {stall: {op: 5}}\nrequests: [{id: a, tokens: [1]}]\n",
               RIG_E_INVALID, "stall needs 'op' and 'duration'");
    load_fails(HEAD "faults: {stal: {op: 5}}\nrequests: [{id: a, tokens: [1]}]\n",
               RIG_E_INVALID, "unknown key 'stal' in faults");
    load_fails(HEAD "faults: [1]\nrequests: [{id: a, tokens: [1]}]\n", RIG_E_INVALID,
               "'faults' must be a mapping");
    load_fails(HEAD "backend: cuda\nfaults: {until_step: 3}\nrequests: [{id: a, tokens: [1]}]\n",
               RIG_E_INVALID, "faults are injected on the simulator only");
    load_fails(HEAD "engine: {max_requests: 0}\nrequests: [{id: a, tokens: [1]}]\n",
               RIG_E_RANGE, "'max_requests' = 0 is outside [1, 65536]");
    /* One fault plan per rank: not with sim.fault; a fleet injects none. */
    load_fails(HEAD "engine: {tp_size: 2}\nsim: {fault: {kind: stall, rank: 1}}\n"
                    "faults: {until_step: 3}\nrequests: [{id: a, tokens: [1]}]\n",
               RIG_E_INVALID, "faults: not with sim.fault");
    load_fails(HEAD "cluster: {replicas: 2}\nfaults: {until_step: 3}\n"
                    "requests: [{id: a, tokens: [1]}]\n",
               RIG_E_INVALID, "faults: a fleet (cluster:) injects none");
}

/* YAML the loader does not take gets an exact error, not silence or a misleading one
 * (issue 15): a second document, a list as the description, an alias, a NUL byte. */
static void test_yaml_exact_errors(void **state)
{
    (void)state;
    const char *one = HEAD "requests: [{id: a, tokens: [1]}]\n";
    char text[256];
    snprintf(text, sizeof text, "%s---\nname: y\n", one);
    load_fails(text, RIG_E_PARSE, "t.yaml:4:1: a second YAML document: a scenario file holds "
                                  "exactly one");
    snprintf(text, sizeof text, "--- \n%s...\n", one); /* one document, marked: fine */
    struct rig_scenario s = load_ok(text);
    rig_scenario_free(&s);
    load_fails(HEAD "description: [a, b]\nrequests: [{id: a, tokens: [1]}]\n", RIG_E_INVALID,
               "t.yaml:3:15: 'description' must be text, not a list");
    load_fails(HEAD "defaults: &d {max_tokens: 2}\nengine: *d\n"
                    "requests: [{id: a, tokens: [1]}]\n",
               RIG_E_INVALID, "t.yaml:4:10: 'engine' is an alias (*d): YAML anchors and "
                              "aliases are not supported, write the value out");
    load_fails(HEAD "defaults: {max_tokens: &n 2}\nrequests: [{id: a, tokens: [1], "
                    "max_tokens: *n}]\n",
               RIG_E_INVALID, "'max_tokens' is an alias (*n)");
    char path[] = "/tmp/rig_test_nul_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char nul[] = "name: x\nmodel: {preset: tiny}\nrequests: [{id: a, tokens: [1]}]\n"
                       "  \0garbage\n";
    assert_int_equal(write(fd, nul, sizeof nul - 1), (ssize_t)(sizeof nul - 1));
    close(fd);
    assert_int_equal(rig_scenario_load(path, NULL, 0, &s, error, sizeof error), RIG_E_PARSE);
    assert_non_null(strstr(error, ":4:3: a NUL byte: the file is not YAML text"));
    unlink(path);
    /* Debian 12's libfyaml crashed on this explicit key (found by the profile fuzzer; `rig run`
     * segfaulted on it): refused before libfyaml sees it, in a block sequence too. */
    load_fails(HEAD "? n:\t:\nrequests: [{id: a, tokens: [1]}]\n", RIG_E_PARSE,
               "t.yaml:3:1: an explicit ('? ') mapping key: rig's YAML files take plain keys");
    load_fails(HEAD "requests:\n  - ? n:\t:\n", RIG_E_PARSE,
               "t.yaml:4:5: an explicit ('? ') mapping key");
    s = load_ok(HEAD "requests: [{id: '?', tokens: [1]}]\n"); /* a '?' inside a value: fine */
    rig_scenario_free(&s);
}

/* cluster: strict like every key; parsed values reach the scenario. */
static void test_cluster(void **state)
{
    (void)state;
    const char *requests = "requests: [{id: a, tokens: [1]}]\n";
    char text[512];
    snprintf(text, sizeof text, HEAD "cluster: {replicas: 4, routr: x}\n%s", requests);
    load_fails(text, RIG_E_INVALID, "t.yaml:3:24: unknown key 'routr' in cluster");
    snprintf(text, sizeof text, HEAD "cluster: {replicas: 0}\n%s", requests);
    load_fails(text, RIG_E_RANGE, "t.yaml:3:21: 'replicas' = 0 is outside [1, 64]");
    snprintf(text, sizeof text, HEAD "cluster: {router: random}\n%s", requests);
    load_fails(text, RIG_E_INVALID,
               "'router' must be one of round_robin, least_load, cache_aware, not 'random'");
    snprintf(text, sizeof text, HEAD "cluster: 4\n%s", requests);
    load_fails(text, RIG_E_INVALID, "t.yaml:3:10: 'cluster' must be a mapping");
    snprintf(text, sizeof text, HEAD "backend: cuda\ncluster: {replicas: 2}\n%s", requests);
    load_fails(text, RIG_E_INVALID, "a fleet runs on the simulator only");
    struct rig_scenario s;
    char error[512];
    snprintf(text, sizeof text,
             HEAD "cluster: {replicas: 8, tp: 2, router: cache_aware, load_cap: 16}\n%s",
             requests);
    assert_int_equal(rig_scenario_load_string(text, "t.yaml", NULL, 0, &s, error, sizeof error),
                     RIG_OK);
    assert_int_equal(s.cluster.replicas, 8);
    assert_int_equal(s.cluster.tp, 2);
    assert_int_equal(s.cluster.router, RIG_SCENARIO_CACHE_AWARE);
    assert_int_equal(s.cluster.load_cap, 16);
    rig_scenario_free(&s);
    snprintf(text, sizeof text, HEAD "%s", requests);
    assert_int_equal(rig_scenario_load_string(text, "t.yaml", NULL, 0, &s, error, sizeof error),
                     RIG_OK);
    assert_int_equal(s.cluster.replicas, 0); /* no cluster: one engine */
    rig_scenario_free(&s);
}

static void test_missing_file(void **state)
{
    (void)state;
    struct rig_scenario s;
    assert_int_equal(rig_scenario_load("/nonexistent/x.yaml", NULL, 0, &s, error, sizeof error),
                     RIG_E_IO);
    assert_non_null(strstr(error, "/nonexistent/x.yaml"));
}

static void test_expectations(void **state)
{
    (void)state;
    struct rig_scenario s = load_ok(
        HEAD "requests: [{id: a, tokens: [1, 2]}, {id: b, same_prompt_as: a}]\n"
             "expect:\n"
             "  - {request: b, cached_len: 1, finish_reason: length, same_output_as: a}\n"
             "  - {request: a, ttft: {max: 20ms}, output_len: {min: 2, max: 5}}\n"
             "  - {step: 0, phase: prefill, requests: [a, b], tokens: 3}\n"
             "  - {pages_leaked: 0, cache_hit_tokens: {min: 1}}\n"
             "  - {metric: ttft_p99, max: 50ms}\n"
             "  - {request: b, starts_after: a}\n");
    assert_int_equal(s.expect_count, 12);
    const struct rig_scenario_expect *e = s.expects;
    assert_int_equal(e[0].kind, RIG_EXPECT_REQUEST);
    assert_int_equal(e[0].field, RIG_FIELD_CACHED_LEN);
    assert_int_equal(e[0].request, 1);
    assert_true(e[0].lo == 1 && e[0].hi == 1);
    assert_int_equal(e[0].line, 5);
    assert_int_equal(e[1].field, RIG_FIELD_FINISH_REASON);
    assert_true(e[1].lo == RIG_FINISH_LENGTH);
    assert_int_equal(e[2].kind, RIG_EXPECT_SAME_OUTPUT);
    assert_int_equal(e[2].other, 0);
    assert_int_equal(e[3].field, RIG_FIELD_TTFT);
    assert_true(isinf(e[3].lo) && fabs(e[3].hi - 0.020) < 1e-12);
    assert_true(e[4].lo == 2 && e[4].hi == 5);
    assert_int_equal(e[5].kind, RIG_EXPECT_STEP);
    assert_int_equal(e[5].field, RIG_FIELD_PHASE);
    assert_true(e[5].lo == RIG_STEP_PREFILL);
    assert_int_equal(e[6].kind, RIG_EXPECT_STEP_REQUESTS);
    assert_int_equal(e[6].ids_count, 2);
    assert_int_equal(s.expect_uids[e[6].ids_offset + 1], 1);
    assert_int_equal(e[7].field, RIG_FIELD_TOKENS);
    assert_int_equal(e[8].kind, RIG_EXPECT_TOTAL);
    assert_int_equal(e[8].field, RIG_FIELD_PAGES_LEAKED);
    assert_true(e[9].lo == 1 && isinf(e[9].hi));
    assert_int_equal(e[10].kind, RIG_EXPECT_METRIC);
    assert_string_equal(rig_metric_names[e[10].field].name, "ttft_p99");
    assert_true(fabs(e[10].hi - 0.05) < 1e-12);
    assert_int_equal(e[11].kind, RIG_EXPECT_STARTS_AFTER);
    assert_int_equal(s.expect_count, 12);
    rig_scenario_free(&s);
    s = load_ok(HEAD "requests: [{id: a, tokens: [1, 2]}, {id: b, same_prompt_as: a}]\n"
                     "expect: [{request: b, starts_after: a}]\n");
    assert_int_equal(s.expects[0].kind, RIG_EXPECT_STARTS_AFTER);
    rig_scenario_free(&s);

    load_fails(HEAD "requests: [{id: a, tokens: [1]}]\nexpect: [{request: z, output_len: 1}]\n",
               RIG_E_INVALID, "t.yaml:4:20: 'request: z' names no request");
    load_fails(HEAD "requests: [{id: a, tokens: [1]}]\nexpect: [{request: a, cached: 1}]\n",
               RIG_E_INVALID, "unknown key 'cached' in a request expectation");
    load_fails(HEAD "requests: [{id: a, tokens: [1]}]\nexpect: [{metric: ttft_p98, max: 1}]\n",
               RIG_E_INVALID, "unknown metric 'ttft_p98'");
    load_fails(HEAD "requests: [{id: a, tokens: [1]}]\nexpect: [{pages_lost: 0}]\n",
               RIG_E_INVALID, "unknown key 'pages_lost' in an expectation");
    load_fails(HEAD "requests: [{id: a, tokens: [1]}]\nexpect: [{step: 0, phase: both}]\n",
               RIG_E_INVALID, "'phase' must be one of prefill, decode, mixed");
    load_fails(HEAD "requests: [{id: a, tokens: [1]}]\n"
                    "expect: [{request: a, finish_reason: done}]\n",
               RIG_E_INVALID, "'finish_reason' must be one of");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_settings),
        cmocka_unit_test(test_requests_sorted_and_prompts),
        cmocka_unit_test(test_sampling_defaults_and_overrides),
        cmocka_unit_test(test_set_overrides),
        cmocka_unit_test(test_errors_name_position_and_key),
        cmocka_unit_test(test_cluster),
        cmocka_unit_test(test_faults_and_back_pressure),
        cmocka_unit_test(test_yaml_exact_errors),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_expectations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
