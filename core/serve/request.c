/* request.c — JSON body → struct rig_serve_params, with OpenAI errors naming the field.
 *
 * Each field has one reader that checks its JSON type and range and fills the default when the
 * field is absent or null (OpenAI treats null as "not given"). Sampling fields live at the top
 * level for the OpenAI routes and inside `sampling_params` for /generate (SGLang's names:
 * max_new_tokens, stop, n, ...), so the readers take the object and the name prefix to report.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/serve/request.h"

enum rig_status rig_serve_error_set(struct rig_serve_error *error, int32_t http_status,
                                    const char *type, const char *code, const char *param,
                                    const char *format, ...)
{
    error->http_status = http_status;
    error->type = type;
    error->code = code;
    snprintf(error->param, sizeof error->param, "%s", param != NULL ? param : "");
    va_list args;
    va_start(args, format);
    vsnprintf(error->message, sizeof error->message, format, args);
    va_end(args);
    return RIG_E_INVALID;
}

/* The reader context: the object fields are read from and the prefix of their names. */
struct rig__fields {
    const json_t *object;
    const char *prefix; /* "" or "sampling_params." */
    struct rig_serve_error *error;
};

static enum rig_status rig__bad(const struct rig__fields *f, const char *name,
                                const char *format, const char *detail)
{
    char param[64];
    snprintf(param, sizeof param, "%s%s", f->prefix, name);
    return rig_serve_error_set(f->error, 400, "invalid_request_error", NULL, param, format,
                               param, detail);
}

/* The field, or NULL when absent or null. */
static const json_t *rig__field(const struct rig__fields *f, const char *name)
{
    const json_t *value = json_object_get(f->object, name);
    return value == NULL || json_is_null(value) ? NULL : value;
}

static enum rig_status rig__read_float(const struct rig__fields *f, const char *name, double lo,
                                       double hi, bool lo_open, float *out)
{
    const json_t *value = rig__field(f, name);
    if (value == NULL) return RIG_OK;
    if (!json_is_number(value)) return rig__bad(f, name, "'%s' must be a number%s", "");
    double x = json_number_value(value);
    if (!isfinite(x) || x < lo || x > hi || (lo_open && x == lo)) {
        char range[64];
        snprintf(range, sizeof range, " in %s%g, %g]", lo_open ? "(" : "[", lo, hi);
        return rig__bad(f, name, "'%s' must be a number%s", range);
    }
    *out = (float)x;
    return RIG_OK;
}

static enum rig_status rig__read_int(const struct rig__fields *f, const char *name, int64_t lo,
                                     int64_t hi, int64_t *out)
{
    const json_t *value = rig__field(f, name);
    if (value == NULL) return RIG_OK;
    if (!json_is_integer(value)) return rig__bad(f, name, "'%s' must be an integer%s", "");
    json_int_t x = json_integer_value(value);
    if (x < lo || x > hi) {
        char range[64];
        snprintf(range, sizeof range, " in [%lld, %lld]", (long long)lo, (long long)hi);
        return rig__bad(f, name, "'%s' must be an integer%s", range);
    }
    *out = (int64_t)x;
    return RIG_OK;
}

static enum rig_status rig__read_bool(const struct rig__fields *f, const char *name, bool *out)
{
    const json_t *value = rig__field(f, name);
    if (value == NULL) return RIG_OK;
    if (!json_is_boolean(value)) return rig__bad(f, name, "'%s' must be a boolean%s", "");
    *out = json_is_true(value);
    return RIG_OK;
}

/* `stop`: a string or an array of at most 4 non-empty strings. */
static enum rig_status rig__read_stop(const struct rig__fields *f, struct rig_serve_sampling *s)
{
    const json_t *value = rig__field(f, "stop");
    if (value == NULL) return RIG_OK;
    const json_t *items[RIG_SERVE_STOP_MAX];
    size_t count = 0;
    if (json_is_string(value)) {
        items[count++] = value;
    } else if (json_is_array(value) && json_array_size(value) <= RIG_SERVE_STOP_MAX) {
        for (size_t i = 0; i < json_array_size(value); i++)
            items[count++] = json_array_get(value, i);
    } else {
        return rig__bad(f, "stop", "'%s' must be a string or a list of at most 4 strings%s", "");
    }
    for (size_t i = 0; i < count; i++) {
        size_t len = json_string_length(items[i]);
        if (!json_is_string(items[i]) || len == 0 || len > RIG_SERVE_STOP_BYTES_MAX)
            return rig__bad(f, "stop", "'%s' must hold non-empty strings of at most 256 bytes%s",
                            "");
        s->stop[i] = json_string_value(items[i]);
        s->stop_len[i] = len;
    }
    s->stop_count = (int32_t)count;
    return RIG_OK;
}

