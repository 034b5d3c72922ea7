/* sample.cu — one token per row of logits, the simulator's algorithm (hal/ops.h,
 * sim/kernels/sample.c) without a sort (see sample.cuh).
 *
 * One block per row. Candidates are ranked by a 64-bit key: the order-preserving bits of
 * z = logit / temperature in the high word and ~index in the low word, so "z descending,
 * lower index first on ties" is "key descending" and every key is distinct. The top-k set
 * is {key >= c_k} with c_k the k-th largest key; the top-p set is {key >= c_p} with c_p the
 * largest key whose prefix (key >= c_p within top-k) has softmax mass >= top_p * total. Both
 * cut-offs are found by the same bitwise search over the key (the largest c with a monotone
 * predicate true), one block-wide count/sum per bit: no sort and no scratch memory. Masses
 * are float64, as the simulator's; only their summation order differs, so a row whose
 * cumulative mass lands within rounding of top_p * total could keep one token more or less
 * than the simulator (never seen with continuous random logits; documented in docs/gpu.md).
 * The token is the argmax over the kept set of z + g, g = -log(-log(u)) from Philox, ties to
 * the lower index. Greedy rows (temperature <= 0 or top_k == 1) take the first maximum.
 */
#include <float.h>

#include "cuda/ops/common.cuh"
#include "cuda/ops/sample.cuh"
#include "hal/philox.h"

#define RIG__SAMPLE_THREADS 1024

struct rig__sample_args {
    int32_t *tokens;
    const float *logits;
    int64_t logits_stride;
    int64_t vocab;
    int32_t index_bits; /* bits needed for an index below vocab */
    const float *temperature;
    const int32_t *top_k;
    const float *top_p;
    const uint64_t *seed;
    const int32_t *position;
};

static __device__ __forceinline__ uint64_t rig__key(float z, int64_t index)
{
    uint32_t bits = __float_as_uint(z);
    uint32_t ordered = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
    return ((uint64_t)ordered << 32) | (uint32_t)~(uint32_t)index;
}

/* Block-wide (count, mass) of candidates with key >= cut and key >= floor. */
struct rig__tally {
    int64_t count;
    double mass;
};

static __device__ struct rig__tally rig__block_tally(struct rig__tally v,
                                                     struct rig__tally *shared)
{
    int lane = threadIdx.x % RIG_CUDA_WARP, warp = threadIdx.x / RIG_CUDA_WARP;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        v.count += __shfl_xor_sync(0xffffffffu, v.count, offset);
        v.mass += __shfl_xor_sync(0xffffffffu, v.mass, offset);
    }
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    struct rig__tally total = {0, 0.0};
    for (int w = 0; w < (int)(blockDim.x / RIG_CUDA_WARP); w++) {
        total.count += shared[w].count;
        total.mass += shared[w].mass;
    }
    __syncthreads();
    return total;
}

struct rig__row {
    const float *logits;
    int64_t vocab;
    float temperature;
    float z_max;
    uint64_t floor; /* only keys >= floor take part */
};

static __device__ struct rig__tally rig__tally_above(const struct rig__row *row, uint64_t cut,
                                                     bool want_mass,
                                                     struct rig__tally *shared)
{
    struct rig__tally mine = {0, 0.0};
    for (int64_t i = threadIdx.x; i < row->vocab; i += blockDim.x) {
        float z = row->logits[i] / row->temperature;
        uint64_t key = rig__key(z, i);
        if (key < cut || key < row->floor) continue;
        mine.count++;
        if (want_mass) mine.mass += exp((double)z - (double)row->z_max);
    }
    return rig__block_tally(mine, shared);
}

/* The largest key c with count(key >= c) >= 1 and (count >= want_count, or mass >=
 * want_mass when by_mass): bit by bit from the top, keeping a bit when the predicate holds.
 * Index bits above index_bits are 1 in every key, so they are set without a pass. */
static __device__ uint64_t rig__search(const struct rig__row *row, int32_t index_bits,
                                       bool by_mass, int64_t want_count, double want_mass,
                                       struct rig__tally *shared)
{
    uint64_t cut = 0;
    for (int bit = 63; bit >= 0; bit--) {
        if (bit == 31) cut |= 0xffffffffull & ~((1ull << index_bits) - 1ull);
        if (bit < 32 && bit >= index_bits) continue;
        uint64_t candidate = cut | (1ull << bit);
        struct rig__tally t = rig__tally_above(row, candidate, by_mass, shared);
        bool holds = t.count >= 1 && (by_mass ? t.mass >= want_mass : t.count >= want_count);
        if (holds) cut = candidate;
    }
    return cut;
}

