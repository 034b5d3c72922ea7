/* cmd_tokenize.c — `rig tokenize` and `rig detokenize`: the tokenizer from the command line.
 *
 *   rig tokenize --tokenizer DIR [--chat [--no-thinking] [--tools JSON]] [--no-special]
 *                [--tokens] TEXT|-
 *   rig tokenize --tokenizer DIR --bench FILE [--seconds S]
 *   rig detokenize --tokenizer DIR [--skip-special] [--stream] IDS|-
 *
 * TEXT "-" reads standard input. With --chat the text is one user message (or, when it starts
 * with '[', a JSON array of {"role", "content"[, "reasoning_content", "tool_calls"]}) and the
 * --tools definitions (a JSON array) rendered with the
 * model's chat template and an assistant prompt, as transformers' apply_chat_template(...,
 * add_generation_prompt=True) followed by tokenisation. --bench measures single-threaded
 * encode throughput over a JSON-lines file of {"text": ...} documents (docs/performance.md,
 * tools/tokenizer/bench.py).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/text/tokenizer.h"
#include "tools/rig/args.h"
#include "tools/rig/commands.h"

struct rig__tokenize_args {
    const char *dir;
    const char *input;      /* TEXT, IDS or "-" */
    const char *bench_path; /* --bench FILE */
    const char *tools_json; /* --tools JSON: tool definitions for --chat */
    double bench_seconds;
    bool chat, no_special, tokens, no_thinking, skip_special, stream;
};

static double rig__now_s(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* Reads all of `file` into a NUL-terminated buffer; NULL on failure. */
static char *rig__slurp(FILE *file, size_t *len)
{
    size_t capacity = 1 << 16, size = 0;
    char *data = malloc(capacity + 1);
    while (data != NULL) {
        size_t got = fread(data + size, 1, capacity - size, file);
        size += got;
        if (got == 0) break;
        if (size == capacity) {
            char *grown = realloc(data, 2 * capacity + 1);
            if (grown == NULL) free(data);
            data = grown;
            capacity *= 2;
        }
    }
    if (data == NULL || ferror(file)) {
        free(data);
        return NULL;
    }
    data[size] = '\0';
    *len = size;
    return data;
}

static int rig__parse_args(int argc, char **argv, struct rig__tokenize_args *args)
{
    *args = (struct rig__tokenize_args){.bench_seconds = 3.0};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(arg, "--tokenizer") == 0 && has_value)
            args->dir = argv[++i];
        else if (strcmp(arg, "--bench") == 0 && has_value)
            args->bench_path = argv[++i];
        else if (strcmp(arg, "--tools") == 0 && has_value)
            args->tools_json = argv[++i];
        else if (strcmp(arg, "--seconds") == 0 && has_value) {
            char msg[128];
            if (rig_args_f64(argv[++i], 0.001, 600.0, &args->bench_seconds, msg, sizeof msg) !=
                RIG_OK) {
                fprintf(stderr, "rig: --seconds: %s\n", msg);
                return 2;
            }
        }
        else if (strcmp(arg, "--chat") == 0)
            args->chat = true;
        else if (strcmp(arg, "--no-special") == 0)
            args->no_special = true;
        else if (strcmp(arg, "--no-thinking") == 0)
            args->no_thinking = true;
        else if (strcmp(arg, "--tokens") == 0)
            args->tokens = true;
        else if (strcmp(arg, "--skip-special") == 0)
            args->skip_special = true;
        else if (strcmp(arg, "--stream") == 0)
            args->stream = true;
        else if ((arg[0] != '-' || strcmp(arg, "-") == 0) && args->input == NULL)
            args->input = arg;
        else
            return 2;
    }
    if (args->dir == NULL || (args->input == NULL && args->bench_path == NULL)) return 2;
    if (args->bench_seconds <= 0 || args->bench_seconds > 600) return 2;
    return 0;
}

static struct rig_tokenizer *rig__open(const char *dir, double *load_s)
{
    struct rig_tokenizer *tok = NULL;
    double start = rig__now_s();
    char error[512];
    if (rig_tokenizer_load(dir, &tok, error, sizeof error) != RIG_OK) {
        fprintf(stderr, "rig: %s\n", error);
        return NULL;
    }
    if (load_s != NULL) *load_s = rig__now_s() - start;
    return tok;
}

