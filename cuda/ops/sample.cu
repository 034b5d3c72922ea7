/* sample.cu — one token per row of logits, the simulator's algorithm (hal/ops.h,
 * sim/kernels/sample.c) without a sort (see sample.cuh).
 *
 * Two kernels, so that a row is streamed by many multiprocessors, not one (batch 1 is
 * latency-bound: a single block reads 0.6 MB of Qwen3 logits at a few hundred GB/s):
 *  - pass 1, a grid of rows x chunks blocks of RIG__CHUNK_THREADS: each block scans one chunk
 *    of its row (16-byte loads when aligned) and writes to the stream's scratch its chunk's
 *    first maximum — of the logit for greedy rows, of z = logit / temperature for sampled
 *    rows — and, for rows sampled over the whole vocabulary (no top-k, no top-p), its first
 *    maximum of z + g (Gumbel noise from Philox); for top-p rows without top-k over more
 *    logits than the candidate list, and for those alone, it also writes the float64 sum of
 *    exp(z - its maximum) over the chunk into a second array, from which pass 2 has the row's
 *    softmax mass without a pass of its own over the row (rig__chunk_mass). The chunk count
 *    is chosen on the host from rows, vocab and the multiprocessor count (never from the
 *    per-row parameters, which live on the device and may change between graph replays);
 *  - pass 2, a thread-block cluster per row (up to 8 blocks at small batches, one at large,
 *    and never more than the device can co-schedule, which it is asked once:
 *    rig__cluster_size, also from the host's values alone): greedy and whole-vocabulary rows
 *    reduce their chunks' partials (first maximum: ties to the lower index, as the
 *    simulator's scan) and are done. Top-k / top-p rows take z_max from the partials and run
 *    the cut-off search below over their row, each block of the cluster streaming its share
 *    of every pass and the cluster combining counts, masses and argmaxes through distributed
 *    shared memory (exact, the slower path).
 * Scratch: rows x chunks partials of 24 bytes, then rows x chunks float64 masses (written and
 * read only for rig__chunk_mass rows, so greedy and whole-vocabulary rows move 24 bytes a
 * chunk), written by pass 1 and read by pass 2 on the same stream; no counters, nothing to
 * reset, so replays are independent.
 * Both passes are launched with programmatic dependent launch (common.cuh) and wait for their
 * predecessor before any load: inside a decode graph pass 1's launch overlaps the LM head's
 * tail and pass 2's pass 1's.
 *
 * The cut-off search. Candidates are ranked by a 64-bit key: the order-preserving bits of
 * z in the high word and ~index in the low word, so "z descending, lower index first on
 * ties" is "key descending" and every key is distinct. The top-k set is {key >= c_k} with
 * c_k the k-th largest key (radix select); the top-p set is the shortest prefix of the
 * top-k set, sorted, whose softmax mass reaches top_p * total. Masses are float64, as the
 * simulator's; only their summation order differs (a nucleus without top-k takes its total
 * from pass 1's chunks: the same terms, grouped by chunk and scaled to z_max, one more
 * rounding a chunk; rig__row_mass), so a row whose cumulative mass lands within rounding of
 * top_p * total could keep one token more or less than the simulator (never seen with
 * continuous random logits; documented in docs/gpu.md). The token is the
 * argmax over the kept set of z + g, g = -log(-log(u)) from Philox, ties to the lower index.
 * min_p (when present and > 0) makes a row a cut row and drops, inside that final argmax, the
 * candidates with exp(z - z_max) < min_p (float64, as the simulator's prefix of its sorted
 * candidates); z_max always stays. Greedy rows (temperature <= 0 or top_k == 1) take the
 * first maximum of the raw logits.
 *
 * Rows of no distribution (a NaN or +Inf logit, or all -Inf; hal/ops.h): pass 1 also ORs
 * "a NaN or +Inf" and "a logit above -Inf" of its chunk into its partial; pass 2 ORs its
 * row's, and a bad row skips the cut-off search and writes token 0 and -1 into `checked`.
 * Two compares per logit already loaded.
 */
#include <cooperative_groups.h>
#include <float.h>

#include "cuda/ops/common.cuh"
#include "cuda/ops/sample.cuh"
#include "hal/philox.h"

RIG_CUDA_MODULE(sample)

#define RIG__SAMPLE_THREADS 1024
#define RIG__CHUNK_THREADS  256
#define RIG__CHUNK_MIN      2048 /* logits: 8 a thread of a chunk block */
#define RIG__CHUNK_WAVES    8    /* chunk blocks per multiprocessor aimed at */

struct rig__sample_args {
    int32_t *tokens;
    int32_t *checked; /* NULL: absent */
    const float *logits;
    int64_t logits_stride;
    int64_t vocab;
    int32_t index_bits; /* bits needed for an index below vocab */
    const float *temperature;
    const int32_t *top_k;
    const float *top_p;
    const uint64_t *seed;
    const int32_t *position;
    const float *min_p; /* NULL: 0 for every row */
};

static __device__ __forceinline__ float rig__min_p(const struct rig__sample_args *a, int64_t r)
{
    return a->min_p != NULL ? a->min_p[r] : 0.0f;
}

static __device__ __forceinline__ uint64_t rig__key(float z, int64_t index)
{
    uint32_t bits = __float_as_uint(z);
    uint32_t ordered = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
    return ((uint64_t)ordered << 32) | (uint32_t) ~(uint32_t)index;
}

/* Block-wide (count, mass) of candidates with key >= cut and key >= floor. */
struct rig__tally {
    int64_t count;
    double mass;
};

static __device__ struct rig__tally rig__block_tally(struct rig__tally v, struct rig__tally *shared)
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

