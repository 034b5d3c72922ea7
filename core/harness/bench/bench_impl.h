/* bench_impl.h — private to core/harness/bench/: one opened device with a stream and the events
 * that time repeats, shared by the files that run the benchmarks.
 *
 * Timing: rig__bench_time issues `warmup` untimed runs, then `repeats` runs back to back,
 * each between its own pair of events, synchronises once, and takes the median of the
 * event-to-event times. Back to back means the host never waits between runs, so a run's
 * time is what the device spends on it when launches keep ahead of it (and the launch
 * cost when they do not: a launch-bound eager step is slow, and shows it). On the
 * simulator the events carry virtual times, so the same code yields the cost model's
 * prediction.
 */
#ifndef RIG_BENCH_IMPL_H
#define RIG_BENCH_IMPL_H

#include "core/harness/bench/bench.h"
#include "hal/hal.h"

struct rig__bench_dev {
    struct rig_device *device;
    struct rig_stream *stream;
    struct rig_event *start[RIG_BENCH_REPEATS_MAX]; /* (repeats) */
    struct rig_event *end[RIG_BENCH_REPEATS_MAX];   /* (repeats) */
    int32_t events;                                 /* created pairs */
    bool timing_only;
};

/* Opens one device of options->backend (timing-only on the simulator), its stream and
 * `repeats` event pairs. On error returns a negative status, a message in `error`, and
 * leaves nothing open. */
enum rig_status rig__bench_open(const struct rig_bench_options *options, struct rig__bench_dev *dev,
                                char *error, size_t error_len);
void rig__bench_close(struct rig__bench_dev *dev);
/* Creates `pairs` start/end event pairs on `device`, counting the pairs made in *made (a
 * failed pair leaves nothing of itself); the first failure's status. */
enum rig_status rig__bench_event_pairs(struct rig_device *device, int32_t pairs,
                                       struct rig_event **start, struct rig_event **end,
                                       int32_t *made);

/* Issues the timed work on a stream; returns its status. */
typedef enum rig_status (*rig__bench_fn)(void *ctx, struct rig_stream *stream);

/* Runs fn `warmup` times, then `repeats` (<= dev->events) times between events; the
 * median device time of one run in *ns. */
enum rig_status rig__bench_time(struct rig__bench_dev *dev, int32_t warmup, int32_t repeats,
                                rig__bench_fn fn, void *ctx, double *ns);

/* rig__bench_time, with the fastest and slowest repeat too (the spread of the repeats). */
enum rig_status rig__bench_time_spread(struct rig__bench_dev *dev, int32_t warmup,
                                       int32_t repeats, rig__bench_fn fn, void *ctx, double *ns,
                                       double *min_ns, double *max_ns);

/* The report's identification from the opened device. */
void rig__bench_identify(const struct rig__bench_dev *dev, const struct rig_bench_options *o,
                         struct rig_bench_report *report);

/* Writes "what: status[: op check message]" to `error`, the message being the failed op
 * check on dev's stream (dev NULL: none); returns status. */
enum rig_status rig__bench_fail(const struct rig__bench_dev *dev, enum rig_status status,
                                const char *what, char *error, size_t error_len);

void rig__bench_progress(const struct rig_bench_options *o, const char *what, int64_t done,
                         int64_t total);

/* The model preset of the options ("qwen3-0.6b" by default). */
const char *rig__bench_model(const struct rig_bench_options *o);

#endif /* RIG_BENCH_IMPL_H */