/* Block-wide argmax of (score, index): the larger score, the lower index on ties. */
static __device__ int64_t rig__block_argmax(float score, int64_t index, float *shared_score,
                                            int64_t *shared_index)
{
    int lane = threadIdx.x % RIG_CUDA_WARP, warp = threadIdx.x / RIG_CUDA_WARP;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        float other_score = __shfl_xor_sync(0xffffffffu, score, offset);
        int64_t other_index = __shfl_xor_sync(0xffffffffu, index, offset);
        bool better = other_index >= 0 &&
                      (index < 0 || other_score > score ||
                       (other_score == score && other_index < index));
        if (better) {
            score = other_score;
            index = other_index;
        }
    }
    if (lane == 0) {
        shared_score[warp] = score;
        shared_index[warp] = index;
    }
    __syncthreads();
    float best_score = -INFINITY;
    int64_t best = -1;
    for (int w = 0; w < (int)(blockDim.x / RIG_CUDA_WARP); w++) {
        int64_t i = shared_index[w];
        float s = shared_score[w];
        if (i >= 0 && (best < 0 || s > best_score || (s == best_score && i < best))) {
            best = i;
            best_score = s;
        }
    }
    __syncthreads();
    return best;
}

static __global__ void __launch_bounds__(RIG__SAMPLE_THREADS)
    rig__sample_kernel(struct rig__sample_args a)
{
    __shared__ struct rig__tally shared_tally[RIG_CUDA_WARP];
    __shared__ float shared_score[RIG_CUDA_WARP];
    __shared__ int64_t shared_index[RIG_CUDA_WARP];
    int64_t r = blockIdx.x;
    struct rig__row row = {a.logits + r * a.logits_stride, a.vocab, a.temperature[r], 0.0f, 0};
    int32_t top_k = a.top_k[r];
    bool greedy = !(row.temperature > 0.0f) || top_k == 1;
    float best = -INFINITY;
    int64_t best_index = -1;
    for (int64_t i = threadIdx.x; i < a.vocab; i += blockDim.x) {
        float v = greedy ? row.logits[i] : row.logits[i] / row.temperature;
        if (best_index < 0 || v > best) {
            best = v;
            best_index = i;
        }
    }
    int64_t token = rig__block_argmax(best, best_index, shared_score, shared_index);
    if (!greedy) {
        row.z_max = row.logits[token] / row.temperature;
        if (top_k > 0 && top_k < a.vocab)
            row.floor = rig__search(&row, a.index_bits, false, top_k, 0.0, shared_tally);
        float top_p = a.top_p[r];
        if (top_p < 1.0f) {
            struct rig__tally all = rig__tally_above(&row, 0, true, shared_tally);
            row.floor = rig__search(&row, a.index_bits, true, 0, (double)top_p * all.mass,
                                    shared_tally);
        }
        uint64_t seed = a.seed[r];
        uint32_t position = (uint32_t)a.position[r];
        best = -INFINITY;
        best_index = -1;
        for (int64_t i = threadIdx.x; i < a.vocab; i += blockDim.x) {
            float z = row.logits[i] / row.temperature;
            if (rig__key(z, i) < row.floor) continue;
            float u = rig_philox_uniform(seed, position, (uint32_t)i);
            float score = z + -logf(-logf(u));
            if (best_index < 0 || score > best) {
                best = score;
                best_index = i;
            }
        }
        token = rig__block_argmax(best, best_index, shared_score, shared_index);
    }
    if (threadIdx.x == 0) a.tokens[r] = (int32_t)token;
}

enum rig_status rig_cuda_op_sample(const struct rig_cuda_launch *launch,
                                   const struct rig_op_sample *p)
{
    int64_t rows = p->logits.shape[0];
    if (rows == 0) return RIG_OK;
    if (p->logits.shape[1] > INT32_MAX) return RIG_E_RANGE;
    struct rig__sample_args a;
    a.tokens = (int32_t *)p->tokens.data;
    a.logits = (const float *)p->logits.data;
    a.logits_stride = p->logits.stride[0];
    a.vocab = p->logits.shape[1];
    a.index_bits = 1;
    while (a.index_bits < 31 && (1ll << a.index_bits) < a.vocab) a.index_bits++;
    a.temperature = (const float *)p->temperature.data;
    a.top_k = (const int32_t *)p->top_k.data;
    a.top_p = (const float *)p->top_p.data;
    a.seed = (const uint64_t *)p->seed.data;
    a.position = (const int32_t *)p->position.data;
    rig__sample_kernel<<<(unsigned)rows, RIG__SAMPLE_THREADS, 0, launch->stream>>>(a);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
