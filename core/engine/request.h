/* request.h — one generation request's lifecycle, and the fixed pool requests live in.
 *
 * States (docs/engine.md): PENDING (queued, no KV) → CHUNKED (part of the prompt prefilled, the
 * rest waits at the head of the prefill queue) → RUNNING (decoding) → FINISHED | ABORTED.
 * A request may also be REJECTED at submission (it can never fit) and never enter the queue.
 *
 * Lengths follow Mini-SGLang's Req: positions [0, cached_len) have their K/V in the pool (or
 * being written by a launched batch); [cached_len, device_len) are the tokens the next
 * forward computes (extend_len = device_len − cached_len); max_device_len = input_len +
 * max_tokens. After a final prefill chunk or a decode is launched, cached_len = device_len
 * and device_len grows by one (the token being sampled is the next input). The request is
 * done when output_len reaches max_tokens, on EOS (unless ignore_eos), a stop token, or the
 * context limit. The last sampled token never gets K/V: a 16-token prompt with 16 output
 * tokens computes K/V for 31 positions.
 *
 * Resources: a page-table row (table_idx) and a radix handle (the locked cached prefix) are
 * held from admission until release. Release waits until no launched batch that includes
 * the request is still in flight (`inflight` == 0), so a request finished by batch N−1 is
 * never freed while an overlapped batch N still reads its row (a defect of the Python
 * original).
 *
 * Pool: `requests_max` request slots, each with token storage for max_seq_len tokens and
 * per-output-token times, all allocated at start-up; uids are found through a hash map.
 * Threads: the scheduler thread only.
 */
#ifndef RIG_REQUEST_H
#define RIG_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/cache/keymap.h"
#include "core/engine/cache/radix.h"
#include "hal/status.h"

#define RIG_STOP_TOKENS_MAX 8
#define RIG_TOP_LOGPROBS_MAX 20 /* most top_logprobs a request may ask for (OpenAI's limit) */

enum rig_request_state {
    RIG_REQUEST_FREE = 0, /* pool slot not in use */
    RIG_REQUEST_PENDING = 1,
    RIG_REQUEST_CHUNKED = 2,
    RIG_REQUEST_RUNNING = 3,
    RIG_REQUEST_FINISHED = 4,
    RIG_REQUEST_ABORTED = 5,
};

#define RIG_REQUEST_END_MAP(X)                                                             \
    X(NONE, "none")                                                                        \
    X(LENGTH, "length")         /* max_tokens reached */                                   \
    X(EOS, "eos")               /* an end-of-sequence token of the model */                \
    X(STOP_TOKEN, "stop_token") /* one of the request's stop token ids */                  \
    X(CONTEXT, "context")       /* the context limit (max_seq_len) reached */              \
    X(ABORT, "abort")           /* aborted by the client */                                \
    X(REJECTED, "rejected")     /* could never fit; see the rejection message */

enum rig_request_end {
#define RIG__END_ENUM(name, text) RIG_END_##name,
    RIG_REQUEST_END_MAP(RIG__END_ENUM)
#undef RIG__END_ENUM
        RIG_END_COUNT
};

/* "length", "eos", ...; "?" outside the enum. Can't fail. */
const char *rig_request_end_name(enum rig_request_end reason);
const char *rig_request_state_name(enum rig_request_state state);

struct rig_sampling_params {
    float temperature;   /* <= 0: greedy */
    int32_t top_k;       /* <= 0: no top-k cut */
    float top_p;         /* 1: no nucleus cut */
    int32_t max_tokens;  /* output tokens at most; 0 = as many as the context allows */
    bool ignore_eos;
    bool has_seed;       /* seed below is explicit; else derived from engine seed and uid */
    uint64_t seed;
    int32_t stop_token_ids[RIG_STOP_TOKENS_MAX];
    int32_t stop_token_count;
    /* Extensions (OpenAI / SGLang semantics, see hal/ops.h for the exact formulas). A request
     * with every one of them at its default takes the plain sampling path. */
    float min_p;              /* [0, 1]; 0: no cut. Keeps tokens with p >= min_p * p_max */
    float presence_penalty;   /* [-2, 2]; 0: none. Over the generated tokens */
    float frequency_penalty;  /* [-2, 2]; 0: none. Times each generated token's count */
    float repetition_penalty; /* (0, 2]; 1: none. Over prompt + generated tokens (HF) */
    int32_t logprobs;         /* [-1, 20]: top-N alternatives wanted; -1: no logprobs */
};

