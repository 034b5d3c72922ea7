/* serve_sse.c — server-sent events read incrementally, and what each chunk says for the
 * three APIs (serve.h).
 *
 * The reader follows the WHATWG event-stream rules a serving client meets: lines end at LF,
 * CRLF or CR (a CRLF split across two reads is one end); a blank line dispatches the event;
 * `data:` lines accumulate, joined by LF, with one leading space after the colon dropped;
 * comment lines (`:`) and other fields (`event:`, `id:`) are skipped. The current event's
 * data sits at the front of the caller's buffer and the line being read right after it, so
 * a chunk split anywhere — inside "data:", inside a UTF-8 character, between CR and LF —
 * gives the same events as the whole stream at once.
 *
 * Chunks: SGLang /generate sends {"text": all text so far, "meta_info": {"completion_tokens",
 * "prompt_tokens", "cached_tokens", "finish_reason": {"type": ...}}}; OpenAI completions send
 * choices[0].text deltas, chat choices[0].delta.content (choices[0].message.content when not
 * streamed), both with an optional "usage" (completion_tokens, prompt_tokens,
 * prompt_tokens_details.cached_tokens). "[DONE]" ends an OpenAI stream. Anything that is not
 * a JSON object is malformed; an "error" member is the server's error.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "core/harness/bench/serve.h"

void rig_serve_sse_init(struct rig_serve_sse *sse, char *buffer, size_t capacity)
{
    RIG_ASSERT(buffer != NULL && capacity >= 2);
    memset(sse, 0, sizeof *sse);
    sse->buffer = buffer;
    sse->capacity = capacity;
}

static void rig__dispatch(struct rig_serve_sse *sse, rig_serve_event_fn fn, void *user)
{
    if (sse->has_data) fn(user, sse->buffer, sse->data_len);
    sse->data_len = 0;
    sse->has_data = false;
}

/* The line in buffer[line_start, +line_len) is complete. */
static void rig__line(struct rig_serve_sse *sse, rig_serve_event_fn fn, void *user)
{
    const char *line = sse->buffer + sse->line_start;
    size_t len = sse->line_len;
    if (len == 0) {
        rig__dispatch(sse, fn, user);
    } else if (len >= 5 && memcmp(line, "data", 4) == 0 && line[4] == ':') {
        size_t skip = len > 5 && line[5] == ' ' ? 6 : 5;
        if (sse->has_data) sse->buffer[sse->data_len++] = '\n'; /* at or before line[0] */
        memmove(sse->buffer + sse->data_len, line + skip, len - skip);
        sse->data_len += len - skip;
        sse->has_data = true;
    } else if (len == 4 && memcmp(line, "data", 4) == 0) {
        if (sse->has_data) sse->buffer[sse->data_len++] = '\n';
        sse->has_data = true;
    } /* comments and other fields: nothing */
    sse->line_start = sse->data_len;
    sse->line_len = 0;
}

enum rig_status rig_serve_sse_feed(struct rig_serve_sse *sse, const char *bytes, size_t len,
                                   rig_serve_event_fn fn, void *user)
{
    if (sse->overflow) return RIG_E_CAPACITY;
    for (size_t i = 0; i < len; i++) {
        char c = bytes[i];
        if (c == '\n' && sse->after_cr) {
            sse->after_cr = false;
            continue;
        }
        sse->after_cr = c == '\r';
        if (c == '\r' || c == '\n') {
            rig__line(sse, fn, user);
            continue;
        }
        /* one byte kept free for the '\n' that joins the next data line */
        if (sse->line_start + sse->line_len + 2 > sse->capacity) {
            sse->overflow = true;
            return RIG_E_CAPACITY;
        }
        sse->buffer[sse->line_start + sse->line_len++] = c;
    }
    return RIG_OK;
}

void rig_serve_sse_finish(struct rig_serve_sse *sse, rig_serve_event_fn fn, void *user)
{
    if (sse->overflow) return;
    if (sse->line_len > 0) rig__line(sse, fn, user);
    rig__dispatch(sse, fn, user);
}

/* ---- chunks ---------------------------------------------------------------------------- */

