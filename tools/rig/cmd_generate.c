/* cmd_generate.c — `rig generate`: token ids in, generated token ids out, through the engine.
 *
 * The prompts are submitted together and run as one batch through the real scheduler
 * (core/engine/engine.h): prefill of every prompt in the first step (the prefill budget and the
 * running-request limit are raised to fit them), then decode until each request finishes.
 * Output: one line per prompt with its generated ids, space separated; with --json one
 * object per line: {"index", "prompt_len", "ids", "finish_reason"}.
 *
 * --prefill-budget N and --max-running N replace the raised limits: prompts longer than N
 * are prefilled in chunks, and prompts admitted after an earlier one's prompt completed
 * find its prefix in the radix cache (--json reports each prompt's cached_len).
 *
 * --logits-out FILE writes, for each prompt, the logits at its last prompt position (those
 * of the step that completed its prefill, whether that was the first step, a chunk or a
 * prefix-cache hit): float32 little-endian, row-major [prompts, vocab_size], row i for the
 * i-th --prompt-ids, the full vocabulary (no TP padding). Reading them needs each batch's
 * results settled before the next forward, so overlap scheduling is turned off for that
 * run (the tokens do not change: they never depend on overlap).
 *
 * --min-p, --presence-penalty, --frequency-penalty and --repetition-penalty set the sampling
 * extensions (docs/engine.md); --logprobs N adds to each --json object "logprobs": one
 * {"logprob", "top": [[id, logprob], ...]} per generated token (N alternatives).
 *
 * --prompt TEXT (with --tokenizer DIR, by default the model's directory) is text in and text
 * out: the text encoded as `rig tokenize` does (with --chat: one user message in the model's
 * chat template, as `rig tokenize --chat`), the generated text streamed to standard output
 * through the incremental detokenizer (tools/rig/text_cli.h) — the text `rig detokenize`
 * gives of the ids the same run with --prompt-ids prints.
 *
 * Exit status: 0 success, 1 a run error or a rejected prompt, 2 a usage error.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/engine.h"
#include "core/engine/driver.h"
#include "tools/rig/args.h"
#include "hal/startup.h"
#include "tools/rig/commands.h"
#include "tools/rig/ranks_cli.h"
#include "tools/rig/text_cli.h"

#define RIG__PROMPTS_MAX 64
#define RIG__PROMPT_TOKENS_MAX 65536

struct rig__generate_args {
    const char *model_dir;
    const char *preset;
    bool dummy_weights;
    bool skip_weight_check;
    const char *backend;
    int32_t tp;
    const char *prompt_text[RIG__PROMPTS_MAX]; /* (prompt_count) "1,2,3" */
    int32_t prompt_count;
    int32_t max_tokens;
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p, presence_penalty, frequency_penalty, repetition_penalty;
    int32_t logprobs;                          /* -1: none */
    uint64_t seed;
    bool ignore_eos;
    const char *stop_text;                     /* "7,8" or NULL */
    int32_t stop[RIG_STOP_TOKENS_MAX];         /* (stop_count) parsed from stop_text */
    int32_t stop_count;
    const char *logits_out;
    bool json;
    int32_t prefill_budget;                    /* 0: raised to fit every prompt */
    struct rig_ranks_cli ranks;                /* --ranks, SGLang's multi-node flags */
    int32_t max_running;                       /* 0: raised to the prompt count */
    int64_t collective_timeout_ms;             /* 0: the backend's default */
    const char *prompt;                        /* --prompt TEXT, or NULL */
    const char *tokenizer_dir;                 /* --tokenizer DIR (default: --model) */
    bool chat;                                 /* --chat: the prompt is a user message */
};

/* What the observer collects, per prompt (uid = index + 1). */
struct rig__generate_state {
    int32_t *outputs[RIG__PROMPTS_MAX];  /* (max_tokens) each */
    int32_t output_len[RIG__PROMPTS_MAX];
    enum rig_request_end reason[RIG__PROMPTS_MAX];
    bool ended[RIG__PROMPTS_MAX];
    int32_t cached_len[RIG__PROMPTS_MAX];
    int32_t capacity;                    /* max_tokens */
    uint64_t step_uids[RIG__PROMPTS_MAX]; /* (step_size) the last step's requests, batch order */
    int32_t step_size;
    bool first_token[RIG__PROMPTS_MAX];  /* got its first token in the last step */
    int32_t top;                         /* alternatives per token (--logprobs), -1: none */
    float *logprob[RIG__PROMPTS_MAX];    /* (max_tokens) the sampled tokens' */
    int32_t *top_ids[RIG__PROMPTS_MAX];  /* (max_tokens, top) */
    float *top_logprobs[RIG__PROMPTS_MAX]; /* (max_tokens, top) */
    struct rig_cli_stream *text;         /* --prompt: prompt 0's text goes here, or NULL */
};