/* A row's blocks: a thread-block cluster of `size` (1, 2, 4 or 8, chosen on the host from the
 * batch: rig__cluster_size), this block `rank` of it. Each block streams every size-th run of
 * blockDim.x logits, so a batch-1 row is read by eight multiprocessors, not one. Counts,
 * masses and argmaxes are combined through distributed shared memory in rank order, so every
 * block of the row holds the same result and takes the same branches (the cluster's barriers
 * need all of them). Counts, keys and argmaxes do not depend on the split; a mass's float64
 * sum does, in its last bits, as it already differs from the simulator's order (file
 * comment). With size 1 it is the one-block kernel. */
struct rig__row {
    const float *logits;
    int64_t vocab;
    float temperature;
    float z_max;
    uint64_t floor; /* only keys >= floor take part */
    float min_p;    /* the final draw skips z with exp(z - z_max) < min_p */
    double mass;    /* the row's sum of exp(z - z_max) from pass 1's chunks, or -1: not there */
    int32_t rank, size;
};

/* Whether z survives the row's min-p cut. */
static __device__ __forceinline__ bool rig__min_p_keeps(const struct rig__row *row, float z)
{
    return !(row->min_p > 0.0f) || exp((double)z - (double)row->z_max) >= (double)row->min_p;
}

/* A group-wide loop over the row: `for (int64_t base = rig__first(row); base < row->vocab;
 * base += rig__stride(row))` visits logit base + threadIdx.x, the same trip count in every
 * lane of a warp (blockDim.x is whole warps). */
static __device__ __forceinline__ int64_t rig__first(const struct rig__row *row)
{
    return (int64_t)row->rank * blockDim.x;
}

static __device__ __forceinline__ int64_t rig__stride(const struct rig__row *row)
{
    return (int64_t)row->size * blockDim.x;
}

/* Every thread of every block of the row has arrived (a block barrier at size 1). */
static __device__ __forceinline__ void rig__group_sync(const struct rig__row *row)
{
    if (row->size == 1) {
        __syncthreads();
        return;
    }
    cooperative_groups::this_cluster().sync();
}

/* `p`, an address in this block's shared memory, in block `rank`'s. */
template <typename T>
static __device__ __forceinline__ T *rig__in_block(const struct rig__row *row, T *p, int rank)
{
    if (row->size == 1) return p;
    return cooperative_groups::this_cluster().map_shared_rank(p, (unsigned)rank);
}

/* Block-wide argmax of (score, index): the larger score, the lower index on ties; the
 * winner's score into *won when asked. */
