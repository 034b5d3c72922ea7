/* response.c — response bodies and SSE events, as OpenAI and SGLang shape them.
 *
 * Chat: chat.completion / chat.completion.chunk (delta with the role in a choice's first
 * chunk), logprobs as {"content": [{"token", "logprob", "bytes", "top_logprobs"}]}. Text
 * completions: text_completion, logprobs as {"tokens", "token_logprobs", "top_logprobs",
 * "text_offset"}. /generate: {"text", "output_ids", "meta_info"}, the text cumulative in
 * stream events as SGLang sends it. Usage: prompt tokens once per prompt, completion tokens
 * per choice, cached tokens in prompt_tokens_details. Built with jansson (call->lock held).
 */
#include <stdio.h>
#include <string.h>

#include "core/serve/serve_impl.h"

static int rig__dump_cb(const char *data, size_t size, void *ctx)
{
    return rig_serve_buffer_append(ctx, data, size) == RIG_OK ? 0 : -1;
}

/* Appends `json` (stolen) to `out`, framed as an SSE event when `sse`. */
static enum rig_status rig__emit(json_t *json, bool sse, struct rig_serve_buffer *out)
{
    if (json == NULL) return RIG_E_NO_MEMORY;
    size_t before = out->len;
    enum rig_status st = sse ? rig_serve_buffer_append(out, "data: ", 6) : RIG_OK;
    if (st == RIG_OK && json_dump_callback(json, rig__dump_cb, out, JSON_COMPACT) != 0)
        st = RIG_E_NO_MEMORY;
    if (st == RIG_OK && sse) st = rig_serve_buffer_append(out, "\n\n", 2);
    json_decref(json);
    if (st != RIG_OK) out->len = before;
    return st;
}

enum rig_status rig__response_error(const struct rig_serve_error *e, struct rig_serve_buffer *out)
{
    json_t *error = json_pack("{s:s, s:s, s:o, s:o}", "message", e->message, "type",
                              e->type != NULL ? e->type : "invalid_request_error", "param",
                              e->param[0] != '\0' ? json_string(e->param) : json_null(), "code",
                              e->code != NULL ? json_string(e->code) : json_null());
    return rig__emit(json_pack("{s:o}", "error", error), false, out);
}

static const char *rig__finish_text(const struct rig__choice *c)
{
    return rig_serve_finish_name(c->finish == RIG_SERVE_FINISH_REJECTED ? RIG_SERVE_FINISH_ABORT
                                                                         : c->finish);
}

/* The text of one token (lossy where it ends inside a character). */
static json_t *rig__token_text(const struct rig_serve *server, int32_t id)
{
    struct rig_tokenizer_text text = {0};
    rig_tokenizer_decode(server->tokenizer, &id, 1, false, &text, NULL, 0);
    json_t *value = json_stringn(text.data != NULL ? text.data : "", text.len);
    rig_tokenizer_text_free(&text);
    return value;
}

/* The UTF-8 bytes of a token's text as a list of integers (OpenAI's "bytes"). */
static json_t *rig__token_bytes(const json_t *text)
{
    json_t *bytes = json_array();
    const unsigned char *s = (const unsigned char *)json_string_value(text);
    size_t len = json_string_length(text);
    for (size_t i = 0; s != NULL && i < len; i++) json_array_append_new(bytes, json_integer(s[i]));
    return bytes;
}

/* Characters (code points) of a token's text: text_offset counts them, as Python's len. */
static int64_t rig__token_chars(const json_t *text)
{
    const unsigned char *s = (const unsigned char *)json_string_value(text);
    size_t len = json_string_length(text);
    int64_t chars = 0;
    for (size_t i = 0; s != NULL && i < len; i++) chars += (s[i] & 0xC0) != 0x80;
    return chars;
}

/* One chat logprob entry {"token", "logprob", "bytes"}, top_logprobs added by the caller. */
static json_t *rig__chat_entry(const struct rig_serve *server, int32_t id, float logprob)
{
    json_t *text = rig__token_text(server, id);
    return json_pack("{s:o, s:f, s:o}", "token", text, "logprob", (double)logprob, "bytes",
                     rig__token_bytes(text));
}

