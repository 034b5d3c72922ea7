/* serve_impl.h — the server's private state, shared by the files of core/serve/ only.
 *
 * Stages and threads (one process):
 *   HTTP threads (libmicrohttpd's pool) parse and validate a body into a call, then hand it to
 *   the tokenizer stage and suspend the connection;
 *   tokenizer workers render the chat template, encode, check the context, reserve the call's
 *   engine slots and post its requests to the engine's inbox;
 *   the engine thread (rig_driver_run) steps; its observer writes each token into the slot of
 *   its request (a preallocated array, an atomic count) and lists the slot for the
 *   detokenizer at the end of the step — it never formats, locks a call or writes a socket;
 *   the detokenizer thread turns new tokens into text (streaming detokenizer, stop strings;
 *   a matched stop string aborts the request through the inbox) and resumes connections that
 *   have something to send;
 *   HTTP threads, resumed, format SSE events or the whole response from the call's text.
 *
 * A slot is one engine request (one choice of a call); its uid carries the slot index in the
 * low RIG__SLOT_BITS bits and a generation above, so a stale uid is recognised. A call owns its
 * slots from reservation until it is freed. A call is referenced by the HTTP connection (until
 * libmicrohttpd reports the request completed), by each of its requests in the engine (until
 * the detokenizer has seen its end) and, briefly, by the stage working on it; the last
 * reference frees it and returns its slots.
 *
 * n > 1 shares the prompt's prefix cache: a tokenizer worker posts only the first choice of
 * each prompt and holds the others (their submits in their slots); the engine thread posts
 * them when that first choice's first token comes (the engine has then put the prompt in the
 * radix cache, before the next inbox drain), or ends them as it ends (rejected: rejected the
 * same; aborted: aborted). It posts with the inbox's non-blocking submit; a full inbox puts
 * the choice on a retry list, posted again before the next step. A client's abort sets the
 * slot's `cancel` before queueing the inbox abort; the engine thread reads it after posting
 * and queues the abort again, so a held choice never outlives its call's abort.
 *
 * Locks, in order: calls_lock, then call->lock, then slots_lock / tokenize_lock / detok_lock
 * (never the other way). The engine thread takes only detok_lock, once per step, to hand over
 * the slots it touched.
 */
#ifndef RIG_SERVE_IMPL_H
#define RIG_SERVE_IMPL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "core/engine/engine.h"
#include "core/engine/driver.h"
#include "core/engine/inbox.h"
#include "core/serve/buffer.h"
#include "core/serve/metrics.h"
#include "core/serve/request.h"
#include "core/serve/serve.h"
#include "core/serve/stop.h"
#include "core/text/tokenizer.h"

#define RIG__SLOT_BITS 20
#define RIG__SLOTS_MAX (1 << RIG__SLOT_BITS)

/* One output token's logprobs (as the engine's on_logprobs gives them). */
struct rig__logprob {
    float logprob;
    int32_t top_count;
    int32_t top_ids[RIG_TOP_LOGPROBS_MAX];
    float top_logprobs[RIG_TOP_LOGPROBS_MAX];
};

/* One engine request. Fields above `produced` are written by a tokenizer worker before the
 * request is posted (the inbox's lock orders them before the engine thread reads them). */
struct rig__slot {
    uint64_t uid;                 /* the live request's uid; 0 when free */
    struct rig__call *call;       /* owner; NULL when free */
    int32_t choice;               /* index into call->choices */
    int32_t capacity;             /* tokens the arrays hold: the request's max_tokens */
    int32_t *tokens;              /* (capacity) output ids, written by the engine thread */
    struct rig__logprob *logprobs; /* (capacity) or NULL when none were asked for */
    /* n > 1 (stages.c): a prompt's later choices are held until its first choice's first
     * token, when its prompt is in the radix cache; then the engine thread posts them. */
    int32_t held_first;           /* a first choice: its first held choice's slot, -1 none
                                     (the engine thread clears it once it posted them) */
    int32_t held_next;            /* a held choice: the next one of its prompt, -1 none */
    struct rig_submit held;       /* a held choice: its submit (prompt in call->held_prompts) */
    _Atomic bool cancel;          /* aborted by the client: a held choice is never posted */
    _Atomic int32_t produced;     /* tokens written: release / acquire */
    _Atomic int32_t logprobs_ready; /* logprob entries written (on_logprobs follows on_token) */
    /* the end, written by the engine thread before `ended` (release) */
    enum rig_request_end end;
    int32_t input_len, cached_len, output_len;
    int64_t arrival_ns, first_token_ns, finish_ns;
    char message[160];            /* the rejection reason */
    _Atomic bool ended;
    /* engine thread only */
    int64_t last_token_ns;
    _Atomic bool queued;          /* listed for the detokenizer, not yet taken */
    int32_t free_next;            /* free list (slots_lock) */
};

