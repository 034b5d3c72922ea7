/* h5.c — the HDF5 results writer (see h5.h and docs/results.md). */
#include "core/harness/results/h5.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/version.h"

/* One row of /requests as laid out in memory (and, packed, in the file). */
struct rig__request_row {
    int64_t uid;
    char id[RIG_RESULTS_ID_MAX];
    double arrival, first_scheduled, first_token, finish, ttft, e2e;
    int32_t input_len, cached_len, output_len, finish_reason;
    int64_t first_step, finish_step, token_offset;
};

struct rig__step_row {
    int64_t index;
    int32_t phase, batch_size, tokens, padded_size, graph_used, request_count;
    double start, end, duration;
    int64_t pages_free, pages_evictable, pages_locked, pages_used, request_offset;
    double host_launch, host_process, host_schedule, host_prepare, host_issue, host_loop;
};

/* Rows of /fleet/routes and /fleet/replicas (a fleet run only). */
struct rig__route_row {
    int64_t uid;
    int32_t replica, matched, load;
};

struct rig__replica_row {
    int64_t index, requests, input_tokens, cached_tokens, output_tokens, steps;
    double cache_hit_rate, busy;
    int64_t peak_load, invariant_violations, pages_leaked;
};

/* The file being written and the first error. */
struct rig__writer {
    hid_t file;
    hid_t dcpl; /* dataset creation: no timestamps */
    hid_t gcpl; /* group creation: no timestamps */
    hid_t string_type; /* variable-length UTF-8 */
    const char *path;
    char *error;
    size_t error_len;
    bool failed;
};

static void rig__fail(struct rig__writer *w, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static void rig__fail(struct rig__writer *w, const char *format, ...)
{
    if (w->failed) return;
    w->failed = true;
    char what[256];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    if (w->error != NULL && w->error_len > 0)
        snprintf(w->error, w->error_len, "%s: cannot write %s", w->path, what);
}

static double rig__seconds(int64_t ns)
{
    return ns < 0 ? NAN : (double)ns * 1e-9;
}

static void rig__attr_string(struct rig__writer *w, hid_t object, const char *name,
                             const char *value)
{
    if (w->failed) return;
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(object, name, w->string_type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, w->string_type, &value) < 0)
        rig__fail(w, "attribute %s", name);
    if (attr >= 0) H5Aclose(attr);
    H5Sclose(space);
}

static void rig__attr_number(struct rig__writer *w, hid_t object, const char *name,
                             hid_t type, const void *value)
{
    if (w->failed) return;
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, type, value) < 0) rig__fail(w, "attribute %s", name);
    if (attr >= 0) H5Aclose(attr);
    H5Sclose(space);
}

static void rig__attr_i64(struct rig__writer *w, hid_t object, const char *name, int64_t v)
{
    rig__attr_number(w, object, name, H5T_NATIVE_INT64, &v);
}

/* Writes a 1-D dataset of `count` elements of `memory_type` (stored as `file_type`). */
static hid_t rig__dataset(struct rig__writer *w, hid_t parent, const char *name,
                          hid_t memory_type, hid_t file_type, int64_t count, const void *data)
{
    if (w->failed) return -1;
    hsize_t dims[1] = {(hsize_t)count};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t set = H5Dcreate2(parent, name, file_type, space, H5P_DEFAULT, w->dcpl, H5P_DEFAULT);
    if (set < 0 || (count > 0 && H5Dwrite(set, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                          data) < 0))
        rig__fail(w, "dataset %s", name);
    H5Sclose(space);
    return set;
}

static hid_t rig__enum(const char *const *names, int32_t count)
{
    hid_t type = H5Tenum_create(H5T_NATIVE_INT32);
    for (int32_t i = 0; i < count; i++) H5Tenum_insert(type, names[i], &i);
    return type;
}

