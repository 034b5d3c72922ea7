/* test_sim_optable.c — op tables: the shared key, work and file (hal/optable.c), the
 * table-driven cost model (sim/optable.c) and `rig profile`'s sweep
 * (core/harness/bench/profile.c) on the simulator.
 *
 * Checks: the key and work of a GEMM, a decode attention (lengths read from its tensor) and
 * a row-wise op, and that the cost model's work is the same; keys compare by value (not
 * their padding), and the sweep times each shape once; a table written and read back
 * keeps its points in file order; a missing file, a file that is not HDF5, one without
 * points and an unknown built-in name fail with their statuses; the built-in h100 table
 * reads, and the h200 profile loads its own (4,120 points); a point measured exactly is
 * predicted as measured (scaled by the op's own roofline:
 * the same work gives the same time); between two GEMM rows the log ratio is interpolated
 * linearly in log M; an op far from every point of its kind is not predicted (the analytic
 * model takes it); a table that is not one is RIG_E_PARSE; the sweep of the analytic model
 * (quick grid), written and read back, reproduces the analytic cost of a swept GEMM (plain and
 * of each fused form the model issues, swept up to 16 rows) within 1 ns and predicts an
 * unswept hidden size within 15 %, and records the simulator's host
 * time of an eager issue; a profile naming the table costs ops from it and counts ops
 * outside it; ":analytic" ignores it. Host time: a table's host columns round-trip, a table
 * written without them reads them as 0; the host time of an eager issue is the
 * measured one at a point, blended between points, and the profile's
 * kernel_launch_host_ns without a table, out of its reach or without host times. A point's
 * node time is cold^(1 - w) warm^w; a small-batch-kernel GEMM is blended from its kernel's
 * points with cuBLAS's held 4 apart; a ragged decode batch matches the ragged point by its
 * max KV length; decode attention scales between head shapes by bytes at the bandwidth plus
 * FLOPs at the table's own decode rate on the register path, by bytes alone on the
 * tensor-core kernel (rig_decode_tensor_cores decides which, for the profile's SM count), and
 * the two kernels' points are held apart. Decode attention on the sweep's grid: the h200
 * table's unshared points of Qwen3-0.6B's heads reproduced, a uniform batch's time monotone
 * in its context at and between swept request counts, halfway between two points at the
 * halfway length; on a small grid, bilinear between rows and lengths, the end segments'
 * lines held between flat and proportional, a ragged key linear in its mean. The sampler's
 * rows are greedy, whole-vocabulary or cut-off, each kind costed from its own points, a mixed
 * batch as their row-weighted mean, and from whole-vocabulary points where a table has no
 * others. A GEMM's fused forms: their key
 * (depth, prologue, accumulate) and work; every fused GEMM of up to 16 rows is the small-batch
 * kernel's; a form is costed from its own points (others held 4 apart), from its plain shape's
 * in a table without that form (the committed h200 table: no miss, the plain node scaled by
 * the fused work), and a file with an unknown form does not parse.
 */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/harness/bench/profile.h"
#include "hal/optable.h"
#include "sim/cost.h"
#include "sim/optable.h"
#include "sim/profile.h"
#include "tests/support/test_support.h"
#include "tools/rig/commands.h"

static struct rig_optable_point gemm_point(double m, double n, double k, double ns)
{
    struct rig_optable_point p = {.key = {.kind = RIG_OP_GEMM, .p = {m, n, k, 2}}};
    p.flops = 2 * m * n * k;
    p.bytes = 2 * (m * k + n * k + m * n);
    p.cold_ns = p.cold_p10_ns = p.cold_p90_ns = p.warm_ns = ns;
    return p;
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

/* gemm_op of a fused form (hal/ops.h): a [m, 2k] with SILU_MUL, the operand [m, k], the norm
 * weight [k] with RMS_NORM. */
static struct rig_op fused_gemm_op(int64_t m, int64_t n, int64_t k,
                                   enum rig_gemm_prologue prologue, bool accumulate)
{
    static uint16_t dummy[1];
    struct rig_op op = gemm_op(m, n, k);
    struct rig_op_gemm *g = &op.u.gemm;
    g->prologue = prologue;
    g->accumulate = accumulate;
    if (prologue == RIG_GEMM_PROLOGUE_SILU_MUL) g->a.shape[1] = 2 * k;
    if (prologue != RIG_GEMM_PROLOGUE_NONE)
        g->operand = rig_tensor_2d(dummy, RIG_DTYPE_BF16, m, k);
    if (prologue == RIG_GEMM_PROLOGUE_RMS_NORM) {
        g->norm_weight = rig_tensor_1d(dummy, RIG_DTYPE_BF16, k);
        g->eps = 1e-6f;
    }
    return op;
}

/* A table point of `op`'s key and work, timed `ns`. */
static struct rig_optable_point op_point(struct rig_op op, double ns)
{
    struct rig_op_work work = rig_optable_op_work(&op);
    struct rig_optable_point p = {
        .key = rig_optable_op_key(&op), .flops = work.flops, .bytes = work.bytes};
    p.cold_ns = p.cold_p10_ns = p.cold_p90_ns = p.warm_ns = ns;
    return p;
}

static void assert_same_work(const struct rig_op *op, double flops, double bytes)
{
    struct rig_op_work work = rig_optable_op_work(op);
    assert_float_equal(work.flops, flops, 0);
    assert_float_equal(work.bytes, bytes, 0);
    struct rig_sim_work sim = rig_sim_cost_work(op);
    assert_float_equal(sim.flops, flops, 0);
    assert_float_equal(sim.bytes, bytes, 0);
}

static void test_key_and_work(void **state)
{
    (void)state;
    struct rig_op op = gemm_op(16, 4096, 1024);
    struct rig_optable_key key = rig_optable_op_key(&op);
    assert_int_equal(key.kind, RIG_OP_GEMM);
    const double gemm_p[RIG_OPTABLE_PARAMS] = {16, 4096, 1024, 2, 0, 0};
    for (int32_t i = 0; i < RIG_OPTABLE_PARAMS; i++) assert_float_equal(key.p[i], gemm_p[i], 0);
    assert_same_work(&op, 2.0 * 16 * 4096 * 1024, 2.0 * (16 * 1024 + 4096 * 1024 + 16 * 4096));

    /* fused forms: K is the product's depth (half of a's width with SILU_MUL), p[4] the
     * prologue, p[5] accumulate; the work adds the norm's or silu's FLOPs and the operand's,
     * the norm weight's and the accumulated out's bytes */
    op = fused_gemm_op(16, 4096, 1024, RIG_GEMM_PROLOGUE_RMS_NORM, false);
    key = rig_optable_op_key(&op);
    const double norm_p[RIG_OPTABLE_PARAMS] = {16, 4096, 1024, 2, 1, 0};
    for (int32_t i = 0; i < RIG_OPTABLE_PARAMS; i++) assert_float_equal(key.p[i], norm_p[i], 0);
    assert_same_work(&op, 2.0 * 16 * 4096 * 1024 + 4.0 * 16 * 1024,
                     2.0 * (16 * 1024 + 4096 * 1024 + 16 * 4096 + 16 * 1024 + 1024));
    op = fused_gemm_op(8, 1024, 3072, RIG_GEMM_PROLOGUE_SILU_MUL, true);
    key = rig_optable_op_key(&op);
    const double silu_p[RIG_OPTABLE_PARAMS] = {8, 1024, 3072, 2, 2, 1};
    for (int32_t i = 0; i < RIG_OPTABLE_PARAMS; i++) assert_float_equal(key.p[i], silu_p[i], 0);
    assert_same_work(&op, 2.0 * 8 * 1024 * 3072 + 6.0 * 8 * 3072 + 8.0 * 1024,
                     2.0 * (8 * 6144 + 1024 * 3072 + 2 * 8 * 1024 + 8 * 3072));

    /* decode: 2 requests of 100 and 300 positions, Hq 16, Hk 8, D 128, rows of their own */
    static uint16_t dummy[1];
    static int32_t table[2][512];
    for (int32_t r = 0; r < 2; r++)
        for (int32_t i = 0; i < 512; i++) table[r][i] = r * 512 + i;
    int32_t kv_len[2] = {100, 300}, idx[2] = {0, 1};
    struct rig_op_attention_decode *a = &op.u.attention_decode;
    op = (struct rig_op){.kind = RIG_OP_ATTENTION_DECODE};
    a->out = rig_tensor_3d(dummy, RIG_DTYPE_BF16, 2, 16, 128);
    a->q = rig_tensor_3d(dummy, RIG_DTYPE_BF16, 2, 16, 128);
    a->k_cache = a->v_cache = rig_tensor_3d(dummy, RIG_DTYPE_BF16, 1024, 8, 128);
    a->page_table = rig_tensor_2d(table, RIG_DTYPE_I32, 2, 512);
    a->table_idx = rig_tensor_1d(idx, RIG_DTYPE_I32, 2);
    a->kv_len = rig_tensor_1d(kv_len, RIG_DTYPE_I32, 2);
    key = rig_optable_op_key(&op);
    const double decode_p[RIG_OPTABLE_PARAMS] = {2, 200, 300, 16, 8, 128};
    for (int32_t i = 0; i < RIG_OPTABLE_PARAMS; i++) assert_float_equal(key.p[i], decode_p[i], 0);
    assert_same_work(&op, 4.0 * 400 * 16 * 128,
                     2.0 * (2 * 16 * 128 * 2) + 400 * (2.0 * 8 * 128 * 2 + 4));
    /* the second request's first 80 positions are the first's (a shared prefix): the key's
     * mean and the K/V bytes count them once (320 distinct of 400), the page-table reads and
     * the FLOPs all 400 */
    for (int32_t i = 0; i < 80; i++) table[1][i] = table[0][i];
    key = rig_optable_op_key(&op);
    const double shared_p[RIG_OPTABLE_PARAMS] = {2, 160, 300, 16, 8, 128};
    for (int32_t i = 0; i < RIG_OPTABLE_PARAMS; i++) assert_float_equal(key.p[i], shared_p[i], 0);
    assert_same_work(&op, 4.0 * 400 * 16 * 128,
                     2.0 * (2 * 16 * 128 * 2) + 320 * (2.0 * 8 * 128 * 2) + 400 * 4.0);
    /* both rows the same (padding rows share one dummy row): the longer one's positions */
    idx[1] = 0, kv_len[1] = 100;
    key = rig_optable_op_key(&op);
    assert_float_equal(key.p[1], 50, 0);

    /* a row-wise op: its rows and the bytes it moves */
    op = (struct rig_op){.kind = RIG_OP_SILU_MUL};
    op.u.silu_mul.out = rig_tensor_2d(dummy, RIG_DTYPE_BF16, 64, 3072);
    op.u.silu_mul.in = rig_tensor_2d(dummy, RIG_DTYPE_BF16, 64, 6144);
    key = rig_optable_op_key(&op);
    assert_int_equal(key.kind, RIG_OP_SILU_MUL);
    assert_float_equal(key.p[0], 64, 0);
    assert_float_equal(key.p[1], 3.0 * 64 * 3072 * 2, 0);
    assert_same_work(&op, 6.0 * 64 * 3072, 3.0 * 64 * 3072 * 2);

    /* equality is by value: whatever the padding after `kind` holds */
    struct rig_optable_key dirty;
    memset(&dirty, 0xab, sizeof dirty);
    dirty.kind = key.kind;
    memcpy(dirty.p, key.p, sizeof key.p);
    assert_true(rig_optable_key_equal(&dirty, &key));
    dirty.p[5] = 1;
    assert_false(rig_optable_key_equal(&dirty, &key));
}

static void test_file_read_back_and_errors(void **state)
{
    (void)state;
    struct rig_optable_point written[2] = {gemm_point(64, 4096, 4096, 10000),
                                           gemm_point(16, 1024, 1024, 3000)};
    written[1].key.kind = RIG_OP_COPY; /* after the GEMM in file order, before it by kind */
    char error[256];
    assert_int_equal(rig_optable_write("optable_file.h5", written, 2, NULL, 0, error,
                                       sizeof error),
                     RIG_OK);
    struct rig_optable_point *points = NULL;
    int64_t count = 0;
    assert_int_equal(rig_optable_read("optable_file.h5", &points, &count, error, sizeof error),
                     RIG_OK);
    assert_int_equal(count, 2);
    for (int64_t i = 0; i < 2; i++) {
        assert_int_equal(points[i].key.kind, written[i].key.kind);
        assert_memory_equal(points[i].key.p, written[i].key.p, sizeof written[i].key.p);
        assert_float_equal(points[i].flops, written[i].flops, 0);
        assert_float_equal(points[i].warm_ns, written[i].warm_ns, 0);
    }
    free(points);
    points = NULL;
    assert_int_equal(rig_optable_write("optable_empty.h5", written, 0, NULL, 0, error,
                                       sizeof error),
                     RIG_OK);
    assert_int_equal(rig_optable_read("optable_empty.h5", &points, &count, error, sizeof error),
                     RIG_E_PARSE);
    assert_non_null(strstr(error, "not an op table"));
    assert_int_equal(rig_optable_read("./nonesuch.h5", &points, &count, error, sizeof error),
                     RIG_E_IO);
    assert_int_equal(rig_optable_read("nonesuch", &points, &count, error, sizeof error),
                     RIG_E_NOT_FOUND);
    assert_null(points);
    assert_int_equal(rig_optable_read("h100", &points, &count, error, sizeof error), RIG_OK);
    assert_true(count > 1000);
    free(points);
    unlink("optable_file.h5");
    unlink("optable_empty.h5");
}

static void test_exact_interpolated_and_out_of_reach(void **state)
{
    (void)state;
    struct rig_optable_point points[2] = {gemm_point(64, 4096, 4096, 10000),
                                          gemm_point(256, 4096, 4096, 20000)};
    const char *attrs[1][2] = {{"device", "unit"}};
    char error[256];
    assert_int_equal(rig_optable_write("optable_unit.h5", points, 2,
                                       (const char *const(*)[2])attrs, 1, error, sizeof error),
                     RIG_OK);
    const struct rig_sim_optable *t = NULL;
    assert_int_equal(rig_sim_optable_get("optable_unit.h5", 0, &t, error, sizeof error), RIG_OK);
    assert_int_equal(rig_sim_optable_count(t), 2);
    double peak = 1e15, bw = 3e12, ns = 0;
    struct rig_optable_point q = gemm_point(64, 4096, 4096, 0);
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 0.5, &ns, NULL));
    assert_float_equal(ns, 10000, 1e-6);
    /* M = 128: halfway in log2(M + 1) between the two rows (nearly: +1 in the log) */
    q = gemm_point(128, 4096, 4096, 0);
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 0.5, &ns, NULL));
    double r64 = 10000e-9 / fmax(points[0].flops / peak, points[0].bytes / bw);
    double r256 = 20000e-9 / fmax(points[1].flops / peak, points[1].bytes / bw);
    double a = log2(129) - log2(65), b = log2(257) - log2(129);
    double ratio = exp((log(r64) / a + log(r256) / b) / (1 / a + 1 / b));
    assert_float_equal(ns, 1e9 * ratio * fmax(q.flops / peak, q.bytes / bw), 1e-6);
    q = gemm_point(64, 65536, 4096, 0); /* N 16 x off: out of reach */
    assert_false(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 0.5, &ns, NULL));
    struct rig_optable_key other = {.kind = RIG_OP_SILU_MUL, .p = {1, 1000}};
    assert_false(rig_sim_optable_predict(t, &other, 0, 1000, peak, bw, 0, 0.5, &ns, NULL));
    FILE *f = fopen("optable_bad.h5", "w");
    fputs("not hdf5", f);
    fclose(f);
    assert_int_equal(rig_sim_optable_get("optable_bad.h5", 0, &t, error, sizeof error), RIG_E_IO);
    assert_int_equal(rig_sim_optable_get("nonesuch", 0, &t, error, sizeof error), RIG_E_NOT_FOUND);
    unlink("optable_bad.h5");
}