/* Input text: the argument, or standard input for "-". */
static char *rig__input(const char *input, size_t *len)
{
    if (strcmp(input, "-") != 0) {
        *len = strlen(input);
        return strdup(input);
    }
    char *data = rig__slurp(stdin, len);
    if (data == NULL) fprintf(stderr, "rig: cannot read standard input\n");
    return data;
}

#define RIG__CHAT_MESSAGES_MAX 256

/* Messages of a JSON conversation; tool calls are handed on as JSON text (freed by caller). */
static size_t rig__chat_messages(const json_t *parsed, struct rig_chat_message *messages,
                                 char **tool_calls)
{
    size_t index;
    const json_t *message;
    json_array_foreach((json_t *)parsed, index, message)
    {
        const json_t *calls = json_object_get(message, "tool_calls");
        tool_calls[index] = calls ? json_dumps(calls, JSON_COMPACT) : NULL;
        messages[index] = (struct rig_chat_message){
            .role = json_string_value(json_object_get(message, "role")),
            .content = json_string_value(json_object_get(message, "content")),
            .reasoning_content = json_string_value(json_object_get(message, "reasoning_content")),
            .tool_calls_json = tool_calls[index]};
    }
    return json_array_size(parsed);
}

/* Renders `text` as a conversation with the model's template (ChatML when unknown). */
static int rig__render_chat(const struct rig_tokenizer *tok, const struct rig__tokenize_args *args,
                            const char *text, struct rig_tokenizer_text *out)
{
    struct rig_chat_message messages[RIG__CHAT_MESSAGES_MAX];
    char *tool_calls[RIG__CHAT_MESSAGES_MAX] = {0};
    size_t count = 1;
    json_t *parsed = NULL;
    messages[0] = (struct rig_chat_message){.role = "user", .content = text};
    if (text[0] == '[') {
        json_error_t error;
        parsed = json_loads(text, 0, &error);
        if (!json_is_array(parsed) || json_array_size(parsed) > RIG__CHAT_MESSAGES_MAX) {
            fprintf(stderr, "rig: --chat: expected a JSON array of at most %d messages\n",
                    RIG__CHAT_MESSAGES_MAX);
            json_decref(parsed);
            return 2;
        }
        count = rig__chat_messages(parsed, messages, tool_calls);
    }
    enum rig_chat_template kind = rig_tokenizer_chat_template(tok);
    if (kind == RIG_CHAT_TEMPLATE_NONE || kind == RIG_CHAT_TEMPLATE_UNKNOWN) {
        fprintf(stderr, "rig: chat template %s: falling back to chatml\n",
                rig_chat_template_name(kind));
        kind = RIG_CHAT_TEMPLATE_CHATML;
    }
    struct rig_chat_options options = {.add_generation_prompt = true,
                                       .enable_thinking = !args->no_thinking,
                                       .tools_json = args->tools_json};
    char error[512];
    enum rig_status status =
        rig_tokenizer_chat_render(tok, kind, messages, count, &options, out, error, sizeof error);
    for (size_t i = 0; i < RIG__CHAT_MESSAGES_MAX; i++)
        free(tool_calls[i]);
    json_decref(parsed);
    if (status != RIG_OK) fprintf(stderr, "rig: --chat: %s\n", error);
    return status == RIG_OK ? 0 : 1;
}

/* Reads a JSON-lines file of {"text": ...} documents. */
static json_t *rig__bench_documents(const char *path, size_t *bytes)
{
    FILE *file = fopen(path, "r");
    if (file == NULL) return NULL;
    json_t *documents = json_array();
    char *line = NULL;
    size_t capacity = 0;
    *bytes = 0;
    while (documents != NULL && getline(&line, &capacity, file) > 0) {
        json_error_t error;
        json_t *row = json_loads(line, 0, &error);
        json_t *text = json_object_get(row, "text");
        if (!json_is_string(text)) {
            json_decref(documents);
            documents = NULL;
        } else {
            json_array_append(documents, text);
            *bytes += json_string_length(text);
        }
        json_decref(row);
    }
    free(line);
    fclose(file);
    return documents;
}

