/* cmd_bench.c — `rig bench`: performance against the hardware's own floors (issue 8,
 * core/harness/bench/bench.h, docs/performance.md).
 *
 * Runs the chosen benchmarks (all by default) on --backend sim (the cost model's
 * predictions on a virtual clock, labelled as such) or cuda (device events), prints one
 * table per benchmark and the issue's targets with the measured ratio beside each, and
 * writes <out>/bench.h5 (the tables) plus one results file per serving run. A progress bar
 * is drawn on stderr only when stderr is a terminal. Exit status: 0 the benchmarks ran
 * (a missed target is a result, not an error), 1 a run error, 2 a usage error.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/harness/bench/bench.h"
#include "core/version.h"
#include "hal/hal.h"
#include "tools/rig/args.h"
#include "tools/rig/commands.h"

struct rig__bench_args {
    struct rig_bench_options options;
    int32_t kinds;
    const char *out; /* directory; "none": no files */
};

static void rig__bench_usage(FILE *out)
{
    fprintf(out,
            "usage: rig bench [BENCHMARK...] [options]\n\n"
            "Measures rig against the hardware floors measured in the same process\n"
            "(docs/performance.md). BENCHMARK: floors, decode, prefill, attention, offline,\n"
            "online, ops (a decode and a prefill step taken apart, op by op), all (default:\n"
            "all; floors always run, everything is divided by them); collectives (the TP\n"
            "group's all-reduce alone, 8 KiB to 256 MiB, nccl-tests' bus bandwidth; named\n"
            "only, with --tp N >= 2).\n"
            "'rig bench serve' benchmarks a running server over HTTP instead (--help there).\n\n"
            "options:\n"
            "  --backend sim|cuda   sim: cost-model predictions on the virtual clock (timing\n"
            "                       only); cuda: measured with device events (default sim)\n"
            "  --profile NAME       simulator device profile (default h100)\n"
            "  --model PRESET       model shape with dummy weights (default qwen3-0.6b)\n"
            "  --out DIR            tables in DIR/bench.h5, serving runs in DIR/<run>.h5\n"
            "                       (default out/bench; 'none': no files)\n"
            "  --quick              small sizes, for a smoke test\n"
            "  --repeats N          timed repeats per measurement, median (default 10)\n"
            "  --rates R1,R2,...    online arrival rates in requests/s (default 4,8,16,32,64)\n"
            "  --requests N         requests per online rate (default 128)\n"
            "  --online-overlap on|off|both  overlap scheduling in the online runs (default\n"
            "                       on; off/both add online-R-no-overlap rows)\n"
            "  --overlap on|off|both   the same for the offline and the online runs (default:\n"
            "                       offline both, online on)\n"
            "  --tp N               tensor-parallel ranks of the serving runs and collectives,\n"
            "                       1..8 (default 1; with N > 1 the default benchmarks are\n"
            "                       offline, online and collectives, and the offline floor is\n"
            "                       one rank's share: weights, KV and FLOPs divided by N)\n");
}

static const char *rig__arg(int argc, char **argv, int *i)
{
    if (*i + 1 < argc) return argv[++*i];
    fprintf(stderr, "rig bench: %s needs a value\n", argv[*i]);
    return NULL;
}

/* "4,8,16" into options->online_rates; returns -1 to continue, else the exit status. */
static int rig__parse_rates(const char *text, struct rig_bench_options *o)
{
    char msg[160];
    int32_t count = 0;
    if (rig_args_f64_list(text, 1e-6, 1e9, o->online_rates, RIG_BENCH_SERVING_MAX - 2, &count,
                          msg, sizeof msg) == RIG_OK) {
        o->online_rate_count = count;
        return -1;
    }
    fprintf(stderr, "rig bench: --rates takes up to %d positive numbers separated by commas: "
                    "%s\n", RIG_BENCH_SERVING_MAX - 2, msg);
    return 2;
}

/* A positive integer option value in [1, max]; -1 when it is not one. */
static int32_t rig__count(const char *value, int32_t max)
{
    char msg[128];
    int32_t v = -1;
    return rig_args_i32(value, 1, max, &v, msg, sizeof msg) == RIG_OK ? v : -1;
}