static enum rig_status rig__read_stop_ids(const struct rig__fields *f, int32_t vocab_size,
                                          struct rig_serve_sampling *s)
{
    const json_t *value = rig__field(f, "stop_token_ids");
    if (value == NULL) return RIG_OK;
    if (!json_is_array(value) || json_array_size(value) > RIG_STOP_TOKENS_MAX)
        return rig__bad(f, "stop_token_ids", "'%s' must be a list of at most 8 token ids%s", "");
    for (size_t i = 0; i < json_array_size(value); i++) {
        const json_t *id = json_array_get(value, i);
        if (!json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) >= vocab_size)
            return rig__bad(f, "stop_token_ids", "'%s' holds an id outside the vocabulary%s", "");
        s->stop_token_ids[i] = (int32_t)json_integer_value(id);
    }
    s->stop_token_count = (int32_t)json_array_size(value);
    return RIG_OK;
}

/* The fields every API shares, under their OpenAI / SGLang names. */
static enum rig_status rig__read_common(const struct rig__fields *f, int32_t vocab_size,
                                        struct rig_serve_sampling *s)
{
    enum rig_status st = rig__read_float(f, "temperature", 0, 2, false, &s->temperature);
    if (st == RIG_OK) st = rig__read_float(f, "top_p", 0, 1, true, &s->top_p);
    if (st == RIG_OK) st = rig__read_float(f, "min_p", 0, 1, false, &s->min_p);
    if (st == RIG_OK)
        st = rig__read_float(f, "presence_penalty", -2, 2, false, &s->presence_penalty);
    if (st == RIG_OK)
        st = rig__read_float(f, "frequency_penalty", -2, 2, false, &s->frequency_penalty);
    if (st == RIG_OK)
        st = rig__read_float(f, "repetition_penalty", 0, 2, true, &s->repetition_penalty);
    int64_t top_k = s->top_k;
    if (st == RIG_OK) st = rig__read_int(f, "top_k", -1, 1 << 30, &top_k);
    if (st == RIG_OK && top_k == 0) top_k = -1; /* 0 means off, as -1 */
    s->top_k = (int32_t)top_k;
    int64_t seed = 0;
    if (st == RIG_OK && rig__field(f, "seed") != NULL) {
        st = rig__read_int(f, "seed", INT64_MIN, INT64_MAX, &seed);
        s->has_seed = true;
        s->seed = (uint64_t)seed;
    }
    if (st == RIG_OK) st = rig__read_bool(f, "ignore_eos", &s->ignore_eos);
    if (st == RIG_OK) st = rig__read_bool(f, "skip_special_tokens", &s->skip_special_tokens);
    if (st == RIG_OK) st = rig__read_stop(f, s);
    if (st == RIG_OK) st = rig__read_stop_ids(f, vocab_size, s);
    return st;
}

static enum rig_status rig__read_max_tokens(const struct rig__fields *f, const char *name,
                                            int32_t *out)
{
    int64_t value = *out;
    enum rig_status st = rig__read_int(f, name, 1, INT32_MAX, &value);
    *out = (int32_t)value;
    return st;
}

static enum rig_status rig__read_n(const struct rig__fields *f, int32_t n_max, int32_t *out)
{
    int64_t n = 1;
    enum rig_status st = rig__read_int(f, "n", 1, n_max, &n);
    *out = (int32_t)n;
    return st;
}

/* ---- prompts ------------------------------------------------------------------------------ */

static bool rig__is_id_list(const json_t *value)
{
    if (!json_is_array(value) || json_array_size(value) == 0) return false;
    for (size_t i = 0; i < json_array_size(value); i++)
        if (!json_is_integer(json_array_get(value, i))) return false;
    return true;
}

static enum rig_status rig__check_ids(const struct rig__fields *f, const char *name,
                                      const json_t *ids, int32_t vocab_size)
{
    for (size_t i = 0; i < json_array_size(ids); i++) {
        json_int_t id = json_integer_value(json_array_get(ids, i));
        if (id < 0 || id >= vocab_size)
            return rig__bad(f, name, "'%s' holds a token id outside the vocabulary%s", "");
    }
    return RIG_OK;
}

