/* report_h5.c — the tables of a struct rig_bench_report in one HDF5 file.
 *
 * Layout (docs/performance.md): root attributes rig_version, git_commit, backend, device,
 * model, predicted (1 when the times are cost-model predictions on a virtual clock),
 * repeats, units; compound datasets /floors (one row), /decode, /prefill, /attention,
 * /ops, /serving with one row per measurement. Columns are the report's fields by name; times of
 * the step benchmarks are nanoseconds (float64), serving metrics seconds. The serving
 * runs' full records live in their own files (column `path`).
 *
 * Determinism: no timestamps on any object, the oldest file format, rows copied from
 * zeroed structs (padding included), so the same report gives the same bytes.
 */
#include <hdf5.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/harness/bench/bench.h"
#include "core/version.h"

enum rig__column_kind { RIG__F64 = 0, RIG__I32 = 1, RIG__I64 = 2, RIG__TEXT = 3, RIG__BOOL = 4 };

struct rig__column {
    const char *name;
    size_t offset;
    enum rig__column_kind kind;
    size_t size; /* RIG__TEXT: bytes of the fixed-length string */
};

#define RIG__COL(type, field, kind)                                                                \
    {                                                                                              \
#field, offsetof(type, field), kind, 0                                                     \
    }
#define RIG__NAMED(name, type, field, kind)                                                        \
    {                                                                                              \
        name, offsetof(type, field), kind, 0                                                       \
    }

struct rig__h5 {
    hid_t file, dcpl, gcpl;
    bool failed;
};

static hid_t rig__type(const struct rig__column *c)
{
    switch (c->kind) {
    case RIG__F64: return H5Tcopy(H5T_NATIVE_DOUBLE);
    case RIG__I32: return H5Tcopy(H5T_NATIVE_INT32);
    case RIG__I64: return H5Tcopy(H5T_NATIVE_INT64);
    case RIG__BOOL: return H5Tcopy(H5T_NATIVE_UINT8);
    case RIG__TEXT: {
        hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, c->size);
        H5Tset_strpad(t, H5T_STR_NULLPAD);
        return t;
    }
    }
    RIG_UNREACHABLE();
}

/* Writes `count` rows of `row_size` bytes from `rows` as a compound dataset. */
static void rig__table(struct rig__h5 *w, const char *name, const struct rig__column *columns,
                       size_t column_count, size_t row_size, int64_t count, const void *rows)
{
    if (w->failed) return;
    hid_t memory = H5Tcreate(H5T_COMPOUND, row_size);
    for (size_t i = 0; i < column_count; i++) {
        hid_t t = rig__type(&columns[i]);
        if (H5Tinsert(memory, columns[i].name, columns[i].offset, t) < 0) w->failed = true;
        H5Tclose(t);
    }
    hid_t file_type = H5Tcopy(memory);
    H5Tpack(file_type);
    hsize_t dims[1] = {(hsize_t)count};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t set = H5Dcreate2(w->file, name, file_type, space, H5P_DEFAULT, w->dcpl, H5P_DEFAULT);
    if (set < 0 || (count > 0 && H5Dwrite(set, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0))
        w->failed = true;
    if (set >= 0) H5Dclose(set);
    H5Sclose(space);
    H5Tclose(file_type);
    H5Tclose(memory);
}

static void rig__attr_text(struct rig__h5 *w, const char *name, const char *value)
{
    if (w->failed) return;
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, strlen(value) + 1);
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(w->file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, type, value) < 0) w->failed = true;
    if (attr >= 0) H5Aclose(attr);
    H5Sclose(space);
    H5Tclose(type);
}

static void rig__attr_i64(struct rig__h5 *w, const char *name, int64_t value)
{
    if (w->failed) return;
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(w->file, name, H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, H5T_NATIVE_INT64, &value) < 0) w->failed = true;
    if (attr >= 0) H5Aclose(attr);
    H5Sclose(space);
}