/* Option with a value; returns -1 to continue, else the exit status. */
static int rig__option(int argc, char **argv, int *i, struct rig__bench_args *a)
{
    const char *arg = argv[*i], *v = rig__arg(argc, argv, i);
    struct rig_bench_options *o = &a->options;
    if (v == NULL) return 2;
    if (strcmp(arg, "--backend") == 0)
        o->backend = v;
    else if (strcmp(arg, "--profile") == 0)
        o->profile = v;
    else if (strcmp(arg, "--model") == 0)
        o->model = v;
    else if (strcmp(arg, "--out") == 0 || strcmp(arg, "-o") == 0)
        a->out = v;
    else if (strcmp(arg, "--rates") == 0)
        return rig__parse_rates(v, o);
    else if (strcmp(arg, "--online-overlap") == 0 || strcmp(arg, "--overlap") == 0) {
        bool on = strcmp(v, "on") == 0, off = strcmp(v, "off") == 0, both = strcmp(v, "both") == 0;
        if (!on && !off && !both) {
            fprintf(stderr, "rig bench: %s takes on, off or both, not '%s'\n", arg, v);
            return 2;
        }
        o->online_overlap = on || both;
        o->online_no_overlap = off || both;
        if (strcmp(arg, "--overlap") == 0) {
            o->offline_overlap = o->online_overlap;
            o->offline_no_overlap = o->online_no_overlap;
        }
    }
    else if (strcmp(arg, "--tp") == 0) {
        if ((o->tp = rig__count(v, RIG_DEVICES_MAX)) < 0) {
            fprintf(stderr, "rig bench: --tp takes a number from 1 to %d, not '%s'\n",
                    RIG_DEVICES_MAX, v);
            return 2;
        }
    }
    else if (strcmp(arg, "--repeats") == 0 || strcmp(arg, "--requests") == 0) {
        bool repeats = strcmp(arg, "--repeats") == 0;
        int32_t n = rig__count(v, repeats ? RIG_BENCH_REPEATS_MAX : 1 << 20);
        if (n < 0) {
            fprintf(stderr, "rig bench: %s takes a number from 1 to %d, not '%s'\n", arg,
                    repeats ? RIG_BENCH_REPEATS_MAX : 1 << 20, v);
            return 2;
        }
        if (repeats)
            o->repeats = n;
        else
            o->online_requests = n;
    }
    return -1;
}

static bool rig__takes_value(const char *arg)
{
    static const char *const names[] = {"--backend", "--profile", "--model",   "--out",
                                        "-o",        "--rates",   "--repeats", "--requests",
                                        "--online-overlap", "--overlap", "--tp"};
    for (size_t i = 0; i < RIG_ARRAY_LEN(names); i++)
        if (strcmp(arg, names[i]) == 0) return true;
    return false;
}

/* Returns -1 to continue, else the exit status. */
static int rig__parse(int argc, char **argv, struct rig__bench_args *a)
{
    memset(a, 0, sizeof *a);
    rig_bench_options_default(&a->options);
    a->out = "out/bench";
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int32_t kind = rig_bench_kind_parse(arg);
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            rig__bench_usage(stdout);
            return 0;
        } else if (strcmp(arg, "--quick") == 0) {
            a->options.quick = true;
        } else if (rig__takes_value(arg)) {
            int status = rig__option(argc, argv, &i, a);
            if (status >= 0) return status;
        } else if (kind != 0) {
            a->kinds |= kind;
        } else {
            fprintf(stderr, "rig bench: unexpected argument '%s'\n\n", arg);
            rig__bench_usage(stderr);
            return 2;
        }
    }
    if (a->kinds == 0)
        a->kinds = a->options.tp > 1 ? RIG_BENCH_OFFLINE | RIG_BENCH_ONLINE | RIG_BENCH_COLLECTIVES
                                     : RIG_BENCH_ALL;
    if (strcmp(a->options.backend, "sim") != 0 && strcmp(a->options.backend, "cuda") != 0) {
        fprintf(stderr, "rig bench: --backend takes sim or cuda, not '%s'\n", a->options.backend);
        return 2;
    }
    a->options.out_dir = strcmp(a->out, "none") == 0 ? NULL : a->out;
    return -1;
}

static void rig__bar(void *user, const char *what, int64_t done, int64_t total)
{
    (void)user;
    int filled = total > 0 ? (int)(30 * done / total) : 0;
    char bar[31];
    for (int i = 0; i < 30; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "\r  %-20s [%s] %lld/%lld ", what, bar, (long long)done, (long long)total);
    fflush(stderr);
}

