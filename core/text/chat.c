/* chat.c — tokenizer_config.json (special tokens, the chat template) and chat templates
 * written in C. A template is recognised by the fingerprint (FNV-1a hash and length) of its
 * exact text, so a rendering is only claimed for templates whose logic is reproduced here line
 * by line; anything else is RIG_CHAT_TEMPLATE_UNKNOWN and callers fall back to ChatML
 * explicitly (docs/tokenizer.md). Each renderer follows its Jinja source statement by
 * statement; the comments quote the Jinja they implement.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/text/tokenizer_impl.h"

struct rig__known_template {
    uint64_t hash;
    size_t len;
    enum rig_chat_template kind;
};

static const struct rig__known_template rig__known_templates[] = {
    {0x2bfdb7aa9754484eull, 4116, RIG_CHAT_TEMPLATE_QWEN3}, /* Qwen3-0.6B ... Qwen3-32B */
    {0x0e60067a5537498eull, 389, RIG_CHAT_TEMPLATE_LLAMA3}, /* Meta-Llama-3-8B/70B-Instruct */
};

const char *rig_chat_template_name(enum rig_chat_template kind)
{
    switch (kind) {
    case RIG_CHAT_TEMPLATE_NONE: return "none";
    case RIG_CHAT_TEMPLATE_UNKNOWN: return "unknown";
    case RIG_CHAT_TEMPLATE_QWEN3: return "qwen3";
    case RIG_CHAT_TEMPLATE_LLAMA3: return "llama3";
    case RIG_CHAT_TEMPLATE_CHATML: return "chatml";
    }
    return "invalid";
}

enum rig_chat_template rig_tokenizer_chat_template(const struct rig_tokenizer *tok)
{
    return tok->chat_template;
}

static enum rig_chat_template rig__recognise(const char *text, size_t len)
{
    uint64_t hash = rig__tokenizer_hash(text, len);
    for (size_t i = 0; i < RIG_ARRAY_LEN(rig__known_templates); i++) {
        if (rig__known_templates[i].hash == hash && rig__known_templates[i].len == len)
            return rig__known_templates[i].kind;
    }
    return RIG_CHAT_TEMPLATE_UNKNOWN;
}

/* A special token given as "text" or as an AddedToken object {"content": "text", ...}. */
static enum rig_status rig__config_token(struct rig_tokenizer *tok, const json_t *config,
                                         const char *key, int32_t *id, char **text,
                                         struct rig__tokenizer_error error)
{
    const json_t *value = json_object_get(config, key);
    if (json_is_object(value)) value = json_object_get(value, "content");
    if (value == NULL || json_is_null(value)) return RIG_OK;
    if (!json_is_string(value))
        return rig__tokenizer_fail(error, RIG_E_PARSE, "tokenizer_config.%s: expected a string",
                                   key);
    *id = rig_tokenizer_token_id(tok, json_string_value(value));
    if (*id < 0)
        return rig__tokenizer_fail(error, RIG_E_PARSE, "tokenizer_config.%s: \"%s\" is not a token",
                                   key, json_string_value(value));
    if (text != NULL && (*text = strdup(json_string_value(value))) == NULL)
        return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory");
    return RIG_OK;
}

/* The template text: a string, or a list of {"name", "template"} of which "default" counts. */
static const json_t *rig__config_template(const json_t *config)
{
    const json_t *value = json_object_get(config, "chat_template");
    if (!json_is_array(value)) return json_is_string(value) ? value : NULL;
    size_t index;
    const json_t *entry;
    json_array_foreach((json_t *)value, index, entry)
    {
        const char *name = json_string_value(json_object_get(entry, "name"));
        if (name != NULL && strcmp(name, "default") == 0) return json_object_get(entry, "template");
    }
    return NULL;
}