static void rig__write_steps(struct rig__h5 *w, const struct rig_bench_report *r)
{
    typedef struct rig_bench_floors F;
    static const struct rig__column floors[] = {
        RIG__COL(F, copy_bytes, RIG__I64), RIG__COL(F, copy_ns, RIG__F64),
        RIG__COL(F, bandwidth, RIG__F64),  RIG__COL(F, gemm_size, RIG__I32),
        RIG__COL(F, gemm_ns, RIG__F64),    RIG__COL(F, gemm_flops, RIG__F64)};
    typedef struct rig_bench_decode_row D;
    static const struct rig__column decode[] = {
        RIG__COL(D, batch, RIG__I32),        RIG__COL(D, context, RIG__I32),
        RIG__COL(D, eager_ns, RIG__F64),     RIG__COL(D, graph_ns, RIG__F64),
        RIG__COL(D, weight_bytes, RIG__F64), RIG__COL(D, kv_bytes, RIG__F64),
        RIG__COL(D, flops, RIG__F64),        RIG__COL(D, floor_ns, RIG__F64),
        RIG__COL(D, ratio, RIG__F64)};
    typedef struct rig_bench_prefill_row P;
    static const struct rig__column prefill[] = {
        RIG__COL(P, chunk, RIG__I32),    RIG__COL(P, prefix, RIG__I32),
        RIG__COL(P, ns, RIG__F64),       RIG__COL(P, flops, RIG__F64),
        RIG__COL(P, floor_ns, RIG__F64), RIG__COL(P, flops_per_s, RIG__F64),
        RIG__COL(P, mfu, RIG__F64)};
    typedef struct rig_bench_attention_row A;
    static const struct rig__column attention[] = {
        {"op", offsetof(A, op), RIG__TEXT, sizeof(((A *)0)->op)},
        RIG__COL(A, batch, RIG__I32),
        RIG__COL(A, context, RIG__I32),
        RIG__COL(A, ns, RIG__F64),
        RIG__COL(A, min_ns, RIG__F64),
        RIG__COL(A, max_ns, RIG__F64),
        RIG__COL(A, bytes, RIG__F64),
        RIG__COL(A, flops, RIG__F64),
        RIG__COL(A, floor_ns, RIG__F64),
        RIG__COL(A, ratio, RIG__F64)};
    if (r->have_floors)
        rig__table(w, "floors", floors, RIG_ARRAY_LEN(floors), sizeof(F), 1, &r->floors);
    rig__table(w, "decode", decode, RIG_ARRAY_LEN(decode), sizeof(D), r->decode_count, r->decode);
    rig__table(w, "prefill", prefill, RIG_ARRAY_LEN(prefill), sizeof(P), r->prefill_count,
               r->prefill);
    rig__table(w, "attention", attention, RIG_ARRAY_LEN(attention), sizeof(A), r->attention_count,
               r->attention);
}