/* Encodes every document of a JSON-lines file, single-threaded, for at least the requested
 * seconds; prints one JSON object with the throughput and the tokenizer's load time. */
static int rig__bench(struct rig_tokenizer *tok, const struct rig__tokenize_args *args,
                      double load_s)
{
    size_t bytes = 0;
    json_t *documents = rig__bench_documents(args->bench_path, &bytes);
    if (documents == NULL) {
        fprintf(stderr, "rig: %s: expected JSON lines of {\"text\": ...}\n", args->bench_path);
        return 1;
    }
    struct rig_tokenizer_work *work = NULL;
    struct rig_tokenizer_ids ids = {0};
    char error[512];
    int result = rig_tokenizer_work_create(tok, &work, NULL, 0) == RIG_OK ? 0 : 1;
    double start = rig__now_s(), elapsed = 0;
    size_t rounds = 0, tokens = 0;
    while (result == 0 && (elapsed < args->bench_seconds || rounds == 0)) {
        size_t index;
        json_t *text;
        tokens = 0;
        json_array_foreach(documents, index, text)
        {
            ids.count = 0;
            if (rig_tokenizer_encode(tok, work, json_string_value(text), json_string_length(text),
                                     true, &ids, error, sizeof error) != RIG_OK) {
                fprintf(stderr, "rig: %s\n", error);
                result = 1;
                break;
            }
            tokens += ids.count;
        }
        rounds++;
        elapsed = rig__now_s() - start;
    }
    if (result == 0)
        printf("{\"bytes\": %zu, \"tokens\": %zu, \"rounds\": %zu, \"seconds\": %.3f, "
               "\"mb_per_s\": %.2f, \"load_ms\": %.1f}\n",
               bytes, tokens, rounds, elapsed, (double)bytes * (double)rounds / elapsed / 1e6,
               load_s * 1e3);
    rig_tokenizer_ids_free(&ids);
    rig_tokenizer_work_free(work);
    json_decref(documents);
    return result;
}

static int rig__tokenize_run(struct rig_tokenizer *tok, const struct rig__tokenize_args *args)
{
    size_t len = 0;
    char *text = rig__input(args->input, &len);
    if (text == NULL) return 1;
    struct rig_tokenizer_text rendered = {0};
    int result = 0;
    if (args->chat) {
        result = rig__render_chat(tok, args, text, &rendered);
        if (result == 0) {
            free(text);
            text = rendered.data;
            len = rendered.len;
            rendered = (struct rig_tokenizer_text){0};
        }
    }
    struct rig_tokenizer_ids ids = {0};
    bool add_special = !args->no_special && !args->chat;
    char error[512];
    if (result == 0 && rig_tokenizer_encode(tok, NULL, text, len, add_special, &ids, error,
                                            sizeof error) != RIG_OK) {
        fprintf(stderr, "rig: %s\n", error);
        result = 1;
    }
    for (size_t i = 0; result == 0 && i < ids.count; i++) {
        if (args->tokens)
            printf("%d\t%s\n", ids.ids[i], rig_tokenizer_token_text(tok, ids.ids[i]));
        else
            printf(i + 1 < ids.count ? "%d " : "%d\n", ids.ids[i]);
    }
    rig_tokenizer_ids_free(&ids);
    rig_tokenizer_text_free(&rendered);
    free(text);
    return result;
}

int rig_cmd_tokenize(int argc, char **argv)
{
    struct rig__tokenize_args args;
    if (argc == 2 && strcmp(argv[1], "--help") == 0) {
        printf("usage: rig tokenize --tokenizer DIR [--chat [--no-thinking] [--tools JSON]] "
               "[--no-special] [--tokens] TEXT|-\n       rig tokenize --tokenizer DIR --bench "
               "FILE.jsonl [--seconds S]\n");
        return 0;
    }
    if (rig__parse_args(argc, argv, &args) != 0) {
        fprintf(stderr, "usage: rig tokenize --tokenizer DIR [--chat] [--no-special] [--tokens] "
                        "TEXT|-   (rig tokenize --help)\n");
        return 2;
    }
    double load_s = 0;
    struct rig_tokenizer *tok = rig__open(args.dir, &load_s);
    if (tok == NULL) return 1;
    int result = args.bench_path ? rig__bench(tok, &args, load_s) : rig__tokenize_run(tok, &args);
    rig_tokenizer_free(tok);
    return result;
}

