/* test_host_fit.c — the engine's host time model (hal/host_model.h), its calibration
 * (core/harness/bench/host_fit.c) and how a profile takes a fitted table's values
 * (sim/profile.c over hal/optable.c's attributes).
 *
 * Checks:
 *   - the fit: exact data gives back its coefficients (least squares and least absolute
 *     deviations); a coefficient the data want negative is 0 and the rest the best fit
 *     without it; an all-zero column gets 0; outliers pull the mean fit and not the median one;
 *   - self-consistency: the calibration run on the simulator, whose host columns are the
 *     profile's own charges, fits every coefficient of a profile that sets all of them to
 *     within RIG__TOLERANCE (relative) or RIG__SLACK_NS (absolute: each charge is rounded to a
 *     nanosecond) — and the engine charges the loop (host_loop > 0 with its keys);
 *   - tables: a table carrying host model attributes and the calls' means overrides the
 *     profile's keys (the means over the medians), coefficients it lacks leave the keys; a
 *     table without them (older tables) reads 0 with nothing given and changes no key; a
 *     malformed attribute fails the read and the profile's load, naming file and attribute.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/harness/bench/host_fit.h"
#include "hal/backends.h"
#include "hal/optable.h"
#include "sim/optable.h"
#include "sim/profile.h"
#include "tests/support/test_support.h"

#define RIG__TOLERANCE 0.005 /* relative: what the self-consistency fit must reach */
#define RIG__SLACK_NS  0.5   /* absolute, per coefficient */

/* Rows of a synthetic term: x = {1, r, t, n, f} over a grid; y from `c` (+ noise). */
#define RIG__ROWS 200
static void synthetic(double (*x)[RIG_HOST_FACTORS], double *y, const double *c)
{
    for (int32_t i = 0; i < RIG__ROWS; i++) {
        double row[RIG_HOST_FACTORS] = {1, 1 + i % 37, 1 + (i * 7919) % 4096, i % 3, i % 5 == 0};
        y[i] = 0;
        for (int32_t f = 0; f < RIG_HOST_FACTORS; f++) {
            x[i][f] = row[f];
            y[i] += c[f] * row[f];
        }
    }
}

static void test_solve(void **state)
{
    (void)state;
    static double x[RIG__ROWS][RIG_HOST_FACTORS], y[RIG__ROWS];
    const double truth[RIG_HOST_FACTORS] = {5000, 120, 16, 900, 30000};
    synthetic(x, y, truth);
    double c[RIG_HOST_FACTORS];
    for (int32_t median = 0; median < 2; median++) {
        rig_host_fit_solve((const double(*)[RIG_HOST_FACTORS])x, y, RIG__ROWS, median, c);
        for (int32_t f = 0; f < RIG_HOST_FACTORS; f++)
            assert_true(fabs(c[f] - truth[f]) <= 1e-6 * truth[f] + 1e-6);
    }
    /* a coefficient the data want negative: 0, the rest fitted without it */
    const double negative[RIG_HOST_FACTORS] = {5000, 120, -2, 0, 0};
    synthetic(x, y, negative);
    rig_host_fit_solve((const double(*)[RIG_HOST_FACTORS])x, y, RIG__ROWS, false, c);
    for (int32_t f = 0; f < RIG_HOST_FACTORS; f++)
        assert_true(c[f] >= 0);
    assert_float_equal(c[RIG_HOST_TOKENS], 0, 0);
    /* an all-zero column: 0, and the others exact */
    const double plain[RIG_HOST_FACTORS] = {700, 35, 0, 0, 0};
    synthetic(x, y, plain);
    for (int32_t i = 0; i < RIG__ROWS; i++)
        x[i][RIG_HOST_FINISHED] = 0;
    rig_host_fit_solve((const double(*)[RIG_HOST_FACTORS])x, y, RIG__ROWS, false, c);
    assert_float_equal(c[RIG_HOST_FINISHED], 0, 0);
    assert_float_equal(c[RIG_HOST_BASE], 700, 1e-6);
    assert_float_equal(c[RIG_HOST_REQUESTS], 35, 1e-9);
    /* one row in ten 50 us slow (a preemption): the mean fit moves, the median one not */
    synthetic(x, y, truth);
    for (int32_t i = 3; i < RIG__ROWS; i += 10)
        y[i] += 50000;
    rig_host_fit_solve((const double(*)[RIG_HOST_FACTORS])x, y, RIG__ROWS, true, c);
    assert_true(fabs(c[RIG_HOST_BASE] - truth[RIG_HOST_BASE]) < 0.01 * truth[RIG_HOST_BASE]);
    double mean[RIG_HOST_FACTORS];
    rig_host_fit_solve((const double(*)[RIG_HOST_FACTORS])x, y, RIG__ROWS, false, mean);
    assert_true(mean[RIG_HOST_BASE] > truth[RIG_HOST_BASE] + 2000);
    /* no rows: nothing to fit */
    rig_host_fit_solve((const double(*)[RIG_HOST_FACTORS])x, y, 0, true, c);
    for (int32_t f = 0; f < RIG_HOST_FACTORS; f++)
        assert_float_equal(c[f], 0, 0);
}

