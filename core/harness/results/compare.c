/* compare.c — comparing a measured and a predicted results file, see compare.h. */
#include "core/harness/results/compare.h"

#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/results/results.h"

/* The /steps fields compare reads (the file may hold more: HDF5 matches fields by name). */
struct rig__step_fields {
    int32_t phase, batch_size, tokens, request_count;
    int64_t request_offset;
    double start, duration;
    double host_launch, host_process; /* read only when the file has them */
    double host_part[3];              /* schedule, prepare, issue: the same */
    double host_loop;                 /* the same */
};

static const char *const rig__host_parts[3] = {"host_schedule", "host_prepare", "host_issue"};

static const int32_t rig__bucket_max[RIG_COMPARE_BUCKETS] = {1, 8, 32, 128, 512, INT32_MAX};
static const char *const rig__bucket_names[RIG_COMPARE_BUCKETS] = {
    "batch 1", "batch 2-8", "batch 9-32", "batch 33-128", "batch 129-512", "batch 513+"};

/* Serving metrics shown side by side, by their /summary names. */
static const char *const rig__metric_rows[] = {
    "duration",    "output_throughput", "total_throughput", "ttft_median", "ttft_p90",
    "ttft_p99",    "tpot_median",       "tpot_p90",         "tpot_p99",    "itl_median",
    "itl_p90",     "itl_p99",           "e2e_median",       "e2e_p90",     "e2e_p99",
};
_Static_assert(RIG_ARRAY_LEN(rig__metric_rows) + 2 <= RIG_COMPARE_METRICS, "metric rows");

static int32_t rig__bucket(int32_t batch)
{
    for (int32_t b = 0; b < RIG_COMPARE_BUCKETS; b++)
        if (batch <= rig__bucket_max[b]) return b;
    RIG_UNREACHABLE();
}

static enum rig_status rig__fail(char *error, size_t error_len, enum rig_status status,
                                 const char *path, const char *what)
{
    if (error != NULL && error_len > 0) snprintf(error, error_len, "%s: %s", path, what);
    return status;
}

/* A variable-length string attribute of the root into `out` ("" when absent). */
static void rig__read_attr(hid_t file, const char *name, char *out, size_t out_len)
{
    out[0] = '\0';
    if (H5Aexists(file, name) <= 0) return;
    hid_t attr = H5Aopen(file, name, H5P_DEFAULT);
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    H5Tset_cset(type, H5T_CSET_UTF8); /* as written: HDF5 converts no character set */
    char *value = NULL;
    if (attr >= 0 && H5Aread(attr, type, &value) >= 0 && value != NULL) {
        snprintf(out, out_len, "%s", value);
        H5free_memory(value);
    }
    H5Tclose(type);
    if (attr >= 0) H5Aclose(attr);
}

/* The /steps fields to read; `host` adds host_launch and host_process, `parts` host_launch's
 * parts, `loop` host_loop (files written before those columns lack them). */
static hid_t rig__step_memory_type(bool host, bool parts, bool loop)
{
    static const char *const phases[] = {"prefill", "decode", "mixed"};
    hid_t phase = H5Tenum_create(H5T_NATIVE_INT32);
    for (int32_t i = 0; i < 3; i++) H5Tenum_insert(phase, phases[i], &i);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct rig__step_fields));
    H5Tinsert(t, "phase", HOFFSET(struct rig__step_fields, phase), phase);
    H5Tinsert(t, "batch_size", HOFFSET(struct rig__step_fields, batch_size), H5T_NATIVE_INT32);
    H5Tinsert(t, "tokens", HOFFSET(struct rig__step_fields, tokens), H5T_NATIVE_INT32);
    H5Tinsert(t, "request_count", HOFFSET(struct rig__step_fields, request_count),
              H5T_NATIVE_INT32);
    H5Tinsert(t, "request_offset", HOFFSET(struct rig__step_fields, request_offset),
              H5T_NATIVE_INT64);
    H5Tinsert(t, "start", HOFFSET(struct rig__step_fields, start), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "duration", HOFFSET(struct rig__step_fields, duration), H5T_NATIVE_DOUBLE);
    if (host) {
        H5Tinsert(t, "host_launch", HOFFSET(struct rig__step_fields, host_launch),
                  H5T_NATIVE_DOUBLE);
        H5Tinsert(t, "host_process", HOFFSET(struct rig__step_fields, host_process),
                  H5T_NATIVE_DOUBLE);
    }
    for (int32_t k = 0; parts && k < 3; k++)
        H5Tinsert(t, rig__host_parts[k],
                  HOFFSET(struct rig__step_fields, host_part) + (size_t)k * sizeof(double),
                  H5T_NATIVE_DOUBLE);
    if (loop)
        H5Tinsert(t, "host_loop", HOFFSET(struct rig__step_fields, host_loop), H5T_NATIVE_DOUBLE);
    H5Tclose(phase);
    return t;
}