enum rig_status rig__tokenizer_load_config(struct rig_tokenizer *tok, const char *path,
                                           struct rig__tokenizer_error error)
{
    char *data = NULL;
    size_t len = 0;
    enum rig_status status = rig__tokenizer_read_file(path, &data, &len, error);
    if (status != RIG_OK) return status;
    json_error_t parse_error;
    json_t *config = json_loadb(data, len, 0, &parse_error);
    free(data);
    if (config == NULL)
        return rig__tokenizer_fail(error, RIG_E_PARSE, "%s:%d:%d: %s", path, parse_error.line,
                                   parse_error.column, parse_error.text);
    if (!json_is_object(config))
        status = rig__tokenizer_fail(error, RIG_E_PARSE, "%s: expected an object", path);
    if (status == RIG_OK)
        status = rig__config_token(tok, config, "bos_token", &tok->specials.bos_id, &tok->bos_token,
                                   error);
    if (status == RIG_OK)
        status = rig__config_token(tok, config, "eos_token", &tok->specials.eos_id, &tok->eos_token,
                                   error);
    if (status == RIG_OK)
        status = rig__config_token(tok, config, "pad_token", &tok->specials.pad_id, NULL, error);
    const json_t *split = json_object_get(config, "split_special_tokens");
    if (status == RIG_OK && split != NULL && !json_is_boolean(split))
        status = rig__tokenizer_fail(error, RIG_E_PARSE, "tokenizer_config.split_special_tokens");
    tok->split_special_tokens = json_is_true(split);
    const json_t *template = rig__config_template(config);
    if (status == RIG_OK && template != NULL)
        tok->chat_template =
            rig__recognise(json_string_value(template), json_string_length(template));
    json_decref(config);
    return status;
}

/* ---- string helpers with Python's semantics -------------------------------------------- */

struct rig__span {
    const char *data;
    size_t len;
};

static struct rig__span rig__span_of(const char *text)
{
    return (struct rig__span){text, strlen(text)};
}

/* str.strip / lstrip / rstrip with a set of one byte ('\n'). */
static struct rig__span rig__strip_byte(struct rig__span s, char byte, bool left, bool right)
{
    while (left && s.len > 0 && s.data[0] == byte) {
        s.data++;
        s.len--;
    }
    while (right && s.len > 0 && s.data[s.len - 1] == byte)
        s.len--;
    return s;
}

