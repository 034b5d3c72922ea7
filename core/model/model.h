/* model.h — a decoder-only transformer (Qwen3, Qwen2, Llama, Mistral) over HAL ops.
 *
 * The forward is written once against the HAL (docs/architecture.md §5) and runs on any backend.
 * One `struct rig_model` is one TP rank's share: its weight shards, its KV cache (per layer k/v
 * [slots, Hk/tp, D]; one replicated KV head per rank when tp > Hk), and activation buffers sized
 * for the largest batch, all allocated in rig_model_create (nothing is allocated in
 * rig_model_forward, which never reads device memory on the host, so it also runs in timing-only
 * simulation and under graph capture). TP sharding: QKV and gate/up are column-parallel, o_proj and
 * down row-parallel followed by an all-reduce; the embedding and LM head are vocab-parallel (a
 * vocabulary not divisible by the TP size is padded per rank and the padded columns are cut before
 * sampling), logits all-gathered. Layout, weights and the golden check: docs/model.md.
 *
 * Threads: a model is used by its rank's thread only. The config is plain data.
 */
#ifndef RIG_MODEL_H
#define RIG_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine/batch.h"
#include "hal/hal.h"

#define RIG_MODEL_EOS_MAX 8

enum rig_model_arch {
    RIG_ARCH_QWEN3 = 0, /* q/k RMSNorm per head, no qkv bias */
    RIG_ARCH_QWEN2 = 1, /* qkv bias */
    RIG_ARCH_LLAMA = 2, /* llama3 rope scaling optional */
    RIG_ARCH_MISTRAL = 3,
};

/* What Hugging Face's config.json says, in our terms. */
struct rig_model_config {
    enum rig_model_arch arch;
    char name[64];                /* preset name or the directory's base name */
    int32_t vocab_size;
    int32_t hidden_size;          /* H */
    int32_t intermediate_size;    /* I */
    int32_t num_layers;
    int32_t num_heads;            /* Hq */
    int32_t num_kv_heads;         /* Hk */
    int32_t head_dim;             /* D */
    float rms_norm_eps;
    struct rig_rope_params rope;
    int32_t max_position;         /* max_position_embeddings: the context limit */
    bool tie_word_embeddings;
    bool qkv_bias;
    bool qk_norm;
    int32_t bos_token_id;         /* -1 when none */
    int32_t eos_token_ids[RIG_MODEL_EOS_MAX];
    int32_t eos_count;
};

/* Fills `out` with a built-in config ("tiny", "qwen3-0.6b", "qwen3-8b", "qwen3-32b",
 * "llama-3.2-1b"). RIG_E_NOT_FOUND for an unknown name. */
enum rig_status rig_model_config_preset(const char *name, struct rig_model_config *out);
/* Reads a Hugging Face config.json (`path` is the file or the model directory holding it).
 * On error returns a negative status, writes a message naming the file and the field to
 * `error` (capacity `error_len`) and leaves `out` unchanged. `name` is the directory name. */
enum rig_status rig_model_config_load(const char *path, struct rig_model_config *out,
                                      char *error, size_t error_len);

/* Parses the text of a config.json (`size` bytes); `source` names it in messages. Same
 * errors as rig_model_config_load; `out` is unchanged on error. `name` is left empty. */
enum rig_status rig_model_config_parse(const char *text, size_t size, const char *source,
                                       struct rig_model_config *out, char *error,
                                       size_t error_len);

/* KV heads one rank holds: Hk / tp, or 1 when tp > Hk (KV heads replicated, as vLLM). */
int32_t rig_model_kv_heads_per_rank(const struct rig_model_config *config, int32_t tp_size);

/* Bytes of KV cache one token slot needs on one rank (all layers, K and V, bf16). */
size_t rig_model_kv_bytes_per_slot(const struct rig_model_config *config, int32_t tp_size);
/* Bytes of weights one rank holds. */
size_t rig_model_weight_bytes(const struct rig_model_config *config, int32_t tp_size);
/* KV slots one rank can hold in `bytes` of device memory after its weights (bytes less
 * rig_model_weight_bytes, over rig_model_kv_bytes_per_slot); negative when the weights alone
 * do not fit. */
double rig_model_kv_slots_in(const struct rig_model_config *config, int32_t tp_size, double bytes);

/* Sizes fixed at start-up. */
struct rig_model_limits {
    int32_t max_tokens;   /* T' of the largest batch (prefill budget, padded decode size) */
    int32_t max_requests; /* R' of the largest batch */
    int32_t kv_slots;     /* S: KV slots per layer (pages × page size, + 1 dummy slot) */
};

/* Bytes of the largest collective input one rank sends in a forward under `limits`: an
 * all-reduce of [T', hidden] bf16 or the all-gather of [R', ceil(V / tp)] fp32 logits. */
int64_t rig_model_collective_bytes_max(const struct rig_model_config *config,
                                       const struct rig_model_limits *limits, int32_t tp_size);