static void rig__generate_usage(FILE *out)
{
    fprintf(out,
            "usage: rig generate (--model DIR | --preset NAME) --prompt-ids IDS [--prompt-ids IDS\n"
            "                    ...] --max-tokens N [options]\n\n"
            "Runs the prompts as one batch through the scheduler and prints the generated ids,\n"
            "one line per prompt.\n\n"
            "options:\n"
            "  --model DIR          Hugging Face model directory (config.json + safetensors)\n"
            "  --preset NAME        built-in shapes: tiny, qwen3-0.6b, qwen3-8b, qwen3-32b,\n"
            "                       llama-3.2-1b (always seeded dummy weights)\n"
            "  --dummy-weights      seeded random weights instead of the checkpoint\n"
            "  --skip-weight-check  load without scanning the checkpoint for NaN / Inf\n"
            "  --backend sim|cuda   (default sim)\n"
            "  --tp N               tensor-parallel ranks (default 1)\n"
            "  --prompt-ids IDS     comma-separated token ids of one prompt (repeatable, <= %d)\n"
            "  --prompt TEXT        text in, text streamed out (instead of --prompt-ids)\n"
            "  --chat               --prompt is a user message in the model's chat template\n"
            "  --tokenizer DIR      tokenizer.json for --prompt (default: the --model DIR)\n"
            "  --max-tokens N       tokens to generate per prompt (>= 1)\n"
            "  --temperature T      0 = greedy (default 0)\n"
            "  --top-k K            0 = off (default 0)\n"
            "  --top-p P            1 = off (default 1)\n"
            "  --min-p P            keep tokens with p >= P * p_max (default 0: off)\n"
            "  --presence-penalty X, --frequency-penalty X   over the generated tokens, in\n"
            "                       [-2, 2] (default 0)\n"
            "  --repetition-penalty X   over prompt and output, in (0, 2] (default 1: off)\n"
            "  --logprobs N         with --json: each token's logprob and N alternatives\n"
            "  --seed S             sampling and dummy-weight seed (default 0)\n"
            "  --ignore-eos         do not stop at the model's EOS tokens\n"
            "  --stop-token-ids IDS comma-separated ids that end a request (at most %d)\n"
            "  --logits-out FILE    first step's last-position logits: float32 little-endian\n"
            "                       [prompts, vocab] (see docs/model.md)\n"
            "  --json               one JSON object per prompt: ids, finish reason, cached_len\n"
            "  --prefill-budget N   tokens per prefill batch (default: all prompts at once;\n"
            "                       smaller: chunked prefill)\n"
            "  --max-running N      requests running at once (default: all prompts; 1: one\n"
            "                       after another, so shared prefixes hit the radix cache)\n"
            "  --collective-timeout MS  a TP collective stuck this long ends the run with an\n"
            "                       error naming rank and collective (default 600000)\n"
            "  --ranks threads|mpi  TP ranks as threads (default) or one per process under\n"
            "                       `mpirun -n TP` (process 0 prints; docs/engine.md)\n"
            "  --nnodes N --node-rank R --dist-init-addr HOST:PORT   SGLang's multi-node flags:\n"
            "                       more than one node is refused with the mpirun command\n",
            RIG__PROMPTS_MAX, RIG_STOP_TOKENS_MAX);
}

static const char *rig__gen_value(int argc, char **argv, int *i)
{
    if (*i + 1 < argc) return argv[++*i];
    fprintf(stderr, "rig generate: %s needs a value\n", argv[*i]);
    return NULL;
}

/* The sampling-extension options: true when `arg` is one of them, with *x set to the value
 * parsed or to NaN when it was malformed (a message printed). The engine checks ranges. */
