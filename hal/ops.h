/* ops.h — the model's operations as plain parameter structs, one per op kind.
 *
 * Every op a backend runs is a `struct rig_op`: a kind and the parameters of that kind. Ops
 * are values (tensors are descriptors of device memory), so the simulator records them for
 * graph capture and replays them, and the cost model reads shapes off them. Lengths that
 * change from step to step (per-request KV lengths, query offsets) live in device tensors,
 * never in host scalars, so a captured graph stays valid when they change.
 *
 * Conventions for all ops (checked by the dispatch layer, hal/hal.c):
 *  - T = tokens in the batch, R = requests, H = hidden size, D = head dim,
 *    Hq / Hk = query / KV heads (Hq % Hk == 0: GQA), S = KV slots (pages × page size),
 *    V = vocabulary rows held by this rank;
 *  - activations and weights are bf16, math is fp32, results are rounded to bf16 when stored
 *    as bf16 (the simulator rounds exactly where the GPU stores);
 *  - index and length tensors are i32; the innermost dimension of every tensor is contiguous.
 *
 * KV cache layout: per layer k_cache and v_cache of shape [S, Hk, D]. The page table is
 * token-granular, as SGLang's req_to_token: page_table[row, pos] is the KV slot of token
 * `pos` of the request in table row `row`. The page size only changes how slots are
 * allocated (in runs of page_size), never how kernels address them.
 */
#ifndef RIG_OPS_H
#define RIG_OPS_H

#include "hal/tensor.h"

struct rig_comm;

#define RIG_OP_MAP(X)                                                                      \
    X(EMBEDDING, embedding)                                                                \
    X(RMS_NORM, rms_norm)                                                                  \
    X(ADD_RMS_NORM, add_rms_norm)                                                          \
    X(GEMM, gemm)                                                                          \
    X(HEAD_RMS_NORM, head_rms_norm)                                                        \
    X(ROPE, rope)                                                                          \
    X(STORE_KV, store_kv)                                                                  \
    X(QK_NORM_ROPE_STORE, qk_norm_rope_store)                                              \
    X(ATTENTION_PREFILL, attention_prefill)                                                \
    X(ATTENTION_DECODE, attention_decode)                                                  \
    X(SILU_MUL, silu_mul)                                                                  \
    X(GATHER_ROWS, gather_rows)                                                            \
    X(INDEX_GATHER, index_gather)                                                          \
    X(INDEX_SCATTER, index_scatter)                                                        \
    X(SAMPLE, sample)                                                                      \
    X(COPY, copy)                                                                          \
    X(ALL_REDUCE, all_reduce)                                                              \
    X(ALL_GATHER, all_gather)                                                              \
    X(PENALIZE, penalize)                                                                  \
    X(LOGPROBS, logprobs)                                                                  \
    X(ATTENTION_DECODE_STORE, attention_decode_store)

enum rig_op_kind {
#define RIG__OP_ENUM(upper, lower) RIG_OP_##upper,
    RIG_OP_MAP(RIG__OP_ENUM)
#undef RIG__OP_ENUM
        RIG_OP_COUNT
};

/* out[t, :] = table[ids[t] - vocab_start, :] when vocab_start <= ids[t] < vocab_start + V,
 * else zeros (the other TP ranks hold that row; an all-reduce sums the shards). */
struct rig_op_embedding {
    struct rig_tensor out;   /* [T, H] bf16 */
    struct rig_tensor table; /* [V, H] bf16 */
    struct rig_tensor ids;   /* [T] i32 */
    int64_t vocab_start;     /* first vocabulary id held by this shard */
};

/* out = bf16(weight * bf16(x / sqrt(mean(x^2) + eps))), row by row, as HF's RMSNorm. */
struct rig_op_rms_norm {
    struct rig_tensor out;    /* [T, H] bf16 */
    struct rig_tensor in;     /* [T, H] bf16 */
    struct rig_tensor weight; /* [H] bf16 */
    float eps;
};

/* residual = bf16(residual + in); out = rms_norm(residual). `out` may alias `in`. */
struct rig_op_add_rms_norm {
    struct rig_tensor out;      /* [T, H] bf16 */
    struct rig_tensor residual; /* [T, H] bf16, read and written */
    struct rig_tensor in;       /* [T, H] bf16 */
    struct rig_tensor weight;   /* [H] bf16 */
    float eps;
};