/* Where weights come from: a directory with safetensors (+ index) or seeded dummy weights. */
struct rig_weights_source {
    const char *path;     /* model directory; NULL = dummy weights */
    uint64_t dummy_seed;  /* seed of dummy weights (Philox, RIG_PHILOX_STREAM_WEIGHTS) */
    bool skip_weight_check; /* do not scan the checkpoint for NaN / Inf as it loads */
};

struct rig_model;

/* Creates rank `rig_hal_comm_rank(comm)` of the model on `device` (comm NULL = TP 1):
 * allocates and loads its weights, KV cache and activations, using `stream` for uploads.
 * On error returns a negative status with a message in `error`, and allocates nothing; a
 * RIG_FUSE_ROWS that is not a row count (rig_model_set_fuse_rows) is RIG_E_INVALID. */
enum rig_status rig_model_create(const struct rig_model_config *config,
                                 const struct rig_weights_source *weights,
                                 const struct rig_model_limits *limits,
                                 struct rig_device *device, struct rig_stream *stream,
                                 struct rig_comm *comm, struct rig_model **out, char *error,
                                 size_t error_len);
void rig_model_destroy(struct rig_model *model);

/* Issues the forward of `batch` on `stream` and the sampling of one token per request into
 * batch->out_tokens, with the sampling extensions whose tensors the batch carries (penalties
 * in place on the logits before sampling, min_p, logprobs after it). Asynchronous; every
 * rank of a TP group must call it with the same batch. Fails only on a batch larger than
 * the limits (RIG_E_CAPACITY) or a backend error. */
enum rig_status rig_model_forward(struct rig_model *model, struct rig_stream *stream,
                                  const struct rig_forward_batch *batch);

/* Where rig_model_forward_ops sends each op: `layer` is the layer it belongs to (-1: the
 * step's ends — embedding, final norm, LM head, sampling), `name` says what it is ("gemm
 * qkv", "attention_decode", ...), `op` is the op exactly as rig_model_forward would issue it
 * (valid during the call). A negative status stops the walk and is returned. */
struct rig_model_op_sink {
    void *ctx;
    enum rig_status (*op)(void *ctx, int32_t layer, const char *name, const struct rig_op *op);
};

/* The forward of `batch` taken apart: every op rig_model_forward would issue, in issue
 * order, handed to `sink` instead of a stream — so a benchmark's op breakdown runs the
 * model's own op sequence, not a copy of it. Issues nothing. Same errors as
 * rig_model_forward, or the sink's. */
enum rig_status rig_model_forward_ops(struct rig_model *model,
                                      const struct rig_forward_batch *batch,
                                      const struct rig_model_op_sink *sink);

/* Batches of up to this many padded tokens (at TP 1) run each layer in six ops instead of
 * nine: the norms, silu_mul and the residual adds ride on the GEMMs as their fused forms
 * (hal/ops.h; the same bits, fewer kernels). 1: a lone request's decode step. On an H200
 * (docs/performance.md, "fused forms") that step took 3-4 % less with them (Qwen3-0.6B 0.989
 * -> 0.955 ms at 512 keys, Llama-3.2-1B 1.134 -> 1.090, Qwen3-8B 5.38 -> 5.22), while 8 rows
 * took more (Qwen3-0.6B 1.17 -> 1.46 ms): the small-batch kernel makes a prologue's operand
 * rows once a block, which costs more with more rows. The environment variable RIG_FUSE_ROWS
 * (a row count, 0 .. RIG_MODEL_FUSE_ROWS_MAX, read once in rig_model_create) overrides it, a
 * measuring switch; rig_model_set_fuse_rows after that. */
#define RIG_MODEL_FUSE_ROWS     1
#define RIG_MODEL_FUSE_ROWS_MAX 65536

/* Sets the batch size up to which the model runs fused layers (RIG_MODEL_FUSE_ROWS); 0:
 * never. From the next forward on (a captured graph keeps the ops it captured). rows must
 * be in 0 .. RIG_MODEL_FUSE_ROWS_MAX. */
void rig_model_set_fuse_rows(struct rig_model *model, int32_t rows);

/* Debug/test access: when enabled, rig_model_forward also leaves the full-vocabulary fp32
 * logits of the last position of each request in a device tensor [R', V] readable until
 * the next forward (for the golden tests and `rig generate --logits-out`). */
void rig_model_keep_logits(struct rig_model *model, bool keep);
struct rig_tensor rig_model_logits(const struct rig_model *model);

/* Copies the first `rows` rows of those logits ([rows, V] f32, row-major) to `out` and
 * waits for the copy (synchronises `stream`). RIG_E_RANGE when rows exceeds max_requests. */
enum rig_status rig_model_download_logits(struct rig_model *model, struct rig_stream *stream,
                                          int32_t rows, float *out);

const struct rig_model_config *rig_model_get_config(const struct rig_model *model);
/* The device the model rank lives on. */
struct rig_device *rig_model_device(const struct rig_model *model);

#endif /* RIG_MODEL_H */