/* A table as written before the host_ns column: the same rows without it. */
static void write_table_without_host(const char *path, const struct rig_optable_point *points,
                                     hsize_t count)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct rig_optable_point));
    hid_t params = H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, (hsize_t[]){RIG_OPTABLE_PARAMS});
    H5Tinsert(t, "kind", HOFFSET(struct rig_optable_point, key.kind), H5T_NATIVE_INT32);
    H5Tinsert(t, "p", HOFFSET(struct rig_optable_point, key.p), params);
    H5Tinsert(t, "flops", HOFFSET(struct rig_optable_point, flops), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "bytes", HOFFSET(struct rig_optable_point, bytes), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "cold_ns", HOFFSET(struct rig_optable_point, cold_ns), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "cold_p10_ns", HOFFSET(struct rig_optable_point, cold_p10_ns),
              H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "cold_p90_ns", HOFFSET(struct rig_optable_point, cold_p90_ns),
              H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "warm_ns", HOFFSET(struct rig_optable_point, warm_ns), H5T_NATIVE_DOUBLE);
    hid_t packed = H5Tcopy(t); /* stored packed, as rig_optable_write stores rows */
    H5Tpack(packed);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t space = H5Screate_simple(1, &count, NULL);
    hid_t set = H5Dcreate2(file, "points", packed, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(set >= 0 && H5Dwrite(set, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, points) >= 0);
    H5Dclose(set), H5Sclose(space), H5Fclose(file);
    H5Tclose(packed), H5Tclose(params), H5Tclose(t);
}

