/* common.c — what every benchmark shares: options, opening the device, timing repeats with
 * events, medians, and the driver that runs the benchmarks in order (bench.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/bench/bench_impl.h"
#include "core/model/model.h"

#define RIG__REPEATS_DEFAULT 10

void rig_bench_options_default(struct rig_bench_options *options)
{
    RIG_ASSERT(options != NULL);
    memset(options, 0, sizeof *options);
    options->online_overlap = true;
    options->offline_overlap = true;
    options->offline_no_overlap = true;
    options->tp = 1;
    options->backend = "sim";
    options->repeats = RIG__REPEATS_DEFAULT;
}

int32_t rig_bench_kind_parse(const char *name)
{
    static const struct {
        const char *name;
        int32_t kind;
    } kinds[] = {{"floors", RIG_BENCH_FLOORS},   {"decode", RIG_BENCH_DECODE},
                 {"prefill", RIG_BENCH_PREFILL}, {"attention", RIG_BENCH_ATTENTION},
                 {"offline", RIG_BENCH_OFFLINE}, {"online", RIG_BENCH_ONLINE},
                 {"ops", RIG_BENCH_OPS},         {"all", RIG_BENCH_ALL},
                 {"collectives", RIG_BENCH_COLLECTIVES}};
    for (size_t i = 0; name != NULL && i < RIG_ARRAY_LEN(kinds); i++)
        if (strcmp(name, kinds[i].name) == 0) return kinds[i].kind;
    return 0;
}

static int rig__compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rig_bench_median(double *values, int32_t count)
{
    RIG_ASSERT(values != NULL && count >= 1);
    qsort(values, (size_t)count, sizeof *values, rig__compare_double);
    if (count % 2 == 1) return values[count / 2];
    return 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

const char *rig__bench_model(const struct rig_bench_options *o)
{
    return o->model != NULL ? o->model : "qwen3-0.6b";
}

enum rig_status rig__bench_fail(const struct rig__bench_dev *dev, enum rig_status status,
                                const char *what, char *error, size_t error_len)
{
    RIG_ASSERT(status < 0);
    const char *hal = dev != NULL && dev->stream != NULL ? rig_hal_stream_error(dev->stream) : "";
    snprintf(error, error_len, "%s: %s%s%s", what, rig_status_message(status),
             hal[0] != '\0' ? ": " : "", hal);
    return status;
}

void rig__bench_progress(const struct rig_bench_options *o, const char *what, int64_t done,
                         int64_t total)
{
    if (o->progress != NULL) o->progress(o->user, what, done, total);
}

void rig__bench_close(struct rig__bench_dev *dev)
{
    for (int32_t i = 0; i < dev->events; i++) {
        rig_hal_event_destroy(dev->start[i]);
        rig_hal_event_destroy(dev->end[i]);
    }
    if (dev->stream != NULL) rig_hal_stream_destroy(dev->stream);
    if (dev->device != NULL) rig_hal_close(dev->device);
    memset(dev, 0, sizeof *dev);
}

enum rig_status rig__bench_event_pairs(struct rig_device *device, int32_t pairs,
                                       struct rig_event **start, struct rig_event **end,
                                       int32_t *made)
{
    enum rig_status status = RIG_OK;
    for (int32_t i = 0; status == RIG_OK && i < pairs; i++) {
        status = rig_hal_event_create(device, &start[i]);
        if (status != RIG_OK) break;
        status = rig_hal_event_create(device, &end[i]);
        if (status != RIG_OK)
            rig_hal_event_destroy(start[i]);
        else
            (*made)++;
    }
    return status;
}

enum rig_status rig__bench_open(const struct rig_bench_options *options, struct rig__bench_dev *dev,
                                char *error, size_t error_len)
{
    RIG_ASSERT(options->repeats >= 1 && options->repeats <= RIG_BENCH_REPEATS_MAX);
    memset(dev, 0, sizeof *dev);
    struct rig_device_config config = {.first_ordinal = 0, .profile = options->profile, .seed = 1};
    config.timing_only = strcmp(options->backend, "sim") == 0;
    enum rig_status status = rig_hal_open(options->backend, &config, 1, &dev->device);
    if (status < 0) {
        dev->device = NULL;
        snprintf(error, error_len, "opening a %s device: %s", options->backend,
                 rig_status_message(status));
        return status;
    }
    dev->timing_only = rig_hal_device_info(dev->device)->timing_only;
    status = rig_hal_stream_create(dev->device, &dev->stream);
    if (status == RIG_OK)
        status = rig__bench_event_pairs(dev->device, options->repeats, dev->start, dev->end,
                                        &dev->events);
    if (status < 0) {
        rig__bench_close(dev);
        return rig__bench_fail(NULL, status, "creating streams and events", error, error_len);
    }
    return RIG_OK;
}

enum rig_status rig__bench_time(struct rig__bench_dev *dev, int32_t warmup, int32_t repeats,
                                rig__bench_fn fn, void *ctx, double *ns)
{
    return rig__bench_time_spread(dev, warmup, repeats, fn, ctx, ns, NULL, NULL);
}

enum rig_status rig__bench_time_spread(struct rig__bench_dev *dev, int32_t warmup,
                                       int32_t repeats, rig__bench_fn fn, void *ctx, double *ns,
                                       double *min_ns, double *max_ns)
{
    RIG_ASSERT(repeats >= 1 && repeats <= dev->events);
    RIG_ASSERT(warmup >= 0);
    enum rig_status status = RIG_OK;
    for (int32_t i = 0; i < warmup && status == RIG_OK; i++)
        status = fn(ctx, dev->stream);
    if (status == RIG_OK) status = rig_hal_stream_synchronize(dev->stream);
    for (int32_t i = 0; i < repeats && status == RIG_OK; i++) {
        status = rig_hal_event_record(dev->start[i], dev->stream);
        if (status == RIG_OK) status = fn(ctx, dev->stream);
        if (status == RIG_OK) status = rig_hal_event_record(dev->end[i], dev->stream);
    }
    if (status == RIG_OK) status = rig_hal_stream_synchronize(dev->stream);
    double times[RIG_BENCH_REPEATS_MAX];
    for (int32_t i = 0; i < repeats && status == RIG_OK; i++) {
        int64_t elapsed = 0;
        status = rig_hal_event_elapsed_ns(dev->start[i], dev->end[i], &elapsed);
        times[i] = (double)elapsed;
    }
    if (status == RIG_OK) {
        *ns = rig_bench_median(times, repeats); /* sorts times */
        if (min_ns != NULL) *min_ns = times[0];
        if (max_ns != NULL) *max_ns = times[repeats - 1];
    }
    return status;
}