static bool rig__extension_option(struct rig__generate_args *a, const char *arg,
                                  const char *v, double *x)
{
    static const char *const names[] = {"--min-p", "--presence-penalty", "--frequency-penalty",
                                        "--repetition-penalty", "--logprobs"};
    float *fields[] = {&a->min_p, &a->presence_penalty, &a->frequency_penalty,
                       &a->repetition_penalty};
    for (size_t i = 0; i < RIG_ARRAY_LEN(names); i++) {
        if (strcmp(arg, names[i]) != 0) continue;
        if (i == RIG_ARRAY_LEN(fields)) /* --logprobs: a count */
            *x = rig_args_flag_i32("generate", arg, v, 0, 100, &a->logprobs) ? a->logprobs : NAN;
        else if (!rig_args_flag_f64("generate", arg, v, -100, 100, x))
            *x = NAN;
        else *fields[i] = (float)*x;
        return true;
    }
    return false;
}

/* One option with a value; returns false (with a message) when it is malformed. */
static bool rig__generate_option(struct rig__generate_args *a, const char *arg,
                                 const char *v)
{
    double x = 0.0;
    if (strcmp(arg, "--model") == 0) a->model_dir = v;
    else if (strcmp(arg, "--preset") == 0) a->preset = v;
    else if (strcmp(arg, "--backend") == 0) a->backend = v;
    else if (strcmp(arg, "--logits-out") == 0) a->logits_out = v;
    else if (strcmp(arg, "--stop-token-ids") == 0) a->stop_text = v;
    else if (strcmp(arg, "--prompt") == 0) a->prompt = v;
    else if (strcmp(arg, "--tokenizer") == 0) a->tokenizer_dir = v;
    else if (strcmp(arg, "--tp") == 0) {
        return rig_args_flag_i32("generate", arg, v, 1, RIG_DEVICES_MAX, &a->tp);
    } else if (strcmp(arg, "--prefill-budget") == 0) {
        return rig_args_flag_i32("generate", arg, v, 1, 1 << 24, &a->prefill_budget);
    } else if (strcmp(arg, "--collective-timeout") == 0) {
        int32_t ms = 0;
        if (!rig_args_flag_i32("generate", arg, v, 1, 86400000, &ms)) return false;
        a->collective_timeout_ms = ms;
    } else if (strcmp(arg, "--max-running") == 0) {
        return rig_args_flag_i32("generate", arg, v, 1, RIG__PROMPTS_MAX, &a->max_running);
    } else if (strcmp(arg, "--max-tokens") == 0) {
        return rig_args_flag_i32("generate", arg, v, 1, 1 << 20, &a->max_tokens);
    } else if (strcmp(arg, "--temperature") == 0) {
        if (!rig_args_flag_f64("generate", arg, v, 0, 100, &x)) return false;
        a->temperature = (float)x;
    } else if (strcmp(arg, "--top-k") == 0) {
        return rig_args_flag_i32("generate", arg, v, 0, 1 << 24, &a->top_k);
    } else if (strcmp(arg, "--top-p") == 0) {
        if (!rig_args_flag_f64("generate", arg, v, 1e-6, 1, &x)) return false;
        a->top_p = (float)x;
    } else if (rig__extension_option(a, arg, v, &x)) {
        return !isnan(x);
    } else if (strcmp(arg, "--seed") == 0) {
        return rig_args_flag_u64("generate", arg, v, 0, UINT64_MAX, &a->seed);
    } else if (strcmp(arg, "--prompt-ids") == 0) {
        if (a->prompt_count == RIG__PROMPTS_MAX) {
            fprintf(stderr, "rig generate: at most %d prompts\n", RIG__PROMPTS_MAX);
            return false;
        }
        a->prompt_text[a->prompt_count++] = v;
    } else {
        fprintf(stderr, "rig generate: unknown option '%s'\n", arg);
        return false;
    }
    return true;
}