static void test_host_time(void **state)
{
    (void)state;
    struct rig_optable_point points[2] = {gemm_point(64, 4096, 4096, 10000),
                                          gemm_point(256, 4096, 4096, 20000)};
    points[0].host_ns = 8000;
    points[1].host_ns = 32000;
    points[1].first_host_ns = 900000;
    char error[256];
    assert_int_equal(rig_optable_write("optable_host.h5", points, 2, NULL, 0, error,
                                       sizeof error),
                     RIG_OK);
    write_table_without_host("optable_old.h5", points, 2);
    struct rig_optable_point *read = NULL;
    int64_t count = 0;
    assert_int_equal(rig_optable_read("optable_host.h5", &read, &count, error, sizeof error),
                     RIG_OK);
    assert_float_equal(read[1].host_ns, 32000, 0);
    assert_float_equal(read[1].first_host_ns, 900000, 0);
    free(read);
    assert_int_equal(rig_optable_read("optable_old.h5", &read, &count, error, sizeof error),
                     RIG_OK);
    assert_int_equal(count, 2);
    assert_float_equal(read[0].warm_ns, 10000, 0);
    assert_float_equal(read[1].host_ns, 0, 0); /* not measured */
    assert_float_equal(read[1].first_host_ns, 0, 0);
    free(read);
    /* the host calls' times: absent in both files (0); a malformed one is named */
    struct rig_optable_host calls;
    assert_int_equal(rig_optable_read_host("optable_old.h5", &calls, error, sizeof error), RIG_OK);
    for (int32_t k = 0; k < RIG_OPTABLE_HOST_CALLS; k++) assert_float_equal(calls.ns[k], 0, 0);
    const char *bad[2][2] = {{"event_record_host_ns", "1150"}, {"upload_host_ns", "fast"}};
    assert_int_equal(rig_optable_write("optable_bad_host.h5", points, 2,
                                       (const char *const(*)[2])bad, 2, error, sizeof error),
                     RIG_OK);
    assert_int_equal(rig_optable_read_host("optable_bad_host.h5", &calls, error, sizeof error),
                     RIG_E_PARSE);
    assert_non_null(strstr(error, "optable_bad_host.h5: attribute upload_host_ns: 'fast'"));
    const struct rig_sim_optable *bad_table = NULL;
    assert_int_equal(rig_sim_optable_get("optable_bad_host.h5", 0, &bad_table, error,
                                         sizeof error),
                     RIG_E_PARSE);
    assert_null(bad_table);
    bad[1][1] = "2100";
    assert_int_equal(rig_optable_write("optable_bad_host.h5", points, 2,
                                       (const char *const(*)[2])bad, 2, error, sizeof error),
                     RIG_OK);
    assert_int_equal(rig_optable_read_host("optable_bad_host.h5", &calls, error, sizeof error),
                     RIG_OK);
    assert_float_equal(calls.ns[RIG_OPTABLE_HOST_UPLOAD], 2100, 0);
    assert_float_equal(calls.ns[RIG_OPTABLE_HOST_EVENT_RECORD], 1150, 0);
    assert_float_equal(calls.ns[RIG_OPTABLE_HOST_GRAPH_LAUNCH], 0, 0);
    unlink("optable_bad_host.h5");
    const struct rig_sim_optable *with = NULL, *without = NULL;
    assert_int_equal(rig_sim_optable_get("optable_host.h5", 0, &with, error, sizeof error), RIG_OK);
    assert_int_equal(rig_sim_optable_get("optable_old.h5", 0, &without, error, sizeof error),
                     RIG_OK);
    double ns = 0, host = -1;
    struct rig_optable_point q = gemm_point(64, 4096, 4096, 0);
    assert_true(rig_sim_optable_predict(with, &q.key, q.flops, q.bytes, 1e15, 3e12, 0, 0.5, &ns, &host));
    assert_float_equal(host, 8000, 0); /* measured here */
    q = gemm_point(128, 4096, 4096, 0); /* between: the geometric mean, weighted */
    assert_true(rig_sim_optable_predict(with, &q.key, q.flops, q.bytes, 1e15, 3e12, 0, 0.5, &ns, &host));
    double a = log2(129) - log2(65), b = log2(257) - log2(129);
    assert_float_equal(host, exp((log(8000) / a + log(32000) / b) / (1 / a + 1 / b)), 1e-6);
    /* the simulator charges an eager issue the table's host time, or the profile's */
    struct rig_sim_profile profile;
    assert_int_equal(rig_sim_profile_load("h200", &profile, error, sizeof error), RIG_OK);
    assert_float_equal(profile.op_table_warm_weight, 0.55, 0); /* sim/profiles/h200.yaml */
    assert_non_null(profile.table); /* the built-in sim/profiles/h200.h5 */
    /* the sampler's three kinds (5,768 points), and since the sixth session fused GEMMs */
    assert_true(rig_sim_optable_count(profile.table) >= 5768);
    FILE *f = fopen("optable_noweight.yaml", "w"); /* h200.yaml without the optional key */
    FILE *in = fopen(RIG_SOURCE_DIR "/sim/profiles/h200.yaml", "r");
    char line[512];
    while (fgets(line, sizeof line, in) != NULL)
        if (strncmp(line, "op_table_warm_weight:", 21) != 0) fputs(line, f);
    fclose(in);
    fclose(f);
    assert_int_equal(rig_sim_profile_load("optable_noweight.yaml", &profile, error, sizeof error),
                     RIG_OK);
    assert_float_equal(profile.op_table_warm_weight, 0.5, 0); /* the optional key's default */
    unlink("optable_noweight.yaml");
    assert_int_equal(rig_sim_profile_load("h100:analytic", &profile, error, sizeof error),
                     RIG_OK);
    assert_float_equal(profile.op_table_warm_weight, 0.75, 0); /* sim/profiles/h100.yaml */
    struct rig_op op = gemm_op(64, 4096, 4096);
    assert_int_equal(rig_sim_cost_issue_host_ns(&profile, &op), profile.kernel_launch_host_ns);
    profile.table = with;
    assert_int_equal(rig_sim_cost_issue_host_ns(&profile, &op), 8000);
    op = gemm_op(64, 1 << 20, 64); /* out of the table's reach */
    assert_int_equal(rig_sim_cost_issue_host_ns(&profile, &op), profile.kernel_launch_host_ns);
    profile.table = without;
    op = gemm_op(64, 4096, 4096);
    assert_int_equal(rig_sim_cost_issue_host_ns(&profile, &op), profile.kernel_launch_host_ns);
    unlink("optable_host.h5");
    unlink("optable_old.h5");
}

/* Which small-batch GEMMs ask for their weights before their PDL wait (cuda/ops/gemv.cu's
 * launch geometry on 132 SMs), and that the h200 profile's node time weighs only those by
 * op_table_warm_weight_early. */
static void test_gemm_early_weights(void **state)
{
    (void)state;
    /* the persistent form, one batch a run: Qwen3-8B's qkv, o and gate_up up to 8 rows */
    assert_true(rig_sim_gemm_early_weights(1, 6144, 4096, false, 132));
    assert_true(rig_sim_gemm_early_weights(8, 24576, 4096, false, 132));
    /* several batches a run: up to 2 rows, 2 tiles a block (Qwen3-8B's down: 512 tiles) */
    assert_true(rig_sim_gemm_early_weights(2, 4096, 12288, false, 132));
    assert_false(rig_sim_gemm_early_weights(3, 4096, 12288, false, 132)); /* per-tile, 4 waves */
    assert_false(rig_sim_gemm_early_weights(1, 2048, 8192, false, 132)); /* Llama's down: 256 */
    /* a per-tile grid of one wave: Qwen3-0.6B's o (128 blocks x 16 warps), also at 16 rows */
    assert_true(rig_sim_gemm_early_weights(1, 1024, 2048, false, 132));
    assert_true(rig_sim_gemm_early_weights(16, 1024, 2048, false, 132));
    assert_false(rig_sim_gemm_early_weights(1, 151936, 1024, false, 132)); /* LM head: 18,992 */
    assert_false(rig_sim_gemm_early_weights(17, 1024, 2048, false, 132)); /* cuBLAS */
    assert_false(rig_sim_gemm_early_weights(1, 4096, 1024, false, 132));  /* cuBLAS: short K */
    assert_false(rig_sim_gemm_early_weights(1, 6144, 4096, false, 0));    /* SMs unknown */

    char error[256];
    struct rig_sim_profile profile;
    assert_int_equal(rig_sim_profile_load("h200", &profile, error, sizeof error), RIG_OK);
    assert_float_equal(profile.op_table_warm_weight_early, 1.0, 0); /* sim/profiles/h200.yaml */
    struct rig_sim_profile base = profile;
    base.op_table_warm_weight_early = base.op_table_warm_weight;
    struct rig_op early = gemm_op(1, 4096, 4096), late = gemm_op(3, 4096, 12288);
    assert_true(rig_sim_cost_node_ns(&profile, &early, 1) < rig_sim_cost_node_ns(&base, &early, 1));
    assert_int_equal(rig_sim_cost_node_ns(&profile, &late, 1), rig_sim_cost_node_ns(&base, &late, 1));
    /* not given: op_table_warm_weight (sim/profiles/h100.yaml has neither it nor multiprocessors) */
    assert_int_equal(rig_sim_profile_load("h100", &profile, error, sizeof error), RIG_OK);
    assert_float_equal(profile.op_table_warm_weight_early, profile.op_table_warm_weight, 0);
}

/* A decode attention op of `rows` (<= 128) requests of `len` (<= 1024) positions each, rows of
 * their own, Qwen3-0.6B's heads (16 / 8, D 128); its tensors are static (one op at a time). */
static struct rig_op decode_op(int64_t rows, int32_t len)
{
    static uint16_t dummy[1];
    static int32_t table[128 * 1024], kv_len[128], idx[128];
    assert_true(rows >= 1 && rows <= 128 && len >= 1 && len <= 1024);
    for (int64_t r = 0; r < rows; r++) {
        kv_len[r] = len, idx[r] = (int32_t)r;
        for (int32_t i = 0; i < len; i++) table[r * len + i] = (int32_t)(r * len + i);
    }
    struct rig_op op = {.kind = RIG_OP_ATTENTION_DECODE};
    struct rig_op_attention_decode *a = &op.u.attention_decode;
    a->out = rig_tensor_3d(dummy, RIG_DTYPE_BF16, rows, 16, 128);
    a->q = rig_tensor_3d(dummy, RIG_DTYPE_BF16, rows, 16, 128);
    a->k_cache = a->v_cache = rig_tensor_3d(dummy, RIG_DTYPE_BF16, rows * len, 8, 128);
    a->page_table = rig_tensor_2d(table, RIG_DTYPE_I32, rows, len);
    a->table_idx = rig_tensor_1d(idx, RIG_DTYPE_I32, rows);
    a->kv_len = rig_tensor_1d(kv_len, RIG_DTYPE_I32, rows);
    a->scale = 1.0f;
    return op;
}

/* Decode attention that asks for its first keys before the PDL wait (rig_sim_decode_early):
 * the register path's one-wave grids take op_table_warm_weight_early, the tensor-core kernel
 * and bigger batches the plain weight; nothing without the SM count (h100.yaml). */
static void test_decode_early_keys(void **state)
{
    (void)state;
    struct rig_optable_key key = {.kind = RIG_OP_ATTENTION_DECODE, .p = {1, 512, 512, 16, 8, 128}};
    assert_true(rig_sim_decode_early(&key, 132));          /* Qwen3-0.6B, one request */
    key.p[0] = 66;                                          /* 528 items: 4 an SM */
    assert_true(rig_sim_decode_early(&key, 132));
    key.p[0] = 67;
    assert_false(rig_sim_decode_early(&key, 132));
    key.p[0] = 1;
    assert_false(rig_sim_decode_early(&key, 0));            /* SMs unknown */
    struct rig_optable_key wide = {.kind = RIG_OP_ATTENTION_DECODE, .p = {5, 512, 512, 32, 8, 128}};
    assert_true(rig_sim_decode_early(&wide, 132));          /* 40 items: register path */
    wide.p[0] = 6;                                          /* 48 >= 132 / 3: tensor cores */
    assert_false(rig_sim_decode_early(&wide, 132));
    struct rig_optable_key gemm = {.kind = RIG_OP_GEMM, .p = {1, 4096, 4096, 2, 0, 0}};
    assert_false(rig_sim_decode_early(&gemm, 132));

    char error[256];
    struct rig_sim_profile profile;
    assert_int_equal(rig_sim_profile_load("h200", &profile, error, sizeof error), RIG_OK);
    struct rig_sim_profile base = profile;
    base.op_table_warm_weight_early = base.op_table_warm_weight;
    struct rig_op op = decode_op(1, 1024);
    assert_true(rig_sim_cost_node_ns(&profile, &op, 1) < rig_sim_cost_node_ns(&base, &op, 1));
    op = decode_op(128, 512); /* 1,024 items: several waves */
    assert_int_equal(rig_sim_cost_node_ns(&profile, &op, 1), rig_sim_cost_node_ns(&base, &op, 1));
}

