/* cmd_run.c — `rig run SCENARIO`: replay a scenario, print what happened, write the HDF5
 * results, check the expectations (docs/scenarios.md, docs/results.md).
 *
 * Output: a per-request table (up to --rows rows), the sglang.bench_serving summary, then
 * one line per failed expectation. A progress line is drawn on stderr only when stderr is a
 * terminal (so logs and CI output stay clean). Exit status: 0 all expectations hold, 1 a run
 * error or a failed expectation, 2 a usage error or a scenario that does not load.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/harness/fleet/fleet.h"
#include "core/harness/results/h5.h"
#include "core/harness/results/metrics.h"
#include "core/harness/scenario/expect.h"
#include "core/harness/scenario/run.h"
#include "core/harness/scenario/scenario.h"
#include "tools/rig/args.h"
#include "tools/rig/commands.h"
#include "tools/rig/ranks_cli.h"

#define RIG__ROWS_DEFAULT 40

struct rig__run_args {
    const char *scenario;
    const char *out;          /* NULL: out/<name>.h5; "none": no file */
    const char *sets[RIG_SCENARIO_SETS_MAX];
    int32_t set_count;
    char backend_set[32];
    bool skip_weight_check;   /* --set model.skip_weight_check=true */
    bool quiet;
    bool progress;            /* progress lines even when stderr is not a terminal */
    int32_t rows;
    enum rig_run_check check;
    struct rig_ranks_cli ranks;
    bool failed; /* the run itself failed (not an expectation): ends an MPI job at once */
};

static void rig__run_usage(FILE *out)
{
    fprintf(out,
            "usage: rig run SCENARIO.yaml [options]\n\n"
            "Replays a scenario (docs/scenarios.md): prints a per-request table and the\n"
            "serving metrics, writes the HDF5 results (docs/results.md), checks expectations.\n\n"
            "options:\n"
            "  --backend sim|cuda   run on this backend (same as --set backend=...)\n"
            "  --out FILE.h5        results file (default out/<scenario name>.h5; 'none': none)\n"
            "  --set KEY=VALUE      override a scenario key, e.g. --set engine.policy=mixed\n"
            "                       (dots walk mappings, numbers index lists; repeatable)\n"
            "  --rows N             print at most N request rows (default %d; 0: none)\n"
            "  --check step|end     run the invariant checker after every step or once at the\n"
            "                       end (default: every step for scenarios of <= 64 requests)\n"
            "  --skip-weight-check  load the checkpoint without scanning it for NaN / Inf\n"
            "                       (same as --set model.skip_weight_check=true)\n"
            "  --quiet              print only failed expectations and errors\n"
            "  --progress           progress lines on stderr even when it is not a terminal\n"
            "  --ranks threads|mpi  TP ranks as threads (default) or one per process under\n"
            "                       `mpirun -n TP` (process 0 prints and writes the results)\n"
            "  --nnodes N --node-rank R --dist-init-addr HOST:PORT\n"
            "                       SGLang's multi-node flags: more than one node is refused with\n"
            "                       the mpirun command that starts it (docs/engine.md)\n\n"
            "exit status: 0 expectations hold, 1 run error or failed expectation, 2 usage or\n"
            "scenario error\n",
            RIG__ROWS_DEFAULT);
}

/* The value after option argv[*i]; NULL (with a message) when missing. */
static const char *rig__value(int argc, char **argv, int *i)
{
    if (*i + 1 < argc) return argv[++*i];
    fprintf(stderr, "rig run: %s needs a value\n", argv[*i]);
    return NULL;
}