static void rig__print_floors(const struct rig_bench_report *r)
{
    const struct rig_bench_floors *f = &r->floors;
    printf("floors (same process, median of %d)\n", r->repeats);
    printf("  copy bandwidth  %8.3f TB/s   device-to-device copy of %lld MiB, read + written\n",
           f->bandwidth * 1e-12, (long long)(f->copy_bytes >> 20));
    printf("  bf16 GEMM       %8.1f TFLOP/s %d x %d x %d, random data, fp32 accumulation\n\n",
           f->gemm_flops * 1e-12, f->gemm_size, f->gemm_size, f->gemm_size);
}

static void rig__print_decode(const struct rig_bench_report *r)
{
    if (r->decode_count == 0) return;
    printf("decode step (model forward, one token per request)\n");
    printf("  %6s %8s %10s %10s %10s %8s\n", "batch", "context", "eager_ms", "graph_ms", "floor_ms",
           "x_floor");
    for (int32_t i = 0; i < r->decode_count; i++) {
        const struct rig_bench_decode_row *d = &r->decode[i];
        char graph[16] = "-";
        if (d->graph_ns >= 0) snprintf(graph, sizeof graph, "%.4f", d->graph_ns * 1e-6);
        printf("  %6d %8d %10.4f %10s %10.4f %8.2f\n", d->batch, d->context, d->eager_ns * 1e-6,
               graph, d->floor_ns * 1e-6, d->ratio);
    }
    printf("  floor = max((weights + KV read) / copy bandwidth, FLOPs / GEMM rate); x_floor "
           "= best time / floor\n\n");
}

static void rig__print_prefill(const struct rig_bench_report *r)
{
    if (r->prefill_count == 0) return;
    printf("prefill (one request, model forward)\n");
    printf("  %6s %7s %10s %10s %9s %6s\n", "chunk", "prefix", "ms", "floor_ms", "TFLOP/s", "MFU");
    for (int32_t i = 0; i < r->prefill_count; i++) {
        const struct rig_bench_prefill_row *p = &r->prefill[i];
        printf("  %6d %7d %10.3f %10.3f %9.1f %6.3f\n", p->chunk, p->prefix, p->ns * 1e-6,
               p->floor_ns * 1e-6, p->flops_per_s * 1e-12, p->mfu);
    }
    printf("  MFU = model FLOP/s / measured GEMM FLOP/s\n\n");
}

static void rig__print_attention(const struct rig_bench_report *r)
{
    if (r->attention_count == 0) return;
    printf("attention op (one layer)\n");
    printf("  %-8s %6s %8s %10s %14s %9s %19s\n", "op", "batch", "context", "us", "rate",
           "of_floor", "repeats min..max us");
    for (int32_t i = 0; i < r->attention_count; i++) {
        const struct rig_bench_attention_row *a = &r->attention[i];
        bool decode = strcmp(a->op, "decode") == 0;
        char rate[32];
        if (decode)
            snprintf(rate, sizeof rate, "%.3f TB/s", a->bytes / a->ns * 1e-3);
        else
            snprintf(rate, sizeof rate, "%.1f TFLOP/s", a->flops / a->ns * 1e-3);
        printf("  %-8s %6d %8d %10.2f %14s %9.3f %9.2f..%-8.2f\n", a->op, a->batch, a->context,
               a->ns * 1e-3, rate, a->ratio, a->min_ns * 1e-3, a->max_ns * 1e-3);
    }
    printf("  of_floor: decode = KV bytes read / time / copy bandwidth; prefill = causal FLOP/s"
           " / GEMM rate (medians of the repeats)\n\n");
}

static void rig__print_ops(const struct rig_bench_report *r)
{
    if (r->op_count == 0) return;
    printf("decode and prefill steps taken apart (each op alone, replayed)\n");
    printf("  %-18s %6s %6s %7s %6s %10s %11s %7s\n", "op", "batch", "tokens", "context", "count",
           "us", "us/step", "share");
    double step = 0.0;
    for (int32_t i = 0; i < r->op_count; i++) {
        const struct rig_bench_op_row *p = &r->ops[i];
        step += p->ns * p->count;
        printf("  %-18s %6d %6d %7d %6d %10.2f %11.1f %6.1f%%\n", p->op, p->batch, p->tokens,
               p->context, p->count, p->ns * 1e-3, p->ns * p->count * 1e-3, 100.0 * p->share);
        const struct rig_bench_op_row *next = i + 1 < r->op_count ? &r->ops[i + 1] : NULL;
        if (next == NULL || next->tokens != p->tokens || next->context != p->context) {
            printf("  %-18s %6d %6d %7d %6s %10s %11.1f\n", "sum", p->batch, p->tokens,
                   p->context, "", "", step * 1e-3);
            step = 0.0;
        }
    }
    printf("  us: one issue inside a graph of 20 issues; share: count x us / the step's sum\n\n");
}