/* A decode attention point: R requests, mean and max KV, Qwen3-0.6B's heads. */
static struct rig_optable_point decode_point(double r, double mean, double most, double ns)
{
    struct rig_optable_point p = {.key = {.kind = RIG_OP_ATTENTION_DECODE,
                                          .p = {r, mean, most, 16, 8, 128}}};
    p.bytes = r * mean * 4096;
    p.cold_ns = p.cold_p10_ns = p.cold_p90_ns = p.warm_ns = ns;
    return p;
}

/* Writes `count` points to `path` and loads them as a table (asserting both succeed). */
static const struct rig_sim_optable *table_of(const char *path,
                                              const struct rig_optable_point *points,
                                              int64_t count)
{
    char error[256];
    assert_int_equal(rig_optable_write(path, points, count, NULL, 0, error, sizeof error), RIG_OK);
    const struct rig_sim_optable *t = NULL;
    assert_int_equal(rig_sim_optable_get(path, 0, &t, error, sizeof error), RIG_OK);
    return t;
}

/* The fused forms in the cost model. Every fused GEMM of up to 16 rows runs the small-batch
 * kernel, whatever K. A table without fused points (the committed ones) costs a fused GEMM
 * from its plain shape's points, scaled by its own work, with the plain shape's warm weight,
 * and never leaves it to the analytic model; a table with them costs a form from its own
 * points, other forms' held 4 apart (as the kernels are), and a form it lacks from the plain
 * shape's. A table whose GEMM point has an unknown form does not parse. */
static void test_gemm_fused_forms(void **state)
{
    (void)state;
    const enum rig_gemm_prologue NORM = RIG_GEMM_PROLOGUE_RMS_NORM, NONE = RIG_GEMM_PROLOGUE_NONE;
    const enum rig_gemm_prologue SILU = RIG_GEMM_PROLOGUE_SILU_MUL;
    assert_true(rig_sim_gemm_small_batch(8, 4096, 1024, true));
    assert_true(rig_sim_gemm_small_batch(16, 1024, 1024, true));
    assert_false(rig_sim_gemm_small_batch(17, 4096, 4096, true));
    /* Qwen3-0.6B's o at K 1,024 (a per-tile grid of one wave): early only when fused */
    assert_true(rig_sim_gemm_early_weights(1, 1024, 1024, true, 132));
    assert_false(rig_sim_gemm_early_weights(1, 1024, 1024, false, 132));
    /* Qwen3-0.6B's qkv with the input norm runs on the persistent form (the prologue's rule,
     * hal/optable.h) but is priced with the plain weight, as the calibration run measured
     * (sim/cost.c, rig__warm_weight) */
    assert_false(rig_sim_gemm_early_weights(1, 4096, 1024, true, 132));
    struct rig_gemv_geometry g06 = rig_gemv_geometry(4096, 1024, 132);
    assert_int_equal(g06.warps, 5);
    assert_true(rig_gemv_prologue_persistent(1, 1024, &g06));
    struct rig_gemv_geometry g8 = rig_gemv_geometry(6144, 4096, 132); /* Qwen3-8B's qkv */
    assert_int_equal(g8.warps, 16);
    assert_true(rig_gemv_prologue_persistent(2, 4096, &g8));
    assert_false(rig_gemv_prologue_persistent(3, 4096, &g8)); /* 221,232 bytes > 214,976 */
    assert_false(rig_gemv_prologue_persistent(9, 1024, &g06)); /* over 8 rows */
    struct rig_gemv_geometry g_down = rig_gemv_geometry(4096, 12288, 132);
    assert_false(rig_gemv_prologue_persistent(1, 12288, &g_down)); /* a K run of 3 batches */
    double peak = 1e15, bw = 3e12, ns = 0, plain_ns = 0;

    /* no fused points: the plain shape's point, scaled by the fused op's work */
    struct rig_optable_point plain = op_point(gemm_op(8, 4096, 1024), 8000);
    const struct rig_sim_optable *t = table_of("optable_plain.h5", &plain, 1);
    struct rig_op op = fused_gemm_op(8, 4096, 1024, NORM, false);
    struct rig_optable_point q = op_point(op, 0);
    struct rig_optable_key costed = rig_sim_optable_form_key(t, &q.key);
    assert_float_equal(costed.p[4], 0, 0);
    assert_float_equal(costed.p[5], 0, 0);
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 1, &ns, NULL));
    assert_float_equal(ns, 8000 * q.bytes / plain.bytes, 1e-6); /* memory-bound */

    /* fused points: a form's own, other forms 4 apart */
    struct rig_optable_point points[5] = {
        plain, op_point(fused_gemm_op(4, 4096, 1024, NORM, false), 6000),
        op_point(fused_gemm_op(16, 4096, 1024, NORM, false), 7000),
        op_point(fused_gemm_op(8, 4096, 1024, SILU, true), 9000),
        op_point(gemm_op(8, 4096, 2048), 12000)};
    t = table_of("optable_fused.h5", points, 5);
    costed = rig_sim_optable_form_key(t, &q.key);
    assert_true(rig_optable_key_equal(&costed, &q.key));
    for (int32_t i = 0; i < 5; i++) { /* each point as measured */
        q = points[i];
        assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 1, &ns,
                                            NULL));
        assert_float_equal(ns, q.cold_ns, 1e-6);
    }
    /* RMS_NORM at 8 rows: its own points at 4 and 16 rows, the SILU_MUL point of its shape 4
     * away (another form), the small-batch plain point at K 2,048 5 away (1, another form);
     * the plain cuBLAS point of its shape is 8 away (another form and kernel), not among them */
    q = op_point(op, 0);
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 1, &ns, NULL));
    double d[4] = {log2(9) - log2(5), log2(17) - log2(9), 4.0, log2(2049) - log2(1025) + 4.0};
    double ratio[4], sum = 0, w = 0;
    int32_t at[4] = {1, 2, 3, 4};
    for (int32_t i = 0; i < 4; i++) {
        const struct rig_optable_point *p = &points[at[i]];
        ratio[i] = p->cold_ns * 1e-9 / fmax(p->flops / peak, p->bytes / bw);
        sum += log(ratio[i]) / d[i], w += 1 / d[i];
    }
    assert_float_equal(ns, 1e9 * exp(sum / w) * fmax(q.flops / peak, q.bytes / bw), 1e-6);
    /* a form the table lacks (accumulate alone): the plain shape's point */
    q = op_point(fused_gemm_op(8, 4096, 1024, NONE, true), 0);
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 1, &ns, NULL));
    assert_float_equal(ns, 8000 * q.bytes / plain.bytes, 1e-6);
    /* an unknown form in a file */
    points[1].key.p[4] = RIG_GEMM_PROLOGUES;
    char error[256];
    assert_int_equal(rig_optable_write("optable_form.h5", points, 2, NULL, 0, error, sizeof error),
                     RIG_OK);
    assert_int_equal(rig_sim_optable_get("optable_form.h5", 0, &t, error, sizeof error),
                     RIG_E_PARSE);

    /* the committed h100 table has no fused points: Qwen3-0.6B's qkv fused at 1 row costs its
     * plain GEMM's node (cuBLAS's, with its warm weight) scaled by the fused work */
    struct rig_sim_profile h100;
    assert_int_equal(rig_sim_profile_load("h100", &h100, error, sizeof error), RIG_OK);
    struct rig_op plain_op = gemm_op(1, 4096, 1024);
    op = fused_gemm_op(1, 4096, 1024, NORM, false);
    bool missed = true;
    ns = (double)rig_sim_cost_launch_ns(&h100, &op, 1, false, &missed);
    assert_false(missed);
    plain_ns = (double)rig_sim_cost_launch_ns(&h100, &plain_op, 1, false, &missed);
    struct rig_op_work fused_work = rig_optable_op_work(&op);
    struct rig_op_work plain_work = rig_optable_op_work(&plain_op);
    assert_true(ns > plain_ns);
    assert_float_equal(ns, plain_ns * fused_work.bytes / plain_work.bytes, 2);
    unlink("optable_plain.h5");
    unlink("optable_fused.h5");
    unlink("optable_form.h5");
}

static void test_node_weight_and_neighbours(void **state)
{
    (void)state;
    struct rig_optable_point points[5] = {
        gemm_point(8, 4096, 1024, 8000),  /* cuBLAS (K < 2048) */
        gemm_point(8, 4096, 4096, 20000), /* the small-batch kernel (K >= 2048) */
        gemm_point(64, 4096, 2048, 30000),
        decode_point(64, 1024, 1024, 100000), decode_point(64, 512, 1024, 70000)};
    points[0].warm_ns = 2000; /* cold 8000, warm 2000 */
    const struct rig_sim_optable *t = table_of("optable_nodes.h5", points, 5);
    double peak = 1e15, bw = 3e12, ns = 0;
    struct rig_optable_point q = points[0];
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 0.5, &ns, NULL));
    assert_float_equal(ns, 4000, 1e-6); /* sqrt(8000 x 2000) */
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 1, &ns, NULL));
    assert_float_equal(ns, 2000, 1e-6);
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 0.75, &ns,
                                        NULL));
    assert_float_equal(ns, pow(8000, 0.25) * pow(2000, 0.75), 1e-6);
    /* M = 8, K = 2048 runs the small-batch kernel: mostly from its own point at K = 4096 (1
     * away), hardly from cuBLAS's at K = 1024 (as near, but another kernel) or M = 64 */
    assert_true(rig_sim_gemm_small_batch(8, 4096, 2048, false));
    assert_false(rig_sim_gemm_small_batch(8, 4096, 1024, false));
    assert_false(rig_sim_gemm_small_batch(17, 4096, 4096, false));
    assert_true(rig_sim_gemm_small_batch(1, 151936, 1024, false));
    q = gemm_point(8, 4096, 2048, 0);
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 1, &ns, NULL));
    struct rig_optable_point g = gemm_point(8, 4096, 4096, 0);
    double own = 20000e-9 / fmax(g.flops / peak, g.bytes / bw);
    double far = 30000e-9 / fmax(points[2].flops / peak, points[2].bytes / bw);
    double cublas = 2000e-9 / fmax(points[0].flops / peak, points[0].bytes / bw);
    /* M = 64 and K = 1024 run cuBLAS: 4 added for the kernels' separation */
    double d_own = log2(4097) - log2(2049), d_far = log2(65) - log2(9) + 4.0;
    double d_cublas = log2(2049) - log2(1025) + 4.0;
    double expected = exp((log(own) / d_own + log(far) / d_far + log(cublas) / d_cublas) /
                          (1.0 / d_own + 1.0 / d_far + 1.0 / d_cublas));
    assert_float_equal(ns, 1e9 * expected * fmax(q.flops / peak, q.bytes / bw), 1e-6);
    /* a ragged decode batch (max twice the mean) is the ragged point, not the uniform one */
    q = decode_point(64, 512, 1024, 0);
    assert_true(rig_sim_optable_predict(t, &q.key, 0, q.bytes, peak, bw, 0, 1, &ns, NULL));
    assert_float_equal(ns, 70000, 1e-6);
    unlink("optable_nodes.h5");
}