/* Returns -1 to continue, else the exit status. */
static int rig__parse_args(int argc, char **argv, struct rig__run_args *a)
{
    memset(a, 0, sizeof *a);
    a->rows = RIG__ROWS_DEFAULT;
    rig_ranks_cli_init(&a->ranks);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v = NULL;
        int taken = rig_ranks_cli_parse("run", argc, argv, &i, &a->ranks);
        if (taken == 2) return 2;
        if (taken == 1) continue;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            rig__run_usage(stdout);
            return 0;
        } else if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "-q") == 0) {
            a->quiet = true;
        } else if (strcmp(arg, "--skip-weight-check") == 0) {
            a->skip_weight_check = true;
        } else if (strcmp(arg, "--progress") == 0) {
            a->progress = true;
        } else if (strcmp(arg, "--out") == 0 || strcmp(arg, "-o") == 0) {
            if ((a->out = rig__value(argc, argv, &i)) == NULL) return 2;
        } else if (strcmp(arg, "--set") == 0) {
            if ((v = rig__value(argc, argv, &i)) == NULL) return 2;
            if (a->set_count == RIG_SCENARIO_SETS_MAX - 2) { /* room for two below */
                fprintf(stderr, "rig run: too many --set options\n");
                return 2;
            }
            a->sets[a->set_count++] = v;
        } else if (strcmp(arg, "--backend") == 0) {
            if ((v = rig__value(argc, argv, &i)) == NULL) return 2;
            snprintf(a->backend_set, sizeof a->backend_set, "backend=%s", v);
        } else if (strcmp(arg, "--rows") == 0) {
            if ((v = rig__value(argc, argv, &i)) == NULL) return 2;
            if (!rig_args_flag_i32("run", arg, v, 0, INT32_MAX, &a->rows)) return 2;
        } else if (strcmp(arg, "--check") == 0) {
            if ((v = rig__value(argc, argv, &i)) == NULL) return 2;
            if (strcmp(v, "step") != 0 && strcmp(v, "end") != 0) {
                fprintf(stderr, "rig run: --check takes 'step' or 'end', not '%s'\n", v);
                return 2;
            }
            a->check = v[0] == 's' ? RIG_RUN_CHECK_STEP : RIG_RUN_CHECK_END;
        } else if (arg[0] == '-' || a->scenario != NULL) {
            fprintf(stderr, "rig run: unexpected argument '%s'\n\n", arg);
            rig__run_usage(stderr);
            return 2;
        } else {
            a->scenario = arg;
        }
    }
    if (a->backend_set[0] != '\0') a->sets[a->set_count++] = a->backend_set;
    if (a->skip_weight_check) a->sets[a->set_count++] = "model.skip_weight_check=true";
    if (a->scenario != NULL) return -1;
    rig__run_usage(stderr);
    return 2;
}

/* `user` points to a bool: stderr is a terminal (redraw one line) or not (a line each). */
static void rig__progress(void *user, int64_t steps, int32_t ended, int32_t total,
                          int64_t now_ns)
{
    bool terminal = *(const bool *)user;
    fprintf(stderr, "%s  step %-9lld requests done %d/%d  clock %.3f s%s", terminal ? "\r" : "",
            (long long)steps, ended, total, (double)now_ns * 1e-9, terminal ? " " : "\n");
    fflush(stderr);
}

static void rig__violation(void *user, const char *message)
{
    (void)user;
    fprintf(stderr, "rig run: invariant violated: %s\n", message);
}

static void rig__expect_failed(void *user, const char *message)
{
    (void)user;
    printf("FAILED %s\n", message);
}

static double rig__ms(int64_t from_ns, int64_t to_ns)
{
    return from_ns < 0 || to_ns < 0 ? -1.0 : (double)(to_ns - from_ns) * 1e-6;
}

static void rig__print_row(const struct rig_results_request *q)
{
    double ttft = rig__ms(q->arrival_ns, q->first_token_ns);
    double e2e = rig__ms(q->arrival_ns, q->finish_ns);
    double tpot = q->output_len > 1 && ttft >= 0 && e2e >= 0
                      ? (e2e - ttft) / (double)(q->output_len - 1) : -1.0;
    char cells[3][24];
    const double values[3] = {ttft, tpot, e2e};
    for (int i = 0; i < 3; i++) {
        if (values[i] < 0) snprintf(cells[i], sizeof cells[i], "-");
        else snprintf(cells[i], sizeof cells[i], "%.3f", values[i]);
    }
    printf("%-20s %10.6f %7d %7d %7d %10s %9s %10s  %s\n", q->id, (double)q->arrival_ns * 1e-9,
           q->input_len, q->cached_len, q->output_len, cells[0], cells[1], cells[2],
           rig_finish_reason_name(q->finish_reason));
}

static void rig__print_table(const struct rig_results *r, int32_t rows)
{
    if (rows <= 0) return;
    printf("%-20s %10s %7s %7s %7s %10s %9s %10s  %s\n", "request", "arrival_s", "input",
           "cached", "output", "ttft_ms", "tpot_ms", "e2e_ms", "finish");
    int64_t shown = r->request_count < rows ? r->request_count : rows;
    for (int64_t i = 0; i < shown; i++) rig__print_row(&r->requests[i]);
    if (shown < r->request_count)
        printf("... %lld more requests in the results file\n",
               (long long)(r->request_count - shown));
    printf("\n");
}

