/* metrics.c — sglang.bench_serving metrics over the run records (see metrics.h). */
#include "core/harness/results/metrics.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static int rig__compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rig_metrics_percentile(const double *sorted, int64_t count, double p)
{
    RIG_ASSERT(p >= 0.0 && p <= 100.0);
    if (count <= 0) return 0.0;
    double rank = p / 100.0 * (double)(count - 1);
    int64_t below = (int64_t)floor(rank);
    int64_t above = below + 1 < count ? below + 1 : below;
    double fraction = rank - (double)below;
    return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

void rig_metrics_stats(double *values, int64_t count, struct rig_metric_stats *out)
{
    memset(out, 0, sizeof *out);
    if (count <= 0) return;
    qsort(values, (size_t)count, sizeof *values, rig__compare_double);
    double sum = 0.0;
    for (int64_t i = 0; i < count; i++) sum += values[i];
    double mean = sum / (double)count;
    double squares = 0.0;
    for (int64_t i = 0; i < count; i++) squares += (values[i] - mean) * (values[i] - mean);
    out->count = (double)count;
    out->mean = mean;
    out->std = sqrt(squares / (double)count);
    out->median = rig_metrics_percentile(values, count, 50.0);
    out->p90 = rig_metrics_percentile(values, count, 90.0);
    out->p99 = rig_metrics_percentile(values, count, 99.0);
    out->max = values[count - 1];
}

static bool rig__completed(const struct rig_results_request *r)
{
    return r->finish_reason == RIG_FINISH_LENGTH || r->finish_reason == RIG_FINISH_STOP;
}

/* Counts and totals; the span from the first arrival to the last finish. */
static void rig__totals(const struct rig_results *results, struct rig_metrics *m)
{
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (int64_t i = 0; i < results->request_count; i++) {
        const struct rig_results_request *r = &results->requests[i];
        if (r->arrival_ns >= 0 && r->arrival_ns < first) first = r->arrival_ns;
        if (r->finish_ns > last) last = r->finish_ns;
        m->cache_hit_tokens += r->cached_len;
        if (r->finish_reason == RIG_FINISH_ABORT) m->aborted += 1;
        else if (r->finish_reason == RIG_FINISH_REJECTED) m->rejected += 1;
        else if (!rig__completed(r)) m->unfinished += 1;
        if (!rig__completed(r)) continue;
        m->completed += 1;
        m->total_input += r->input_len;
        m->total_output += r->output_len;
    }
    m->duration_s = last > first ? (double)(last - first) * 1e-9 : 0.0;
    if (m->duration_s <= 0.0) return;
    m->request_throughput = m->completed / m->duration_s;
    m->input_throughput = m->total_input / m->duration_s;
    m->output_throughput = m->total_output / m->duration_s;
    m->total_throughput = (m->total_input + m->total_output) / m->duration_s;
}

enum rig_status rig_metrics_compute(const struct rig_results *results, struct rig_metrics *out)
{
    memset(out, 0, sizeof *out);
    int64_t n = results->request_count;
    double *ttft = malloc(((size_t)n + 1) * sizeof *ttft);
    double *tpot = malloc(((size_t)n + 1) * sizeof *tpot);
    double *e2e = malloc(((size_t)n + 1) * sizeof *e2e);
    double *itl = malloc(((size_t)results->token_count + 1) * sizeof *itl);
    if (ttft == NULL || tpot == NULL || e2e == NULL || itl == NULL) {
        free(ttft);
        free(tpot);
        free(e2e);
        free(itl);
        return RIG_E_NO_MEMORY;
    }
    rig__totals(results, out);
    int64_t done = 0, tpots = 0, gaps = 0;
    double e2e_sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const struct rig_results_request *r = &results->requests[i];
        if (!rig__completed(r)) continue;
        double first = (double)(r->first_token_ns - r->arrival_ns) * 1e-9;
        double latency = (double)(r->finish_ns - r->arrival_ns) * 1e-9;
        ttft[done] = first;
        e2e[done++] = latency;
        e2e_sum += latency;
        if (r->output_len > 1) tpot[tpots++] = (latency - first) / (double)(r->output_len - 1);
        const int64_t *times = results->token_time_ns + r->token_offset;
        for (int32_t k = 1; k < r->output_len; k++)
            itl[gaps++] = (double)(times[k] - times[k - 1]) * 1e-9;
    }
    rig_metrics_stats(ttft, done, &out->ttft);
    rig_metrics_stats(tpot, tpots, &out->tpot);
    rig_metrics_stats(itl, gaps, &out->itl);
    rig_metrics_stats(e2e, done, &out->e2e);
    if (out->duration_s > 0.0) out->concurrency = e2e_sum / out->duration_s;
    free(ttft);
    free(tpot);
    free(e2e);
    free(itl);
    return RIG_OK;
}

#define RIG__STATS(prefix)                                                                 \
    {#prefix "_mean", "s", true}, {#prefix "_median", "s", true}, {#prefix "_std", "s", true}, \
        {#prefix "_p90", "s", true}, {#prefix "_p99", "s", true}, {#prefix "_max", "s", true}, \
        {#prefix "_count", "values", false}

const struct rig_metric_name rig_metric_names[] = {
    {"completed", "requests", false},
    {"aborted", "requests", false},
    {"rejected", "requests", false},
    {"unfinished", "requests", false},
    {"total_input", "tokens", false},
    {"total_output", "tokens", false},
    {"cache_hit_tokens", "tokens", false},
    {"duration", "s", true},
    {"request_throughput", "requests/s", false},
    {"input_throughput", "tokens/s", false},
    {"output_throughput", "tokens/s", false},
    {"total_throughput", "tokens/s", false},
    {"concurrency", "requests", false},
    RIG__STATS(ttft),
    RIG__STATS(tpot),
    RIG__STATS(itl),
    RIG__STATS(e2e),
    {NULL, NULL, false},
};

/* struct rig_metrics is all doubles, laid out in the order of the table above. */
_Static_assert(sizeof(struct rig_metrics) == (13 + 4 * 7) * sizeof(double),
               "rig_metrics must be doubles in table order");

int32_t rig_metrics_find(const char *name)
{
    for (int32_t i = 0; rig_metric_names[i].name != NULL; i++)
        if (strcmp(rig_metric_names[i].name, name) == 0) return i;
    return -1;
}

double rig_metrics_value(const struct rig_metrics *metrics, int32_t index)
{
    RIG_ASSERT(index >= 0 && index < (int32_t)(sizeof *metrics / sizeof(double)));
    const double *values = (const double *)metrics;
    return values[index];
}
