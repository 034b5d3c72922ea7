/* cmd_profile.c — `rig profile`: the op sweep behind the simulator's op tables
 * (core/harness/bench/profile.h, hal/optable.h, sim/optable.h, docs/simulator.md "Op tables").
 *
 * Sweeps on --backend cuda (measured with device events) or sim (the cost model's own
 * predictions), writes the points to --out (HDF5, the layout rig_optable_write gives)
 * with the device, backend, commit and any --meta KEY=VALUE pairs (driver, clocks) as
 * root attributes, and prints how many points and how long the sweep took.
 * Exit status: 0 written, 1 a run error, 2 a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/harness/bench/profile.h"
#include "core/version.h"
#include "tools/rig/args.h"
#include "tools/rig/commands.h"

static void rig__profile_usage(FILE *out)
{
    fprintf(out,
            "usage: rig profile --out TABLE.h5 [options]\n\n"
            "Times every op of the forward over a grid of shapes (the models' layers at TP\n"
            "1, 2, 4, 8): median and spread cold in L2, and warm; writes the simulator's op\n"
            "table (docs/simulator.md).\n\n"
            "options:\n"
            "  --backend sim|cuda   cuda: measured; sim: the cost model's prediction\n"
            "                       (default sim)\n"
            "  --profile NAME       simulator device profile (default h100)\n"
            "  --model PRESET       a model whose shapes are swept; repeatable (default\n"
            "                       qwen3-0.6b and qwen3-8b)\n"
            "  --tp-max N           TP degrees 1, 2, .. N (default 8)\n"
            "  --repeats N          cold repeats per point, 3..64 (default 7)\n"
            "  --seconds-max S      stop after S seconds, keeping the points so far\n"
            "  --meta KEY=VALUE     a root attribute (driver, clocks, ...); repeatable\n"
            "  --quick              a small grid (smoke test)\n"
            "  --no-host-fit        skip the calibration stage (below)\n"
            "  --host-model PRESET  the calibration model (default qwen3-0.6b)\n"
            "  --host-out FILE.h5   the calibration run's records (rig run's results file)\n\n"
            "After the sweep, the calibration stage runs the engine on the calibration model\n"
            "(dummy weights) over a short synthetic workload (a burst of 256 requests, then\n"
            "Poisson arrivals) and fits its steps' host columns to the simulator's host model\n"
            "(schedule, prepare, process, loop: each affine in requests, tokens, new and\n"
            "finished requests), least squares and least absolute deviations; both go into\n"
            "the table as root attributes (host_<term>_ns, host_<term>_per_<factor>_ns; the\n"
            "medians ..._median_ns), beside the host calls' medians and means, and a profile\n"
            "with the table takes the least-squares ones and the means over its keys.\n");
}

static void rig__profile_progress(void *user, const char *what, int64_t done, int64_t total)
{
    (void)user;
    if (done < 0 && total < 0) fprintf(stderr, "rig profile: %s\n", what);
    else fprintf(stderr, "rig profile: %s, %lld points\n", what, (long long)done);
}

struct rig__profile_args {
    struct rig_profile_options options;
    const char *out;
    char meta[RIG_PROFILE_ATTRS_MAX][2][128];
    int32_t meta_count;
    bool models_given;
};

/* One option at argv[*i]; returns -1 to go on, else the exit status. */
static int rig__profile_option(struct rig__profile_args *a, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
        rig__profile_usage(stdout);
        return 0;
    }
    if (strcmp(arg, "--quick") == 0 || strcmp(arg, "--no-host-fit") == 0) {
        if (arg[2] == 'q') a->options.quick = true;
        else a->options.host_fit = false;
        return -1;
    }
    if (*i + 1 >= argc) {
        fprintf(stderr, "rig profile: %s needs a value\n", arg);
        return 2;
    }
    const char *value = argv[++*i];
    struct rig_profile_options *o = &a->options;
    if (strcmp(arg, "--out") == 0) a->out = value;
    else if (strcmp(arg, "--backend") == 0) o->backend = value;
    else if (strcmp(arg, "--profile") == 0) o->profile = value;
    else if (strcmp(arg, "--host-model") == 0) o->host_fit_model = value;
    else if (strcmp(arg, "--host-out") == 0) o->host_fit_out = value;
    else if (strcmp(arg, "--tp-max") == 0 || strcmp(arg, "--repeats") == 0) {
        /* syntax here (tools/rig/args.h); the profiler checks the ranges */
        int32_t *field = arg[2] == 't' ? &o->tp_max : &o->repeats;
        if (!rig_args_flag_i32("profile", arg, value, 1, 1 << 20, field)) return 2;
    } else if (strcmp(arg, "--seconds-max") == 0) {
        if (!rig_args_flag_f64("profile", arg, value, 0, 1e9, &o->seconds_max)) return 2;
    } else if (strcmp(arg, "--model") == 0 && o->model_count < RIG_PROFILE_MODELS_MAX) {
        if (!a->models_given) o->model_count = 0;
        a->models_given = true;
        o->models[o->model_count++] = value;
    } else if (strcmp(arg, "--meta") == 0 && a->meta_count < RIG_PROFILE_ATTRS_MAX &&
               strchr(value, '=') != NULL) {
        size_t key = (size_t)(strchr(value, '=') - value);
        snprintf(a->meta[a->meta_count][0], 128, "%.*s", (int)key, value);
        snprintf(a->meta[a->meta_count][1], 128, "%s", value + key + 1);
        a->meta_count++;
    } else {
        fprintf(stderr, "rig profile: bad option %s %s\n", arg, value);
        return 2;
    }
    return -1;
}