/* One prompt item: a non-empty string or a non-empty list of token ids. */
static enum rig_status rig__prompt_item(const struct rig__fields *f, const char *name,
                                        const json_t *item, int32_t vocab_size,
                                        struct rig_serve_params *p)
{
    RIG_ASSERT(p->prompt_count < RIG_SERVE_PROMPTS_MAX);
    struct rig_serve_prompt *prompt = &p->prompts[p->prompt_count];
    if (json_is_string(item) && json_string_length(item) > 0) {
        prompt->text = json_string_value(item);
        prompt->text_len = json_string_length(item);
    } else if (rig__is_id_list(item)) {
        if (rig__check_ids(f, name, item, vocab_size) != RIG_OK) return RIG_E_INVALID;
        prompt->ids = item;
    } else {
        return rig__bad(f, name, "'%s' must be a non-empty string, a list of token ids or a "
                                 "list of either%s", "");
    }
    p->prompt_count++;
    return RIG_OK;
}

/* `prompt` (completions), `text` / `input_ids` (/generate): one prompt or a list of them. */
static enum rig_status rig__read_prompts(const struct rig__fields *f, const char *name,
                                         int32_t vocab_size, struct rig_serve_params *p)
{
    const json_t *value = rig__field(f, name);
    if (value == NULL) return rig__bad(f, name, "'%s' is required%s", "");
    bool list = json_is_array(value) && json_array_size(value) > 0 &&
                !json_is_integer(json_array_get(value, 0));
    if (!list) return rig__prompt_item(f, name, value, vocab_size, p);
    if (json_array_size(value) > RIG_SERVE_PROMPTS_MAX)
        return rig__bad(f, name, "'%s' holds more than 64 prompts%s", "");
    p->batched = true;
    for (size_t i = 0; i < json_array_size(value); i++)
        if (rig__prompt_item(f, name, json_array_get(value, i), vocab_size, p) != RIG_OK)
            return RIG_E_INVALID;
    return RIG_OK;
}

/* ---- chat messages ------------------------------------------------------------------------ */

static char *rig__own(struct rig_serve_params *p, char *text)
{
    if (text == NULL) return NULL;
    RIG_ASSERT(p->owned_count < (int32_t)RIG_ARRAY_LEN(p->owned));
    p->owned[p->owned_count++] = text;
    return text;
}

/* A message's content: a string, or a list of {"type": "text", "text": ...} parts joined. */
static enum rig_status rig__content(const struct rig__fields *f, const char *name,
                                    const json_t *content, struct rig_serve_params *p,
                                    const char **out)
{
    if (json_is_string(content)) {
        *out = json_string_value(content);
        return RIG_OK;
    }
    if (!json_is_array(content) || json_array_size(content) == 0)
        return rig__bad(f, name, "'%s' must be a string or a list of text parts%s", "");
    size_t total = 1;
    for (size_t i = 0; i < json_array_size(content); i++) {
        const json_t *part = json_array_get(content, i);
        const char *type = json_string_value(json_object_get(part, "type"));
        const json_t *text = json_object_get(part, "text");
        if (type == NULL || strcmp(type, "text") != 0 || !json_is_string(text))
            return rig__bad(f, name, "'%s' parts must be {\"type\": \"text\", \"text\": "
                                     "string} (no images or audio)%s", "");
        total += json_string_length(text);
    }
    char *joined = rig__own(p, malloc(total));
    if (joined == NULL) return RIG_E_NO_MEMORY;
    size_t at = 0;
    for (size_t i = 0; i < json_array_size(content); i++) {
        const json_t *text = json_object_get(json_array_get(content, i), "text");
        memcpy(joined + at, json_string_value(text), json_string_length(text));
        at += json_string_length(text);
    }
    joined[at] = '\0';
    *out = joined;
    return RIG_OK;
}

static bool rig__known_role(const char *role)
{
    static const char *const roles[] = {"system", "developer", "user", "assistant", "tool"};
    for (size_t i = 0; i < RIG_ARRAY_LEN(roles); i++)
        if (strcmp(role, roles[i]) == 0) return true;
    return false;
}