/* A sampler batch over 1,000 logits of 4 rows: temperature, top-k, top-p per row (host
 * memory, as METADATA is on the simulator). */
struct sample_batch {
    float temperature[4], top_p[4], logits[4 * 1000];
    int32_t top_k[4], tokens[4], position[4];
    int64_t seed[4];
};

static struct rig_op sample_op(struct sample_batch *b)
{
    struct rig_op op = {.kind = RIG_OP_SAMPLE};
    op.u.sample = (struct rig_op_sample){rig_tensor_1d(b->tokens, RIG_DTYPE_I32, 4),
                                         rig_tensor_2d(b->logits, RIG_DTYPE_F32, 4, 1000),
                                         rig_tensor_1d(b->temperature, RIG_DTYPE_F32, 4),
                                         rig_tensor_1d(b->top_k, RIG_DTYPE_I32, 4),
                                         rig_tensor_1d(b->top_p, RIG_DTYPE_F32, 4),
                                         rig_tensor_1d(b->seed, RIG_DTYPE_I64, 4),
                                         rig_tensor_1d(b->position, RIG_DTYPE_I32, 4),
                                         rig_tensor_none(),
                                         rig_tensor_none()};
    return op;
}

static void sample_rows_set(struct sample_batch *b, int32_t r, float temperature, int32_t top_k,
                            float top_p)
{
    b->temperature[r] = temperature, b->top_k[r] = top_k, b->top_p[r] = top_p;
}

/* A point of `op`'s shape and work, its rows' kind `kind`, timed `ns`. */
static struct rig_optable_point sample_point(const struct rig_op *op, int32_t kind, double ns)
{
    struct rig_op_work work = rig_optable_op_work(op);
    struct rig_optable_point p = {
        .key = rig_optable_op_key(op), .flops = work.flops, .bytes = work.bytes};
    p.key.p[2] = kind;
    p.cold_ns = p.cold_p10_ns = p.cold_p90_ns = p.warm_ns = ns;
    return p;
}

/* The sampler's rows' kinds (greedy, whole vocabulary, cut-off: what cuda/ops/sample.cu does
 * for each), the key's third parameter, and the cost: a greedy batch from greedy points, a
 * mixed one as the row-weighted mean of its kinds, and from a table of whole-vocabulary
 * points only (every table swept before the kinds) a greedy batch as whole. */