static void rig__write_meta(struct rig__writer *w, const struct rig_results *r)
{
    const struct rig_results_meta *m = &r->meta;
    hid_t root = w->file;
    rig__attr_string(w, root, "format", "rig-results");
    rig__attr_i64(w, root, "format_version", RIG_RESULTS_FORMAT_VERSION);
    rig__attr_string(w, root, "rig_version", rig_version_string);
    /* RIG_RESULTS_GIT_COMMIT replaces the build's commit, so that files written by two
     * commits can be compared byte for byte (tests/scenario_hashes.sh). */
    const char *commit = getenv("RIG_RESULTS_GIT_COMMIT");
    rig__attr_string(w, root, "git_commit", commit != NULL ? commit : rig_git_commit);
    rig__attr_string(w, root, "backend", m->backend);
    rig__attr_string(w, root, "clock", strcmp(m->backend, "sim") == 0 ? "virtual" : "wall");
    rig__attr_string(w, root, "device", m->device);
    rig__attr_string(w, root, "model", m->model);
    rig__attr_string(w, root, "scenario", m->scenario);
    rig__attr_string(w, root, "scenario_sha256", m->scenario_sha256);
    rig__attr_string(w, root, "policy", m->policy);
    rig__attr_string(w, root, "decode_order", m->decode_order);
    rig__attr_string(w, root, "cache", m->cache);
    rig__attr_string(w, root, "time_units", "s");
    rig__attr_number(w, root, "seed", H5T_NATIVE_UINT64, &m->seed);
    rig__attr_i64(w, root, "tp_size", m->tp_size);
    rig__attr_i64(w, root, "page_size", m->page_size);
    rig__attr_i64(w, root, "num_pages", m->num_pages);
    rig__attr_i64(w, root, "max_running_req", m->max_running_req);
    rig__attr_i64(w, root, "prefill_budget", m->prefill_budget);
    rig__attr_i64(w, root, "overlap", m->overlap);
    rig__attr_i64(w, root, "timing_only", m->timing_only);
    rig__attr_i64(w, root, "pages_total", r->pages_total);
    rig__attr_i64(w, root, "pages_leaked", r->pages_leaked);
    rig__attr_i64(w, root, "invariant_violations", r->invariant_violations);
    rig__attr_i64(w, root, "cache_hit_tokens", r->cache_hit_tokens);
}

static hid_t rig__request_type(hid_t reason_type)
{
    hid_t id_type = H5Tcopy(H5T_C_S1);
    H5Tset_size(id_type, RIG_RESULTS_ID_MAX);
    H5Tset_strpad(id_type, H5T_STR_NULLTERM);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct rig__request_row));
#define RIG__FIELD(name, type) H5Tinsert(t, #name, HOFFSET(struct rig__request_row, name), type)
    RIG__FIELD(uid, H5T_NATIVE_INT64);
    RIG__FIELD(id, id_type);
    RIG__FIELD(arrival, H5T_NATIVE_DOUBLE);
    RIG__FIELD(first_scheduled, H5T_NATIVE_DOUBLE);
    RIG__FIELD(first_token, H5T_NATIVE_DOUBLE);
    RIG__FIELD(finish, H5T_NATIVE_DOUBLE);
    RIG__FIELD(ttft, H5T_NATIVE_DOUBLE);
    RIG__FIELD(e2e, H5T_NATIVE_DOUBLE);
    RIG__FIELD(input_len, H5T_NATIVE_INT32);
    RIG__FIELD(cached_len, H5T_NATIVE_INT32);
    RIG__FIELD(output_len, H5T_NATIVE_INT32);
    RIG__FIELD(finish_reason, reason_type);
    RIG__FIELD(first_step, H5T_NATIVE_INT64);
    RIG__FIELD(finish_step, H5T_NATIVE_INT64);
    RIG__FIELD(token_offset, H5T_NATIVE_INT64);
#undef RIG__FIELD
    H5Tclose(id_type);
    return t;
}

