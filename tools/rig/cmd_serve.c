/* cmd_serve.c — `rig serve`: the OpenAI-compatible HTTP server (core/serve/serve.h).
 *
 * Flags are SGLang's / Mini-SGLang's names (--model-path, --port, --tp-size, ...) plus rig's
 * own for the simulator (--sim-pace, --sim-timing-only, --sim-profile) and sizing
 * (--num-pages). Startup prints what is served and where once the engine is ready; SIGINT or
 * SIGTERM stops accepting, aborts what is in flight, and exits 0 (docs/server.md).
 *
 * --ranks mpi (under `mpirun -n TP`, docs/engine.md): process 0 serves HTTP and schedules;
 * every other process holds its TP rank only and follows process 0's jobs, waiting for the
 * next one for as long as the server idles; process 0's shutdown ends them.
 *
 * Exit status: 0 after a signal, 1 when the server cannot start or the engine fails, 2 a usage
 * error.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/serve/serve.h"
#include "hal/hal.h"
#include "hal/startup.h"
#include "tools/rig/args.h"
#include "tools/rig/commands.h"
#include "tools/rig/ranks_cli.h"

struct rig__serve_args {
    const char *model_path;
    const char *tokenizer_path;
    const char *preset;
    bool dummy_weights;
    bool skip_weight_check;
    const char *backend;
    bool timing_only;
    const char *profile;
    const char *pace;
    uint64_t seed;
    int64_t num_pages;
    double mem_fraction;
    int32_t context_length;
    int32_t max_running, max_queued, chunked_prefill, page_size, cuda_graph_max_bs, tp;
    int32_t collective_timeout_ms; /* 0: the backend's default (10 minutes) */
    bool disable_overlap, disable_radix;
    struct rig_ranks_cli ranks; /* --ranks, SGLang's multi-node flags */
    struct rig_serve_config serve;
};

static volatile sig_atomic_t rig__signalled;

static void rig__on_signal(int sig)
{
    rig__signalled = sig;
}

static void rig__serve_usage(FILE *out)
{
    fprintf(out,
            "usage: rig serve (--model-path DIR | --preset NAME --tokenizer-path DIR) [options]\n"
            "\nThe OpenAI-compatible server: /v1/chat/completions, /v1/completions, /generate,\n"
            "/v1/models, /health, /metrics, /flush_cache, /abort_request (docs/server.md).\n\n"
            "model:\n"
            "  --model-path DIR           config.json, safetensors and tokenizer files\n"
            "  --preset NAME              built-in shapes (tiny, qwen3-0.6b, qwen3-8b, ...)\n"
            "  --tokenizer-path DIR       tokenizer.json (+ tokenizer_config.json); default\n"
            "                             the model path\n"
            "  --dummy-weights            seeded random weights (always with --preset)\n"
            "  --skip-weight-check        load without scanning the checkpoint for NaN / Inf\n"
            "  --served-model-name NAME   the `model` of requests and responses\n"
            "  --context-length N         context limit (default the model's)\n"
            "engine:\n"
            "  --backend sim|cuda         (default sim)\n"
            "  --tp-size N                tensor-parallel ranks (default 1)\n"
            "  --collective-timeout MS    a TP collective stuck this long fails the engine with\n"
            "                             an error naming rank and collective (default 600000)\n"
            "  --ranks threads|mpi        TP ranks as threads (default) or one per process under\n"
            "                             `mpirun -n TP` (process 0 serves HTTP)\n"
            "  --nnodes N --node-rank R --dist-init-addr HOST:PORT\n"
            "                             SGLang's multi-node flags: more than one node is\n"
            "                             refused with the mpirun command that starts it\n"
            "  --max-running-requests N   requests decoding at once (default 256)\n"
            "  --max-queued-requests N    requests waiting beyond those (default 1024); more\n"
            "                             are refused with 503\n"
            "  --chunked-prefill-size N   tokens per prefill batch (default 8192)\n"
            "  --page-size N              KV slots per page (default 1)\n"
            "  --num-pages N              KV pages (default: from --mem-fraction-static)\n"
            "  --mem-fraction-static F    device memory for weights + KV (default 0.85)\n"
            "  --cuda-graph-max-bs N      largest decode batch with a CUDA graph (0: none)\n"
            "  --disable-overlap-schedule, --disable-radix-cache\n"
            "  --seed S                   engine seed (per-request seeds derive from it)\n"
            "simulator:\n"
            "  --sim-pace fast|realtime   realtime keeps to the virtual clock (default fast)\n"
            "  --sim-timing-only          skip the math; tokens from a seeded generator\n"
            "  --sim-profile NAME|FILE    device profile (default h100)\n"
            "HTTP:\n"
            "  --host ADDR                (default 127.0.0.1)\n"
            "  --port N                   (default 1919; 0: any free port)\n"
            "  --api-key KEY              require Authorization: Bearer KEY\n"
            "  --max-request-bytes N      larger bodies get 413 (default 16 MiB)\n"
            "  --max-connections N        (default 4096)\n"
            "  --timeout S                idle connection timeout, seconds (default 60)\n"
            "  --http-threads N           (default 2)\n"
            "  --tokenizer-workers N      (default 1)\n"
            "  --log-level error|info|debug\n");
}

