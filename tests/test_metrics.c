/* test_metrics.c — sglang.bench_serving metrics (core/harness/results/metrics.c).
 *
 * Checks the percentile against numpy.percentile's linear interpolation on hand-worked
 * values, population std, empty inputs, and the full computation on a small synthetic run
 * worked out by hand: TTFT/E2E/TPOT/ITL over completed requests only (an aborted and a
 * rejected request are counted apart), duration from first arrival to last finish,
 * throughputs and concurrency; plus lookup of metrics by name.
 */
#include <math.h>
#include <string.h>

#include "core/harness/results/metrics.h"
#include "tests/support/test_support.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9)

static void test_percentile_like_numpy(void **state)
{
    (void)state;
    const double v[] = {1, 2, 3, 4};
    NEAR(rig_metrics_percentile(v, 4, 50), 2.5);  /* np.percentile([1,2,3,4], 50) */
    NEAR(rig_metrics_percentile(v, 4, 90), 3.7);
    NEAR(rig_metrics_percentile(v, 4, 99), 3.97);
    NEAR(rig_metrics_percentile(v, 4, 0), 1);
    NEAR(rig_metrics_percentile(v, 4, 100), 4);
    NEAR(rig_metrics_percentile(v, 1, 99), 1);
    NEAR(rig_metrics_percentile(v, 0, 50), 0);
    double w[] = {5, 1, 3, 2, 4};
    struct rig_metric_stats s;
    rig_metrics_stats(w, 5, &s);
    NEAR(s.mean, 3);
    NEAR(s.median, 3);
    NEAR(s.std, sqrt(2.0)); /* population: np.std([1..5]) */
    NEAR(s.p90, 4.6);
    NEAR(s.max, 5);
    NEAR(s.count, 5);
    rig_metrics_stats(w, 0, &s);
    NEAR(s.mean, 0);
    NEAR(s.count, 0);
}

/* A: arrives 0, tokens at 1.0, 1.5, 2.5 s (completed, 3 tokens, 10 prompt, 4 cached).
 * B: arrives 1.0, one token at 1.2 (completed, 20 prompt). C: aborted. D: rejected. */
static void build_run(struct rig_results *r)
{
    assert_int_equal(rig_results_init(r, 4, 8, 4, 8), RIG_OK);
    struct rig_results_request *a = &r->requests[0], *b = &r->requests[1];
    a->arrival_ns = 0;
    a->first_scheduled_ns = 100000000;
    a->first_token_ns = 1000000000;
    a->finish_ns = 2500000000;
    a->input_len = 10;
    a->cached_len = 4;
    a->output_len = 3;
    a->finish_reason = RIG_FINISH_LENGTH;
    a->token_offset = rig_results_reserve_tokens(r, 3);
    const int64_t times[] = {1000000000, 1500000000, 2500000000};
    memcpy(r->token_time_ns + a->token_offset, times, sizeof times);
    b->arrival_ns = 1000000000;
    b->first_scheduled_ns = 1000000000;
    b->first_token_ns = b->finish_ns = 1200000000;
    b->input_len = 20;
    b->output_len = 1;
    b->finish_reason = RIG_FINISH_STOP;
    b->token_offset = rig_results_reserve_tokens(r, 1);
    r->token_time_ns[b->token_offset] = 1200000000;
    r->requests[2].arrival_ns = 500000000;
    r->requests[2].finish_ns = 2000000000; /* aborted: inside the duration, as in sglang */
    r->requests[2].input_len = 50;
    r->requests[2].finish_reason = RIG_FINISH_ABORT;
    r->requests[3].arrival_ns = 0;
    r->requests[3].finish_reason = RIG_FINISH_REJECTED;
}

static void test_compute_on_a_small_run(void **state)
{
    (void)state;
    struct rig_results r;
    build_run(&r);
    struct rig_metrics m;
    assert_int_equal(rig_metrics_compute(&r, &m), RIG_OK);
    NEAR(m.completed, 2);
    NEAR(m.aborted, 1);
    NEAR(m.rejected, 1);
    NEAR(m.unfinished, 0);
    NEAR(m.total_input, 30);
    NEAR(m.total_output, 4);
    NEAR(m.cache_hit_tokens, 4);
    NEAR(m.duration_s, 2.5);
    NEAR(m.request_throughput, 0.8);
    NEAR(m.input_throughput, 12);
    NEAR(m.output_throughput, 1.6);
    NEAR(m.total_throughput, 13.6);
    NEAR(m.concurrency, 2.7 / 2.5);
    NEAR(m.ttft.mean, 0.6);
    NEAR(m.ttft.median, 0.6);
    NEAR(m.ttft.max, 1.0);
    NEAR(m.ttft.p99, 0.2 + 0.8 * 0.99);
    NEAR(m.e2e.mean, 1.35);
    NEAR(m.tpot.count, 1); /* B has one token: no TPOT */
    NEAR(m.tpot.mean, 0.75);
    NEAR(m.itl.count, 2);
    NEAR(m.itl.mean, 0.75);
    NEAR(m.itl.max, 1.0);
    NEAR(m.itl.std, 0.25);
    rig_results_free(&r);
}

static void test_names(void **state)
{
    (void)state;
    struct rig_results r;
    build_run(&r);
    struct rig_metrics m;
    assert_int_equal(rig_metrics_compute(&r, &m), RIG_OK);
    int32_t i = rig_metrics_find("ttft_p99");
    assert_true(i >= 0);
    assert_true(rig_metric_names[i].is_time);
    assert_string_equal(rig_metric_names[i].units, "s");
    NEAR(rig_metrics_value(&m, i), m.ttft.p99);
    NEAR(rig_metrics_value(&m, rig_metrics_find("output_throughput")), 1.6);
    NEAR(rig_metrics_value(&m, rig_metrics_find("e2e_max")), 2.5);
    NEAR(rig_metrics_value(&m, rig_metrics_find("itl_count")), 2);
    NEAR(rig_metrics_value(&m, rig_metrics_find("completed")), 2);
    assert_int_equal(rig_metrics_find("ttft_p98"), -1);
    assert_int_equal(rig_metrics_find(""), -1);
    rig_results_free(&r);
}

static void test_empty_run(void **state)
{
    (void)state;
    struct rig_results r;
    assert_int_equal(rig_results_init(&r, 0, 0, 0, 0), RIG_OK);
    struct rig_metrics m;
    assert_int_equal(rig_metrics_compute(&r, &m), RIG_OK);
    NEAR(m.completed, 0);
    NEAR(m.duration_s, 0);
    NEAR(m.request_throughput, 0);
    NEAR(m.ttft.p99, 0);
    rig_results_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentile_like_numpy),
        cmocka_unit_test(test_compute_on_a_small_run),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_empty_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
