/* bench.h — `rig bench`: performance measured against the hardware's own floors (issue 8).
 *
 * Every benchmark runs through the HAL and the engine unchanged on any backend: on CUDA the
 * times are device events (wall clock); on the simulator they are the cost model's
 * predictions on the virtual clock (timing-only mode: no math, phantom buffers), and every
 * report says which. The benchmarks:
 *   floors     device-to-device copy bandwidth (rig_hal_buffer_copy, bytes read + written)
 *              and bf16 GEMM FLOP/s (rig_hal_gemm, large square, random data), each the
 *              median of timed repeats after a warm-up; every other number is divided by
 *              a floor derived from these two, measured in the same process;
 *   decode     one model forward of a prepared decode batch (batch x context), eager and as
 *              a captured graph where the backend has graphs; floor = (weight bytes + KV
 *              bytes read) / copy bandwidth, or FLOPs / GEMM rate if larger;
 *   prefill    one forward of a single chunk, without and with a cached prefix of the same
 *              length; model FLOPs (linear layers, causal attention, LM head of the last
 *              position) over the GEMM rate;
 *   attention  the decode attention op alone (KV bytes read / bandwidth) and the prefill
 *              attention op alone (causal FLOPs / GEMM rate), on shapes of the model;
 *   offline    Mini-SGLang's offline benchmark through the scenario runner (the
 *              `minisgl_offline` workload), overlap on and off: throughput, the floor of
 *              all the KV and weight bytes the run must read plus its prefill FLOPs, and
 *              the GPU idle fraction between consecutive decode steps;
 *   ops        every op of a decode step (batch 1 and 256, context 512) and of a prefill
 *              step (one causal 8192-token chunk) timed alone on the model's shapes, with
 *              how often a step issues it;
 *   online     the `random` workload with Poisson arrivals over a sweep of rates: TTFT,
 *              TPOT, ITL, E2E percentiles (sglang.bench_serving definitions).
 *
 * Ownership: a struct rig_bench_report holds every result in fixed arrays (bounded by the
 * RIG_BENCH_*_MAX limits); serving runs write their full records (requests, steps,
 * tokens) to their own HDF5 files as they finish, so no run's records outlive it.
 * Threads: one thread drives a benchmark; the backends must be registered before.
 * Determinism: on the simulator the same options give the same report, byte for byte.
 */
#ifndef RIG_BENCH_H
#define RIG_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/harness/results/metrics.h"
#include "core/harness/results/results.h"
#include "hal/status.h"

#define RIG_BENCH_DECODE_MAX    16
#define RIG_BENCH_PREFILL_MAX   16
#define RIG_BENCH_ATTENTION_MAX 4
#define RIG_BENCH_SERVING_MAX   24
#define RIG_BENCH_OPS_MAX       48
#define RIG_BENCH_COLLECTIVES_MAX 8
#define RIG_BENCH_REPEATS_MAX   64
#define RIG_BENCH_TEXT_MAX      128

/* Which benchmarks to run: a bit set. */
enum rig_bench_kind {
    RIG_BENCH_FLOORS = 1 << 0,
    RIG_BENCH_DECODE = 1 << 1,
    RIG_BENCH_PREFILL = 1 << 2,
    RIG_BENCH_ATTENTION = 1 << 3,
    RIG_BENCH_OFFLINE = 1 << 4,
    RIG_BENCH_ONLINE = 1 << 5,
    RIG_BENCH_OPS = 1 << 6,
    RIG_BENCH_ALL = (1 << 7) - 1,
    RIG_BENCH_COLLECTIVES = 1 << 7, /* named only (needs --tp >= 2): not in ALL */
};

/* "floors", "decode", "prefill", "attention", "offline", "online", "ops", "all"; 0 if
 * unknown. */
int32_t rig_bench_kind_parse(const char *name);