/* Returns -1 to continue, else the exit status. */
static int rig__generate_parse(int argc, char **argv, struct rig__generate_args *a)
{
    memset(a, 0, sizeof *a);
    a->backend = "sim";
    a->tp = 1;
    a->top_p = 1.0f;
    a->repetition_penalty = 1.0f;
    a->logprobs = -1;
    rig_ranks_cli_init(&a->ranks);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int taken = rig_ranks_cli_parse("generate", argc, argv, &i, &a->ranks);
        if (taken == 2) return 2;
        if (taken == 1) continue;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            rig__generate_usage(stdout);
            return 0;
        }
        if (strcmp(arg, "--dummy-weights") == 0) a->dummy_weights = true;
        else if (strcmp(arg, "--skip-weight-check") == 0) a->skip_weight_check = true;
        else if (strcmp(arg, "--ignore-eos") == 0) a->ignore_eos = true;
        else if (strcmp(arg, "--json") == 0) a->json = true;
        else if (strcmp(arg, "--chat") == 0) a->chat = true;
        else {
            const char *v = rig__gen_value(argc, argv, &i);
            if (v == NULL || !rig__generate_option(a, arg, v)) return 2;
        }
    }
    const char *problem = NULL;
    if ((a->model_dir == NULL) == (a->preset == NULL)) problem = "give --model or --preset";
    else if ((a->prompt_count == 0) == (a->prompt == NULL))
        problem = "give --prompt TEXT or at least one --prompt-ids (not both)";
    else if (a->prompt != NULL && a->json) problem = "--prompt prints text, not --json";
    else if (a->prompt != NULL && a->tokenizer_dir == NULL && a->model_dir == NULL)
        problem = "--prompt needs --tokenizer DIR (or --model DIR)";
    else if (a->chat && a->prompt == NULL) problem = "--chat needs --prompt";
    else if (a->max_tokens <= 0) problem = "give --max-tokens N (N >= 1)";
    if (problem == NULL) return -1;
    fprintf(stderr, "rig generate: %s\n\n", problem);
    rig__generate_usage(stderr);
    return 2;
}

/* "1, 2,3" → ids; false (with a message) on an empty list, a non-number or too many. */
static bool rig__parse_ids(const char *text, int32_t *ids, int32_t capacity,
                           int32_t *count)
{
    char msg[160];
    *count = 0;
    if (rig_args_i32_list(text, 0, INT32_MAX, ids, capacity, count, msg, sizeof msg) == RIG_OK)
        return true;
    fprintf(stderr, "rig generate: expected comma-separated token ids (1 to %d of them): %s\n",
            capacity, msg);
    return false;
}

static void rig__on_finish(void *ctx, const struct rig_request_result *result)
{
    struct rig__generate_state *st = ctx;
    int64_t index = (int64_t)result->uid - 1;
    RIG_ASSERT(index >= 0 && index < RIG__PROMPTS_MAX && !st->ended[index]);
    int32_t n = result->output_len < st->capacity ? result->output_len : st->capacity;
    memcpy(st->outputs[index], result->output_ids, sizeof(int32_t) * (size_t)n);
    st->output_len[index] = n;
    st->reason[index] = result->reason;
    st->cached_len[index] = result->cached_len;
    st->ended[index] = true;
}

static void rig__on_token(void *ctx, uint64_t uid, int32_t index, int32_t token, int64_t t_ns)
{
    (void)t_ns;
    struct rig__generate_state *st = ctx;
    int64_t i = (int64_t)uid - 1;
    RIG_ASSERT(i >= 0 && i < RIG__PROMPTS_MAX);
    if (index == 0) st->first_token[i] = true;
    if (index == 0 && i == 0) rig_startup_mark("first token");
    if (st->text != NULL && index < st->capacity) rig_cli_stream_token(st->text, token);
}

static void rig__on_logprobs(void *ctx, uint64_t uid, int32_t index, int32_t token,
                             float logprob, int32_t top_count, const int32_t *top_ids,
                             const float *top_logprobs)
{
    (void)token;
    struct rig__generate_state *st = ctx;
    int64_t i = (int64_t)uid - 1;
    RIG_ASSERT(i >= 0 && i < RIG__PROMPTS_MAX && top_count == st->top);
    if (index >= st->capacity || st->logprob[i] == NULL) return;
    size_t at = (size_t)index * (size_t)top_count;
    st->logprob[i][index] = logprob;
    memcpy(st->top_ids[i] + at, top_ids, sizeof(int32_t) * (size_t)top_count);
    memcpy(st->top_logprobs[i] + at, top_logprobs, sizeof(float) * (size_t)top_count);
}

