/* cmd_shell.c — `rig shell`: an interactive chat on the engine, as Mini-SGLang's --shell.
 *
 * Reads one user message per line from standard input (so it is testable by piping), renders
 * the conversation so far with the model's chat template, runs it through the engine (one
 * engine for the whole session: each turn's prompt begins with the last one's, so the radix
 * cache serves the history) and streams the answer's text to standard output through the
 * incremental detokenizer (tools/rig/text_cli.h), special tokens skipped. `/reset` forgets
 * the history, `/exit` (or the end of input) quits. History is kept within the context: the
 * oldest turns are dropped until the prompt and the answer's --max-tokens fit.
 *
 * Bounds: a line is at most RIG__SHELL_LINE_MAX bytes (a longer one is refused), the history
 * at most RIG__SHELL_TURNS_MAX messages (the oldest turns go first).
 * Exit status: 0 at /exit or end of input, 1 an engine error, 2 a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/engine/driver.h"
#include "core/engine/engine.h"
#include "tools/rig/args.h"
#include "tools/rig/commands.h"
#include "tools/rig/text_cli.h"

#define RIG__SHELL_LINE_MAX 65536
#define RIG__SHELL_TURNS_MAX 256

struct rig__shell {
    const char *model_dir, *preset, *tokenizer_dir, *backend;
    bool dummy_weights, no_thinking;
    int32_t max_tokens, context;
    float temperature;
    uint64_t seed;
    struct rig_tokenizer *tok;
    struct rig_engine *engine;
    struct rig_chat_message history[RIG__SHELL_TURNS_MAX]; /* contents owned (malloc) */
    size_t turns;
    struct rig_cli_stream text;
    uint64_t next_uid;
    enum rig_request_end end;
};

static void rig__shell_usage(FILE *out)
{
    fprintf(out,
            "usage: rig shell (--model DIR | --preset NAME) [--tokenizer DIR] [options]\n\n"
            "Interactive chat: one message per line on standard input; /reset forgets the\n"
            "history, /exit quits.\n\n"
            "options:\n"
            "  --tokenizer DIR      tokenizer.json + chat template (default: the --model DIR)\n"
            "  --dummy-weights      seeded random weights instead of the checkpoint\n"
            "  --backend sim|cuda   (default sim)\n"
            "  --max-tokens N       most tokens per answer (default 256)\n"
            "  --context-length N   history + answer (default: the model's, at most 4096)\n"
            "  --temperature T      0 = greedy (default 0)\n"
            "  --seed S             sampling and dummy-weight seed (default 0)\n"
            "  --no-thinking        Qwen3: an empty <think></think> block\n");
}

/* The number options (tools/rig/args.h): true when `arg` is one; *bad when its value is
 * malformed or out of range (a message printed). */
static bool rig__shell_number(struct rig__shell *sh, const char *arg, const char *v, bool *bad)
{
    char msg[160] = "";
    double temperature = 0;
    enum rig_status s = RIG_OK;
    if (strcmp(arg, "--max-tokens") == 0) s = rig_args_i32(v, 1, 1 << 20, &sh->max_tokens, msg,
                                                            sizeof msg);
    else if (strcmp(arg, "--context-length") == 0)
        s = rig_args_i32(v, 0, 1 << 24, &sh->context, msg, sizeof msg);
    else if (strcmp(arg, "--temperature") == 0) {
        s = rig_args_f64(v, 0, 100, &temperature, msg, sizeof msg);
        if (s == RIG_OK) sh->temperature = (float)temperature;
    } else if (strcmp(arg, "--seed") == 0)
        s = rig_args_u64(v, 0, UINT64_MAX, &sh->seed, msg, sizeof msg);
    else
        return false;
    *bad = s != RIG_OK;
    if (*bad) fprintf(stderr, "rig shell: %s: %s\n", arg, msg);
    return true;
}

