/* serve_report.c — what `rig bench serve` reports (serve.h): the metrics, bench_serving's
 * table and JSONL line, and the results file.
 *
 * The latencies and throughputs are rig_metrics_compute over the run's records — the same
 * code `rig run` uses, so a client-side run and a simulated one are measured alike. Added
 * here what bench_serving prints beyond them: ITL p95, the retokenized output count, the
 * busiest second's output tokens and requests in flight (its calculate_metrics buckets by
 * whole seconds from the first send), and goodput (vLLM's definition, which sglang
 * inherited: completed requests meeting every objective given, over the duration; a
 * request's TPOT counts as 0 when it has one output token).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/bench/serve.h"
#include "core/harness/results/h5.h"

static const char *const rig__failure_names[RIG_SERVE_FAIL_COUNT] = {
    "ok", "http", "connect", "reset", "timeout", "malformed", "server", "empty", "not_sent"};

const char *rig_serve_failure_name(int32_t failure)
{
    return failure >= 0 && failure < RIG_SERVE_FAIL_COUNT ? rig__failure_names[failure] : "?";
}

static bool rig__completed(const struct rig_results_request *q)
{
    return q->finish_reason == RIG_FINISH_LENGTH || q->finish_reason == RIG_FINISH_STOP;
}

static double rig__seconds(int64_t ns)
{
    return (double)ns * 1e-9;
}

/* Requests meeting every objective (ms), over the completed ones. */
static double rig__good(const struct rig_serve_options *o, const struct rig_results *r)
{
    double good = 0.0;
    for (int64_t i = 0; i < r->request_count; i++) {
        const struct rig_results_request *q = &r->requests[i];
        if (!rig__completed(q)) continue;
        double ttft = rig__seconds(q->first_token_ns - q->arrival_ns) * 1e3;
        double e2e = rig__seconds(q->finish_ns - q->arrival_ns) * 1e3;
        double tpot = q->output_len > 1 ? (e2e - ttft) / (q->output_len - 1) : 0.0;
        bool ok = (o->goodput_ttft_ms < 0.0 || ttft <= o->goodput_ttft_ms) &&
                  (o->goodput_tpot_ms < 0.0 || tpot <= o->goodput_tpot_ms) &&
                  (o->goodput_e2e_ms < 0.0 || e2e <= o->goodput_e2e_ms);
        good += ok;
    }
    return good;
}

/* bench_serving's busiest second: tokens and requests in flight per whole second. */
static enum rig_status rig__peaks(const struct rig_results *r, struct rig_serve_summary *s)
{
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (int64_t i = 0; i < r->request_count; i++) {
        const struct rig_results_request *q = &r->requests[i];
        if (!rig__completed(q)) continue;
        if (q->arrival_ns < first) first = q->arrival_ns;
        if (q->finish_ns > last) last = q->finish_ns;
    }
    if (first > last) return RIG_OK;
    int64_t seconds = (int64_t)ceil(rig__seconds(last - first)) + 1;
    double *tokens = calloc((size_t)seconds, sizeof *tokens);
    double *busy = calloc((size_t)seconds, sizeof *busy);
    if (tokens == NULL || busy == NULL) {
        free(tokens);
        free(busy);
        return RIG_E_NO_MEMORY;
    }
    for (int64_t i = 0; i < r->request_count; i++) {
        const struct rig_results_request *q = &r->requests[i];
        if (!rig__completed(q)) continue;
        for (int32_t k = 0; k < q->output_len; k++) {
            int64_t b = (r->token_time_ns[q->token_offset + k] - first) / 1000000000;
            if (b >= 0 && b < seconds) tokens[b] += 1.0;
        }
        int64_t end = (q->finish_ns - first) / 1000000000;
        for (int64_t b = (q->arrival_ns - first) / 1000000000; b <= end && b < seconds; b++)
            busy[b] += 1.0;
    }
    for (int64_t b = 0; b < seconds; b++) {
        if (tokens[b] > s->max_output_tokens_per_s) s->max_output_tokens_per_s = tokens[b];
        if (busy[b] > s->max_concurrent_requests) s->max_concurrent_requests = busy[b];
    }
    free(tokens);
    free(busy);
    return RIG_OK;
}