static void rig__request_row(const struct rig_results_request *q, struct rig__request_row *row)
{
    memset(row, 0, sizeof *row); /* padding and the id's tail are written too */
    row->uid = q->uid;
    snprintf(row->id, sizeof row->id, "%s", q->id);
    row->arrival = rig__seconds(q->arrival_ns);
    row->first_scheduled = rig__seconds(q->first_scheduled_ns);
    row->first_token = rig__seconds(q->first_token_ns);
    row->finish = rig__seconds(q->finish_ns);
    row->ttft = q->first_token_ns < 0 ? NAN : rig__seconds(q->first_token_ns - q->arrival_ns);
    row->e2e = q->finish_ns < 0 ? NAN : rig__seconds(q->finish_ns - q->arrival_ns);
    row->input_len = q->input_len;
    row->cached_len = q->cached_len;
    row->output_len = q->output_len;
    row->finish_reason = q->finish_reason;
    row->first_step = q->first_step;
    row->finish_step = q->finish_step;
    row->token_offset = q->token_offset;
}

static void rig__write_requests(struct rig__writer *w, const struct rig_results *r)
{
    static const char *const reasons[RIG_FINISH_COUNT] = {"none", "length", "stop", "abort",
                                                          "rejected"};
    if (w->failed) return;
    struct rig__request_row *rows = calloc((size_t)r->request_count + 1, sizeof *rows);
    if (rows == NULL) {
        rig__fail(w, "/requests (out of memory)");
        return;
    }
    for (int64_t i = 0; i < r->request_count; i++) rig__request_row(&r->requests[i], &rows[i]);
    hid_t reason_type = rig__enum(reasons, RIG_FINISH_COUNT);
    hid_t type = rig__request_type(reason_type);
    hid_t packed = H5Tcopy(type);
    H5Tpack(packed);
    hid_t set = rig__dataset(w, w->file, "requests", type, packed, r->request_count, rows);
    rig__attr_string(w, set, "units", "times in s (arrival, first_scheduled, first_token, "
                                      "finish, ttft, e2e; NaN = never); lengths in tokens");
    if (set >= 0) H5Dclose(set);
    H5Tclose(packed);
    H5Tclose(type);
    H5Tclose(reason_type);
    free(rows);
}

static hid_t rig__step_type(hid_t phase_type)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct rig__step_row));
#define RIG__FIELD(name, type) H5Tinsert(t, #name, HOFFSET(struct rig__step_row, name), type)
    RIG__FIELD(index, H5T_NATIVE_INT64);
    RIG__FIELD(phase, phase_type);
    RIG__FIELD(batch_size, H5T_NATIVE_INT32);
    RIG__FIELD(tokens, H5T_NATIVE_INT32);
    RIG__FIELD(padded_size, H5T_NATIVE_INT32);
    RIG__FIELD(graph_used, H5T_NATIVE_INT32);
    RIG__FIELD(request_count, H5T_NATIVE_INT32);
    RIG__FIELD(start, H5T_NATIVE_DOUBLE);
    RIG__FIELD(end, H5T_NATIVE_DOUBLE);
    RIG__FIELD(duration, H5T_NATIVE_DOUBLE);
    RIG__FIELD(pages_free, H5T_NATIVE_INT64);
    RIG__FIELD(pages_evictable, H5T_NATIVE_INT64);
    RIG__FIELD(pages_locked, H5T_NATIVE_INT64);
    RIG__FIELD(pages_used, H5T_NATIVE_INT64);
    RIG__FIELD(request_offset, H5T_NATIVE_INT64);
    RIG__FIELD(host_launch, H5T_NATIVE_DOUBLE);
    RIG__FIELD(host_process, H5T_NATIVE_DOUBLE);
    RIG__FIELD(host_schedule, H5T_NATIVE_DOUBLE);
    RIG__FIELD(host_prepare, H5T_NATIVE_DOUBLE);
    RIG__FIELD(host_issue, H5T_NATIVE_DOUBLE);
    RIG__FIELD(host_loop, H5T_NATIVE_DOUBLE);
