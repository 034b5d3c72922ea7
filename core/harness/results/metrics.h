/* metrics.h — the serving metrics of a run, as sglang.bench_serving defines them.
 *
 * Over the requests that completed (finish reason length or stop; aborted and rejected ones
 * are counted apart, as bench_serving counts failures):
 *   TTFT  first_token - arrival;
 *   E2E   finish - arrival (bench_serving's "latency");
 *   TPOT  (E2E - TTFT) / (output_len - 1), for requests with output_len > 1;
 *   ITL   every gap between consecutive output tokens of a request, all requests pooled;
 *   duration  from the first arrival to the last finish; throughputs are totals / duration;
 *   concurrency  sum of E2E / duration.
 * Statistics: mean, median, std (population, as numpy.std), p90, p99 (linear interpolation
 * between closest ranks, as numpy.percentile's default), max. Empty sets give zeros.
 * Times are seconds (float64).
 *
 * Threads: pure functions of their inputs.
 */
#ifndef RIG_METRICS_H
#define RIG_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/harness/results/results.h"

struct rig_metric_stats {
    double mean, median, std, p90, p99, max;
    double count;
};

struct rig_metrics {
    double completed, aborted, rejected, unfinished;
    double total_input, total_output, cache_hit_tokens;
    double duration_s;
    double request_throughput; /* requests / s */
    double input_throughput;   /* tokens / s */
    double output_throughput;
    double total_throughput;
    double concurrency;
    struct rig_metric_stats ttft, tpot, itl, e2e;
};

/* Computes every metric of `results`. RIG_E_NO_MEMORY when scratch space (one double per
 * token) cannot be allocated; `out` is then zeroed. */
enum rig_status rig_metrics_compute(const struct rig_results *results, struct rig_metrics *out);

/* numpy.percentile(values, p) for `count` ascending values, p in [0, 100]; 0 when empty. */
double rig_metrics_percentile(const double *sorted, int64_t count, double p);
/* Fills mean/median/std/p90/p99/max of `values` (sorted in place). */
void rig_metrics_stats(double *values, int64_t count, struct rig_metric_stats *out);

/* Metrics by name ("ttft_p99", "output_throughput", "duration", ...), for expectations and
 * the HDF5 /summary. */
struct rig_metric_name {
    const char *name;
    const char *units; /* "s", "1/s", "tokens/s", "requests", "tokens" */
    bool is_time;      /* bounds are durations */
};
/* The table, terminated by a NULL name. */
extern const struct rig_metric_name rig_metric_names[];
/* Index of `name` in rig_metric_names, or -1. */
int32_t rig_metrics_find(const char *name);
/* Value of metric `index` in `metrics`. */
double rig_metrics_value(const struct rig_metrics *metrics, int32_t index);

#endif /* RIG_METRICS_H */
