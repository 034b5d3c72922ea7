/* metrics.h — the server's Prometheus metrics (text exposition format 0.0.4), under SGLang's
 * metric names with the `rig:` prefix: running and queued requests, KV usage, prefix-cache hit
 * rate, prompt / generation / cached token counters, requests by finish reason, and histograms
 * of time to first token, inter-token latency and end-to-end latency (seconds, engine clock:
 * virtual on the simulator, so a paced simulator shows what the GPU profile predicts).
 *
 * Writers: the engine's thread (observer callbacks, after each step) and HTTP threads
 * (requests refused before reaching the engine). Every update is a relaxed atomic add or store:
 * no lock, so the engine's thread never waits on a scrape. A scrape reads each value once; the
 * values of one scrape are not a consistent snapshot across metrics (Prometheus clients' are
 * not either), but each histogram's count equals the sum of its buckets.
 */
#ifndef RIG_SERVE_METRICS_H
#define RIG_SERVE_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/serve/buffer.h"

#define RIG_SERVE_BUCKETS_MAX 20

struct rig_serve_histogram {
    const char *name;                    /* "rig:time_to_first_token_seconds" */
    const char *help;
    const double *bounds;                /* (bound_count) upper bounds, seconds, increasing */
    int32_t bound_count;
    _Atomic uint64_t buckets[RIG_SERVE_BUCKETS_MAX + 1]; /* (bound_count + 1) not cumulative */
    _Atomic uint64_t sum_ns;
};

enum rig_serve_finish {
    RIG_SERVE_FINISH_STOP = 0,
    RIG_SERVE_FINISH_LENGTH = 1,
    RIG_SERVE_FINISH_ABORT = 2,
    RIG_SERVE_FINISH_REJECTED = 3,       /* refused after parsing: context, queue full */
    RIG_SERVE_FINISH_COUNT = 4,
};

/* "stop", "length", "abort", "rejected". */
const char *rig_serve_finish_name(enum rig_serve_finish finish);

struct rig_serve_metrics {
    /* gauges, written after every engine step */
    _Atomic int64_t running;             /* requests decoding or being prefilled */
    _Atomic int64_t queued;              /* requests waiting for admission (engine + inbox) */
    _Atomic int64_t used_tokens;         /* KV slots held by requests (owned + locked) */
    _Atomic int64_t total_tokens;        /* KV slots in the pool */
    _Atomic int64_t pages[4];            /* free, evictable, locked, owned */
    _Atomic int64_t page_size;
    /* counters */
    _Atomic uint64_t prompt_tokens;
    _Atomic uint64_t generation_tokens;
    _Atomic uint64_t cached_tokens;
    _Atomic uint64_t requests[RIG_SERVE_FINISH_COUNT];
    _Atomic uint64_t http_errors;        /* 4xx / 5xx answers */
    struct rig_serve_histogram ttft;
    struct rig_serve_histogram itl;
    struct rig_serve_histogram e2e;
};

/* Zeroes everything and sets the histograms' names and buckets. Can't fail. */
void rig_serve_metrics_init(struct rig_serve_metrics *m);
/* Records one value (ns >= 0) in a histogram. Any thread. Can't fail. */
void rig_serve_histogram_observe(struct rig_serve_histogram *h, int64_t ns);
/* Appends the exposition text (# HELP, # TYPE, samples) with `model_name` as a label.
 * Fails only when the buffer cannot grow. */
enum rig_status rig_serve_metrics_render(const struct rig_serve_metrics *m,
                                         const char *model_name, struct rig_serve_buffer *out);

#endif /* RIG_SERVE_METRICS_H */