static enum rig_status rig__itl_p95(const struct rig_results *r, double *p95)
{
    double *gaps = malloc(((size_t)r->token_count + 1) * sizeof *gaps);
    if (gaps == NULL) return RIG_E_NO_MEMORY;
    int64_t n = 0;
    for (int64_t i = 0; i < r->request_count; i++) {
        const struct rig_results_request *q = &r->requests[i];
        if (!rig__completed(q)) continue;
        const int64_t *t = r->token_time_ns + q->token_offset;
        for (int32_t k = 1; k < q->output_len; k++)
            gaps[n++] = rig__seconds(t[k] - t[k - 1]);
    }
    struct rig_metric_stats stats;
    rig_metrics_stats(gaps, n, &stats); /* sorts */
    *p95 = rig_metrics_percentile(gaps, n, 95.0);
    free(gaps);
    return RIG_OK;
}

enum rig_status rig_serve_summarize(const struct rig_serve_options *o,
                                    const struct rig_serve_run *run, struct rig_serve_summary *s)
{
    memset(s, 0, sizeof *s);
    const struct rig_results *r = &run->results;
    enum rig_status status = rig_metrics_compute(r, &s->metrics);
    if (status == RIG_OK) status = rig__itl_p95(r, &s->itl_p95);
    if (status == RIG_OK) status = rig__peaks(r, s);
    if (status < 0) {
        memset(s, 0, sizeof *s);
        return status;
    }
    s->total_output_retokenized = -1.0;
    for (int64_t i = 0; i < r->request_count; i++) {
        const struct rig_serve_outcome *out = &run->outcomes[i];
        s->failures[out->failure] += 1.0;
        s->failed += out->failure != RIG_SERVE_OK;
        s->streamed_output += out->received;
        if (out->failure != RIG_SERVE_OK || out->retokenized < 0) continue;
        if (s->total_output_retokenized < 0.0) s->total_output_retokenized = 0.0;
        s->total_output_retokenized += out->retokenized;
    }
    bool objectives =
        o->goodput_ttft_ms >= 0.0 || o->goodput_tpot_ms >= 0.0 || o->goodput_e2e_ms >= 0.0;
    s->good_completed = objectives ? rig__good(o, r) : 0.0;
    s->request_goodput = -1.0;
    if (objectives && s->metrics.duration_s > 0.0)
        s->request_goodput = s->good_completed / s->metrics.duration_s;
    return RIG_OK;
}

/* ---- the table ------------------------------------------------------------------------- */

/* Python's "{s:{c}^{n}}".format(...): `text` centred in `width`, the odd pad on the right. */
static void rig__centre(FILE *f, const char *text, char pad, int width)
{
    int len = (int)strlen(text), left = len < width ? (width - len) / 2 : 0;
    int right = len < width ? width - len - left : 0;
    for (int i = 0; i < left; i++)
        fputc(pad, f);
    fputs(text, f);
    for (int i = 0; i < right; i++)
        fputc(pad, f);
    fputc('\n', f);
}

static void rig__row_f(FILE *f, const char *name, double value)
{
    fprintf(f, "%-40s %-10.2f\n", name, value);
}

static void rig__row_i(FILE *f, const char *name, double value)
{
    fprintf(f, "%-40s %-10.0f\n", name, value);
}

static void rig__row_s(FILE *f, const char *name, const char *value)
{
    fprintf(f, "%-40s %-10s\n", name, value);
}

/* Python's str(float): "inf", "16.0", "4.5". */
static void rig__python_float(double value, char *out, size_t len)
{
    if (isinf(value))
        snprintf(out, len, "inf");
    else if (value == floor(value) && fabs(value) < 1e15)
        snprintf(out, len, "%.1f", value);
    else
        snprintf(out, len, "%.17g", value);
}

static void rig__latency(FILE *f, const char *title, const char *name,
                         const struct rig_metric_stats *s, const double *p95)
{
    char label[64];
    rig__centre(f, title, '-', 50);
    snprintf(label, sizeof label, "Mean %s (ms):", name);
    rig__row_f(f, label, s->mean * 1e3);
    snprintf(label, sizeof label, "Median %s (ms):", name);
    rig__row_f(f, label, s->median * 1e3);
    snprintf(label, sizeof label, "P90 %s (ms):", name);
    rig__row_f(f, label, s->p90 * 1e3);
    if (p95 != NULL) {
        snprintf(label, sizeof label, "P95 %s (ms):", name);
        rig__row_f(f, label, *p95 * 1e3);
    }
    snprintf(label, sizeof label, "P99 %s (ms):", name);
    rig__row_f(f, label, s->p99 * 1e3);
    if (p95 != NULL) { /* ITL: bench_serving prints the max too */
        snprintf(label, sizeof label, "Max %s (ms):", name);
        rig__row_f(f, label, s->max * 1e3);
    }
}

