/* serving.c — whole-engine benchmarks through the scenario runner (core/harness/scenario/run.h):
 * Mini-SGLang's offline benchmark and a Poisson rate sweep.
 *
 * Each run is a scenario built in memory — the same YAML a user would write, so
 * `rig run` reproduces any row — and replayed by rig_scenario_run; its full records go to
 * <out_dir>/<name>.h5 through the results writer of `rig run` (docs/results.md). The
 * engine settings follow scenarios/minisgl-offline-qwen3-0.6b.yaml: 256 running requests,
 * prefill budget 8192, context 2048, decode graphs up to batch 256. On the simulator the
 * runs are timing-only on the chosen profile.
 *
 * The offline floor (issue 8): every decode token of a request attends over its whole
 * context, so the run must read sum over requests of sum_{j=1}^{out-1} (in + j) KV slots,
 * and every decode step reads the weights once; prefill must do its model FLOPs. Floor =
 * (decode steps x weight bytes + KV bytes) / bandwidth + prefill FLOPs / GEMM rate.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/harness/bench/bench_impl.h"
#include "core/model/model.h"
#include "core/harness/results/h5.h"
#include "core/harness/scenario/run.h"
#include "core/harness/scenario/scenario.h"

#define RIG__YAML_MAX 2048

static const double rig__online_rates[] = {4.0, 8.0, 16.0, 32.0, 64.0};
#define RIG__ONLINE_REQUESTS 128
#define RIG__QUICK_REQUESTS  16

struct rig__progress {
    const struct rig_bench_options *options;
    const char *what;
};

static void rig__run_progress(void *user, int64_t steps, int32_t ended, int32_t total,
                              int64_t now_ns)
{
    (void)steps;
    (void)now_ns;
    const struct rig__progress *p = user;
    rig__bench_progress(p->options, p->what, ended, total);
}

/* KV pages of a serving run: 400,000 slots (40,000 --quick), or on CUDA as many as fit beside
 * one rank's weights in 90 % of the device's memory less 3 GiB of activations and workspace
 * (Qwen3-32B at TP 2 holds 33 GB of weights a GPU; 400,000 slots would take another 51 GB). */
static int64_t rig__serving_pages(const struct rig_bench_options *o,
                                  const struct rig_bench_report *report)
{
    int64_t pages = o->quick ? 40000 : 400000;
    struct rig_model_config c;
    if (strcmp(o->backend, "cuda") != 0 || report->device_memory_bytes <= 0 ||
        rig_model_config_preset(rig__bench_model(o), &c) != RIG_OK)
        return pages;
    double fit = rig_model_kv_slots_in(&c, o->tp, 0.9 * (double)report->device_memory_bytes -
                                                      3.0 * (double)(1 << 30));
    if (fit < (double)pages) pages = fit > 4096.0 ? (int64_t)fit : 4096;
    return pages;
}

/* The scenario text of one serving run: `workload` is a flow mapping. */
static void rig__scenario_text(const struct rig_bench_options *o, int64_t pages, const char *name,
                               bool overlap, const char *workload, char *text, size_t len)
{
    bool sim = strcmp(o->backend, "sim") == 0;
    char sim_section[RIG_SCENARIO_NAME_MAX + 64] = "";
    if (sim)
        snprintf(sim_section, sizeof sim_section, "sim: {profile: %s, timing_only: true}\n",
                 o->profile != NULL ? o->profile : "h100");
    snprintf(text, len,
             "name: %s\n"
             "model: {preset: %s}\n"
             "backend: %s\n"
             "%s"
             "engine: {num_pages: %lld, max_running_req: 256, prefill_budget: 8192,\n"
             "         max_seq_len: 2048, cuda_graph_max_bs: 256, overlap: %s,\n"
             "         tp_size: %d, collective_timeout: 120s}\n"
             "seed: 0\n"
             "workloads:\n"
             "  - %s\n",
             name, rig__bench_model(o), o->backend, sim_section, (long long)pages,
             overlap ? "true" : "false", (int)o->tp, workload);
}

/* KV bytes and decode weight bytes the run had to read, plus its prefill FLOPs; at TP N one
 * rank's share of each (every rank reads its weights and KV heads, and does 1/N of the FLOPs,
 * in parallel), the collectives counted as free. */
static double rig__offline_floor(const struct rig_bench_options *o,
                                 const struct rig_bench_floors *fl, const struct rig_results *r,
                                 int64_t decode_steps)
{
    struct rig_model_config c;
    RIG_ASSERT(rig_model_config_preset(rig__bench_model(o), &c) == RIG_OK);
    double slot = (double)rig_model_kv_bytes_per_slot(&c, o->tp), kv = 0.0, flops = 0.0;
    for (int64_t i = 0; i < r->request_count; i++) {
        const struct rig_results_request *q = &r->requests[i];
        if (q->output_len < 1) continue;
        double in = q->input_len, n = q->output_len - 1.0;
        kv += slot * (n * in + n * (n + 1.0) / 2.0);
        int32_t chunk = q->input_len - q->cached_len;
        if (chunk >= 1) flops += rig_bench_prefill_flops(rig__bench_model(o), chunk, q->cached_len);
    }
    double weights = (double)rig_model_weight_bytes(&c, o->tp) * (double)decode_steps;
    return (weights + kv) / fl->bandwidth + flops / o->tp / fl->gemm_flops;
}

