/* test_bench.c — `rig bench`'s drivers (core/harness/bench/) on the simulator, timing-only.
 *
 * Checks the helpers against hand-computed values (median, benchmark names, the prefill
 * FLOP formula, the idle fraction of synthetic step records), then runs every benchmark
 * at --quick sizes on the simulated H100 and checks what the cost model implies: the copy
 * floor is the profile's copy efficiency x HBM bandwidth, the GEMM rate stays under the
 * profile's peak, no step beats its floor, graphs are no slower than eager launches,
 * a cached prefix costs time, the ops of a decode step timed alone add up to the step,
 * overlap leaves less idle time than no overlap, and the same
 * options give the same report. Invalid inputs (no benchmark, unknown backend or model,
 * an unwritable output) fail with a status and a message, not a crash.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/harness/bench/bench.h"
#include "core/model/model.h"
#include "sim/profile.h"
#include "tests/support/test_support.h"
#include "hal/backends.h"

static struct rig_bench_report rig__report, rig__again;

static void rig__quick(struct rig_bench_options *o)
{
    rig_bench_options_default(o);
    o->quick = true;
    o->repeats = 3;
    o->profile = "h100:analytic:pinned"; /* asynchronous copies: overlap hides host work */
}

static void test_kind_parse(void **state)
{
    (void)state;
    assert_int_equal(rig_bench_kind_parse("decode"), RIG_BENCH_DECODE);
    assert_int_equal(rig_bench_kind_parse("online"), RIG_BENCH_ONLINE);
    assert_int_equal(rig_bench_kind_parse("all"), RIG_BENCH_ALL);
    assert_int_equal(rig_bench_kind_parse("Decode"), 0);
    assert_int_equal(rig_bench_kind_parse(""), 0);
    assert_int_equal(rig_bench_kind_parse(NULL), 0);
}

static void test_median(void **state)
{
    (void)state;
    double odd[] = {5.0, 1.0, 3.0};
    assert_true(rig_bench_median(odd, 3) == 3.0);
    double even[] = {4.0, 1.0, 3.0, 2.0};
    assert_true(rig_bench_median(even, 4) == 2.5);
    double one[] = {7.5};
    assert_true(rig_bench_median(one, 1) == 7.5);
}

static void test_prefill_flops(void **state)
{
    (void)state;
    struct rig_model_config c;
    assert_int_equal(rig_model_config_preset("qwen3-0.6b", &c), RIG_OK);
    double q = (double)c.num_heads * c.head_dim, kv = (double)c.num_kv_heads * c.head_dim;
    double h = c.hidden_size, linear = h * (q + 2 * kv) + q * h + 3.0 * c.intermediate_size * h;
    /* one token, no prefix: every linear weight twice, one attended pair, the LM head */
    double one = c.num_layers * (2.0 * linear + 4.0 * q) + 2.0 * h * c.vocab_size;
    assert_true(fabs(rig_bench_prefill_flops("qwen3-0.6b", 1, 0) - one) < 1e-6 * one);
    /* a prefix of P adds 4 q x chunk x P per layer and nothing else */
    double a = rig_bench_prefill_flops("qwen3-0.6b", 100, 0);
    double b = rig_bench_prefill_flops("qwen3-0.6b", 100, 50);
    assert_true(fabs((b - a) - c.num_layers * 4.0 * q * 100 * 50) < 1e-9 * b);
    assert_true(rig_bench_prefill_flops("no-such-model", 1, 0) < 0);
}

static void test_idle_fraction(void **state)
{
    (void)state;
    struct rig_results r;
    assert_int_equal(rig_results_init(&r, 1, 1, 8, 8), RIG_OK);
    assert_true(rig_bench_idle_fraction(&r) == 0.0); /* no steps */
    /* prefill 0-10, decode 12-20, decode 25-30 (5 idle), decode 29-40 (overlap: 0 idle) */
    const int64_t t[4][3] = {{RIG_STEP_PREFILL, 0, 10},
                             {RIG_STEP_DECODE, 12, 20},
                             {RIG_STEP_DECODE, 25, 30},
                             {RIG_STEP_DECODE, 29, 40}};
    for (int i = 0; i < 4; i++) {
        struct rig_results_step s = {
            .phase = (int32_t)t[i][0], .batch_size = 1, .start_ns = t[i][1], .end_ns = t[i][2]};
        assert_int_equal(rig_results_add_step(&r, &s, NULL, 0), RIG_OK);
    }
    /* pairs (1,2) and (2,3): idle 5 + 0 over span (30 - 20) + (40 - 30) */
    assert_true(fabs(rig_bench_idle_fraction(&r) - 5.0 / 20.0) < 1e-12);
    rig_results_free(&r);
}