static bool rig__alloc_steps(struct rig_compare_run *run, int64_t count)
{
    size_t n = (size_t)count + 1;
    run->phase = calloc(n, sizeof *run->phase);
    run->batch = calloc(n, sizeof *run->batch);
    run->tokens = calloc(n, sizeof *run->tokens);
    run->start_s = calloc(n, sizeof *run->start_s);
    run->duration_s = calloc(n, sizeof *run->duration_s);
    run->host_launch_s = calloc(n, sizeof *run->host_launch_s);
    run->host_process_s = calloc(n, sizeof *run->host_process_s);
    run->host_loop_s = calloc(n, sizeof *run->host_loop_s);
    bool parts = run->host_loop_s != NULL;
    for (int32_t k = 0; k < 3; k++) {
        run->host_part_s[k] = calloc(n, sizeof *run->host_part_s[k]);
        parts = parts && run->host_part_s[k] != NULL;
    }
    run->key = calloc(n, sizeof *run->key);
    run->step_count = count;
    return run->phase && run->batch && run->tokens && run->start_s && run->duration_s &&
           run->host_launch_s && run->host_process_s && parts && run->key;
}

/* FNV-1a over 32-bit words. */
static uint64_t rig__hash(uint64_t hash, uint32_t word)
{
    for (int32_t i = 0; i < 4; i++) {
        hash ^= (word >> (8 * i)) & 0xffu;
        hash *= 0x100000001b3ull;
    }
    return hash;
}

/* Reads /step_requests and gives every step its key: a hash of its phase, tokens and the
 * uids it ran (sorted in the file). False when the dataset is missing or a row points
 * outside it. */
static bool rig__read_keys(hid_t file, const struct rig__step_fields *rows,
                           struct rig_compare_run *run)
{
    if (H5Lexists(file, "step_requests", H5P_DEFAULT) <= 0) return false;
    hid_t set = H5Dopen2(file, "step_requests", H5P_DEFAULT);
    hid_t space = set >= 0 ? H5Dget_space(set) : -1;
    hssize_t count = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    bool ok = count >= 0 && count < (hssize_t)1 << 40;
    int32_t *uids = ok ? calloc((size_t)count + 1, sizeof *uids) : NULL;
    ok = ok && uids != NULL;
    if (ok && count > 0) ok = H5Dread(set, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                      uids) >= 0;
    for (int64_t i = 0; ok && i < run->step_count; i++) {
        int64_t first = rows[i].request_offset, n = rows[i].request_count;
        ok = first >= 0 && n >= 0 && first + n <= (int64_t)count;
        uint64_t hash = rig__hash(rig__hash(0xcbf29ce484222325ull, (uint32_t)rows[i].phase),
                                  (uint32_t)rows[i].tokens);
        for (int64_t k = 0; ok && k < n; k++) hash = rig__hash(hash, (uint32_t)uids[first + k]);
        run->key[i] = hash;
    }
    free(uids);
    if (space >= 0) H5Sclose(space);
    if (set >= 0) H5Dclose(set);
    return ok;
}