/* Chat logprobs of tokens [from, to): {"content": [...]}. */
static json_t *rig__chat_logprobs(const struct rig_serve *server, const struct rig__slot *slot,
                                  int32_t from, int32_t to)
{
    json_t *content = json_array();
    for (int32_t i = from; i < to; i++) {
        const struct rig__logprob *lp = &slot->logprobs[i];
        json_t *top = json_array();
        for (int32_t k = 0; k < lp->top_count; k++)
            json_array_append_new(top,
                                  rig__chat_entry(server, lp->top_ids[k], lp->top_logprobs[k]));
        json_t *entry = rig__chat_entry(server, slot->tokens[i], lp->logprob);
        json_object_set_new(entry, "top_logprobs", top);
        json_array_append_new(content, entry);
    }
    return json_pack("{s:o}", "content", content);
}

/* Completions logprobs of tokens [from, to); `*offset` is the characters before token `from`
 * and advances past token to - 1. */
static json_t *rig__text_logprobs(const struct rig_serve *server, const struct rig__slot *slot,
                                  int32_t from, int32_t to, int64_t *offset)
{
    json_t *tokens = json_array(), *values = json_array(), *tops = json_array();
    json_t *offsets = json_array();
    for (int32_t i = from; i < to; i++) {
        const struct rig__logprob *lp = &slot->logprobs[i];
        json_t *token = rig__token_text(server, slot->tokens[i]);
        json_array_append_new(offsets, json_integer(*offset));
        *offset += rig__token_chars(token);
        json_array_append_new(tokens, token);
        json_array_append_new(values, json_real(lp->logprob));
        json_t *top = json_object();
        for (int32_t k = 0; k < lp->top_count; k++) {
            json_t *text = rig__token_text(server, lp->top_ids[k]);
            json_object_set_new(top, json_string_value(text), json_real(lp->top_logprobs[k]));
            json_decref(text);
        }
        json_array_append_new(tops, top);
    }
    return json_pack("{s:o, s:o, s:o, s:o}", "tokens", tokens, "token_logprobs", values,
                     "top_logprobs", tops, "text_offset", offsets);
}

/* SGLang's [[logprob, id, null], ...] and the top lists of tokens [from, to), for /generate. */
static void rig__generate_logprobs(const struct rig__slot *slot, int32_t from, int32_t to,
                                   json_t *meta)
{
    json_t *values = json_array(), *tops = json_array();
    for (int32_t i = from; i < to; i++) {
        const struct rig__logprob *lp = &slot->logprobs[i];
        json_array_append_new(values, json_pack("[f, i, n]", (double)lp->logprob,
                                                (json_int_t)slot->tokens[i]));
        json_t *top = json_array();
        for (int32_t k = 0; k < lp->top_count; k++)
            json_array_append_new(top, json_pack("[f, i, n]", (double)lp->top_logprobs[k],
                                                 (json_int_t)lp->top_ids[k]));
        json_array_append_new(tops, top);
    }
    json_object_set_new(meta, "output_token_logprobs", values);
    json_object_set_new(meta, "output_top_logprobs", tops);
}

/* Logprob entries [0, n) that are written and belong to kept tokens. */
static int32_t rig__logprobs_ready(const struct rig__call *call, const struct rig__choice *c)
{
    const struct rig__slot *slot = &call->server->slots[c->slot];
    int32_t ready = atomic_load_explicit(&slot->logprobs_ready, memory_order_acquire);
    return ready < c->kept ? ready : c->kept;
}

/* The logprobs of a choice's tokens [from, to) (`*offset`: see rig__text_logprobs). */
static json_t *rig__logprobs(const struct rig__call *call, const struct rig__choice *c,
                             int32_t from, int32_t to, int64_t *offset)
{
    const struct rig__slot *slot = &call->server->slots[c->slot];
    if (!call->params.sampling.logprobs || slot->logprobs == NULL) return json_null();
    if (call->params.api == RIG_SERVE_API_CHAT)
        return rig__chat_logprobs(call->server, slot, from, to);
    return rig__text_logprobs(call->server, slot, from, to, offset);
}