/* What a GEMM does to its left operand before the product (rig_op_gemm). */
enum rig_gemm_prologue {
    RIG_GEMM_PROLOGUE_NONE = 0,     /* the operand is a */
    RIG_GEMM_PROLOGUE_RMS_NORM = 1, /* the operand is rms_norm(a) with norm_weight and eps */
    RIG_GEMM_PROLOGUE_SILU_MUL = 2, /* a is [M, 2K] = [gate | up]; the operand is silu_mul(a) */
};
#define RIG_GEMM_PROLOGUES 3

/* out[m, n] = sum_k x[m, k] * b[n, k] (+ bias[n]), fp32 accumulation, where x is the left
 * operand: `a` itself, or what the prologue makes of it. b is a weight in the Hugging Face
 * layout [out_features, in_features]. out is bf16 or f32.
 *
 * The fused forms. A decode step of a few rows is bound by per-kernel latency, not bytes, so
 * the model lets the element-wise ops beside a GEMM ride on it instead of being nodes of their
 * own (core/model/model.c, docs/architecture.md):
 *  - a prologue computes x from `a` exactly as the op it replaces does, rounding where it
 *    rounds (rig_op_rms_norm, rig_op_silu_mul), stores x into `operand` and multiplies it;
 *  - `accumulate` adds the product into `out` as add_rms_norm adds into its residual:
 *    out = bf16(out + bf16(sum)); bf16 out, no bias.
 * So a fused GEMM gives the bits of the ops it stands for, on every backend. `operand` and
 * `out` must not overlap `a`, `b` or each other. All fields past `bias` zero: a plain GEMM. */
struct rig_op_gemm {
    struct rig_tensor out;  /* [M, N] bf16 | f32; read too with accumulate */
    struct rig_tensor a;    /* [M, K] bf16; [M, 2K] with SILU_MUL */
    struct rig_tensor b;    /* [N, K] bf16 */
    struct rig_tensor bias; /* [N] bf16, or absent */
    enum rig_gemm_prologue prologue;
    struct rig_tensor operand;     /* [M, K] bf16 with a prologue: x, written; else absent */
    struct rig_tensor norm_weight; /* [K] bf16, RMS_NORM only */
    float eps;                     /* RMS_NORM only: > 0 */
    bool accumulate;
};

/* K of a validated GEMM: the depth of its product (a's width, half of it with SILU_MUL). */
static inline int64_t rig_gemm_depth(const struct rig_op_gemm *p)
{
    return p->prologue == RIG_GEMM_PROLOGUE_SILU_MUL ? p->a.shape[1] / 2 : p->a.shape[1];
}

/* Per-head RMSNorm in place (Qwen3's q_norm / k_norm): each D-vector is normalised. */
struct rig_op_head_rms_norm {
    struct rig_tensor x;      /* [T, heads, D] bf16, read and written */
    struct rig_tensor weight; /* [D] bf16 */
    float eps;
};

enum rig_rope_scaling {
    RIG_ROPE_SCALING_NONE = 0,
    RIG_ROPE_SCALING_LLAMA3 = 1,
};

/* Rotary embedding parameters (HF `rope_theta` and `rope_scaling`). */
struct rig_rope_params {
    float theta;
    enum rig_rope_scaling scaling;
    float factor;                     /* llama3 */
    float low_freq_factor;            /* llama3 */
    float high_freq_factor;           /* llama3 */
    int32_t original_max_position;    /* llama3: original_max_position_embeddings */
};

/* Neox-style (rotate-half) RoPE in place on q and k over the whole head dim D. Inverse
 * frequencies are computed in fp32 from `params` (llama3 scaling applied to them). */
struct rig_op_rope {
    struct rig_tensor q;         /* [T, Hq, D] bf16, read and written */
    struct rig_tensor k;         /* [T, Hk, D] bf16, read and written */
    struct rig_tensor positions; /* [T] i32 */
    struct rig_rope_params params;
};