struct rig_bench_options {
    const char *backend;     /* "sim" | "cuda" */
    const char *profile;     /* simulator device profile; NULL = "h100" */
    const char *model;       /* model preset; NULL = "qwen3-0.6b" */
    const char *out_dir;     /* serving runs' HDF5 files go here; NULL = none written */
    bool quick;              /* small sizes (CI smoke test) */
    int32_t repeats;         /* timed repeats per measurement, 1..RIG_BENCH_REPEATS_MAX */
    int32_t online_requests; /* requests per online rate; 0 = default */
    double online_rates[RIG_BENCH_SERVING_MAX]; /* (online_rate_count) requests/s */
    int32_t online_rate_count;                  /* 0 = default sweep */
    bool online_overlap;     /* online runs with overlap scheduling on (default) */
    bool online_no_overlap;  /* ... and/or off ("online-R-no-overlap") */
    bool offline_overlap;    /* the offline run with overlap on (default) */
    bool offline_no_overlap; /* ... and/or off ("offline-no-overlap", default) */
    int32_t tp;              /* tensor-parallel ranks of the serving runs (offline, online);
                                1..8; the forward benchmarks time one rank and need 1 */
    /* Called as work proceeds (may be NULL): `done` of `total` units of `what`. */
    void (*progress)(void *user, const char *what, int64_t done, int64_t total);
    void *user;
};

/* Defaults: sim, h100, qwen3-0.6b, no files, full sizes, 10 repeats. Can't fail. */
void rig_bench_options_default(struct rig_bench_options *options);

struct rig_bench_floors {
    int64_t copy_bytes; /* size of the copied buffer */
    double copy_ns;     /* median time of one copy */
    double bandwidth;   /* bytes read + written per second */
    int32_t gemm_size;  /* M = N = K */
    double gemm_ns;     /* median time of one GEMM */
    double gemm_flops;  /* FLOP/s (2 M N K per GEMM) */
};

struct rig_bench_decode_row {
    int32_t batch, context; /* requests; KV positions each attends to */
    double eager_ns;        /* median device time of one forward, eager */
    double graph_ns;        /* the same replayed as a graph; -1 without graphs */
    double weight_bytes;    /* bytes of weights one step reads */
    double kv_bytes;        /* bytes of KV one step reads (batch x context slots) */
    double flops;           /* model FLOPs of the step */
    double floor_ns;        /* max(bytes / bandwidth, flops / GEMM rate) */
    double ratio;           /* best of eager and graph / floor (1 = at the floor) */
};

struct rig_bench_prefill_row {
    int32_t chunk, prefix; /* new tokens; cached tokens before them */
    double ns;             /* median device time of one forward */
    double flops;          /* model FLOPs */
    double floor_ns;       /* max(flops / GEMM rate, weight bytes / bandwidth) */
    double flops_per_s;
    double mfu; /* flops_per_s / measured GEMM FLOP/s */
};

struct rig_bench_attention_row {
    char op[16];            /* "decode" | "prefill" */
    int32_t batch, context; /* requests; KV length (prefill: the chunk, causal) */
    double ns;              /* median device time of one op (one layer) */
    double min_ns, max_ns;  /* the fastest and slowest of the repeats */
    double bytes, flops;    /* KV bytes read; FLOPs */
    double floor_ns;        /* bytes / bandwidth (decode), flops / GEMM rate (prefill) */
    double ratio;           /* floor_ns / ns: fraction of the floor's rate reached */
};

struct rig_bench_serving_row {
    char name[32]; /* "offline", "offline-no-overlap", "online-16" */
    double rate;   /* requests/s; INFINITY = all at t = 0 */
    bool overlap;
    int32_t requests;
    struct rig_metrics metrics;
    int64_t steps, decode_steps;
    double floor_s;       /* offline: the KV + weight bytes and prefill FLOPs floor */
    double floor_ratio;   /* floor_s / duration */
    double idle_fraction; /* device idle between consecutive decode steps / their span */
    /* Overlap seen from the host (rig_engine_stats): of the launches issued while an earlier
     * batch was in flight, the fraction whose issue returned before that batch's forward had
     * ended on the device; and the mean host time of one launch's issue. */
    double ahead_fraction;
    double launch_host_us;
    char path[RIG_BENCH_TEXT_MAX * 2]; /* the run's HDF5 file, "" when none */
};

/* The TP group's all-reduce of one size timed alone (collectives.c), nccl-tests' way. */
struct rig_bench_collective_row {
    int64_t bytes;         /* bf16 elements x 2, in place */
    int32_t ranks;
    double ns;             /* the slowest rank's median device time of one all-reduce */
    double issue_ns;       /* the slowest rank's host time to issue one (mean over repeats) */
    double graph_ns;       /* the slowest rank's median time of one inside a replayed graph */
    double algbw, busbw;   /* bytes / s; algbw x 2 (ranks - 1) / ranks */
};