static __device__ int64_t rig__block_argmax(float score, int64_t index, float *shared_score,
                                            int64_t *shared_index, float *won = NULL)
{
    int lane = threadIdx.x % RIG_CUDA_WARP, warp = threadIdx.x / RIG_CUDA_WARP;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        float other_score = __shfl_xor_sync(0xffffffffu, score, offset);
        int64_t other_index = __shfl_xor_sync(0xffffffffu, index, offset);
        bool better = other_index >= 0 && (index < 0 || other_score > score ||
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
    if (won != NULL) *won = best_score;
    return best;
}

/* Up to this many candidates are kept in shared memory, sorted, and scanned; a nucleus is
 * looked for among the top RIG__FEW first. */
#define RIG__CANDIDATES 2048
#define RIG__FEW        256

struct rig__shared {
    struct rig__tally tally[RIG_CUDA_WARP];
    float score[RIG_CUDA_WARP];
    int64_t index[RIG_CUDA_WARP];
    uint32_t histogram[256];
    uint32_t merged[256]; /* the row's histogram: every block's, summed (size > 1) */
    uint64_t keys[RIG__CANDIDATES];   /* candidates, sorted descending once gathered */
    double mass[RIG__SAMPLE_THREADS]; /* per-thread sums, then their inclusive scan */
    struct rig__tally block_tally;   /* this block's, for the others to read */
    float block_score;               /* this block's argmax, for the others to read */
    int64_t block_index;
    int64_t above;
    int32_t bucket;
    int32_t exact; /* rig__select: the bucket holds exactly the keys still wanted */
    int32_t count;
    int32_t cut;
};

/* The row's (count, mass) from each block's: the blocks' in rank order. */
static __device__ struct rig__tally rig__group_tally(const struct rig__row *row,
                                                     struct rig__tally block,
                                                     struct rig__shared *sh)
{
    if (row->size == 1) return block;
    if (threadIdx.x == 0) sh->block_tally = block;
    rig__group_sync(row);
    struct rig__tally total = {0, 0.0};
    for (int b = 0; b < row->size; b++) {
        struct rig__tally other = rig__in_block(row, sh, b)->block_tally;
        total.count += other.count;
        total.mass += other.mass;
    }
    rig__group_sync(row); /* read before anyone writes block_tally again */
    return total;
}

/* The row's argmax of (score, index) from each thread's: the larger score, the lower index on
 * ties (the order of the blocks does not matter). */
static __device__ int64_t rig__group_argmax(const struct rig__row *row, float score, int64_t index,
                                            struct rig__shared *sh)
{
    float won = -INFINITY;
    int64_t best = rig__block_argmax(score, index, sh->score, sh->index, &won);
    if (row->size == 1) return best;
    if (threadIdx.x == 0) {
        sh->block_score = won;
        sh->block_index = best;
    }
    rig__group_sync(row);
    float best_score = -INFINITY;
    best = -1;
    for (int b = 0; b < row->size; b++) {
        const struct rig__shared *other = rig__in_block(row, sh, b);
        int64_t i = other->block_index;
        float s = other->block_score;
        if (i >= 0 && (best < 0 || s > best_score || (s == best_score && i < best))) {
            best = i;
            best_score = s;
        }
    }
    rig__group_sync(row);
    return best;
}

static __device__ struct rig__tally rig__tally_above(const struct rig__row *row, uint64_t cut,
                                                     bool want_mass, struct rig__shared *sh)
{
    struct rig__tally mine = {0, 0.0};
    for (int64_t i = rig__first(row) + threadIdx.x; i < row->vocab; i += rig__stride(row)) {
        float z = row->logits[i] / row->temperature;
        uint64_t key = rig__key(z, i);
        if (key < cut || key < row->floor) continue;
        mine.count++;
        if (want_mass) mine.mass += exp((double)z - (double)row->z_max);
    }
    return rig__group_tally(row, rig__block_tally(mine, sh->tally), sh);
}

/* The largest key c with count(key >= c) >= 1 and (count >= want_count, or mass >=
 * want_mass when by_mass): bit by bit from the top, keeping a bit when the predicate holds.
 * Index bits above index_bits are 1 in every key, so they are set without a pass. */
static __device__ uint64_t rig__search(const struct rig__row *row, int32_t index_bits, bool by_mass,
                                       int64_t want_count, double want_mass,
                                       struct rig__shared *sh)
{
    uint64_t cut = 0;
    for (int bit = 63; bit >= 0; bit--) {
        if (bit == 31) cut |= 0xffffffffull & ~((1ull << index_bits) - 1ull);
        if (bit < 32 && bit >= index_bits) continue;
        uint64_t candidate = cut | (1ull << bit);
        struct rig__tally t = rig__tally_above(row, candidate, by_mass, sh);
        bool holds = t.count >= 1 && (by_mass ? t.mass >= want_mass : t.count >= want_count);
        if (holds) cut = candidate;
    }
    return cut;
}

/* The k-th largest key among the row's keys >= row->floor (1 <= k <= their count), or a
 * smaller cut that admits the same keys: radix select over the 64-bit key, 8 bits a pass from
 * the top, counting into 256 bins (each block its share of the row, then the row's sum). A
 * pass whose bin holds exactly the keys still wanted ends the search: that bin's lowest key
 * (its prefix, the lower bits 0) admits exactly the k largest, as the k-th key itself does
 * (keys are distinct), and every caller only compares keys against the result. With distinct
 * logits that is the fourth pass at the latest (the high word is z's bits), not the eighth. A
 * warp adds its lanes of one bin in one atomic: most of a row's keys share a top bin (Qwen3's
 * 151,936 logits in two of them), and one shared-memory address taking them one by one made
 * this the sampler's slowest part. */
static __device__ uint64_t rig__select(const struct rig__row *row, int64_t k,
                                       struct rig__shared *sh)
{
    uint64_t prefix = 0, mask = 0;
    int lane = (int)(threadIdx.x % RIG_CUDA_WARP);
    const uint32_t *counts = row->size == 1 ? sh->histogram : sh->merged;
    for (int shift = 56; shift >= 0; shift -= 8) {
        for (int b = threadIdx.x; b < 256; b += blockDim.x)
            sh->histogram[b] = 0;
        __syncthreads();
        for (int64_t base = rig__first(row); base < row->vocab; base += rig__stride(row)) {
            int64_t i = base + threadIdx.x;
            uint32_t bin = 0;
            bool counted = false;
            if (i < row->vocab) {
                uint64_t key = rig__key(row->logits[i] / row->temperature, i);
                counted = key >= row->floor && (key & mask) == prefix;
                bin = (uint32_t)(key >> shift) & 255u;
            }
            unsigned active = __ballot_sync(0xffffffffu, counted);
            if (counted) {
                unsigned peers = __match_any_sync(active, bin);
                if (lane == __ffs((int)peers) - 1)
                    atomicAdd(&sh->histogram[bin], (uint32_t)__popc(peers));
            }
        }
        if (row->size > 1) { /* every block's bins, summed in rank order */
            rig__group_sync(row);
            for (int b = threadIdx.x; b < 256; b += blockDim.x) {
                uint32_t sum = 0;
                for (int r = 0; r < row->size; r++)
                    sum += rig__in_block(row, sh->histogram, r)[b];
                sh->merged[b] = sum;
            }
            rig__group_sync(row); /* read before any block zeroes its bins again */
        } else {
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            int64_t above = 0;
            int b = 255;
            for (; b > 0 && above + counts[b] < k; b--)
                above += counts[b];
            sh->bucket = b;
            sh->above = above;
            sh->exact = above + counts[b] == k;
        }
        __syncthreads();
        k -= sh->above;
        prefix |= (uint64_t)sh->bucket << shift;
        mask |= 0xffull << shift;
        bool exact = sh->exact != 0;
        __syncthreads(); /* everyone has read bucket, above and exact before they change */
        if (exact) break;
    }
    return prefix;
}

/* Gathers the row's keys >= cut (at most RIG__CANDIDATES of them, the caller's guarantee) and
 * sorts them descending (bitonic); returns their count. Every block sends its share into block
 * 0's list, then copies the whole list into its own and sorts it: the keys are distinct, so
 * every block ends with the same sorted list, whatever the order of arrival. */
static __device__ int32_t rig__gather_sorted(const struct rig__row *row, uint64_t cut,
                                             struct rig__shared *sh)
{
    struct rig__shared *home = rig__in_block(row, sh, 0);
    if (threadIdx.x == 0 && row->rank == 0) sh->count = 0;
    rig__group_sync(row);
    for (int64_t i = rig__first(row) + threadIdx.x; i < row->vocab; i += rig__stride(row)) {
        uint64_t key = rig__key(row->logits[i] / row->temperature, i);
        if (key >= cut && key >= row->floor) home->keys[atomicAdd(&home->count, 1)] = key;
    }
    rig__group_sync(row);
    int32_t count = home->count, n = 1;
    if (row->size > 1) {
        if (row->rank != 0)
            for (int32_t i = threadIdx.x; i < count; i += blockDim.x)
                sh->keys[i] = home->keys[i];
        rig__group_sync(row); /* block 0's list read before it is sorted */
    }
    while (n < count)
        n <<= 1;
    for (int32_t i = count + (int32_t)threadIdx.x; i < n; i += blockDim.x)
        sh->keys[i] = 0;
    __syncthreads();
    for (int32_t size = 2; size <= n; size <<= 1) {
        for (int32_t stride = size >> 1; stride > 0; stride >>= 1) {
            for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
                int32_t j = i ^ stride;
                if (j <= i) continue;
                uint64_t x = sh->keys[i], y = sh->keys[j];
                bool descending = (i & size) == 0;
                if (descending ? x < y : x > y) {
                    sh->keys[i] = y;
                    sh->keys[j] = x;
                }
            }
            __syncthreads();
        }
    }
    return count;
}