/* Reads /steps into `run`. Returns false when the dataset is missing or unreadable. */
static bool rig__read_steps(hid_t file, struct rig_compare_run *run)
{
    if (H5Lexists(file, "steps", H5P_DEFAULT) <= 0) return false;
    hid_t set = H5Dopen2(file, "steps", H5P_DEFAULT);
    hid_t space = set >= 0 ? H5Dget_space(set) : -1;
    hssize_t count = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    bool ok = count >= 0 && count < (hssize_t)1 << 40;
    struct rig__step_fields *rows = ok ? calloc((size_t)count + 1, sizeof *rows) : NULL;
    hid_t file_type = set >= 0 ? H5Dget_type(set) : -1;
    bool host = file_type >= 0 && H5Tget_class(file_type) == H5T_COMPOUND &&
                H5Tget_member_index(file_type, "host_launch") >= 0 &&
                H5Tget_member_index(file_type, "host_process") >= 0;
    bool parts = host;
    for (int32_t k = 0; parts && k < 3; k++)
        parts = H5Tget_member_index(file_type, rig__host_parts[k]) >= 0;
    bool loop = host && H5Tget_member_index(file_type, "host_loop") >= 0;
    if (file_type >= 0) H5Tclose(file_type);
    hid_t type = rig__step_memory_type(host, parts, loop);
    ok = ok && rows != NULL && rig__alloc_steps(run, (int64_t)count);
    if (ok && count > 0) ok = H5Dread(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0;
    for (hssize_t i = 0; ok && i < count; i++) {
        run->phase[i] = rows[i].phase;
        run->batch[i] = rows[i].batch_size;
        run->tokens[i] = rows[i].tokens;
        run->start_s[i] = rows[i].start;
        run->duration_s[i] = rows[i].duration;
        run->host_launch_s[i] = host ? rows[i].host_launch : NAN;
        run->host_process_s[i] = host ? rows[i].host_process : NAN;
        for (int32_t k = 0; k < 3; k++)
            run->host_part_s[k][i] = parts ? rows[i].host_part[k] : NAN;
        run->host_loop_s[i] = loop ? rows[i].host_loop : NAN;
    }
    ok = ok && rig__read_keys(file, rows, run);
    H5Tclose(type);
    free(rows);
    if (space >= 0) H5Sclose(space);
    if (set >= 0) H5Dclose(set);
    return ok;
}

/* Reads every /summary/<metric> into run->metrics. False when one is missing. */
static bool rig__read_summary(hid_t file, struct rig_compare_run *run)
{
    double *values = (double *)&run->metrics;
    char name[96];
    for (int32_t i = 0; rig_metric_names[i].name != NULL; i++) {
        snprintf(name, sizeof name, "summary/%s", rig_metric_names[i].name);
        if (H5Lexists(file, "summary", H5P_DEFAULT) <= 0 ||
            H5Lexists(file, name, H5P_DEFAULT) <= 0)
            return false;
        hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
        bool ok = set >= 0 &&
                  H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &values[i]) >= 0;
        if (set >= 0) H5Dclose(set);
        if (!ok) return false;
    }
    return true;
}

