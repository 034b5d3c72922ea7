/* batch.h — one forward pass as the scheduler hands it to the model (docs/architecture.md §2 steps
 * 7–12).
 *
 * The scheduler (core/engine/sched/) prepares a batch: it allocates KV slots (`out_loc`), writes
 * the page table rows, gathers the input token ids from the token pool, and uploads the per-token
 * and per-request metadata below into device buffers it owns. The model (core/model/) reads them,
 * runs embedding → layers → final norm → LM head on the last position of each request
 * → sampling, and writes one token per request into `out_tokens`. The scheduler then scatters
 * the tokens into the token pool and downloads them.
 *
 * Padding (CUDA graphs): a decode batch of R requests may be padded to R' >= R (the graph's
 * size); padded requests point at the dummy table row and the dummy KV slot, and their tokens
 * are ignored. T' and R' below are the padded sizes; num_tokens / num_requests the real ones.
 *
 * Sampling extensions (min_p, penalties, logprobs): their tensors are absent (data NULL) in a
 * batch where no request uses them — the plain sampling path, graphs included — and such a
 * batch always runs eagerly.
 *
 * Ownership: the tensors are views into the scheduler's buffers; the model must not keep
 * them past the call. The batch struct itself lives on the host.
 */
#ifndef RIG_BATCH_H
#define RIG_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "hal/tensor.h"

enum rig_batch_phase {
    RIG_BATCH_PREFILL = 0, /* new tokens of pending/chunked requests (cached prefix allowed) */
    RIG_BATCH_DECODE = 1,  /* one token per running request */
    RIG_BATCH_MIXED = 2,   /* decode tokens and a prefill chunk together (policy "mixed") */
};

struct rig_forward_batch {
    enum rig_batch_phase phase;
    int32_t num_requests;    /* R: real requests */
    int32_t num_tokens;      /* T: real tokens, the sum of extend lengths */
    int32_t padded_requests; /* R' >= R */
    int32_t padded_tokens;   /* T' >= T (decode: T' = R') */
    int32_t max_q_len;       /* longest extend length in the batch (kernel launch shape) */
    int32_t max_kv_len;      /* longest kv_len in the batch */
    bool sample;             /* false for a non-final prefill chunk of every request: no
                                request in the batch produces a token; the model may skip
                                the LM head. Per-request: see `sample_mask`. */
    bool local_only;         /* true: every collective is left out, so the outputs are wrong
                                at TP > 1 — only the engine's start-up warm forward on a GPU
                                (core/engine/ranks/launch.c), whose kernels then meet their
                                first launch with no collective in flight on the device */

    /* per token, device i32 */
    struct rig_tensor input_ids; /* [T'] token ids */
    struct rig_tensor positions; /* [T'] position of each token in its request */
    struct rig_tensor out_loc;   /* [T'] KV slot each token's K/V is stored at */

    /* per request, device */
    struct rig_tensor table_idx; /* [R'] i32 page-table row */
    struct rig_tensor cu_q;      /* [R' + 1] i32 prefix sums of extend lengths */
    struct rig_tensor kv_len;    /* [R'] i32 cached + new length */
    struct rig_tensor last_idx;  /* [R'] i32 row in the batch of each request's last token */

    /* sampling parameters per request, device */
    struct rig_tensor temperature; /* [R'] f32 */
    struct rig_tensor top_k;       /* [R'] i32 */
    struct rig_tensor top_p;       /* [R'] f32 */
    struct rig_tensor seed;        /* [R'] i64 per-request sampling seed */
    struct rig_tensor sample_pos;  /* [R'] i32 index of the output token being sampled */
    struct rig_tensor min_p;       /* [R'] f32, or absent */
    struct rig_tensor repetition;  /* [R'] f32, or absent (then so are the two below) */
    struct rig_tensor frequency;   /* [R'] f32 */
    struct rig_tensor presence;    /* [R'] f32 */
    struct rig_tensor token_pool;  /* [rows, L] i32 prompts + outputs (for the penalties) */

    /* shared state, device */
    struct rig_tensor page_table; /* [rows, L] i32, token-granular (hal/ops.h) */

    /* output, device */
    struct rig_tensor out_tokens; /* [R'] i32 one sampled token per request */
    struct rig_tensor out_checked; /* [R'] i32 out_tokens, -1 where logits were not finite */
    struct rig_tensor out_logprob;      /* [R'] f32 the sampled token's, or absent */
    struct rig_tensor out_top_ids;      /* [R', N] i32 most likely first, or absent */
    struct rig_tensor out_top_logprobs; /* [R', N] f32, or absent */
};

#endif /* RIG_BATCH_H */