static void test_sample_rows_kinds(void **state)
{
    (void)state;
    assert_int_equal(rig_sample_row_kind(0.0f, -1, 1.0f, 0.0f, 1000), RIG_SAMPLE_GREEDY);
    assert_int_equal(rig_sample_row_kind(0.7f, 1, 0.9f, 0.0f, 1000), RIG_SAMPLE_GREEDY);
    assert_int_equal(rig_sample_row_kind(1.0f, -1, 1.0f, 0.0f, 1000), RIG_SAMPLE_WHOLE);
    assert_int_equal(rig_sample_row_kind(1.0f, 1000, 1.0f, 0.0f, 1000), RIG_SAMPLE_WHOLE);
    assert_int_equal(rig_sample_row_kind(1.0f, 50, 1.0f, 0.0f, 1000), RIG_SAMPLE_CUT);
    assert_int_equal(rig_sample_row_kind(0.8f, -1, 0.9f, 0.0f, 1000), RIG_SAMPLE_CUT);
    assert_int_equal(rig_sample_row_kind(1.0f, -1, 1.0f, 0.05f, 1000), RIG_SAMPLE_CUT);
    static struct sample_batch b;
    for (int32_t r = 0; r < 4; r++)
        sample_rows_set(&b, r, 0.0f, -1, 1.0f);
    struct rig_op op = sample_op(&b);
    int64_t rows[RIG_SAMPLE_KINDS];
    rig_optable_sample_rows(&op.u.sample, rows);
    assert_int_equal(rows[RIG_SAMPLE_GREEDY], 4);
    assert_float_equal(rig_optable_op_key(&op).p[2], RIG_SAMPLE_GREEDY, 0);
    struct rig_optable_point points[3] = {sample_point(&op, RIG_SAMPLE_WHOLE, 40000),
                                          sample_point(&op, RIG_SAMPLE_GREEDY, 10000),
                                          sample_point(&op, RIG_SAMPLE_CUT, 90000)};
    char error[256];
    struct rig_sim_profile profile;
    assert_int_equal(rig_sim_profile_load("h200", &profile, error, sizeof error), RIG_OK);
    profile.table = table_of("optable_sample.h5", points, 3);
    assert_in_range(rig_sim_cost_node_ns(&profile, &op, 1), 10000, 10000 + 1); /* ceil of ns */
    sample_rows_set(&b, 1, 1.0f, -1, 1.0f); /* two greedy, one whole, one cut-off row */
    sample_rows_set(&b, 2, 0.8f, -1, 0.9f);
    rig_optable_sample_rows(&op.u.sample, rows);
    assert_int_equal(rows[RIG_SAMPLE_GREEDY], 2);
    assert_int_equal(rows[RIG_SAMPLE_WHOLE], 1);
    assert_int_equal(rows[RIG_SAMPLE_CUT], 1);
    assert_float_equal(rig_optable_op_key(&op).p[2], RIG_SAMPLE_MIXED, 0);
    /* the rows' mean: (2 x 10,000 + 40,000 + 90,000) / 4 */
    assert_in_range(rig_sim_cost_node_ns(&profile, &op, 1), 37500, 37501);
    for (int32_t r = 0; r < 4; r++)
        sample_rows_set(&b, r, 1.0f, -1, 1.0f);
    assert_in_range(rig_sim_cost_node_ns(&profile, &op, 1), 40000, 40000 + 1); /* ceil of ns */
    profile.table = table_of("optable_sample_whole.h5", points, 1); /* an older sweep's */
    for (int32_t r = 0; r < 4; r++)
        sample_rows_set(&b, r, 0.0f, -1, 1.0f);
    assert_in_range(rig_sim_cost_node_ns(&profile, &op, 1), 40000, 40000 + 1); /* ceil of ns */
    unlink("optable_sample.h5");
    unlink("optable_sample_whole.h5");
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
    struct rig_optable_point *points = NULL;
    int64_t count = 0;
    char device[64], error[256];
    struct rig_optable_host host;
    assert_int_equal(rig_profile_run(&o, &points, &count, &host, device, sizeof device, error,
                                     sizeof error),
                     RIG_OK);
    /* the host calls on the virtual clock: the h100 profile's keys (copies at a launch's
     * 6.1 us, events and waits free, a graph launch 2.2 us) */
    assert_float_equal(host.ns[RIG_OPTABLE_HOST_UPLOAD], 6100, 0);
    assert_float_equal(host.ns[RIG_OPTABLE_HOST_DOWNLOAD], 6100, 0);
    assert_float_equal(host.ns[RIG_OPTABLE_HOST_DEVICE_COPY], 6100, 0);
    assert_float_equal(host.ns[RIG_OPTABLE_HOST_EVENT_RECORD], 0, 0);
    assert_float_equal(host.ns[RIG_OPTABLE_HOST_STREAM_WAIT], 0, 0);
    assert_float_equal(host.ns[RIG_OPTABLE_HOST_GRAPH_LAUNCH], 2200, 0);
    assert_float_equal(host.ns[RIG_OPTABLE_HOST_KERNEL_LAUNCH], 6100, 0);
    assert_float_equal(host.mean_ns[RIG_OPTABLE_HOST_GRAPH_LAUNCH], 2200, 0);
    /* the calibration stage: the h100 profile's host model given back (tests/test_host_fit.c
     * checks every coefficient) */
    assert_true(host.model_given[RIG_HOST_LOOP][RIG_HOST_BASE]);
    assert_float_equal(host.model.ns[RIG_HOST_SCHEDULE][RIG_HOST_BASE], 20000, 1);
    assert_float_equal(host.model.ns[RIG_HOST_PREPARE][RIG_HOST_REQUESTS], 400, 0.01);
    assert_float_equal(host.model_median.ns[RIG_HOST_PROCESS][RIG_HOST_REQUESTS], 60, 0.01);
    assert_float_equal(host.model.ns[RIG_HOST_LOOP][RIG_HOST_BASE], 0, 0);
    assert_true(count > 50);
    assert_string_equal(device, "sim:h100");
    for (int64_t i = 0; i < count; i++) /* every shape swept once */
        for (int64_t j = i + 1; j < count; j++)
            assert_false(rig_optable_key_equal(&points[i].key, &points[j].key));
    /* the sampler's points of each rows' kind, as many of each: their keys read from the
     * host's staging of the point, not from what the device held before it (on a GPU the
     * sweep read device memory there and crashed) */
    int64_t kinds[RIG_SAMPLE_KINDS + 1] = {0};
    for (int64_t i = 0; i < count; i++)
        if (points[i].key.kind == RIG_OP_SAMPLE) kinds[(int32_t)points[i].key.p[2]]++;
    assert_true(kinds[RIG_SAMPLE_WHOLE] > 0);
    assert_int_equal(kinds[RIG_SAMPLE_GREEDY], kinds[RIG_SAMPLE_WHOLE]);
    assert_int_equal(kinds[RIG_SAMPLE_CUT], kinds[RIG_SAMPLE_WHOLE]);
    /* the fused forms of each linear at up to 16 rows: RMS_NORM (qkv, gate_up), accumulate
     * (o), SILU_MUL with accumulate (down), as the model issues them */
    int64_t forms[RIG_GEMM_PROLOGUES][2] = {{0}};
    for (int64_t i = 0; i < count; i++) {
        const double *p = points[i].key.p;
        if (points[i].key.kind != RIG_OP_GEMM || (p[4] == 0 && p[5] == 0)) continue;
        assert_true(p[0] <= 16);
        forms[(int32_t)p[4]][(int32_t)p[5]]++;
    }
    assert_true(forms[RIG_GEMM_PROLOGUE_RMS_NORM][0] > 0);
    assert_true(forms[RIG_GEMM_PROLOGUE_NONE][1] > 0);
    assert_true(forms[RIG_GEMM_PROLOGUE_SILU_MUL][1] > 0);
    assert_int_equal(forms[RIG_GEMM_PROLOGUE_RMS_NORM][0],
                     2 * forms[RIG_GEMM_PROLOGUE_SILU_MUL][1]);
    assert_int_equal(forms[RIG_GEMM_PROLOGUE_RMS_NORM][1] + forms[RIG_GEMM_PROLOGUE_SILU_MUL][0],
                     0);
    for (int64_t i = 0; i < count; i++) { /* the simulator's host time of an eager issue */
        assert_float_equal(points[i].host_ns, 6100, 0);
        assert_float_equal(points[i].first_host_ns, 6100, 0);
    }
    /* the table carries host times of another machine, which a profile then takes over its
     * keys: 1.5, 2.5, ... us */
    const char *host_attrs[RIG_OPTABLE_HOST_CALLS][2];
    char host_values[RIG_OPTABLE_HOST_CALLS][16];
    for (int32_t k = 0; k < RIG_OPTABLE_HOST_CALLS; k++) {
        snprintf(host_values[k], sizeof host_values[k], "%d", 1500 + 1000 * k);
        host_attrs[k][0] = rig_optable_host_keys[k];
        host_attrs[k][1] = host_values[k];
    }
    assert_int_equal(rig_optable_write("optable_sweep.h5", points, count,
                                       (const char *const(*)[2])host_attrs,
                                       RIG_OPTABLE_HOST_CALLS, error, sizeof error),
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
    int64_t taken[RIG_OPTABLE_HOST_CALLS] = {
        tabled.upload_host_ns,       tabled.download_host_ns,     tabled.device_copy_host_ns,
        tabled.event_record_host_ns, tabled.stream_wait_host_ns,  tabled.graph_launch_host_ns,
        tabled.kernel_launch_host_ns};
    for (int32_t k = 0; k < RIG_OPTABLE_HOST_CALLS; k++)
        assert_int_equal(taken[k], 1500 + 1000 * k);
    /* swept: qwen3-0.6b's qkv at M = 16 (eager adds the same launch term to both) */
    struct rig_op op = gemm_op(16, 4096, 1024);
    bool missed = true;
    int64_t a = rig_sim_cost_launch_ns(&analytic, &op, 1, false, NULL);
    int64_t t = rig_sim_cost_launch_ns(&tabled, &op, 1, false, &missed);
    assert_false(missed);
    assert_true(llabs(a - t) <= 1);
    /* not swept: a hidden size of 1536 (between 0.6B's 1024 and 8B's 4096), at M = 256 where
     * both run cuBLAS (at M = 16 the 8B's K = 4096 point is the small-batch kernel's) */
    op = gemm_op(256, 6144, 1536);
    a = rig_sim_cost_launch_ns(&analytic, &op, 1, false, NULL);
    t = rig_sim_cost_launch_ns(&tabled, &op, 1, false, &missed);
    assert_false(missed);
    assert_true(fabs((double)(t - a) / (double)a) < 0.15);
    /* swept: the fused forms at qwen3-0.6b's shapes, read back as the analytic model costs them */
    struct rig_op fused[3] = {fused_gemm_op(16, 4096, 1024, RIG_GEMM_PROLOGUE_RMS_NORM, false),
                              fused_gemm_op(1, 1024, 2048, RIG_GEMM_PROLOGUE_NONE, true),
                              fused_gemm_op(16, 1024, 3072, RIG_GEMM_PROLOGUE_SILU_MUL, true)};
    for (int32_t i = 0; i < 3; i++) {
        a = rig_sim_cost_launch_ns(&analytic, &fused[i], 1, false, NULL);
        t = rig_sim_cost_launch_ns(&tabled, &fused[i], 1, false, &missed);
        assert_false(missed);
        assert_true(llabs(a - t) <= 1);
    }
    op = gemm_op(16, 1 << 20, 64); /* far from every swept GEMM */
    (void)rig_sim_cost_launch_ns(&tabled, &op, 1, false, &missed);
    assert_true(missed);
    unlink("optable_sweep.h5");
    unlink("optable_profile.yaml");
}

/* A decode point with its real work: R requests of kv positions, heads Hq / Hk, D 128. */
static struct rig_optable_point decode_heads_point(double r, double kv, double hq, double ns)
{
    struct rig_optable_point p = {.key = {.kind = RIG_OP_ATTENTION_DECODE,
                                          .p = {r, kv, kv, hq, 8, 128}}};
    p.flops = 4 * hq * 128 * r * kv;
    p.bytes = 2 * r * hq * 128 * 2 + r * kv * (4 * 8 * 128 + 4);
    p.cold_ns = p.cold_p10_ns = p.cold_p90_ns = p.warm_ns = ns;
    return p;
}

/* Decode attention scales between head shapes by its bytes at the bandwidth plus its FLOPs
 * at the table's own decode rate (the best FLOP/s of its decode points), not by bytes alone:
 * with the H100's 256 x 2048 points of 16 / 8 and 32 / 8 heads (740 and 1045 us), 64 / 8
 * heads (the same KV bytes, twice the FLOPs of 32 / 8) is predicted 1.63 x 32 / 8's time,
 * where the bytes-only scaling gave 32 / 8's. */
static void test_decode_scales_by_flops(void **state)
{
    (void)state;
    struct rig_optable_point points[2] = {decode_heads_point(256, 2048, 16, 740000),
                                          decode_heads_point(256, 2048, 32, 1045000)};
    const struct rig_sim_optable *t = table_of("optable_heads.h5", points, 2);
    double peak = 989.4e12, bw = 3.35e12, ns = 0;
    struct rig_optable_point q = points[1]; /* a point is still predicted as measured */
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 1, &ns, NULL));
    assert_float_equal(ns, 1045000, 1e-6);
    q = decode_heads_point(256, 2048, 64, 0);
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 1, &ns, NULL));
    double rate = points[1].flops / 1045000e-9; /* 8.2 TFLOP/s: the 32 / 8 point's */
    double w16 = points[0].bytes / bw + points[0].flops / rate;
    double w32 = points[1].bytes / bw + points[1].flops / rate;
    double d16 = log2(65) - log2(17), d32 = log2(65) - log2(33);
    double ratio = exp((log(740000e-9 / w16) / d16 + log(1045000e-9 / w32) / d32) /
                       (1 / d16 + 1 / d32));
    assert_float_equal(ns, 1e9 * ratio * (q.bytes / bw + q.flops / rate), 1e-3);
    assert_float_equal(ns, 1.7075e6, 0.0005e6);
    unlink("optable_heads.h5");
}

/* The decode kernel rule both backends share (hal/optable.h), and the table's two decode
 * regimes: on a device of 132 SMs, 256 requests of Qwen3-32B's 64 / 8 heads run the
 * tensor-core kernel, whose time follows its bytes alone (the m64 tile does the same math for
 * any group up to 8), so it is predicted from the 32 / 8 tensor-core point at about that
 * point's time, the register-path point (4 requests) held 4 apart; loaded for a device of
 * unknown SMs (0), the same file scales every point as the register path, by bytes plus FLOPs
 * at the table's decode rate, and predicts the group of 8 much slower. */
static void test_decode_tensor_core_regime(void **state)
{
    (void)state;
    assert_true(rig_decode_tensor_cores(6, 32, 8, 128, 132));   /* 48 items x 3 >= 132 */
    assert_false(rig_decode_tensor_cores(5, 32, 8, 128, 132));  /* 40 items */
    assert_true(rig_decode_tensor_cores(256, 64, 8, 64, 132));  /* G 8, D 64 */
    assert_false(rig_decode_tensor_cores(256, 16, 8, 128, 132)); /* G 2: register path */
    assert_false(rig_decode_tensor_cores(256, 128, 8, 128, 132)); /* G 16 */
    assert_false(rig_decode_tensor_cores(256, 32, 8, 256, 132)); /* D 256 */
    assert_false(rig_decode_tensor_cores(256, 32, 8, 128, 0));   /* SMs unknown */
    struct rig_optable_point points[2] = {decode_heads_point(256, 2048, 32, 300000),
                                          decode_heads_point(4, 2048, 32, 60000)};
    char error[256];
    assert_int_equal(rig_optable_write("optable_tc.h5", points, 2, NULL, 0, error, sizeof error),
                     RIG_OK);
    const struct rig_sim_optable *tc = NULL, *reg = NULL;
    assert_int_equal(rig_sim_optable_get("optable_tc.h5", 132, &tc, error, sizeof error), RIG_OK);
    assert_int_equal(rig_sim_optable_get("optable_tc.h5", 0, &reg, error, sizeof error), RIG_OK);
    assert_true(tc != reg); /* one load per SM count */
    double peak = 989.4e12, bw = 4.8e12, ns = 0, ns_reg = 0;
    struct rig_optable_point q = decode_heads_point(256, 2048, 64, 0);
    assert_true(rig_sim_optable_predict(tc, &q.key, q.flops, q.bytes, peak, bw, 0, 1, &ns, NULL));
    /* the blend by hand: the tensor-core point's ratio to its bytes, the register point's to
     * bytes + FLOPs at the rate of the table's only register-path point (its own) */
    double r_tc = 300000e-9 / (points[0].bytes / bw);
    double r_reg = 60000e-9 / (points[1].bytes / bw + 60000e-9);
    double d_tc = log2(65) - log2(33);
    double d_reg = sqrt(pow(log2(257) - log2(5), 2) + d_tc * d_tc) + 4;
    double ratio = exp((log(r_tc) / d_tc + log(r_reg) / d_reg) / (1 / d_tc + 1 / d_reg));
    assert_float_equal(ns, 1e9 * ratio * q.bytes / bw, 1e-3);
    assert_true(ns > 0.9 * 300000 && ns < 1.15 * 300000);
    assert_true(rig_sim_optable_predict(reg, &q.key, q.flops, q.bytes, peak, bw, 0, 1, &ns_reg,
                                        NULL));
    assert_true(ns_reg > 1.3 * ns);
    unlink("optable_tc.h5");
}

