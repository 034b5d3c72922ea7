/* serve_output.c — the files `rig bench serve` writes (serve.h): bench_serving's JSONL line
 * and the results file of docs/results.md.
 *
 * JSONL: one object per run appended to the file, with bench_serving's keys (times in ms,
 * throughputs per second) plus p90s, goodput, burstiness and the failure count, and rig's
 * streamed_output_tokens / _throughput (tokens received by every request, failed or cut ones
 * too), client_event_bytes / client_parsed_bytes (event data read, and the part of it that went
 * through the JSON parser: see rig_serve_generate_parse); a rate of
 * inf is written as the string "inf" (bench_serving's Python writes the non-JSON Infinity).
 * With --output-details the per-request lists follow as bench_serving writes them:
 * input_lens, output_lens (0 for a failure), ttfts (s, 0 for a failure), itls (s, per
 * request), generated_texts, errors — and e2e_latencies (s, 0 for a failure), which
 * bench_serving keeps to itself.
 *
 * HDF5: the run's struct rig_results through rig_results_write_h5, so the layout is the one
 * `rig run` writes: backend "http" (clock "wall"), device "<URL> <API path>", scenario
 * "bench-serve <dataset>", no /steps rows (a client cannot see the server's steps), and
 * first_scheduled NaN for the same reason.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/harness/bench/serve.h"
#include "core/harness/results/h5.h"

static int rig__set_ms(json_t *o, const char *prefix, const char *name, double seconds)
{
    char key[64];
    snprintf(key, sizeof key, "%s_%s_ms", prefix, name);
    return json_object_set_new(o, key, json_real(seconds * 1e3));
}

static int rig__stats(json_t *o, const char *name, const struct rig_metric_stats *s)
{
    return rig__set_ms(o, "mean", name, s->mean) | rig__set_ms(o, "median", name, s->median) |
           rig__set_ms(o, "std", name, s->std) | rig__set_ms(o, "p90", name, s->p90) |
           rig__set_ms(o, "p99", name, s->p99);
}

static json_t *rig__number_or_inf(double value)
{
    return isinf(value) ? json_string("inf") : json_real(value);
}

static json_t *rig__result(const struct rig_serve_options *o, const struct rig_serve_summary *s)
{
    const struct rig_metrics *m = &s->metrics;
    json_t *r = json_pack(
        "{s:s?, s:s, s:s, s:o, s:o, s:o?, s:i, s:i, s:f, s:f, s:I, s:I, s:I, s:I, s:f, s:f}", "tag",
        o->tag, "backend", o->backend, "dataset_name", o->dataset_name, "request_rate",
        rig__number_or_inf(o->request_rate), "burstiness", json_real(o->burstiness),
        "max_concurrency", o->max_concurrency > 0 ? json_integer(o->max_concurrency) : NULL,
        "random_input_len", o->random_input_len, "random_output_len", o->random_output_len,
        "random_range_ratio", o->random_range_ratio, "duration", m->duration_s, "completed",
        (json_int_t)m->completed, "failed", (json_int_t)s->failed, "total_input_tokens",
        (json_int_t)m->total_input, "total_output_tokens", (json_int_t)m->total_output,
        "request_throughput", m->request_throughput, "input_throughput", m->input_throughput);
    if (r == NULL) return NULL;
    int bad = json_object_set_new(r, "output_throughput", json_real(m->output_throughput));
    bad |= json_object_set_new(r, "total_throughput", json_real(m->total_throughput));
    bad |= json_object_set_new(r, "concurrency", json_real(m->concurrency));
    bad |= json_object_set_new(
        r, "total_output_tokens_retokenized",
        s->total_output_retokenized >= 0.0 ? json_real(s->total_output_retokenized) : json_null());
    bad |= json_object_set_new(r, "request_goodput",
                               s->request_goodput >= 0.0 ? json_real(s->request_goodput)
                                                         : json_null());
    bad |= json_object_set_new(r, "max_output_tokens_per_s", json_real(s->max_output_tokens_per_s));
    bad |= json_object_set_new(r, "streamed_output_tokens",
                               json_integer((json_int_t)s->streamed_output));
    bad |= json_object_set_new(
        r, "streamed_output_throughput",
        json_real(m->duration_s > 0.0 ? s->streamed_output / m->duration_s : 0.0));
    bad |= json_object_set_new(r, "max_concurrent_requests", json_real(s->max_concurrent_requests));
    bad |= rig__stats(r, "e2e_latency", &m->e2e) | rig__stats(r, "ttft", &m->ttft);
    bad |= rig__stats(r, "tpot", &m->tpot) | rig__stats(r, "itl", &m->itl);
    bad |= rig__set_ms(r, "p95", "itl", s->itl_p95) | rig__set_ms(r, "max", "itl", m->itl.max);
    if (bad == 0) return r;
    json_decref(r);
    return NULL;
}

/* The per-request lists of --output-details. */
static int rig__details(json_t *r, const struct rig_serve_dataset *d,
                        const struct rig_serve_run *run)
{
    json_t *in = json_array(), *out = json_array(), *ttfts = json_array(), *itls = json_array();
    json_t *texts = json_array(), *errors = json_array(), *e2e = json_array();
    int bad = json_object_set_new(r, "input_lens", in) | json_object_set_new(r, "output_lens", out);
    bad |= json_object_set_new(r, "e2e_latencies", e2e);
    bad |= json_object_set_new(r, "ttfts", ttfts) | json_object_set_new(r, "itls", itls);
    bad |= json_object_set_new(r, "generated_texts", texts);
    bad |= json_object_set_new(r, "errors", errors);
    const struct rig_results *res = &run->results;
    for (int32_t i = 0; bad == 0 && i < d->count; i++) {
        const struct rig_results_request *q = &res->requests[i];
        const struct rig_serve_outcome *x = &run->outcomes[i];
        bool ok = x->failure == RIG_SERVE_OK;
        json_t *gaps = json_array();
        for (int32_t k = 1; ok && k < q->output_len; k++) {
            const int64_t *t = res->token_time_ns + q->token_offset;
            bad |= json_array_append_new(gaps, json_real((double)(t[k] - t[k - 1]) * 1e-9));
        }
        bad |= json_array_append_new(in, json_integer(q->input_len));
        bad |= json_array_append_new(out, json_integer(ok ? q->output_len : 0));
        bad |= json_array_append_new(
            ttfts, json_real(ok ? (double)(q->first_token_ns - q->arrival_ns) * 1e-9 : 0.0));
        bad |= json_array_append_new(itls, gaps);
        bad |= json_array_append_new(
            e2e, json_real(ok ? (double)(q->finish_ns - q->arrival_ns) * 1e-9 : 0.0));
        bad |= json_array_append_new(texts,
                                     json_stringn(run->text + x->text_offset, (size_t)x->text_len));
        bad |= json_array_append_new(errors, json_string(x->error));
    }
    return bad;
}

