/* logprobs.cu — log-probabilities of the sampled token and of the N most likely tokens, the
 * simulator's contract (sim/kernels/logprobs.c) with one block per row (see logprobs.cuh).
 *
 * Each thread scans its strided share of the row once, keeping its own N best (z, index) in
 * rank order (larger z, then the lower index: a total order, so the N best of the row are
 * among the union of the threads' lists). The lists meet in shared memory and N rounds of a
 * block-wide argmax over the threads' list heads take them out in order; the first round
 * gives z_max. A second pass sums exp(z - z_max) in float64 (per thread, then warps, then
 * warps in a fixed order: deterministic, and equal to the simulator's index-order sum up to
 * float64 rounding, far below the float32 of the results). z is logit / t with the same
 * float division as the simulator, so the ranking is exactly the simulator's.
 */
#include "cuda/ops/common.cuh"
#include "cuda/ops/logprobs.cuh"

RIG_CUDA_MODULE(logprobs)

#define RIG__LOGPROBS_THREADS 256
#define RIG__LOGPROBS_WARPS   (RIG__LOGPROBS_THREADS / RIG_CUDA_WARP)

struct rig__logprobs_args {
    float *logprob;
    int32_t *top_ids;
    int64_t top_ids_stride;
    float *top_logprobs;
    int64_t top_logprobs_stride;
    int32_t top; /* N */
    const float *logits;
    int64_t logits_stride;
    int64_t vocab;
    const float *temperature;
    const int32_t *tokens;
};

/* (z_a, a) ranks before (z_b, b); index -1 ranks after everything. */
static __device__ __forceinline__ bool rig__before(float z_a, int32_t a, float z_b, int32_t b)
{
    if (a < 0) return false;
    if (b < 0) return true;
    return z_a > z_b || (z_a == z_b && a < b);
}

struct rig__logprobs_shared {
    float z[RIG__LOGPROBS_THREADS * RIG_LOGPROBS_TOP_MAX];     /* each thread's list */
    int32_t index[RIG__LOGPROBS_THREADS * RIG_LOGPROBS_TOP_MAX];
    float warp_z[RIG__LOGPROBS_WARPS];
    int32_t warp_index[RIG__LOGPROBS_WARPS];
    double warp_sum[RIG__LOGPROBS_WARPS];
};

/* The block's first-ranked (z, index); every thread gets it. */
static __device__ void rig__block_best(float *z, int32_t *index, struct rig__logprobs_shared *sh)
{
    int lane = threadIdx.x % RIG_CUDA_WARP, warp = threadIdx.x / RIG_CUDA_WARP;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        float other_z = __shfl_xor_sync(0xffffffffu, *z, offset);
        int32_t other = __shfl_xor_sync(0xffffffffu, *index, offset);
        if (rig__before(other_z, other, *z, *index)) {
            *z = other_z;
            *index = other;
        }
    }
    if (lane == 0) {
        sh->warp_z[warp] = *z;
        sh->warp_index[warp] = *index;
    }
    __syncthreads();
    for (int w = 0; w < RIG__LOGPROBS_WARPS; w++) {
        if (rig__before(sh->warp_z[w], sh->warp_index[w], *z, *index)) {
            *z = sh->warp_z[w];
            *index = sh->warp_index[w];
        }
    }
    __syncthreads();
}

/* This thread's `keep` best of its share of the row, in rank order, into its shared list;
 * returns how many it has (fewer when its share is smaller). */
static __device__ int32_t rig__thread_list(const struct rig__logprobs_args *a, const float *logits,
                                           float t, int32_t keep, struct rig__logprobs_shared *sh)
{
    float *z_list = sh->z + threadIdx.x * RIG_LOGPROBS_TOP_MAX;
    int32_t *i_list = sh->index + threadIdx.x * RIG_LOGPROBS_TOP_MAX;
    int32_t count = 0;
    for (int64_t i = threadIdx.x; i < a->vocab; i += blockDim.x) {
        float z = logits[i] / t;
        if (count == keep && !rig__before(z, (int32_t)i, z_list[keep - 1], i_list[keep - 1]))
            continue;
        int32_t at = count < keep ? count++ : keep - 1;
        while (at > 0 && rig__before(z, (int32_t)i, z_list[at - 1], i_list[at - 1])) {
            z_list[at] = z_list[at - 1];
            i_list[at] = i_list[at - 1];
            at--;
        }
        z_list[at] = z;
        i_list[at] = (int32_t)i;
    }
    return count;
}