static int64_t rig__int(json_t *object, const char *key)
{
    json_t *v = json_object_get(object, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static int32_t rig__reason(const char *name)
{
    if (name == NULL) return RIG_FINISH_NONE;
    if (strcmp(name, "length") == 0) return RIG_FINISH_LENGTH;
    if (strcmp(name, "stop") == 0 || strcmp(name, "eos") == 0) return RIG_FINISH_STOP;
    if (strcmp(name, "abort") == 0) return RIG_FINISH_ABORT;
    return RIG_FINISH_NONE;
}

static void rig__text(struct rig_serve_chunk *chunk, json_t *value)
{
    if (!json_is_string(value)) return;
    chunk->text = json_string_value(value);
    chunk->text_len = json_string_length(value);
}

static void rig__generate(json_t *root, struct rig_serve_chunk *chunk)
{
    rig__text(chunk, json_object_get(root, "text"));
    chunk->text_cumulative = true;
    json_t *meta = json_object_get(root, "meta_info");
    if (!json_is_object(meta)) return;
    chunk->completion_tokens = rig__int(meta, "completion_tokens");
    chunk->prompt_tokens = rig__int(meta, "prompt_tokens");
    chunk->cached_tokens = rig__int(meta, "cached_tokens");
    json_t *finish = json_object_get(meta, "finish_reason");
    if (json_is_object(finish)) finish = json_object_get(finish, "type");
    chunk->finish_reason = rig__reason(json_string_value(finish));
}

static void rig__openai(enum rig_serve_api api, json_t *root, struct rig_serve_chunk *chunk)
{
    json_t *choice = json_array_get(json_object_get(root, "choices"), 0);
    if (json_is_object(choice)) {
        if (api == RIG_SERVE_API_COMPLETIONS) {
            rig__text(chunk, json_object_get(choice, "text"));
        } else {
            json_t *delta = json_object_get(choice, "delta");
            if (!json_is_object(delta)) delta = json_object_get(choice, "message");
            rig__text(chunk, json_object_get(delta, "content"));
        }
        chunk->finish_reason =
            rig__reason(json_string_value(json_object_get(choice, "finish_reason")));
    }
    json_t *usage = json_object_get(root, "usage");
    if (!json_is_object(usage)) return;
    chunk->completion_tokens = rig__int(usage, "completion_tokens");
    chunk->prompt_tokens = rig__int(usage, "prompt_tokens");
    chunk->cached_tokens =
        rig__int(json_object_get(usage, "prompt_tokens_details"), "cached_tokens");
}

/* The server's error member as a message, or false. */
static bool rig__server_error(json_t *root, struct rig_serve_chunk *chunk)
{
    json_t *e = json_object_get(root, "error");
    if (e == NULL || json_is_null(e)) return false;
    const char *message = json_string_value(e);
    if (message == NULL) message = json_string_value(json_object_get(e, "message"));
    snprintf(chunk->error, sizeof chunk->error, "server error: %s",
             message != NULL ? message : "(no message)");
    return true;
}

void rig_serve_chunk_parse(enum rig_serve_api api, const char *data, size_t len,
                           struct rig_serve_chunk *chunk)
{
    memset(chunk, 0, sizeof *chunk);
    chunk->completion_tokens = chunk->prompt_tokens = chunk->cached_tokens = -1;
    while (len > 0 && (data[0] == ' ' || data[0] == '\t'))
        data++, len--;
    while (len > 0 && (data[len - 1] == ' ' || data[len - 1] == '\t'))
        len--;
    if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        chunk->done = true;
        return;
    }
    json_error_t problem;
    json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &problem);
    if (!json_is_object(root)) {
        snprintf(chunk->error, sizeof chunk->error, "malformed chunk (%.60s): '%.*s'",
                 root == NULL ? problem.text : "not a JSON object", (int)(len < 40 ? len : 40),
                 data);
        json_decref(root);
        return;
    }
    chunk->root = root;
    if (rig__server_error(root, chunk)) return;
    if (api == RIG_SERVE_API_GENERATE)
        rig__generate(root, chunk);
    else
        rig__openai(api, root, chunk);
}

void rig_serve_chunk_release(struct rig_serve_chunk *chunk)
{
    json_decref((json_t *)chunk->root);
    chunk->root = NULL;
    chunk->text = NULL;
}