/* The table's root attributes. The strings live in `text` (one row a value). */
#define RIG__HOST_ATTRS (2 * RIG_OPTABLE_HOST_CALLS + 2 * RIG_HOST_TERMS * RIG_HOST_FACTORS)
#define RIG__ATTRS_MAX  (RIG_PROFILE_ATTRS_MAX + 6 + RIG__HOST_ATTRS)
struct rig__attrs {
    const char *pairs[RIG__ATTRS_MAX][2];
    char names[RIG__HOST_ATTRS][96];
    char text[RIG__HOST_ATTRS][32];
    int32_t count, host;
};

static void rig__attr_number(struct rig__attrs *a, const char *name, double value,
                             const char *format)
{
    RIG_ASSERT(a->host < RIG__HOST_ATTRS && a->count < RIG__ATTRS_MAX);
    snprintf(a->names[a->host], sizeof a->names[a->host], "%s", name);
    snprintf(a->text[a->host], sizeof a->text[a->host], format, value);
    a->pairs[a->count][0] = a->names[a->host];
    a->pairs[a->count++][1] = a->text[a->host++];
}

/* The host calls' medians and means, the host model's coefficients; printed as well. */
static void rig__host_attrs(struct rig__attrs *a, const struct rig_optable_host *host)
{
    printf("rig profile: host calls (median / mean ns):");
    for (int32_t k = 0; k < RIG_OPTABLE_HOST_CALLS; k++) {
        if (host->ns[k] <= 0) continue; /* not measured (no graphs on this backend) */
        rig__attr_number(a, rig_optable_host_keys[k], host->ns[k], "%.0f");
        rig__attr_number(a, rig_optable_host_mean_keys[k], host->mean_ns[k], "%.0f");
        printf(" %s %.0f / %.0f", rig_optable_host_keys[k], host->ns[k], host->mean_ns[k]);
    }
    printf("\n");
    for (int32_t t = 0; t < RIG_HOST_TERMS; t++) {
        if (!host->model_given[t][RIG_HOST_BASE]) continue; /* no calibration stage */
        printf("rig profile: host model (least squares / least absolute deviations, ns):");
        for (int32_t f = 0; f < RIG_HOST_FACTORS; f++) {
            char median[96];
            rig_optable_host_median_key(t, f, median, sizeof median);
            rig__attr_number(a, rig_host_model_keys[t][f], host->model.ns[t][f], "%.6g");
            rig__attr_number(a, median, host->model_median.ns[t][f], "%.6g");
            printf(" %s %.4g / %.4g", rig_host_model_keys[t][f], host->model.ns[t][f],
                   host->model_median.ns[t][f]);
        }
        printf("\n");
    }
}

static int rig__profile_write(const struct rig__profile_args *a,
                              const struct rig_optable_point *points, int64_t count,
                              const struct rig_optable_host *host, const char *device,
                              double seconds)
{
    char repeats[16], took[32];
    snprintf(repeats, sizeof repeats, "%d", a->options.repeats);
    snprintf(took, sizeof took, "%.1f", seconds);
    static struct rig__attrs attrs; /* large: off the stack */
    memset(&attrs, 0, sizeof attrs);
    const char *fixed[6][2] = {
        {"device", device}, {"backend", a->options.backend}, {"git_commit", rig_git_commit},
        {"rig_version", rig_version_string}, {"repeats", repeats}, {"sweep_seconds", took}};
    memcpy(attrs.pairs, fixed, sizeof fixed);
    attrs.count = 6;
    rig__host_attrs(&attrs, host);
    for (int32_t i = 0; i < a->meta_count; i++, attrs.count++) {
        attrs.pairs[attrs.count][0] = a->meta[i][0];
        attrs.pairs[attrs.count][1] = a->meta[i][1];
    }
    char error[512];
    if (rig_optable_write(a->out, points, count, (const char *const(*)[2])attrs.pairs,
                          attrs.count, error, sizeof error) != RIG_OK) {
        fprintf(stderr, "rig profile: %s\n", error);
        return 1;
    }
    printf("rig profile: %lld points on %s in %.1f s -> %s\n", (long long)count, device,
           seconds, a->out);
    return 0;
}

int rig_cmd_profile(int argc, char **argv)
{
    struct rig__profile_args a;
    memset(&a, 0, sizeof a);
    rig_profile_options_default(&a.options);
    a.options.progress = rig__profile_progress;
    for (int i = 1; i < argc; i++) {
        int exit_status = rig__profile_option(&a, argc, argv, &i);
        if (exit_status >= 0) return exit_status;
    }
    const struct rig_profile_options *o = &a.options;
    if (a.out == NULL || o->repeats < 3 || o->repeats > 64 || o->tp_max < 1 ||
        o->tp_max > 8) {
        rig__profile_usage(stderr);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct rig_optable_point *points = NULL;
    int64_t count = 0;
    struct rig_optable_host host;
    char device[128] = "", error[512];
    enum rig_status status =
        rig_profile_run(o, &points, &count, &host, device, sizeof device, error, sizeof error);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "\n");
    if (status != RIG_OK) {
        fprintf(stderr, "rig profile: %s\n", error);
        return 1;
    }
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    int exit_status = rig__profile_write(&a, points, count, &host, device, seconds);
    free(points);
    return exit_status;
}