/* k_cache[out_loc[t]] = k[t]; v_cache[out_loc[t]] = v[t]. */
struct rig_op_store_kv {
    struct rig_tensor k_cache; /* [S, Hk, D] bf16 */
    struct rig_tensor v_cache; /* [S, Hk, D] bf16 */
    struct rig_tensor k;       /* [T, Hk, D] bf16 */
    struct rig_tensor v;       /* [T, Hk, D] bf16 */
    struct rig_tensor out_loc; /* [T] i32 slot indices */
};

/* head_rms_norm(q, q_norm), head_rms_norm(k, k_norm), rope(q, k), store_kv(k, v) as one op,
 * with exactly their semantics and rounding points: for each token t,
 *   q[t, h] = rope(bf16(q_norm * bf16(q[t, h] / rms)))   for every query head, in place;
 *   k[t, h] likewise with k_norm, in place;
 *   k_cache[out_loc[t], h] = k[t, h] (normed and rotated), v_cache[out_loc[t], h] = v[t, h].
 * Without norm weights (q_norm and k_norm both absent: Llama, Qwen2) it is rope + store_kv.
 * q, k and v are usually strided views of the fused QKV rows and must not overlap each other
 * or the caches. One kernel instead of four: a decode step is launch bound at small batches. */
struct rig_op_qk_norm_rope_store {
    struct rig_tensor q;         /* [T, Hq, D] bf16, read and written */
    struct rig_tensor k;         /* [T, Hk, D] bf16, read and written */
    struct rig_tensor v;         /* [T, Hk, D] bf16 */
    struct rig_tensor k_cache;   /* [S, Hk, D] bf16 */
    struct rig_tensor v_cache;   /* [S, Hk, D] bf16 */
    struct rig_tensor q_norm;    /* [D] bf16, or absent (then k_norm is absent too) */
    struct rig_tensor k_norm;    /* [D] bf16, or absent */
    struct rig_tensor positions; /* [T] i32 */
    struct rig_tensor out_loc;   /* [T] i32 slot indices */
    float eps;                   /* of the norms; unused without them */
    struct rig_rope_params params;
};

/* Causal attention of new tokens over a cached prefix plus themselves. Request r owns query
 * rows cu_q[r] .. cu_q[r+1]-1; its KV length is kv_len[r] (cached + new), so query row i of
 * it sits at position kv_len[r] - q_len + i and attends to positions 0 .. that position,
 * whose slots are page_table[table_idx[r], pos]. Query head h reads KV head h / (Hq / Hk).
 * Softmax in fp32 with `scale` (usually 1/sqrt(D)); out rounded to bf16. */
struct rig_op_attention_prefill {
    struct rig_tensor out;        /* [T, Hq, D] bf16 */
    struct rig_tensor q;          /* [T, Hq, D] bf16 */
    struct rig_tensor k_cache;    /* [S, Hk, D] bf16 */
    struct rig_tensor v_cache;    /* [S, Hk, D] bf16 */
    struct rig_tensor page_table; /* [rows, L] i32 */
    struct rig_tensor table_idx;  /* [R] i32 */
    struct rig_tensor cu_q;       /* [R + 1] i32, cu_q[0] = 0, cu_q[R] = T */
    struct rig_tensor kv_len;     /* [R] i32 */
    float scale;
};

/* One query token per request attending to all kv_len[r] positions of its row. */
struct rig_op_attention_decode {
    struct rig_tensor out;        /* [R, Hq, D] bf16 */
    struct rig_tensor q;          /* [R, Hq, D] bf16 */
    struct rig_tensor k_cache;    /* [S, Hk, D] bf16 */
    struct rig_tensor v_cache;    /* [S, Hk, D] bf16 */
    struct rig_tensor page_table; /* [rows, L] i32 */
    struct rig_tensor table_idx;  /* [R] i32 */
    struct rig_tensor kv_len;     /* [R] i32 */
    float scale;
};

/* qk_norm_rope_store(store), then attention_decode(attend), as one op: a decode step is bound
 * by per-kernel latency at small batches, and a backend may run both in one kernel (the CUDA
 * backend does where that measured faster: cuda/ops/attention_decode.cu). Its
 * results are the two ops' in that order (out, k_cache, v_cache), except that q and k are
 * scratch: afterwards they hold unspecified values (the composition leaves them normed and
 * rotated; a fused kernel may leave them as they were, since every split of a request reads
 * the same q). Shared arguments are the same tensors: store.q is attend.q, store.k_cache and
 * store.v_cache are attend's; store's T tokens are attend's R requests, token r being request
 * r's newest position, so out_loc[r] must be the slot page_table[table_idx[r], kv_len[r] - 1]
 * (as the engine's decode batches have it; a kernel may take that key from registers instead
 * of the cache) unless the slot is outside the cache (a padding row: nothing stored). Its
 * op-table key is attend's (with this kind). */