/* Python's str.isspace for one code point (Jinja's `trim` is str.strip()). */
static bool rig__python_space(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

static uint32_t rig__decode_at(const char *s, size_t len, size_t at, size_t *width)
{
    const uint8_t *b = (const uint8_t *)s + at;
    size_t left = len - at;
    if (b[0] < 0x80 || left < 2) return *width = 1, b[0];
    if ((b[0] & 0xE0) == 0xC0) return *width = 2, ((b[0] & 0x1Fu) << 6) | (b[1] & 0x3Fu);
    if ((b[0] & 0xF0) == 0xE0 && left >= 3)
        return *width = 3, ((b[0] & 0x0Fu) << 12) | ((b[1] & 0x3Fu) << 6) | (b[2] & 0x3Fu);
    return *width = 1, b[0]; /* 4-byte characters are never Python whitespace */
}

static struct rig__span rig__python_strip(struct rig__span s)
{
    size_t width;
    while (s.len > 0 && rig__python_space(rig__decode_at(s.data, s.len, 0, &width))) {
        s.data += width;
        s.len -= width;
    }
    while (s.len > 0) {
        size_t at = s.len - 1;
        while (at > 0 && ((uint8_t)s.data[at] & 0xC0) == 0x80)
            at--;
        if (!rig__python_space(rig__decode_at(s.data, s.len, at, &width))) break;
        s.len = at;
    }
    return s;
}

/* First / last occurrence of `needle` in s, or NULL. */
static const char *rig__find(struct rig__span s, const char *needle, bool last)
{
    size_t n = strlen(needle);
    const char *found = NULL;
    for (size_t at = 0; at + n <= s.len; at++) {
        if (memcmp(s.data + at, needle, n) != 0) continue;
        found = s.data + at;
        if (!last) break;
    }
    return found;
}

static bool rig__starts_with(struct rig__span s, const char *prefix)
{
    size_t n = strlen(prefix);
    return s.len >= n && memcmp(s.data, prefix, n) == 0;
}

static bool rig__ends_with(struct rig__span s, const char *suffix)
{
    size_t n = strlen(suffix);
    return s.len >= n && memcmp(s.data + s.len - n, suffix, n) == 0;
}

/* Appends NULL-terminated list of spans. */
static enum rig_status rig__put(struct rig_tokenizer_text *out, const struct rig__span *parts,
                                size_t count, struct rig__tokenizer_error error)
{
    enum rig_status status = RIG_OK;
    for (size_t i = 0; i < count && status == RIG_OK; i++)
        status = rig__text_append(out, parts[i].data, parts[i].len, error);
    return status;
}

#define RIG__S(literal) ((struct rig__span){literal, sizeof(literal) - 1})
#define RIG__PUT(out, error, ...)                                                                  \
    rig__put((out), (const struct rig__span[]){__VA_ARGS__},                                       \
             sizeof((const struct rig__span[]){__VA_ARGS__}) / sizeof(struct rig__span), (error))

/* ---- Qwen3 ----------------------------------------------------------------------------- */

static bool rig__role_is(const struct rig_chat_message *message, const char *role)
{
    return strcmp(message->role, role) == 0;
}

/* {%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
 * and the reversed loop: the last user turn that is not a tool response. */
static size_t rig__qwen3_last_query(const struct rig_chat_message *messages, size_t count)
{
    for (size_t i = count; i-- > 0;) {
        struct rig__span content = rig__span_of(messages[i].content);
        if (rig__role_is(&messages[i], "user") && !(rig__starts_with(content, "<tool_response>") &&
                                                    rig__ends_with(content, "</tool_response>")))
            return i;
    }
    return count - 1;
}

/* {%- if message.tool_calls %}: one <tool_call> block per call; `content` is the template's
 * `content` variable (after the </think> split), whose truthiness decides the first newline. */
static enum rig_status rig__qwen3_tool_calls(const char *json_text, struct rig__span content,
                                             struct rig_tokenizer_text *out,
                                             struct rig__tokenizer_error error)
{
    if (json_text == NULL) return RIG_OK;
    json_t *calls = json_loads(json_text, JSON_DECODE_ANY, NULL);
    enum rig_status status = RIG_OK;
    if (!json_is_array(calls))
        status =
            rig__tokenizer_fail(error, RIG_E_INVALID, "tool_calls_json: expected a JSON array");
    size_t index;
    json_t *call;
    json_array_foreach(calls, index, call)
    {
        if (status != RIG_OK) break;
        const json_t *function = json_object_get(call, "function");
        if (json_is_object(function) && json_object_size(function) > 0) call = (json_t *)function;
        const json_t *name = json_object_get(call, "name");
        const json_t *arguments = json_object_get(call, "arguments");
        if (!json_is_object(call) || (name != NULL && !json_is_string(name)) || !arguments) {
            status = rig__tokenizer_fail(error, RIG_E_INVALID,
                                         "tool_calls_json[%zu]: needs a string "
                                         "\"name\" and \"arguments\"",
                                         index);
            break;
        }
        if (index > 0 || content.len > 0) status = RIG__PUT(out, error, RIG__S("\n"));
        if (status == RIG_OK)
            status = RIG__PUT(out, error, RIG__S("<tool_call>\n{\"name\": \""),
                              rig__span_of(name ? json_string_value(name) : ""),
                              RIG__S("\", \"arguments\": "));
        if (status == RIG_OK && json_is_string(arguments))
            status = rig__text_append(out, json_string_value(arguments),
                                      json_string_length(arguments), error);
        else if (status == RIG_OK)
            status = rig__python_json_dumps(arguments, out, error);
        if (status == RIG_OK) status = RIG__PUT(out, error, RIG__S("}\n</tool_call>"));
    }
    json_decref(calls);
    return status;
}

/* {%- if tools %}: the system turn listing the tools (with the system message, if first). */
static enum rig_status rig__qwen3_tools(const struct rig_chat_message *messages,
                                        const json_t *tools, struct rig_tokenizer_text *out,
                                        struct rig__tokenizer_error error)
{
    enum rig_status status = RIG__PUT(out, error, RIG__S("<|im_start|>system\n"));
    if (status == RIG_OK && rig__role_is(&messages[0], "system"))
        status = RIG__PUT(out, error, rig__span_of(messages[0].content), RIG__S("\n\n"));
    if (status == RIG_OK)
        status = RIG__PUT(out, error,
                          RIG__S("# Tools\n\nYou may call one or more functions to assist "
                                 "with the user query.\n\nYou are provided with function "
                                 "signatures within <tools></tools> XML tags:\n<tools>"));
    size_t index;
    const json_t *tool;
    json_array_foreach((json_t *)tools, index, tool)
    {
        if (status == RIG_OK) status = RIG__PUT(out, error, RIG__S("\n"));
        if (status == RIG_OK) status = rig__python_json_dumps(tool, out, error);
    }
    if (status == RIG_OK)
        status = RIG__PUT(out, error,
                          RIG__S("\n</tools>\n\nFor each function call, return a json "
                                 "object with function name and arguments within "
                                 "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
                                 "<function-name>, \"arguments\": <args-json-object>}\n"
                                 "</tool_call><|im_end|>\n"));
    return status;
}

static enum rig_status rig__qwen3_assistant(const struct rig_chat_message *message, bool last,
                                            bool after_query, struct rig_tokenizer_text *out,
                                            struct rig__tokenizer_error error)
{
    struct rig__span content = rig__span_of(message->content);
    struct rig__span reasoning = RIG__S("");
    const char *close = rig__find(content, "</think>", false);
    if (message->reasoning_content != NULL) {
        reasoning = rig__span_of(message->reasoning_content);
    } else if (close != NULL) {
        /* content.split('</think>')[-1].lstrip('\n') */
        const char *after = rig__find(content, "</think>", true) + strlen("</think>");
        struct rig__span tail = {after, (size_t)(content.data + content.len - after)};
        /* content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
        struct rig__span head = {content.data, (size_t)(close - content.data)};
        head = rig__strip_byte(head, '\n', false, true);
        const char *open = rig__find(head, "<think>", true);
        if (open != NULL) {
            open += strlen("<think>");
            head = (struct rig__span){open, (size_t)(head.data + head.len - open)};
        }
        reasoning = rig__strip_byte(head, '\n', true, false);
        content = rig__strip_byte(tail, '\n', true, false);
    }
    enum rig_status status;
    if (after_query && (last || reasoning.len > 0))
        status = RIG__PUT(out, error, RIG__S("<|im_start|>assistant\n<think>\n"),
                          rig__strip_byte(reasoning, '\n', true, true), RIG__S("\n</think>\n\n"),
                          rig__strip_byte(content, '\n', true, false));
    else
        status = RIG__PUT(out, error, RIG__S("<|im_start|>assistant\n"), content);
    if (status == RIG_OK)
        status = rig__qwen3_tool_calls(message->tool_calls_json, content, out, error);
    return status == RIG_OK ? RIG__PUT(out, error, RIG__S("<|im_end|>\n")) : status;
}

static enum rig_status rig__qwen3_tool(const struct rig_chat_message *messages, size_t count,
                                       size_t i, struct rig_tokenizer_text *out,
                                       struct rig__tokenizer_error error)
{
    enum rig_status status = RIG_OK;
    if (i == 0 || !rig__role_is(&messages[i - 1], "tool"))
        status = RIG__PUT(out, error, RIG__S("<|im_start|>user"));
    if (status == RIG_OK)
        status = RIG__PUT(out, error, RIG__S("\n<tool_response>\n"),
                          rig__span_of(messages[i].content), RIG__S("\n</tool_response>"));
    if (status == RIG_OK && (i + 1 == count || !rig__role_is(&messages[i + 1], "tool")))
        status = RIG__PUT(out, error, RIG__S("<|im_end|>\n"));
    return status;
}

static enum rig_status rig__render_qwen3(const struct rig_chat_message *messages, size_t count,
                                         const struct rig_chat_options *options,
                                         struct rig_tokenizer_text *out,
                                         struct rig__tokenizer_error error)
{
    enum rig_status status = RIG_OK;
    json_t *tools = NULL;
    if (options->tools_json != NULL) {
        tools = json_loads(options->tools_json, JSON_DECODE_ANY, NULL);
        if (!json_is_array(tools)) {
            json_decref(tools);
            return rig__tokenizer_fail(error, RIG_E_INVALID, "tools_json: expected a JSON array");
        }
    }
    if (json_array_size(tools) > 0) /* {%- if tools %}: an empty list is false */
        status = rig__qwen3_tools(messages, tools, out, error);
    else if (rig__role_is(&messages[0], "system"))
        status = RIG__PUT(out, error, RIG__S("<|im_start|>system\n"),
                          rig__span_of(messages[0].content), RIG__S("<|im_end|>\n"));
    json_decref(tools);
    size_t last_query = rig__qwen3_last_query(messages, count);
    for (size_t i = 0; i < count && status == RIG_OK; i++) {
        const struct rig_chat_message *message = &messages[i];
        if (rig__role_is(message, "user") || (rig__role_is(message, "system") && i > 0))
            status = RIG__PUT(out, error, RIG__S("<|im_start|>"), rig__span_of(message->role),
                              RIG__S("\n"), rig__span_of(message->content), RIG__S("<|im_end|>\n"));
        else if (rig__role_is(message, "assistant"))
            status = rig__qwen3_assistant(message, i + 1 == count, i > last_query, out, error);
        else if (rig__role_is(message, "tool"))
            status = rig__qwen3_tool(messages, count, i, out, error);
    }
    if (status == RIG_OK && options->add_generation_prompt) {
        status = RIG__PUT(out, error, RIG__S("<|im_start|>assistant\n"));
        if (status == RIG_OK && !options->enable_thinking)
            status = RIG__PUT(out, error, RIG__S("<think>\n\n</think>\n\n"));
    }
    return status;
}

/* ---- Llama-3 and ChatML ---------------------------------------------------------------- */

static enum rig_status rig__render_llama3(const struct rig_tokenizer *tok,
                                          const struct rig_chat_message *messages, size_t count,
                                          const struct rig_chat_options *options,
                                          struct rig_tokenizer_text *out,
                                          struct rig__tokenizer_error error)
{
    if (tok->bos_token == NULL)
        return rig__tokenizer_fail(error, RIG_E_INVALID, "llama3 chat template: no bos_token");
    enum rig_status status = RIG__PUT(out, error, rig__span_of(tok->bos_token));
    for (size_t i = 0; i < count && status == RIG_OK; i++)
        status =
            RIG__PUT(out, error, RIG__S("<|start_header_id|>"), rig__span_of(messages[i].role),
                     RIG__S("<|end_header_id|>\n\n"),
                     rig__python_strip(rig__span_of(messages[i].content)), RIG__S("<|eot_id|>"));
    if (status == RIG_OK && options->add_generation_prompt)
        status = RIG__PUT(out, error, RIG__S("<|start_header_id|>assistant<|end_header_id|>\n\n"));
    return status;
}

static enum rig_status rig__render_chatml(const struct rig_chat_message *messages, size_t count,
                                          const struct rig_chat_options *options,
                                          struct rig_tokenizer_text *out,
                                          struct rig__tokenizer_error error)
{
    enum rig_status status = RIG_OK;
    for (size_t i = 0; i < count && status == RIG_OK; i++)
        status = RIG__PUT(out, error, RIG__S("<|im_start|>"), rig__span_of(messages[i].role),
                          RIG__S("\n"), rig__span_of(messages[i].content), RIG__S("<|im_end|>\n"));
    if (status == RIG_OK && options->add_generation_prompt)
        status = RIG__PUT(out, error, RIG__S("<|im_start|>assistant\n"));
    return status;
}

enum rig_status rig_tokenizer_chat_render(const struct rig_tokenizer *tok,
                                          enum rig_chat_template kind,
                                          const struct rig_chat_message *messages, size_t count,
                                          const struct rig_chat_options *options,
                                          struct rig_tokenizer_text *out, char *error,
                                          size_t error_len)
{
    RIG_ASSERT(tok != NULL && options != NULL && out != NULL);
    struct rig__tokenizer_error sink = {error, error_len};
    if (count == 0 || messages == NULL)
        return rig__tokenizer_fail(sink, RIG_E_INVALID, "chat: no messages");
    for (size_t i = 0; i < count; i++) {
        if (messages[i].role == NULL || messages[i].content == NULL)
            return rig__tokenizer_fail(sink, RIG_E_INVALID,
                                       "chat: message %zu has no role or "
                                       "content",
                                       i);
    }
    size_t len_before = out->len;
    enum rig_status status;
    switch (kind) {
    case RIG_CHAT_TEMPLATE_QWEN3:
        status = rig__render_qwen3(messages, count, options, out, sink);
        break;
    case RIG_CHAT_TEMPLATE_LLAMA3:
        status = rig__render_llama3(tok, messages, count, options, out, sink);
        break;
    case RIG_CHAT_TEMPLATE_CHATML:
        status = rig__render_chatml(messages, count, options, out, sink);
        break;
    default:
        return rig__tokenizer_fail(sink, RIG_E_UNSUPPORTED,
                                   "chat template \"%s\" cannot be rendered; "
                                   "use the chatml fallback",
                                   rig_chat_template_name(kind));
    }
    if (status != RIG_OK && out->data != NULL) {
        out->len = len_before;
        out->data[out->len] = '\0';
    }
    return status;
}