/* One op of a decode or prefill step timed alone (ops.c): where a step's time goes. */
struct rig_bench_op_row {
    char op[24];            /* "gemm qkv", "attention_decode", ... */
    int32_t batch, tokens;  /* requests; tokens of the step (decode: = batch) */
    int32_t context;        /* KV positions each request attends to */
    int32_t count;          /* times one step issues it */
    double ns;              /* median device time of one issue */
    double share;           /* count x ns / the same summed over the step's ops */
};

struct rig_bench_report {
    char backend[16];
    char device[RIG_BENCH_TEXT_MAX];
    char model[64];
    int64_t device_memory_bytes; /* of the device the floors ran on */
    int32_t tp;                  /* ranks of the serving runs (each a device like that one) */
    bool predicted; /* virtual clock: cost-model predictions, not measurements */
    int32_t repeats;
    struct rig_bench_floors floors;
    bool have_floors;
    struct rig_bench_decode_row decode[RIG_BENCH_DECODE_MAX];
    int32_t decode_count;
    struct rig_bench_prefill_row prefill[RIG_BENCH_PREFILL_MAX];
    int32_t prefill_count;
    struct rig_bench_attention_row attention[RIG_BENCH_ATTENTION_MAX];
    int32_t attention_count;
    struct rig_bench_serving_row serving[RIG_BENCH_SERVING_MAX];
    int32_t serving_count;
    struct rig_bench_op_row ops[RIG_BENCH_OPS_MAX];
    int32_t op_count;
    struct rig_bench_collective_row collectives[RIG_BENCH_COLLECTIVES_MAX];
    int32_t collective_count;
};

/* Runs the benchmarks in `kinds` (floors always first: the others are divided by them) and
 * fills `report` (zeroed first). On error returns a negative status with a message in
 * `error`; the rows finished before the error stay in `report`. */
enum rig_status rig_bench_run(const struct rig_bench_options *options, int32_t kinds,
                              struct rig_bench_report *report, char *error, size_t error_len);

/* The parts, for tests and other drivers; each appends to `report`. */
enum rig_status rig_bench_floors(const struct rig_bench_options *options,
                                 struct rig_bench_report *report, char *error, size_t error_len);
enum rig_status rig_bench_decode(const struct rig_bench_options *options,
                                 struct rig_bench_report *report, char *error, size_t error_len);
enum rig_status rig_bench_prefill(const struct rig_bench_options *options,
                                  struct rig_bench_report *report, char *error, size_t error_len);
enum rig_status rig_bench_attention(const struct rig_bench_options *options,
                                    struct rig_bench_report *report, char *error, size_t error_len);
enum rig_status rig_bench_offline(const struct rig_bench_options *options,
                                  struct rig_bench_report *report, char *error, size_t error_len);
enum rig_status rig_bench_ops(const struct rig_bench_options *options,
                              struct rig_bench_report *report, char *error, size_t error_len);
enum rig_status rig_bench_online(const struct rig_bench_options *options,
                                 struct rig_bench_report *report, char *error, size_t error_len);
enum rig_status rig_bench_collectives(const struct rig_bench_options *options,
                                      struct rig_bench_report *report, char *error,
                                      size_t error_len);

/* Median of `count` (>= 1) values; sorts them in place. */
double rig_bench_median(double *values, int32_t count);

/* Device idle fraction between consecutive decode steps of `results`: the sum over every
 * pair of adjacent steps that are both decode steps of max(0, start[i+1] - end[i]), over
 * the sum of (end[i+1] - end[i]) of the same pairs. 0 when there is no such pair. */
double rig_bench_idle_fraction(const struct rig_results *results);

/* Model FLOPs of a prefill chunk of `chunk` tokens after `prefix` cached ones, for a model
 * preset: 2 x linear weights x tokens, 4 x heads x head_dim x attended pairs (causal), and
 * the LM head of the last position. -1 for an unknown preset. */
double rig_bench_prefill_flops(const char *model, int32_t chunk, int32_t prefix);

/* Writes the report's tables to `path` (HDF5; docs/performance.md lists the layout):
 * root attributes (rig version, commit, backend, device, model, predicted), /floors,
 * /decode, /prefill, /attention, /serving as compound datasets. Deterministic bytes.
 * RIG_E_IO with a message on error; a partial file is removed. */
enum rig_status rig_bench_write_h5(const struct rig_bench_report *report, const char *path,
                                   char *error, size_t error_len);

#endif /* RIG_BENCH_H */