/* attention_decode_store over its attention: the fused points' time above the decode points
 * of the same key (the sweep times both), exact at a swept key (1.5 us at 8 requests, 1.0 at
 * 64), between two swept keys blended by 1 / distance in their log2 keys; a table without
 * fused points has none to give (the cost model then prices the store as its own node). */
static void test_decode_store_extra(void **state)
{
    (void)state;
    struct rig_optable_point points[4] = {
        decode_heads_point(8, 1024, 16, 10000), decode_heads_point(64, 1024, 16, 30000),
        decode_heads_point(8, 1024, 16, 11500), decode_heads_point(64, 1024, 16, 31000)};
    points[2].key.kind = points[3].key.kind = RIG_OP_ATTENTION_DECODE_STORE;
    const struct rig_sim_optable *t = table_of("optable_store.h5", points, 4);
    double extra = 0;
    struct rig_optable_key key = points[2].key;
    assert_true(rig_sim_optable_store_extra(t, &key, points[2].flops, 0.6, &extra));
    assert_float_equal(extra, 1500, 1e-9);
    key = points[3].key;
    assert_true(rig_sim_optable_store_extra(t, &key, points[3].flops, 0.6, &extra));
    assert_float_equal(extra, 1000, 1e-9);
    key.p[0] = 16; /* between: 1 / distance in log2(requests + 1) */
    double flops = 4 * 16 * 128 * 16 * 1024.0;
    assert_true(rig_sim_optable_store_extra(t, &key, flops, 0.6, &extra));
    double d8 = log2(17) - log2(9), d64 = log2(65) - log2(17);
    assert_float_equal(extra, (1500 / d8 + 1000 / d64) / (1 / d8 + 1 / d64), 1e-6);
    unlink("optable_store.h5");
    const struct rig_sim_optable *plain = table_of("optable_store_plain.h5", points, 2);
    assert_false(rig_sim_optable_has_kind(plain, RIG_OP_ATTENTION_DECODE_STORE));
    assert_true(rig_sim_optable_has_kind(plain, RIG_OP_ATTENTION_DECODE));
    assert_false(rig_sim_optable_store_extra(plain, &key, flops, 0.6, &extra));
    unlink("optable_store_plain.h5");
}

/* The cost model with a table swept before attention_decode_store (the committed h100 one):
 * the fused op costs its two ops as nodes of their own, exactly what the forward paid before
 * it issued one op (so the scenarios' bytes stay the same), on a Qwen3-0.6B decode step of 4
 * requests. */
static void test_decode_store_cost_without_points(void **state)
{
    (void)state;
    struct rig_sim_profile p;
    char error[256];
    assert_int_equal(rig_sim_profile_load("h100", &p, error, sizeof error), RIG_OK);
    assert_non_null(p.table);
    assert_false(rig_sim_optable_has_kind(p.table, RIG_OP_ATTENTION_DECODE_STORE));
    enum { R = 4, L = 1024 };
    static int32_t table[R * L], idx[R], len[R], pos[R], loc[R];
    for (int32_t r = 0; r < R; r++) {
        for (int32_t i = 0; i < L; i++) table[r * L + i] = r * L + i;
        idx[r] = r, len[r] = 300 + 200 * r, pos[r] = len[r] - 1, loc[r] = table[r * L + pos[r]];
    }
    char *b = (char *)(uintptr_t)4096; /* the bf16 tensors: shapes only */
    struct rig_tensor qkv = rig_tensor_2d(b, RIG_DTYPE_BF16, R, 32 * 128);
    struct rig_tensor q = rig_tensor_3d(b, RIG_DTYPE_BF16, R, 16, 128);
    struct rig_tensor k = rig_tensor_3d(b, RIG_DTYPE_BF16, R, 8, 128);
    q.stride[0] = k.stride[0] = qkv.stride[0];
    struct rig_tensor cache = rig_tensor_3d(b, RIG_DTYPE_BF16, R * L, 8, 128);
    struct rig_tensor w = rig_tensor_1d(b, RIG_DTYPE_BF16, 128);
    struct rig_op op = {.kind = RIG_OP_ATTENTION_DECODE_STORE};
    op.u.attention_decode_store.store = (struct rig_op_qk_norm_rope_store){
        q, k, k, cache, cache, w, w, rig_tensor_1d(pos, RIG_DTYPE_I32, R),
        rig_tensor_1d(loc, RIG_DTYPE_I32, R), 1e-6f, {.theta = 1000000.0f}};
    op.u.attention_decode_store.attend = (struct rig_op_attention_decode){
        rig_tensor_3d(b, RIG_DTYPE_BF16, R, 16, 128), q, cache, cache,
        rig_tensor_2d(table, RIG_DTYPE_I32, R, L), rig_tensor_1d(idx, RIG_DTYPE_I32, R),
        rig_tensor_1d(len, RIG_DTYPE_I32, R), 0.088f};
    assert_int_equal(rig_hal_op_check(&op, error, sizeof error), RIG_OK);
    struct rig_op attend = {.kind = RIG_OP_ATTENTION_DECODE,
                            .u.attention_decode = op.u.attention_decode_store.attend};
    struct rig_op store = {.kind = RIG_OP_QK_NORM_ROPE_STORE,
                           .u.qk_norm_rope_store = op.u.attention_decode_store.store};
    int64_t parts = rig_sim_cost_node_ns(&p, &attend, 1) + rig_sim_cost_node_ns(&p, &store, 1);
    assert_true(parts > 0);
    assert_int_equal(rig_sim_cost_node_ns(&p, &op, 1), parts);
    assert_int_equal(rig_sim_cost_issue_host_ns(&p, &op),
                     rig_sim_cost_issue_host_ns(&p, &attend) +
                         rig_sim_cost_issue_host_ns(&p, &store));
    /* the key is the attention's, of the fused kind; the work both ops' */
    struct rig_optable_key a = rig_optable_op_key(&attend), f = rig_optable_op_key(&op);
    assert_int_equal(f.kind, RIG_OP_ATTENTION_DECODE_STORE);
    assert_memory_equal(a.p, f.p, sizeof a.p);
    struct rig_op_work wa = rig_optable_op_work(&attend), ws = rig_optable_op_work(&store),
                       wf = rig_optable_op_work(&op);
    assert_true(wf.flops == wa.flops + ws.flops && wf.bytes == wa.bytes + ws.bytes);
}

/* A decode key counts a shared position once (rig__decode_distinct), so 16 requests of 1,536
 * positions that share a 1,024-token prompt key as a ragged batch of mean 576 and max 1,536;
 * their FLOPs, every request's positions, tell them apart. A table with both points at that
 * key predicts each batch from its own (the other held log2(1536 / 576) = 1.4 apart), where
 * before the one first in the table priced both. */
static void test_decode_shared_points_apart(void **state)
{
    (void)state;
    struct rig_optable_point points[2] = {decode_heads_point(16, 1536, 16, 40000),
                                          decode_heads_point(16, 576, 16, 30000)};
    points[0].key.p[1] = 576; /* the shared point: 9,216 distinct positions of 24,576 read */
    points[1].key.p[2] = 1536; /* the ragged one: as many positions, one request at 1,536 */
    points[0].bytes = 2 * 16 * 16 * 128 * 2 + 9216.0 * 4 * 8 * 128 + 24576.0 * 4;
    const struct rig_sim_optable *t = table_of("optable_shared.h5", points, 2);
    double peak = 989.4e12, bw = 4.8e12, ns = 0;
    for (int32_t i = 0; i < 2; i++) {
        const struct rig_optable_point *q = &points[i];
        assert_true(
            rig_sim_optable_predict(t, &q->key, q->flops, q->bytes, peak, bw, 0, 1, &ns, NULL));
        assert_float_equal(ns, q->cold_ns, 1e-6);
    }
    /* the ragged batch at a key between points is costed mostly from the unshared one */
    struct rig_optable_point q = decode_heads_point(16, 600, 16, 0);
    q.key.p[2] = 1536;
    assert_true(rig_sim_optable_predict(t, &q.key, q.flops, q.bytes, peak, bw, 0, 1, &ns, NULL));
    assert_true(ns > 30000 && ns < 33000);
    unlink("optable_shared.h5");
}

/* The h200 table's decode point of Qwen3-0.6B's heads (16 / 8, D 128) at `r` requests of
 * `kv` positions each: its node time at warm weight 0.75 into *ns. False if the table has none. */
static bool h200_uniform_ns(const struct rig_sim_optable *t, double r, double kv, double *ns)
{
    for (int64_t i = 0; i < rig_sim_optable_count(t); i++) {
        const struct rig_optable_point *p = rig_sim_optable_point(t, i);
        const double *k = p->key.p;
        if (p->key.kind != RIG_OP_ATTENTION_DECODE || k[0] != r || k[1] != kv || k[2] != kv ||
            k[3] != 16 || k[4] != 8 || k[5] != 128)
            continue;
        *ns = pow(p->cold_ns, 0.25) * pow(p->warm_ns, 0.75);
        return true;
    }
    return false;
}