static void rig__write_serving(struct rig__h5 *w, const struct rig_bench_report *r)
{
    typedef struct rig_bench_serving_row S;
    static const struct rig__column serving[] = {
        {"name", offsetof(S, name), RIG__TEXT, sizeof(((S *)0)->name)},
        RIG__COL(S, rate, RIG__F64),
        RIG__COL(S, overlap, RIG__BOOL),
        RIG__COL(S, requests, RIG__I32),
        RIG__COL(S, steps, RIG__I64),
        RIG__COL(S, decode_steps, RIG__I64),
        RIG__NAMED("duration", S, metrics.duration_s, RIG__F64),
        RIG__NAMED("completed", S, metrics.completed, RIG__F64),
        RIG__NAMED("total_input", S, metrics.total_input, RIG__F64),
        RIG__NAMED("total_output", S, metrics.total_output, RIG__F64),
        RIG__NAMED("output_throughput", S, metrics.output_throughput, RIG__F64),
        RIG__NAMED("total_throughput", S, metrics.total_throughput, RIG__F64),
        RIG__NAMED("ttft_median", S, metrics.ttft.median, RIG__F64),
        RIG__NAMED("ttft_p99", S, metrics.ttft.p99, RIG__F64),
        RIG__NAMED("tpot_median", S, metrics.tpot.median, RIG__F64),
        RIG__NAMED("tpot_p99", S, metrics.tpot.p99, RIG__F64),
        RIG__NAMED("itl_median", S, metrics.itl.median, RIG__F64),
        RIG__NAMED("itl_p99", S, metrics.itl.p99, RIG__F64),
        RIG__NAMED("e2e_median", S, metrics.e2e.median, RIG__F64),
        RIG__NAMED("e2e_p99", S, metrics.e2e.p99, RIG__F64),
        RIG__COL(S, floor_s, RIG__F64),
        RIG__COL(S, floor_ratio, RIG__F64),
        RIG__COL(S, idle_fraction, RIG__F64),
        RIG__COL(S, ahead_fraction, RIG__F64),
        RIG__COL(S, launch_host_us, RIG__F64),
        {"path", offsetof(S, path), RIG__TEXT, sizeof(((S *)0)->path)}};
    typedef struct rig_bench_op_row O;
    static const struct rig__column ops[] = {
        {"op", offsetof(O, op), RIG__TEXT, sizeof(((O *)0)->op)},
        RIG__COL(O, batch, RIG__I32),
        RIG__COL(O, tokens, RIG__I32),
        RIG__COL(O, context, RIG__I32),
        RIG__COL(O, count, RIG__I32),
        RIG__COL(O, ns, RIG__F64),
        RIG__COL(O, share, RIG__F64)};
    rig__table(w, "ops", ops, RIG_ARRAY_LEN(ops), sizeof(O), r->op_count, r->ops);
    rig__table(w, "serving", serving, RIG_ARRAY_LEN(serving), sizeof(S), r->serving_count,
               r->serving);
    typedef struct rig_bench_collective_row C;
    static const struct rig__column collectives[] = {
        RIG__COL(C, bytes, RIG__I64), RIG__COL(C, ranks, RIG__I32), RIG__COL(C, ns, RIG__F64),
        RIG__COL(C, issue_ns, RIG__F64), RIG__COL(C, graph_ns, RIG__F64),
        RIG__COL(C, algbw, RIG__F64),
        RIG__COL(C, busbw, RIG__F64)};
    rig__table(w, "collectives", collectives, RIG_ARRAY_LEN(collectives), sizeof(C),
               r->collective_count, r->collectives);
}

enum rig_status rig_bench_write_h5(const struct rig_bench_report *report, const char *path,
                                   char *error, size_t error_len)
{
    RIG_ASSERT(report != NULL && path != NULL);
    H5E_auto2_t saved_func;
    void *saved_data;
    H5Eget_auto2(H5E_DEFAULT, &saved_func, &saved_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    struct rig__h5 w = {0};
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE), fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_obj_track_times(fcpl, 0);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_EARLIEST, H5F_LIBVER_V18);
    w.file = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
    H5Pclose(fcpl);
    H5Pclose(fapl);
    w.dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(w.dcpl, 0);
    w.failed = w.file < 0;
    rig__attr_text(&w, "rig_version", rig_version_string);
    rig__attr_text(&w, "git_commit", rig_git_commit);
    rig__attr_text(&w, "backend", report->backend);
    rig__attr_text(&w, "device", report->device);
    rig__attr_text(&w, "model", report->model);
    rig__attr_i64(&w, "predicted", report->predicted);
    rig__attr_i64(&w, "repeats", report->repeats);
    rig__attr_i64(&w, "tp", report->tp);
    rig__attr_text(&w, "units",
                   "*_ns: nanoseconds; bytes; flops: FLOP; bandwidth: B/s "
                   "(read + written); *_flops, flops_per_s: FLOP/s; serving "
                   "times: seconds; throughputs: tokens/s");
    rig__write_steps(&w, report);
    rig__write_serving(&w, report);
    if (w.file >= 0 && H5Fclose(w.file) < 0) w.failed = true;
    H5Pclose(w.dcpl);
    H5Eset_auto2(H5E_DEFAULT, saved_func, saved_data);
    if (!w.failed) return RIG_OK;
    if (w.file >= 0) remove(path);
    snprintf(error, error_len, "%s: cannot write the benchmark tables", path);
    return RIG_E_IO;
}