enum rig_status rig_compare_read(const char *path, struct rig_compare_run *run, char *error,
                                 size_t error_len)
{
    RIG_ASSERT(path != NULL && run != NULL);
    memset(run, 0, sizeof *run);
    snprintf(run->path, sizeof run->path, "%s", path);
    H5E_auto2_t saved_func;
    void *saved_data;
    H5Eget_auto2(H5E_DEFAULT, &saved_func, &saved_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    enum rig_status status = RIG_OK;
    hid_t file = H5Fis_hdf5(path) > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
    if (file < 0) {
        status = rig__fail(error, error_len, RIG_E_IO, path, "cannot open it as an HDF5 file");
    } else {
        char format[32];
        rig__read_attr(file, "format", format, sizeof format);
        rig__read_attr(file, "backend", run->backend, sizeof run->backend);
        rig__read_attr(file, "device", run->device, sizeof run->device);
        if (strcmp(format, "rig-results") != 0)
            status = rig__fail(error, error_len, RIG_E_PARSE, path, "not a rig results file");
        else if (!rig__read_steps(file, run))
            status = rig__fail(error, error_len, RIG_E_PARSE, path, "cannot read /steps");
        else if (!rig__read_summary(file, run))
            status = rig__fail(error, error_len, RIG_E_PARSE, path, "cannot read /summary");
        H5Fclose(file);
    }
    H5Eset_auto2(H5E_DEFAULT, saved_func, saved_data);
    if (status != RIG_OK) rig_compare_run_free(run);
    return status;
}

void rig_compare_run_free(struct rig_compare_run *run)
{
    if (run == NULL) return;
    free(run->phase);
    free(run->batch);
    free(run->tokens);
    free(run->start_s);
    free(run->duration_s);
    free(run->host_launch_s);
    free(run->host_process_s);
    for (int32_t k = 0; k < 3; k++) free(run->host_part_s[k]);
    free(run->host_loop_s);
    free(run->key);
    char path[sizeof run->path];
    memcpy(path, run->path, sizeof path);
    memset(run, 0, sizeof *run);
    memcpy(run->path, path, sizeof path);
}

double rig_compare_idle(const struct rig_compare_run *run)
{
    RIG_ASSERT(run != NULL);
    if (run->step_count == 0) return 0.0;
    double busy = 0.0, first = run->start_s[0], last = first;
    for (int64_t i = 0; i < run->step_count; i++) {
        busy += run->duration_s[i];
        double end = run->start_s[i] + run->duration_s[i];
        if (end > last) last = end;
        if (run->start_s[i] < first) first = run->start_s[i];
    }
    double span = last - first;
    return span > 0.0 ? 1.0 - busy / span : 0.0;
}

/* Whether step `index` of `run` belongs to group `g` (0..2 phases, 3 all, then buckets). */
static bool rig__in_group(const struct rig_compare_run *run, int64_t index, int32_t g)
{
    if (g < 3) return run->phase[index] == g;
    if (g == 3) return true;
    return rig__bucket(run->batch[index]) == g - 4;
}

/* Median of the durations of `run`'s steps in group `g`; `scratch` holds step_count. */
static double rig__group_median(const struct rig_compare_run *run, int32_t g, double *scratch,
                                int64_t *count)
{
    int64_t n = 0;
    for (int64_t i = 0; i < run->step_count; i++)
        if (rig__in_group(run, i, g)) scratch[n++] = run->duration_s[i];
    *count = n;
    struct rig_metric_stats stats;
    rig_metrics_stats(scratch, n, &stats);
    return stats.median;
}

/* Errors of the pairs (pair_m[i], pair_p[i]) in group `g` and both runs' group medians. */
static void rig__group(const struct rig_compare_run *m, const struct rig_compare_run *p,
                       const int64_t *pair_m, const int64_t *pair_p, int64_t pairs, int32_t g,
                       double *scratch, struct rig_compare_group *out)
{
    memset(out, 0, sizeof *out);
    static const char *const fixed[4] = {"prefill", "decode", "mixed", "all"};
    snprintf(out->label, sizeof out->label, "%s", g < 4 ? fixed[g] : rig__bucket_names[g - 4]);
    double sum = 0.0;
    int64_t n = 0;
    for (int64_t i = 0; i < pairs; i++) {
        int64_t a = pair_m[i], b = pair_p[i];
        if (!rig__in_group(m, a, g) || !(m->duration_s[a] > 0.0)) continue;
        double error = (p->duration_s[b] - m->duration_s[a]) / m->duration_s[a];
        sum += error;
        scratch[n++] = fabs(error);
    }
    out->pairs = n;
    out->mean_signed = n > 0 ? sum / (double)n : 0.0;
    struct rig_metric_stats stats;
    rig_metrics_stats(scratch, n, &stats);
    out->median_abs = stats.median;
    out->p90_abs = stats.p90;
    out->measured_median_s = rig__group_median(m, g, scratch, &out->measured_steps);
    out->predicted_median_s = rig__group_median(p, g, scratch, &out->predicted_steps);
}

/* Median of values[i] over `run`'s steps of phase `phase` (NaN values and, for gaps, the
 * first step skipped); `which` 0 launch, 1 process, 2 the device gap before the step, 3 + k
 * host_launch's part k (schedule, prepare, issue), 6 the host between the latest processing
 * and the step's launch. NaN when none is left. `scratch` holds step_count. */
static double rig__host_median(const struct rig_compare_run *run, int32_t phase, int32_t which,
                               double *scratch)
{
    int64_t n = 0;
    for (int64_t i = 0; i < run->step_count; i++) {
        if (run->phase[i] != phase) continue;
        double v = which == 0   ? run->host_launch_s[i]
                   : which == 1 ? run->host_process_s[i]
                   : which == 6 ? run->host_loop_s[i]
                   : which >= 3 ? run->host_part_s[which - 3][i]
                                : NAN;
        if (which == 2)
            v = i > 0 ? run->start_s[i] - (run->start_s[i - 1] + run->duration_s[i - 1]) : NAN;
        if (!isnan(v)) scratch[n++] = v;
    }
    if (n == 0) return NAN;
    struct rig_metric_stats stats;
    rig_metrics_stats(scratch, n, &stats);
    return stats.median;
}

static void rig__host(const struct rig_compare_run *m, const struct rig_compare_run *p,
                      double *scratch, struct rig_compare_report *r)
{
    static const char *const phases[3] = {"prefill", "decode", "mixed"};
    for (int32_t g = 0; g < 3; g++) {
        struct rig_compare_host *h = &r->host[g];
        snprintf(h->label, sizeof h->label, "%s", phases[g]);
        const struct rig_compare_run *runs[2] = {m, p};
        for (int32_t k = 0; k < 2; k++) {
            h->launch_s[k] = rig__host_median(runs[k], g, 0, scratch);
            h->process_s[k] = rig__host_median(runs[k], g, 1, scratch);
            h->gap_s[k] = rig__host_median(runs[k], g, 2, scratch);
            for (int32_t part = 0; part < 3; part++)
                h->part_s[part][k] = rig__host_median(runs[k], g, 3 + part, scratch);
            h->loop_s[k] = rig__host_median(runs[k], g, 6, scratch);
        }
    }
}

/* (key, index) of a predicted step, sorted by key then index. */
struct rig__keyed {
    uint64_t key;
    int64_t index;
};

static int rig__keyed_order(const void *a, const void *b)
{
    const struct rig__keyed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Pairs every measured step with the first unused predicted step of the same key; returns
 * the number of pairs written to pair_m / pair_p (in measured step order). `sorted` holds
 * predicted->step_count entries. */
static int64_t rig__pair(const struct rig_compare_run *m, const struct rig_compare_run *p,
                         struct rig__keyed *sorted, int64_t *pair_m, int64_t *pair_p)
{
    int64_t n = p->step_count, pairs = 0;
    for (int64_t i = 0; i < n; i++) sorted[i] = (struct rig__keyed){p->key[i], i};
    qsort(sorted, (size_t)n, sizeof *sorted, rig__keyed_order);
    for (int64_t i = 0; i < m->step_count; i++) {
        int64_t lo = 0, hi = n; /* first entry with key >= m->key[i] */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (sorted[mid].key < m->key[i]) lo = mid + 1;
            else hi = mid;
        }
        for (; lo < n && sorted[lo].key == m->key[i]; lo++) {
            if (sorted[lo].index < 0) continue; /* used */
            pair_m[pairs] = i;
            pair_p[pairs++] = sorted[lo].index;
            sorted[lo].index = -1;
            break;
        }
    }
    return pairs;
}

static void rig__metric(struct rig_compare_report *r, const char *name, double measured,
                        double predicted)
{
    RIG_ASSERT(r->metric_count < RIG_COMPARE_METRICS);
    struct rig_compare_metric *row = &r->metrics[r->metric_count++];
    snprintf(row->name, sizeof row->name, "%s", name);
    row->measured = measured;
    row->predicted = predicted;
    row->error = measured != 0.0 ? (predicted - measured) / measured : NAN;
}

enum rig_status rig_compare_runs(const struct rig_compare_run *measured,
                                 const struct rig_compare_run *predicted,
                                 struct rig_compare_report *report)
{
    RIG_ASSERT(measured != NULL && predicted != NULL && report != NULL);
    memset(report, 0, sizeof *report);
    size_t most = (size_t)(measured->step_count > predicted->step_count
                               ? measured->step_count
                               : predicted->step_count) + 1;
    double *scratch = malloc(most * sizeof *scratch);
    struct rig__keyed *sorted = malloc(most * sizeof *sorted);
    int64_t *pair_m = malloc(most * sizeof *pair_m), *pair_p = malloc(most * sizeof *pair_p);
    if (scratch == NULL || sorted == NULL || pair_m == NULL || pair_p == NULL) {
        free(scratch), free(sorted), free(pair_m), free(pair_p);
        return RIG_E_NO_MEMORY;
    }
    report->measured_steps = measured->step_count;
    report->predicted_steps = predicted->step_count;
    int64_t both = measured->step_count < predicted->step_count ? measured->step_count
                                                                 : predicted->step_count;
    int64_t same = 0;
    while (same < both && measured->key[same] == predicted->key[same]) same++;
    bool identical = same == measured->step_count && same == predicted->step_count;
    report->first_mismatch = identical ? -1 : same;
    report->paired = rig__pair(measured, predicted, sorted, pair_m, pair_p);
    for (int32_t g = 0; g < RIG_COMPARE_GROUPS; g++)
        rig__group(measured, predicted, pair_m, pair_p, report->paired, g, scratch,
                   &report->groups[g]);
    report->group_count = RIG_COMPARE_GROUPS;
    rig__host(measured, predicted, scratch, report);
    free(scratch), free(sorted), free(pair_m), free(pair_p);
    report->measured_idle = rig_compare_idle(measured);
    report->predicted_idle = rig_compare_idle(predicted);
    for (size_t i = 0; i < RIG_ARRAY_LEN(rig__metric_rows); i++) {
        int32_t index = rig_metrics_find(rig__metric_rows[i]);
        RIG_ASSERT(index >= 0);
        rig__metric(report, rig__metric_rows[i], rig_metrics_value(&measured->metrics, index),
                    rig_metrics_value(&predicted->metrics, index));
    }
    rig__metric(report, "idle_fraction", report->measured_idle, report->predicted_idle);
    rig__metric(report, "steps", (double)measured->step_count, (double)predicted->step_count);
    return RIG_OK;
}

static void rig__print_groups(const struct rig_compare_report *r, FILE *out)
{
    fprintf(out, "%-14s %7s %9s %9s %9s | %7s %11s %7s %11s %8s\n", "steps", "pairs",
            "med|err|", "p90|err|", "mean err", "n meas", "median meas", "n pred",
            "median pred", "error");
    for (int32_t g = 0; g < r->group_count; g++) {
        const struct rig_compare_group *x = &r->groups[g];
        if (x->measured_steps == 0 && x->predicted_steps == 0) continue;
        double error = x->measured_median_s > 0
                           ? (x->predicted_median_s - x->measured_median_s) / x->measured_median_s
                           : NAN;
        fprintf(out,
                "%-14s %7lld %8.1f%% %8.1f%% %+8.1f%% | %7lld %9.3f ms %7lld %9.3f ms %+7.1f%%\n",
                x->label, (long long)x->pairs, 100 * x->median_abs, 100 * x->p90_abs,
                100 * x->mean_signed, (long long)x->measured_steps, 1e3 * x->measured_median_s,
                (long long)x->predicted_steps, 1e3 * x->predicted_median_s, 100 * error);
    }
}

/* Host time per phase, in microseconds; phases neither run has are left out. */
static void rig__print_host(const struct rig_compare_report *r, FILE *out)
{
    fprintf(out, "\n%-14s %12s %12s %12s %12s %12s %12s\n", "host per step", "launch meas",
            "launch pred", "process meas", "process pred", "gap meas", "gap pred");
    for (int32_t g = 0; g < 3; g++) {
        const struct rig_compare_host *h = &r->host[g];
        if (isnan(h->gap_s[0]) && isnan(h->gap_s[1]) && isnan(h->launch_s[0]) &&
            isnan(h->launch_s[1]))
            continue;
        fprintf(out, "%-14s %9.1f us %9.1f us %9.1f us %9.1f us %9.1f us %9.1f us\n", h->label,
                1e6 * h->launch_s[0], 1e6 * h->launch_s[1], 1e6 * h->process_s[0],
                1e6 * h->process_s[1], 1e6 * h->gap_s[0], 1e6 * h->gap_s[1]);
    }
    bool parts = false; /* host_launch taken apart, where either file has the parts */
    for (int32_t g = 0; g < 3; g++)
        for (int32_t k = 0; k < 2; k++) parts = parts || !isnan(r->host[g].part_s[2][k]);
    if (!parts) return;
    fprintf(out, "\n%-14s %12s %12s %12s %12s %12s %12s %12s %12s\n", "host launch",
            "sched meas", "sched pred", "prepare meas", "prepare pred", "issue meas",
            "issue pred", "loop meas", "loop pred");
    for (int32_t g = 0; g < 3; g++) {
        const struct rig_compare_host *h = &r->host[g];
        if (isnan(h->part_s[2][0]) && isnan(h->part_s[2][1])) continue;
        fprintf(out,
                "%-14s %9.1f us %9.1f us %9.1f us %9.1f us %9.1f us %9.1f us %9.1f us %9.1f us\n",
                h->label, 1e6 * h->part_s[0][0], 1e6 * h->part_s[0][1], 1e6 * h->part_s[1][0],
                1e6 * h->part_s[1][1], 1e6 * h->part_s[2][0], 1e6 * h->part_s[2][1],
                1e6 * h->loop_s[0], 1e6 * h->loop_s[1]);
    }
}

void rig_compare_print(const struct rig_compare_run *measured,
                       const struct rig_compare_run *predicted,
                       const struct rig_compare_report *report, FILE *out)
{
    RIG_ASSERT(measured != NULL && predicted != NULL && report != NULL && out != NULL);
    fprintf(out, "measured:  %s (%s, %s)\npredicted: %s (%s, %s)\n", measured->path,
            measured->backend, measured->device, predicted->path, predicted->backend,
            predicted->device);
    fprintf(out, "steps: %lld measured, %lld predicted, %lld paired by their requests",
            (long long)report->measured_steps, (long long)report->predicted_steps,
            (long long)report->paired);
    if (report->first_mismatch >= 0)
        fprintf(out, " (schedules part at step %lld)", (long long)report->first_mismatch);
    fprintf(out, "\n\n");
    rig__print_groups(report, out);
    rig__print_host(report, out);
    fprintf(out, "\n%-20s %14s %14s %9s\n", "metric", "measured", "predicted", "error");
    for (int32_t i = 0; i < report->metric_count; i++) {
        const struct rig_compare_metric *m = &report->metrics[i];
        int32_t index = rig_metrics_find(m->name);
        bool time = index >= 0 && rig_metric_names[index].is_time;
        double scale = time ? 1e3 : 1.0;
        const char *unit = time ? "ms" : "";
        fprintf(out, "%-20s %11.3f %-2s %11.3f %-2s %+8.1f%%\n", m->name, scale * m->measured,
                unit, scale * m->predicted, unit, 100 * m->error);
    }
}
