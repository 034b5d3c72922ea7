/* test_fleet.c — the fleet simulation (core/harness/fleet/fleet.h).
 *
 * On scenarios/shared-prefix.yaml (8 groups of 16 prompts sharing a 1024-token prefix) with
 * 4 replicas: every router drains all 128 requests with no invariant broken and no page
 * leaked on any replica; the cache-aware router serves more prompt tokens from the replicas'
 * caches than round-robin (it keeps each group on one replica) and its decisions record the
 * matched prefix; round-robin sends request uid to replica uid mod 4; the same run twice gives
 * the same records byte for byte; bad configurations are refused.
 */
#include <string.h>

#include "core/harness/fleet/fleet.h"
#include "hal/backends.h"
#include "tests/support/test_support.h"

static struct rig_scenario rig__scenario;

static int rig__setup(void **state)
{
    (void)state;
    rig_backends_register();
    char error[512];
    if (rig_scenario_load(RIG_SOURCE_DIR "/scenarios/shared-prefix.yaml", NULL, 0,
                          &rig__scenario, error, sizeof error) != RIG_OK)
        fail_msg("%s", error);
    return 0;
}

static int rig__teardown(void **state)
{
    (void)state;
    rig_scenario_free(&rig__scenario);
    return 0;
}

static int64_t rig__run(enum rig_fleet_router router, struct rig_fleet_results *out)
{
    struct rig_fleet_config config;
    rig_fleet_config_default(&config);
    config.replicas = 4;
    config.router = router;
    char error[512] = "";
    if (rig_fleet_run(&rig__scenario, &config, out, error, sizeof error) != RIG_OK)
        fail_msg("%s", error);
    int64_t cached = 0, requests = 0;
    for (int32_t r = 0; r < 4; r++) {
        assert_int_equal(out->replicas[r].invariant_violations, 0);
        assert_int_equal(out->replicas[r].pages_leaked, 0);
        cached += out->replicas[r].cached_tokens;
        requests += out->replicas[r].requests;
    }
    assert_int_equal(requests, 128);
    for (int64_t i = 0; i < out->request_count; i++) {
        assert_int_equal(out->requests[i].finish_reason, 1); /* RIG_FINISH_LENGTH */
        assert_int_equal(out->requests[i].output_len, 256);
    }
    return cached;
}

static void test_cache_aware_beats_round_robin(void **state)
{
    (void)state;
    struct rig_fleet_results rr, aware;
    int64_t rr_cached = rig__run(RIG_FLEET_ROUND_ROBIN, &rr);
    int64_t aware_cached = rig__run(RIG_FLEET_CACHE_AWARE, &aware);
    print_message("cached prompt tokens: round_robin %lld, cache_aware %lld of %d\n",
                  (long long)rr_cached, (long long)aware_cached, 128 * 1152);
    assert_true(aware_cached > rr_cached + 128 * 1152 / 10);
    for (int64_t i = 0; i < rr.request_count; i++) assert_int_equal(rr.requests[i].replica, i % 4);
    int32_t matched = 0;
    for (int64_t i = 0; i < aware.request_count; i++) matched += aware.requests[i].matched >= 1024;
    assert_true(matched >= 100); /* all but each group's first few find their prefix */
    rig_fleet_results_free(&rr);
    rig_fleet_results_free(&aware);
}

static void test_same_bytes_twice(void **state)
{
    (void)state;
    struct rig_fleet_results a, b;
    rig__run(RIG_FLEET_LEAST_LOAD, &a);
    rig__run(RIG_FLEET_LEAST_LOAD, &b);
    assert_int_equal(a.request_count, b.request_count);
    assert_memory_equal(a.requests, b.requests, sizeof *a.requests * (size_t)a.request_count);
    assert_memory_equal(a.replicas, b.replicas, sizeof a.replicas);
    assert_int_equal(a.end_ns, b.end_ns);
    rig_fleet_results_free(&a);
    rig_fleet_results_free(&b);
}

/* The recorded run (what `rig run` writes for a `cluster:` scenario) holds the same routes and
 * totals as the fleet's own records, every output token's time, and valid results. */
static void test_recorded(void **state)
{
    (void)state;
    struct rig_fleet_config config;
    rig_fleet_config_default(&config);
    config.replicas = 4;
    config.router = RIG_FLEET_CACHE_AWARE;
    struct rig_fleet_results out;
    struct rig_results record;
    char error[512] = "";
    if (rig_fleet_run_recorded(&rig__scenario, &config, &out, &record, error, sizeof error) !=
        RIG_OK)
        fail_msg("%s", error);
    assert_non_null(record.fleet);
    assert_string_equal(record.fleet->router, "cache_aware");
    assert_int_equal(record.fleet->replica_count, 4);
    assert_int_equal(rig_results_check(&record, error, sizeof error), 0);
    int64_t cached = 0;
    for (int64_t i = 0; i < out.request_count; i++) {
        const struct rig_results_request *q = &record.requests[i];
        assert_int_equal(record.fleet->routes[i].replica, out.requests[i].replica);
        assert_int_equal(record.fleet->routes[i].matched, out.requests[i].matched);
        assert_int_equal(q->first_token_ns, out.requests[i].first_token_ns);
        assert_int_equal(q->output_len, 256);
        assert_int_equal(record.token_time_ns[q->token_offset], q->first_token_ns);
        assert_int_equal(record.token_time_ns[q->token_offset + 255], q->finish_ns);
        cached += q->cached_len;
    }
    for (int32_t r = 0; r < 4; r++)
        assert_memory_equal(&record.fleet->replicas[r], &out.replicas[r], sizeof out.replicas[r]);
    assert_int_equal(record.cache_hit_tokens, cached);
    assert_int_equal(record.step_count, 0);
    rig_results_free(&record);
    rig_fleet_results_free(&out);
}

static void test_bad_config(void **state)
{
    (void)state;
    struct rig_fleet_config config;
    rig_fleet_config_default(&config);
    struct rig_fleet_results out;
    char error[256];
    config.replicas = 0;
    assert_int_equal(rig_fleet_run(&rig__scenario, &config, &out, error, sizeof error),
                     RIG_E_INVALID);
    config.replicas = RIG_FLEET_REPLICAS_MAX + 1;
    assert_int_equal(rig_fleet_run(&rig__scenario, &config, &out, error, sizeof error),
                     RIG_E_INVALID);
    rig_fleet_results_free(&out);
    enum rig_fleet_router router;
    assert_int_equal(rig_fleet_router_parse("cache_aware", &router), RIG_OK);
    assert_int_equal(router, RIG_FLEET_CACHE_AWARE);
    assert_int_equal(rig_fleet_router_parse("random", &router), RIG_E_NOT_FOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_aware_beats_round_robin),
        cmocka_unit_test(test_same_bytes_twice),
        cmocka_unit_test(test_recorded),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, rig__setup, rig__teardown);
}