static __device__ __forceinline__ int64_t rig__key_index(uint64_t key)
{
    return (int64_t)(uint32_t) ~(uint32_t)key;
}

/* Softmax mass of the sorted candidates accumulated in order; returns the first position
 * whose cumulative mass reaches `target` (count when none does) and sets *total to the
 * mass of all of them. Thread t owns positions 2t and 2t + 1; the scan order is fixed. */
static __device__ int32_t rig__mass_cut(const struct rig__row *row, int32_t count, double target,
                                        bool target_is_fraction, double *total,
                                        struct rig__shared *sh)
{
    int32_t first = 2 * (int32_t)threadIdx.x;
    double w[2] = {0.0, 0.0};
    for (int e = 0; e < 2; e++) {
        if (first + e >= count) continue;
        int64_t i = rig__key_index(sh->keys[first + e]);
        w[e] = exp((double)(row->logits[i] / row->temperature) - (double)row->z_max);
    }
    sh->mass[threadIdx.x] = w[0] + w[1];
    if (threadIdx.x == 0) sh->cut = count;
    __syncthreads();
    for (int offset = 1; offset < (int)blockDim.x; offset <<= 1) {
        double add = threadIdx.x >= (unsigned)offset ? sh->mass[threadIdx.x - offset] : 0.0;
        __syncthreads();
        sh->mass[threadIdx.x] += add;
        __syncthreads();
    }
    *total = sh->mass[blockDim.x - 1];
    if (target_is_fraction) target *= *total;
    double cumulative = threadIdx.x > 0 ? sh->mass[threadIdx.x - 1] : 0.0;
    for (int e = 0; e < 2; e++) {
        cumulative += w[e];
        if (first + e < count && cumulative >= target) {
            atomicMin(&sh->cut, first + e);
            break;
        }
    }
    __syncthreads();
    return sh->cut;
}

/* Gumbel-max over sorted candidates 0..last. */
static __device__ int64_t rig__gumbel_candidates(const struct rig__row *row, int32_t last,
                                                 uint64_t seed, uint32_t position,
                                                 struct rig__shared *sh)
{
    float best = -INFINITY;
    int64_t best_index = -1;
    for (int32_t q = threadIdx.x; q <= last; q += blockDim.x) {
        int64_t i = rig__key_index(sh->keys[q]);
        float z = row->logits[i] / row->temperature;
        if (!rig__min_p_keeps(row, z)) continue;
        float score = z + -logf(-logf(rig_philox_uniform(seed, position, (uint32_t)i)));
        if (best_index < 0 || score > best || (score == best && i < best_index)) {
            best = score;
            best_index = i;
        }
    }
    return rig__block_argmax(best, best_index, sh->score, sh->index);
}

/* Gumbel-max over the whole row, keys >= row->floor. */
static __device__ int64_t rig__gumbel_row(const struct rig__row *row, uint64_t seed,
                                          uint32_t position, struct rig__shared *sh)
{
    float best = -INFINITY;
    int64_t best_index = -1;
    for (int64_t i = rig__first(row) + threadIdx.x; i < row->vocab; i += rig__stride(row)) {
        float z = row->logits[i] / row->temperature;
        if (rig__key(z, i) < row->floor || !rig__min_p_keeps(row, z)) continue;
        float score = z + -logf(-logf(rig_philox_uniform(seed, position, (uint32_t)i)));
        if (best_index < 0 || score > best) {
            best = score;
            best_index = i;
        }
    }
    return rig__group_argmax(row, best, best_index, sh);
}

/* Non-greedy row: top-k, top-p, min-p, Gumbel-max. The common cases (a top-k of at most
 * RIG__CANDIDATES, or a nucleus inside the top RIG__CANDIDATES) run on a sorted candidate
 * list in shared memory; the rest scan the row once per bit of the cut-off (slow, exact). */
static __device__ int64_t rig__sample_row(struct rig__row *row, int32_t top_k, float top_p,
                                          uint64_t seed, uint32_t position, int32_t index_bits,
                                          struct rig__shared *sh)
{
    int64_t kept = top_k > 0 && top_k < row->vocab ? top_k : row->vocab;
    bool nucleus = top_p < 1.0f;
    if (kept < row->vocab) row->floor = rig__select(row, kept, sh);
    double total = 0.0;
    if (kept <= RIG__CANDIDATES) {
        int32_t count = rig__gather_sorted(row, 0, sh);
        int32_t cut =
            nucleus ? rig__mass_cut(row, count, (double)top_p, true, &total, sh) : count - 1;
        return rig__gumbel_candidates(row, cut < count ? cut : count - 1, seed, position, sh);
    }
    if (!nucleus) return rig__gumbel_row(row, seed, position, sh);
    /* the whole row's mass: pass 1's chunks summed it when there is no top-k (rig__chunk_mass) */
    double all = kept == row->vocab && row->mass >= 0.0 ? row->mass
                                                        : rig__tally_above(row, 0, true, sh).mass;
    double target = (double)top_p * all;
    /* The top RIG__FEW first, then the top RIG__CANDIDATES: a list's cumulative mass at a
     * position depends only on the positions before it (rig__mass_cut's scan), so a nucleus
     * inside the shorter list is cut where the longer list cuts it, and a shorter sort is
     * much cheaper (a model's nucleus is usually a few dozen tokens). */
    const int64_t lists[2] = {RIG__FEW, RIG__CANDIDATES};
    for (int l = 0; l < 2; l++) {
        uint64_t cap = rig__select(row, lists[l], sh);
        int32_t count = rig__gather_sorted(row, cap, sh);
        int32_t cut = rig__mass_cut(row, count, target, false, &total, sh);
        if (cut < count) return rig__gumbel_candidates(row, cut, seed, position, sh);
    }
    row->floor = rig__search(row, index_bits, true, 0, target, sh); /* a flat nucleus */
    return rig__gumbel_row(row, seed, position, sh);
}

