/* profile.h — `rig profile`: the op sweep behind the simulator's table-driven cost model
 * (sim/optable.h; the table format, hal/optable.h; docs/simulator.md "Op tables").
 *
 * Times every HAL op the forward issues over a grid of shapes that covers the calibration
 * models' layers and their TP splits (default qwen3-0.6b and qwen3-8b at TP 1, 2, 4, 8):
 *   gemm               M = 1 .. 16384, powers of 2 and 1.5 x them (the LM head to 1024, f32
 *                      out) x each (N, K) of the models' linears per TP degree;
 *   attention_decode   batch 1 .. 256 (powers of 2 and 1.5 x them) x context 128 .. 4096
 *                      (powers of 2; at most 2^20 KV slots) per
 *                      (Hq, Hk, D) of the models per TP degree, every request at the
 *                      context, and ragged (request r of R at context (r + 1) / R);
 *   attention_prefill  1, 4 or 16 requests x 16 .. 16384 query tokens in all (powers of 2)
 *                      x prefix 0, 256, 1024, 8192, per (Hq, Hk, D);
 *   element-wise, copy rms_norm, add_rms_norm, silu_mul, qk_norm_rope_store, embedding,
 *                      gather_rows over the rows above, of the models' widths; sample over
 *                      1 .. 1024 rows of the vocabulary.
 * Each point: the median, 10th and 90th percentile of `repeats` cold issues (a 128 MiB
 * fill evicts L2 before each; device events around the op alone), the median host time of
 * those issues (the op call alone: what an eager launch costs the host), the host time of
 * the shape's first issue (first use: module loading, a library's kernel choice; the sweep
 * issues every shape first here, in its grid order) and the median warm
 * time per issue (8 issues captured in a graph, replayed 3 times; an op of 1 ms or more cold
 * is taken as warm = cold). Before the points, the host calls a step makes besides its ops
 * (copies, events, waits, a graph launch, a kernel launch: hal/optable.h, rig_optable_host),
 * each the median and mean of 256 issues. After the points, unless told not to, the
 * calibration stage (host_fit.h): the engine on the calibration model over a short synthetic
 * workload, its steps' host columns fitted to the host model (hal/host_model.h) into the
 * same struct. Points are written with
 * rig_optable_write; on the simulator the same sweep gives the cost model's own table
 * (a test of the pipeline, and what `rig compare` of two models needs).
 *
 * Threads: one. Memory: buffers sized for the largest point, allocated once.
 */
#ifndef RIG_BENCH_PROFILE_H
#define RIG_BENCH_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "hal/status.h"
#include "hal/optable.h"

#define RIG_PROFILE_MODELS_MAX 4
#define RIG_PROFILE_ATTRS_MAX  16

struct rig_profile_options {
    const char *backend;                       /* "sim" | "cuda" */
    const char *profile;                       /* simulator profile (NULL: h100) */
    const char *models[RIG_PROFILE_MODELS_MAX]; /* presets whose shapes are swept */
    int32_t model_count;
    int32_t tp_max;  /* TP degrees 1, 2, .. up to this (power of two) */
    int32_t repeats; /* cold repeats per point, 3..RIG_BENCH_REPEATS_MAX */
    bool quick;      /* a small grid (CI) */
    double seconds_max; /* > 0: stop sweeping (keeping the points so far) after this long */
    bool host_fit;      /* run the calibration stage (default true) */
    const char *host_fit_model; /* its model preset (NULL: qwen3-0.6b) */
    const char *host_fit_out;   /* non-NULL: its run's records written here (HDF5) */
    /* done and total -1: `what` is a whole line (the calibration stage's) */
    void (*progress)(void *user, const char *what, int64_t done, int64_t total);
    void *user;
};

/* Defaults: sim, qwen3-0.6b and qwen3-8b, TP up to 8, 7 repeats, full grid, calibration on. */
void rig_profile_options_default(struct rig_profile_options *options);

/* Runs the sweep; *points (malloc'd, the caller frees) receives *count points and *host the
 * host calls' times (hal/optable.h; graph launch 0 on a backend without graphs) and, with
 * host_fit, the fitted host model (every coefficient given). On error returns a negative
 * status with a message; nothing is returned. */
enum rig_status rig_profile_run(const struct rig_profile_options *options,
                                struct rig_optable_point **points, int64_t *count,
                                struct rig_optable_host *host, char *device, size_t device_len,
                                char *error, size_t error_len);

#endif /* RIG_BENCH_PROFILE_H */