#undef RIG__FIELD
    return t;
}

static void rig__write_steps(struct rig__writer *w, const struct rig_results *r)
{
    static const char *const phases[] = {"prefill", "decode", "mixed"};
    if (w->failed) return;
    struct rig__step_row *rows = calloc((size_t)r->step_count + 1, sizeof *rows);
    if (rows == NULL) {
        rig__fail(w, "/steps (out of memory)");
        return;
    }
    for (int64_t i = 0; i < r->step_count; i++) {
        const struct rig_results_step *s = &r->steps[i];
        struct rig__step_row *row = &rows[i];
        *row = (struct rig__step_row){i, s->phase, s->batch_size, s->tokens, s->padded_size,
                                      s->graph_used, s->request_count, rig__seconds(s->start_ns),
                                      rig__seconds(s->end_ns),
                                      rig__seconds(s->end_ns - s->start_ns), s->pages_free,
                                      s->pages_evictable, s->pages_locked, s->pages_used,
                                      s->request_offset, rig__seconds(s->host_launch_ns),
                                      rig__seconds(s->host_process_ns),
                                      rig__seconds(s->host_schedule_ns),
                                      rig__seconds(s->host_prepare_ns),
                                      rig__seconds(s->host_issue_ns),
                                      rig__seconds(s->host_loop_ns)};
    }
    hid_t phase_type = rig__enum(phases, 3);
    hid_t type = rig__step_type(phase_type);
    hid_t packed = H5Tcopy(type);
    H5Tpack(packed);
    hid_t set = rig__dataset(w, w->file, "steps", type, packed, r->step_count, rows);
    rig__attr_string(w, set, "units", "start, end, duration in s on the device timeline; "
                                      "pages_* in KV pages; tokens in tokens; host_launch, "
                                      "host_process: host CPU time in s; host_schedule, "
                                      "host_prepare, host_issue: parts of host_launch in s "
                                      "(the rest: waiting for the slot's staging block); "
                                      "host_loop: host time in s from the latest processing's "
                                      "end to the step's launch");
    if (set >= 0) H5Dclose(set);
    set = rig__dataset(w, w->file, "step_requests", H5T_NATIVE_INT32, H5T_STD_I32LE,
                       r->step_uid_count, r->step_uids);
    rig__attr_string(w, set, "description", "uids each step ran, in batch order: rows "
                                            "[request_offset, request_offset + request_count) "
                                            "of /steps");
    if (set >= 0) H5Dclose(set);
    H5Tclose(packed);
    H5Tclose(type);
    H5Tclose(phase_type);
    free(rows);
}