/* Parses ids (0 .. 2^31 − 1) separated by spaces, commas or brackets. Returns false, with
 * the reason in msg, on anything else. */
static bool rig__parse_ids(const char *text, struct rig_tokenizer_ids *ids, char *msg,
                           size_t msg_len)
{
    const char *at = text;
    char item[32];
    while (rig_args_next_item(&at, " ,[]\t\r\n", item, sizeof item)) {
        int32_t value = 0;
        if (rig_args_i32(item, 0, INT32_MAX, &value, msg, msg_len) != RIG_OK) return false;
        if (ids->count == ids->capacity) {
            size_t capacity = ids->capacity ? 2 * ids->capacity : 256;
            int32_t *grown = realloc(ids->ids, capacity * sizeof *grown);
            if (grown == NULL) {
                snprintf(msg, msg_len, "out of memory for %zu ids", capacity);
                return false;
            }
            ids->ids = grown;
            ids->capacity = capacity;
        }
        ids->ids[ids->count++] = value;
    }
    return true;
}

static int rig__detokenize_run(const struct rig_tokenizer *tok,
                               const struct rig__tokenize_args *args,
                               const struct rig_tokenizer_ids *ids)
{
    if (!args->stream) {
        struct rig_tokenizer_text text = {0};
        if (rig_tokenizer_decode(tok, ids->ids, ids->count, args->skip_special, &text, NULL, 0) !=
            RIG_OK)
            return 1;
        printf("%s\n", text.data ? text.data : "");
        rig_tokenizer_text_free(&text);
        return 0;
    }
    /* One JSON string per step, so the piece boundaries are visible. */
    size_t capacity = rig_tokenizer_stream_piece_max(tok) + 1;
    char *piece = malloc(capacity);
    if (piece == NULL) return 1;
    struct rig_tokenizer_stream stream;
    rig_tokenizer_stream_init(&stream, tok, args->skip_special);
    size_t len;
    for (size_t i = 0; i <= ids->count; i++) {
        if (i < ids->count)
            rig_tokenizer_stream_step(&stream, ids->ids[i], piece, capacity, &len, NULL, 0);
        else
            rig_tokenizer_stream_finish(&stream, piece, capacity, &len, NULL, 0);
        json_t *string = json_stringn(piece, len);
        char *encoded = json_dumps(string, JSON_ENCODE_ANY);
        printf("%s\n", encoded);
        free(encoded);
        json_decref(string);
    }
    free(piece);
    return 0;
}

int rig_cmd_detokenize(int argc, char **argv)
{
    struct rig__tokenize_args args;
    if (rig__parse_args(argc, argv, &args) != 0 || args.input == NULL) {
        fprintf(stderr, "usage: rig detokenize --tokenizer DIR [--skip-special] [--stream] "
                        "IDS|-\n");
        return 2;
    }
    size_t len;
    char *text = rig__input(args.input, &len);
    if (text == NULL) return 1;
    struct rig_tokenizer_ids ids = {0};
    char msg[160] = "";
    if (!rig__parse_ids(text, &ids, msg, sizeof msg)) {
        fprintf(stderr, "rig: detokenize: IDS must be token ids separated by spaces or commas: "
                        "%s\n", msg);
        free(text);
        rig_tokenizer_ids_free(&ids);
        return 2;
    }
    free(text);
    struct rig_tokenizer *tok = rig__open(args.dir, NULL);
    int result = tok ? rig__detokenize_run(tok, &args, &ids) : 1;
    rig_tokenizer_free(tok);
    rig_tokenizer_ids_free(&ids);
    return result;
}
