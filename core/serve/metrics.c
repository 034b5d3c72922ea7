/* metrics.c — Prometheus exposition of the server's metrics (see metrics.h). */
#include <stdio.h>
#include <string.h>

#include "core/serve/metrics.h"

/* Buckets from 1 ms (a decode step on a GPU) to minutes (a long queue). */
static const double rig__ttft_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06,
                                          0.08,  0.1,    0.25,  0.5,  0.75, 1.0,  2.5,
                                          5.0,   7.5,    10.0,  20.0, 40.0, 80.0};
static const double rig__itl_bounds[] = {0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008,
                                         0.01,  0.015, 0.02,  0.025, 0.03,  0.04,  0.05,
                                         0.075, 0.1,   0.25,  0.5,   1.0,   2.5};
static const double rig__e2e_bounds[] = {0.01, 0.05, 0.1,  0.25,  0.5,   1.0,   2.0,
                                         5.0,  10.0, 20.0, 30.0,  40.0,  60.0,  90.0,
                                         120., 180., 300., 600.,  1200., 2400.};
_Static_assert(RIG_ARRAY_LEN(rig__ttft_bounds) <= RIG_SERVE_BUCKETS_MAX, "ttft buckets");
_Static_assert(RIG_ARRAY_LEN(rig__itl_bounds) <= RIG_SERVE_BUCKETS_MAX, "itl buckets");
_Static_assert(RIG_ARRAY_LEN(rig__e2e_bounds) <= RIG_SERVE_BUCKETS_MAX, "e2e buckets");

const char *rig_serve_finish_name(enum rig_serve_finish finish)
{
    static const char *const names[] = {"stop", "length", "abort", "rejected"};
    return finish >= 0 && finish < RIG_SERVE_FINISH_COUNT ? names[finish] : "?";
}

static void rig__histogram_init(struct rig_serve_histogram *h, const char *name,
                                const char *help, const double *bounds, int32_t count)
{
    h->name = name;
    h->help = help;
    h->bounds = bounds;
    h->bound_count = count;
}

void rig_serve_metrics_init(struct rig_serve_metrics *m)
{
    memset(m, 0, sizeof *m);
    rig__histogram_init(&m->ttft, "rig:time_to_first_token_seconds",
                        "Time from arrival to the first output token.", rig__ttft_bounds,
                        (int32_t)RIG_ARRAY_LEN(rig__ttft_bounds));
    rig__histogram_init(&m->itl, "rig:inter_token_latency_seconds",
                        "Time between consecutive output tokens of a request.", rig__itl_bounds,
                        (int32_t)RIG_ARRAY_LEN(rig__itl_bounds));
    rig__histogram_init(&m->e2e, "rig:e2e_request_latency_seconds",
                        "Time from arrival to the end of a request.", rig__e2e_bounds,
                        (int32_t)RIG_ARRAY_LEN(rig__e2e_bounds));
}

void rig_serve_histogram_observe(struct rig_serve_histogram *h, int64_t ns)
{
    if (ns < 0) ns = 0;
    double seconds = (double)ns * 1e-9;
    int32_t bucket = 0;
    while (bucket < h->bound_count && seconds > h->bounds[bucket]) bucket++;
    atomic_fetch_add_explicit(&h->buckets[bucket], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, (uint64_t)ns, memory_order_relaxed);
}

static uint64_t rig__load(const _Atomic uint64_t *value)
{
    return atomic_load_explicit(value, memory_order_relaxed);
}

static int64_t rig__load_signed(const _Atomic int64_t *value)
{
    return atomic_load_explicit(value, memory_order_relaxed);
}

static enum rig_status rig__histogram_render(const struct rig_serve_histogram *h,
                                             const char *labels, struct rig_serve_buffer *out)
{
    enum rig_status s = rig_serve_buffer_printf(out, "# HELP %s %s\n# TYPE %s histogram\n",
                                                h->name, h->help, h->name);
    uint64_t cumulative = 0;
    for (int32_t i = 0; i <= h->bound_count && s == RIG_OK; i++) {
        cumulative += rig__load(&h->buckets[i]);
        if (i < h->bound_count)
            s = rig_serve_buffer_printf(out, "%s_bucket{%s,le=\"%g\"} %llu\n", h->name, labels,
                                        h->bounds[i], (unsigned long long)cumulative);
        else
            s = rig_serve_buffer_printf(out, "%s_bucket{%s,le=\"+Inf\"} %llu\n", h->name,
                                        labels, (unsigned long long)cumulative);
    }
    if (s == RIG_OK)
        s = rig_serve_buffer_printf(out, "%s_sum{%s} %.9f\n%s_count{%s} %llu\n", h->name, labels,
                                    (double)rig__load(&h->sum_ns) * 1e-9, h->name, labels,
                                    (unsigned long long)cumulative);
    return s;
}

