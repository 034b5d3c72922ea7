/* penalize.cu — presence, frequency and repetition penalties in place on the logits, the
 * simulator's passes (sim/kernels/penalize.c) with one block per row (see penalize.cuh).
 *
 * The row of `counts` maps a token id to its number of generated occurrences. Three phases,
 * each striding over the row's history with a barrier between them (the row's entries are
 * private to its block): clear the entry of every history id; count the generated tokens
 * (integer atomics: the totals do not depend on their order); then every position claims its
 * id by setting RIG__TAKEN with atomicOr, and only the position that set it first applies the
 * penalty. Which position that is varies from run to run, but the value it writes depends only
 * on the id's logit and count, so the result is deterministic and equals the simulator's
 * (same float operations: a division or a product, fmaf, a subtraction). An id outside [0, V)
 * or a history length outside [0, L] would be a bug of the caller; they are skipped / clamped
 * here so that a bad value cannot write outside the row.
 */
#include "cuda/ops/common.cuh"
#include "cuda/ops/penalize.cuh"

RIG_CUDA_MODULE(penalize)

#define RIG__PENALIZE_THREADS 256
#define RIG__TAKEN            0x40000000 /* above any count: histories are shorter than 2^30 */

struct rig__penalize_args {
    float *logits;
    int64_t logits_stride;
    int32_t *counts;
    int64_t counts_stride;
    const int32_t *pool;
    int64_t pool_stride;
    int64_t pool_rows;
    int64_t max_len; /* L */
    int64_t vocab;
    const int32_t *table_idx;
    const int32_t *kv_len;
    const int32_t *out_len;
    const float *repetition;
    const float *frequency;
    const float *presence;
};

static __device__ __forceinline__ float rig__penalised(float logit, int32_t count,
                                                       float repetition, float frequency,
                                                       float presence)
{
    float x = logit > 0.0f ? logit / repetition : logit * repetition;
    x = fmaf(-(float)count, frequency, x);
    if (count > 0) x = x - presence;
    return x;
}

static __global__ void __launch_bounds__(RIG__PENALIZE_THREADS)
    rig__penalize_kernel(struct rig__penalize_args a)
{
    int64_t r = blockIdx.x;
    float repetition = a.repetition[r], frequency = a.frequency[r], presence = a.presence[r];
    if (repetition == 1.0f && frequency == 0.0f && presence == 0.0f) return; /* the contract */
    int64_t table_row = a.table_idx[r];
    if (table_row < 0 || table_row >= a.pool_rows) return;
    int32_t length = min(max(a.kv_len[r], 0), (int32_t)a.max_len);
    int32_t generated = min(max(a.out_len[r], 0), length);
    const int32_t *history = a.pool + table_row * a.pool_stride;
    int32_t *counts = a.counts + r * a.counts_stride;
    float *logits = a.logits + r * a.logits_stride;
    for (int32_t i = threadIdx.x; i < length; i += blockDim.x) {
        int32_t id = history[i];
        if (id >= 0 && id < a.vocab) counts[id] = 0;
    }
    __syncthreads();
    for (int32_t i = length - generated + threadIdx.x; i < length; i += blockDim.x) {
        int32_t id = history[i];
        if (id >= 0 && id < a.vocab) atomicAdd(&counts[id], 1);
    }
    __syncthreads();
    for (int32_t i = threadIdx.x; i < length; i += blockDim.x) {
        int32_t id = history[i];
        if (id < 0 || id >= a.vocab) continue;
        int32_t before = atomicOr(&counts[id], RIG__TAKEN);
        if (before & RIG__TAKEN) continue; /* another position of the same id applies it */
        logits[id] = rig__penalised(logits[id], before, repetition, frequency, presence);
    }
}

enum rig_status rig_cuda_op_penalize(const struct rig_cuda_launch *launch,
                                     const struct rig_op_penalize *p)
{
    int64_t rows = p->logits.shape[0];
    if (rows == 0) return RIG_OK;
    if (p->logits.shape[1] > INT32_MAX || p->token_pool.shape[1] >= RIG__TAKEN)
        return RIG_E_RANGE;
    struct rig__penalize_args a;
    a.logits = (float *)p->logits.data;
    a.logits_stride = p->logits.stride[0];
    a.counts = (int32_t *)p->counts.data;
    a.counts_stride = p->counts.stride[0];
    a.pool = (const int32_t *)p->token_pool.data;
    a.pool_stride = p->token_pool.stride[0];
    a.pool_rows = p->token_pool.shape[0];
    a.max_len = p->token_pool.shape[1];
    a.vocab = p->logits.shape[1];
    a.table_idx = (const int32_t *)p->table_idx.data;
    a.kv_len = (const int32_t *)p->kv_len.data;
    a.out_len = (const int32_t *)p->out_len.data;
    a.repetition = (const float *)p->repetition.data;
    a.frequency = (const float *)p->frequency.data;
    a.presence = (const float *)p->presence.data;
    rig__penalize_kernel<<<(unsigned)rows, RIG__PENALIZE_THREADS, 0, launch->stream>>>(a);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
