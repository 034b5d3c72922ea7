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
 *
 * /generate's cumulative text is read incrementally (rig_serve_generate_parse, serve.h): the
 * bytes of the text already held are compared, not parsed, and jansson reads the event's
 * opening and its new part through json_load_callback, so no event is copied or rewritten.
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

/* Bytes of `bytes[0, len)` before the first CR or LF (len when there is none). */
static size_t rig__line_run(const char *bytes, size_t len)
{
    const char *lf = memchr(bytes, '\n', len);
    size_t run = lf != NULL ? (size_t)(lf - bytes) : len;
    const char *cr = memchr(bytes, '\r', run);
    return cr != NULL ? (size_t)(cr - bytes) : run;
}

enum rig_status rig_serve_sse_feed(struct rig_serve_sse *sse, const char *bytes, size_t len,
                                   rig_serve_event_fn fn, void *user)
{
    if (sse->overflow) return RIG_E_CAPACITY;
    size_t i = 0;
    while (i < len) { /* each pass takes a run of line bytes and the line end after it */
        if (sse->after_cr && bytes[i] == '\n') { /* CRLF split, or whole: one end */
            sse->after_cr = false;
            i++;
            continue;
        }
        sse->after_cr = false;
        size_t run = rig__line_run(bytes + i, len - i);
        /* one byte kept free for the '\n' that joins the next data line */
        if (sse->line_start + sse->line_len + run + 1 > sse->capacity) {
            sse->overflow = true;
            return RIG_E_CAPACITY;
        }
        memcpy(sse->buffer + sse->line_start + sse->line_len, bytes + i, run);
        sse->line_len += run;
        i += run;
        if (i == len) break;
        sse->after_cr = bytes[i] == '\r';
        rig__line(sse, fn, user);
        i++;
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
    chunk->parsed_bytes = len;
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

/* ---- /generate read incrementally ------------------------------------------------------ */

void rig_serve_generate_reader_init(struct rig_serve_generate_reader *reader, char *seen,
                                    size_t capacity)
{
    RIG_ASSERT(seen != NULL || capacity == 0);
    memset(reader, 0, sizeof *reader);
    reader->seen = seen;
    reader->capacity = capacity;
}

static size_t rig__skip_space(const char *data, size_t len, size_t at)
{
    while (at < len &&
           (data[at] == ' ' || data[at] == '\t' || data[at] == '\n' || data[at] == '\r'))
        at++;
    return at;
}

/* Where the "text" string's bytes start when `data` opens with {"text": "...; 0 otherwise.
 * Only this framing is matched; the JSON parser reads everything else. */
static size_t rig__text_start(const char *data, size_t len)
{
    size_t at = rig__skip_space(data, len, 0);
    if (at == len || data[at] != '{') return 0;
    at = rig__skip_space(data, len, at + 1);
    if (len - at < 6 || memcmp(data + at, "\"text\"", 6) != 0) return 0;
    at = rig__skip_space(data, len, at + 6);
    if (at == len || data[at] != ':') return 0;
    at = rig__skip_space(data, len, at + 1);
    return at < len && data[at] == '"' ? at + 1 : 0;
}

/* Bytes of the JSON string's contents in `bytes[0, len)` before its closing quote (escapes
 * skipped whole); len + 1 when it does not close there. */
static size_t rig__string_end(const char *bytes, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (bytes[i] == '\\') {
            i++;
        } else if (bytes[i] == '"') {
            return i;
        }
    }
    return len + 1;
}

/* The spliced event for jansson: the opening up to the text's first byte, then the event
 * from the new text on (the bytes the reader holds already left out). */
struct rig__splice {
    const char *piece[2];
    size_t left[2];
};

static size_t rig__splice_read(void *buffer, size_t room, void *user)
{
    struct rig__splice *s = user;
    int k = s->left[0] > 0 ? 0 : 1;
    size_t n = s->left[k] < room ? s->left[k] : room;
    memcpy(buffer, s->piece[k], n);
    s->piece[k] += n;
    s->left[k] -= n;
    return n;
}

/* Keeps the escaped text `text[0, len)` (all of it, or appended when `append`). */
static void rig__remember(struct rig_serve_generate_reader *r, const char *text, size_t len,
                          bool append)
{
    RIG_ASSERT(text != NULL || len == 0);
    size_t from = append ? r->seen_len : 0;
    if (r->whole || from + len > r->capacity) {
        r->whole = true;
        r->seen_len = 0;
        return;
    }
    memcpy(r->seen + from, text, len);
    r->seen_len = from + len;
}

/* The new text of an event whose text starts with what the reader holds: parses the opening
 * and the rest. False (nothing kept) when the rest is not what it must be. */
static bool rig__generate_new(struct rig_serve_generate_reader *r, const char *data, size_t len,
                              size_t start, struct rig_serve_chunk *chunk)
{
    RIG_ASSERT(start > 0 && len >= start + r->seen_len);
    const char *rest = data + start + r->seen_len;
    size_t rest_len = len - start - r->seen_len;
    size_t end = rig__string_end(rest, rest_len);
    if (end > rest_len) return false;
    struct rig__splice splice = {{data, rest}, {start, rest_len}};
    json_error_t problem;
    json_t *root = json_load_callback(rig__splice_read, &splice,
                                      JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &problem);
    if (!json_is_object(root) || rig__server_error(root, chunk)) {
        json_decref(root);
        chunk->error[0] = '\0';
        return false;
    }
    chunk->root = root;
    chunk->parsed_bytes = start + rest_len;
    rig__generate(root, chunk);
    chunk->text_cumulative = false;
    rig__remember(r, rest, end, true);
    return true;
}

void rig_serve_generate_parse(struct rig_serve_generate_reader *r, const char *data, size_t len,
                              struct rig_serve_chunk *chunk)
{
    RIG_ASSERT(r->seen_len <= r->capacity);
    memset(chunk, 0, sizeof *chunk);
    chunk->completion_tokens = chunk->prompt_tokens = chunk->cached_tokens = -1;
    size_t start = rig__text_start(data, len);
    if (start > 0 && !r->whole && len - start >= r->seen_len &&
        (r->seen_len == 0 || memcmp(data + start, r->seen, r->seen_len) == 0) &&
        rig__generate_new(r, data, len, start, chunk))
        return;
    rig_serve_chunk_parse(RIG_SERVE_API_GENERATE, data, len, chunk);
    if (chunk->error[0] != '\0' || chunk->text == NULL) return;
    size_t end = start > 0 ? rig__string_end(data + start, len - start) : len + 1;
    if (end <= len - start)
        rig__remember(r, data + start, end, false);
    else
        r->whole = true; /* text not first: this server is read whole from now on */
}