static enum rig_status rig__message(const struct rig__fields *f, size_t index,
                                    const json_t *m, struct rig_serve_params *p)
{
    char name[64];
    snprintf(name, sizeof name, "messages[%zu]", index);
    struct rig_chat_message *out = &p->messages[index];
    const char *role = json_string_value(json_object_get(m, "role"));
    if (!json_is_object(m) || role == NULL || !rig__known_role(role))
        return rig__bad(f, name, "'%s' must be an object with a role of system, developer, "
                                 "user, assistant or tool%s", "");
    out->role = strcmp(role, "developer") == 0 ? "system" : role;
    const json_t *content = json_object_get(m, "content");
    const json_t *calls = json_object_get(m, "tool_calls");
    bool has_calls = calls != NULL && !json_is_null(calls);
    out->content = "";
    if ((content == NULL || json_is_null(content)) && !has_calls)
        return rig__bad(f, name, "'%s' needs a content%s", "");
    enum rig_status st = RIG_OK;
    if (content != NULL && !json_is_null(content)) st = rig__content(f, name, content, p,
                                                                     &out->content);
    const json_t *reasoning = json_object_get(m, "reasoning_content");
    if (st == RIG_OK && json_is_string(reasoning))
        out->reasoning_content = json_string_value(reasoning);
    if (st == RIG_OK && has_calls) {
        out->tool_calls_json = rig__own(p, json_dumps(calls, JSON_COMPACT));
        if (out->tool_calls_json == NULL) st = RIG_E_NO_MEMORY;
    }
    return st;
}

static enum rig_status rig__read_messages(const struct rig__fields *f, struct rig_serve_params *p)
{
    const json_t *value = rig__field(f, "messages");
    if (!json_is_array(value) || json_array_size(value) == 0)
        return rig__bad(f, "messages", "'%s' must be a non-empty list of messages%s", "");
    if (json_array_size(value) > RIG_SERVE_MESSAGES_MAX)
        return rig__bad(f, "messages", "'%s' holds more than 1024 messages%s", "");
    p->messages = calloc(json_array_size(value), sizeof *p->messages);
    if (p->messages == NULL) return RIG_E_NO_MEMORY;
    p->message_count = json_array_size(value);
    for (size_t i = 0; i < p->message_count; i++) {
        enum rig_status st = rig__message(f, i, json_array_get(value, i), p);
        if (st != RIG_OK) return st;
    }
    return RIG_OK;
}

/* chat_template_kwargs.enable_thinking, tools, and the fields this server cannot honour. */
static enum rig_status rig__read_chat_options(const struct rig__fields *f,
                                              struct rig_serve_params *p)
{
    p->chat.add_generation_prompt = true;
    p->chat.enable_thinking = true;
    const json_t *kwargs = rig__field(f, "chat_template_kwargs");
    if (kwargs != NULL && !json_is_object(kwargs))
        return rig__bad(f, "chat_template_kwargs", "'%s' must be an object%s", "");
    if (kwargs != NULL) {
        struct rig__fields k = {kwargs, "chat_template_kwargs.", f->error};
        if (rig__read_bool(&k, "enable_thinking", &p->chat.enable_thinking) != RIG_OK)
            return RIG_E_INVALID;
    }
    const json_t *tools = rig__field(f, "tools");
    if (tools != NULL && !json_is_array(tools))
        return rig__bad(f, "tools", "'%s' must be a list of tool definitions%s", "");
    if (tools != NULL && json_array_size(tools) > 0) {
        p->chat.tools_json = rig__own(p, json_dumps(tools, JSON_COMPACT));
        if (p->chat.tools_json == NULL) return RIG_E_NO_MEMORY;
    }
    const json_t *format = rig__field(f, "response_format");
    const char *type = json_string_value(json_object_get(format, "type"));
    if (format != NULL && (type == NULL || strcmp(type, "text") != 0))
        return rig__bad(f, "response_format", "'%s': only {\"type\": \"text\"} is supported%s",
                        "");
    return RIG_OK;
}