/* Options whose value is a string. */
static bool rig__serve_string(struct rig__serve_args *a, const char *arg, const char *v)
{
    struct rig_serve_config *s = &a->serve;
    if (strcmp(arg, "--model-path") == 0) a->model_path = v;
    else if (strcmp(arg, "--tokenizer-path") == 0) a->tokenizer_path = v;
    else if (strcmp(arg, "--preset") == 0) a->preset = v;
    else if (strcmp(arg, "--backend") == 0) a->backend = v;
    else if (strcmp(arg, "--sim-profile") == 0) a->profile = v;
    else if (strcmp(arg, "--sim-pace") == 0) a->pace = v;
    else if (strcmp(arg, "--host") == 0) s->host = v;
    else if (strcmp(arg, "--api-key") == 0) s->api_key = v;
    else if (strcmp(arg, "--served-model-name") == 0) s->served_model_name = v;
    else if (strcmp(arg, "--log-level") == 0) {
        s->log_level = strcmp(v, "error") == 0 ? 0 : strcmp(v, "debug") == 0 ? 2 : 1;
        if (strcmp(v, "error") != 0 && strcmp(v, "info") != 0 && strcmp(v, "debug") != 0 &&
            strcmp(v, "warning") != 0) {
            fprintf(stderr, "rig serve: --log-level: error, warning, info or debug\n");
            return false;
        }
    } else {
        return false;
    }
    return true;
}

struct rig__serve_int_option {
    const char *name;
    int32_t lo, hi;
    size_t offset;   /* of an int32_t in struct rig__serve_args */
};

#define RIG__OPT(name, lo, hi, field) {name, lo, hi, offsetof(struct rig__serve_args, field)}
static const struct rig__serve_int_option rig__serve_ints[] = {
    RIG__OPT("--port", 0, 65535, serve.port),
    RIG__OPT("--tp-size", 1, RIG_DEVICES_MAX, tp),
    RIG__OPT("--collective-timeout", 1, 86400000, collective_timeout_ms),
    RIG__OPT("--max-running-requests", 1, 65536, max_running),
    RIG__OPT("--max-queued-requests", 0, 1 << 19, max_queued),
    RIG__OPT("--chunked-prefill-size", 1, 1 << 20, chunked_prefill),
    RIG__OPT("--page-size", 1, 4096, page_size),
    RIG__OPT("--cuda-graph-max-bs", 0, 1024, cuda_graph_max_bs),
    RIG__OPT("--context-length", 2, 1 << 24, context_length),
    RIG__OPT("--max-connections", 1, 1 << 20, serve.max_connections),
    RIG__OPT("--timeout", 1, 86400, serve.connection_timeout_s),
    RIG__OPT("--http-threads", 1, 256, serve.http_threads),
    RIG__OPT("--tokenizer-workers", 1, RIG_SERVE_TOKENIZER_WORKERS_MAX, serve.tokenizer_workers),
};

/* One option with a value; false (with a message) when unknown or malformed. */
static bool rig__serve_option(struct rig__serve_args *a, const char *arg, const char *v)
{
    int64_t x = 0;
    for (size_t i = 0; i < RIG_ARRAY_LEN(rig__serve_ints); i++) {
        const struct rig__serve_int_option *o = &rig__serve_ints[i];
        if (strcmp(arg, o->name) != 0) continue;
        if (!rig_args_flag_i64("serve", arg, v, o->lo, o->hi, &x)) return false;
        *(int32_t *)((char *)a + o->offset) = (int32_t)x;
        return true;
    }
    if (strcmp(arg, "--num-pages") == 0)
        return rig_args_flag_i64("serve", arg, v, 1, 1ll << 40, &a->num_pages);
    if (strcmp(arg, "--max-request-bytes") == 0)
        return rig_args_flag_i64("serve", arg, v, 1, 1ll << 40, &a->serve.max_request_bytes);
    if (strcmp(arg, "--mem-fraction-static") == 0)
        return rig_args_flag_f64("serve", arg, v, 0.01, 0.99, &a->mem_fraction);
    if (strcmp(arg, "--seed") == 0)
        return rig_args_flag_u64("serve", arg, v, 0, UINT64_MAX, &a->seed);
    if (rig__serve_string(a, arg, v)) return true;
    fprintf(stderr, "rig serve: unknown option '%s'\n", arg);
    return false;
}