static void test_floors_follow_profile(void **state)
{
    (void)state;
    struct rig_bench_options o;
    rig__quick(&o);
    char error[256] = "";
    memset(&rig__report, 0, sizeof rig__report);
    assert_int_equal(rig_bench_floors(&o, &rig__report, error, sizeof error), RIG_OK);
    struct rig_sim_profile p;
    assert_int_equal(rig_sim_profile_load("h100", &p, error, sizeof error), RIG_OK);
    const struct rig_bench_floors *f = &rig__report.floors;
    double copy = p.hbm_bytes_per_s * p.efficiency[RIG_SIM_OP_CLASS_COPY];
    assert_true(fabs(f->bandwidth - copy) < 0.01 * copy);
    assert_true(fabs(f->bandwidth - 2.0 * (double)f->copy_bytes / (f->copy_ns * 1e-9)) <
                1e-6 * f->bandwidth);
    assert_true(f->gemm_flops > 0.1 * p.peak_bf16_flops);
    assert_true(f->gemm_flops <= p.peak_bf16_flops * p.gemm_compute_efficiency);
    assert_true(rig__report.predicted);
    assert_string_equal(rig__report.backend, "sim");
    assert_int_equal(f->gemm_size, 1024);
}

static void test_steps_no_faster_than_floor(void **state)
{
    (void)state;
    struct rig_bench_options o;
    rig__quick(&o);
    char error[256] = "";
    memset(&rig__report, 0, sizeof rig__report);
    int32_t kinds = RIG_BENCH_DECODE | RIG_BENCH_PREFILL | RIG_BENCH_ATTENTION;
    assert_int_equal(rig_bench_run(&o, kinds, &rig__report, error, sizeof error), RIG_OK);
    assert_int_equal(rig__report.decode_count, 2);
    for (int32_t i = 0; i < rig__report.decode_count; i++) {
        const struct rig_bench_decode_row *d = &rig__report.decode[i];
        assert_true(d->graph_ns > 0 && d->graph_ns <= d->eager_ns);
        assert_true(d->ratio >= 1.0 && d->ratio < 10.0);
        assert_true(d->kv_bytes == (double)d->batch * d->context * 28 * 2 * 8 * 128 * 2);
    }
    assert_true(rig__report.decode[1].graph_ns >= rig__report.decode[0].graph_ns);
    assert_int_equal(rig__report.prefill_count, 4);
    for (int32_t i = 0; i < 4; i += 2) {
        const struct rig_bench_prefill_row *cold = &rig__report.prefill[i];
        assert_int_equal(cold[1].prefix, cold[0].chunk);
        assert_true(cold[1].ns > cold[0].ns && cold[1].flops > cold[0].flops);
        assert_true(cold[0].mfu > 0.0);
        /* The quick floor's 1024^3 GEMM fills an eighth of the simulated H100 (64 output
         * tiles) while the model's wider GEMMs at chunk 1024 fill most of it, so that floor
         * is not quite one: MFU passes 1 by a little there (1.04 since q/k norm, RoPE and
         * the K/V store are one op). At chunk 512 (0.76) the bound still holds. */
        double mfu_max = cold[0].chunk <= 512 ? 1.0 : 1.1;
        assert_true(cold[0].mfu <= mfu_max);
        assert_true(cold[0].ns * mfu_max >= cold[0].floor_ns);
    }
    assert_int_equal(rig__report.attention_count, 3);
    assert_string_equal(rig__report.attention[0].op, "decode");
    assert_string_equal(rig__report.attention[1].op, "decode");
    assert_string_equal(rig__report.attention[2].op, "prefill");
    /* quick shapes: 8 x 256, then fewer and longer rows, 2 x 1024 */
    assert_true(rig__report.attention[1].batch < rig__report.attention[0].batch);
    assert_true(rig__report.attention[1].context > rig__report.attention[0].context);
    for (int32_t i = 0; i < rig__report.attention_count; i++) {
        const struct rig_bench_attention_row *a = &rig__report.attention[i];
        assert_true(a->min_ns > 0 && a->min_ns <= a->ns && a->ns <= a->max_ns);
    }
    /* The quick prefill row is a 512-token chunk: 64 blocks of the H100 kernel (one per SM)
     * run it at ~0.09 of the quick 1024^3 GEMM rate (calibrated at da0dcf9, docs/simulator.md) */
    for (int32_t i = 0; i < rig__report.attention_count; i++)
        assert_true(rig__report.attention[i].ratio > 0.05 && rig__report.attention[i].ratio <= 1.0);
}

