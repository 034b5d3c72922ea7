/* test_compare.c — `rig compare` (core/results/compare.c).
 *
 * Checks, on results files written by the real writer (core/results/h5.c): a run compared
 * with itself pairs every step with zero error; a prediction whose decode steps take 10 %
 * longer and prefill steps 20 % less shows exactly +10 % / -20 % per group, in the right
 * batch bucket, and its metrics side by side; a step that ran other requests stays
 * unpaired while the steps after it still pair (the first mismatch is reported); a missing
 * file is RIG_E_IO and an HDF5 file that is no results file RIG_E_PARSE, with the path in
 * the message; the idle fraction of a known timeline; host time per phase (median
 * host_launch and its parts, host_loop, host_process, device gap before a step), NaN where a
 * phase has no step.
 */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/harness/results/compare.h"
#include "core/harness/results/h5.h"
#include "core/harness/results/metrics.h"
#include "core/harness/results/results.h"
#include "tests/support/test_support.h"

#define STEPS 6

/* One request of 5 output tokens; step 0 a 64-token prefill of uid 0 (batch 1), steps 1..5
 * decode steps of uids {0, 1} (batch 2), each 1 ms long with 0.25 ms gaps. Decode steps
 * take `decode_scale`, prefill `prefill_scale` of that. */
static void write_run(const char *path, double prefill_scale, double decode_scale,
                      int32_t odd_step)
{
    struct rig_results r;
    assert_int_equal(rig_results_init(&r, 2, 10, STEPS, 2 * STEPS), RIG_OK);
    snprintf(r.meta.backend, sizeof r.meta.backend, "sim");
    snprintf(r.meta.device, sizeof r.meta.device, "sim:test");
    int64_t t = 0;
    for (int32_t i = 0; i < STEPS; i++) {
        bool prefill = i == 0;
        double scale = prefill ? prefill_scale : decode_scale;
        struct rig_results_step step = {.phase = prefill ? RIG_STEP_PREFILL : RIG_STEP_DECODE,
                                        .batch_size = prefill ? 1 : 2,
                                        .tokens = prefill ? 64 : 2};
        step.start_ns = t;
        step.end_ns = t + (int64_t)llround(1e6 * scale);
        step.host_launch_ns = (int64_t)llround((prefill ? 2e6 : 1e5) * scale);
        step.host_process_ns = prefill ? 3000 : 1000 + i; /* decode: 1001 .. 1005 ns */
        step.host_schedule_ns = 20000; /* host_launch's parts: the rest is the issue */
        step.host_prepare_ns = 3000;
        step.host_issue_ns = step.host_launch_ns - 23000;
        step.host_loop_ns = prefill ? 9000 : 7000; /* between the steps */
        t = step.end_ns + 250000;
        int32_t uids[2] = {0, 1};
        if (i == odd_step) step.tokens = 3; /* another batch: unpairable */
        assert_int_equal(rig_results_add_step(&r, &step, uids, step.batch_size), RIG_OK);
    }
    for (int32_t q = 0; q < 2; q++) {
        struct rig_results_request *a = &r.requests[q];
        a->arrival_ns = 0;
        a->first_scheduled_ns = 0;
        a->token_offset = rig_results_reserve_tokens(&r, 5);
        a->output_len = 5;
        for (int32_t k = 0; k < 5; k++) r.token_time_ns[a->token_offset + k] = r.steps[k].end_ns;
        a->first_token_ns = r.steps[0].end_ns;
        a->finish_ns = r.steps[4].end_ns;
        a->finish_reason = RIG_FINISH_LENGTH;
        a->input_len = 64;
    }
    struct rig_metrics m;
    assert_int_equal(rig_metrics_compute(&r, &m), RIG_OK);
    char error[256];
    assert_int_equal(rig_results_write_h5(&r, &m, path, error, sizeof error), RIG_OK);
    rig_results_free(&r);
}

static const struct rig_compare_group *group(const struct rig_compare_report *r,
                                             const char *label)
{
    for (int32_t g = 0; g < r->group_count; g++)
        if (strcmp(r->groups[g].label, label) == 0) return &r->groups[g];
    fail_msg("no group %s", label);
    return NULL;
}

static const struct rig_compare_metric *metric(const struct rig_compare_report *r,
                                               const char *name)
{
    for (int32_t i = 0; i < r->metric_count; i++)
        if (strcmp(r->metrics[i].name, name) == 0) return &r->metrics[i];
    fail_msg("no metric %s", name);
    return NULL;
}

static void compare(const char *a, const char *b, struct rig_compare_report *report)
{
    struct rig_compare_run m, p;
    char error[256];
    assert_int_equal(rig_compare_read(a, &m, error, sizeof error), RIG_OK);
    assert_int_equal(rig_compare_read(b, &p, error, sizeof error), RIG_OK);
    assert_int_equal(m.step_count, STEPS);
    assert_string_equal(m.backend, "sim");
    assert_string_equal(m.device, "sim:test");
    assert_int_equal(rig_compare_runs(&m, &p, report), RIG_OK);
    FILE *null = fopen("/dev/null", "w");
    rig_compare_print(&m, &p, report, null);
    fclose(null);
    rig_compare_run_free(&m);
    rig_compare_run_free(&p);
    assert_null(m.phase);
}

