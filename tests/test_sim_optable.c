/* test_sim_optable.c — the table-driven cost model (sim/optable.c) and `rig profile`'s sweep
 * (core/bench/profile.c) on the simulator.
 *
 * Checks: a point measured exactly is predicted as measured (scaled by the op's own roofline:
 * the same work gives the same time); between two GEMM rows the log ratio is interpolated
 * linearly in log M; an op far from every point of its kind is not predicted (the analytic
 * model takes it); a table that is not one is RIG_E_PARSE; the sweep of the analytic model
 * (quick grid), written and read back, reproduces the analytic cost of a swept GEMM within
 * 1 ns and predicts an unswept hidden size within 15 %; a profile naming the table costs ops
 * from it and counts ops outside it; ":analytic" ignores it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/harness/bench/profile.h"
#include "sim/cost.h"
#include "sim/optable.h"
#include "sim/profile.h"
#include "tests/support/test_support.h"
#include "tools/rig/commands.h"

static struct rig_sim_optable_point gemm_point(double m, double n, double k, double ns)
{
    struct rig_sim_optable_point p = {.key = {.kind = RIG_OP_GEMM, .p = {m, n, k, 2}}};
    p.flops = 2 * m * n * k;
    p.bytes = 2 * (m * k + n * k + m * n);
    p.cold_ns = p.cold_p10_ns = p.cold_p90_ns = p.warm_ns = ns;
    return p;
}

static void test_exact_interpolated_and_out_of_reach(void **state)
{
    (void)state;
    struct rig_sim_optable_point points[2] = {gemm_point(64, 4096, 4096, 10000),
                                              gemm_point(256, 4096, 4096, 20000)};
    const char *attrs[1][2] = {{"device", "unit"}};
    char error[256];
    assert_int_equal(rig_sim_optable_write("optable_unit.h5", points, 2,
                                           (const char *const(*)[2])attrs, 1, error,
                                           sizeof error),
                     RIG_OK);
    const struct rig_sim_optable *t = NULL;
    assert_int_equal(rig_sim_optable_get("optable_unit.h5", &t, error, sizeof error), RIG_OK);
    assert_int_equal(rig_sim_optable_count(t), 2);
    double peak = 1e15, bw = 3e12, ns = 0;
    struct rig_sim_optable_point q = gemm_point(64, 4096, 4096, 0);
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, &ns));
    assert_float_equal(ns, 10000, 1e-6);
    /* M = 128: halfway in log2(M + 1) between the two rows (nearly: +1 in the log) */
    q = gemm_point(128, 4096, 4096, 0);
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, &ns));
    double r64 = 10000e-9 / fmax(points[0].flops / peak, points[0].bytes / bw);
    double r256 = 20000e-9 / fmax(points[1].flops / peak, points[1].bytes / bw);
    double a = log2(129) - log2(65), b = log2(257) - log2(129);
    double ratio = exp((log(r64) / a + log(r256) / b) / (1 / a + 1 / b));
    assert_float_equal(ns, 1e9 * ratio * fmax(q.flops / peak, q.bytes / bw), 1e-6);
    q = gemm_point(64, 65536, 4096, 0); /* N 16 x off: out of reach */
    assert_false(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, &ns));
    struct rig_sim_op_key other = {.kind = RIG_OP_SILU_MUL, .p = {1, 1000}};
    assert_false(rig_sim_optable_predict(t, &other, 0, 1000, peak, bw, 0, &ns));
    FILE *f = fopen("optable_bad.h5", "w");
    fputs("not hdf5", f);
    fclose(f);
    assert_int_equal(rig_sim_optable_get("optable_bad.h5", &t, error, sizeof error), RIG_E_IO);
    assert_int_equal(rig_sim_optable_get("nonesuch", &t, error, sizeof error), RIG_E_NOT_FOUND);
    unlink("optable_bad.h5");
}

static struct rig_op gemm_op(int64_t m, int64_t n, int64_t k)
{
    static uint16_t dummy[1];
    struct rig_op op = {.kind = RIG_OP_GEMM};
    op.u.gemm.a = rig_tensor_2d(dummy, RIG_DTYPE_BF16, m, k);
    op.u.gemm.b = rig_tensor_2d(dummy, RIG_DTYPE_BF16, n, k);
    op.u.gemm.out = rig_tensor_2d(dummy, RIG_DTYPE_BF16, m, n);
    op.u.gemm.bias = rig_tensor_none();
    return op;
}

static void test_sweep_reproduces_the_analytic_model(void **state)
{
    (void)state;
    rig_backends_register();
    struct rig_profile_options o;
    rig_profile_options_default(&o);
    o.profile = "h100:analytic:pinned";
    o.quick = true;
    o.repeats = 3;
    struct rig_sim_optable_point *points = NULL;
    int64_t count = 0;
    char device[64], error[256];
    assert_int_equal(rig_profile_run(&o, &points, &count, device, sizeof device, error,
                                     sizeof error),
                     RIG_OK);
    assert_true(count > 50);
    assert_string_equal(device, "sim:h100");
    assert_int_equal(rig_sim_optable_write("optable_sweep.h5", points, count, NULL, 0, error,
                                           sizeof error),
                     RIG_OK);
    free(points);
    FILE *f = fopen("optable_profile.yaml", "w");
    struct rig_sim_profile analytic, tabled;
    assert_int_equal(rig_sim_profile_load("h100:analytic", &analytic, error, sizeof error),
                     RIG_OK);
    assert_null(analytic.table);
    FILE *in = fopen(RIG_SOURCE_DIR "/sim/profiles/h100.yaml", "r");
    char line[512];
    while (fgets(line, sizeof line, in) != NULL)
        if (strncmp(line, "op_table:", 9) != 0) fputs(line, f);
    fclose(in);
    fputs("op_table: optable_sweep.h5\n", f);
    fclose(f);
    assert_int_equal(rig_sim_profile_load("optable_profile.yaml:pinned", &tabled, error,
                                          sizeof error),
                     RIG_OK);
    assert_non_null(tabled.table);
    /* swept: qwen3-0.6b's qkv at M = 16 (eager adds the same launch term to both) */
    struct rig_op op = gemm_op(16, 4096, 1024);
    bool missed = true;
    int64_t a = rig_sim_cost_launch_ns(&analytic, &op, 1, false, NULL);
    int64_t t = rig_sim_cost_launch_ns(&tabled, &op, 1, false, &missed);
    assert_false(missed);
    assert_true(llabs(a - t) <= 1);
    /* not swept: a hidden size of 1536 (between 0.6B's 1024 and 8B's 4096) */
    op = gemm_op(16, 6144, 1536);
    a = rig_sim_cost_launch_ns(&analytic, &op, 1, false, NULL);
    t = rig_sim_cost_launch_ns(&tabled, &op, 1, false, &missed);
    assert_false(missed);
    assert_true(fabs((double)(t - a) / (double)a) < 0.15);
    op = gemm_op(16, 1 << 20, 64); /* far from every swept GEMM */
    (void)rig_sim_cost_launch_ns(&tabled, &op, 1, false, &missed);
    assert_true(missed);
    unlink("optable_sweep.h5");
    unlink("optable_profile.yaml");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_interpolated_and_out_of_reach),
        cmocka_unit_test(test_sweep_reproduces_the_analytic_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