static enum rig_status rig__sample(struct rig_serve_buffer *out, const char *type,
                                   const char *name, const char *help, const char *labels,
                                   double value)
{
    return rig_serve_buffer_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s{%s} %.17g\n", name, help,
                                   name, type, name, labels, value);
}

static enum rig_status rig__gauges(const struct rig_serve_metrics *m, const char *labels,
                                   struct rig_serve_buffer *out)
{
    double used = (double)rig__load_signed(&m->used_tokens);
    double total = (double)rig__load_signed(&m->total_tokens);
    double prompt = (double)rig__load(&m->prompt_tokens);
    double cached = (double)rig__load(&m->cached_tokens);
    enum rig_status s = rig__sample(out, "gauge", "rig:num_running_reqs",
                                    "Requests running (prefilling or decoding).", labels,
                                    (double)rig__load_signed(&m->running));
    if (s == RIG_OK)
        s = rig__sample(out, "gauge", "rig:num_queue_reqs", "Requests waiting to be admitted.",
                        labels, (double)rig__load_signed(&m->queued));
    if (s == RIG_OK)
        s = rig__sample(out, "gauge", "rig:num_used_tokens",
                        "KV cache slots held by requests.", labels, used);
    if (s == RIG_OK)
        s = rig__sample(out, "gauge", "rig:max_total_num_tokens", "KV cache slots in the pool.",
                        labels, total);
    if (s == RIG_OK)
        s = rig__sample(out, "gauge", "rig:token_usage", "Fraction of KV slots held.", labels,
                        total > 0 ? used / total : 0.0);
    if (s == RIG_OK)
        s = rig__sample(out, "gauge", "rig:cache_hit_rate",
                        "Prompt tokens served from the prefix cache, over all prompt tokens.",
                        labels, prompt + cached > 0 ? cached / (prompt + cached) : 0.0);
    return s;
}

static enum rig_status rig__pages(const struct rig_serve_metrics *m, const char *model,
                                  struct rig_serve_buffer *out)
{
    static const char *const states[] = {"free", "evictable", "locked", "owned"};
    enum rig_status s = rig_serve_buffer_printf(
        out, "# HELP rig:kv_pages KV cache pages by state (evictable: cached, unused).\n"
             "# TYPE rig:kv_pages gauge\n");
    for (size_t i = 0; i < RIG_ARRAY_LEN(states) && s == RIG_OK; i++)
        s = rig_serve_buffer_printf(out, "rig:kv_pages{model_name=\"%s\",state=\"%s\"} %lld\n",
                                    model, states[i],
                                    (long long)rig__load_signed(&m->pages[i]));
    return s;
}

static enum rig_status rig__counters(const struct rig_serve_metrics *m, const char *model,
                                     const char *labels, struct rig_serve_buffer *out)
{
    enum rig_status s = rig__sample(out, "counter", "rig:prompt_tokens_total",
                                    "Prompt tokens computed (prefix-cache hits excluded).",
                                    labels, (double)rig__load(&m->prompt_tokens));
    if (s == RIG_OK)
        s = rig__sample(out, "counter", "rig:generation_tokens_total", "Output tokens.", labels,
                        (double)rig__load(&m->generation_tokens));
    if (s == RIG_OK)
        s = rig__sample(out, "counter", "rig:cached_tokens_total",
                        "Prompt tokens served from the prefix cache.", labels,
                        (double)rig__load(&m->cached_tokens));
    if (s == RIG_OK)
        s = rig__sample(out, "counter", "rig:http_errors_total",
                        "Requests answered with a 4xx or 5xx status.", labels,
                        (double)rig__load(&m->http_errors));
    if (s == RIG_OK)
        s = rig_serve_buffer_printf(out, "# HELP rig:num_requests_total Requests ended, by "
                                         "finish reason.\n# TYPE rig:num_requests_total counter\n");
    for (int32_t i = 0; i < RIG_SERVE_FINISH_COUNT && s == RIG_OK; i++)
        s = rig_serve_buffer_printf(out,
                                    "rig:num_requests_total{model_name=\"%s\",finish_reason=\"%s\"}"
                                    " %llu\n", model, rig_serve_finish_name(i),
                                    (unsigned long long)rig__load(&m->requests[i]));
    return s;
}

enum rig_status rig_serve_metrics_render(const struct rig_serve_metrics *m,
                                         const char *model_name, struct rig_serve_buffer *out)
{
    char labels[192];
    snprintf(labels, sizeof labels, "model_name=\"%.160s\"", model_name);
    enum rig_status s = rig__gauges(m, labels, out);
    if (s == RIG_OK) s = rig__pages(m, model_name, out);
    if (s == RIG_OK) s = rig__counters(m, model_name, labels, out);
    if (s == RIG_OK) s = rig__histogram_render(&m->ttft, labels, out);
    if (s == RIG_OK) s = rig__histogram_render(&m->itl, labels, out);
    if (s == RIG_OK) s = rig__histogram_render(&m->e2e, labels, out);
    return s;
}