static int rig__shell_parse(int argc, char **argv, struct rig__shell *sh)
{
    bool bad = false;
    sh->backend = "sim";
    sh->max_tokens = 256;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            rig__shell_usage(stdout);
            return 0;
        }
        if (strcmp(arg, "--dummy-weights") == 0) sh->dummy_weights = true;
        else if (strcmp(arg, "--no-thinking") == 0) sh->no_thinking = true;
        else if (v == NULL) break;
        else if (strcmp(arg, "--model") == 0) sh->model_dir = argv[++i];
        else if (strcmp(arg, "--preset") == 0) sh->preset = argv[++i];
        else if (strcmp(arg, "--tokenizer") == 0) sh->tokenizer_dir = argv[++i];
        else if (strcmp(arg, "--backend") == 0) sh->backend = argv[++i];
        else if (rig__shell_number(sh, arg, argv[++i], &bad)) {
            if (bad) return 2;
        } else break;
        if (i == argc - 1) {
            if ((sh->model_dir == NULL) == (sh->preset == NULL) || sh->max_tokens < 1 ||
                sh->context < 0 || (sh->tokenizer_dir == NULL && sh->model_dir == NULL))
                break;
            return -1;
        }
    }
    fprintf(stderr, "rig shell: bad arguments\n\n");
    rig__shell_usage(stderr);
    return 2;
}

static void rig__shell_on_token(void *ctx, uint64_t uid, int32_t index, int32_t token,
                                int64_t t_ns)
{
    (void)uid;
    (void)index;
    (void)t_ns;
    rig_cli_stream_token(&((struct rig__shell *)ctx)->text, token);
}

static void rig__shell_on_finish(void *ctx, const struct rig_request_result *result)
{
    ((struct rig__shell *)ctx)->end = result->reason;
}

/* The engine for the session: one request at a time, room for the whole context. */
static int rig__shell_engine(struct rig__shell *sh)
{
    char error[512] = "";
    struct rig_engine_config c;
    rig_engine_config_default(&c);
    enum rig_status s = sh->preset != NULL ? rig_model_config_preset(sh->preset, &c.model)
                                           : rig_model_config_load(sh->model_dir, &c.model,
                                                                   error, sizeof error);
    if (s != RIG_OK) {
        fprintf(stderr, "rig shell: %s\n", sh->preset != NULL ? "unknown preset" : error);
        return 2;
    }
    if (sh->context == 0) sh->context = c.model.max_position < 4096 ? c.model.max_position : 4096;
    if (sh->context > c.model.max_position) sh->context = c.model.max_position;
    c.backend = sh->backend;
    c.seed = sh->seed;
    c.weights.path = sh->preset != NULL || sh->dummy_weights ? NULL : sh->model_dir;
    c.weights.dummy_seed = sh->seed;
    c.max_running_req = 1;
    c.max_requests = 2;
    c.max_seq_len = sh->context;
    c.num_pages = sh->context + 1 > c.num_pages ? sh->context + 1 : c.num_pages;
    c.prefill_budget = sh->context;
    struct rig_engine_observer observer = {.ctx = sh, .on_token = rig__shell_on_token,
                                           .on_finish = rig__shell_on_finish};
    if (rig_engine_create(&c, &observer, &sh->engine, error, sizeof error) == RIG_OK) return -1;
    fprintf(stderr, "rig shell: %s\n", error);
    return 1;
}

static void rig__shell_forget(struct rig__shell *sh, size_t count)
{
    for (size_t i = 0; i < count; i++) free((char *)sh->history[i].content);
    memmove(sh->history, sh->history + count, sizeof sh->history[0] * (sh->turns - count));
    sh->turns -= count;
}

static bool rig__shell_remember(struct rig__shell *sh, const char *role, const char *text)
{
    if (sh->turns == RIG__SHELL_TURNS_MAX) rig__shell_forget(sh, 2);
    char *copy = strdup(text != NULL ? text : "");
    if (copy == NULL) return false;
    sh->history[sh->turns++] = (struct rig_chat_message){.role = role, .content = copy};
    return true;
}

/* The prompt of the history, its oldest turns dropped until it and an answer of at least
 * one token fit the context. False (the new message forgotten) when even it alone does not. */
