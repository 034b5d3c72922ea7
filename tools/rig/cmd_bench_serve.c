/* cmd_bench_serve.c — `rig bench serve`: sglang.bench_serving's client in C, for any
 * OpenAI-compatible server (core/harness/bench/serve.h, docs/bench.md).
 *
 * Flags carry bench_serving's names. The run: load the tokenizer (when given) and the
 * dataset, ask the server for its model when an OpenAI API needs one, build the bodies,
 * warm up (--warmup-requests copies of the first prompt, at most 32 output tokens, all at
 * once; the run stops when none succeeds, as bench_serving does), then send the prompts on
 * their schedule, print bench_serving's table, append the JSONL line and write the results
 * file. A progress bar goes to stderr when it is a terminal. Exit status: 0 some request
 * succeeded, 1 every request failed or the run could not start, 2 a usage error.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/harness/bench/serve.h"
#include "core/text/tokenizer.h"
#include "tools/rig/args.h"
#include "tools/rig/commands.h"

#define RIG__MODEL_MAX 256

static void rig__usage(FILE *out)
{
    fprintf(
        out,
        "usage: rig bench serve [options]\n\n"
        "Benchmarks a running server over HTTP as sglang.bench_serving does (docs/bench.md).\n\n"
        "server:   --base-url URL (default http://127.0.0.1:1919)  --backend rig|sglang|\n"
        "          openai|openai-chat|vllm|vllm-chat|...  --model NAME (default: asked\n"
        "          from /v1/models for OpenAI backends)  --tokenizer DIR|tokenizer.json\n"
        "dataset:  --dataset-name random|random-ids|sharegpt|trace  --dataset-path FILE\n"
        "          --num-prompts N (1000; trace: all)  --random-input-len N (1024)\n"
        "          --random-output-len N (1024)  --random-range-ratio R (0)\n"
        "          --random-vocab-size N (10000, ids without a tokenizer)\n"
        "          --sharegpt-output-len N  --sharegpt-context-len N  --tokenize-prompt\n"
        "traffic:  --request-rate R|inf (inf; trace: its own times unless given)\n"
        "          --burstiness B (1 = Poisson)  --max-concurrency N  --seed N (1)\n"
        "          --warmup-requests N (1)  --request-timeout S (600)  --timeout S (none)\n"
        "requests: --disable-ignore-eos (ignore_eos is on, as in bench_serving; --ignore-eos\n"
        "          says so explicitly)  --disable-stream  --no-stream-usage\n"
        "report:   --goodput ttft:MS [tpot:MS] [e2e:MS]  --output-file F.jsonl\n"
        "          --output-details  --out F.h5  --tag TEXT  --disable-tqdm  --quiet\n"
        "          --dry-run (print each prompt's id, send time and lengths; send nothing)\n");
}

static const char *const rig__valued[] = {"--base-url",
                                          "--host",
                                          "--port",
                                          "--backend",
                                          "--model",
                                          "--tokenizer",
                                          "--dataset-name",
                                          "--dataset-path",
                                          "--num-prompts",
                                          "--random-input-len",
                                          "--random-output-len",
                                          "--random-range-ratio",
                                          "--random-vocab-size",
                                          "--sharegpt-output-len",
                                          "--sharegpt-context-len",
                                          "--request-rate",
                                          "--burstiness",
                                          "--max-concurrency",
                                          "--seed",
                                          "--warmup-requests",
                                          "--request-timeout",
                                          "--timeout",
                                          "--output-file",
                                          "--out",
                                          "--tag"};

struct rig__args {
    struct rig_serve_options o;
    const char *host, *port;
    char url[512];
    bool bar;
    bool dry_run; /* print the prompts and their schedule, send nothing */
};

/* Integer-valued options; true when `name` was one (ok says whether its value parsed). */
static bool rig__int_option(struct rig_serve_options *o, const char *name, const char *v, bool *ok)
{
    static const struct {
        const char *name;
        size_t offset;
        int32_t lo, hi;
    } table[] = {
        {"--num-prompts", offsetof(struct rig_serve_options, num_prompts), 1,
         RIG_SERVE_PROMPTS_MAX},
        {"--random-input-len", offsetof(struct rig_serve_options, random_input_len), 1, 1 << 22},
        {"--random-output-len", offsetof(struct rig_serve_options, random_output_len), 1,
         RIG_SERVE_OUTPUT_MAX},
        {"--random-vocab-size", offsetof(struct rig_serve_options, random_vocab_size), 1, 1 << 30},
        {"--sharegpt-output-len", offsetof(struct rig_serve_options, sharegpt_output_len), 4,
         RIG_SERVE_OUTPUT_MAX},
        {"--sharegpt-context-len", offsetof(struct rig_serve_options, sharegpt_context_len), 1,
         1 << 30},
        {"--max-concurrency", offsetof(struct rig_serve_options, max_concurrency), 1,
         RIG_SERVE_CONCURRENCY_MAX},
        {"--warmup-requests", offsetof(struct rig_serve_options, warmup_requests), 0,
         RIG_SERVE_WARMUP_MAX},
    };
    for (size_t i = 0; i < RIG_ARRAY_LEN(table); i++) {
        if (strcmp(name, table[i].name) != 0) continue;
        int32_t *field = (int32_t *)((char *)o + table[i].offset);
        *ok = rig_args_flag_i32("bench serve", name, v, table[i].lo, table[i].hi, field);
        return true;
    }
    return false;
}