/* What a row needs: decided from its parameters on the device, so a captured graph follows
 * them from replay to replay. The same rule as hal/optable.h's rig_sample_row_kind, by which
 * the simulator costs a batch from the op table's points of each kind: change both. */
enum rig__kind { RIG__GREEDY, RIG__WHOLE, RIG__CUT };

static __device__ __forceinline__ enum rig__kind rig__row_kind(float temperature, int32_t top_k,
                                                              float top_p, float min_p,
                                                              int64_t vocab)
{
    if (!(temperature > 0.0f) || top_k == 1) return RIG__GREEDY;
    bool top_k_active = top_k > 0 && top_k < vocab;
    return top_k_active || top_p < 1.0f || min_p > 0.0f ? RIG__CUT : RIG__WHOLE;
}

/* One chunk's result, pass 1 -> pass 2. value: the chunk's largest logit (greedy rows) or
 * z (sampled rows) at its first index; gumbel: the largest z + g at its first index
 * (RIG__WHOLE rows only). A chunk's mass (rig__chunk_mass rows) travels in an array of its
 * own, so that the rows without one keep this 24-byte partial. */
struct rig__partial {
    float value;
    int32_t index;
    float gumbel;
    int32_t gumbel_index;
    int32_t bad;  /* some logit of the chunk is NaN or +Inf */
    int32_t some; /* some logit of the chunk is above -Inf */
};

/* Whether pass 1 sums each chunk's softmax mass for the row: a nucleus (top-p below 1) over
 * the whole vocabulary (no top-k), too large for the candidate list alone, which is where
 * rig__sample_row needs the row's whole mass as its target. Pass 2 then combines the chunks'
 * sums instead of streaming the row once more (a float64 exp a logit on the row's few
 * multiprocessors). Any row this rule and rig__sample_row disagree on is still right: pass 2
 * uses the sums only on that path and tallies the row itself otherwise. */
static __device__ __forceinline__ bool rig__chunk_mass(enum rig__kind kind, int32_t top_k,
                                                       float top_p, int64_t vocab)
{
    bool top_k_active = top_k > 0 && top_k < vocab;
    return kind == RIG__CUT && top_p < 1.0f && !top_k_active && vocab > RIG__CANDIDATES;
}

/* The sum over logits[begin, end) of exp(z - z_top) in float64, z = logit / temperature (the
 * expression of every other pass, so the same bits) and z_top the chunk's largest z; 0 when
 * z_top is not finite (a chunk of -Inf only adds nothing; a row with a NaN or +Inf is never
 * sampled). Block-wide, every thread of the block calls it and gets the sum; its order is
 * fixed by the launch shape. */
static __device__ double rig__chunk_mass_sum(const float *logits, int64_t begin, int64_t end,
                                             float temperature, float z_top,
                                             struct rig__tally *shared)
{
    struct rig__tally mine = {0, 0.0};
    if (z_top > -INFINITY && z_top < INFINITY) {
        for (int64_t i = begin + threadIdx.x; i < end; i += RIG__CHUNK_THREADS)
            mine.mass += exp((double)(logits[i] / temperature) - (double)z_top);
    }
    return rig__block_tally(mine, shared).mass;
}

/* The row's sum of exp(z - z_max) from its chunks' partials (part) and masses (mass): sum over
 * chunks c of mass_c * exp(value_c - z_max), which is the row's sum in exact arithmetic
 * (value_c <= z_max is chunk c's largest z). In float64 it differs from a sum over the logits
 * in its last bits, as that sum already differs from the simulator's sorted order (file
 * comment). Threads take the chunks in turn and the block adds them in a fixed order, so every
 * block of the row gets the same bits from the same partials and takes the same branches after.
 * Only for rig__chunk_mass rows: pass 1 writes `mass` for no other. */
static __device__ double rig__row_mass(const struct rig__row *row, const struct rig__partial *part,
                                       const double *mass, int32_t chunks, struct rig__shared *sh)
{
    struct rig__tally mine = {0, 0.0};
    for (int32_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        double m = mass[c];
        if (m > 0.0) mine.mass += m * exp((double)part[c].value - (double)row->z_max);
    }
    return rig__block_tally(mine, sh->tally).mass;
}

/* Running (score, index) maximum of one thread; indices arrive in increasing order, so a
 * strict comparison keeps the first maximum. */
struct rig__best {
    float value;
    int64_t index;
    float gumbel;
    int64_t gumbel_index;
    bool bad, some; /* as in rig__partial */
};

static __device__ __forceinline__ void rig__visit(struct rig__best *b, enum rig__kind kind,
                                                  float logit, int64_t i, float temperature,
                                                  uint64_t seed, uint32_t position)
{
    float v = kind == RIG__GREEDY ? logit : logit / temperature;
    b->bad |= !(logit < INFINITY);
    b->some |= logit > -INFINITY;
    if (b->index < 0 || v > b->value) {
        b->value = v;
        b->index = i;
    }
    if (kind != RIG__WHOLE) return;
    float score = v + -logf(-logf(rig_philox_uniform(seed, position, (uint32_t)i)));
    if (b->gumbel_index < 0 || score > b->gumbel) {
        b->gumbel = score;
        b->gumbel_index = i;
    }
}

