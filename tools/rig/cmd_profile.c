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
            "  --quick              a small grid (smoke test)\n");
}

static void rig__profile_progress(void *user, const char *what, int64_t done, int64_t total)
{
    (void)user;
    (void)total;
    fprintf(stderr, "rig profile: %s, %lld points\n", what, (long long)done);
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
    if (strcmp(arg, "--quick") == 0) {
        a->options.quick = true;
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

static int rig__profile_write(const struct rig__profile_args *a,
                              const struct rig_optable_point *points, int64_t count,
                              const struct rig_optable_host *host, const char *device,
                              double seconds)
{
    char repeats[16], took[32], host_ns[RIG_OPTABLE_HOST_CALLS][32];
    snprintf(repeats, sizeof repeats, "%d", a->options.repeats);
    snprintf(took, sizeof took, "%.1f", seconds);
    const char *attrs[RIG_PROFILE_ATTRS_MAX + 6 + RIG_OPTABLE_HOST_CALLS][2] = {
        {"device", device}, {"backend", a->options.backend}, {"git_commit", rig_git_commit},
        {"rig_version", rig_version_string}, {"repeats", repeats}, {"sweep_seconds", took}};
    int32_t n = 6;
    printf("rig profile: host calls (median ns):");
    for (int32_t k = 0; k < RIG_OPTABLE_HOST_CALLS; k++) {
        if (host->ns[k] <= 0) continue; /* not measured (no graphs on this backend) */
        snprintf(host_ns[k], sizeof host_ns[k], "%.0f", host->ns[k]);
        attrs[n][0] = rig_optable_host_keys[k];
        attrs[n++][1] = host_ns[k];
        printf(" %s %s", rig_optable_host_keys[k], host_ns[k]);
    }
    printf("\n");
    for (int32_t i = 0; i < a->meta_count; i++, n++) {
        attrs[n][0] = a->meta[i][0];
        attrs[n][1] = a->meta[i][1];
    }
    char error[512];
    if (rig_optable_write(a->out, points, count, (const char *const(*)[2])attrs, n, error,
                          sizeof error) != RIG_OK) {
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