/* Returns -1 to continue, else the exit status. */
static int rig__serve_parse(int argc, char **argv, struct rig__serve_args *a)
{
    memset(a, 0, sizeof *a);
    rig_serve_config_default(&a->serve);
    a->backend = "sim";
    a->pace = "fast";
    a->tp = 1;
    a->max_running = 256;
    a->max_queued = 1024;
    a->chunked_prefill = 8192;
    a->page_size = 1;
    a->cuda_graph_max_bs = -1;
    a->mem_fraction = 0.85;
    rig_ranks_cli_init(&a->ranks);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            rig__serve_usage(stdout);
            return 0;
        }
        int taken = rig_ranks_cli_parse("serve", argc, argv, &i, &a->ranks);
        if (taken == 2) return 2;
        if (taken == 1) continue;
        if (strcmp(arg, "--dummy-weights") == 0 || strcmp(arg, "--dummy-weight") == 0)
            a->dummy_weights = true;
        else if (strcmp(arg, "--skip-weight-check") == 0) a->skip_weight_check = true;
        else if (strcmp(arg, "--sim-timing-only") == 0) a->timing_only = true;
        else if (strcmp(arg, "--disable-overlap-schedule") == 0) a->disable_overlap = true;
        else if (strcmp(arg, "--disable-radix-cache") == 0) a->disable_radix = true;
        else if (i + 1 >= argc) {
            fprintf(stderr, "rig serve: %s needs a value\n", arg);
            return 2;
        } else if (!rig__serve_option(a, arg, argv[++i])) {
            return 2;
        }
    }
    const char *problem = NULL;
    if ((a->model_path == NULL) == (a->preset == NULL)) problem = "give --model-path or --preset";
    else if (a->tokenizer_path == NULL && a->model_path == NULL)
        problem = "--preset needs --tokenizer-path";
    else if (strcmp(a->pace, "fast") != 0 && strcmp(a->pace, "realtime") != 0)
        problem = "--sim-pace is fast or realtime";
    if (problem == NULL) return -1;
    fprintf(stderr, "rig serve: %s\n\n", problem);
    rig__serve_usage(stderr);
    return 2;
}

/* KV pages from --mem-fraction-static of rank 0's memory, less the weights; at most what
 * every running request at full context could hold (a pool larger is never used). */
static int64_t rig__pages_from_memory(const struct rig__serve_args *a,
                                      const struct rig_engine_config *c)
{
    struct rig_device *device = NULL;
    if (rig_hal_open(c->backend, &c->device, 1, &device) != RIG_OK) return -1;
    double memory = (double)rig_hal_device_info(device)->memory_bytes;
    rig_hal_close(device);
    double pages = rig_model_kv_slots_in(&c->model, c->tp_size, a->mem_fraction * memory) /
                   c->page_size;
    int32_t context = c->max_seq_len > 0 ? c->max_seq_len : c->model.max_position;
    double useful = (double)c->max_running_req * context / c->page_size + 1;
    if (pages > useful) pages = useful;
    if (pages > (double)(1 << 24)) pages = (double)(1 << 24);
    return pages >= 1 ? (int64_t)pages : -1;
}

/* The engine's configuration from the flags; -1 to continue, else the exit status. */
static int rig__serve_engine(struct rig__serve_args *a)
{
    struct rig_engine_config *c = &a->serve.engine;
    char error[512];
    enum rig_status st = a->preset != NULL
                             ? rig_model_config_preset(a->preset, &c->model)
                             : rig_model_config_load(a->model_path, &c->model, error,
                                                     sizeof error);
    if (st != RIG_OK) {
        if (a->preset != NULL) snprintf(error, sizeof error, "unknown preset '%s'", a->preset);
        fprintf(stderr, "rig serve: %s\n", error);
        return 2;
    }
    c->backend = a->backend;
    c->device.timing_only = strcmp(a->backend, "sim") == 0 && a->timing_only;
    c->device.profile = a->profile;
    c->device.seed = a->seed;
    c->device.collective_timeout_ms = a->collective_timeout_ms;
    c->seed = a->seed;
    c->tp_size = a->tp;
    c->ranks = a->ranks.ranks;
    c->follow_unbounded = true; /* a follower waits out the server's idle time */
    c->weights.path = a->preset != NULL || a->dummy_weights ? NULL : a->model_path;
    c->weights.dummy_seed = a->seed;
    c->weights.skip_weight_check = a->skip_weight_check;
    c->max_running_req = a->max_running;
    c->max_requests = a->max_running + a->max_queued;
    c->prefill_budget = a->chunked_prefill;
    c->page_size = a->page_size;
    c->max_seq_len = a->context_length;
    c->overlap = !a->disable_overlap;
    c->cache_type = a->disable_radix ? RIG_CACHE_NAIVE : RIG_CACHE_RADIX;
    if (a->cuda_graph_max_bs == 0) c->cuda_graphs = false;
    if (a->cuda_graph_max_bs > 0) c->cuda_graph_max_bs = a->cuda_graph_max_bs;
    int64_t pages = a->num_pages > 0 ? a->num_pages : rig__pages_from_memory(a, c);
    if (pages < 1 || pages > INT32_MAX) {
        fprintf(stderr, "rig serve: no room for a KV cache (give --num-pages)\n");
        return 1;
    }
    c->num_pages = (int32_t)pages;
    a->serve.tokenizer_dir = a->tokenizer_path != NULL ? a->tokenizer_path : a->model_path;
    a->serve.pace = strcmp(a->pace, "realtime") == 0 ? RIG_DRIVER_PACE_REALTIME
                                                     : RIG_DRIVER_PACE_FAST;
    if (strcmp(a->serve.served_model_name, "default") == 0)
        a->serve.served_model_name = a->preset != NULL ? a->preset : a->model_path;
    return -1;
}