static void rig__print_collectives(const struct rig_bench_report *r)
{
    if (r->collective_count == 0) return;
    printf("all-reduce over the TP group (bf16, in place; median of the slowest rank)\n");
    printf("  %12s %6s %10s %10s %10s %12s %12s\n", "bytes", "ranks", "us", "issue us",
           "graph us", "algbw GB/s", "busbw GB/s");
    for (int32_t i = 0; i < r->collective_count; i++) {
        const struct rig_bench_collective_row *c = &r->collectives[i];
        printf("  %12lld %6d %10.2f %10.2f %10.2f %12.2f %12.2f\n", (long long)c->bytes,
               (int)c->ranks, c->ns * 1e-3, c->issue_ns * 1e-3, c->graph_ns * 1e-3,
               c->algbw * 1e-9, c->busbw * 1e-9);
    }
    printf("  busbw = algbw x 2 (ranks - 1) / ranks (nccl-tests' all_reduce_perf), from us; issue "
           "us: host time per all-reduce issued; graph us: one of 20 in a replayed graph\n\n");
}

static void rig__print_serving(const struct rig_bench_report *r)
{
    if (r->serving_count == 0) return;
    printf("serving (scheduler + model; sglang.bench_serving metrics, ms)\n");
    printf("  %-26s %6s %5s %8s %9s %9s %8s %8s %7s %7s %7s %8s %9s %6s %6s %6s %8s\n", "run",
           "rate", "reqs", "dur_s", "out_tok/s", "tot_tok/s", "ttft_p50", "ttft_p99", "tpot_50",
           "tpot_99", "itl_p99", "e2e_p50", "e2e_p99", "floor", "idle", "ahead", "issue_us");
    for (int32_t i = 0; i < r->serving_count; i++) {
        const struct rig_bench_serving_row *s = &r->serving[i];
        const struct rig_metrics *m = &s->metrics;
        char rate[16], floor[16];
        snprintf(rate, sizeof rate, isinf(s->rate) ? "inf" : "%.4g", s->rate);
        snprintf(floor, sizeof floor, s->floor_s > 0 ? "%.3f" : "-", s->floor_ratio);
        printf("  %-26s %6s %5d %8.3f %9.0f %9.0f %8.1f %8.1f %7.2f %7.2f %7.2f %8.0f %9.0f %6s "
               "%5.1f%% %5.1f%% %8.1f\n",
               s->name, rate, s->requests, m->duration_s, m->output_throughput, m->total_throughput,
               m->ttft.median * 1e3, m->ttft.p99 * 1e3, m->tpot.median * 1e3, m->tpot.p99 * 1e3,
               m->itl.p99 * 1e3, m->e2e.median * 1e3, m->e2e.p99 * 1e3, floor,
               100.0 * s->idle_fraction, 100.0 * s->ahead_fraction, s->launch_host_us);
    }
    printf("  floor: (decode steps x weights + KV bytes read) / bandwidth + prefill FLOPs / "
           "GEMM rate, over the duration\n  idle: device idle between consecutive decode "
           "steps / their span (step records)\n  ahead: launches issued while the previous "
           "batch still ran on the device / launches with a batch in flight; issue_us: host "
           "time of one launch's issue (mean)\n\n");
}

static const char *rig__verdict(bool met)
{
    return met ? "met" : "MISSED";
}