struct rig_op_attention_decode_store {
    struct rig_op_qk_norm_rope_store store;
    struct rig_op_attention_decode attend;
};

/* out[t, i] = bf16(bf16(silu(gate[t, i])) * up[t, i]) with in = [gate | up]. */
struct rig_op_silu_mul {
    struct rig_tensor out; /* [T, I] bf16 */
    struct rig_tensor in;  /* [T, 2I] bf16 */
};

/* out[r, :] = in[idx[r], :] — e.g. the last position of each request before the LM head. */
struct rig_op_gather_rows {
    struct rig_tensor out; /* [R, H] bf16 | f32 */
    struct rig_tensor in;  /* [T, H] same dtype */
    struct rig_tensor idx; /* [R] i32 */
};

/* out[n] = src[idx[n]] over a flat i32 array (token pool loads: idx = row * L + pos). */
struct rig_op_index_gather {
    struct rig_tensor out; /* [N] i32 */
    struct rig_tensor src; /* [M] i32 */
    struct rig_tensor idx; /* [N] i32 */
};

/* dst[idx[n]] = src[n] over a flat i32 array (token pool writes). Indices must be distinct. */
struct rig_op_index_scatter {
    struct rig_tensor dst; /* [M] i32 */
    struct rig_tensor src; /* [N] i32 */
    struct rig_tensor idx; /* [N] i32 */
};

/* One token per row of logits. Row r is greedy (first maximum) when temperature[r] <= 0 or
 * top_k[r] == 1. Otherwise z = logits / temperature; keep the top_k[r] largest z (all when
 * top_k <= 0; ties broken by lower index), then the smallest prefix of those, in descending
 * order, whose softmax mass reaches top_p[r] (at least one), then of those the z with
 * exp(z - z_max) >= min_p[r] in float64 (SGLang's order: min_p after top-k and top-p, relative
 * to the most likely token, which always stays); the token is the argmax over the kept set of
 * z + g, g = -log(-log(u)), u = rig_philox_uniform(seed[r], position[r], index) (the
 * Gumbel-max trick: an exact draw from the renormalised softmax of the kept set). min_p may be
 * absent: 0 for every row. -Inf masks a token (probability 0); a row with a NaN or +Inf logit,
 * or with every logit -Inf (a broken checkpoint or an overflow: no distribution), is not
 * sampled: tokens[r] = 0, so whatever reads the tokens next stays in range, and checked[r] =
 * -1; checked[r] = tokens[r] for every other row.
 * The engine scatters `tokens` and reads `checked` back, failing the step on a -1. */
struct rig_op_sample {
    struct rig_tensor tokens;      /* [R] i32 out */
    struct rig_tensor logits;      /* [R, V] f32 */
    struct rig_tensor temperature; /* [R] f32 */
    struct rig_tensor top_k;       /* [R] i32 */
    struct rig_tensor top_p;       /* [R] f32 */
    struct rig_tensor seed;        /* [R] i64 (bits of a uint64) */
    struct rig_tensor position;    /* [R] i32: index of the output token being sampled */
    struct rig_tensor min_p;       /* [R] f32 in [0, 1], or absent */
    struct rig_tensor checked;     /* [R] i32 out: tokens, -1 for a row of no distribution;
                                    * or absent */
};

