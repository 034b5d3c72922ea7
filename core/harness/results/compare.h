/* compare.h — `rig compare MEASURED.h5 PREDICTED.h5`: how far a prediction is from a run.
 *
 * Reads two results files (docs/results.md; typically one from `--backend cuda` and one
 * from the simulator replaying the same scenario) and compares them
 *   step by step: a measured step is paired with the predicted step that ran the same
 *   requests (the uids of /step_requests), in the same phase, over the same number of
 *   tokens — the first unpaired one, in step order (the schedule is deterministic, so an
 *   offline run pairs every step; an online run pairs every step whose batch the two
 *   runs formed alike). Error = (predicted - measured) / measured of each pair's duration,
 *   summarised per phase and per batch-size bucket: median and p90 of |error|, mean
 *   signed error; every step, paired or not, also enters its group's median duration;
 *   request by request: TTFT / TPOT / ITL / E2E percentiles side by side (the /summary of
 *   each file), duration, throughput, and the device idle fraction between steps;
 *   host time per phase: median host_launch (and its parts: schedule, prepare, issue, where
 *   the files have them; beside them host_loop, the time between steps), host_process and
 *   device gap before a step of
 *   each run (files written before the host columns read NaN).
 *
 * Ownership: a struct rig_compare_run owns its arrays (rig_compare_run_free releases
 * them); a report is plain data. Threads: HDF5 is not thread-safe: one thread at a time.
 */
#ifndef RIG_RESULTS_COMPARE_H
#define RIG_RESULTS_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/harness/results/metrics.h"
#include "hal/status.h"

#define RIG_COMPARE_BUCKETS 6 /* batch sizes 1, 2-8, 9-32, 33-128, 129-512, 513+ */
#define RIG_COMPARE_GROUPS  (4 + RIG_COMPARE_BUCKETS) /* prefill, decode, mixed, all, buckets */
#define RIG_COMPARE_METRICS 24

/* The steps and summary of one results file. */
struct rig_compare_run {
    char path[256];
    char backend[16];
    char device[128];
    int64_t step_count;
    int32_t *phase;     /* (step_count) enum rig_step_phase */
    int32_t *batch;     /* (step_count) requests in the step */
    int32_t *tokens;    /* (step_count) tokens computed */
    double *start_s;    /* (step_count) on the device timeline */
    double *duration_s; /* (step_count) */
    double *host_launch_s;  /* (step_count) host schedule + prepare + launch; NaN: not in file */
    double *host_process_s; /* (step_count) host result processing; NaN: not in file */
    double *host_loop_s;    /* (step_count) host time from the latest processing to the
                               step's launch; NaN: not in file */
    double *host_part_s[3]; /* (step_count each) host_launch's parts: choosing the batch,
                               writing its metadata, issuing it; NaN: not in file */
    uint64_t *key;      /* (step_count) hash of phase, tokens and the uids the step ran */
    struct rig_metrics metrics; /* from /summary */
};

/* Step errors of one group of paired steps. */
struct rig_compare_group {
    char label[24];       /* "prefill", "decode", "mixed", "all", "batch 9-32" */
    int64_t pairs;        /* paired steps in the group */
    double median_abs;    /* median |error| (fraction) */
    double p90_abs;       /* 90th percentile of |error| */
    double mean_signed;   /* mean error: < 0 means predicted too fast */
    int64_t measured_steps, predicted_steps; /* every step of the group, paired or not */
    double measured_median_s, predicted_median_s; /* median duration over those */
};

/* Host time per step of one phase, both runs' medians over all their steps of it (not
 * paired: host time depends on the phase and batch, not on which requests ran). NaN where a
 * run has no such step or its file no host columns. */
struct rig_compare_host {
    char label[24]; /* "prefill", "decode", "mixed" */
    double launch_s[2];  /* measured, predicted: median host_launch */
    double process_s[2]; /* median host_process */
    double gap_s[2];     /* median device idle before such a step (after the previous one) */
    double part_s[3][2]; /* median schedule, prepare, issue: host_launch's parts */
    double loop_s[2];    /* median host_loop: between the latest processing and the launch */
};

/* One metric side by side. */
struct rig_compare_metric {
    char name[32];
    double measured, predicted;
    double error; /* (predicted - measured) / measured; NaN where measured is 0 */
};

struct rig_compare_report {
    int64_t measured_steps, predicted_steps;
    int64_t paired;         /* steps paired by the requests they ran */
    int64_t first_mismatch; /* first index where the two schedules differ; -1 none */
    struct rig_compare_group groups[RIG_COMPARE_GROUPS];
    int32_t group_count;
    double measured_idle, predicted_idle; /* device idle between steps / the steps' span */
    struct rig_compare_host host[3];      /* prefill, decode, mixed */
    struct rig_compare_metric metrics[RIG_COMPARE_METRICS];
    int32_t metric_count;
};

/* Reads the steps and summary of `path`. RIG_E_IO (cannot open or read it) or RIG_E_PARSE
 * (not a rig results file) with a message in `error`; `run` is then empty. */
enum rig_status rig_compare_read(const char *path, struct rig_compare_run *run, char *error,
                                 size_t error_len);
void rig_compare_run_free(struct rig_compare_run *run);

/* Compares two runs. RIG_E_NO_MEMORY when scratch space cannot be allocated (the report is
 * then zeroed); otherwise RIG_OK. */
enum rig_status rig_compare_runs(const struct rig_compare_run *measured,
                                 const struct rig_compare_run *predicted,
                                 struct rig_compare_report *report);

/* The report as tables, for a terminal. Can't fail (write errors are the stream's). */
void rig_compare_print(const struct rig_compare_run *measured,
                       const struct rig_compare_run *predicted,
                       const struct rig_compare_report *report, FILE *out);

/* Device idle fraction of a run: 1 - sum of step durations / (last end - first start);
 * 0 without steps. */
double rig_compare_idle(const struct rig_compare_run *run);

#endif /* RIG_RESULTS_COMPARE_H */