/* Runs one scenario text, fills `row` from its records, writes its HDF5 file. */
static enum rig_status rig__serve(const struct rig_bench_options *o,
                                  struct rig_bench_report *report, const char *text,
                                  struct rig_bench_serving_row *row, char *error, size_t error_len)
{
    struct rig_scenario s;
    enum rig_status status =
        rig_scenario_load_string(text, row->name, NULL, 0, &s, error, error_len);
    if (status < 0) return status;
    struct rig__progress progress = {o, row->name};
    struct rig_run_options run = {.check = RIG_RUN_CHECK_END,
                                  .progress = rig__run_progress,
                                  .user = &progress,
                                  .progress_every = 16};
    struct rig_results results;
    status = rig_scenario_run(&s, &run, &results, error, error_len);
    if (status == RIG_OK) status = rig_metrics_compute(&results, &row->metrics);
    if (status == RIG_OK && (results.invariant_violations > 0 || results.pages_leaked > 0)) {
        snprintf(error, error_len, "%s: %lld invariant violations, %lld pages leaked", row->name,
                 (long long)results.invariant_violations, (long long)results.pages_leaked);
        status = RIG_E_STATE;
    }
    if (status == RIG_OK) {
        row->requests = s.request_count;
        row->steps = results.step_count;
        for (int64_t i = 0; i < results.step_count; i++)
            row->decode_steps += results.steps[i].phase == RIG_STEP_DECODE;
        row->idle_fraction = rig_bench_idle_fraction(&results);
        if (results.launches_behind_inflight > 0)
            row->ahead_fraction =
                (double)results.launches_ahead / (double)results.launches_behind_inflight;
        if (results.step_count > 0)
            row->launch_host_us = 1e-3 * (double)results.launch_host_ns /
                                  (double)results.step_count;
        if (isinf(row->rate)) {
            row->floor_s = rig__offline_floor(o, &report->floors, &results, row->decode_steps);
            row->floor_ratio = row->floor_s / row->metrics.duration_s;
        }
    }
    if (status == RIG_OK && o->out_dir != NULL) {
        char name[sizeof row->name];
        memcpy(name, row->name, sizeof name);
        snprintf(row->path, sizeof row->path, "%s/%s.h5", o->out_dir, name);
        status = rig_results_write_h5(&results, &row->metrics, row->path, error, error_len);
    }
    rig_results_free(&results);
    rig_scenario_free(&s);
    return status;
}

static enum rig_status rig__serve_row(const struct rig_bench_options *o,
                                      struct rig_bench_report *report, const char *name,
                                      double rate, bool overlap, const char *workload, char *error,
                                      size_t error_len)
{
    if (report->serving_count == RIG_BENCH_SERVING_MAX) {
        snprintf(error, error_len, "more than %d serving runs", RIG_BENCH_SERVING_MAX);
        return RIG_E_CAPACITY;
    }
    struct rig_bench_serving_row *row = &report->serving[report->serving_count];
    memset(row, 0, sizeof *row);
    snprintf(row->name, sizeof row->name, "%s", name);
    row->rate = rate;
    row->overlap = overlap;
    char text[RIG__YAML_MAX];
    rig__scenario_text(o, rig__serving_pages(o, report), name, overlap, workload, text,
                       sizeof text);
    enum rig_status status = rig__serve(o, report, text, row, error, error_len);
    if (status == RIG_OK) report->serving_count++;
    return status;
}

static enum rig_status rig__make_out_dir(const struct rig_bench_options *o, char *error,
                                         size_t error_len)
{
    if (o->out_dir == NULL || mkdir(o->out_dir, 0777) == 0 || errno == EEXIST) return RIG_OK;
    snprintf(error, error_len, "cannot create %s: %s", o->out_dir, strerror(errno));
    return RIG_E_IO;
}

enum rig_status rig_bench_offline(const struct rig_bench_options *o,
                                  struct rig_bench_report *report, char *error, size_t error_len)
{
    RIG_ASSERT(report->have_floors);
    enum rig_status status = rig__make_out_dir(o, error, error_len);
    char workload[96];
    snprintf(workload, sizeof workload, "{kind: minisgl_offline, count: %d}",
             o->quick ? RIG__QUICK_REQUESTS : 256);
    if (status == RIG_OK && o->offline_overlap)
        status = rig__serve_row(o, report, "offline", INFINITY, true, workload, error, error_len);
    if (status == RIG_OK && o->offline_no_overlap)
        status = rig__serve_row(o, report, "offline-no-overlap", INFINITY, false, workload, error,
                                error_len);
    return status;
}

enum rig_status rig_bench_online(const struct rig_bench_options *o, struct rig_bench_report *report,
                                 char *error, size_t error_len)
{
    RIG_ASSERT(report->have_floors);
    double quick_rate = 16.0;
    const double *rates = o->online_rate_count > 0 ? o->online_rates
                          : o->quick               ? &quick_rate
                                                   : rig__online_rates;
    int32_t count = o->online_rate_count > 0 ? o->online_rate_count
                    : o->quick               ? 1
                                             : (int32_t)RIG_ARRAY_LEN(rig__online_rates);
    int32_t requests = o->online_requests > 0 ? o->online_requests
                       : o->quick             ? RIG__QUICK_REQUESTS
                                              : RIG__ONLINE_REQUESTS;
    enum rig_status status = rig__make_out_dir(o, error, error_len);
    for (int32_t i = 0; i < count && status == RIG_OK; i++) {
        char name[32], workload[256];
        snprintf(workload, sizeof workload,
                 "{kind: random, name: online, count: %d, input_len: [100, 1024], "
                 "output_len: [100, 1024], token_range: [0, 10000], rate: %.17g}",
                 requests, rates[i]);
        snprintf(name, sizeof name, "online-%g", rates[i]);
        if (o->online_overlap && status == RIG_OK)
            status = rig__serve_row(o, report, name, rates[i], true, workload, error, error_len);
        snprintf(name, sizeof name, "online-%g-no-overlap", rates[i]);
        if (o->online_no_overlap && status == RIG_OK)
            status = rig__serve_row(o, report, name, rates[i], false, workload, error, error_len);
    }
    return status;
}