static void rig__print_head(FILE *f, const struct rig_serve_options *o,
                            const struct rig_serve_summary *s)
{
    const struct rig_metrics *m = &s->metrics;
    char text[64];
    rig__centre(f, " Serving Benchmark Result ", '=', 50);
    rig__row_s(f, "Backend:", o->backend);
    rig__python_float(o->request_rate, text, sizeof text);
    rig__row_s(f, "Traffic request rate:", text);
    rig__python_float(o->burstiness, text, sizeof text);
    rig__row_s(f, "Burstiness factor:", text);
    snprintf(text, sizeof text, "%d", o->max_concurrency);
    rig__row_s(f, "Max request concurrency:", o->max_concurrency > 0 ? text : "not set");
    rig__row_i(f, "Successful requests:", m->completed);
    rig__row_i(f, "Failed requests:", s->failed);
    for (int32_t k = 1; k < RIG_SERVE_FAIL_COUNT; k++) {
        if (s->failures[k] == 0.0) continue;
        snprintf(text, sizeof text, "  %s:", rig_serve_failure_name(k));
        rig__row_i(f, text, s->failures[k]);
    }
    rig__row_f(f, "Benchmark duration (s):", m->duration_s);
    rig__row_i(f, "Total input tokens:", m->total_input);
    rig__row_i(f, "Total generated tokens:", m->total_output);
    if (s->total_output_retokenized >= 0.0)
        rig__row_i(f, "Total generated tokens (retokenized):", s->total_output_retokenized);
    else
        rig__row_s(f, "Total generated tokens (retokenized):", "n/a");
    if (s->failed > 0) { /* what the server sent the failed ones too (rig's, not bench_serving's) */
        rig__row_i(f, "Streamed tokens, failed requests too:", s->streamed_output);
        rig__row_f(f, "Streamed output throughput (tok/s):",
                   m->duration_s > 0.0 ? s->streamed_output / m->duration_s : 0.0);
    }
    rig__row_f(f, "Request throughput (req/s):", m->request_throughput);
    if (s->request_goodput >= 0.0) rig__row_f(f, "Request goodput (req/s):", s->request_goodput);
    rig__row_f(f, "Input token throughput (tok/s):", m->input_throughput);
    rig__row_f(f, "Output token throughput (tok/s):", m->output_throughput);
    rig__row_f(f, "Peak output token throughput (tok/s):", s->max_output_tokens_per_s);
    rig__row_i(f, "Peak concurrent requests:", s->max_concurrent_requests);
    rig__row_f(f, "Total token throughput (tok/s):", m->total_throughput);
    rig__row_f(f, "Concurrency:", m->concurrency);
}

void rig_serve_print(const struct rig_serve_options *o, const struct rig_serve_run *run,
                     const struct rig_serve_summary *s, void *out)
{
    FILE *f = out;
    const struct rig_metrics *m = &s->metrics;
    fputc('\n', f);
    rig__print_head(f, o, s);
    rig__latency(f, "End-to-End Latency", "E2E Latency", &m->e2e, NULL);
    rig__latency(f, "Time to First Token", "TTFT", &m->ttft, NULL);
    rig__latency(f, "Time per Output Token (excl. 1st token)", "TPOT", &m->tpot, NULL);
    rig__latency(f, "Inter-Token Latency", "ITL", &m->itl, &s->itl_p95);
    for (int i = 0; i < 50; i++)
        fputc('=', f);
    fputc('\n', f);
    int32_t shown = 0;
    for (int64_t i = 0; i < run->results.request_count && shown < 5; i++) {
        const struct rig_serve_outcome *x = &run->outcomes[i];
        if (x->failure == RIG_SERVE_OK) continue;
        if (shown++ == 0) fprintf(f, "failures (first 5):\n");
        fprintf(f, "  %s: %s: %s\n", run->results.requests[i].id,
                rig_serve_failure_name(x->failure), x->error);
    }
    if (run->stopped) fprintf(f, "the whole-run timeout (--timeout) stopped the run\n");
}
