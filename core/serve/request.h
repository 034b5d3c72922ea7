/* request.h — one API request's JSON body, parsed and validated: OpenAI's chat and text
 * completions and SGLang's native /generate, turned into prompts and sampling parameters.
 *
 * Field names, types, ranges and defaults follow OpenAI's API reference (SGLang's where OpenAI
 * has no such field: top_k, min_p, repetition_penalty, stop_token_ids, ignore_eos,
 * chat_template_kwargs, the /generate body). Every client mistake is reported as an OpenAI
 * error (struct rig_serve_error: HTTP status, type, param, code, message) naming the field and
 * the reason; nothing in a body reaches an assertion. Unknown fields are ignored (as SGLang and
 * vLLM do); known fields this server cannot honour (echo, best_of > 1, suffix, response_format
 * other than text, tools with tool_choice required) are refused with their name.
 *
 * Ownership: rig_serve_params_parse keeps the parsed JSON (`root`) alive; prompt texts and stop
 * strings point into it. Message contents built from content parts and JSON re-encodings
 * (tool calls, tool definitions) are allocated and owned by the params. All freed by
 * rig_serve_params_free. Threads: any; a params value has one owner at a time.
 */
#ifndef RIG_SERVE_REQUEST_H
#define RIG_SERVE_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine/request.h"
#include "core/text/tokenizer.h"
#include "hal/status.h"

#define RIG_SERVE_STOP_MAX          4    /* stop strings per request (OpenAI's limit) */
#define RIG_SERVE_STOP_BYTES_MAX    256  /* bytes of one stop string */
#define RIG_SERVE_PROMPTS_MAX       64   /* prompts of one batched completion */
#define RIG_SERVE_CHOICES_MAX       64   /* prompts x n: engine requests of one API request */
#define RIG_SERVE_TOP_LOGPROBS_MAX  20   /* OpenAI's limit */
#define RIG_SERVE_MESSAGES_MAX      1024 /* messages of one chat */
#define RIG_SERVE_ERROR_MESSAGE_MAX 256

enum rig_serve_api {
    RIG_SERVE_API_CHAT = 0,       /* POST /v1/chat/completions */
    RIG_SERVE_API_COMPLETION = 1, /* POST /v1/completions */
    RIG_SERVE_API_GENERATE = 2,   /* POST /generate (SGLang native) */
};

/* An OpenAI error: {"error": {"message", "type", "param", "code"}} with an HTTP status. */
struct rig_serve_error {
    int32_t http_status;        /* 400, 401, 404, 405, 413, 503, ... */
    const char *type;           /* "invalid_request_error", "authentication_error", ... */
    const char *code;           /* "context_length_exceeded", ...; NULL: JSON null */
    char param[64];             /* the field at fault; "" → JSON null */
    char message[RIG_SERVE_ERROR_MESSAGE_MAX];
};

/* Fills `error` (status, type, code may be NULL, param may be NULL) and returns RIG_E_INVALID,
 * so that parsers can `return rig_serve_error_set(...)`. Can't fail. */
enum rig_status rig_serve_error_set(struct rig_serve_error *error, int32_t http_status,
                                    const char *type, const char *code, const char *param,
                                    const char *format, ...)
    __attribute__((format(printf, 6, 7)));

/* One prompt: text to tokenize, or token ids given by the client. */
struct rig_serve_prompt {
    const char *text;   /* UTF-8 (into `root`), or NULL */
    size_t text_len;    /* bytes */
    const json_t *ids;  /* JSON array of integers (into `root`), or NULL */
};

struct rig_serve_sampling {
    float temperature;          /* [0, 2]; 0 greedy. Default 1 (OpenAI), /generate 1 */
    float top_p;                /* (0, 1] */
    int32_t top_k;              /* -1 off, or >= 1 */
    float min_p;                /* [0, 1] */
    float presence_penalty;     /* [-2, 2] */
    float frequency_penalty;    /* [-2, 2] */
    float repetition_penalty;   /* (0, 2]; 1 off */
    int32_t max_tokens;         /* >= 0; -1: what the context leaves */
    bool ignore_eos;
    bool skip_special_tokens;   /* default true */
    bool has_seed;
    uint64_t seed;
    int32_t stop_token_ids[RIG_STOP_TOKENS_MAX]; /* (stop_token_count) */
    int32_t stop_token_count;
    const char *stop[RIG_SERVE_STOP_MAX];        /* (stop_count) into `root`, non-empty */
    size_t stop_len[RIG_SERVE_STOP_MAX];
    int32_t stop_count;
    bool logprobs;              /* return each token's logprob */
    int32_t top_logprobs;       /* [0, 20]: alternatives per token */
};

struct rig_serve_params {
    enum rig_serve_api api;
    json_t *root;               /* the body (owned) */
    bool stream;
    bool include_usage;         /* stream_options.include_usage */
    int32_t n;                  /* choices per prompt, [1, RIG_SERVE_CHOICES_MAX] */
    struct rig_serve_prompt prompts[RIG_SERVE_PROMPTS_MAX]; /* (prompt_count); chat: none */
    int32_t prompt_count;
    bool batched;               /* prompt given as a list: /generate answers with a list */
    struct rig_chat_message *messages; /* (message_count) chat only, allocated */
    size_t message_count;
    struct rig_chat_options chat;      /* add_generation_prompt, enable_thinking, tools_json */
    struct rig_serve_sampling sampling;
    const char *model;          /* as the client named it (into `root`), or NULL */
    char *owned[2 * RIG_SERVE_MESSAGES_MAX + 1]; /* (owned_count) allocated strings */
    int32_t owned_count;
};

/* What the parser checks against. */
struct rig_serve_parse_limits {
    const char *model_name;     /* the served model name: another `model` is 404 */
    int32_t vocab_size;         /* token ids must lie in [0, vocab_size) */
    int32_t n_max;              /* <= RIG_SERVE_CHOICES_MAX */
};

/* Parses and validates `len` bytes of `body` for `api`. On success fills `out` (free with
 * rig_serve_params_free) and returns RIG_OK. On a client error returns RIG_E_INVALID with
 * `error` filled (status 400 unless said otherwise: 404 for an unknown model) and `out` holding
 * nothing to free; RIG_E_NO_MEMORY when out of memory (error: 500). */
enum rig_status rig_serve_params_parse(enum rig_serve_api api, const char *body, size_t len,
                                       const struct rig_serve_parse_limits *limits,
                                       struct rig_serve_params *out,
                                       struct rig_serve_error *error);
/* Frees what `params` owns; a zeroed params is allowed. Can't fail. */
void rig_serve_params_free(struct rig_serve_params *params);

/* Engine requests this API request makes: prompts (1 for chat) times n. Can't fail. */
int32_t rig_serve_params_choices(const struct rig_serve_params *params);

#endif /* RIG_SERVE_REQUEST_H */