void rig__bench_identify(const struct rig__bench_dev *dev, const struct rig_bench_options *o,
                         struct rig_bench_report *report)
{
    const struct rig_device_info *info = rig_hal_device_info(dev->device);
    snprintf(report->backend, sizeof report->backend, "%s", info->backend);
    snprintf(report->device, sizeof report->device, "%s", info->name);
    snprintf(report->model, sizeof report->model, "%s", rig__bench_model(o));
    report->device_memory_bytes = info->memory_bytes;
    report->predicted = info->virtual_clock;
    report->repeats = o->repeats;
}

double rig_bench_idle_fraction(const struct rig_results *results)
{
    RIG_ASSERT(results != NULL);
    double idle = 0.0, span = 0.0;
    for (int64_t i = 0; i + 1 < results->step_count; i++) {
        const struct rig_results_step *a = &results->steps[i], *b = &results->steps[i + 1];
        if (a->phase != RIG_STEP_DECODE || b->phase != RIG_STEP_DECODE) continue;
        if (b->start_ns > a->end_ns) idle += (double)(b->start_ns - a->end_ns);
        span += (double)(b->end_ns - a->end_ns);
    }
    return span > 0.0 ? idle / span : 0.0;
}

double rig_bench_prefill_flops(const char *model, int32_t chunk, int32_t prefix)
{
    struct rig_model_config c;
    if (rig_model_config_preset(model, &c) != RIG_OK) return -1.0;
    RIG_ASSERT(chunk >= 1 && prefix >= 0);
    double h = c.hidden_size, d = c.head_dim, q = (double)c.num_heads * d;
    double kv = (double)c.num_kv_heads * d, inter = c.intermediate_size;
    double linear = h * (q + 2.0 * kv) + q * h + 3.0 * inter * h; /* per layer, per token */
    /* query i (0-based) of the chunk attends to prefix + i + 1 positions */
    double pairs = (double)chunk * prefix + (double)chunk * (chunk + 1.0) / 2.0;
    double layers = c.num_layers;
    return layers * (2.0 * linear * chunk + 4.0 * q * pairs) + 2.0 * h * c.vocab_size;
}

enum rig_status rig_bench_run(const struct rig_bench_options *options, int32_t kinds,
                              struct rig_bench_report *report, char *error, size_t error_len)
{
    RIG_ASSERT(options != NULL && report != NULL);
    memset(report, 0, sizeof *report);
    if (kinds <= 0 || (kinds & ~(RIG_BENCH_ALL | RIG_BENCH_COLLECTIVES)) != 0) {
        snprintf(error, error_len, "no benchmark selected");
        return RIG_E_INVALID;
    }
    int32_t one_rank = RIG_BENCH_DECODE | RIG_BENCH_PREFILL | RIG_BENCH_OPS | RIG_BENCH_ATTENTION;
    if (options->tp < 1 || options->tp > RIG_DEVICES_MAX ||
        (options->tp > 1 && (kinds & one_rank) != 0)) {
        snprintf(error, error_len,
                 "tp %d: the serving runs (offline, online) and collectives take 1..%d ranks; "
                 "decode, prefill, attention and ops time one rank's forward and take tp 1",
                 (int)options->tp, RIG_DEVICES_MAX);
        return RIG_E_INVALID;
    }
    report->tp = options->tp;
    enum rig_status status = rig_bench_floors(options, report, error, error_len);
    if (status == RIG_OK && (kinds & RIG_BENCH_DECODE))
        status = rig_bench_decode(options, report, error, error_len);
    if (status == RIG_OK && (kinds & RIG_BENCH_PREFILL))
        status = rig_bench_prefill(options, report, error, error_len);
    if (status == RIG_OK && (kinds & RIG_BENCH_OPS))
        status = rig_bench_ops(options, report, error, error_len);
    if (status == RIG_OK && (kinds & RIG_BENCH_ATTENTION))
        status = rig_bench_attention(options, report, error, error_len);
    if (status == RIG_OK && (kinds & RIG_BENCH_OFFLINE))
        status = rig_bench_offline(options, report, error, error_len);
    if (status == RIG_OK && (kinds & RIG_BENCH_ONLINE))
        status = rig_bench_online(options, report, error, error_len);
    if (status == RIG_OK && (kinds & RIG_BENCH_COLLECTIVES))
        status = rig_bench_collectives(options, report, error, error_len);
    return status;
}