static void rig__on_step(void *ctx, const struct rig_step_record *record)
{
    struct rig__generate_state *st = ctx;
    RIG_ASSERT(record->batch_size >= 0 && record->batch_size <= RIG__PROMPTS_MAX);
    st->step_size = record->batch_size;
    memcpy(st->step_uids, record->uids, sizeof(uint64_t) * (size_t)record->batch_size);
}

/* The engine configuration for the arguments: sized so that every prompt fits the first
 * prefill batch and every request can run to max_tokens. */
static int rig__generate_config(const struct rig__generate_args *a, int64_t prompt_tokens,
                                int32_t longest, struct rig_engine_config *c)
{
    char error[512];
    rig_engine_config_default(c);
    enum rig_status s = a->preset != NULL ? rig_model_config_preset(a->preset, &c->model)
                                          : rig_model_config_load(a->model_dir, &c->model,
                                                                  error, sizeof error);
    if (s != RIG_OK) {
        if (a->preset != NULL) snprintf(error, sizeof error, "unknown preset '%s'", a->preset);
        fprintf(stderr, "rig generate: %s\n", error);
        return 2;
    }
    c->backend = a->backend;
    c->tp_size = a->tp;
    c->ranks = a->ranks.ranks;
    c->device.collective_timeout_ms = a->collective_timeout_ms;
    c->seed = a->seed;
    c->weights.path = a->preset != NULL || a->dummy_weights ? NULL : a->model_dir;
    c->weights.dummy_seed = a->seed;
    c->weights.skip_weight_check = a->skip_weight_check;
    c->max_running_req = a->prompt_count > c->max_running_req ? a->prompt_count
                                                              : c->max_running_req;
    c->max_requests = c->max_running_req;
    if (a->max_running > 0) c->max_running_req = a->max_running;
    int64_t slots = prompt_tokens + (int64_t)a->prompt_count * a->max_tokens + 1;
    c->num_pages = slots > c->num_pages ? (int32_t)slots : c->num_pages;
    c->prefill_budget = prompt_tokens > c->prefill_budget ? (int32_t)prompt_tokens
                                                          : c->prefill_budget;
    if (a->prefill_budget > 0) c->prefill_budget = a->prefill_budget;
    /* A context just long enough (the engine wants it above max_running_req + 1); the
     * engine rejects a prompt that does not fit the model's own limit. */
    int64_t need = (int64_t)longest + a->max_tokens + 1;
    if (need < c->max_running_req + 2) need = c->max_running_req + 2;
    c->max_seq_len = need < c->model.max_position ? (int32_t)need : 0;
    c->overlap = c->overlap && a->logits_out == NULL;
    return -1;
}

/* The rows of the last step's logits that belong to prompts which got their first token
 * in it (their prefill completed) go to their rows of `out` [prompts, vocab]. */
static enum rig_status rig__collect_logits(struct rig_model *model, struct rig_stream *stream,
                                           struct rig__generate_state *st, float *step_rows,
                                           float *out, int32_t vocab)
{
    bool any = false;
    for (int32_t i = 0; i < st->step_size; i++) any = any || st->first_token[st->step_uids[i] - 1];
    if (!any) return RIG_OK;
    enum rig_status s = rig_model_download_logits(model, stream, st->step_size, step_rows);
    for (int32_t i = 0; i < st->step_size && s == RIG_OK; i++) {
        uint64_t index = st->step_uids[i] - 1;
        if (!st->first_token[index]) continue;
        st->first_token[index] = false;
        memcpy(out + index * (size_t)vocab, step_rows + (size_t)i * (size_t)vocab,
               sizeof(float) * (size_t)vocab);
    }
    return s;
}

/* On every TP rank: a rank that kept its logits alone would all-gather them in a step in
 * which the others do not (mismatched collectives: a hang on NCCL). */
static void rig__keep_logits(struct rig_engine *engine, bool keep)
{
    for (int32_t r = 0; r < rig_engine_get_config(engine)->tp_size; r++)
        if (rig_engine_model(engine, r) != NULL) /* NULL: a rank of another process */
            rig_model_keep_logits(rig_engine_model(engine, r), keep);
}

/* What the driver's after_step needs to keep the logits (--logits-out). */
struct rig__logits_run {
    struct rig_model *model;
    struct rig_stream *stream;
    struct rig__generate_state *st;
    float *step_rows;          /* [prompts, vocab] one step's rows */
    float *logits;             /* [prompts, vocab] the rows kept */
    int32_t vocab;
    enum rig_status status;
};