/* Waits for a signal or an engine failure; returns the exit status. */
static int rig__serve_wait(struct rig_serve *server)
{
    char error[256];
    struct timespec tick = {0, 50 * 1000 * 1000};
    while (rig__signalled == 0) {
        if (rig_serve_failed(server, error, sizeof error)) {
            fprintf(stderr, "rig serve: the engine stopped: %s\n", error);
            return 1;
        }
        nanosleep(&tick, NULL);
    }
    fprintf(stderr, "rig serve: %s: stopping (aborting requests in flight)\n",
            rig__signalled == SIGINT ? "SIGINT" : "SIGTERM");
    return 0;
}

/* A process other than 0 of --ranks mpi: its rank's share of process 0's jobs until process
 * 0's engine goes (its shutdown), silent unless it fails. */
static int rig__serve_follow(struct rig__serve_args *a)
{
    /* mpirun forwards a signal to every process; a follower ends with process 0's shutdown
     * (the exit job), not on the signal, so the last steps in flight still have their ranks. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    struct rig_engine *engine = NULL;
    char error[512];
    if (rig_engine_create(&a->serve.engine, NULL, &engine, error, sizeof error) != RIG_OK) {
        fprintf(stderr, "rig serve: process %d: %s\n", (int)a->ranks.process_rank, error);
        return 1;
    }
    enum rig_status s = rig_engine_follow(engine);
    if (s != RIG_OK)
        fprintf(stderr, "rig serve: process %d: %s: %s\n", (int)a->ranks.process_rank,
                rig_status_message(s), rig_engine_error(engine));
    rig_engine_destroy(engine); /* ends the MPI job when the run failed */
    return s == RIG_OK ? 0 : 1;
}

static int rig__serve_run(struct rig__serve_args *a);

int rig_cmd_serve(int argc, char **argv)
{
    static struct rig__serve_args a; /* ~1 KB of flags, off the stack */
    int rc = rig__serve_parse(argc, argv, &a);
    if (rc < 0) rc = rig__serve_engine(&a);
    if (rc < 0) rc = rig_ranks_cli_start("serve", &a.ranks, a.tp);
    if (rc >= 0) return rc;
    rc = rig_ranks_cli_leads(&a.ranks) ? rig__serve_run(&a) : rig__serve_follow(&a);
    rig_ranks_cli_finish(&a.ranks, rc == 1);
    return rc;
}

/* Process 0 (or the only process): the server. */
static int rig__serve_run(struct rig__serve_args *a)
{
    int rc = -1;
    struct sigaction action = {.sa_handler = rig__on_signal};
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct rig_serve *server = NULL;
    char error[512] = "";
    if (rig_serve_start(&a->serve, &server, error, sizeof error) != RIG_OK) {
        fprintf(stderr, "rig serve: %s\n", error);
        return 1;
    }
    const struct rig_engine_config *c = &a->serve.engine;
    fprintf(stderr, "rig serve: loading %s on %s (tp %d, %d KV pages of %d)...\n",
            a->serve.served_model_name, c->backend, c->tp_size, c->num_pages, c->page_size);
    rc = rig_serve_wait_ready(server, error, sizeof error) == RIG_OK ? -1 : 1;
    if (rc > 0) fprintf(stderr, "rig serve: the engine did not start: %s\n", error);
    if (rc < 0) {
        rig_startup_mark("serving");
        printf("rig serve: serving %s (context %d%s) at http://%s:%d — ready\n",
               a->serve.served_model_name, rig_serve_context_len(server),
               c->device.timing_only ? ", simulator timing only" : "", a->serve.host,
               rig_serve_port(server));
        fflush(stdout);
        rc = rig__serve_wait(server);
    }
    enum rig_status st = rig_serve_shutdown(server);
    rig_serve_destroy(server);
    if (rc == 0 && st != RIG_OK) rc = 1;
    return rc;
}