/* Block-wide sum of exp(z - z_max) in float64, in a fixed order. */
static __device__ double rig__block_mass(const struct rig__logprobs_args *a, const float *logits,
                                         float t, double z_max, struct rig__logprobs_shared *sh)
{
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < a->vocab; i += blockDim.x)
        sum += exp((double)(logits[i] / t) - z_max);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (threadIdx.x % RIG_CUDA_WARP == 0) sh->warp_sum[threadIdx.x / RIG_CUDA_WARP] = sum;
    __syncthreads();
    double total = 0.0;
    for (int w = 0; w < RIG__LOGPROBS_WARPS; w++)
        total += sh->warp_sum[w];
    __syncthreads();
    return total;
}

static __global__ void __launch_bounds__(RIG__LOGPROBS_THREADS)
    rig__logprobs_kernel(struct rig__logprobs_args a)
{
    __shared__ struct rig__logprobs_shared sh;
    int64_t r = blockIdx.x;
    const float *logits = a.logits + r * a.logits_stride;
    float temperature = a.temperature[r];
    float t = temperature > 0.0f ? temperature : 1.0f;
    int32_t rounds = a.top > 0 ? a.top : 1; /* the first round finds z_max */
    int32_t count = rig__thread_list(&a, logits, t, rounds, &sh);
    __syncthreads();
    const float *z_list = sh.z + threadIdx.x * RIG_LOGPROBS_TOP_MAX;
    const int32_t *i_list = sh.index + threadIdx.x * RIG_LOGPROBS_TOP_MAX;
    int32_t head = 0;
    float z_first = 0.0f;
    for (int32_t k = 0; k < rounds; k++) {
        float z = head < count ? z_list[head] : 0.0f;
        int32_t index = head < count ? i_list[head] : -1;
        int32_t mine = index;
        rig__block_best(&z, &index, &sh);
        if (index >= 0 && index == mine) head++;
        if (k == 0) z_first = z;
        if (threadIdx.x == 0 && k < a.top) {
            a.top_ids[r * a.top_ids_stride + k] = index;
            a.top_logprobs[r * a.top_logprobs_stride + k] = z; /* z for now; lse below */
        }
    }
    double z_max = (double)z_first;
    double lse = z_max + log(rig__block_mass(&a, logits, t, z_max, &sh));
    if (threadIdx.x != 0) return;
    for (int32_t k = 0; k < a.top; k++) {
        float *out = &a.top_logprobs[r * a.top_logprobs_stride + k];
        *out = (float)((double)*out - lse);
    }
    int32_t token = a.tokens[r];
    float z_token = token >= 0 && token < a.vocab ? logits[token] / t : -INFINITY;
    a.logprob[r] = (float)((double)z_token - lse);
}

enum rig_status rig_cuda_op_logprobs(const struct rig_cuda_launch *launch,
                                     const struct rig_op_logprobs *p)
{
    int64_t rows = p->logits.shape[0];
    if (rows == 0) return RIG_OK;
    if (p->logits.shape[1] > INT32_MAX) return RIG_E_RANGE;
    struct rig__logprobs_args a;
    a.logprob = (float *)p->logprob.data;
    a.top = p->top_ids.data != NULL ? (int32_t)p->top_ids.shape[1] : 0;
    a.top_ids = (int32_t *)p->top_ids.data;
    a.top_ids_stride = a.top > 0 ? p->top_ids.stride[0] : 0;
    a.top_logprobs = (float *)p->top_logprobs.data;
    a.top_logprobs_stride = a.top > 0 ? p->top_logprobs.stride[0] : 0;
    a.logits = (const float *)p->logits.data;
    a.logits_stride = p->logits.stride[0];
    a.vocab = p->logits.shape[1];
    a.temperature = (const float *)p->temperature.data;
    a.tokens = (const int32_t *)p->tokens.data;
    rig__logprobs_kernel<<<(unsigned)rows, RIG__LOGPROBS_THREADS, 0, launch->stream>>>(a);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