/* Arrival source (none arrive: the prompts were submitted up front): after every step, the
 * rows of prompts whose prefill completed in it. */
static bool rig__logits_after_step(void *ctx, struct rig_engine *engine, bool progress)
{
    struct rig__logits_run *run = ctx;
    (void)engine;
    (void)progress;
    run->status = rig__collect_logits(run->model, run->stream, run->st, run->step_rows,
                                      run->logits, run->vocab);
    return run->status == RIG_OK;
}

/* Runs the engine to the end (through the driver), keeping each prompt's last-position
 * logits when `path` is set, then writes them there. -1 on success, else the exit status. */
static int rig__generate_drive(struct rig_engine *engine, struct rig__generate_state *st,
                               int32_t prompts, const char *path)
{
    char error[256] = "";
    if (path == NULL) {
        if (rig_driver_run(engine, NULL, NULL, error, sizeof error) == RIG_OK) return -1;
        fprintf(stderr, "rig generate: the run failed: %s\n", error);
        return 1;
    }
    struct rig__logits_run run = {.model = rig_engine_model(engine, 0), .st = st};
    run.vocab = rig_model_get_config(run.model)->vocab_size;
    size_t count = (size_t)prompts * (size_t)run.vocab;
    run.logits = calloc(count, sizeof(float));
    run.step_rows = malloc(sizeof(float) * count);
    run.status = run.logits != NULL && run.step_rows != NULL
                     ? rig_hal_stream_create(rig_model_device(run.model), &run.stream)
                     : RIG_E_NO_MEMORY;
    struct rig_arrival_source source = {.ctx = &run, .after_step = rig__logits_after_step};
    enum rig_status s = run.status;
    if (s == RIG_OK) s = rig_driver_run(engine, &source, NULL, error, sizeof error);
    if (s == RIG_OK) s = run.status;
    rig_hal_stream_destroy(run.stream);
    rig__keep_logits(engine, false);
    FILE *f = s == RIG_OK ? fopen(path, "wb") : NULL;
    bool written = f != NULL && fwrite(run.logits, sizeof(float), count, f) == count;
    if (f != NULL && fclose(f) != 0) written = false;
    free(run.logits);
    free(run.step_rows);
    if (written) return -1;
    fprintf(stderr, "rig generate: cannot write logits to %s: %s%s%s\n", path,
            s != RIG_OK ? rig_status_message(s) : strerror(errno),
            rig_engine_error(engine)[0] != '\0' ? ": " : "", rig_engine_error(engine));
    return 1;
}

/* `, "logprobs": [...]` of prompt i, one entry per generated token. */
static void rig__print_logprobs(const struct rig__generate_state *st, int32_t i)
{
    printf(", \"logprobs\": [");
    for (int32_t k = 0; k < st->output_len[i]; k++) {
        printf("%s{\"logprob\": %.9g, \"top\": [", k == 0 ? "" : ", ",
               (double)st->logprob[i][k]);
        for (int32_t j = 0; j < st->top; j++) {
            size_t at = (size_t)k * (size_t)st->top + (size_t)j;
            printf("%s[%d, %.9g]", j == 0 ? "" : ", ", st->top_ids[i][at],
                   (double)st->top_logprobs[i][at]);
        }
        printf("]}");
    }
    printf("]");
}

static void rig__generate_print(const struct rig__generate_args *a,
                                const struct rig__generate_state *st, const int32_t *lengths)
{
    for (int32_t i = 0; i < a->prompt_count; i++) {
        if (a->json)
            printf("{\"index\": %d, \"prompt_len\": %d, \"ids\": [", i, lengths[i]);
        for (int32_t k = 0; k < st->output_len[i]; k++)
            printf(a->json ? "%s%d" : "%s%d", k == 0 ? "" : a->json ? ", " : " ",
                   st->outputs[i][k]);
        if (a->json)
            printf("], \"finish_reason\": \"%s\", \"cached_len\": %d",
                   rig_request_end_name(st->reason[i]), st->cached_len[i]);
        if (a->json && st->top >= 0) rig__print_logprobs(st, i);
        printf(a->json ? "}\n" : "\n");
    }
}