static json_t *rig__usage(const struct rig__call *call)
{
    int64_t prompt = 0, cached = 0, completion = 0;
    int32_t prompts = call->params.api == RIG_SERVE_API_CHAT ? 1 : call->params.prompt_count;
    for (int32_t p = 0; p < prompts; p++) {
        prompt += call->prompt_lens[p];
        int32_t most = 0;
        for (int32_t j = 0; j < call->params.n; j++) {
            const struct rig__choice *c = &call->choices[p * call->params.n + j];
            most = c->cached_tokens > most ? c->cached_tokens : most;
        }
        cached += most;
    }
    for (int32_t i = 0; i < call->choice_count; i++)
        completion += call->choices[i].completion_tokens;
    return json_pack("{s:I, s:I, s:I, s:{s:I}}", "prompt_tokens", (json_int_t)prompt,
                     "completion_tokens", (json_int_t)completion, "total_tokens",
                     (json_int_t)(prompt + completion), "prompt_tokens_details", "cached_tokens",
                     (json_int_t)cached);
}

static json_t *rig__envelope(const struct rig__call *call, const char *object)
{
    return json_pack("{s:s, s:s, s:I, s:s}", "id", call->id, "object", object, "created",
                     (json_int_t)call->created, "model", call->server->config.served_model_name);
}

/* /generate's meta_info of a choice, its logprobs those of tokens [from, ...). */
static json_t *rig__meta_info(const struct rig__call *call, const struct rig__choice *c,
                              int32_t from)
{
    json_t *finish = json_null();
    if (c->finished && c->finish == RIG_SERVE_FINISH_LENGTH)
        finish = json_pack("{s:s, s:i}", "type", "length", "length", c->completion_tokens);
    else if (c->finished && c->stop_matched >= 0)
        finish = json_pack("{s:s, s:s}", "type", "stop", "matched",
                           call->params.sampling.stop[c->stop_matched]);
    else if (c->finished)
        finish = json_pack("{s:s}", "type", rig__finish_text(c));
    json_t *meta = json_pack("{s:s, s:o, s:i, s:i, s:i, s:f}", "id", call->id, "finish_reason",
                             finish, "prompt_tokens", call->prompt_lens[c->prompt],
                             "completion_tokens", c->completion_tokens, "cached_tokens",
                             c->cached_tokens, "e2e_latency", (double)c->e2e_ns * 1e-9);
    const struct rig__slot *slot = &call->server->slots[c->slot];
    if (meta != NULL && call->params.sampling.logprobs && slot->logprobs != NULL)
        rig__generate_logprobs(slot, from, rig__logprobs_ready(call, c), meta);
    return meta;
}

/* A /generate item: all the text so far (unless !with_text), the output ids from `from` and their logprobs from
 * `logprobs_from` on — 0 in a whole response; in a stream event only the new ones, as SGLang
 * streams them (all of them in every event would make a stream quadratic in its length). */
static json_t *rig__generate_item(const struct rig__call *call, const struct rig__choice *c,
                                  int32_t from, int32_t logprobs_from, bool with_text)
{
    const struct rig__slot *slot = &call->server->slots[c->slot];
    json_t *ids = json_array();
    for (int32_t i = from; i < c->kept; i++)
        json_array_append_new(ids, json_integer(slot->tokens[i]));
    json_t *meta = rig__meta_info(call, c, logprobs_from);
    if (!with_text) /* rig__generate_event writes the text itself */
        return json_pack("{s:o, s:o, s:i}", "output_ids", ids, "meta_info", meta, "index",
                         c->index);
    return json_pack("{s:s%, s:o, s:o, s:i}", "text", c->text.data != NULL ? c->text.data : "",
                     c->text.len, "output_ids", ids, "meta_info", meta, "index", c->index);
}

/* Bytes of text[0, len) that end on a character boundary (a stop string held back may end
 * the text so far inside a character). */
