/* host_fit.c — the calibration of the engine's host time; see host_fit.h. */
#include "core/harness/bench/host_fit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/results/h5.h"
#include "core/harness/results/metrics.h"
#include "core/harness/scenario/run.h"
#include "core/harness/scenario/scenario.h"

#define RIG__FACTORS    RIG_HOST_FACTORS
#define RIG__SUBSETS    (1 << RIG__FACTORS)
#define RIG__LAD_ROUNDS 100 /* reweightings of the median fit */
#define RIG__YAML_MAX   2048
#define RIG__PIVOT_MIN  1e-9 /* of a column's own scale: below it the column is collinear */

/* Solves the normal equations a c = b restricted to the factors in `subset` (a, b already
 * scaled so a's diagonal is O(1)); false when the subset is singular (a zero or collinear
 * column). Gaussian elimination with partial pivoting. */
static bool rig__solve_subset(const double a[RIG__FACTORS][RIG__FACTORS],
                              const double b[RIG__FACTORS], int32_t subset, double c[RIG__FACTORS])
{
    int32_t index[RIG__FACTORS], k = 0;
    for (int32_t f = 0; f < RIG__FACTORS; f++)
        if (subset & (1 << f)) index[k++] = f;
    double m[RIG__FACTORS][RIG__FACTORS + 1];
    for (int32_t i = 0; i < k; i++) {
        for (int32_t j = 0; j < k; j++)
            m[i][j] = a[index[i]][index[j]];
        m[i][k] = b[index[i]];
    }
    for (int32_t col = 0; col < k; col++) {
        int32_t pivot = col;
        for (int32_t r = col + 1; r < k; r++)
            if (fabs(m[r][col]) > fabs(m[pivot][col])) pivot = r;
        if (!(fabs(m[pivot][col]) > RIG__PIVOT_MIN)) return false;
        for (int32_t j = 0; j <= k; j++) {
            double t = m[col][j];
            m[col][j] = m[pivot][j], m[pivot][j] = t;
        }
        for (int32_t r = 0; r < k; r++) {
            if (r == col) continue;
            double ratio = m[r][col] / m[col][col];
            for (int32_t j = col; j <= k; j++)
                m[r][j] -= ratio * m[col][j];
        }
    }
    memset(c, 0, RIG__FACTORS * sizeof *c);
    for (int32_t i = 0; i < k; i++)
        c[index[i]] = m[i][k] / m[i][i];
    return true;
}

/* The weighted least-squares fit with c >= 0 over scaled columns: the best of the subsets
 * whose unconstrained solution is non-negative (the empty one, c = 0, always is). */
static void rig__nonnegative(const double (*x)[RIG__FACTORS], const double *y, const double *w,
                             int64_t n, const double scale[RIG__FACTORS], double c[RIG__FACTORS])
{
    double a[RIG__FACTORS][RIG__FACTORS] = {{0}}, b[RIG__FACTORS] = {0};
    for (int64_t i = 0; i < n; i++) {
        for (int32_t p = 0; p < RIG__FACTORS; p++) {
            double xp = x[i][p] / scale[p];
            b[p] += w[i] * xp * y[i];
            for (int32_t q = 0; q < RIG__FACTORS; q++)
                a[p][q] += w[i] * xp * x[i][q] / scale[q];
        }
    }
    double total = 0; /* normalise: the pivot threshold is relative */
    for (int32_t p = 0; p < RIG__FACTORS; p++)
        total += a[p][p];
    for (int32_t p = 0; p < RIG__FACTORS && total > 0; p++) {
        b[p] /= total;
        for (int32_t q = 0; q < RIG__FACTORS; q++)
            a[p][q] /= total;
    }
    double best = 0; /* the weighted SSE less the constant sum of w y^2, c = 0: 0 */
    memset(c, 0, RIG__FACTORS * sizeof *c);
    for (int32_t subset = 1; subset < RIG__SUBSETS; subset++) {
        double trial[RIG__FACTORS];
        if (!rig__solve_subset((const double(*)[RIG__FACTORS])a, b, subset, trial)) continue;
        bool feasible = true;
        double sse = 0; /* c'Ac - 2 b'c */
        for (int32_t p = 0; p < RIG__FACTORS; p++) {
            feasible = feasible && trial[p] >= 0;
            sse -= 2 * b[p] * trial[p];
            for (int32_t q = 0; q < RIG__FACTORS; q++)
                sse += trial[p] * a[p][q] * trial[q];
        }
        if (feasible && sse < best) {
            best = sse;
            memcpy(c, trial, sizeof trial);
        }
    }
}

