/* host_fit.h — `rig profile`'s calibration stage: the engine's own host time (hal/host_model.h)
 * measured on the machine the op table describes, and fitted.
 *
 * After the op sweep, the engine runs a short synthetic workload on the calibration model
 * (qwen3-0.6b, dummy weights) through the scenario runner, as `rig run` and `rig bench` do, so
 * the host columns of its steps hold the same work as a served run's:
 *   burst    RIG_HOST_FIT_BURST requests at t = 0, prompts 16..1024 tokens, 8..400 out:
 *            prefill steps of ~8192 tokens with ~16 new requests each, then decode batches
 *            from 256 down, requests finishing all along;
 *   trickle  RIG_HOST_FIT_TRICKLE Poisson arrivals at RIG_HOST_FIT_RATE a second from
 *            RIG_HOST_FIT_TRICKLE_START, prompts 16..2048, 8..200 out: one-request prefills of
 *            every size, decode batches of 1 to ~20, arrivals and finishes in most windows;
 * with the settings of `rig bench`'s serving runs (256 running, budget 8192, context 2048,
 * decode graphs to 256, overlap on). It takes a few seconds of device time; on the simulator
 * (timing only) a fraction of a second.
 *
 * The fit, per term: the step records' counts (rig_step_record host_counts) against the
 * term's measured column (host_schedule, host_prepare, host_process; host_loop over the
 * windows with no wait for an arrival and no empty schedule), coefficients >= 0 (a host time
 * is a sum of work), twice: least squares (the mean: a run's host time is a sum over its
 * steps, so it pays the mean, tails included), which the simulator uses, and least absolute
 * deviations (the median), kept beside it. On the simulator the columns are the model's own
 * charges, so the fit gives back the profile's coefficients (tests/test_sim_optable.c).
 *
 * Threads: the caller's; it opens and closes its own engine (the sweep's device must be
 * closed first on a GPU).
 */
#ifndef RIG_BENCH_HOST_FIT_H
#define RIG_BENCH_HOST_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/host_model.h"
#include "hal/status.h"

#define RIG_HOST_FIT_BURST         256
#define RIG_HOST_FIT_TRICKLE       160
#define RIG_HOST_FIT_RATE          40.0 /* requests a second */
#define RIG_HOST_FIT_TRICKLE_START "0.5s"
#define RIG_HOST_FIT_QUICK         16 /* burst and trickle requests with `quick` */
#define RIG_HOST_FIT_ROWS_MIN      8  /* steps a term needs to be fitted */

struct rig_host_fit_options {
    const char *backend;      /* "sim" | "cuda" */
    const char *profile;      /* simulator profile (NULL: h100) */
    const char *model;        /* preset of the calibration model (NULL: qwen3-0.6b) */
    const char *results_path; /* non-NULL: the calibration run's records written here (HDF5) */
    bool quick;               /* a few requests (tests) */
};

struct rig_host_fit {
    struct rig_host_model mean;         /* least squares */
    struct rig_host_model median;       /* least absolute deviations */
    int64_t rows[RIG_HOST_TERMS];       /* steps each term was fitted on */
    double measured_ns[RIG_HOST_TERMS]; /* mean of the term's column over those steps */
    double residual_ns[RIG_HOST_TERMS]; /* median |measured - least-squares fit| */
    int64_t steps;                      /* steps in the run */
};

/* Runs the calibration workload and fits the model into *out. On error (an engine that cannot
 * be created, a failed run, a term with fewer than RIG_HOST_FIT_ROWS_MIN steps) returns a
 * negative status with a message in `error`; *out is zeroed then. */
enum rig_status rig_host_fit_run(const struct rig_host_fit_options *options,
                                 struct rig_host_fit *out, char *error, size_t error_len);

/* Fits y[i] ~ sum_f x[i][f] c[f] over `n` rows with every c[f] >= 0: least squares
 * (`median` false) or least absolute deviations (true, by iteratively reweighted least
 * squares). A factor whose column is all zero, or that the others already explain exactly
 * (collinear), gets 0. Exhaustive over the factors' subsets (2^RIG_HOST_FACTORS small solves),
 * so the minimum is the global one. Can't fail. */
void rig_host_fit_solve(const double (*x)[RIG_HOST_FACTORS], const double *y, int64_t n,
                        bool median, double c[RIG_HOST_FACTORS]);

#endif /* RIG_BENCH_HOST_FIT_H */