/* The h100 profile (its op table included) with every host model coefficient set: the term's
 * base 1,000 x (term + 1) ns and its factors 2.5, 12.5, 62.5, 312.5 ns x (term + 1), all
 * exact in binary. Only the coefficients the term counts (hal/host_model.h: SCHEDULE and
 * PREPARE have no finished requests) are non-zero. */
static double coefficient(int32_t t, int32_t f)
{
    if (f == RIG_HOST_FINISHED && (t == RIG_HOST_SCHEDULE || t == RIG_HOST_PREPARE)) return 0;
    return f == RIG_HOST_BASE ? 1000.0 * (t + 1) : 2.5 * pow(5, f - 1) * (t + 1);
}

static void write_profile(const char *path, const char *table)
{
    FILE *out = fopen(path, "w"), *in = fopen(RIG_SOURCE_DIR "/sim/profiles/h100.yaml", "r");
    assert_non_null(out);
    assert_non_null(in);
    char line[512];
    while (fgets(line, sizeof line, in) != NULL)
        if (strncmp(line, "op_table:", 9) != 0 && strncmp(line, "host_", 5) != 0) fputs(line, out);
    fclose(in);
    fprintf(out, "op_table: %s\n", table);
    for (int32_t t = 0; t < RIG_HOST_TERMS; t++)
        for (int32_t f = 0; f < RIG_HOST_FACTORS; f++)
            fprintf(out, "%s: %.17g\n", rig_host_model_keys[t][f], coefficient(t, f));
    fclose(out);
}

static void assert_fitted(const struct rig_host_model *m)
{
    for (int32_t t = 0; t < RIG_HOST_TERMS; t++) {
        for (int32_t f = 0; f < RIG_HOST_FACTORS; f++) {
            double want = coefficient(t, f), got = m->ns[t][f];
            if (fabs(got - want) > RIG__TOLERANCE * want + RIG__SLACK_NS)
                fail_msg("%s: fitted %.6g, the profile's %.6g", rig_host_model_keys[t][f], got,
                         want);
        }
    }
}

static void test_calibration_gives_back_the_profile(void **state)
{
    (void)state;
    rig_backends_register();
    write_profile("host_fit_profile.yaml", "h100");
    struct rig_host_fit_options o = {
        .backend = "sim", .profile = "host_fit_profile.yaml", .results_path = "host_fit_run.h5"};
    struct rig_host_fit fit;
    char error[512];
    enum rig_status status = rig_host_fit_run(&o, &fit, error, sizeof error);
    if (status != RIG_OK) fail_msg("%s", error);
    assert_true(fit.steps > 1000); /* the workload: 416 requests */
    for (int32_t t = 0; t < RIG_HOST_TERMS; t++) {
        assert_true(fit.rows[t] > 1000);
        assert_true(fit.residual_ns[t] <= 2); /* the charges, rounded */
    }
    assert_true(fit.measured_ns[RIG_HOST_LOOP] > 1000); /* the engine charges the loop */
    assert_fitted(&fit.mean);
    assert_fitted(&fit.median);
    assert_int_equal(access("host_fit_run.h5", F_OK), 0);
    /* a quick run fits too */
    o.quick = true;
    o.results_path = NULL;
    status = rig_host_fit_run(&o, &fit, error, sizeof error);
    if (status != RIG_OK) fail_msg("%s", error);
    assert_fitted(&fit.mean);
    /* an unknown model fails with the scenario's message, and returns nothing */
    o.model = "no-such-model";
    assert_true(rig_host_fit_run(&o, &fit, error, sizeof error) < 0);
    assert_non_null(strstr(error, "no-such-model"));
    assert_float_equal(fit.mean.ns[RIG_HOST_LOOP][RIG_HOST_BASE], 0, 0);
    unlink("host_fit_profile.yaml");
    unlink("host_fit_run.h5");
}

/* A table of one point with the given root attributes. */
static void write_table(const char *path, const char *const (*attrs)[2], int32_t count)
{
    struct rig_optable_point point;
    memset(&point, 0, sizeof point);
    point.key.kind = RIG_OP_RMS_NORM;
    point.key.p[0] = 16;
    point.key.p[1] = 65536;
    point.bytes = 65536;
    point.cold_ns = point.warm_ns = 3000;
    char error[256];
    assert_int_equal(rig_optable_write(path, &point, 1, attrs, count, error, sizeof error), RIG_OK);
}