/* logprobs: chat takes a boolean and top_logprobs; completions an integer count (0..5). */
static enum rig_status rig__read_logprobs(const struct rig__fields *f, enum rig_serve_api api,
                                          struct rig_serve_sampling *s)
{
    int64_t top = 0;
    if (api == RIG_SERVE_API_CHAT) {
        enum rig_status st = rig__read_bool(f, "logprobs", &s->logprobs);
        if (st == RIG_OK) st = rig__read_int(f, "top_logprobs", 0, RIG_SERVE_TOP_LOGPROBS_MAX,
                                             &top);
        if (st == RIG_OK && top > 0 && !s->logprobs)
            return rig__bad(f, "top_logprobs", "'%s' needs logprobs set to true%s", "");
        s->top_logprobs = (int32_t)top;
        return st;
    }
    if (api == RIG_SERVE_API_COMPLETION) {
        enum rig_status st = rig__read_int(f, "logprobs", 0, 5, &top);
        s->logprobs = rig__field(f, "logprobs") != NULL;
        s->top_logprobs = (int32_t)top;
        return st;
    }
    bool wanted = false;
    enum rig_status st = rig__read_bool(f, "return_logprob", &wanted);
    if (st == RIG_OK) st = rig__read_int(f, "top_logprobs_num", 0, RIG_SERVE_TOP_LOGPROBS_MAX,
                                         &top);
    s->logprobs = wanted;
    s->top_logprobs = wanted ? (int32_t)top : 0;
    return st;
}

/* Fields of the OpenAI routes that this server refuses rather than silently ignores. */
static enum rig_status rig__refuse_unsupported(const struct rig__fields *f)
{
    bool echo = false;
    int64_t best_of = 1;
    if (rig__read_bool(f, "echo", &echo) != RIG_OK) return RIG_E_INVALID;
    if (echo) return rig__bad(f, "echo", "'%s' is not supported%s", "");
    if (rig__read_int(f, "best_of", 1, 1, &best_of) != RIG_OK) return RIG_E_INVALID;
    if (rig__field(f, "suffix") != NULL)
        return rig__bad(f, "suffix", "'%s' is not supported%s", "");
    return RIG_OK;
}

/* stream, stream_options.include_usage (only with stream, as vLLM and OpenAI insist). */
static enum rig_status rig__read_stream(const struct rig__fields *f, struct rig_serve_params *p)
{
    if (rig__read_bool(f, "stream", &p->stream) != RIG_OK) return RIG_E_INVALID;
    const json_t *options = rig__field(f, "stream_options");
    if (options == NULL) return RIG_OK;
    if (!json_is_object(options))
        return rig__bad(f, "stream_options", "'%s' must be an object%s", "");
    if (!p->stream)
        return rig__bad(f, "stream_options", "'%s' is only allowed when stream is true%s", "");
    struct rig__fields o = {options, "stream_options.", f->error};
    return rig__read_bool(&o, "include_usage", &p->include_usage);
}

static enum rig_status rig__read_model(const struct rig__fields *f,
                                       const struct rig_serve_parse_limits *limits,
                                       struct rig_serve_params *p)
{
    const json_t *model = rig__field(f, "model");
    if (model == NULL) return RIG_OK;
    if (!json_is_string(model)) return rig__bad(f, "model", "'%s' must be a string%s", "");
    p->model = json_string_value(model);
    if (strcmp(p->model, limits->model_name) == 0) return RIG_OK;
    return rig_serve_error_set(f->error, 404, "invalid_request_error", "model_not_found",
                               "model", "The model '%.64s' does not exist; this server serves "
                               "'%.64s'", p->model, limits->model_name);
}

static enum rig_status rig__parse_openai(const struct rig__fields *f,
                                         const struct rig_serve_parse_limits *limits,
                                         struct rig_serve_params *p)
{
    struct rig_serve_sampling *s = &p->sampling;
    enum rig_status st = rig__read_model(f, limits, p);
    if (st == RIG_OK) st = rig__read_stream(f, p);
    if (st == RIG_OK) st = rig__refuse_unsupported(f);
    if (st == RIG_OK) st = rig__read_common(f, limits->vocab_size, s);
    if (st == RIG_OK) st = rig__read_n(f, limits->n_max, &p->n);
    if (st == RIG_OK) st = rig__read_logprobs(f, p->api, s);
    if (p->api == RIG_SERVE_API_CHAT) {
        s->max_tokens = -1;
        if (st == RIG_OK) st = rig__read_max_tokens(f, "max_tokens", &s->max_tokens);
        if (st == RIG_OK) st = rig__read_max_tokens(f, "max_completion_tokens", &s->max_tokens);
        if (st == RIG_OK) st = rig__read_chat_options(f, p);
        if (st == RIG_OK) st = rig__read_messages(f, p);
        return st;
    }
    s->max_tokens = 16; /* the legacy completions default, as OpenAI and SGLang */
    if (st == RIG_OK) st = rig__read_max_tokens(f, "max_tokens", &s->max_tokens);
    if (st == RIG_OK) st = rig__read_prompts(f, "prompt", limits->vocab_size, p);
    return st;
}