void rig_host_fit_solve(const double (*x)[RIG_HOST_FACTORS], const double *y, int64_t n,
                        bool median, double c[RIG_HOST_FACTORS])
{
    RIG_ASSERT(x != NULL && y != NULL && c != NULL);
    RIG_ASSERT(n >= 0);
    double scale[RIG__FACTORS];
    for (int32_t f = 0; f < RIG__FACTORS; f++) {
        scale[f] = 0;
        for (int64_t i = 0; i < n; i++)
            scale[f] = fmax(scale[f], fabs(x[i][f]));
        if (scale[f] == 0) scale[f] = 1;
    }
    double *w = malloc((size_t)(n > 0 ? n : 1) * sizeof *w);
    RIG_ASSERT_MSG(w != NULL, "out of memory for the host fit's weights");
    for (int64_t i = 0; i < n; i++)
        w[i] = 1;
    double scaled[RIG__FACTORS];
    rig__nonnegative(x, y, w, n, scale, scaled);
    /* the median: least absolute deviations as least squares weighted 1 / |residual|,
     * residuals floored at a nanosecond (a row on the fit would weigh without bound) */
    for (int32_t round = 0; median && round < RIG__LAD_ROUNDS; round++) {
        for (int64_t i = 0; i < n; i++) {
            double fit = 0;
            for (int32_t f = 0; f < RIG__FACTORS; f++)
                fit += x[i][f] / scale[f] * scaled[f];
            w[i] = 1 / fmax(fabs(y[i] - fit), 1.0);
        }
        rig__nonnegative(x, y, w, n, scale, scaled);
    }
    for (int32_t f = 0; f < RIG__FACTORS; f++)
        c[f] = scaled[f] / scale[f];
    free(w);
}

/* The calibration scenario: the workloads of host_fit.h in the engine settings of `rig
 * bench`'s serving runs. */
static void rig__scenario_text(const struct rig_host_fit_options *o, char *text, size_t len)
{
    bool sim = strcmp(o->backend, "sim") == 0;
    char sim_section[256] = "";
    if (sim)
        snprintf(sim_section, sizeof sim_section, "sim: {profile: \"%s\", timing_only: true}\n",
                 o->profile != NULL ? o->profile : "h100");
    int32_t burst = o->quick ? RIG_HOST_FIT_QUICK : RIG_HOST_FIT_BURST;
    int32_t trickle = o->quick ? RIG_HOST_FIT_QUICK : RIG_HOST_FIT_TRICKLE;
    snprintf(text, len,
             "name: host-calibration\n"
             "model: {preset: %s}\n"
             "backend: %s\n"
             "%s"
             "engine: {num_pages: 400000, max_running_req: 256, prefill_budget: 8192,\n"
             "         max_seq_len: 2048, cuda_graph_max_bs: 256, overlap: true}\n"
             "seed: 0\n"
             "workloads:\n"
             "  - {kind: random, name: burst, count: %d, input_len: [16, 1024],\n"
             "     output_len: [8, 400], token_range: [0, 10000]}\n"
             "  - {kind: random, name: trickle, count: %d, input_len: [16, 2048],\n"
             "     output_len: [8, 200], token_range: [0, 10000], rate: %.17g,\n"
             "     start: %s}\n",
             o->model != NULL ? o->model : "qwen3-0.6b", o->backend, sim_section, burst, trickle,
             RIG_HOST_FIT_RATE, RIG_HOST_FIT_TRICKLE_START);
}

/* Step i's measured column of `term`, in ns; false when the step does not measure the term
 * (a loop window before the first processing, or holding a wait or an empty schedule). */
static bool rig__measured(const struct rig_results_step *s, const struct rig_results_host *h,
                          enum rig_host_term term, double *ns)
{
    switch (term) {
    case RIG_HOST_SCHEDULE: *ns = (double)s->host_schedule_ns; break;
    case RIG_HOST_PREPARE: *ns = (double)s->host_prepare_ns; break;
    case RIG_HOST_PROCESS: *ns = (double)s->host_process_ns; break;
    default:
        RIG_ASSERT(term == RIG_HOST_LOOP);
        *ns = (double)s->host_loop_ns;
        if (h->counts[RIG_HOST_LOOP][RIG_HOST_BASE] == 0 || h->loop_idle) return false;
        break;
    }
    return *ns >= 0;
}