static bool rig__real_option(struct rig_serve_options *o, const char *name, const char *v, bool *ok)
{
    if (strcmp(name, "--random-range-ratio") == 0)
        *ok = rig_args_flag_f64("bench serve", name, v, 0.0, 1.0, &o->random_range_ratio);
    else if (strcmp(name, "--request-rate") == 0) {
        *ok = rig_args_flag_f64("bench serve", name, v, 1e-9, INFINITY, &o->request_rate);
        o->request_rate_given = true;
    } else if (strcmp(name, "--burstiness") == 0)
        *ok = rig_args_flag_f64("bench serve", name, v, 1e-3, 1e6, &o->burstiness);
    else if (strcmp(name, "--request-timeout") == 0)
        *ok = rig_args_flag_f64("bench serve", name, v, 1e-3, 1e7, &o->request_timeout_s);
    else if (strcmp(name, "--timeout") == 0)
        *ok = rig_args_flag_f64("bench serve", name, v, 0.0, 1e7, &o->timeout_s);
    else if (strcmp(name, "--seed") == 0)
        *ok = rig_args_flag_u64("bench serve", name, v, 0, UINT64_MAX, &o->seed);
    else
        return false;
    return true;
}

/* An option with a value at argv[*i]; returns -1 to continue, else the exit status. */
static int rig__valued_option(int argc, char **argv, int *i, struct rig__args *a)
{
    const char *name = argv[*i];
    if (*i + 1 >= argc) {
        fprintf(stderr, "rig bench serve: %s needs a value\n", name);
        return 2;
    }
    const char *v = argv[++*i];
    struct rig_serve_options *o = &a->o;
    bool ok = true;
    if (rig__int_option(o, name, v, &ok) || rig__real_option(o, name, v, &ok)) return ok ? -1 : 2;
    const char **field = strcmp(name, "--base-url") == 0       ? &o->base_url
                         : strcmp(name, "--host") == 0         ? &a->host
                         : strcmp(name, "--port") == 0         ? &a->port
                         : strcmp(name, "--backend") == 0      ? &o->backend
                         : strcmp(name, "--model") == 0        ? &o->model
                         : strcmp(name, "--tokenizer") == 0    ? &o->tokenizer
                         : strcmp(name, "--dataset-name") == 0 ? &o->dataset_name
                         : strcmp(name, "--dataset-path") == 0 ? &o->dataset_path
                         : strcmp(name, "--output-file") == 0  ? &o->output_file
                         : strcmp(name, "--out") == 0          ? &o->out_h5
                                                               : &o->tag;
    *field = v;
    return -1;
}

/* --goodput takes one or more NAME:MS words. */
static int rig__goodput(int argc, char **argv, int *i, struct rig_serve_options *o)
{
    int taken = 0;
    while (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0) {
        char error[256];
        if (rig_serve_goodput_parse(o, argv[++*i], error, sizeof error) < 0) {
            fprintf(stderr, "rig bench serve: %s\n", error);
            return 2;
        }
        taken++;
    }
    if (taken > 0) return -1;
    fprintf(stderr, "rig bench serve: --goodput needs NAME:MS (ttft, tpot, e2e)\n");
    return 2;
}

static bool rig__flag(const char *arg, struct rig__args *a)
{
    struct rig_serve_options *o = &a->o;
    if (strcmp(arg, "--ignore-eos") == 0)
        o->ignore_eos = true;
    else if (strcmp(arg, "--disable-ignore-eos") == 0)
        o->ignore_eos = false;
    else if (strcmp(arg, "--disable-stream") == 0)
        o->stream = false;
    else if (strcmp(arg, "--no-stream-usage") == 0)
        o->stream_usage = false;
    else if (strcmp(arg, "--tokenize-prompt") == 0)
        o->tokenize_prompt = true;
    else if (strcmp(arg, "--output-details") == 0)
        o->output_details = true;
    else if (strcmp(arg, "--disable-tqdm") == 0)
        a->bar = false;
    else if (strcmp(arg, "--quiet") == 0)
        o->quiet = true;
    else if (strcmp(arg, "--dry-run") == 0)
        a->dry_run = true;
    else
        return false;
    return true;
}