/* Pass 1: block (r, c) scans chunk c of row r and writes part[r * chunks + c], and for a
 * rig__chunk_mass row mass[r * chunks + c] (no other row's). VEC4: the row and the chunk start
 * are 16-byte aligned (the host checked), so four logits travel in one load. */
template <bool VEC4>
static __global__ void __launch_bounds__(RIG__CHUNK_THREADS)
    rig__sample_chunk_kernel(struct rig__sample_args a, struct rig__partial *part, double *mass,
                             int32_t chunk, int32_t chunks)
{
    __shared__ float shared_score[RIG_CUDA_WARP];
    __shared__ int64_t shared_index[RIG_CUDA_WARP];
    __shared__ struct rig__tally shared_tally[RIG_CUDA_WARP];
    rig_cuda_pdl_begin(); /* the logits and the row's parameters come from earlier work */
    int64_t r = blockIdx.x / chunks;
    int32_t c = (int32_t)(blockIdx.x % chunks);
    const float *logits = a.logits + r * a.logits_stride;
    float temperature = a.temperature[r];
    int32_t top_k = a.top_k[r];
    float top_p = a.top_p[r];
    enum rig__kind kind = rig__row_kind(temperature, top_k, top_p, rig__min_p(&a, r), a.vocab);
    /* decided before the scan, so that one flag, not top_k and top_p, lives across its loop */
    bool chunk_mass = rig__chunk_mass(kind, top_k, top_p, a.vocab);
    uint64_t seed = a.seed[r];
    uint32_t position = (uint32_t)a.position[r];
    int64_t begin = (int64_t)c * chunk;
    int64_t end = begin + chunk < a.vocab ? begin + chunk : a.vocab;
    struct rig__best b = {-INFINITY, -1, -INFINITY, -1, false, false};
    if (VEC4) {
#pragma unroll 4
        for (int64_t i = begin + 4 * (int64_t)threadIdx.x; i < end; i += 4 * RIG__CHUNK_THREADS) {
            if (i + 3 < end) {
                float4 v = *reinterpret_cast<const float4 *>(logits + i);
                rig__visit(&b, kind, v.x, i, temperature, seed, position);
                rig__visit(&b, kind, v.y, i + 1, temperature, seed, position);
                rig__visit(&b, kind, v.z, i + 2, temperature, seed, position);
                rig__visit(&b, kind, v.w, i + 3, temperature, seed, position);
            } else {
                for (int64_t j = i; j < end; j++)
                    rig__visit(&b, kind, logits[j], j, temperature, seed, position);
            }
        }
    } else {
        for (int64_t i = begin + threadIdx.x; i < end; i += RIG__CHUNK_THREADS)
            rig__visit(&b, kind, logits[i], i, temperature, seed, position);
    }
    int bad = __syncthreads_or(b.bad), some = __syncthreads_or(b.some);
    int64_t index = rig__block_argmax(b.value, b.index, shared_score, shared_index);
    int64_t gumbel_index = -1;
    if (kind == RIG__WHOLE)
        gumbel_index = rig__block_argmax(b.gumbel, b.gumbel_index, shared_score, shared_index);
    /* The winners' scores are recomputed from their indices: the same expressions, so the
     * same bits as in rig__visit. */
    if (threadIdx.x == 0) {
        struct rig__partial out = {
            -INFINITY, (int32_t)index, -INFINITY, (int32_t)gumbel_index, bad != 0, some != 0};
        out.value = kind == RIG__GREEDY ? logits[index] : logits[index] / temperature;
        if (kind == RIG__WHOLE) {
            float z = logits[gumbel_index] / temperature;
            out.gumbel =
                z + -logf(-logf(rig_philox_uniform(seed, position, (uint32_t)gumbel_index)));
        }
        part[r * chunks + c] = out;
    }
    /* The mass last, and only for the rows that use it: the row's parameters decide, so the
     * whole block leaves or stays together (the sum has barriers). A second read of the chunk
     * just scanned (cache hits); every thread has the same index. */
    if (!chunk_mass) return;
    double sum = rig__chunk_mass_sum(logits, begin, end, temperature, logits[index] / temperature,
                                     shared_tally);
    if (threadIdx.x == 0) mass[r * chunks + c] = sum;
}

/* Pass 2: a cluster of blocks per row (rig__row: one block at large batches). Greedy and
 * RIG__WHOLE rows reduce their chunks' partials (in chunk order, ties to the lower index: the
 * first maximum, as the simulator's scan), every block of the row alike. Top-k / top-p rows
 * take z_max from the partials (a rig__chunk_mass row its whole mass too, from `mass`) and run
 * the cut-off search over the row, the row's blocks together. Block 0 of the row writes its
 * token. */