/* Every op of a decode step and of a prefill step timed alone: the rows are the model's own
 * ops (rig_model_forward_ops), 11 names for the decode step of 1 row (the fused layer, core/
 * model/model.c: five ops a layer, then a plain RMSNorm), 12 for that of 8 rows (decode
 * attention and its q/k norm + RoPE + store one op, attention_decode_store) and 13 for the
 * prefill of 512 tokens (the first layer's norm is a plain RMSNorm); the per-step shares sum
 * to 1, and on the simulator (where a graph's cost is the sum of its nodes) the ops of batch
 * 1 add up to the decode benchmark's graph step at the same shape; the prefill step issues
 * prefill attention in place of decode attention. */
static void test_ops_add_up_to_the_step(void **state)
{
    (void)state;
    struct rig_bench_options o;
    rig__quick(&o);
    char error[256] = "";
    int32_t kinds = RIG_BENCH_DECODE | RIG_BENCH_OPS;
    assert_int_equal(rig_bench_run(&o, kinds, &rig__report, error, sizeof error), RIG_OK);
    static const int32_t first[4] = {0, 10, 22, 35}; /* decode 1, decode 8, prefill 512 */
    assert_int_equal(rig__report.op_count, first[3]);
    double share[3] = {0.0, 0.0, 0.0}, step_ns = 0.0;
    int32_t attention = -1, attention_1 = -1, prefill_attention = -1, issued = 0;
    int32_t norm[3] = {-1, -1, -1};
    for (int32_t i = 0; i < rig__report.op_count; i++) {
        const struct rig_bench_op_row *p = &rig__report.ops[i];
        int32_t step = i < first[1] ? 0 : i < first[2] ? 1 : 2;
        assert_true(p->ns > 0.0 && p->count >= 1);
        assert_int_equal(p->batch, step == 1 ? 8 : 1);
        assert_int_equal(p->tokens, step == 2 ? 512 : p->batch);
        assert_int_equal(p->context, 512);
        share[step] += p->share;
        if (step == 0) step_ns += p->ns * p->count;
        if (step == 0) issued += p->count;
        if (step == 0 && strcmp(p->op, "attention_decode_store") == 0) attention_1 = i;
        if (step == 1 && strcmp(p->op, "attention_decode_store") == 0) attention = i;
        if (step == 2 && strcmp(p->op, "attention_prefill") == 0) prefill_attention = i;
        if (strcmp(p->op, "rms_norm") == 0) norm[step] = i;
    }
    for (int32_t k = 0; k < 3; k++)
        assert_true(fabs(share[k] - 1.0) < 1e-9);
    assert_int_equal(issued, 28 * 5 + 5); /* what rig_model_forward issues at TP 1, 1 row */
    assert_true(attention >= first[1] && rig__report.ops[attention].count == 28);
    assert_true(attention_1 >= 0 && rig__report.ops[attention_1].count == 28);
    assert_true(rig__report.ops[attention].ns > rig__report.ops[attention_1].ns);
    assert_true(prefill_attention >= first[2]);
    assert_int_equal(rig__report.ops[prefill_attention].count, 28);
    for (int32_t k = 0; k < 3; k++) { /* the final norm (decode), the first layer's (prefill) */
        assert_true(norm[k] >= first[k]);
        assert_int_equal(rig__report.ops[norm[k]].count, 1);
    }
    assert_int_equal(norm[2], first[2] + 1);
    const struct rig_bench_decode_row *d = &rig__report.decode[0];
    assert_true(d->batch == 1 && d->context == 512);
    assert_true(fabs(step_ns - d->graph_ns) < 0.01 * d->graph_ns);
}