/* Returns -1 to continue, else the exit status. */
static int rig__parse(int argc, char **argv, struct rig__args *a)
{
    rig_serve_options_default(&a->o);
    a->bar = isatty(STDERR_FILENO);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool valued = false;
        for (size_t k = 0; k < RIG_ARRAY_LEN(rig__valued); k++)
            valued |= !strcmp(arg, rig__valued[k]);
        int status = -1;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            rig__usage(stdout);
            return 0;
        } else if (strcmp(arg, "--goodput") == 0) {
            status = rig__goodput(argc, argv, &i, &a->o);
        } else if (valued) {
            status = rig__valued_option(argc, argv, &i, a);
        } else if (!rig__flag(arg, a)) {
            fprintf(stderr, "rig bench serve: unexpected argument '%s'\n\n", arg);
            rig__usage(stderr);
            return 2;
        }
        if (status >= 0) return status;
    }
    if (a->host != NULL || a->port != NULL) {
        snprintf(a->url, sizeof a->url, "http://%s:%s", a->host != NULL ? a->host : "127.0.0.1",
                 a->port != NULL ? a->port : "1919");
        a->o.base_url = a->url;
    }
    if (rig_serve_api_parse(a->o.backend) < 0) {
        fprintf(stderr,
                "rig bench serve: unknown --backend '%s' (rig, sglang, openai, "
                "openai-chat, vllm, vllm-chat, sglang-oai, sglang-oai-chat, ...)\n",
                a->o.backend);
        return 2;
    }
    return -1;
}

static void rig__bar(void *user, int32_t done, int32_t total, int32_t failed, double tokens_s)
{
    (void)user;
    int filled = total > 0 ? (int)(30LL * done / total) : 0;
    char bar[31];
    for (int i = 0; i < 30; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "\r  [%s] %d/%d requests  %.0f output tok/s  %d errors ", bar, done, total,
            tokens_s, failed);
    fflush(stderr);
}

/* More descriptors than the default 1024, for thousands of streams (bench_serving's
 * set_ulimit); a failure only limits concurrency. */
static void rig__raise_file_limit(void)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
}

static struct rig_tokenizer *rig__tokenizer(const char *path, bool *failed)
{
    *failed = false;
    if (path == NULL) return NULL;
    struct rig_tokenizer *t = NULL;
    size_t len = strlen(path);
    char error[512];
    enum rig_status status = len > 5 && strcmp(path + len - 5, ".json") == 0
                                 ? rig_tokenizer_load_files(path, NULL, &t, error, sizeof error)
                                 : rig_tokenizer_load(path, &t, error, sizeof error);
    if (status == RIG_OK) return t;
    fprintf(stderr, "rig bench serve: --tokenizer %s: %s\n", path, error);
    *failed = true;
    return NULL;
}

/* bench_serving's warm-up: copies of the first prompt, at most 32 tokens, all at once. */
static int rig__warmup(const struct rig__args *a, const struct rig_serve_dataset *d,
                       enum rig_serve_api api, const char *model)
{
    if (a->o.warmup_requests == 0) return 0;
    struct rig_serve_options o = a->o;
    o.progress = NULL;
    o.timeout_s = 0.0;
    o.max_concurrency = 0;
    struct rig_serve_dataset warm = {0};
    const struct rig_serve_prompt *p = &d->prompts[0];
    enum rig_status status = RIG_OK;
    for (int32_t i = 0; i < o.warmup_requests && status == RIG_OK; i++)
        status = rig_serve_dataset_add(&warm, "warmup", d->tokens + p->token_offset, p->token_count,
                                       p->text_offset >= 0 ? d->text + p->text_offset : NULL,
                                       p->input_len, p->output_len < 32 ? p->output_len : 32, 0);
    char error[512] = "out of memory";
    if (status == RIG_OK) status = rig_serve_bodies(&warm, api, &o, model, error, sizeof error);
    struct rig_serve_run run;
    if (!o.quiet) printf("Starting warmup with %d sequences...\n", o.warmup_requests);
    if (status == RIG_OK) status = rig_serve_run(&o, api, &warm, NULL, &run, error, sizeof error);
    int exit_status = 0;
    if (status == RIG_OK) {
        int32_t ok = 0, first = -1;
        for (int32_t i = 0; i < warm.count; i++) {
            if (run.outcomes[i].failure == RIG_SERVE_OK)
                ok++;
            else if (first < 0)
                first = i;
        }
        if (ok == 0) {
            fprintf(stderr,
                    "rig bench serve: warmup failed - check the server and the "
                    "options. Error: %s\n",
                    run.outcomes[first].error);
            exit_status = 1;
        } else if (!o.quiet) {
            printf("Warmup completed with %d sequences (%d succeeded). Starting main benchmark "
                   "run...\n",
                   warm.count, ok);
        }
        rig_serve_run_free(&run);
    } else {
        fprintf(stderr, "rig bench serve: warmup: %s\n", error);
        exit_status = 1;
    }
    rig_serve_dataset_free(&warm);
    return exit_status;
}