static __global__ void __launch_bounds__(RIG__SAMPLE_THREADS)
    rig__sample_finish_kernel(struct rig__sample_args a, const struct rig__partial *part,
                              const double *mass, int32_t chunks)
{
    __shared__ struct rig__shared sh;
    rig_cuda_pdl_begin(); /* the partials are pass 1's output */
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    int32_t size = (int32_t)cluster.num_blocks();
    int64_t r = blockIdx.x / size;
    struct rig__row row = {a.logits + r * a.logits_stride,
                           a.vocab,
                           a.temperature[r],
                           0.0f,
                           0,
                           rig__min_p(&a, r),
                           -1.0,
                           (int32_t)cluster.block_rank(),
                           size};
    int32_t top_k = a.top_k[r];
    float top_p = a.top_p[r];
    enum rig__kind kind = rig__row_kind(row.temperature, top_k, top_p, row.min_p, a.vocab);
    /* Only a cut-off search needs the row's other blocks; they touch no other block's
     * shared memory otherwise, so they may leave now. */
    if (kind != RIG__CUT && row.rank != 0) return;
    bool whole = kind == RIG__WHOLE;
    float best = -INFINITY;
    int64_t best_index = -1;
    bool bad = false, some = false;
    for (int32_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        struct rig__partial p = part[r * chunks + c];
        bad |= p.bad != 0;
        some |= p.some != 0;
        float v = whole ? p.gumbel : p.value;
        int64_t i = whole ? p.gumbel_index : p.index;
        if (best_index < 0 || v > best) {
            best = v;
            best_index = i;
        }
    }
    /* the whole block agrees on the branch below */
    int any_bad = __syncthreads_or(bad), any_some = __syncthreads_or(some);
    bool invalid = any_bad != 0 || any_some == 0;
    int64_t token = rig__block_argmax(best, best_index, sh.score, sh.index);
    if (invalid) {
        token = 0; /* in range for what reads it next; `checked` says -1 */
    } else if (kind == RIG__CUT) {
        row.z_max = row.logits[token] / row.temperature;
        if (rig__chunk_mass(kind, top_k, top_p, a.vocab))
            row.mass = rig__row_mass(&row, part + r * chunks, mass + r * chunks, chunks, &sh);
        token = rig__sample_row(&row, top_k, top_p, a.seed[r], (uint32_t)a.position[r],
                                a.index_bits, &sh);
    }
    /* after a cut-off search, no block leaves while another may still read its shared memory */
    if (row.size > 1 && kind == RIG__CUT && !invalid) rig__group_sync(&row);
    if (row.rank != 0 || threadIdx.x != 0) return;
    a.tokens[r] = (int32_t)token;
    if (a.checked != NULL) a.checked[r] = invalid ? -1 : (int32_t)token;
}

/* Pass 2's launch configuration: `rows` clusters of `cluster` blocks of RIG__SAMPLE_THREADS, no
 * dynamic shared memory (struct rig__shared is static), and with `pdl` programmatic stream
 * serialisation. `attribute` (2 entries, the caller's) holds the attributes. The cluster-fit
 * query asks with this very configuration, so its answer is about the launch itself. */