static void test_table_attributes(void **state)
{
    (void)state;
    char error[512];
    /* an older table: nothing given, every value 0, and the profile's keys stay */
    write_table("host_fit_old.h5", NULL, 0);
    struct rig_optable_host host;
    assert_int_equal(rig_optable_read_host("host_fit_old.h5", &host, error, sizeof error), RIG_OK);
    for (int32_t t = 0; t < RIG_HOST_TERMS; t++) {
        for (int32_t f = 0; f < RIG_HOST_FACTORS; f++) {
            assert_false(host.model_given[t][f] || host.model_median_given[t][f]);
            assert_float_equal(host.model.ns[t][f], 0, 0);
        }
    }
    for (int32_t k = 0; k < RIG_OPTABLE_HOST_CALLS; k++)
        assert_float_equal(host.mean_ns[k], 0, 0);
    write_profile("host_fit_old.yaml", "host_fit_old.h5");
    struct rig_sim_profile profile;
    assert_int_equal(rig_sim_profile_load("host_fit_old.yaml", &profile, error, sizeof error),
                     RIG_OK);
    for (int32_t t = 0; t < RIG_HOST_TERMS; t++)
        for (int32_t f = 0; f < RIG_HOST_FACTORS; f++)
            assert_float_equal(profile.host.ns[t][f], coefficient(t, f), 0);
    /* a fitted table: its coefficients (0 included) over the keys, the calls' means over
     * their medians; what it lacks stays the profile's */
    const char *fitted[][2] = {{"host_loop_ns", "12345.5"},
                               {"host_loop_median_ns", "9000"},
                               {"host_prepare_per_token_ns", "0"},
                               {"upload_host_ns", "3000"},
                               {"upload_host_mean_ns", "4500"},
                               {"graph_launch_host_ns", "7600"},
                               {"graph_launch_host_mean_ns", "20000"},
                               {"download_host_ns", "3100"}};
    write_table("host_fit_new.h5", (const char *const(*)[2])fitted,
                (int32_t)(sizeof fitted / sizeof fitted[0]));
    assert_int_equal(rig_optable_read_host("host_fit_new.h5", &host, error, sizeof error), RIG_OK);
    assert_true(host.model_given[RIG_HOST_LOOP][RIG_HOST_BASE]);
    assert_true(host.model_median_given[RIG_HOST_LOOP][RIG_HOST_BASE]);
    assert_false(host.model_median_given[RIG_HOST_PREPARE][RIG_HOST_TOKENS]);
    assert_float_equal(host.model_median.ns[RIG_HOST_LOOP][RIG_HOST_BASE], 9000, 0);
    write_profile("host_fit_new.yaml", "host_fit_new.h5");
    assert_int_equal(rig_sim_profile_load("host_fit_new.yaml", &profile, error, sizeof error),
                     RIG_OK);
    assert_float_equal(profile.host.ns[RIG_HOST_LOOP][RIG_HOST_BASE], 12345.5, 0);
    assert_float_equal(profile.host.ns[RIG_HOST_PREPARE][RIG_HOST_TOKENS], 0, 0);
    assert_float_equal(profile.host.ns[RIG_HOST_PREPARE][RIG_HOST_REQUESTS],
                       coefficient(RIG_HOST_PREPARE, RIG_HOST_REQUESTS), 0);
    assert_int_equal(profile.upload_host_ns, 4500);        /* the mean */
    assert_int_equal(profile.graph_launch_host_ns, 20000); /* the mean */
    assert_int_equal(profile.download_host_ns, 3100);      /* a median without a mean */
    /* a malformed attribute: the read and the profile fail, naming file and attribute */
    const char *bad[][2] = {{"host_loop_ns", "7000"}, {"host_process_per_finished_ns", "-3"}};
    write_table("host_fit_bad.h5", (const char *const(*)[2])bad, 2);
    assert_int_equal(rig_optable_read_host("host_fit_bad.h5", &host, error, sizeof error),
                     RIG_E_PARSE);
    assert_non_null(strstr(error, "host_fit_bad.h5: attribute host_process_per_finished_ns: '-3'"));
    assert_false(host.model_given[RIG_HOST_LOOP][RIG_HOST_BASE]); /* nothing returned */
    const char *bad_mean[][2] = {{"upload_host_mean_ns", "slow"}};
    write_table("host_fit_bad.h5", (const char *const(*)[2])bad_mean, 1);
    write_profile("host_fit_bad.yaml", "host_fit_bad.h5");
    assert_int_equal(rig_sim_profile_load("host_fit_bad.yaml", &profile, error, sizeof error),
                     RIG_E_PARSE);
    assert_non_null(strstr(error, "host_fit_bad.h5: attribute upload_host_mean_ns: 'slow'"));
    const char *names[] = {"host_fit_old.h5",   "host_fit_old.yaml", "host_fit_new.h5",
                           "host_fit_new.yaml", "host_fit_bad.h5",   "host_fit_bad.yaml"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(names[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_solve),
        cmocka_unit_test(test_calibration_gives_back_the_profile),
        cmocka_unit_test(test_table_attributes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