static void rig__print_stats(const char *name, const struct rig_metric_stats *s)
{
    printf("%-6s %11.3f %11.3f %11.3f %11.3f %11.3f\n", name, s->mean * 1e3, s->median * 1e3,
           s->p90 * 1e3, s->p99 * 1e3, s->max * 1e3);
}

static void rig__print_summary(const struct rig_results *r, const struct rig_metrics *m)
{
    const struct rig_results_meta *meta = &r->meta;
    printf("============ %s on %s (%s clock) ============\n", meta->scenario, meta->device,
           strcmp(meta->backend, "sim") == 0 ? "virtual" : "wall");
    printf("%-36s %s (tp %d, %s, %s, overlap %s)\n", "Model / engine:", meta->model,
           meta->tp_size, meta->policy, meta->cache, meta->overlap ? "on" : "off");
    printf("%-36s %.0f", "Successful requests:", m->completed);
    if (m->aborted + m->rejected + m->unfinished > 0)
        printf("  (aborted %.0f, rejected %.0f, unfinished %.0f)", m->aborted, m->rejected,
               m->unfinished);
    printf("\n%-36s %.6f\n", "Duration (s):", m->duration_s);
    printf("%-36s %.0f\n", "Total input tokens:", m->total_input);
    printf("%-36s %.0f\n", "Total generated tokens:", m->total_output);
    printf("%-36s %.0f\n", "Prefix cache hit tokens:", m->cache_hit_tokens);
    printf("%-36s %.2f\n", "Request throughput (req/s):", m->request_throughput);
    printf("%-36s %.2f\n", "Input token throughput (tok/s):", m->input_throughput);
    printf("%-36s %.2f\n", "Output token throughput (tok/s):", m->output_throughput);
    printf("%-36s %.2f\n", "Total token throughput (tok/s):", m->total_throughput);
    printf("%-36s %.2f\n", "Concurrency:", m->concurrency);
    printf("%-36s %lld (%lld pages leaked, %lld invariant violations)\n", "Steps:",
           (long long)r->step_count, (long long)r->pages_leaked,
           (long long)r->invariant_violations);
    printf("%-6s %11s %11s %11s %11s %11s\n", "ms", "mean", "median", "p90", "p99", "max");
    rig__print_stats("TTFT", &m->ttft);
    rig__print_stats("TPOT", &m->tpot);
    rig__print_stats("ITL", &m->itl);
    rig__print_stats("E2E", &m->e2e);
}

/* A fleet's replicas (`cluster:`): routed requests, cache hit rate, peak load, busy time. */
static void rig__print_replicas(const struct rig_results_fleet *f)
{
    printf("%s router, %d replicas of tp %d:\n", f->router, f->replica_count, f->tp_size);
    printf("%-8s %9s %12s %12s %8s %8s %10s\n", "replica", "requests", "input tok",
           "cached tok", "hit %", "peak", "busy s");
    for (int32_t i = 0; i < f->replica_count; i++) {
        const struct rig_results_replica *p = &f->replicas[i];
        double hit = p->input_tokens > 0
                         ? 100.0 * (double)p->cached_tokens / (double)p->input_tokens : 0.0;
        printf("%-8d %9lld %12lld %12lld %8.1f %8d %10.3f\n", i, (long long)p->requests,
               (long long)p->input_tokens, (long long)p->cached_tokens, hit, p->peak_load,
               (double)p->busy_ns * 1e-9);
    }
}

/* The scenario on one engine, or on the fleet its `cluster:` key describes. */
static enum rig_status rig__replay(const struct rig_scenario *s,
                                   const struct rig_run_options *options,
                                   struct rig_results *results, char *error, size_t error_len)
{
    if (s->cluster.replicas == 0) return rig_scenario_run(s, options, results, error, error_len);
    struct rig_fleet_config config;
    rig_fleet_config_of_scenario(s, &config);
    struct rig_fleet_results fleet;
    enum rig_status status = rig_fleet_run_recorded(s, &config, &fleet, results, error,
                                                    error_len);
    rig_fleet_results_free(&fleet);
    return status;
}