/* Penalties over each row's token history, in place on the logits: OpenAI's presence and
 * frequency penalties over the generated tokens, Hugging Face's repetition penalty over the
 * prompt and the generated tokens. Row r's history is token_pool[table_idx[r], 0 ..
 * kv_len[r] - 1]: the prompt, then its last n = clamp(out_len[r], 0, kv_len[r]) entries are
 * the generated tokens. Each distinct id v of the history is penalised once, however often it
 * occurs (so the result does not depend on the order the history is visited), with c = the
 * number of times v occurs among the generated tokens:
 *   x = logits[r, v] > 0 ? logits[r, v] / repetition[r] : logits[r, v] * repetition[r];
 *   x = fmaf(-(float)c, frequency[r], x);  then, when c > 0, x = x - presence[r];
 *   logits[r, v] = x.
 * Every other logit is unchanged, and so is every row with repetition 1, frequency 0 and
 * presence 0 (skipped: what lets a graph run the op for all rows). `counts` is scratch: only the entries of history ids are
 * written, nothing needs clearing, and its contents are undefined afterwards. History ids
 * must lie in [0, V). */
struct rig_op_penalize {
    struct rig_tensor logits;     /* [R, V] f32, read and written */
    struct rig_tensor counts;     /* [R, V] i32 scratch */
    struct rig_tensor token_pool; /* [rows, L] i32 */
    struct rig_tensor table_idx;  /* [R] i32 */
    struct rig_tensor kv_len;     /* [R] i32: history length, 0 .. L */
    struct rig_tensor out_len;    /* [R] i32: generated tokens ending the history (clamped) */
    struct rig_tensor repetition; /* [R] f32, > 0; 1 = none */
    struct rig_tensor frequency;  /* [R] f32; 0 = none */
    struct rig_tensor presence;   /* [R] f32; 0 = none */
};

/* Log-probabilities of the distribution the sampler draws from, before its top-k / top-p /
 * min-p cuts (SGLang's default): for row r, z_i = logits[r, i] / t with t = temperature[r]
 * when > 0 and 1 otherwise (greedy rows), lse = z_max + log(sum_i exp(z_i - z_max)) with the
 * sum in float64, logprob_i = (float)(z_i - lse). logprob[r] is that of tokens[r];
 * top_ids[r, :] are the N indices of the largest z (ties to the lower index), most likely
 * first, and top_logprobs[r, :] their logprobs. N = top_ids.shape[1], 1 <= N <= min(V, 20);
 * top_ids and top_logprobs are both absent when no alternatives are wanted. */
struct rig_op_logprobs {
    struct rig_tensor logprob;      /* [R] f32 out */
    struct rig_tensor top_ids;      /* [R, N] i32 out, or absent */
    struct rig_tensor top_logprobs; /* [R, N] f32 out, or absent */
    struct rig_tensor logits;       /* [R, V] f32 */
    struct rig_tensor temperature;  /* [R] f32 */
    struct rig_tensor tokens;       /* [R] i32, in [0, V): the sampled tokens */
};

#define RIG_LOGPROBS_TOP_MAX 20 /* N of rig_op_logprobs at most */

/* out = in, element by element over the same shape; any strides; bf16 <-> f32 allowed. */
struct rig_op_copy {
    struct rig_tensor out;
    struct rig_tensor in;
};

/* Sum over the ranks of `comm`, in place. Ranks are summed in rank order (deterministic). */
struct rig_op_all_reduce {
    struct rig_tensor data; /* contiguous bf16 | f32 */
    struct rig_comm *comm;
};

/* out[rank, ...] = in of that rank: out is [ranks, ...in shape], rank-major, contiguous. */
struct rig_op_all_gather {
    struct rig_tensor out; /* [ranks, ...] contiguous */
    struct rig_tensor in;  /* contiguous */
    struct rig_comm *comm;
};

struct rig_op {
    enum rig_op_kind kind;
    union {
#define RIG__OP_MEMBER(upper, lower) struct rig_op_##lower lower;
        RIG_OP_MAP(RIG__OP_MEMBER)
#undef RIG__OP_MEMBER
    } u;
};

#define RIG_OP_TENSORS_MAX 16

/* Pointers to every tensor argument of `op` (absent optional ones included), in the order of
 * the fields of its params struct; returns how many (1 .. RIG_OP_TENSORS_MAX). For code that
 * treats all tensors alike: the simulator's phantom checks, tests that remap addresses.
 * The pointers point into `op`. A kind outside the enum is a bug (asserts). */
int32_t rig_op_tensors(const struct rig_op *op, const struct rig_tensor **list);

/* Name of an op kind ("attention_prefill"); "?" outside the enum. Can't fail. */
const char *rig_op_name(enum rig_op_kind kind);

#endif /* RIG_OPS_H */