/* Predicts a uniform decode batch of Qwen3-0.6B's heads (`r` requests of `kv` positions, their
 * own) on the h200 table at warm weight 0.75, with the work the sweep gives it. */
static double h200_decode_ns(const struct rig_sim_optable *t, double r, double mean, double max)
{
    struct rig_optable_key key = {.kind = RIG_OP_ATTENTION_DECODE, .p = {r, mean, max, 16, 8, 128}};
    double flops = 4.0 * 16 * 128 * r * mean, bytes = r * mean * (4 * 8 * 128 + 4) + r * 16 * 256;
    double ns = 0;
    assert_true(
        rig_sim_optable_predict(t, &key, flops, bytes, 989.4e12, 4.8e12, 0, 0.75, &ns, NULL));
    return ns;
}

/* Decode attention on the h200 table's grid (sim/optable.c, rig__grid_ns): every unshared
 * point of Qwen3-0.6B's heads (uniform and ragged) is reproduced as measured; a uniform
 * batch's time never falls as its context grows, at swept request counts and between them,
 * by more than two neighbouring points' noise (3 %: 4 x 192 and 4 x 256 read 9,239 and 9,212
 * ns in the seventh session's sweep, 1 x 128 and 1 x 192 8,530 and 8,340 ns in the eleventh
 * session's; the nearest-point blend read 8,754 ns at 1 x 256 and 6,217
 * at 1 x 384 on the table of 2026-11-29's sixth session); one request between two swept
 * lengths (1,024 and 1,536; 2,048 and 3,072) lies halfway between their points (in either
 * order), read from the table itself so that a re-swept table keeps the test; and a key whose
 * padding rows share one dummy slot (sharing ~1e-4) is costed as its own. */
static void test_decode_grid_h200(void **state)
{
    (void)state;
    const struct rig_sim_optable *t = NULL;
    char error[256];
    assert_int_equal(rig_sim_optable_get("h200", 132, &t, error, sizeof error), RIG_OK);
    int64_t reproduced = 0;
    for (int64_t i = 0; i < rig_sim_optable_count(t); i++) {
        const struct rig_optable_point *p = rig_sim_optable_point(t, i);
        const double *k = p->key.p;
        if (p->key.kind != RIG_OP_ATTENTION_DECODE || k[3] != 16 || k[4] != 8 || k[5] != 128 ||
            p->flops > 4.0 * 16 * 128 * k[0] * k[1] * (1 + 1e-9)) /* shared points: the blend */
            continue;
        double ns = 0, node = pow(p->cold_ns, 0.25) * pow(p->warm_ns, 0.75);
        assert_true(rig_sim_optable_predict(t, &p->key, p->flops, p->bytes, 989.4e12, 4.8e12, 0,
                                            0.75, &ns, NULL));
        assert_float_equal(ns, node, 1e-9 * node);
        reproduced++;
    }
    assert_true(reproduced >= 186); /* 11 lengths x 16 request counts, uniform and ragged */
    const double requests[] = {1, 2, 3, 4, 5, 8, 12, 16, 20, 32};
    for (int32_t r = 0; r < 10; r++) {
        double before = 0;
        for (double kv = 128; kv <= 4096; kv += 32) {
            double ns = h200_decode_ns(t, requests[r], kv, kv);
            /* two swept points can differ by their noise: at one request with the cluster
             * merge (eleventh session's call 7) 128 and 192 keys read 8.53 and 8.34 us */
            assert_true(ns >= 0.97 * before);
            before = ns;
        }
    }
    double at256 = 0;
    assert_true(h200_uniform_ns(t, 1, 256, &at256));
    assert_float_equal(h200_decode_ns(t, 1, 256, 256), at256, 1e-9 * at256);
    const double pairs[2][2] = {{1024, 1536}, {2048, 3072}};
    for (int32_t i = 0; i < 2; i++) {
        double low = 0, high = 0, kv = (pairs[i][0] + pairs[i][1]) / 2;
        assert_true(h200_uniform_ns(t, 1, pairs[i][0], &low) &&
                    h200_uniform_ns(t, 1, pairs[i][1], &high));
        double mid = h200_decode_ns(t, 1, kv, kv);
        assert_float_equal(mid, (low + high) / 2, 1e-6 * mid);
        /* either order: two neighbouring lengths can read within their noise (call 1 of
         * 2026-11-29's ninth session: 1 x 1,536 a hair below 1 x 1,024) */
        assert_true(mid >= fmin(low, high) && mid <= fmax(low, high));
    }
    /* 9 requests of 840 positions padded to 16 rows of one dummy position each */
    struct rig_optable_key padded = {.kind = RIG_OP_ATTENTION_DECODE,
                                     .p = {16, (9 * 840 + 1) / 16.0, 1590, 16, 8, 128}};
    double ns_own = 0, ns_padded = 0, bytes = 7561.0 * (4 * 8 * 128 + 4);
    double flops_own = 4.0 * 16 * 128 * 7561, flops_padded = 4.0 * 16 * 128 * 7567;
    assert_true(rig_sim_optable_predict(t, &padded, flops_own, bytes, 989.4e12, 4.8e12, 0, 0.75,
                                        &ns_own, NULL));
    assert_true(rig_sim_optable_predict(t, &padded, flops_padded, bytes, 989.4e12, 4.8e12, 0, 0.75,
                                        &ns_padded, NULL));
    assert_float_equal(ns_padded, ns_own, 0);
}

/* The grid's rules on a table of two request rows (1 and 4) at 256 and 1,024 positions, the
 * 4-request row with ragged points too (means 160 and 640): between rows and lengths the time
 * is linear in both (bilinear at 2 x 640); past the last length the end segment's line, held
 * at most proportional to the length (x 2 at 2,048) and at least flat; before the first, at
 * least proportional (x 0.5 at 128); a ragged key linear in its mean between the ragged and
 * the uniform batch at its max, and a batch more ragged than the sweep's held likewise. */
static void test_decode_grid_rules(void **state)
{
    (void)state;
    struct rig_optable_point points[6] = {
        decode_point(1, 256, 256, 10000), decode_point(1, 1024, 1024, 50000),
        decode_point(4, 256, 256, 20000), decode_point(4, 1024, 1024, 60000),
        decode_point(4, 160, 256, 16000), decode_point(4, 640, 1024, 30000)};
    const struct rig_sim_optable *t = table_of("optable_grid.h5", points, 6);
    double peak = 989.4e12, bw = 4.8e12, ns = 0;
    struct rig_optable_point q = decode_point(2, 640, 640, 0);
    assert_true(rig_sim_optable_predict(t, &q.key, 0, q.bytes, peak, bw, 0, 1, &ns, NULL));
    double w = (640 - 256) / 768.0; /* in the length; (2 - 1) / 3 in the requests */
    double one = 10000 + w * 40000, four = 20000 + w * 40000;
    assert_float_equal(ns, one + (four - one) / 3, 1e-6);
    q = decode_point(1, 2048, 2048, 0); /* the line: 50,000 + 40,000 x 4 / 3 > 100,000 */
    assert_true(rig_sim_optable_predict(t, &q.key, 0, q.bytes, peak, bw, 0, 1, &ns, NULL));
    assert_float_equal(ns, 100000, 1e-6);
    q = decode_point(4, 2048, 2048, 0); /* the line: 60,000 + 40,000 x 4 / 3 */
    assert_true(rig_sim_optable_predict(t, &q.key, 0, q.bytes, peak, bw, 0, 1, &ns, NULL));
    assert_float_equal(ns, 60000 + 40000 * 4 / 3.0, 1e-6);
    q = decode_point(1, 128, 128, 0); /* the line: 10,000 - 40,000 / 6 < 5,000 */
    assert_true(rig_sim_optable_predict(t, &q.key, 0, q.bytes, peak, bw, 0, 1, &ns, NULL));
    assert_float_equal(ns, 5000, 1e-6);
    q = decode_point(4, 832, 1024, 0); /* halfway between the ragged mean 640 and 1,024 */
    assert_true(rig_sim_optable_predict(t, &q.key, 0, q.bytes, peak, bw, 0, 1, &ns, NULL));
    assert_float_equal(ns, 45000, 1e-6);
    /* past the ragged mean the line (22,500 at 544) is held at the ragged point's time a key */
    q = decode_point(4, 544, 1024, 0);
    assert_true(rig_sim_optable_predict(t, &q.key, 0, q.bytes, peak, bw, 0, 1, &ns, NULL));
    assert_float_equal(ns, 30000 * 544 / 640.0, 1e-6);
    q = decode_point(4, 320, 1024, 0); /* the line 5,000, held at 30,000 x 320 / 640 */
    assert_true(rig_sim_optable_predict(t, &q.key, 0, q.bytes, peak, bw, 0, 1, &ns, NULL));
    assert_float_equal(ns, 15000, 1e-6);
    unlink("optable_grid.h5");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_and_work),
        cmocka_unit_test(test_file_read_back_and_errors),
        cmocka_unit_test(test_exact_interpolated_and_out_of_reach),
        cmocka_unit_test(test_host_time),
        cmocka_unit_test(test_node_weight_and_neighbours),
        cmocka_unit_test(test_decode_scales_by_flops),
        cmocka_unit_test(test_decode_tensor_core_regime),
        cmocka_unit_test(test_decode_shared_points_apart),
        cmocka_unit_test(test_decode_grid_h200),
        cmocka_unit_test(test_decode_grid_rules),
        cmocka_unit_test(test_gemm_early_weights),
        cmocka_unit_test(test_decode_early_keys),
        cmocka_unit_test(test_gemm_fused_forms),
        cmocka_unit_test(test_decode_store_extra),
        cmocka_unit_test(test_decode_store_cost_without_points),
        cmocka_unit_test(test_sample_rows_kinds),
        cmocka_unit_test(test_sweep_reproduces_the_analytic_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