enum rig_status rig_serve_write_jsonl(const struct rig_serve_options *o,
                                      const struct rig_serve_dataset *d,
                                      const struct rig_serve_run *run,
                                      const struct rig_serve_summary *s, const char *path,
                                      char *error, size_t error_len)
{
    json_t *r = rig__result(o, s);
    /* rig's own: what the client read, and how much of it went through the JSON parser */
    if (r != NULL &&
        (json_object_set_new(r, "client_event_bytes", json_integer(run->event_bytes)) != 0 ||
         json_object_set_new(r, "client_parsed_bytes", json_integer(run->parsed_bytes)) != 0)) {
        json_decref(r);
        r = NULL;
    }
    if (r != NULL && o->output_details && rig__details(r, d, run) != 0) {
        json_decref(r);
        r = NULL;
    }
    if (r == NULL) {
        snprintf(error, error_len, "%s: out of memory building the result", path);
        return RIG_E_NO_MEMORY;
    }
    FILE *f = fopen(path, "a");
    bool ok = f != NULL && json_dumpf(r, f, JSON_COMPACT) == 0 && fputc('\n', f) != EOF;
    if (f != NULL && fclose(f) != 0) ok = false;
    json_decref(r);
    if (ok) return RIG_OK;
    snprintf(error, error_len, "%s: cannot append the result", path);
    return RIG_E_IO;
}

enum rig_status rig_serve_write_h5(const struct rig_serve_options *o,
                                   const struct rig_serve_dataset *d, struct rig_serve_run *run,
                                   const struct rig_serve_summary *s, const char *path, char *error,
                                   size_t error_len)
{
    (void)d;
    struct rig_results_meta *m = &run->results.meta;
    memset(m, 0, sizeof *m);
    snprintf(m->scenario, sizeof m->scenario, "bench-serve %s", o->dataset_name);
    /* scenario_sha256 stays empty: the requests come from a dataset, not a scenario. */
    snprintf(m->backend, sizeof m->backend, "http");
    snprintf(m->device, sizeof m->device, "%s%s (%s)", o->base_url,
             rig_serve_api_path((enum rig_serve_api)rig_serve_api_parse(o->backend)), o->backend);
    snprintf(m->model, sizeof m->model, "%s", o->model != NULL ? o->model : "");
    m->seed = o->seed;
    m->max_running_req = o->max_concurrency;
    return rig_results_write_h5(&run->results, &s->metrics, path, error, error_len);
}