/* Submits every prompt; 0 when all were accepted, 1 (with a message) otherwise. */
static int rig__generate_submit(struct rig_engine *engine, const struct rig__generate_args *a,
                                int32_t *const *prompts, const int32_t *lengths)
{
    for (int32_t i = 0; i < a->prompt_count; i++) {
        struct rig_submit r = {.uid = (uint64_t)i + 1, .prompt = prompts[i],
                               .prompt_len = lengths[i], .arrival_ns = -1};
        r.sampling = rig_sampling_default();
        r.sampling.temperature = a->temperature;
        r.sampling.top_k = a->top_k;
        r.sampling.top_p = a->top_p;
        r.sampling.min_p = a->min_p;
        r.sampling.presence_penalty = a->presence_penalty;
        r.sampling.frequency_penalty = a->frequency_penalty;
        r.sampling.repetition_penalty = a->repetition_penalty;
        r.sampling.logprobs = a->logprobs;
        r.sampling.max_tokens = a->max_tokens;
        r.sampling.ignore_eos = a->ignore_eos;
        memcpy(r.sampling.stop_token_ids, a->stop, sizeof(int32_t) * (size_t)a->stop_count);
        r.sampling.stop_token_count = a->stop_count;
        char reason[256] = "";
        enum rig_status s = rig_engine_submit(engine, &r, reason, sizeof reason);
        if (s != RIG_OK) {
            fprintf(stderr, "rig generate: prompt %d: %s%s%s\n", i, rig_status_message(s),
                    reason[0] != '\0' ? ": " : "", reason);
            return 1;
        }
    }
    return 0;
}

/* A process other than 0 of --ranks mpi: its rank's share, silent unless it fails. */
static int rig__generate_follow(struct rig_engine *engine, int32_t process)
{
    enum rig_status s = rig_engine_follow(engine);
    if (s != RIG_OK)
        fprintf(stderr, "rig generate: process %d: %s: %s\n", process, rig_status_message(s),
                rig_engine_error(engine));
    rig_engine_destroy(engine); /* ends the MPI job when the run failed */
    return s == RIG_OK ? 0 : 1;
}

static int rig__generate_run(const struct rig__generate_args *a, int32_t *const *prompts,
                             const int32_t *lengths, struct rig__generate_state *st)
{
    int64_t total = 0;
    int32_t longest = 0;
    for (int32_t i = 0; i < a->prompt_count; i++) {
        total += lengths[i];
        longest = lengths[i] > longest ? lengths[i] : longest;
    }
    struct rig_engine_config config;
    int rc = rig__generate_config(a, total, longest, &config);
    if (rc >= 0) return rc;
    struct rig_engine_observer observer = {.ctx = st, .on_finish = rig__on_finish,
                                           .on_step = rig__on_step, .on_token = rig__on_token,
                                           .on_logprobs = rig__on_logprobs};
    struct rig_engine *engine = NULL;
    char error[512];
    if (rig_engine_create(&config, &observer, &engine, error, sizeof error) != RIG_OK) {
        fprintf(stderr, "rig generate: %s\n", error);
        return 1;
    }
    if (a->logits_out != NULL) rig__keep_logits(engine, true);
    if (!rig_engine_leads(engine)) return rig__generate_follow(engine, a->ranks.process_rank);
    rc = rig__generate_submit(engine, a, prompts, lengths);
    if (rc == 0) rc = rig__generate_drive(engine, st, a->prompt_count, a->logits_out);
    /* The results are out before the engine goes: a teardown that fails (or, on GPUs, waits
     * on a peer under the collective timeout) loses nothing. */
    if (rc <= 0 && st->text == NULL) rig__generate_print(a, st, lengths);
    fflush(stdout);
    rig_engine_destroy(engine);
    rig_startup_mark("engine destroyed");
    return rc > 0 ? rc : 0;
}