static enum rig_status rig__parse_generate(const struct rig__fields *f,
                                           const struct rig_serve_parse_limits *limits,
                                           struct rig_serve_params *p)
{
    bool has_text = rig__field(f, "text") != NULL, has_ids = rig__field(f, "input_ids") != NULL;
    if (has_text == has_ids)
        return rig__bad(f, "text", "give exactly one of '%s' and 'input_ids'%s", "");
    enum rig_status st = rig__read_prompts(f, has_text ? "text" : "input_ids",
                                           limits->vocab_size, p);
    if (st == RIG_OK) st = rig__read_bool(f, "stream", &p->stream);
    if (st == RIG_OK) st = rig__read_logprobs(f, p->api, &p->sampling);
    const json_t *sp = rig__field(f, "sampling_params");
    if (st == RIG_OK && sp != NULL && !json_is_object(sp))
        return rig__bad(f, "sampling_params", "'%s' must be an object%s", "");
    if (st != RIG_OK || sp == NULL) return st;
    struct rig__fields s = {sp, "sampling_params.", f->error};
    st = rig__read_common(&s, limits->vocab_size, &p->sampling);
    if (st == RIG_OK) st = rig__read_max_tokens(&s, "max_new_tokens", &p->sampling.max_tokens);
    if (st == RIG_OK) st = rig__read_n(&s, limits->n_max, &p->n);
    return st;
}

static void rig__defaults(enum rig_serve_api api, struct rig_serve_params *p)
{
    memset(p, 0, sizeof *p);
    p->api = api;
    p->n = 1;
    struct rig_serve_sampling *s = &p->sampling;
    s->temperature = 1.0f;
    s->top_p = 1.0f;
    s->top_k = -1;
    s->repetition_penalty = 1.0f;
    s->max_tokens = api == RIG_SERVE_API_GENERATE ? 128 : 16;
    s->skip_special_tokens = true;
}

enum rig_status rig_serve_params_parse(enum rig_serve_api api, const char *body, size_t len,
                                       const struct rig_serve_parse_limits *limits,
                                       struct rig_serve_params *out,
                                       struct rig_serve_error *error)
{
    RIG_ASSERT(limits->n_max >= 1 && limits->n_max <= RIG_SERVE_CHOICES_MAX);
    rig__defaults(api, out);
    json_error_t json_error;
    out->root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &json_error);
    if (out->root == NULL)
        return rig_serve_error_set(error, 400, "invalid_request_error", "invalid_json", NULL,
                                   "The body is not valid JSON: %s (line %d, column %d)",
                                   json_error.text, json_error.line, json_error.column);
    struct rig__fields f = {out->root, "", error};
    enum rig_status st = RIG_OK;
    if (!json_is_object(out->root))
        st = rig_serve_error_set(error, 400, "invalid_request_error", "invalid_json", NULL,
                                 "The body must be a JSON object");
    else if (api == RIG_SERVE_API_GENERATE) st = rig__parse_generate(&f, limits, out);
    else st = rig__parse_openai(&f, limits, out);
    if (st == RIG_OK && rig_serve_params_choices(out) > limits->n_max)
        st = rig__bad(&f, "n", "'%s' times the number of prompts exceeds the limit%s", "");
    if (st == RIG_E_NO_MEMORY)
        rig_serve_error_set(error, 500, "server_error", NULL, NULL, "out of memory");
    if (st != RIG_OK) rig_serve_params_free(out);
    return st;
}

void rig_serve_params_free(struct rig_serve_params *p)
{
    for (int32_t i = 0; i < p->owned_count; i++) free(p->owned[i]);
    free(p->messages);
    if (p->root != NULL) json_decref(p->root);
    enum rig_serve_api api = p->api;
    memset(p, 0, sizeof *p);
    p->api = api;
}

int32_t rig_serve_params_choices(const struct rig_serve_params *p)
{
    int32_t prompts = p->api == RIG_SERVE_API_CHAT ? 1 : p->prompt_count;
    return prompts * p->n;
}