/* out/<name>.h5 unless --out says otherwise; creates out/ when needed. NULL: no file. */
static const char *rig__out_path(const struct rig__run_args *a, const struct rig_scenario *s,
                                 char *buffer, size_t len)
{
    if (a->out != NULL) return strcmp(a->out, "none") == 0 ? NULL : a->out;
    if (mkdir("out", 0777) != 0 && errno != EEXIST) return NULL;
    snprintf(buffer, len, "out/%s.h5", s->name);
    return buffer;
}

/* A process other than 0 of `--ranks mpi`: its rank's share, silent unless it fails. */
static int rig__run_follow(struct rig__run_args *a, const struct rig_scenario *s,
                           const struct rig_run_options *options)
{
    struct rig_results results;
    char error[512] = "";
    enum rig_status status = rig_scenario_run(s, options, &results, error, sizeof error);
    rig_results_free(&results);
    if (status == RIG_OK) return 0;
    fprintf(stderr, "rig run: %s: process %d: %s\n", s->path, a->ranks.process_rank, error);
    a->failed = true;
    return 1;
}

/* Runs, reports, writes; returns the exit status. */
static int rig__run_loaded(struct rig__run_args *a, const struct rig_scenario *s)
{
    struct rig_run_options options = {.check = a->check, .violation = rig__violation,
                                       .ranks = a->ranks.ranks};
    if (!rig_ranks_cli_leads(&a->ranks)) return rig__run_follow(a, s, &options);
    bool terminal = isatty(STDERR_FILENO) != 0;
    if ((!a->quiet && terminal) || a->progress) {
        options.progress = rig__progress;
        options.user = &terminal;
        options.progress_every = terminal ? 64 : 1024;
    }
    struct rig_results results;
    char error[512] = "";
    enum rig_status status = rig__replay(s, &options, &results, error, sizeof error);
    if (options.progress != NULL && terminal) fprintf(stderr, "\r%60s\r", "");
    if (status < 0) {
        fprintf(stderr, "rig run: %s: %s\n", s->path, error);
        rig_results_free(&results);
        a->failed = true;
        return 1;
    }
    struct rig_metrics metrics;
    status = rig_metrics_compute(&results, &metrics);
    RIG_ASSERT(status == RIG_OK);
    if (!a->quiet) {
        rig__print_table(&results, a->rows);
        rig__print_summary(&results, &metrics);
        if (results.fleet != NULL) rig__print_replicas(results.fleet);
    }
    int exit_status = 0;
    char path_buffer[RIG_SCENARIO_NAME_MAX + 16];
    const char *path = rig__out_path(a, s, path_buffer, sizeof path_buffer);
    if (path != NULL && rig_results_write_h5(&results, &metrics, path, error, sizeof error) < 0) {
        fprintf(stderr, "rig run: %s\n", error);
        exit_status = 1;
    } else if (path != NULL && !a->quiet) {
        printf("%-36s %s\n", "Results:", path);
    }
    int32_t failed = rig_expect_check(s, &results, &metrics, rig__expect_failed, NULL);
    if (failed > 0) exit_status = 1;
    if (failed > 0 || (!a->quiet && s->expect_count > 0))
        printf("%s: %d of %d expectations %s\n", s->name, s->expect_count - failed,
               s->expect_count, failed > 0 ? "hold; the rest FAILED" : "hold");
    rig_results_free(&results);
    return exit_status;
}

int rig_cmd_run(int argc, char **argv)
{
    struct rig__run_args args;
    int exit_status = rig__parse_args(argc, argv, &args);
    if (exit_status >= 0) return exit_status;
    struct rig_scenario scenario;
    char error[RIG_SCENARIO_ERROR_MAX];
    enum rig_status status = rig_scenario_load(args.scenario, args.sets, args.set_count,
                                               &scenario, error, sizeof error);
    if (status < 0) {
        fprintf(stderr, "rig run: %s\n", error);
        return 2;
    }
    if (args.ranks.ranks == RIG_RANKS_MPI && scenario.cluster.replicas > 0) {
        fprintf(stderr, "rig run: %s: a fleet (cluster:) runs its replicas in one process; "
                "--ranks mpi is for one engine\n", scenario.path);
        rig_scenario_free(&scenario);
        return 2;
    }
    exit_status = rig_ranks_cli_start("run", &args.ranks, scenario.engine.tp_size);
    if (exit_status < 0) exit_status = rig__run_loaded(&args, &scenario);
    rig_ranks_cli_finish(&args.ranks, args.failed);
    rig_scenario_free(&scenario);
    return exit_status;
}