/* A held choice the full inbox refused (engine thread): its submit, or (abort) the abort that
 * must follow it. By uid: a stale abort is harmless. */
struct rig__retry {
    uint64_t uid;
    bool abort;
};

/* One choice of a call: the detokenizer's state and the text not yet sent. */
struct rig__choice {
    int32_t slot;                 /* index into server->slots; -1 before reservation */
    int32_t index;                /* "index" in the response */
    int32_t prompt;               /* which prompt of the call */
    struct rig_tokenizer_stream detok;
    struct rig_serve_stop stop;
    struct rig_serve_buffer text; /* the text so far (stop strings cut) */
    size_t text_sent;             /* bytes of it already in an SSE event */
    int32_t consumed;             /* tokens taken from the slot */
    int32_t kept;                 /* tokens whose text is (or will be) emitted */
    int32_t logprobs_sent;        /* logprob entries already in a chunk */
    int32_t ids_sent;             /* /generate stream: output ids already in an event */
    struct rig_serve_buffer text_json; /* /generate stream: `text` JSON-escaped, unquoted,
                                          grown by each event's new text */
    size_t text_json_from;        /* bytes of `text` escaped into it (whole characters) */
    int64_t logprobs_offset;      /* characters of their tokens' text (completions' text_offset) */
    bool role_sent;               /* chat stream: the first chunk with the role went out */
    bool finished;                /* the detokenizer saw its end (or a stop string) */
    bool end_seen;                /* the engine's end was processed (its reference dropped) */
    bool finish_sent;
    enum rig_serve_finish finish;
    bool rejected;                /* the engine refused it (message in the slot) */
    int32_t stop_matched;         /* index of the stop string, -1 none */
    int32_t prompt_tokens, cached_tokens, completion_tokens;
    int64_t e2e_ns;
};

enum rig__call_state {
    RIG__CALL_RECEIVING = 0,      /* body arriving */
    RIG__CALL_TOKENIZING = 1,     /* queued for or in the tokenizer stage */
    RIG__CALL_RUNNING = 2,        /* requests posted */
    RIG__CALL_FAILED = 3,         /* `error` holds the answer */
};

struct rig__call {
    struct rig_serve *server;
    struct MHD_Connection *connection; /* NULL once libmicrohttpd completed it */
    pthread_mutex_t lock;
    _Atomic int32_t refs;
    enum rig__call_state state;
    int32_t route;                /* enum rig__route of http.c */
    char id[48];                  /* "chatcmpl-…", "cmpl-…", or /generate's rid */
    int64_t created;              /* unix seconds */
    struct rig_serve_buffer body;
    bool body_too_large;
    struct rig_serve_params params;
    struct rig_serve_error error;
    bool suspended;               /* the connection waits for a stage's resume */
    bool responded;               /* a response is queued */
    bool stream_over;             /* the last SSE event is in `out` */
    int32_t choice_count;
    struct rig__choice *choices;  /* (choice_count) */
    int32_t *prompt_lens;         /* (prompt_count) */
    struct rig_tokenizer_ids *held_prompts; /* (prompt_count) n > 1: held choices' prompts */
    int32_t held_prompt_count;
    struct rig_serve_buffer out;  /* SSE bytes not yet handed to libmicrohttpd */
    struct rig__call *prev, *next; /* the server's list of calls (calls_lock) */
    struct rig__call *queue_next; /* the tokenizer queue */
};