static void rig__write_tokens(struct rig__writer *w, const struct rig_results *r)
{
    if (w->failed) return;
    double *times = malloc(((size_t)r->token_count + 1) * sizeof *times);
    if (times == NULL) {
        rig__fail(w, "/tokens (out of memory)");
        return;
    }
    for (int64_t i = 0; i < r->token_count; i++) times[i] = rig__seconds(r->token_time_ns[i]);
    hid_t group = H5Gcreate2(w->file, "tokens", H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
    if (group < 0) rig__fail(w, "group /tokens");
    rig__attr_string(w, group, "description",
                     "every output token; request i owns rows [token_offset, token_offset + "
                     "output_len) of /requests");
    hid_t set = rig__dataset(w, group, "time", H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE,
                             r->token_count, times);
    rig__attr_string(w, set, "units", "s");
    if (set >= 0) H5Dclose(set);
    set = rig__dataset(w, group, "token_id", H5T_NATIVE_INT32, H5T_STD_I32LE, r->token_count,
                       r->token_ids);
    if (set >= 0) H5Dclose(set);
    if (group >= 0) H5Gclose(group);
    free(times);
}

static void rig__write_summary(struct rig__writer *w, const struct rig_metrics *m)
{
    if (w->failed) return;
    hid_t group = H5Gcreate2(w->file, "summary", H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
    if (group < 0) rig__fail(w, "group /summary");
    rig__attr_string(w, group, "definitions", "sglang.bench_serving: TTFT = first token - "
                                              "arrival; E2E = finish - arrival; TPOT = (E2E - "
                                              "TTFT) / (output_len - 1); ITL = gaps between "
                                              "tokens; over completed requests");
    for (int32_t i = 0; rig_metric_names[i].name != NULL && !w->failed; i++) {
        double value = rig_metrics_value(m, i);
        hid_t space = H5Screate(H5S_SCALAR);
        hid_t set = H5Dcreate2(group, rig_metric_names[i].name, H5T_IEEE_F64LE, space,
                               H5P_DEFAULT, w->dcpl, H5P_DEFAULT);
        if (set < 0 || H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                &value) < 0)
            rig__fail(w, "/summary/%s", rig_metric_names[i].name);
        rig__attr_string(w, set, "units", rig_metric_names[i].units);
        if (set >= 0) H5Dclose(set);
        H5Sclose(space);
    }
    if (group >= 0) H5Gclose(group);
}

/* Writes a compound dataset `name` under `group` from `rows`, packed in the file. */
static void rig__write_table(struct rig__writer *w, hid_t group, const char *name, hid_t type,
                             int64_t count, const void *rows, const char *units)
{
    hid_t packed = H5Tcopy(type);
    H5Tpack(packed);
    hid_t set = rig__dataset(w, group, name, type, packed, count, rows);
    rig__attr_string(w, set, "units", units);
    if (set >= 0) H5Dclose(set);
    H5Tclose(packed);
    H5Tclose(type);
}

static void rig__write_routes(struct rig__writer *w, hid_t group, const struct rig_results *r)
{
    struct rig__route_row *rows = calloc((size_t)r->request_count + 1, sizeof *rows);
    if (rows == NULL) {
        rig__fail(w, "/fleet/routes (out of memory)");
        return;
    }
    for (int64_t i = 0; i < r->request_count; i++)
        rows[i] = (struct rig__route_row){i, r->fleet->routes[i].replica,
                                          r->fleet->routes[i].matched, r->fleet->routes[i].load};
    hid_t type = H5Tcreate(H5T_COMPOUND, sizeof(struct rig__route_row));
    H5Tinsert(type, "uid", HOFFSET(struct rig__route_row, uid), H5T_NATIVE_INT64);
    H5Tinsert(type, "replica", HOFFSET(struct rig__route_row, replica), H5T_NATIVE_INT32);
    H5Tinsert(type, "matched", HOFFSET(struct rig__route_row, matched), H5T_NATIVE_INT32);
    H5Tinsert(type, "load", HOFFSET(struct rig__route_row, load), H5T_NATIVE_INT32);
    rig__write_table(w, group, "routes", type, r->request_count, rows,
                     "replica: index; matched: prompt tokens; load: live requests");
    free(rows);
}

static void rig__write_replicas(struct rig__writer *w, hid_t group, const struct rig_results *r)
{
    struct rig__replica_row rows[RIG_RESULTS_REPLICAS_MAX];
    memset(rows, 0, sizeof rows);
    int32_t n = r->fleet->replica_count;
    for (int32_t i = 0; i < n; i++) {
        const struct rig_results_replica *p = &r->fleet->replicas[i];
        rows[i] = (struct rig__replica_row){
            i, p->requests, p->input_tokens, p->cached_tokens, p->output_tokens, p->steps,
            p->input_tokens > 0 ? (double)p->cached_tokens / (double)p->input_tokens : 0.0,
            rig__seconds(p->busy_ns), p->peak_load, p->invariant_violations, p->pages_leaked};
    }
    hid_t type = H5Tcreate(H5T_COMPOUND, sizeof(struct rig__replica_row));
#define RIG__COLUMN(name, h5) H5Tinsert(type, #name, HOFFSET(struct rig__replica_row, name), h5)
    RIG__COLUMN(index, H5T_NATIVE_INT64);
    RIG__COLUMN(requests, H5T_NATIVE_INT64);
    RIG__COLUMN(input_tokens, H5T_NATIVE_INT64);
    RIG__COLUMN(cached_tokens, H5T_NATIVE_INT64);
    RIG__COLUMN(cache_hit_rate, H5T_NATIVE_DOUBLE);
    RIG__COLUMN(output_tokens, H5T_NATIVE_INT64);
    RIG__COLUMN(steps, H5T_NATIVE_INT64);
    RIG__COLUMN(busy, H5T_NATIVE_DOUBLE);
    RIG__COLUMN(peak_load, H5T_NATIVE_INT64);
    RIG__COLUMN(invariant_violations, H5T_NATIVE_INT64);
    RIG__COLUMN(pages_leaked, H5T_NATIVE_INT64);
#undef RIG__COLUMN
    rig__write_table(w, group, "replicas", type, n, rows,
                     "busy in s (device time of its steps); tokens; cache_hit_rate = "
                     "cached_tokens / input_tokens");
}

/* /fleet: the router's decisions and each replica's totals; only for a fleet run. */
static void rig__write_fleet(struct rig__writer *w, const struct rig_results *r)
{
    if (w->failed || r->fleet == NULL) return;
    hid_t group = H5Gcreate2(w->file, "fleet", H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
    if (group < 0) rig__fail(w, "group /fleet");
    rig__attr_string(w, group, "router", r->fleet->router);
    rig__attr_i64(w, group, "replicas", r->fleet->replica_count);
    rig__attr_i64(w, group, "tp_size", r->fleet->tp_size);
    rig__attr_i64(w, group, "load_cap", r->fleet->load_cap);
    rig__attr_string(w, group, "description",
                     "routes: row i = request uid i (where the router sent it, the prefix it "
                     "believed cached there, that replica's load then); replicas: one row each");
    rig__write_routes(w, group, r);
    rig__write_replicas(w, group, r);
    if (group >= 0) H5Gclose(group);
}

/* Opens the file in memory (HDF5's core driver, no backing store) with fixed creation
 * properties and no timestamps on the root group. In memory: HDF5 never writes to the disk,
 * so a full disk cannot leave it holding a half-closed file (which crashed it at exit). */
static bool rig__open(struct rig__writer *w)
{
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_obj_track_times(fcpl, 0);
    H5Pset_fapl_core(fapl, (size_t)1 << 20, 0);
    /* The oldest format that holds everything: the same bytes from any HDF5 1.10+. */
    H5Pset_libver_bounds(fapl, H5F_LIBVER_EARLIEST, H5F_LIBVER_V18);
    w->file = H5Fcreate(w->path, H5F_ACC_TRUNC, fcpl, fapl);
    H5Pclose(fcpl);
    H5Pclose(fapl);
    w->dcpl = H5Pcreate(H5P_DATASET_CREATE);
    w->gcpl = H5Pcreate(H5P_GROUP_CREATE);
    H5Pset_obj_track_times(w->dcpl, 0);
    H5Pset_obj_track_times(w->gcpl, 0);
    w->string_type = H5Tcopy(H5T_C_S1);
    H5Tset_size(w->string_type, H5T_VARIABLE);
    H5Tset_cset(w->string_type, H5T_CSET_UTF8);
    if (w->file < 0) rig__fail(w, "the file (cannot create it)");
    return w->file >= 0;
}

/* Writes all of data to fd; false on a short or failed write (disk full: ENOSPC, EFBIG). */
static bool rig__write_all(int fd, const uint8_t *data, size_t size)
{
    for (size_t done = 0; done < size;) {
        ssize_t n = write(fd, data + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += (size_t)n;
    }
    return true;
}

/* Stores the file image at `path`. A regular file (or none) is replaced atomically: the
 * image goes to a temporary file beside it, renamed over the path once complete, so a
 * failure leaves no partial file there (and removes the temporary one). Anything else — a
 * device such as /dev/full, a pipe — is written in place and never removed. */
static bool rig__store(struct rig__writer *w, const uint8_t *image, size_t size)
{
    struct stat st;
    if (stat(w->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        int fd = open(w->path, O_WRONLY | O_TRUNC);
        bool ok = fd >= 0 && rig__write_all(fd, image, size);
        if ((fd >= 0 && close(fd) != 0) || !ok)
            rig__fail(w, "the file (%s)", strerror(errno));
        return !w->failed;
    }
    char temp[4096];
    if (snprintf(temp, sizeof temp, "%s.tmp-XXXXXX", w->path) >= (int)sizeof temp) {
        rig__fail(w, "the file (path too long)");
        return false;
    }
    int fd = mkstemp(temp);
    if (fd < 0) {
        rig__fail(w, "the file (cannot create a file beside it: %s)", strerror(errno));
        return false;
    }
    mode_t mask = umask(0); /* mkstemp makes 0600: give the file the usual permissions */
    umask(mask);
    bool ok = fchmod(fd, 0666 & ~mask) == 0 && rig__write_all(fd, image, size);
    int saved = errno;
    ok = close(fd) == 0 && ok;
    if (ok && rename(temp, w->path) == 0) return true;
    rig__fail(w, "the file (%s)", strerror(ok ? errno : saved));
    unlink(temp);
    return false;
}

/* Takes the in-memory file's image, closes the file and stores the image at the path. */
static void rig__finish(struct rig__writer *w)
{
    if (!w->failed && H5Fflush(w->file, H5F_SCOPE_GLOBAL) < 0) rig__fail(w, "the file (flush)");
    ssize_t size = w->failed ? -1 : H5Fget_file_image(w->file, NULL, 0);
    uint8_t *image = size > 0 ? malloc((size_t)size) : NULL;
    if (!w->failed && (image == NULL ||
                       H5Fget_file_image(w->file, image, (size_t)size) != size))
        rig__fail(w, "the file (out of memory for its %lld-byte image)", (long long)size);
    if (H5Fclose(w->file) < 0) rig__fail(w, "the file (closing it)"); /* in memory */
    w->file = -1;
    if (!w->failed) rig__store(w, image, (size_t)size);
    free(image);
}

enum rig_status rig_results_write_h5(const struct rig_results *results,
                                     const struct rig_metrics *metrics, const char *path,
                                     char *error, size_t error_len)
{
    RIG_ASSERT(results != NULL && metrics != NULL);
    RIG_ASSERT(path != NULL);
    struct rig__writer w = {.path = path, .error = error, .error_len = error_len};
    if (error != NULL && error_len > 0) error[0] = '\0';
    /* HDF5 prints its error stack by default; rig reports errors itself. */
    H5E_auto2_t saved_func;
    void *saved_data;
    H5Eget_auto2(H5E_DEFAULT, &saved_func, &saved_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (rig__open(&w)) {
        rig__write_meta(&w, results);
        rig__write_requests(&w, results);
        rig__write_steps(&w, results);
        rig__write_tokens(&w, results);
        rig__write_summary(&w, metrics);
        rig__write_fleet(&w, results);
        rig__finish(&w);
    }
    H5Tclose(w.string_type);
    H5Pclose(w.dcpl);
    H5Pclose(w.gcpl);
    H5Eset_auto2(H5E_DEFAULT, saved_func, saved_data);
    return w.failed ? RIG_E_IO : RIG_OK;
}