/* The measured run and its report. */
static int rig__measure(struct rig__args *a, struct rig_serve_dataset *d,
                        const struct rig_tokenizer *t, enum rig_serve_api api)
{
    char error[512];
    struct rig_serve_run run;
    if (a->bar) a->o.progress = rig__bar;
    enum rig_status status = rig_serve_run(&a->o, api, d, t, &run, error, sizeof error);
    if (a->bar) fprintf(stderr, "\r%80s\r", "");
    if (status < 0) {
        fprintf(stderr, "rig bench serve: %s\n", error);
        return 1;
    }
    struct rig_serve_summary s;
    int exit_status = 0;
    status = rig_serve_summarize(&a->o, &run, &s);
    if (status == RIG_OK) {
        rig_serve_print(&a->o, &run, &s, stdout);
        if (a->o.output_file != NULL &&
            rig_serve_write_jsonl(&a->o, d, &run, &s, a->o.output_file, error, sizeof error) < 0)
            status = RIG_E_IO;
        if (status == RIG_OK && a->o.out_h5 != NULL &&
            rig_serve_write_h5(&a->o, d, &run, &s, a->o.out_h5, error, sizeof error) < 0)
            status = RIG_E_IO;
        if (status < 0) fprintf(stderr, "rig bench serve: %s\n", error);
        if (s.metrics.completed == 0)
            fprintf(stderr, "rig bench serve: every request failed. This is likely a "
                            "misconfiguration of the server or the benchmark options.\n");
        exit_status = status < 0 || s.metrics.completed == 0 ? 1 : 0;
    } else {
        fprintf(stderr, "rig bench serve: out of memory computing the metrics\n");
        exit_status = 1;
    }
    rig_serve_run_free(&run);
    return exit_status;
}

static int rig__serve(struct rig__args *a, const struct rig_tokenizer *t)
{
    char error[512], model[RIG__MODEL_MAX];
    enum rig_serve_api api = (enum rig_serve_api)rig_serve_api_parse(a->o.backend);
    if (a->o.model == NULL && api != RIG_SERVE_API_GENERATE && !a->dry_run) {
        if (rig_serve_model_query(a->o.base_url, model, sizeof model, error, sizeof error) < 0) {
            fprintf(stderr, "rig bench serve: %s (give --model)\n", error);
            return 1;
        }
        a->o.model = model;
    }
    struct rig_serve_dataset d;
    if (rig_serve_dataset_load(&a->o, t, &d, error, sizeof error) < 0) {
        fprintf(stderr, "rig bench serve: %s\n", error);
        return 1;
    }
    int64_t input = 0, output = 0;
    for (int32_t i = 0; i < d.count; i++) {
        input += d.prompts[i].input_len;
        output += d.prompts[i].output_len;
    }
    if (!a->o.quiet)
        printf("%s\n#Input tokens: %lld\n#Output tokens: %lld\n", d.description, (long long)input,
               (long long)output);
    if (a->dry_run) {
        for (int32_t i = 0; i < d.count; i++)
            printf("%s %.9f %d %d\n", d.prompts[i].id, (double)d.prompts[i].arrival_ns * 1e-9,
                   d.prompts[i].input_len, d.prompts[i].output_len);
        rig_serve_dataset_free(&d);
        return 0;
    }
    int exit_status = 0;
    if (rig_serve_bodies(&d, api, &a->o, a->o.model, error, sizeof error) < 0) {
        fprintf(stderr, "rig bench serve: %s\n", error);
        exit_status = 1;
    }
    if (exit_status == 0) exit_status = rig__warmup(a, &d, api, a->o.model);
    if (exit_status == 0) exit_status = rig__measure(a, &d, t, api);
    rig_serve_dataset_free(&d);
    return exit_status;
}

int rig_cmd_bench_serve(int argc, char **argv)
{
    struct rig__args a;
    memset(&a, 0, sizeof a);
    int exit_status = rig__parse(argc, argv, &a);
    if (exit_status >= 0) return exit_status;
    rig__raise_file_limit();
    bool failed = false;
    struct rig_tokenizer *t = rig__tokenizer(a.o.tokenizer, &failed);
    if (failed) return 1;
    exit_status = rig__serve(&a, t);
    rig_tokenizer_free(t);
    return exit_status;
}