static size_t rig__whole_chars(const char *text, size_t len)
{
    size_t start = len;
    while (start > 0 && len - start < 4 && ((unsigned char)text[start - 1] & 0xC0) == 0x80)
        start--;
    if (start == 0) return len;
    unsigned char lead = (unsigned char)text[start - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return len - start + 1 >= need ? len : start - 1;
}

/* Escapes the choice's new text onto c->text_json (jansson's escaping, quotes dropped). */
static enum rig_status rig__escape_new_text(struct rig__choice *c)
{
    size_t end = rig__whole_chars(c->text.data, c->text.len);
    if (end <= c->text_json_from) return RIG_OK;
    json_t *piece = json_stringn(c->text.data + c->text_json_from, end - c->text_json_from);
    if (piece == NULL) return RIG_E_INVALID;
    struct rig_serve_buffer *b = &c->text_json;
    size_t before = b->len;
    int rc = json_dump_callback(piece, rig__dump_cb, b, JSON_ENCODE_ANY);
    json_decref(piece);
    if (rc != 0 || b->len < before + 2) {
        b->len = before;
        return RIG_E_NO_MEMORY;
    }
    memmove(b->data + before, b->data + before + 1, b->len - before - 2); /* the quotes */
    b->len -= 2;
    b->data[b->len] = '\0';
    c->text_json_from = end;
    return RIG_OK;
}

/* One /generate stream event: the text so far from c->text_json (escaped once, as it grew:
 * a stream costs what it sends, not the square of it) and the rest as rig__generate_item. */
static enum rig_status rig__generate_event(struct rig__call *call, struct rig__choice *c,
                                           struct rig_serve_buffer *out)
{
    enum rig_status st = rig__escape_new_text(c);
    if (st == RIG_E_INVALID) /* not UTF-8 text: jansson says so, the slow way */
        return rig__emit(rig__generate_item(call, c, c->ids_sent, c->logprobs_sent, true),
                         true, out);
    if (st != RIG_OK) return st;
    json_t *item = rig__generate_item(call, c, c->ids_sent, c->logprobs_sent, false);
    if (item == NULL) return RIG_E_NO_MEMORY;
    size_t before = out->len;
    st = rig_serve_buffer_append(out, "data: {\"text\":\"", 15);
    if (st == RIG_OK && c->text_json.len > 0)
        st = rig_serve_buffer_append(out, c->text_json.data, c->text_json.len);
    if (st == RIG_OK) st = rig_serve_buffer_append(out, "\"", 1);
    size_t brace = out->len;
    if (st == RIG_OK && json_dump_callback(item, rig__dump_cb, out, JSON_COMPACT) != 0)
        st = RIG_E_NO_MEMORY;
    if (st == RIG_OK) out->data[brace] = ','; /* {"output_ids": ... → ,"output_ids": ... */
    if (st == RIG_OK) st = rig_serve_buffer_append(out, "\n\n", 2);
    json_decref(item);
    if (st != RIG_OK) out->len = before;
    return st;
}

/* One stream chunk of a choice: what it has not sent, and its end when it has one. */
static json_t *rig__chunk(struct rig__call *call, struct rig__choice *c)
{
    const char *text = c->text.data != NULL ? c->text.data + c->text_sent : "";
    size_t len = c->text.len - c->text_sent;
    bool ends = c->finished;
    int32_t ready = rig__logprobs_ready(call, c);
    json_t *logprobs = rig__logprobs(call, c, c->logprobs_sent, ready, &c->logprobs_offset);
    json_t *choice;
    if (call->params.api == RIG_SERVE_API_CHAT) {
        json_t *delta = json_pack("{s:s%}", "content", text, len);
        if (!c->role_sent) json_object_set_new(delta, "role", json_string("assistant"));
        choice = json_pack("{s:i, s:o, s:o, s:o}", "index", c->index, "delta", delta,
                           "logprobs", logprobs, "finish_reason",
                           ends ? json_string(rig__finish_text(c)) : json_null());
    } else {
        choice = json_pack("{s:i, s:s%, s:o, s:o}", "index", c->index, "text", text, len,
                           "logprobs", logprobs, "finish_reason",
                           ends ? json_string(rig__finish_text(c)) : json_null());
    }
    if (choice != NULL && ends && c->stop_matched >= 0)
        json_object_set_new(choice, "matched_stop",
                            json_string(call->params.sampling.stop[c->stop_matched]));
    c->role_sent = true;
    c->text_sent = c->text.len;
    c->logprobs_sent = ready;
    c->finish_sent = ends;
    json_t *chunk = rig__envelope(call, call->params.api == RIG_SERVE_API_CHAT
                                            ? "chat.completion.chunk"
                                            : "text_completion");
    json_object_set_new(chunk, "choices", json_pack("[o]", choice));
    return chunk;
}

enum rig_status rig__response_stream(struct rig__call *call)
{
    enum rig_status st = RIG_OK;
    for (int32_t i = 0; i < call->choice_count && st == RIG_OK; i++) {
        struct rig__choice *c = &call->choices[i];
        bool news = c->text.len > c->text_sent || (c->finished && !c->finish_sent);
        if (!news) continue;
        if (call->params.api != RIG_SERVE_API_GENERATE) {
            st = rig__emit(rig__chunk(call, c), true, &call->out);
            continue;
        }
        c->text_sent = c->text.len;
        c->finish_sent = c->finished;
        int32_t logprobs_ready = rig__logprobs_ready(call, c);
        st = rig__generate_event(call, c, &call->out);
        c->ids_sent = c->kept;
        c->logprobs_sent = logprobs_ready;
    }
    if (st != RIG_OK || call->stream_over || !rig__call_all_finished(call)) return st;
    for (int32_t i = 0; i < call->choice_count; i++)
        if (!call->choices[i].finish_sent) return RIG_OK;
    if (call->params.include_usage) {
        json_t *chunk = rig__envelope(call, call->params.api == RIG_SERVE_API_CHAT
                                                ? "chat.completion.chunk"
                                                : "text_completion");
        json_object_set_new(chunk, "choices", json_array());
        json_object_set_new(chunk, "usage", rig__usage(call));
        st = rig__emit(chunk, true, &call->out);
    }
    if (st == RIG_OK) st = rig_serve_buffer_append(&call->out, "data: [DONE]\n\n", 14);
    if (st == RIG_OK) call->stream_over = true;
    return st;
}

static json_t *rig__full_choice(const struct rig__call *call, const struct rig__choice *c)
{
    int64_t offset = 0;
    const char *text = c->text.data != NULL ? c->text.data : "";
    json_t *logprobs = rig__logprobs(call, c, 0, rig__logprobs_ready(call, c), &offset);
    json_t *choice;
    if (call->params.api == RIG_SERVE_API_CHAT)
        choice = json_pack("{s:i, s:{s:s, s:s%}, s:o, s:s}", "index", c->index, "message",
                           "role", "assistant", "content", text, c->text.len, "logprobs",
                           logprobs, "finish_reason", rig__finish_text(c));
    else
        choice = json_pack("{s:i, s:s%, s:o, s:s}", "index", c->index, "text", text, c->text.len,
                           "logprobs", logprobs, "finish_reason", rig__finish_text(c));
    if (choice != NULL && c->stop_matched >= 0)
        json_object_set_new(choice, "matched_stop",
                            json_string(call->params.sampling.stop[c->stop_matched]));
    return choice;
}

enum rig_status rig__response_full(struct rig__call *call, struct rig_serve_buffer *out)
{
    if (call->params.api == RIG_SERVE_API_GENERATE) {
        if (call->choice_count == 1 && !call->params.batched)
            return rig__emit(rig__generate_item(call, &call->choices[0], 0, 0, true), false, out);
        json_t *list = json_array();
        for (int32_t i = 0; i < call->choice_count; i++)
            json_array_append_new(list, rig__generate_item(call, &call->choices[i], 0, 0, true));
        return rig__emit(list, false, out);
    }
    json_t *body = rig__envelope(call, call->params.api == RIG_SERVE_API_CHAT
                                           ? "chat.completion"
                                           : "text_completion");
    json_t *choices = json_array();
    for (int32_t i = 0; i < call->choice_count; i++)
        json_array_append_new(choices, rig__full_choice(call, &call->choices[i]));
    json_object_set_new(body, "choices", choices);
    json_object_set_new(body, "usage", rig__usage(call));
    return rig__emit(body, false, out);
}