static void test_serving_and_determinism(void **state)
{
    (void)state;
    struct rig_bench_options o;
    rig__quick(&o);
    char error[256] = "";
    int32_t kinds = RIG_BENCH_OFFLINE | RIG_BENCH_ONLINE;
    assert_int_equal(rig_bench_run(&o, kinds, &rig__report, error, sizeof error), RIG_OK);
    assert_int_equal(rig__report.serving_count, 3);
    const struct rig_bench_serving_row *on = &rig__report.serving[0];
    const struct rig_bench_serving_row *off = &rig__report.serving[1];
    assert_string_equal(on->name, "offline");
    assert_string_equal(off->name, "offline-no-overlap");
    assert_true(on->overlap && !off->overlap);
    assert_true(on->metrics.completed == 16 && off->metrics.completed == 16);
    assert_true(on->metrics.total_output == off->metrics.total_output);
    assert_true(on->idle_fraction < off->idle_fraction);
    assert_true(on->floor_ratio > 0.0 && on->floor_ratio <= 1.0);
    assert_true(on->decode_steps > 0 && on->decode_steps < on->steps);
    assert_true(rig__report.serving[2].rate == 16.0 && rig__report.serving[2].floor_s == 0.0);
    assert_string_equal(on->path, ""); /* no out_dir: no files */
    assert_int_equal(rig_bench_run(&o, kinds, &rig__again, error, sizeof error), RIG_OK);
    assert_memory_equal(&rig__report, &rig__again, sizeof rig__report);
}

static void test_invalid_inputs(void **state)
{
    (void)state;
    struct rig_bench_options o;
    rig__quick(&o);
    char error[256] = "";
    assert_int_equal(rig_bench_run(&o, 0, &rig__report, error, sizeof error), RIG_E_INVALID);
    assert_string_equal(error, "no benchmark selected");
    o.backend = "tpu";
    assert_true(rig_bench_run(&o, RIG_BENCH_FLOORS, &rig__report, error, sizeof error) < 0);
    assert_non_null(strstr(error, "tpu"));
    rig__quick(&o);
    o.model = "no-such-model";
    error[0] = '\0';
    assert_int_equal(rig_bench_run(&o, RIG_BENCH_DECODE, &rig__report, error, sizeof error),
                     RIG_E_NOT_FOUND);
    assert_non_null(strstr(error, "no-such-model"));
    assert_true(rig__report.have_floors && rig__report.decode_count == 0);
}

static void test_write_h5(void **state)
{
    (void)state;
    struct rig_bench_options o;
    rig__quick(&o);
    char error[256] = "", path[64];
    assert_int_equal(rig_bench_run(&o, RIG_BENCH_DECODE, &rig__report, error, sizeof error),
                     RIG_OK);
    snprintf(path, sizeof path, "test_bench_%ld.h5", (long)getpid());
    assert_int_equal(rig_bench_write_h5(&rig__report, path, error, sizeof error), RIG_OK);
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    fseek(file, 0, SEEK_END);
    assert_true(ftell(file) > 1000);
    fclose(file);
    remove(path);
    assert_int_equal(rig_bench_write_h5(&rig__report, "/nonexistent-dir/x.h5", error, sizeof error),
                     RIG_E_IO);
    assert_non_null(strstr(error, "/nonexistent-dir/x.h5"));
}

int main(void)
{
    rig_backends_register();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kind_parse),
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_prefill_flops),
        cmocka_unit_test(test_idle_fraction),
        cmocka_unit_test(test_floors_follow_profile),
        cmocka_unit_test(test_steps_no_faster_than_floor),
        cmocka_unit_test(test_ops_add_up_to_the_step),
        cmocka_unit_test(test_serving_and_determinism),
        cmocka_unit_test(test_invalid_inputs),
        cmocka_unit_test(test_write_h5),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