/* Fits one term over the run's steps into out->mean and out->median. */
static enum rig_status rig__fit_term(const struct rig_results *r, enum rig_host_term term,
                                     double (*x)[RIG__FACTORS], double *y, struct rig_host_fit *out,
                                     char *error, size_t error_len)
{
    int64_t n = 0;
    for (int64_t i = 0; i < r->step_count; i++) {
        if (!rig__measured(&r->steps[i], &r->host[i], term, &y[n])) continue;
        for (int32_t f = 0; f < RIG__FACTORS; f++)
            x[n][f] = r->host[i].counts[term][f];
        n++;
    }
    if (n < RIG_HOST_FIT_ROWS_MIN) {
        snprintf(error, error_len, "host calibration: %s: %lld steps measure it, %d needed",
                 rig_host_model_keys[term][RIG_HOST_BASE], (long long)n, RIG_HOST_FIT_ROWS_MIN);
        return RIG_E_STATE;
    }
    rig_host_fit_solve((const double(*)[RIG__FACTORS])x, y, n, false, out->mean.ns[term]);
    rig_host_fit_solve((const double(*)[RIG__FACTORS])x, y, n, true, out->median.ns[term]);
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        sum += y[i];
        double fit = 0;
        for (int32_t f = 0; f < RIG__FACTORS; f++)
            fit += x[i][f] * out->mean.ns[term][f];
        y[i] = fabs(y[i] - fit); /* the residuals, in place */
    }
    struct rig_metric_stats stats;
    rig_metrics_stats(y, n, &stats);
    out->rows[term] = n;
    out->measured_ns[term] = sum / (double)n;
    out->residual_ns[term] = stats.median;
    return RIG_OK;
}

/* Fits every term over the run's records. */
static enum rig_status rig__fit(const struct rig_results *r, struct rig_host_fit *out, char *error,
                                size_t error_len)
{
    RIG_ASSERT(r->host != NULL);
    int64_t n = r->step_count > 0 ? r->step_count : 1;
    double(*x)[RIG__FACTORS] = malloc((size_t)n * sizeof *x);
    double *y = malloc((size_t)n * sizeof *y);
    enum rig_status status = x != NULL && y != NULL ? RIG_OK : RIG_E_NO_MEMORY;
    if (status != RIG_OK) snprintf(error, error_len, "host calibration: out of memory");
    for (int32_t t = 0; t < RIG_HOST_TERMS && status == RIG_OK; t++)
        status = rig__fit_term(r, t, x, y, out, error, error_len);
    out->steps = r->step_count;
    free(x);
    free(y);
    return status;
}

/* The run's records to `path`, for a look at what was fitted. */
static enum rig_status rig__write(const struct rig_results *r, const char *path, char *error,
                                  size_t error_len)
{
    struct rig_metrics metrics;
    enum rig_status status = rig_metrics_compute(r, &metrics);
    if (status != RIG_OK) {
        snprintf(error, error_len, "host calibration: metrics: %s", rig_status_message(status));
        return status;
    }
    return rig_results_write_h5(r, &metrics, path, error, error_len);
}

enum rig_status rig_host_fit_run(const struct rig_host_fit_options *options,
                                 struct rig_host_fit *out, char *error, size_t error_len)
{
    RIG_ASSERT(options != NULL && options->backend != NULL);
    RIG_ASSERT(out != NULL && error != NULL && error_len > 0);
    memset(out, 0, sizeof *out);
    char text[RIG__YAML_MAX];
    rig__scenario_text(options, text, sizeof text);
    struct rig_scenario scenario;
    enum rig_status status =
        rig_scenario_load_string(text, "host-calibration", NULL, 0, &scenario, error, error_len);
    if (status < 0) return status;
    struct rig_run_options run = {.check = RIG_RUN_CHECK_END, .host_counts = true};
    struct rig_results results;
    status = rig_scenario_run(&scenario, &run, &results, error, error_len);
    if (status == RIG_OK && (results.invariant_violations > 0 || results.pages_leaked > 0)) {
        snprintf(error, error_len,
                 "host calibration: %lld invariant violations, %lld pages "
                 "leaked",
                 (long long)results.invariant_violations, (long long)results.pages_leaked);
        status = RIG_E_STATE;
    }
    if (status == RIG_OK) status = rig__fit(&results, out, error, error_len);
    if (status == RIG_OK && options->results_path != NULL)
        status = rig__write(&results, options->results_path, error, error_len);
    rig_results_free(&results);
    rig_scenario_free(&scenario);
    if (status != RIG_OK) memset(out, 0, sizeof *out);
    return status;
}