struct rig_serve {
    struct rig_serve_config config;
    struct rig_tokenizer *tokenizer;
    enum rig_chat_template chat_template;
    struct rig_engine *engine;
    struct rig_inbox *inbox;
    struct rig_serve_parse_limits limits;
    int32_t context_len;          /* the engine's max_seq_len */
    int64_t kv_tokens;            /* KV slots in the pool */
    struct rig_serve_metrics metrics;
    _Atomic bool ready;           /* model, KV pool and graphs are up: /health 200 */
    _Atomic bool stopping;
    _Atomic uint64_t call_seq;
    _Atomic int64_t calls_since_trim; /* calls created since the last malloc_trim */
    struct MHD_Daemon *daemon;
    /* slots */
    pthread_mutex_t slots_lock;
    struct rig__slot *slots;      /* (slot_count) */
    int32_t slot_count;
    int32_t slot_free;            /* head of the free list, -1 empty */
    int32_t slots_in_use;
    uint64_t generation;
    /* calls */
    pthread_mutex_t calls_lock;
    pthread_cond_t calls_gone;
    struct rig__call *calls;      /* live calls */
    int32_t call_count;
    /* tokenizer stage */
    pthread_mutex_t tokenize_lock;
    pthread_cond_t tokenize_wake;
    struct rig__call *tokenize_head, *tokenize_tail;
    int32_t tokenize_count;
    bool tokenize_stop;
    pthread_t tokenize_threads[RIG_SERVE_TOKENIZER_WORKERS_MAX];
    int32_t tokenize_started;
    /* detokenizer stage */
    pthread_mutex_t detok_lock;
    pthread_cond_t detok_wake;
    uint64_t *detok_pending;      /* (slot_count) uids handed over by the engine thread */
    int32_t detok_pending_count;
    uint64_t *detok_working;      /* (slot_count) the detokenizer's copy */
    uint64_t *engine_dirty;       /* (slot_count) engine thread: uids touched this step */
    int32_t engine_dirty_count;
    struct rig__retry *held_retry; /* (slot_count) engine thread: what the full inbox
                                      refused, posted again before the next step */
    int32_t held_retry_count;
    bool detok_stop;
    pthread_t detok_thread;
    bool detok_started;
    /* engine thread */
    pthread_t engine_thread;
    bool engine_started;
    pthread_mutex_t state_lock;
    pthread_cond_t state_cond;
    bool engine_up;               /* the engine exists (ready, or running down) */
    bool engine_done;             /* the engine thread returned */
    enum rig_status engine_status;
    char engine_error[256];
};

/* call.c */
struct rig__call *rig__call_create(struct rig_serve *server, struct MHD_Connection *connection,
                                   enum rig_serve_api api);
void rig__call_ref(struct rig__call *call);
/* Drops a reference; the last one frees the call and its slots. */
void rig__call_unref(struct rig__call *call);
/* Resumes the connection when it is suspended. Holds call->lock. */
void rig__call_wake(struct rig__call *call);
/* Fails the call with `error` (state FAILED) and wakes it. Takes call->lock. */
void rig__call_fail(struct rig__call *call, const struct rig_serve_error *error);
/* Queues an abort of every request of the call still in the engine. Holds call->lock. */
void rig__call_abort(struct rig__call *call);
bool rig__call_all_finished(const struct rig__call *call);
bool rig__call_has_output(const struct rig__call *call);

/* stages.c */
enum rig_status rig__stages_start(struct rig_serve *server);
/* Stops the tokenizer workers once they have emptied their queue. */
void rig__stages_stop_tokenizers(struct rig_serve *server);
/* Stops the tokenizer workers and the detokenizer. */
void rig__stages_stop(struct rig_serve *server);
/* Queues a parsed call for the tokenizer stage; false when the queue is full. */
bool rig__tokenize_post(struct rig_serve *server, struct rig__call *call);
/* The engine observer (made on the engine thread). */
struct rig_engine_observer rig__observer(struct rig_serve *server);
/* The driver's arrival source: nothing scheduled; before each step it posts the held choices
 * the full inbox refused; after each step it publishes the gauges and hands the touched slots
 * to the detokenizer. */
struct rig_arrival_source rig__arrivals(struct rig_serve *server);
/* Engine thread, once the driver returned: ends the held choices never posted as aborted. */
void rig__held_drop(struct rig_serve *server);

/* response.c */
/* Formats what the call's choices hold as SSE events into call->out (holds call->lock). */
enum rig_status rig__response_stream(struct rig__call *call);
/* The whole non-streamed response body (holds call->lock). */
enum rig_status rig__response_full(struct rig__call *call, struct rig_serve_buffer *out);
/* {"error": {...}} */
enum rig_status rig__response_error(const struct rig_serve_error *error,
                                    struct rig_serve_buffer *out);

/* http.c */
enum rig_status rig__http_start(struct rig_serve *server, char *error, size_t error_len);
void rig__http_stop(struct rig_serve *server);

#endif /* RIG_SERVE_IMPL_H */