static cudaLaunchConfig_t rig__finish_config(int64_t rows, int32_t cluster, cudaStream_t stream,
                                             bool pdl, cudaLaunchAttribute *attribute)
{
    RIG_ASSERT(cluster == 1 || cluster == 2 || cluster == 4 || cluster == 8);
    RIG_ASSERT(rows >= 1);
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = (unsigned)cluster;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    attribute[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[1].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3((unsigned)(rows * cluster));
    config.blockDim = dim3(RIG__SAMPLE_THREADS);
    config.dynamicSmemBytes = 0;
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = pdl ? 2 : 1;
    return config;
}

/* How many clusters of 1, 2, 4 and 8 pass-2 blocks (clusters[size]) the device holds at
 * once: cudaOccupancyMaxActiveClusters with pass 2's launch configuration, 0 where none fits or
 * the query fails (the error cleared, so the next launch does not report it). Asked once per
 * process, on the device current at the first call, the four sizes together (C++ initialises
 * the static once and thread-safely): the devices of a process are alike (a tensor-parallel
 * group's GPUs are of one kind, and a process sees one MIG slice at most). Host calls only, no
 * stream work, so the first call may come while a graph is captured. One instantiation of
 * rig__sample_finish_kernel: a template of it would need these facts per instantiation. */
struct rig__cluster_facts {
    int clusters[9]; /* [size], sizes 1, 2, 4 and 8 */
};

static const struct rig__cluster_facts &rig__cluster_facts_get(void)
{
    static const struct rig__cluster_facts facts = []() {
        struct rig__cluster_facts f = {};
        cudaError_t refused = cudaSuccess;
        int32_t largest = 1;
        for (int32_t size = 1; size <= 8; size *= 2) {
            cudaLaunchAttribute attribute[2];
            cudaLaunchConfig_t config = rig__finish_config(1, size, 0, false, attribute);
            cudaError_t error = cudaOccupancyMaxActiveClusters(&f.clusters[size],
                                                               rig__sample_finish_kernel, &config);
            if (error != cudaSuccess && refused == cudaSuccess) refused = error;
            if (error != cudaSuccess || f.clusters[size] < 0) f.clusters[size] = 0;
            if (f.clusters[size] > 0) largest = size;
        }
        (void)cudaGetLastError(); /* a refused query leaves no error for the next launch */
        /* said once, so that a fallback (or a query asked wrongly) is not silent */
        if (f.clusters[8] == 0)
            fprintf(stderr,
                    "rig: cuda: sample: the device holds no cluster of 8 pass-2 blocks (%s); "
                    "rows take %d block(s) at most\n",
                    refused != cudaSuccess ? cudaGetErrorString(refused) : "none fits",
                    (int)largest);
        return f;
    }();
    return facts;
}

/* Blocks per row in pass 2 (a cluster; 8 at most, the portable size): as many as keep the
 * batch's blocks within half the multiprocessors (batches of 8 rows or fewer get 8 on an
 * H200). Measured on the H200 (docs/performance.md): a cut-off row's search took 359 -> 121 us
 * at batches 1-8 with 8 blocks, but with 8 blocks a row at batch 64 it was slower than alone
 * (397 -> 437 us), and every greedy batch paid for the extra blocks. RIG_SAMPLE_CLUSTER (a
 * measuring switch, read once) sets the size: 1 is the one-block kernel.
 *
 * The cluster-fit guard: a device that cannot co-schedule a cluster of the size chosen (a MIG
 * slice, too little shared memory) would fail pass 2's launch, so the size is halved until
 * rig__cluster_facts_get says at least one such cluster fits; a cluster of 1 is a plain launch
 * and always fits. RIG_SAMPLE_CLUSTER_MAX=N (a measuring and testing switch, read at every call
 * so a test can change it: one getenv a launch) caps the size the same way, so the fallback
 * runs on a full GPU too; N < 2 is the one-block kernel. Every size samples the same tokens
 * (counts, keys and argmaxes do not depend on the split; file comment), so the guard changes
 * the speed only. The size comes from host values alone (the batch, the device's answers and
 * the environment), so a captured graph holds a valid launch. */
static int32_t rig__cluster_size(int64_t rows, int32_t sm_count)
{
    static const long wanted = rig_cuda_env("RIG_SAMPLE_CLUSTER", 0);
    int32_t size = 8;
    if (wanted == 1 || wanted == 2 || wanted == 4 || wanted == 8) {
        size = (int32_t)wanted;
    } else {
        while (size > 1 && rows * size > (int64_t)(sm_count > 1 ? sm_count : 2) / 2)
            size /= 2;
    }
    long most = rig_cuda_env("RIG_SAMPLE_CLUSTER_MAX", 8);
    const struct rig__cluster_facts &facts = rig__cluster_facts_get();
    while (size > 1 && (size > most || facts.clusters[size] == 0))
        size /= 2;
    RIG_ASSERT(size >= 1 && size <= 8);
    return size;
}

int32_t rig_cuda_sample_cluster(int64_t rows, int32_t sm_count)
{
    RIG_ASSERT(rows >= 1);
    return rig__cluster_size(rows, sm_count);
}

int32_t rig_cuda_sample_cluster_fit(int32_t size)
{
    RIG_ASSERT(size == 1 || size == 2 || size == 4 || size == 8);
    return (int32_t)rig__cluster_facts_get().clusters[size];
}

/* Scratch a (row, chunk) takes: its partial and its mass slot (the two arrays of the file
 * comment), whether or not the row writes the mass; the same 32 bytes as the one 32-byte
 * partial before, so the chunk count, and with it every mass's summation order, is too. */
#define RIG__CHUNK_SCRATCH (sizeof(struct rig__partial) + sizeof(double))
static_assert(sizeof(struct rig__partial) == 24, "the partial greedy and whole rows move");
static_assert(sizeof(struct rig__partial) % alignof(double) == 0, "the masses stay aligned");

/* Chunks per row: enough blocks for RIG__CHUNK_WAVES per multiprocessor over the batch, no
 * chunk under RIG__CHUNK_MIN logits, and the partials and masses within the stream's scratch. */
static int32_t rig__chunk_count(int64_t rows, int64_t vocab, int32_t sm_count,
                                size_t scratch_bytes)
{
    int64_t want = rig_cuda_div_up((int64_t)(sm_count > 0 ? sm_count : 1) * RIG__CHUNK_WAVES, rows);
    int64_t most = rig_cuda_div_up(vocab, RIG__CHUNK_MIN);
    int64_t chunks = want < most ? want : most;
    while (chunks > 1 && (size_t)(rows * chunks) * RIG__CHUNK_SCRATCH > scratch_bytes)
        chunks--;
    return (int32_t)chunks;
}

enum rig_status rig_cuda_op_sample(const struct rig_cuda_launch *launch,
                                   const struct rig_op_sample *p)
{
    int64_t rows = p->logits.shape[0];
    if (rows == 0) return RIG_OK;
    if (p->logits.shape[1] > INT32_MAX) return RIG_E_RANGE;
    struct rig__sample_args a;
    a.tokens = (int32_t *)p->tokens.data;
    a.checked = (int32_t *)p->checked.data;
    a.logits = (const float *)p->logits.data;
    a.logits_stride = p->logits.stride[0];
    a.vocab = p->logits.shape[1];
    a.index_bits = 1;
    while (a.index_bits < 31 && (1ll << a.index_bits) < a.vocab)
        a.index_bits++;
    a.temperature = (const float *)p->temperature.data;
    a.top_k = (const int32_t *)p->top_k.data;
    a.top_p = (const float *)p->top_p.data;
    a.seed = (const uint64_t *)p->seed.data;
    a.position = (const int32_t *)p->position.data;
    a.min_p = (const float *)p->min_p.data;
    int32_t chunks = rig__chunk_count(rows, a.vocab, launch->sm_count, launch->scratch_bytes);
    if ((size_t)(rows * chunks) * RIG__CHUNK_SCRATCH > launch->scratch_bytes ||
        rows * chunks > INT32_MAX)
        return RIG_E_RANGE;
    /* A multiple of 4 keeps every chunk start as aligned as the row. */
    int32_t chunk = (int32_t)(rig_cuda_div_up(rig_cuda_div_up(a.vocab, chunks), 4) * 4);
    chunks = (int32_t)rig_cuda_div_up(a.vocab, chunk);
    bool vec4 = rig_cuda_aligned(a.logits, 16) && a.logits_stride % 4 == 0;
    /* (rows, chunks) partials, then (rows, chunks) masses; the recount above only lowered
     * chunks, so both stay within the scratch checked for */
    struct rig__partial *part = (struct rig__partial *)launch->scratch;
    double *mass = (double *)(part + rows * chunks);
    RIG_ASSERT(rig_cuda_aligned(mass, alignof(double)));
    unsigned blocks = (unsigned)(rows * chunks);
    RIG_CUDA_TRY(rig_cuda_launch_pdl(
        launch, vec4 ? rig__sample_chunk_kernel<true> : rig__sample_chunk_kernel<false>,
        dim3(blocks), dim3(RIG__CHUNK_THREADS), 0, a, part, mass, chunk, chunks));
    RIG_CUDA_LAUNCHED();
    int32_t cluster = rig__cluster_size(rows, launch->sm_count);
    cudaLaunchAttribute attribute[2];
    cudaLaunchConfig_t config =
        rig__finish_config(rows, cluster, launch->stream, launch->pdl, attribute);
    RIG_CUDA_TRY(cudaLaunchKernelEx(&config, rig__sample_finish_kernel, a,
                                    (const struct rig__partial *)part, (const double *)mass,
                                    chunks));
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
