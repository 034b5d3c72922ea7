/* serve_body.c — the HTTP request bodies of `rig bench serve` (serve.h), with the fields
 * sglang.bench_serving sends, built once before the clock starts.
 *
 *   /generate             {"input_ids" | "text", "sampling_params": {"temperature": 0,
 *                          "max_new_tokens", "ignore_eos"}, "stream"}
 *   /v1/completions       {"model", "prompt": text or a list of ids, "temperature": 0,
 *                          "best_of": 1, "max_tokens", "stream", "ignore_eos"}
 *   /v1/chat/completions  {"model", "messages": [{"role": "user", "content"}],
 *                          "temperature": 0, "max_tokens", "stream", "ignore_eos"}
 *
 * OpenAI streams also carry "stream_options": {"include_usage": true} (unless switched off),
 * so the server's own token count arrives with the last chunk. bench_serving sends
 * ignore_eos to chat only through --extra-request-body; here it goes to every API, since a
 * serving comparison with EOS honoured by one side and not the other means nothing. To the
 * OpenAI APIs it goes only when on: it is not an OpenAI field, and Hugging Face's
 * `transformers serve` answers 422 to a field it does not know, so --disable-ignore-eos
 * leaves it out (give such a server a model whose generation config has no EOS instead).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/bench/serve.h"

static json_t *rig__ids(const struct rig_serve_dataset *d, const struct rig_serve_prompt *p)
{
    json_t *list = json_array();
    for (int32_t j = 0; list != NULL && j < p->token_count; j++)
        if (json_array_append_new(list, json_integer(d->tokens[p->token_offset + j])) != 0) {
            json_decref(list);
            return NULL;
        }
    return list;
}

/* The prompt as the API takes it: text when there is text and ids are not asked for. */
static json_t *rig__prompt(const struct rig_serve_dataset *d, const struct rig_serve_prompt *p,
                           const struct rig_serve_options *o, bool *is_text)
{
    bool text = p->text_offset >= 0 && (!o->tokenize_prompt || p->token_count == 0);
    *is_text = text;
    return text ? json_string(d->text + p->text_offset) : rig__ids(d, p);
}

static json_t *rig__body(const struct rig_serve_dataset *d, const struct rig_serve_prompt *p,
                         enum rig_serve_api api, const struct rig_serve_options *o,
                         const char *model, char *error, size_t error_len)
{
    bool is_text = false;
    json_t *prompt = rig__prompt(d, p, o, &is_text);
    if (api == RIG_SERVE_API_CHAT && !is_text) {
        snprintf(error, error_len, "%s: the chat API needs text prompts: give --tokenizer", p->id);
        json_decref(prompt);
        return NULL;
    }
    json_t *body = NULL;
    if (api == RIG_SERVE_API_GENERATE) {
        body =
            json_pack("{s:o, s:{s:f, s:I, s:b}, s:b}", is_text ? "text" : "input_ids", prompt,
                      "sampling_params", "temperature", 0.0, "max_new_tokens",
                      (json_int_t)p->output_len, "ignore_eos", o->ignore_eos, "stream", o->stream);
        return body;
    }
    if (api == RIG_SERVE_API_COMPLETIONS)
        body = json_pack("{s:o, s:f, s:i, s:I, s:b}", "prompt", prompt, "temperature", 0.0,
                         "best_of", 1, "max_tokens", (json_int_t)p->output_len, "stream", o->stream);
    else
        body = json_pack("{s:[{s:s, s:o}], s:f, s:I, s:b}", "messages", "role", "user", "content",
                         prompt, "temperature", 0.0, "max_tokens", (json_int_t)p->output_len,
                         "stream", o->stream);
    /* ignore_eos is not OpenAI's: sent only when on (off is every server's default), so that
     * a server that refuses unknown fields (transformers serve: 422) takes --disable-ignore-eos */
    if (body != NULL && o->ignore_eos) json_object_set_new(body, "ignore_eos", json_true());
    if (body != NULL && model != NULL) json_object_set_new(body, "model", json_string(model));
    if (body != NULL && o->stream && o->stream_usage)
        json_object_set_new(body, "stream_options", json_pack("{s:b}", "include_usage", 1));
    return body;
}

enum rig_status rig_serve_bodies(struct rig_serve_dataset *d, enum rig_serve_api api,
                                 const struct rig_serve_options *o, const char *model, char *error,
                                 size_t error_len)
{
    if (error_len > 0) error[0] = '\0';
    char **texts = calloc((size_t)d->count + 1, sizeof *texts);
    int64_t total = 0;
    enum rig_status status = texts != NULL ? RIG_OK : RIG_E_NO_MEMORY;
    for (int32_t i = 0; i < d->count && status == RIG_OK; i++) {
        json_t *body = rig__body(d, &d->prompts[i], api, o, model, error, error_len);
        if (body == NULL) {
            status = error[0] != '\0' ? RIG_E_INVALID : RIG_E_NO_MEMORY;
            break;
        }
        texts[i] = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        if (texts[i] == NULL)
            status = RIG_E_NO_MEMORY;
        else
            total += (int64_t)strlen(texts[i]) + 1;
    }
    free(d->bodies);
    d->bodies = status == RIG_OK ? malloc((size_t)total + 1) : NULL;
    d->bodies_len = 0;
    if (status == RIG_OK && d->bodies == NULL) status = RIG_E_NO_MEMORY;
    for (int32_t i = 0; i < d->count && status == RIG_OK; i++) {
        size_t len = strlen(texts[i]);
        memcpy(d->bodies + d->bodies_len, texts[i], len + 1);
        d->prompts[i].body_offset = d->bodies_len;
        d->prompts[i].body_len = (int32_t)len;
        d->bodies_len += (int64_t)len + 1;
    }
    for (int32_t i = 0; texts != NULL && i < d->count; i++)
        free(texts[i]);
    free(texts);
    if (status == RIG_E_NO_MEMORY) snprintf(error, error_len, "request bodies: out of memory");
    return status;
}