static void test_self_and_scaled(void **state)
{
    (void)state;
    write_run("compare_a.h5", 1.0, 1.0, -1);
    write_run("compare_b.h5", 0.8, 1.1, -1);
    struct rig_compare_report r;
    compare("compare_a.h5", "compare_a.h5", &r);
    assert_int_equal(r.paired, STEPS);
    assert_int_equal(r.first_mismatch, -1);
    assert_true(group(&r, "all")->p90_abs == 0.0);
    assert_true(metric(&r, "ttft_median")->error == 0.0);
    compare("compare_a.h5", "compare_b.h5", &r);
    assert_int_equal(r.paired, STEPS);
    const struct rig_compare_group *decode = group(&r, "decode");
    assert_int_equal(decode->pairs, STEPS - 1);
    assert_float_equal(decode->median_abs, 0.10, 1e-9);
    assert_float_equal(decode->mean_signed, 0.10, 1e-9);
    assert_float_equal(decode->measured_median_s, 1e-3, 1e-12);
    assert_float_equal(decode->predicted_median_s, 1.1e-3, 1e-12);
    assert_float_equal(group(&r, "prefill")->mean_signed, -0.20, 1e-9);
    assert_int_equal(group(&r, "batch 2-8")->pairs, STEPS - 1);
    assert_int_equal(group(&r, "batch 1")->pairs, 1);
    assert_float_equal(metric(&r, "ttft_median")->error, -0.20, 1e-9);
    /* a: steps 0..4 end at 1, 2.25, 3.5, 4.75, 6 ms; b: 0.8, 2.15, 3.5, 4.85, 6.2 ms */
    assert_float_equal(metric(&r, "e2e_median")->predicted, 6.2e-3, 1e-12);
    double idle_a = 1.0 - 6.0 / 7.25; /* 6 ms busy in a 7.25 ms span */
    assert_float_equal(r.measured_idle, idle_a, 1e-12);
    assert_float_equal(metric(&r, "steps")->error, 0.0, 0.0);
    /* host per phase: launch scales with the step, process as written, gaps 0.25 ms */
    assert_string_equal(r.host[1].label, "decode");
    assert_float_equal(r.host[0].launch_s[0], 2e-3, 1e-12);
    assert_float_equal(r.host[0].launch_s[1], 1.6e-3, 1e-12);
    assert_float_equal(r.host[1].launch_s[1], 1.1e-4, 1e-12);
    assert_float_equal(r.host[1].process_s[0], 1003e-9, 1e-15);
    assert_float_equal(r.host[1].gap_s[0], 0.25e-3, 1e-12);
    assert_float_equal(r.host[1].gap_s[1], 0.25e-3, 1e-12);
    assert_true(isnan(r.host[0].gap_s[0])); /* no step before the prefill */
    assert_true(isnan(r.host[2].launch_s[0])); /* no mixed step */
    assert_float_equal(r.host[1].part_s[0][0], 20e-6, 1e-15); /* schedule */
    assert_float_equal(r.host[1].part_s[1][1], 3e-6, 1e-15);  /* prepare */
    assert_float_equal(r.host[1].part_s[2][1], 1.1e-4 - 23e-6, 1e-12); /* issue */
    assert_true(isnan(r.host[2].part_s[2][0]));
    assert_float_equal(r.host[1].loop_s[0], 7e-6, 1e-15); /* host_loop */
    assert_float_equal(r.host[0].loop_s[1], 9e-6, 1e-15);
    assert_true(isnan(r.host[2].loop_s[0]));
    unlink("compare_a.h5");
    unlink("compare_b.h5");
}

static void test_unpaired_step(void **state)
{
    (void)state;
    write_run("compare_c.h5", 1.0, 1.0, -1);
    write_run("compare_d.h5", 1.0, 1.5, 3);
    struct rig_compare_report r;
    compare("compare_c.h5", "compare_d.h5", &r);
    assert_int_equal(r.first_mismatch, 3);
    assert_int_equal(r.paired, STEPS - 1); /* steps 4, 5 still pair */
    assert_int_equal(group(&r, "decode")->pairs, STEPS - 2);
    assert_float_equal(group(&r, "decode")->p90_abs, 0.5, 1e-9);
    assert_int_equal(group(&r, "decode")->predicted_steps, STEPS - 1);
    unlink("compare_c.h5");
    unlink("compare_d.h5");
}

static void test_bad_files(void **state)
{
    (void)state;
    struct rig_compare_run run;
    char error[256];
    assert_int_equal(rig_compare_read("no_such_file.h5", &run, error, sizeof error), RIG_E_IO);
    assert_non_null(strstr(error, "no_such_file.h5"));
    hid_t file = H5Fcreate("compare_other.h5", H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    H5Fclose(file);
    assert_int_equal(rig_compare_read("compare_other.h5", &run, error, sizeof error),
                     RIG_E_PARSE);
    assert_non_null(strstr(error, "not a rig results file"));
    assert_null(run.phase);
    unlink("compare_other.h5");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_and_scaled),
        cmocka_unit_test(test_unpaired_step),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