static bool rig__shell_prompt(struct rig__shell *sh, struct rig_tokenizer_ids *ids)
{
    for (;;) {
        ids->count = 0;
        if (!rig_cli_prompt_encode("rig shell", sh->tok, sh->history, sh->turns, true,
                                   !sh->no_thinking, ids))
            break;
        int64_t want = (int64_t)ids->count + (sh->max_tokens < 64 ? sh->max_tokens : 64);
        if (want < sh->context) return true;
        if (sh->turns <= 1) {
            fprintf(stderr, "rig shell: the message is %zu tokens: over the context (%d)\n",
                    ids->count, sh->context);
            break;
        }
        rig__shell_forget(sh, 2); /* the oldest question and its answer */
    }
    rig__shell_forget(sh, sh->turns > 0 ? 1 : 0);
    return false;
}

/* One turn: the user's line in, the answer streamed out and remembered. 1 on engine errors. */
static int rig__shell_turn(struct rig__shell *sh, const char *line)
{
    struct rig_tokenizer_ids ids = {0};
    if (!rig__shell_remember(sh, "user", line) || !rig__shell_prompt(sh, &ids)) {
        rig_tokenizer_ids_free(&ids);
        return 0;
    }
    struct rig_submit r = {.uid = ++sh->next_uid, .prompt = ids.ids,
                           .prompt_len = (int32_t)ids.count, .arrival_ns = -1};
    r.sampling = rig_sampling_default();
    r.sampling.temperature = sh->temperature;
    r.sampling.seed = sh->seed + sh->next_uid;
    r.sampling.has_seed = true;
    int64_t room = (int64_t)sh->context - (int64_t)ids.count - 1;
    r.sampling.max_tokens = sh->max_tokens < room ? sh->max_tokens : (int32_t)room;
    char error[256] = "";
    enum rig_status s = rig_cli_stream_begin(&sh->text, sh->tok, true, true, stdout)
                            ? rig_engine_submit(sh->engine, &r, error, sizeof error)
                            : RIG_E_NO_MEMORY;
    if (s == RIG_OK) s = rig_driver_run(sh->engine, NULL, NULL, error, sizeof error);
    rig_cli_stream_end(&sh->text);
    printf("\n");
    fflush(stdout);
    rig_tokenizer_ids_free(&ids);
    bool kept = s == RIG_OK && rig__shell_remember(sh, "assistant", sh->text.all.data);
    rig_tokenizer_text_free(&sh->text.all);
    if (kept) return 0;
    fprintf(stderr, "rig shell: %s%s%s\n", rig_status_message(s), error[0] ? ": " : "", error);
    return 1;
}

static int rig__shell_loop(struct rig__shell *sh)
{
    static char line[RIG__SHELL_LINE_MAX];
    bool tty = isatty(STDIN_FILENO);
    for (;;) {
        if (tty) printf("> ");
        fflush(stdout);
        if (fgets(line, sizeof line, stdin) == NULL) return 0;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            fprintf(stderr, "rig shell: a line over %d bytes: refused\n", RIG__SHELL_LINE_MAX);
            for (int c = 0; c != '\n' && c != EOF;) c = getchar();
            continue;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        if (len == 0) continue;
        if (strcmp(line, "/exit") == 0) return 0;
        if (strcmp(line, "/reset") == 0) {
            rig__shell_forget(sh, sh->turns);
            printf("(history cleared)\n");
            continue;
        }
        if (rig__shell_turn(sh, line) != 0) return 1;
    }
}

int rig_cmd_shell(int argc, char **argv)
{
    static struct rig__shell sh;
    memset(&sh, 0, sizeof sh);
    int rc = rig__shell_parse(argc, argv, &sh);
    if (rc >= 0) return rc;
    sh.tok = rig_cli_tokenizer_load("rig shell",
                                    sh.tokenizer_dir != NULL ? sh.tokenizer_dir : sh.model_dir);
    if (sh.tok == NULL) return 1;
    rc = rig__shell_engine(&sh);
    if (rc < 0) {
        fprintf(stderr, "rig shell: %s on %s, context %d; /reset clears the history, /exit "
                        "quits\n", sh.model_dir != NULL ? sh.model_dir : sh.preset, sh.backend,
                sh.context);
        rc = rig__shell_loop(&sh);
        rig_engine_destroy(sh.engine);
    }
    rig__shell_forget(&sh, sh.turns);
    rig_tokenizer_free(sh.tok);
    return rc;
}