/* --prompt: the text's ids into `ids` (prompt 0). 0 on success, else the exit status. */
static int rig__generate_encode(struct rig__generate_args *a, const struct rig_tokenizer *tok,
                                int32_t *ids, int32_t *length)
{
    struct rig_tokenizer_ids encoded = {0};
    struct rig_chat_message message = {.role = "user", .content = a->prompt};
    int rc = rig_cli_prompt_encode("rig generate", tok, &message, 1, a->chat, true, &encoded)
                 ? 0
                 : 1;
    if (rc == 0 && (encoded.count == 0 || encoded.count > RIG__PROMPT_TOKENS_MAX)) {
        fprintf(stderr, "rig generate: --prompt: %zu tokens (1 to %d allowed)\n",
                encoded.count, RIG__PROMPT_TOKENS_MAX);
        rc = 2;
    }
    if (rc == 0) {
        memcpy(ids, encoded.ids, sizeof(int32_t) * encoded.count);
        *length = (int32_t)encoded.count;
        a->prompt_count = 1;
    }
    rig_tokenizer_ids_free(&encoded);
    return rc;
}

/* --prompt: runs the text's ids with the text streamed to standard output. */
static int rig__generate_text(struct rig__generate_args *a, int32_t *const *prompts,
                              int32_t *lengths, struct rig__generate_state *st)
{
    struct rig_tokenizer *tok = rig_cli_tokenizer_load(
        "rig generate", a->tokenizer_dir != NULL ? a->tokenizer_dir : a->model_dir);
    if (tok == NULL) return 1;
    rig_startup_mark("tokenizer loaded");
    struct rig_cli_stream text;
    int rc = rig__generate_encode(a, tok, prompts[0], &lengths[0]);
    if (rc == 0 && !rig_cli_stream_begin(&text, tok, false, false, stdout)) rc = 1;
    if (rc == 0) {
        st->text = &text;
        rc = rig__generate_run(a, prompts, lengths, st);
        rig_cli_stream_end(&text);
        if (rig_ranks_cli_leads(&a->ranks)) printf("\n");
        st->text = NULL;
    }
    rig_tokenizer_free(tok);
    return rc;
}

int rig_cmd_generate(int argc, char **argv)
{
    struct rig__generate_args a;
    int rc = rig__generate_parse(argc, argv, &a);
    if (rc >= 0) return rc;
    rc = rig_ranks_cli_start("generate", &a.ranks, a.tp);
    if (rc >= 0) return rc;
    static struct rig__generate_state st;
    static int32_t ids[RIG__PROMPTS_MAX][RIG__PROMPT_TOKENS_MAX];
    int32_t *prompts[RIG__PROMPTS_MAX], lengths[RIG__PROMPTS_MAX];
    memset(&st, 0, sizeof st);
    st.capacity = a.max_tokens;
    st.top = a.logprobs;
    if (a.stop_text != NULL &&
        !rig__parse_ids(a.stop_text, a.stop, RIG_STOP_TOKENS_MAX, &a.stop_count))
        return 2;
    prompts[0] = ids[0];
    for (int32_t i = 0; a.prompt == NULL && i < a.prompt_count; i++) {
        prompts[i] = ids[i];
        if (!rig__parse_ids(a.prompt_text[i], ids[i], RIG__PROMPT_TOKENS_MAX, &lengths[i]))
            return 2;
    }
    if (a.prompt != NULL) a.prompt_count = 1; /* prompt 0's arrays, filled from the text */
    size_t tokens = (size_t)a.max_tokens, top = a.logprobs > 0 ? (size_t)a.logprobs : 1;
    for (int32_t i = 0; i < a.prompt_count && rc < 0; i++) {
        st.outputs[i] = malloc(sizeof(int32_t) * tokens);
        if (st.outputs[i] == NULL) rc = 1;
        if (a.logprobs < 0 || rc >= 0) continue;
        st.logprob[i] = malloc(sizeof(float) * tokens);
        st.top_ids[i] = malloc(sizeof(int32_t) * tokens * top);
        st.top_logprobs[i] = malloc(sizeof(float) * tokens * top);
        if (!st.logprob[i] || !st.top_ids[i] || !st.top_logprobs[i]) rc = 1;
    }
    if (rc < 0 && a.prompt != NULL) rc = rig__generate_text(&a, prompts, lengths, &st);
    else if (rc < 0) rc = rig__generate_run(&a, prompts, lengths, &st);
    for (int32_t i = 0; i < a.prompt_count; i++) {
        free(st.outputs[i]);
        free(st.logprob[i]);
        free(st.top_ids[i]);
        free(st.top_logprobs[i]);
    }
    rig_ranks_cli_finish(&a.ranks, rc == 1);
    return rc;
}