/* The issue's targets, each with the measured value beside it (when it was run). */
static void rig__print_targets(const struct rig_bench_report *r)
{
    printf("targets (issue 8)\n");
    for (int32_t i = 0; i < r->decode_count; i++) {
        const struct rig_bench_decode_row *d = &r->decode[i];
        if (d->batch == 1 && d->context == 512)
            printf("  decode batch 1, context 512 <= 1.5 x floor:        %6.2f x   %s\n", d->ratio,
                   rig__verdict(d->ratio <= 1.5));
    }
    for (int32_t i = 0; i < r->prefill_count; i++) {
        const struct rig_bench_prefill_row *p = &r->prefill[i];
        if (p->chunk == 8192 && p->prefix == 0)
            printf("  prefill 8192-token chunk >= 50 %% of GEMM rate:    %6.1f %%   %s\n",
                   100.0 * p->mfu, rig__verdict(p->mfu >= 0.5));
    }
    for (int32_t i = 0; i < r->attention_count; i++) {
        const struct rig_bench_attention_row *a = &r->attention[i];
        if (strcmp(a->op, "decode") == 0 && a->batch == 256 && a->context == 1024)
            printf("  decode attention 256 x 1024 >= 75 %% of bandwidth: %6.1f %%   %s\n",
                   100.0 * a->ratio, rig__verdict(a->ratio >= 0.75));
        /* issue 18: >= 90 % in every run (this run: the median), with the repeats' spread */
        if (strcmp(a->op, "decode") == 0 && a->min_ns > 0 &&
            ((a->batch == 256 && a->context == 1024) || (a->batch == 64 && a->context == 8192)))
            printf("  decode attention %3d x %-4d >= 90 %% of bandwidth: %6.1f %%   %s"
                   "  (repeats %.1f .. %.1f %%)\n",
                   a->batch, a->context, 100.0 * a->ratio, rig__verdict(a->ratio >= 0.9),
                   100.0 * a->floor_ns / a->max_ns, 100.0 * a->floor_ns / a->min_ns);
    }
    for (int32_t i = 0; i < r->serving_count; i++) {
        const struct rig_bench_serving_row *s = &r->serving[i];
        if (strcmp(s->name, "offline") == 0) {
            printf("  offline >= 75 %% of its floor:                     %6.1f %%   %s"
                   "  (%.0f output tok/s)\n",
                   100.0 * s->floor_ratio, rig__verdict(s->floor_ratio >= 0.75),
                   s->metrics.output_throughput);
            printf("  GPU idle between decode steps < 5 %% (overlap on):  %6.2f %%   %s\n",
                   100.0 * s->idle_fraction, rig__verdict(s->idle_fraction < 0.05));
        }
        if (strcmp(s->name, "offline-no-overlap") == 0)
            printf("  (overlap off, for comparison:                     %6.2f %%)\n",
                   100.0 * s->idle_fraction);
    }
}

static void rig__print_report(const struct rig_bench_report *r)
{
    char ranks[32] = "";
    if (r->tp > 1) snprintf(ranks, sizeof ranks, ", TP %d", (int)r->tp);
    printf("============ rig bench: %s on %s%s (%s) ============\n", r->model, r->device, ranks,
           r->predicted ? "PREDICTED by the simulator's cost model, virtual clock"
                        : "measured, device events");
    printf("rig %s, commit %s, backend %s\n\n", rig_version_string, rig_git_commit, r->backend);
    if (r->have_floors) rig__print_floors(r);
    rig__print_decode(r);
    rig__print_prefill(r);
    rig__print_attention(r);
    rig__print_ops(r);
    rig__print_serving(r);
    rig__print_collectives(r);
    rig__print_targets(r);
}

int rig_cmd_bench(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "serve") == 0) return rig_cmd_bench_serve(argc - 1, argv + 1);
    struct rig__bench_args args;
    int exit_status = rig__parse(argc, argv, &args);
    if (exit_status >= 0) return exit_status;
    if (args.options.out_dir != NULL && mkdir(args.options.out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "rig bench: cannot create %s: %s\n", args.options.out_dir, strerror(errno));
        return 1;
    }
    bool bar = isatty(STDERR_FILENO);
    if (bar) args.options.progress = rig__bar;
    static struct rig_bench_report report; /* ~30 KB: off the stack */
    char error[512] = "";
    enum rig_status status = rig_bench_run(&args.options, args.kinds, &report, error, sizeof error);
    if (bar) fprintf(stderr, "\r%70s\r", "");
    if (report.have_floors) rig__print_report(&report); /* else nothing ran: the error alone */
    exit_status = 0;
    if (status < 0) {
        fprintf(stderr, "rig bench: %s\n", error);
        exit_status = 1;
    }
    if (args.options.out_dir != NULL && report.have_floors) {
        char path[512];
        snprintf(path, sizeof path, "%s/bench.h5", args.options.out_dir);
        if (rig_bench_write_h5(&report, path, error, sizeof error) < 0) {
            fprintf(stderr, "rig bench: %s\n", error);
            exit_status = 1;
        } else {
            printf("\nResults: %s (tables)", path);
            for (int32_t i = 0; i < report.serving_count; i++)
                printf(", %s", report.serving[i].path);
            printf("\n");
        }
    }
    return exit_status;
}