/* Greedy, max_tokens 16, no stop tokens, no extensions (min_p 0, presence and frequency
 * penalties 0, repetition penalty 1, logprobs -1): a convenient starting point. Can't fail. */
struct rig_sampling_params rig_sampling_default(void);

struct rig_request {
    uint64_t uid;
    enum rig_request_state state;
    enum rig_request_end finish_reason;
    struct rig_sampling_params sampling;
    uint64_t sample_seed;     /* per-request sampling seed */
    int32_t *tokens;          /* (max_seq_len) the prompt, then the output tokens */
    int64_t *token_times_ns;  /* (max_seq_len) host time each output token was processed */
    int32_t input_len;
    int32_t output_len;       /* output tokens processed so far */
    int32_t cached_len;
    int32_t device_len;
    int32_t max_device_len;   /* input_len + max_tokens */
    int32_t alloc_len;        /* KV slots allocated in the row: positions [0, alloc_len) */
    int32_t prompt_cached;    /* prefix length the radix cache matched at admission */
    int32_t synced_len;       /* page-table positions [0, synced_len) sent to the devices */
    int32_t tokens_synced;    /* token-pool positions [0, tokens_synced) sent (prompt only) */
    int32_t table_idx;        /* page-table row; -1 when none */
    struct rig_radix_handle handle; /* locked cached prefix (valid while has_handle) */
    bool has_handle;
    int32_t inflight;         /* launched batches including this request not yet processed */
    bool released;            /* row and pages given back (exactly once) */
    int64_t admit_seq;        /* admission order: the decode order */
    int32_t slot;             /* index in the pool */
    int64_t arrival_ns;
    int64_t first_scheduled_ns; /* -1 until first scheduled */
    int64_t first_token_ns;     /* -1 until the first token */
    int64_t finish_ns;          /* -1 until finished or aborted */
    int64_t first_step;         /* first batch that computed its tokens; -1 until then */
    int64_t last_step;          /* batch that produced its newest token; -1 until then */
};

static inline int32_t rig_request_extend_len(const struct rig_request *r)
{
    return r->device_len - r->cached_len;
}
/* Tokens the request may still add to the KV cache beyond what is allocated. */
static inline int32_t rig_request_remain_len(const struct rig_request *r)
{
    return r->max_device_len - r->device_len;
}
/* KV slots the request may still allocate, in whole pages: its row is allocated page by page
 * up to max_device_len, and [0, alloc_len) rounded up to a page is already held. This is what
 * admission must keep available for it (a partial page costs a whole one). */
static inline int64_t rig_request_unallocated(const struct rig_request *r, int32_t page_size)
{
    int64_t end = ((int64_t)r->max_device_len + page_size - 1) / page_size * page_size;
    int64_t have = ((int64_t)r->alloc_len + page_size - 1) / page_size * page_size;
    return end - have;
}
static inline bool rig_request_live(const struct rig_request *r)
{
    return r->state >= RIG_REQUEST_PENDING && r->state <= RIG_REQUEST_RUNNING;
}

struct rig_request_pool {
    int32_t requests_max;
    int32_t max_seq_len;
    struct rig_request *requests; /* (requests_max) */
    int32_t *token_storage;       /* (requests_max, max_seq_len) */
    int64_t *time_storage;        /* (requests_max, max_seq_len) */
    int32_t *free_slots;          /* (requests_max) stack */
    int32_t free_count;
    struct rig_keymap by_uid;     /* uid -> slot */
};

/* Allocates the pool. RIG_E_INVALID for non-positive sizes, RIG_E_NO_MEMORY otherwise. */
enum rig_status rig_request_pool_init(struct rig_request_pool *pool, int32_t requests_max,
                                      int32_t max_seq_len);
void rig_request_pool_free(struct rig_request_pool *pool);

/* Takes a slot for `uid` and copies the prompt. RIG_E_CAPACITY when the pool is full,
 * RIG_E_INVALID when the uid is in use or the prompt is empty or longer than max_seq_len;
 * nothing changes on error. The request starts PENDING with all lengths zero except
 * input_len. */
enum rig_status rig_request_pool_add(struct rig_request_pool *pool, uint64_t uid,
                                     const int32_t *prompt, int32_t prompt_len,
                                     struct rig_request **out);
/* Returns the slot to the pool; the request must have released its resources. */
void rig_request_pool_remove(struct rig_request_pool *pool, struct rig_request *request);
/* The live request with `uid`, or NULL. */
struct rig_request *rig_request_pool_find(const struct rig_request_pool *pool, uint64_t uid);

#endif /* RIG_REQUEST_H */
