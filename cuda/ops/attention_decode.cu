/* attention_decode.cu — decode attention (see attention_decode.cuh), and the staged split-KV
 * kernel shared with prefill (attention_common.cuh).
 *
 * Decode reads every key and value of every request once and does about G flops per byte: it is
 * bound by HBM bandwidth, so the kernel's job is to keep enough bytes in flight and to spend
 * as little issue time per key as possible. Three paths:
 *
 * 0. On Hopper, groups of 4 and 8 at D 64/128 with enough (request, KV head) items take the
 *    tensor-core prefill kernel (attention_prefill_wgmma.cu, its decode variant: a request's
 *    G query heads are rows of one m64 tile, K and V pass through shared memory from a
 *    producer warpgroup, P V as exact as fp32 P; rig__decode_tc_wanted has the rule). On an
 *    H200 at 256 x 1024 it streams the Qwen3-8B shape at 3.6 TB/s against the register
 *    path's 2.4, Qwen3-32B's (G = 8) at 3.6 against 1.3, and Llama-3.2-1B's (D 64, two blocks a
 *    multiprocessor) at 3.5 against 2.4.
 * 1. The register path (rig__decode_kernel; D 64/128/256, G = Hq/Hk 1/2/4/8, 16-byte aligned
 *    K/V rows). Grid (KV head, request, split), RIG_DECODE_WARPS warps: the KV heads of a
 *    request, whose K (and V) rows lie side by side in each slot, are scheduled together and
 *    read neighbouring bytes at about the same time (~1 % at 256 x 1024). D/8 consecutive lanes
 *    (a lane group) hold one key row, 8 dims (one 16-byte load) each, so a warp holds
 *    32/(D/8) lane groups (2 for D = 128). Each lane keeps H query heads of the group (fp32,
 *    its 8 dims) and their online-softmax state (max, sum, 8 fp32 output dims per head) in
 *    REGISTERS: no shared-memory traffic per key. H = G up to RIG_DECODE_HEADS; a larger
 *    group is cut into slices held by neighbouring lane groups of one warp that read the same
 *    key in the same load instruction (fetched once), which keeps registers near 100 (G = 8,
 *    D = 128: 121 instead of 190). One step: every key row takes `unroll` keys
 *    (max(1, RIG_DECODE_KEYS / H)), issues all their K and V loads at once (their slots were
 *    fetched during the previous step), scores them against its heads (8 FMAs, then a
 *    butterfly over the row's lanes, so all lanes agree on the score), and folds them into
 *    its state with one rescale per step. At the end the rows of a warp merge by shuffles and
 *    the warps through shared memory (log-sum-exp). Bytes in flight: 32 * unroll per thread,
 *    ~96 KB per SM at D = 128, G = 2 (RIG_DECODE_KEYS_NARROW 12: 6 keys a thread, 128
 *    registers, 4 blocks of 128 threads per SM; on an H200 Qwen3-0.6B's attention at 256 x 1024
 *    went 340 -> 302 us, 74 -> 84 % of the copy bandwidth, against 8 keys: 3 a thread, 96
 *    registers, 5 blocks, ~80 KB; docs/performance.md). Tried and
 *    slower on an H100: a per-thread cp.async pipeline of 3 or 4 stages in shared memory
 *    (5-14 % slower at 256 x 1024 and 64 x 8192; on an H200 with 2 or 3 stages, 6-7 % slower
 *    at 256 x 1024, faster only for one long row), 16 keys per step (17-28 %: 166 registers),
 *    merging splits in thread-block clusters through distributed shared memory (slower at
 *    batch 1 and 8 than the global merge below).
 *    Groups of 4 and 8 at D 64 and 128 take the WIDE layout: twice the heads per thread (4)
 *    and twice the keys (16 / H per step), registers capped at 128 (4 blocks per SM). The
 *    narrow layout's slices load each key once per slice, so a group of 4 held half the
 *    distinct bytes in flight of a group of 2 and streamed at half its bandwidth: on an H200
 *    the Qwen3-8B shape at 256 x 1024 took 526-556 us narrow, 432-452 us wide (2.0 -> 2.4
 *    TB/s); of the four layouts measured (keys x 2, heads x 2, both, neither) both won at
 *    every batch-256 and batch-64 decode step (RIG_DECODE_WIDE=0 restores the narrow one).
 * 2. The staged path (rig__split_kv_kernel): any even D up to 512, any G, unaligned caches,
 *    and prefill for head dims the tensor-core kernel does not take. Per tile of 32 keys the
 *    block stages K and V in shared memory (cp.async double buffering on the 16-byte path);
 *    each warp takes one query head: lane j scores key j and the output accumulates in fp32
 *    in shared memory. Shared rows are padded so 32 lanes reading 32 rows hit 32 banks.
 *
 * attention_decode_store (hal/ops.h) adds q/k norm + RoPE + the K/V store: on the register path
 * its blocks can run it first ("The store prologue" below; rig__store_wanted says where),
 * elsewhere qk_norm_rope_store's kernel runs before the attention's.
 *
 * Both split the keys of a row over blocks (flash decoding) when rows x KV heads would not fill
 * the GPU; the register path also splits so that the grid's last wave of resident blocks is nearly
 * full, and may pad its shared memory to fit one block fewer per SM when that needs fewer splits
 * (rig__decode_plan_waves). The number of splits is chosen on the HOST from values fixed at capture
 * time (row count, page-table width, scratch size), never from kv_len, which lives on the device
 * and changes between graph replays: each block takes ceil(keys / splits) keys of its row, and a
 * block left with none writes lse = -inf. With one split a block writes bf16 output; otherwise it
 * writes its normalised partial output and log-sum-exp to the stream's scratch. The staged path
 * merges them in a combine kernel (weights from the log-sum-exps once per head, then unrolled
 * independent loads over the splits). The register path merges in the same launch (one graph node,
 * no second launch latency at batch 1): the kernel first narrows the host's split count for the
 * row's kv_len (whole steps, at least RIG_DECODE_SPLIT_STEPS per split, and in groups of 1 and 2
 * at most 16 splits for a row of up to 16 x 16 steps: rig__decode_share; splits past the keys
 * exit at once, so a short row runs few blocks), then each block counts its arrival in a
 * per-(row, KV head) counter (the stream's counters, zeroed at stream creation, cuda_internal.h)
 * and the last one to arrive merges the partials in split order (with at most 16 splits, each
 * thread's partials load before their weights are known: one L2 round trip instead of two at batch
 * 1) and resets the counter to 0 for the next launch or graph replay. At batch 1
 * (RIG__DECODE_CLUSTER_ROWS rows, 2-16 splits) a (row, KV head)'s splits are instead one
 * thread-block cluster, and block 0 merges the partials from the others' shared memory after a
 * cluster barrier (rig__decode_merge_cluster: no arrival count, no partials through L2; the same
 * arithmetic and order, so the same bits; RIG_DECODE_CLUSTER=0/1). Math is fp32 with scores
 * scale * (q . k) and expf, as in the simulator (sim/kernels/attention.c); only the summation
 * order differs. The reduction order is fixed by the launch shape, so results are deterministic
 * run to run.
 */
#include <cooperative_groups.h>
#include <math.h>

#include "cuda/ops/attention_common.cuh"
#include "cuda/ops/attention_decode.cuh"
#include "cuda/ops/qk_norm_rope_store.cuh"
#include "cuda/ops/qk_rope.cuh"
#include "hal/optable.h"
extern "C" {
#include "hal/rope.h" /* rig_rope_inv_freq: C */
}

RIG_CUDA_MODULE(attention_decode)

#define RIG__TILE         32
#define RIG__HEAD_DIM_MAX 512
#define RIG__SPLITS_MAX   64

struct rig__partials {
    float *values;      /* [Q, Hq, splits, D] normalised partial outputs */
    float *lse;         /* [Q, Hq, splits] log-sum-exp of the split's scores; -inf when empty */
    uint32_t *counters; /* [Q, Hk] arrivals (register path); zero between launches */
    int32_t splits;
    int32_t split_steps; /* register path: least steps of keys a split takes (rig__decode_share) */
    int32_t split_cap;   /* register path: splits a short row is held to (0: none) */
    bool heads_first;    /* register path: grid (KV head, row, split), else (row, KV head, split) */
    bool merge_prefetch; /* register path: the merge loads partials while weighing the splits */
    bool l2_prefetch;    /* register path, one wave: ask L2 for the block's K/V before the wait */
};

/* Row pitch (in halves) of a staged K or V row. VEC 8 (16-byte path): D + 8, so rows stay
 * 16-byte aligned for cp.async and the 8 lanes of a 16-byte shared load phase hit distinct
 * bank groups. VEC 2: >= D and 2 mod 4, so 32 lanes reading 4-byte words of 32 rows hit 32
 * banks. */
static inline __host__ __device__ int64_t rig__pitch(int64_t dim, int vec)
{
    if (vec == 8) return dim + 8;
    int64_t pitch = dim;
    while (pitch % 4 != 2)
        pitch++;
    return pitch;
}

/* K/V stages: two (double buffering through cp.async) on the 16-byte path, one otherwise. */
static inline __host__ __device__ int rig__stages(int vec)
{
    return vec == 8 ? 2 : 1;
}

struct rig__layout {
    float *q;       /* [G][D] query heads of the group, fp32 */
    float *acc;     /* [G][D] unnormalised output */
    float *m;       /* [G] running max */
    float *l;       /* [G] running sum */
    float *p;       /* [warps][32] probabilities of the current tile */
    int32_t *slots; /* [32] (VEC 2 only) */
    uint16_t *k;    /* [stages][32][pitch] */
    uint16_t *v;    /* [stages][32][pitch] */
};

/* Floats before the K/V stages, rounded up to 16 bytes. */
static __host__ __device__ int64_t rig__head_floats(int64_t group, int64_t dim, int warps)
{
    int64_t floats = 2 * group * dim + 2 * group + warps * RIG__TILE + RIG__TILE;
    return (floats + 3) / 4 * 4;
}

static __host__ __device__ size_t rig__shared_bytes(int64_t group, int64_t dim, int warps, int vec)
{
    return (size_t)rig__head_floats(group, dim, warps) * sizeof(float) +
           (size_t)rig__stages(vec) * 2 * RIG__TILE * rig__pitch(dim, vec) * sizeof(uint16_t);
}

template <int VEC>
static __device__ struct rig__layout rig__carve(char *base, int64_t group, int64_t dim, int warps)
{
    struct rig__layout s;
    s.q = reinterpret_cast<float *>(base);
    s.acc = s.q + group * dim;
    s.m = s.acc + group * dim;
    s.l = s.m + group;
    s.p = s.l + group;
    s.slots = reinterpret_cast<int32_t *>(s.p + warps * RIG__TILE);
    s.k = reinterpret_cast<uint16_t *>(s.q + rig__head_floats(group, dim, warps));
    s.v = s.k + rig__stages(VEC) * RIG__TILE * rig__pitch(dim, VEC);
    return s;
}

/* Starts copying K and V of keys [first, first + n) into stage `stage` (VEC 8 path); rows
 * past n are zero-filled. Slots come straight from the page-table row. */
static __device__ void rig__stage_async(const struct rig_cuda_attention_args *a,
                                        const struct rig__layout *s, const int32_t *slots,
                                        int64_t kv_head, int64_t first, int64_t n, int stage)
{
    int64_t chunks = a->head_dim / 8, pitch = rig__pitch(a->head_dim, 8);
    uint16_t *k = s->k + stage * RIG__TILE * pitch, *v = s->v + stage * RIG__TILE * pitch;
    for (int64_t c = threadIdx.x; c < 2 * RIG__TILE * chunks; c += blockDim.x) {
        bool is_v = c >= RIG__TILE * chunks;
        int64_t local = is_v ? c - RIG__TILE * chunks : c;
        int64_t j = local / chunks, d = (local % chunks) * 8;
        int64_t slot = j < n ? slots[first + j] : 0;
        const uint16_t *src = (is_v ? a->v_cache : a->k_cache) + slot * a->cache_stride_s +
                              kv_head * a->cache_stride_h + d;
        rig_cuda_cp_async16(rig_cuda_smem_address((is_v ? v : k) + j * pitch + d), src, j < n);
    }
    asm volatile("cp.async.commit_group;\n" ::);
}

/* Stages K and V of keys [first, first + n) synchronously (VEC 2 path, one stage, slots
 * already in s->slots); rows past n are zeros. */
static __device__ void rig__stage_tile(const struct rig_cuda_attention_args *a,
                                       const struct rig__layout *s, int64_t kv_head, int64_t pitch,
                                       int64_t n)
{
    int64_t chunks = a->head_dim / 2;
    for (int64_t c = threadIdx.x; c < 2 * RIG__TILE * chunks; c += blockDim.x) {
        bool is_v = c >= RIG__TILE * chunks;
        int64_t local = is_v ? c - RIG__TILE * chunks : c;
        int64_t j = local / chunks, d = (local % chunks) * 2;
        uint16_t values[2] = {0, 0};
        if (j < n) {
            const uint16_t *cache = is_v ? a->v_cache : a->k_cache;
            int64_t offset =
                (int64_t)s->slots[j] * a->cache_stride_s + kv_head * a->cache_stride_h + d;
            rig_cuda_load_bf16<2>(cache + offset, values);
        }
        uint16_t *dst = (is_v ? s->v : s->k) + j * pitch + d;
        *reinterpret_cast<uint32_t *>(dst) = (uint32_t)values[0] | ((uint32_t)values[1] << 16);
    }
}

/* q . k over D for one staged key row: 16-byte reads on the VEC 8 path, 4-byte otherwise. */
template <int VEC>
static __device__ __forceinline__ float rig__dot(const float *q, const uint16_t *k, int64_t dim)
{
    float dot = 0.0f;
    if constexpr (VEC == 8) {
        const uint4 *k8 = reinterpret_cast<const uint4 *>(k);
        const float4 *q4 = reinterpret_cast<const float4 *>(q);
        for (int64_t w = 0; w < dim / 8; w++) {
            uint4 packed = k8[w];
            float4 lo = q4[2 * w], hi = q4[2 * w + 1];
            uint32_t words[4] = {packed.x, packed.y, packed.z, packed.w};
            float qs[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
            for (int e = 0; e < 4; e++) {
                dot += qs[2 * e] * rig_cuda_bf16((uint16_t)(words[e] & 0xffffu));
                dot += qs[2 * e + 1] * rig_cuda_bf16((uint16_t)(words[e] >> 16));
            }
        }
    } else {
        const uint32_t *k2 = reinterpret_cast<const uint32_t *>(k);
        const float2 *q2 = reinterpret_cast<const float2 *>(q);
        for (int64_t w = 0; w < dim / 2; w++) {
            uint32_t pair = k2[w];
            float2 qv = q2[w];
            dot += qv.x * rig_cuda_bf16((uint16_t)(pair & 0xffffu));
            dot += qv.y * rig_cuda_bf16((uint16_t)(pair >> 16));
        }
    }
    return dot;
}

/* One warp's online-softmax update of query head g over a staged tile of n keys. */
template <int VEC>
static __device__ void rig__attend_tile(const struct rig_cuda_attention_args *a,
                                        const struct rig__layout *s, const uint16_t *k_tile,
                                        const uint16_t *v_tile, int64_t g, int64_t pitch, int64_t n)
{
    int lane = threadIdx.x % RIG_CUDA_WARP, warp = threadIdx.x / RIG_CUDA_WARP;
    int64_t dim = a->head_dim;
    float score = -INFINITY;
    if (lane < n) score = rig__dot<VEC>(s->q + g * dim, k_tile + lane * pitch, dim) * a->scale;
    float m_old = s->m[g];
    float m_new = fmaxf(m_old, rig_cuda_warp_max(score));
    float p = lane < n ? expf(score - m_new) : 0.0f;
    float alpha = m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
    float *p_warp = s->p + warp * RIG__TILE;
    p_warp[lane] = p;
    float sum = rig_cuda_warp_sum(p);
    __syncwarp();
    if (lane == 0) {
        s->l[g] = s->l[g] * alpha + sum;
        s->m[g] = m_new;
    }
    for (int64_t d = lane; d < dim; d += RIG_CUDA_WARP) {
        float acc = s->acc[g * dim + d] * alpha;
        for (int64_t j = 0; j < n; j++)
            acc += p_warp[j] * rig_cuda_bf16(v_tile[j * pitch + d]);
        s->acc[g * dim + d] = acc;
    }
    __syncwarp();
}

/* Writes the block's result for its heads: bf16 output, or a partial and its LSE. */
static __device__ void rig__finish(const struct rig_cuda_attention_args *a,
                                   const struct rig__layout *s, struct rig__partials part,
                                   int64_t row, int64_t kv_head, int64_t group)
{
    int lane = threadIdx.x % RIG_CUDA_WARP, warp = threadIdx.x / RIG_CUDA_WARP;
    int warps = blockDim.x / RIG_CUDA_WARP;
    int64_t dim = a->head_dim;
    for (int64_t g = warp; g < group; g += warps) {
        int64_t head = kv_head * group + g;
        float l = s->l[g];
        float inverse = l > 0.0f ? 1.0f / l : 0.0f;
        if (part.splits == 1) {
            uint16_t *out = a->out + row * a->out_stride_t + head * a->out_stride_h;
            for (int64_t d = lane; d < dim; d += RIG_CUDA_WARP)
                out[d] = rig_cuda_to_bf16(s->acc[g * dim + d] * inverse);
            continue;
        }
        int64_t slot = (row * a->heads_q + head) * part.splits + blockIdx.z;
        for (int64_t d = lane; d < dim; d += RIG_CUDA_WARP)
            part.values[slot * dim + d] = s->acc[g * dim + d] * inverse;
        if (lane == 0) part.lse[slot] = l > 0.0f ? s->m[g] + logf(l) : -INFINITY;
    }
}

template <int VEC>
static __global__ void rig__split_kv_kernel(struct rig_cuda_attention_args a,
                                            struct rig__partials part)
{
    extern __shared__ __align__(16) char rig__shared[];
    int64_t row = blockIdx.x, kv_head = blockIdx.y;
    int64_t group = a.heads_q / a.heads_kv, dim = a.head_dim, pitch = rig__pitch(dim, VEC);
    int warps = blockDim.x / RIG_CUDA_WARP, warp = threadIdx.x / RIG_CUDA_WARP;
    struct rig__layout s = rig__carve<VEC>(rig__shared, group, dim, warps);
    struct rig_cuda_attention_place place = rig_cuda_attention_locate(&a, row);
    int64_t share = rig_cuda_div_up(place.keys, part.splits);
    int64_t begin = share * blockIdx.z;
    int64_t end = begin + share < place.keys ? begin + share : place.keys;
    int64_t tiles = end > begin ? rig_cuda_div_up(end - begin, RIG__TILE) : 0;
    if (VEC == 8 && tiles > 0)
        rig__stage_async(&a, &s, place.slots, kv_head, begin,
                         end - begin < RIG__TILE ? end - begin : RIG__TILE, 0);
    const uint16_t *q = a.q + row * a.q_stride_t + kv_head * group * a.q_stride_h;
    for (int64_t i = threadIdx.x; i < group * dim; i += blockDim.x) {
        s.q[i] = rig_cuda_bf16(q[(i / dim) * a.q_stride_h + i % dim]);
        s.acc[i] = 0.0f;
    }
    for (int64_t g = threadIdx.x; g < group; g += blockDim.x) {
        s.m[g] = -INFINITY;
        s.l[g] = 0.0f;
    }
    for (int64_t tile = 0; tile < tiles; tile++) {
        int64_t first = begin + tile * RIG__TILE;
        int64_t n = end - first < RIG__TILE ? end - first : RIG__TILE;
        int stage = VEC == 8 ? (int)(tile & 1) : 0;
        if constexpr (VEC == 8) {
            if (tile + 1 < tiles) {
                int64_t next = first + RIG__TILE;
                rig__stage_async(&a, &s, place.slots, kv_head, next,
                                 end - next < RIG__TILE ? end - next : RIG__TILE, 1 - stage);
                asm volatile("cp.async.wait_group 1;\n" ::);
            } else {
                asm volatile("cp.async.wait_group 0;\n" ::);
            }
            __syncthreads(); /* the stage has landed; q and the state are initialised */
        } else {
            __syncthreads(); /* the previous tile is consumed; q and state are initialised */
            if (threadIdx.x < RIG__TILE)
                s.slots[threadIdx.x] = threadIdx.x < n ? place.slots[first + threadIdx.x] : 0;
            __syncthreads();
            rig__stage_tile(&a, &s, kv_head, pitch, n);
            __syncthreads();
        }
        const uint16_t *k_tile = s.k + stage * RIG__TILE * pitch;
        const uint16_t *v_tile = s.v + stage * RIG__TILE * pitch;
        for (int64_t g = warp; g < group; g += warps)
            rig__attend_tile<VEC>(&a, &s, k_tile, v_tile, g, pitch, n);
        if constexpr (VEC == 8) __syncthreads(); /* the stage is refilled two tiles on */
    }
    __syncthreads();
    rig__finish(&a, &s, part, row, kv_head, group);
}

/* Merges the splits of one (row, query head): warp 0 turns the splits' log-sum-exps into
 * weights in shared memory, then every thread sums its dims over the splits with unrolled,
 * independent loads (64 dependent L2 round trips would cost microseconds at batch 1). */
static __global__ void rig__combine_kernel(struct rig_cuda_attention_args a,
                                           struct rig__partials part)
{
    __shared__ float weight[RIG__SPLITS_MAX];
    __shared__ float total;
    int64_t row = blockIdx.x, head = blockIdx.y, dim = a.head_dim;
    int64_t base = (row * a.heads_q + head) * part.splits;
    if (threadIdx.x < RIG_CUDA_WARP) {
        float lse_max = -INFINITY, sum = 0.0f;
        for (int32_t i = threadIdx.x; i < part.splits; i += RIG_CUDA_WARP)
            lse_max = fmaxf(lse_max, part.lse[base + i]);
        lse_max = rig_cuda_warp_max(lse_max);
        for (int32_t i = threadIdx.x; i < part.splits; i += RIG_CUDA_WARP) {
            float lse = part.lse[base + i];
            weight[i] = lse == -INFINITY ? 0.0f : expf(lse - lse_max);
            sum += weight[i];
        }
        sum = rig_cuda_warp_sum(sum);
        if (threadIdx.x == 0) total = sum;
    }
    __syncthreads();
    uint16_t *out = a.out + row * a.out_stride_t + head * a.out_stride_h;
    const float *values = part.values + base * dim;
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
        float numerator = 0.0f;
#pragma unroll 8
        for (int32_t i = 0; i < part.splits; i++)
            numerator += weight[i] * values[i * dim + d];
        out[d] = rig_cuda_to_bf16(total > 0.0f ? numerator / total : 0.0f);
    }
}

static int32_t rig__choose_splits(const struct rig_cuda_launch *launch,
                                  const struct rig_cuda_attention_args *a)
{
    int64_t blocks = a->rows * a->heads_kv;
    int64_t splits = rig_cuda_div_up(2 * (int64_t)launch->sm_count, blocks > 0 ? blocks : 1);
    int64_t tiles = rig_cuda_div_up(a->page_table_cols, RIG__TILE);
    if (splits > tiles) splits = tiles;
    if (splits > RIG__SPLITS_MAX) splits = RIG__SPLITS_MAX;
    size_t per_split = (size_t)(a->rows * a->heads_q) * (size_t)(a->head_dim + 1) * sizeof(float);
    while (splits > 1 && (size_t)splits * per_split > launch->scratch_bytes)
        splits--;
    return splits < 1 ? 1 : (int32_t)splits;
}

template <int VEC>
static enum rig_status rig__launch(const struct rig_cuda_launch *launch,
                                   const struct rig_cuda_attention_args *a,
                                   struct rig__partials part, int warps, size_t shared)
{
    if (shared > 48 * 1024)
        RIG_CUDA_TRY(cudaFuncSetAttribute(
            rig__split_kv_kernel<VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    dim3 grid((unsigned)a->rows, (unsigned)a->heads_kv, (unsigned)part.splits);
    rig__split_kv_kernel<VEC><<<grid, warps * RIG_CUDA_WARP, shared, launch->stream>>>(*a, part);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}

enum rig_status rig_cuda_attention_split_kv(const struct rig_cuda_launch *launch,
                                            const struct rig_cuda_attention_args *a)
{
    if (a->rows == 0 || a->heads_q == 0) return RIG_OK;
    int64_t dim = a->head_dim, group = a->heads_q / a->heads_kv;
    if (dim % 2 != 0 || dim > RIG__HEAD_DIM_MAX || a->cache_stride_s % 2 != 0 ||
        a->cache_stride_h % 2 != 0) {
        fprintf(stderr, "rig: cuda: attention: head dim %lld not supported (even, <= %d)\n",
                (long long)dim, RIG__HEAD_DIM_MAX);
        return RIG_E_UNSUPPORTED;
    }
    int warps = group < 4 ? (int)group : 4;
    bool vec = dim % 8 == 0 && a->cache_stride_s % 8 == 0 && a->cache_stride_h % 8 == 0 &&
               rig_cuda_aligned(a->k_cache, 16) && rig_cuda_aligned(a->v_cache, 16);
    size_t shared = rig__shared_bytes(group, dim, warps, vec ? 8 : 2);
    if (shared > launch->shared_optin_bytes) {
        fprintf(stderr,
                "rig: cuda: attention: %lld query heads per KV head need %zu bytes of "
                "shared memory\n",
                (long long)group, shared);
        return RIG_E_UNSUPPORTED;
    }
    struct rig__partials part;
    part.splits = rig__choose_splits(launch, a);
    part.counters = NULL; /* the staged path merges in rig__combine_kernel */
    part.split_steps = 1;  /* unused: the staged path splits by rig__choose_splits */
    part.split_cap = 0;
    part.heads_first = false;
    part.merge_prefetch = false;
    part.l2_prefetch = false;
    part.values = (float *)launch->scratch;
    part.lse = part.values + (size_t)a->rows * a->heads_q * part.splits * dim;
    enum rig_status status = vec ? rig__launch<8>(launch, a, part, warps, shared)
                                 : rig__launch<2>(launch, a, part, warps, shared);
    if (status != RIG_OK || part.splits == 1) return status;
    dim3 grid((unsigned)a->rows, (unsigned)a->heads_q);
    rig__combine_kernel<<<grid, 128, 0, launch->stream>>>(*a, part);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}

/* --- the register path: decode at the bandwidth limit -------------------------------------- */

/* Compile-time knobs of the register path (the lead may measure others with -D):
 * RIG_DECODE_WARPS       warps per block; each warp holds 32 / (D / 8) key rows at a time.
 * RIG_DECODE_KEYS        keys loaded per key row and step for one query head per thread in the
 *                        wide layout (twice this); with H heads a thread loads max(1, KEYS / H)
 *                        keys, so that K/V registers plus the H heads' q and o stay near 128
 *                        per thread whatever the group.
 * RIG_DECODE_KEYS_NARROW the same for the narrow layout (groups of 1 and 2, and every group at
 *                        D 256). 12 since the eighth session: on an H200 8 left Qwen3-0.6B's
 *                        big batches at 74 % of the copy bandwidth, 12 reached 84 % (b256 x
 *                        2048 -10 %), b8 x 2048 +3 %; 12 in the wide layout (24) made batch 1
 *                        of Llama-3.2-1B and Qwen3-8B 3-4 % slower, so it stays 16 there.
 * RIG_DECODE_HEADS       query heads per thread wanted: a larger group is cut into slices of
 *                        this many heads, held by neighbouring lane groups of the same warp
 *                        that load the same key (one warp load instruction: the coalescer
 *                        fetches the bytes once). At most 32 / (D / 8) slices fit in a warp,
 *                        so D = 256 keeps all G heads per thread.
 * RIG_DECODE_BLOCKS_PER_SM  split-KV target: blocks per multiprocessor before splitting stops.
 * RIG_DECODE_SPLIT_STEPS least steps (of keys_per_step keys) a split takes when the row's
 *                        kv_len is short for the host's split count: fewer, longer splits.
 * RIG_DECODE_GROUP_MAX   largest G the register path takes (1, 2, 4 or 8); larger groups go
 *                        to the staged path.
 * (Which shapes take the tensor-core kernel: rig_decode_tensor_cores, hal/optable.h.) */
#ifndef RIG_DECODE_WARPS
#define RIG_DECODE_WARPS 4
#endif
#ifndef RIG_DECODE_KEYS
#define RIG_DECODE_KEYS 8
#endif
#ifndef RIG_DECODE_KEYS_NARROW
#define RIG_DECODE_KEYS_NARROW 12
#endif
#ifndef RIG_DECODE_HEADS
#define RIG_DECODE_HEADS 2
#endif
#ifndef RIG_DECODE_BLOCKS_PER_SM
#define RIG_DECODE_BLOCKS_PER_SM 4
#endif
#ifndef RIG_DECODE_GROUP_MAX
#define RIG_DECODE_GROUP_MAX 8
#endif
#ifndef RIG_DECODE_SPLIT_STEPS
#define RIG_DECODE_SPLIT_STEPS 1
#endif
static_assert(RIG_DECODE_SPLIT_STEPS >= 1, "a split takes at least one step");
static_assert(RIG_DECODE_WARPS >= 1 && RIG_DECODE_WARPS <= 32, "1 to 32 warps");
static_assert(RIG_DECODE_KEYS >= 1 && RIG_DECODE_KEYS <= 16, "1 to 16 keys in flight");
static_assert(RIG_DECODE_KEYS_NARROW >= 1 && RIG_DECODE_KEYS_NARROW <= 16,
              "1 to 16 keys in flight");
static_assert(RIG_DECODE_HEADS == 1 || RIG_DECODE_HEADS == 2 || RIG_DECODE_HEADS == 4 ||
                  RIG_DECODE_HEADS == 8,
              "heads per thread: a power of two up to 8");

/* The thread layout for head dim D and group G: `lanes` consecutive threads (a lane group)
 * hold one key row, 8 dims each, for `heads` query heads; `slices` consecutive lane groups
 * (same warp) hold the G / heads slices of the group for the same key; `rows` key rows per
 * block; `unroll` keys per row and step. WIDE (groups of 4 and 8 at D 64 and 128; see
 * rig__decode_launch_group) doubles both RIG_DECODE_HEADS and RIG_DECODE_KEYS. */
template <int D, int G, bool WIDE = false> struct rig__decode_shape {
    static constexpr int keys = WIDE ? 2 * RIG_DECODE_KEYS : RIG_DECODE_KEYS_NARROW;
    static constexpr int heads_wanted = WIDE ? 2 * RIG_DECODE_HEADS : RIG_DECODE_HEADS;
    static constexpr int lanes = D / 8;
    static constexpr int groups_per_warp = RIG_CUDA_WARP / lanes;
    static constexpr int wanted = G > heads_wanted ? G / heads_wanted : 1;
    static constexpr int slices = wanted < groups_per_warp ? wanted : groups_per_warp;
    static constexpr int heads = G / slices;
    static constexpr int rows = RIG_DECODE_WARPS * groups_per_warp / slices;
    static constexpr int unroll = heads >= keys ? 1 : keys / heads;
    static constexpr int keys_per_step = rows * unroll;
    static constexpr int threads = RIG_DECODE_WARPS * RIG_CUDA_WARP;
    static_assert(heads * slices == G && groups_per_warp % slices == 0, "slices tile a warp");
    /* Keys a thread has in flight that no other lane group of its warp also loads. */
    static constexpr int distinct_keys = unroll / slices;
};

/* The defect the wide layout fixed: in the narrow layout a group of 4 held half the distinct
 * keys in flight of a group of 2 and streamed at half its bandwidth (see the file header). */
static_assert(rig__decode_shape<128, 4, true>::distinct_keys >
                      rig__decode_shape<128, 4>::distinct_keys &&
                  rig__decode_shape<64, 4, true>::distinct_keys >
                      rig__decode_shape<64, 4>::distinct_keys,
              "the wide layout keeps more distinct keys in flight than the narrow one");

/* Shared bytes of the end-of-block merge: per warp and head, max, sum and D accumulators. */
static size_t rig__decode_shared_bytes(int64_t group, int64_t dim)
{
    return (size_t)RIG_DECODE_WARPS * (size_t)group * (size_t)(dim + 2) * sizeof(float);
}

/* Eight bf16 values packed in 16 bytes (element 0 in the low half of .x) as floats. */
static __device__ __forceinline__ void rig__unpack8(uint4 w, float *f)
{
    uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int e = 0; e < 4; e++) {
        f[2 * e] = __uint_as_float(words[e] << 16);
        f[2 * e + 1] = __uint_as_float(words[e] & 0xffff0000u);
    }
}

/* The slots of this key row's keys first, first + rows, ... (U of them); 0 past `end`, where
 * nothing will be loaded. */
template <int U, int ROWS>
static __device__ __forceinline__ void rig__decode_slots(const int32_t *table, int64_t first,
                                                         int64_t end, int32_t *slot)
{
#pragma unroll
    for (int u = 0; u < U; u++)
        slot[u] = first + u * ROWS < end ? __ldg(table + first + u * ROWS) : 0;
}

/* Online-softmax update of one lane's state with U scored keys and their V (8 dims). Lanes
 * of a key row hold identical scores, so m and l agree across the row. */
template <int H, int U>
static __device__ __forceinline__ void rig__decode_update(float (&m)[H], float (&l)[H],
                                                          float (&o)[H][8], const float (&s)[H][U],
                                                          const uint4 (&v)[U])
{
    float vf[U][8];
#pragma unroll
    for (int u = 0; u < U; u++)
        rig__unpack8(v[u], vf[u]);
#pragma unroll
    for (int g = 0; g < H; g++) {
        float m_new = m[g];
#pragma unroll
        for (int u = 0; u < U; u++)
            m_new = fmaxf(m_new, s[g][u]);
        if (m_new == -INFINITY) continue; /* no key yet: exp(-inf - -inf) would be NaN */
        float alpha = expf(m[g] - m_new); /* 0 while m[g] is -inf */
        float p[U], sum = 0.0f;
#pragma unroll
        for (int u = 0; u < U; u++) {
            p[u] = expf(s[g][u] - m_new); /* 0 for a masked key (-inf) */
            sum += p[u];
        }
        l[g] = l[g] * alpha + sum;
        m[g] = m_new;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float acc = o[g][i] * alpha;
#pragma unroll
            for (int u = 0; u < U; u++)
                acc += p[u] * vf[u][i];
            o[g][i] = acc;
        }
    }
}

/* Scores of U keys for the thread's H heads: 8 products per lane, then a butterfly over the
 * row's lanes (every lane ends with the same sum); masked keys score -inf. */
template <int D, int H, int U>
static __device__ __forceinline__ void
rig__decode_scores(const float (&q)[H][8], const uint4 (&k)[U], const bool (&valid)[U], float scale,
                   float (&s)[H][U])
{
#pragma unroll
    for (int u = 0; u < U; u++) {
        float kf[8];
        rig__unpack8(k[u], kf);
#pragma unroll
        for (int g = 0; g < H; g++) {
            float dot = 0.0f;
#pragma unroll
            for (int i = 0; i < 8; i++)
                dot += q[g][i] * kf[i];
            s[g][u] = dot;
        }
    }
#pragma unroll
    for (int offset = D / 16; offset > 0; offset >>= 1) {
#pragma unroll
        for (int g = 0; g < H; g++) {
#pragma unroll
            for (int u = 0; u < U; u++)
                s[g][u] += __shfl_xor_sync(0xffffffffu, s[g][u], offset);
        }
    }
#pragma unroll
    for (int g = 0; g < H; g++) {
#pragma unroll
        for (int u = 0; u < U; u++)
            s[g][u] = valid[u] ? s[g][u] * scale : -INFINITY;
    }
}

/* Merges the online-softmax states of the key rows of one warp into its first row (per
 * slice: lane groups 0 .. SLICES - 1) by a butterfly over rows of the same slice; the other
 * rows end with partial merges. */
template <int D, int H, int SLICES>
static __device__ __forceinline__ void rig__decode_merge_warp(float (&m)[H], float (&l)[H],
                                                              float (&o)[H][8])
{
#pragma unroll
    for (int offset = D / 8 * SLICES; offset < RIG_CUDA_WARP; offset <<= 1) {
#pragma unroll
        for (int g = 0; g < H; g++) {
            float m_other = __shfl_xor_sync(0xffffffffu, m[g], offset);
            float l_other = __shfl_xor_sync(0xffffffffu, l[g], offset);
            float m_new = fmaxf(m[g], m_other);
            float a_self = m[g] == -INFINITY ? 0.0f : expf(m[g] - m_new);
            float a_other = m_other == -INFINITY ? 0.0f : expf(m_other - m_new);
            l[g] = l[g] * a_self + l_other * a_other;
            m[g] = m_new;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                float o_other = __shfl_xor_sync(0xffffffffu, o[g][i], offset);
                o[g][i] = o[g][i] * a_self + o_other * a_other;
            }
        }
    }
}

/* Merges the warps' states through shared memory (log-sum-exp) and writes the block's G
 * heads: bf16 output when the row has one active split, else the normalised partial and its
 * log-sum-exp. */
template <int D, int G, int H, int SLICES>
static __device__ void rig__decode_finish(const struct rig_cuda_attention_args *a,
                                          struct rig__partials part, int64_t row, int64_t kv_head,
                                          int32_t active, const float (&m)[H], const float (&l)[H],
                                          const float (&o)[H][8], float *cluster_values = nullptr,
                                          float *cluster_lse = nullptr)
{
    extern __shared__ __align__(16) char rig__shared[];
    float *m_s = reinterpret_cast<float *>(rig__shared); /* [warps][G] */
    float *l_s = m_s + RIG_DECODE_WARPS * G;             /* [warps][G] */
    float *o_s = l_s + RIG_DECODE_WARPS * G;             /* [warps][G][D] */
    int in_warp = threadIdx.x % RIG_CUDA_WARP, warp = threadIdx.x / RIG_CUDA_WARP;
    int lane = in_warp % (D / 8), slice = in_warp / (D / 8);
    if (slice < SLICES) { /* the first key row of the warp, every slice */
#pragma unroll
        for (int h = 0; h < H; h++) {
            int g = slice * H + h;
#pragma unroll
            for (int i = 0; i < 8; i++)
                o_s[(warp * G + g) * D + lane * 8 + i] = o[h][i];
            if (lane == 0) {
                m_s[warp * G + g] = m[h];
                l_s[warp * G + g] = l[h];
            }
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < G * D; e += blockDim.x) {
        int g = e / D, d = e % D;
        float m_max = -INFINITY;
        for (int w = 0; w < RIG_DECODE_WARPS; w++)
            m_max = fmaxf(m_max, m_s[w * G + g]);
        float sum = 0.0f, acc = 0.0f;
        for (int w = 0; m_max != -INFINITY && w < RIG_DECODE_WARPS; w++) {
            float m_w = m_s[w * G + g];
            float scale = m_w == -INFINITY ? 0.0f : expf(m_w - m_max);
            sum += l_s[w * G + g] * scale;
            acc += o_s[(w * G + g) * D + d] * scale;
        }
        float value = sum > 0.0f ? acc / sum : 0.0f;
        int64_t head = kv_head * G + g;
        if (active == 1) {
            a->out[row * a->out_stride_t + head * a->out_stride_h + d] = rig_cuda_to_bf16(value);
            continue;
        }
        if (cluster_values != nullptr) { /* the cluster path: kept in shared memory */
            cluster_values[g * D + d] = value;
            if (d == 0) cluster_lse[g] = sum > 0.0f ? m_max + logf(sum) : -INFINITY;
            continue;
        }
        int64_t slot = (row * a->heads_q + head) * part.splits + blockIdx.z;
        part.values[slot * D + d] = value;
        if (d == 0) part.lse[slot] = sum > 0.0f ? m_max + logf(sum) : -INFINITY;
    }
}

/* True in the last block of (row, KV head) to arrive, once every block of the row has
 * written its partial. The fence before the count publishes this block's partials; the one
 * after it orders the last block's reads of the others' partials after their counts. The last
 * block puts the counter back to 0: no other block of this launch touches it again, and the
 * next launch (a graph replay included) starts from zero. */
static __device__ bool rig__decode_arrive(const struct rig_cuda_attention_args *a,
                                          struct rig__partials part, int64_t row, int64_t kv_head,
                                          int32_t active)
{
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t *counter = part.counters + row * a->heads_kv + kv_head;
        last = atomicAdd(counter, 1u) == (uint32_t)active - 1u;
        if (last) atomicExch(counter, 0u);
    }
    __syncthreads();
    if (last) __threadfence();
    return last;
}

/* Splits whose partials a thread of the merge loads before their weights are known. */
#define RIG__DECODE_MERGE_EARLY 16
/* The wide layout's split cap (rig__decode_share): none. A cap of 32 (twice the narrow one's,
 * as its steps are) was measured on an H200 (seventh session, call 7): at batches 1-3 of
 * Llama-3.2-1B's and Qwen3-8B's shapes it moved the sweep's points by -12 ... +16 %, most within
 * the noise, and `rig bench decode` not at all. RIG_DECODE_SPLIT_CAP_WIDE=N measures others. */
#define RIG__DECODE_SPLIT_CAP_WIDE 0

/* The merge's weights: per head g (one warp each), exp(lse_i - max) of the `active` splits'
 * log-sum-exps (lse(g, i): the scratch's or a cluster block's), 0 for an empty split, and
 * their sum in total[g]; then a block barrier. Each split's weight by one lane, the sum by the
 * warp's butterfly: the order both merges share, so their outputs are the same bits. */
template <int G, typename LSE>
static __device__ __forceinline__ void rig__decode_weights(int32_t active, LSE lse,
                                                           float (&weight)[G][RIG__SPLITS_MAX],
                                                           float (&total)[G])
{
    int lane = threadIdx.x % RIG_CUDA_WARP, warp = threadIdx.x / RIG_CUDA_WARP;
    for (int g = warp; g < G; g += RIG_DECODE_WARPS) {
        float lse_max = -INFINITY, sum = 0.0f;
        for (int i = lane; i < active; i += RIG_CUDA_WARP)
            lse_max = fmaxf(lse_max, lse(g, i));
        lse_max = rig_cuda_warp_max(lse_max);
        for (int i = lane; i < active; i += RIG_CUDA_WARP) {
            float value = lse(g, i);
            weight[g][i] = value == -INFINITY ? 0.0f : expf(value - lse_max);
            sum += weight[g][i];
        }
        sum = rig_cuda_warp_sum(sum);
        if (lane == 0) total[g] = sum;
    }
    __syncthreads();
}

/* acc += w v, component by component (the merges' one order of operations). */
static __device__ __forceinline__ void rig__decode_axpy4(float4 &acc, float w, float4 v)
{
    acc.x += w * v.x;
    acc.y += w * v.y;
    acc.z += w * v.z;
    acc.w += w * v.w;
}

/* A merged head's 4 dims d .. d + 3 of (row, KV head's head g): acc / sum as bf16 (0 where the
 * sum is 0: no key). */
template <int G>
static __device__ __forceinline__ void rig__decode_store4(const struct rig_cuda_attention_args *a,
                                                          int64_t row, int64_t kv_head, int g,
                                                          int d, float4 acc, float sum)
{
    uint16_t *out = a->out + row * a->out_stride_t + (kv_head * G + g) * a->out_stride_h + d;
    out[0] = rig_cuda_to_bf16(sum > 0.0f ? acc.x / sum : 0.0f);
    out[1] = rig_cuda_to_bf16(sum > 0.0f ? acc.y / sum : 0.0f);
    out[2] = rig_cuda_to_bf16(sum > 0.0f ? acc.z / sum : 0.0f);
    out[3] = rig_cuda_to_bf16(sum > 0.0f ? acc.w / sum : 0.0f);
}

/* The last block of (row, KV head) merges the `active` splits of its G heads: one warp per
 * head turns log-sum-exps into weights in shared memory, then each thread sums 4 dims over
 * the splits in split order (fixed, so the result does not depend on which block came last)
 * with independent 16-byte L2 loads (__ldcg: the partials were written by other SMs). With
 * part.merge_prefetch and at most RIG__DECODE_MERGE_EARLY splits, a thread's first 4 dims of
 * partials are loaded before the weights, so their L2 round trip overlaps the log-sum-exps'
 * (batch 1 waits for one instead of two); same values, same order, same sums. */
template <int D, int G>
static __device__ void rig__decode_merge_splits(const struct rig_cuda_attention_args *a,
                                                struct rig__partials part, int64_t row,
                                                int64_t kv_head, int32_t active)
{
    __shared__ float weight[G][RIG__SPLITS_MAX];
    __shared__ float total[G];
    int64_t head0 = (row * a->heads_q + kv_head * G) * part.splits; /* [.., G, splits] */
    float4 early[RIG__DECODE_MERGE_EARLY];
    int e_early = part.merge_prefetch && active <= RIG__DECODE_MERGE_EARLY ? (int)threadIdx.x : -1;
    if (e_early >= G * D / 4) e_early = -1;
    if (e_early >= 0) {
        int g = e_early / (D / 4), d = e_early % (D / 4) * 4;
        const float4 *values =
            reinterpret_cast<const float4 *>(part.values + (head0 + g * part.splits) * D + d);
#pragma unroll
        for (int i = 0; i < RIG__DECODE_MERGE_EARLY; i++)
            early[i] = i < active ? __ldcg(values + i * (D / 4)) : make_float4(0, 0, 0, 0);
    }
    rig__decode_weights<G>(
        active, [&](int g, int i) { return __ldcg(part.lse + head0 + g * part.splits + i); },
        weight, total);
    for (int e = threadIdx.x; e < G * D / 4; e += blockDim.x) {
        int g = e / (D / 4), d = e % (D / 4) * 4;
        const float4 *values =
            reinterpret_cast<const float4 *>(part.values + (head0 + g * part.splits) * D + d);
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (e == e_early) {
#pragma unroll
            for (int i = 0; i < RIG__DECODE_MERGE_EARLY; i++) {
                if (i >= active) break;
                rig__decode_axpy4(acc, weight[g][i], early[i]);
            }
        } else {
#pragma unroll 16
            for (int i = 0; i < active; i++) {
                float4 v = __ldcg(values + i * (D / 4));
                rig__decode_axpy4(acc, weight[g][i], v);
            }
        }
        rig__decode_store4<G>(a, row, kv_head, g, d, acc, total[g]);
    }
}

/* The cluster path (rig__decode_cluster_wanted): the splits of one (row, KV head) are one
 * thread-block cluster, each block's partial (its G heads' normalised outputs and
 * log-sum-exps, as rig__decode_finish would store them) stays in its own shared memory, and
 * after a cluster barrier block 0 merges them read through distributed shared memory, in
 * split order with rig__decode_merge_splits's arithmetic, so the output is the same bits;
 * a second barrier keeps every block's shared memory until it has. No arrival count, no
 * partials through L2: at batch 1 those are two of the kernel's dependent round trips
 * (docs/performance.md, eleventh session). */
template <int D, int G> struct __align__(16) rig__cluster_partial { /* float4 reads of values */
    float values[G * D];
    float lse[G];
};

template <int D, int G>
static __device__ void rig__decode_merge_cluster(const struct rig_cuda_attention_args *a,
                                                 int64_t row, int64_t kv_head, int32_t active,
                                                 struct rig__cluster_partial<D, G> &mine)
{
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    cluster.sync(); /* every block's partial is in its shared memory */
    if (cluster.block_rank() == 0) {
        __shared__ float weight[G][RIG__SPLITS_MAX];
        __shared__ float total[G];
        rig__decode_weights<G>(
            active,
            [&](int g, int i) { return cluster.map_shared_rank(&mine, (unsigned)i)->lse[g]; },
            weight, total);
        for (int e = threadIdx.x; e < G * D / 4; e += blockDim.x) {
            int g = e / (D / 4), d = e % (D / 4) * 4;
            float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            for (int i = 0; i < active; i++) {
                const float *values = cluster.map_shared_rank(&mine, (unsigned)i)->values;
                float4 v = *reinterpret_cast<const float4 *>(values + g * D + d);
                rig__decode_axpy4(acc, weight[g][i], v);
            }
            rig__decode_store4<G>(a, row, kv_head, g, d, acc, total[g]);
        }
    }
    cluster.sync(); /* block 0 has read every partial */
}

/* Keys per split of a row with `keys` keys, in whole steps: an equal share over the launch's
 * splits, but at least `split_steps` steps (RIG_DECODE_SPLIT_STEPS), and for a row of at most
 * cap x cap steps (cap = `split_cap`) no more than cap splits. Decided on the device from
 * kv_len, so a short row in a wide table (or a graph replayed at another length) runs few full
 * splits instead of many nearly empty ones and merges fewer partials; splits past the keys
 * exit. Why the cap (measured on an H200, docs/performance.md): at batch 1 the host plans
 * enough splits to fill the GPU's resident blocks (60 for 8 KV heads), and a row of 1,664 keys
 * then ran 52 one-step splits in 21.8 us (Qwen3-0.6B's shape, warm) where 13 four-step splits
 * took 11.5: past RIG__DECODE_MERGE_EARLY splits the merge takes a second L2 round trip and
 * every split's partial more, while a step costs a block about 1.1 us. The planned count still
 * bounds it, and a row long enough that cap splits would take more than cap steps each
 * splits further (its steps outweigh the merge). The launch gives the cap to the narrow layout
 * only (groups of 1 and 2): a wide step (groups of 4 and 8) loads twice the keys for twice
 * the heads, and a cap of 16 cost Llama-3.2-1B's and Qwen3-8B's shapes 5-40 % at batches 1-3
 * (RIG__DECODE_SPLIT_CAP_WIDE says what 32 did). */
static __host__ __device__ __forceinline__ int64_t rig__decode_share(int64_t keys, int32_t splits,
                                                                    int64_t keys_per_step,
                                                                    int32_t split_steps,
                                                                    int32_t split_cap)
{
    int64_t steps = rig_cuda_div_up(keys, keys_per_step);
    int64_t share = rig_cuda_div_up(steps, splits);
    if (share < split_steps) share = split_steps;
    if (split_cap > 0) {
        int64_t capped = rig_cuda_div_up(steps, split_cap);
        if (capped > split_cap) capped = split_cap;
        if (share < capped) share = capped;
    }
    return share * keys_per_step;
}

int64_t rig_cuda_decode_share(int64_t keys, int32_t splits, int64_t keys_per_step,
                              int32_t split_steps, int32_t split_cap)
{
    RIG_ASSERT(keys >= 0 && splits >= 1 && keys_per_step >= 1 && split_steps >= 1 &&
               split_cap >= 0);
    return rig__decode_share(keys, splits, keys_per_step, split_steps, split_cap);
}

/* See attention_decode.cuh. Why: with the cap, a row of up to cap x cap steps runs at most cap
 * splits (rig__decode_share), so at batch 1 a grid of the planned 60-64 splits a KV head
 * launched 44-48 blocks a head that only wait for the previous kernel and exit. Measured on an
 * H200 (Qwen3-0.6B's heads, docs/performance.md): the op alone, a graph of its copies, one
 * request of 2,048 keys 15.4 -> 12.1 us, 4,096 keys 23.0 -> 16.6 us; in a decode step less,
 * 1 x 2,048 1.129 -> 1.114 ms, the engine's lone-request steps -0.8 %. (Likely why: blocks held
 * resident through the PDL wait keep the next node's early blocks off their multiprocessors.)
 * The trimmed count leaves every row's share as it was: for steps <= cap x cap the cap term
 * ceil(steps / cap) is at least ceil(steps / trimmed), and beyond it the cap term is cap
 * >= ceil(steps / ceil(steps_cols / cap)); so the same splits run with the same keys. */
int32_t rig_cuda_decode_grid_splits(int32_t planned, int64_t cols, int64_t keys_per_step,
                                    int32_t split_cap)
{
    RIG_ASSERT(planned >= 1 && cols >= 0 && keys_per_step >= 1 && split_cap >= 0);
    if (split_cap == 0) return planned;
    int64_t steps = rig_cuda_div_up(cols, keys_per_step);
    int64_t most = rig_cuda_div_up(steps, split_cap);
    if (most < split_cap) most = split_cap;
    return most < planned ? (int32_t)most : planned;
}

/* The keys [begin, end) of the block's split of its row, and how many splits the row has
 * (splits past the row's keys get begin == end). */
struct rig__decode_range {
    struct rig_cuda_attention_place place;
    int64_t row, kv_head, begin, end;
    int32_t active;
};

template <int KEYS_PER_STEP>
static __device__ __forceinline__ struct rig__decode_range
rig__decode_range_get(const struct rig_cuda_attention_args &a, const struct rig__partials &part)
{
    struct rig__decode_range r;
    r.row = part.heads_first ? blockIdx.y : blockIdx.x;
    r.kv_head = part.heads_first ? blockIdx.x : blockIdx.y;
    r.place = rig_cuda_attention_locate(&a, r.row);
    int64_t share = rig__decode_share(r.place.keys, part.splits, KEYS_PER_STEP, part.split_steps,
                                      part.split_cap);
    r.active = r.place.keys > share ? (int32_t)rig_cuda_div_up(r.place.keys, share) : 1;
    r.begin = share * blockIdx.z;
    r.end = r.begin + share < r.place.keys ? r.begin + share : r.place.keys;
    if ((int32_t)blockIdx.z >= r.active) r.end = r.begin;
    return r;
}

/* Asks L2 for the K and V rows of the block's first step of keys (one prefetch per 128-byte
 * line), before the PDL wait: the step's page table and lengths were written before the
 * forward began, and the cache rows before this step but the newest (which the previous
 * kernel writes; a prefetch of it is only a hint). The block's first loads then come from L2
 * instead of HBM, which is most of a block's time at batch 1 (one step per split). Only for a
 * grid of one wave, as the small-batch GEMM's prefetch, and only the first step: asking for
 * a block's whole range made 64 x 2048 39 % slower and 8 x 2048 13 % (H100, 1011581: 64 MB to
 * 537 MB of KV a layer, more than L2 holds, so prefetched lines were evicted unused). */
template <int D, int KEYS_PER_STEP>
static __device__ __forceinline__ void rig__decode_prefetch(const struct rig_cuda_attention_args &a,
                                                            const struct rig__decode_range &r)
{
    constexpr int lines = D * 2 / 128 > 0 ? D * 2 / 128 : 1; /* per K or V row */
    int64_t keys = r.end - r.begin < KEYS_PER_STEP ? r.end - r.begin : KEYS_PER_STEP;
    int64_t count = keys * 2 * lines;
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
        int64_t key = r.begin + e / (2 * lines);
        int which = (int)(e % (2 * lines));
        int32_t slot = __ldg(r.place.slots + key);
        if (slot < 0) continue;
        const uint16_t *cache = which < lines ? a.k_cache : a.v_cache;
        const uint16_t *line = cache + r.kv_head * a.cache_stride_h +
                               (int64_t)slot * a.cache_stride_s + (which % lines) * 64;
        asm volatile("prefetch.global.L2 [%0];\n" ::"l"(line));
    }
}

/* --- The store prologue (attention_decode_store: hal/ops.h) ------------------------------
 * The register path can run qk_norm_rope_store's work for its own rows first, so a decode
 * layer has one node fewer. Before the PDL wait (docs/architecture.md: the step's metadata and
 * the weights are written by no kernel of the forward) a block reads its row's position and
 * slot, loads its lanes' q norm weights and, in the block of the row's last split (the one
 * whose keys end at the newest position), starts copying the k norm weights to shared memory.
 * After the wait it issues its q loads, computes the position's cos/sin table into shared
 * memory meanwhile (D/2 values, at most one sincosf a thread), and norms and rotates the q
 * heads it holds, in registers (q itself is left as it was: every split of a row reads it);
 * the last split's lane group 0 starts copying the newest raw K and V of its KV head to shared
 * memory (cp.async: no register held across the loop). That block's loop stops one key short;
 * after it, warp 0 norms and rotates the newest key in shared memory, lane group 0 stores K
 * and V to the cache, and the newest key is scored from shared memory as one more step (so no
 * block reads a cache row written during the launch). Lane l of a key row holds dims 8l .. 8l + 7,
 * so the pair (i, i + D/2) of a rotation sits in lanes l and l ^ (D/16): the partner's value
 * comes by one shuffle. The sum of squares is added in the order of qk_norm_rope_store's token
 * kernel (pair by pair, then a butterfly over D/16 lanes), so for 32 tokens and more the two
 * give the same bits; the rounding is qk_rope.cuh's. */
#define RIG__STORE_HALF_MAX 128 /* D <= 256 on the register path */

struct rig__decode_store {
    const uint16_t *k, *v; /* [R, Hk, D] views of the step's new K and V rows */
    int64_t k_stride_t, k_stride_h, v_stride_t, v_stride_h;
    const uint16_t *q_norm, *k_norm; /* [D] each, or both NULL */
    const int32_t *positions, *out_loc; /* [R] */
    uint16_t *k_cache, *v_cache;        /* the attention's caches */
    int64_t slots;
    float eps;
    float inv_freq[RIG__STORE_HALF_MAX]; /* (D/2): hal/rope.h's rig_rope_inv_freq */
};

/* The prologue's shared memory: the position's cos/sin table, and the newest K (raw, then
 * normed and rotated), its V and the k norm weights, a lane's 8 values a uint4. */
template <int D> struct rig__store_shared {
    float cosines[D / 2], sines[D / 2];
    uint4 k[D / 8], v[D / 8], w_k[D / 8];
};

/* Before the wait: the row's position (returned) and slot, and (`last`: the row's last split)
 * the k weights on their way (rig__store_fetch commits them with the newest K and V). */
template <int D>
static __device__ __forceinline__ float rig__store_prepare(const struct rig__decode_store &st,
                                                           int64_t row, bool last,
                                                           struct rig__store_shared<D> &sh,
                                                           int32_t *slot)
{
    if (last && st.k_norm != NULL && threadIdx.x < D / 8)
        rig_cuda_cp_async16(rig_cuda_smem_address(&sh.w_k[threadIdx.x]),
                            st.k_norm + threadIdx.x * 8, true);
    *slot = __ldcg(st.out_loc + row);
    return (float)__ldcg(st.positions + row);
}

/* The position's cos/sin table (at most one sincosf a thread), then a barrier. */
template <int D>
static __device__ __forceinline__ void rig__store_table(const struct rig__decode_store &st,
                                                        float position,
                                                        struct rig__store_shared<D> &sh)
{
    for (int i = threadIdx.x; i < D / 2; i += blockDim.x)
        sincosf(position * st.inv_freq[i], &sh.sines[i], &sh.cosines[i]);
    __syncthreads();
}

/* Eight bf16 values packed in 16 bytes (element 0 in the low half of .x), as bits. */
static __device__ __forceinline__ void rig__unpack8_bits(uint4 w, uint16_t (&x)[8])
{
    uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int j = 0; j < 8; j++)
        x[j] = (uint16_t)(j % 2 == 0 ? words[j / 2] & 0xffffu : words[j / 2] >> 16);
}

/* The lane's 8 values x of a head (dims 8 lane ..), normed with `weights` (8 bf16 packed;
 * when `norm`) and rotated in place. Every lane of the warp takes part (shuffles). */
template <int D>
static __device__ __forceinline__ void rig__norm_rope8(uint16_t (&x)[8], uint4 weights, bool norm,
                                                       float eps,
                                                       const struct rig__store_shared<D> &sh,
                                                       int lane)
{
    constexpr int half_lanes = D / 16;
    bool low = lane < half_lanes;
    int first = (lane % half_lanes) * 8;
    uint16_t w[8];
    rig__unpack8_bits(weights, w);
    float inverse_rms = 1.0f;
    if (norm) {
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            float own = rig_cuda_bf16(x[j]);
            float partner = __shfl_xor_sync(0xffffffffu, own, half_lanes);
            float a = low ? own : partner, b = low ? partner : own;
            sum += a * a + b * b;
        }
#pragma unroll
        for (int offset = half_lanes / 2; offset > 0; offset /= 2)
            sum += __shfl_xor_sync(0xffffffffu, sum, offset);
        inverse_rms = 1.0f / sqrtf(sum / (float)D + eps);
    }
#pragma unroll
    for (int j = 0; j < 8; j++) {
        float own = rig_cuda_qk_normed(x[j], w[j], norm, inverse_rms);
        float partner = __shfl_xor_sync(0xffffffffu, own, half_lanes);
        float x1 = low ? own : partner, x2 = low ? partner : own;
        float c = sh.cosines[first + j], s = sh.sines[first + j];
        x[j] = low ? rig_cuda_rope_low(x1, x2, c, s) : rig_cuda_rope_high(x1, x2, c, s);
    }
}

static __device__ __forceinline__ uint4 rig__pack8(const uint16_t (&x)[8])
{
    return make_uint4((uint32_t)x[0] | (uint32_t)x[1] << 16, (uint32_t)x[2] | (uint32_t)x[3] << 16,
                      (uint32_t)x[4] | (uint32_t)x[5] << 16, (uint32_t)x[6] | (uint32_t)x[7] << 16);
}

/* After the wait, the last split's lane group 0: the newest raw K and V of the block's KV head
 * on their way to shared memory. */
template <int D>
static __device__ __forceinline__ void rig__store_fetch(const struct rig__decode_store &st,
                                                        int64_t row, int64_t kv_head,
                                                        struct rig__store_shared<D> &sh)
{
    if (threadIdx.x >= D / 8) return;
    int lane = threadIdx.x;
    rig_cuda_cp_async16(rig_cuda_smem_address(&sh.k[lane]),
                        st.k + row * st.k_stride_t + kv_head * st.k_stride_h + lane * 8, true);
    rig_cuda_cp_async16(rig_cuda_smem_address(&sh.v[lane]),
                        st.v + row * st.v_stride_t + kv_head * st.v_stride_h + lane * 8, true);
    asm volatile("cp.async.commit_group;\n" ::);
}

/* After the loop, the last split (every thread): the newest K normed and rotated in shared
 * memory (warp 0), K and V stored to the cache when the slot is in it (lane group 0), then a
 * barrier, after which every lane group may read them. */
template <int D>
static __device__ void rig__store_newest(const struct rig__decode_store &st, int32_t slot,
                                         int64_t kv_head, int64_t cache_stride_s,
                                         int64_t cache_stride_h, struct rig__store_shared<D> &sh)
{
    asm volatile("cp.async.wait_all;\n" ::);
    __syncthreads();
    if (threadIdx.x < RIG_CUDA_WARP) {
        int lane = threadIdx.x % (D / 8);
        uint16_t k[8];
        rig__unpack8_bits(sh.k[lane], k);
        bool norm = st.q_norm != NULL;
        rig__norm_rope8<D>(k, norm ? sh.w_k[lane] : make_uint4(0, 0, 0, 0), norm, st.eps, sh,
                           lane);
        __syncwarp();
        if (threadIdx.x < D / 8) {
            sh.k[lane] = rig__pack8(k);
            if (slot >= 0 && slot < st.slots) {
                int64_t at = (int64_t)slot * cache_stride_s + kv_head * cache_stride_h + lane * 8;
                rig_cuda_store_bf16<8>(st.k_cache + at, k);
                *reinterpret_cast<uint4 *>(st.v_cache + at) = sh.v[lane];
            }
        }
    }
    __syncthreads();
}

/* The wide layout's least blocks a multiprocessor in __launch_bounds__: 16 warps' worth, so
 * that a thread has 128 registers at any RIG_DECODE_WARPS (4 blocks at the default 4 warps). */
#define RIG__WIDE_BLOCKS (16 / RIG_DECODE_WARPS > 0 ? 16 / RIG_DECODE_WARPS : 1)

/* Grid (rows, KV heads, splits) or, with part.heads_first, (KV heads, rows, splits);
 * RIG_DECODE_WARPS warps. See the file header. */
template <int D, int G, bool WIDE, bool STORE, bool CLUSTER = false>
static __global__ void __launch_bounds__(RIG_DECODE_WARPS *RIG_CUDA_WARP,
                                         WIDE ? RIG__WIDE_BLOCKS : 0)
    rig__decode_kernel(struct rig_cuda_attention_args a, struct rig__partials part,
                       const struct rig__decode_store st)
{
    static_assert(!(STORE && CLUSTER), "the cluster path is attention alone's");
    using S = rig__decode_shape<D, G, WIDE>;
    /* The block's keys, once, before the wait: lengths and page table are the step's
     * metadata, written before the forward (their three divisions were made up to three times:
     * for the L2 prefetch, for the store prologue, and again after the wait, in the chain
     * before the first K/V load) */
    const struct rig__decode_range range = rig__decode_range_get<S::keys_per_step>(a, part);
    if (part.l2_prefetch) rig__decode_prefetch<D, S::keys_per_step>(a, range);
    int lane = threadIdx.x % S::lanes, lane_group = threadIdx.x / S::lanes;
    /* the store prologue's (see above); without it a small stand-in, never used */
    __shared__ struct rig__store_shared<STORE ? D : 16> sh;
    int32_t newest_slot = -1;
    float position = 0.0f;
    uint4 w_q = make_uint4(0, 0, 0, 0);
    bool newest_last = false; /* the row's last split scores its newest key after the loop */
    if constexpr (STORE) { /* before the wait: none of it is written by the forward */
        newest_last = (int32_t)blockIdx.z == range.active - 1 && range.end > range.begin;
        position = rig__store_prepare<D>(st, range.row, newest_last, sh, &newest_slot);
        if (st.q_norm != NULL)
            w_q = __ldg(reinterpret_cast<const uint4 *>(st.q_norm + lane * 8));
    }
    rig_cuda_pdl_begin(); /* before any read of what earlier kernels wrote */
    constexpr int U = S::unroll, H = S::heads;
    int slice = lane_group % S::slices, key_row = lane_group / S::slices;
    /* the whole block: no key of the row left (a cluster's block stays for its barriers) */
    if (!CLUSTER && (int32_t)blockIdx.z >= range.active) return;
    int64_t row = range.row, kv_head = range.kv_head;
    struct rig_cuda_attention_place place = range.place;
    int32_t active = range.active;
    int64_t begin = range.begin, end = range.end;
    if constexpr (STORE) {
        if (newest_last) {
            rig__store_fetch<D>(st, row, kv_head, sh);
            end--;
        }
    }
    int64_t steps = end > begin ? rig_cuda_div_up(end - begin, S::keys_per_step) : 0;
    int32_t slot[U];
    rig__decode_slots<U, S::rows>(place.slots, begin + key_row, end, slot);
    float q[H][8], m[H], l[H], o[H][8];
    int64_t first_head = kv_head * G + slice * H;
    const uint16_t *q_row = a.q + row * a.q_stride_t + first_head * a.q_stride_h + lane * 8;
    if constexpr (STORE) { /* q's loads in flight while the table is computed */
        uint16_t x[H][8];
#pragma unroll
        for (int g = 0; g < H; g++)
#pragma unroll
            for (int i = 0; i < 8; i++)
                x[g][i] = q_row[g * a.q_stride_h + i];
        rig__store_table<D>(st, position, sh);
#pragma unroll
        for (int g = 0; g < H; g++) {
            rig__norm_rope8<D>(x[g], w_q, st.q_norm != NULL, st.eps, sh, lane);
#pragma unroll
            for (int i = 0; i < 8; i++)
                q[g][i] = rig_cuda_bf16(x[g][i]);
        }
    }
#pragma unroll
    for (int g = 0; g < H; g++) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            if constexpr (!STORE) q[g][i] = rig_cuda_bf16(q_row[g * a.q_stride_h + i]);
            o[g][i] = 0.0f;
        }
    }
    const uint16_t *k_head = a.k_cache + kv_head * a.cache_stride_h + lane * 8;
    const uint16_t *v_head = a.v_cache + kv_head * a.cache_stride_h + lane * 8;
    for (int64_t step = 0; step < steps; step++) {
        int64_t first = begin + step * S::keys_per_step + key_row;
        uint4 k[U], v[U];
        bool valid[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            valid[u] = first + u * S::rows < end;
            k[u] = make_uint4(0, 0, 0, 0);
            v[u] = make_uint4(0, 0, 0, 0);
            if (valid[u]) {
                int64_t offset = (int64_t)slot[u] * a.cache_stride_s;
                k[u] = __ldg(reinterpret_cast<const uint4 *>(k_head + offset));
                v[u] = __ldg(reinterpret_cast<const uint4 *>(v_head + offset));
            }
        }
        /* The next step's slots load while this step's K and V are in flight. */
        rig__decode_slots<U, S::rows>(place.slots, first + S::keys_per_step, end, slot);
        float s[H][U];
        rig__decode_scores<D, H, U>(q, k, valid, a.scale, s);
        rig__decode_update<H, U>(m, l, o, s, v);
    }
    if constexpr (STORE) {
        if (newest_last) { /* the newest key, from shared memory: key row 0 of each slice */
            rig__store_newest<D>(st, newest_slot, kv_head, a.cache_stride_s, a.cache_stride_h, sh);
            uint4 k[1] = {sh.k[lane]}, v[1] = {sh.v[lane]};
            bool valid[1] = {key_row == 0};
            float s[H][1];
            rig__decode_scores<D, H, 1>(q, k, valid, a.scale, s);
            rig__decode_update<H, 1>(m, l, o, s, v);
        }
    }
    rig__decode_merge_warp<D, H, S::slices>(m, l, o);
    if constexpr (CLUSTER) {
        /* active is the row's, so every block of the cluster takes the same branch */
        __shared__ struct rig__cluster_partial<D, G> mine;
        if (active == 1) { /* one split: it writes the output, the rest have nothing */
            if (blockIdx.z == 0)
                rig__decode_finish<D, G, H, S::slices>(&a, part, row, kv_head, 1, m, l, o);
            return;
        }
        rig__decode_finish<D, G, H, S::slices>(&a, part, row, kv_head, active, m, l, o,
                                               mine.values, mine.lse);
        rig__decode_merge_cluster<D, G>(&a, row, kv_head, active, mine);
        return;
    }
    rig__decode_finish<D, G, H, S::slices>(&a, part, row, kv_head, active, m, l, o);
    if (active > 1 && rig__decode_arrive(&a, part, row, kv_head, active))
        rig__decode_merge_splits<D, G>(&a, part, row, kv_head, active);
}

/* The least share of a wave of resident blocks (percent, at the natural occupancy) from which
 * a row takes one split (rig__decode_plan_waves). Measured on an H200 (docs/performance.md,
 * thirteenth session): the wave rule alone split 72-232 rows of Qwen3-0.6B's heads (groups of
 * 2) two or three ways to fill the last wave, and one split ran those sizes up to 40 % faster
 * (ragged rows, 512-2,048 keys; up to 7 % slower at 72-96 uniform rows of 2,048 keys), the
 * offline workload +3.9 %; groups of 4 unchanged (both rules plan them alike there). From 80 %
 * of a wave (call 2) 56 rows, which the wave rule split four ways, take one split too: 18-36 %
 * faster over uniform rows of 512-2,048 keys, -26 / -9 / +9 % ragged, the offline workload
 * +0.2 %. */
#ifndef RIG__DECODE_ONE_SPLIT
#define RIG__DECODE_ONE_SPLIT 80
#endif

/* Measuring switches of the register path, read once per process from the environment (the
 * defaults are the measured best):
 * RIG_DECODE_V2=0        the earlier kernel's choices, for comparison in the same binary:
 *                        RIG_DECODE_BLOCKS_PER_SM blocks per multiprocessor before splitting
 *                        stops, grid (row, KV head, split), partials loaded after their
 *                        weights in the merge.
 * RIG_DECODE_OCCUPANCY   blocks per multiprocessor the split count is planned for (see
 *                        rig__decode_plan_waves): -1 (default) as many as fit, or one fewer
 *                        when that needs fewer splits for full waves; 0 as many as fit; 1 one
 *                        fewer (dynamic shared memory padded so that no more fit).
 * RIG_DECODE_PREFETCH=0  no L2 prefetch of the block's K/V before the PDL wait (see
 *                        rig__decode_prefetch; it runs only for a grid of one wave).
 * RIG_DECODE_GRID_TRIM=0 the grid of the planned splits, not the most any row within the
 *                        page table's width runs under the cap (rig_cuda_decode_grid_splits).
 * RIG_DECODE_ONE_SPLIT=P  one split a row when the rows' blocks fill at least P % of a wave
 *                        at the natural occupancy (default 80; 0: never, the wave rule
 *                        at every size, the twelfth session's plan). See
 *                        rig__decode_plan_waves. */
struct rig__decode_knobs {
    bool v2;
    int occupancy;
    bool l2_prefetch; /* RIG_DECODE_PREFETCH=0: no L2 prefetch before the PDL wait */
    bool wide;        /* RIG_DECODE_WIDE=0: groups of 4 and 8 in the narrow layout */
    int split_steps;  /* RIG_DECODE_SPLIT_STEPS=N (1..64): least steps a split takes */
    int split_cap;    /* RIG_DECODE_SPLIT_CAP=N (0..64, 0: none): rig__decode_share's cap */
    int split_cap_wide; /* RIG_DECODE_SPLIT_CAP_WIDE=N: the same for the wide layout */
    bool grid_trim;     /* RIG_DECODE_GRID_TRIM=0: launch the planned splits, empty ones too */
    int one_split;      /* RIG_DECODE_ONE_SPLIT=P: one split from P % of a wave up */
};

/* The switches, read at the first launch (C++ makes the initialisation thread-safe). */
static const struct rig__decode_knobs &rig__decode_knobs(void)
{
    static const struct rig__decode_knobs knobs = []() {
        struct rig__decode_knobs k;
        k.v2 = rig_cuda_env("RIG_DECODE_V2", 1) != 0;
        long occupancy = rig_cuda_env("RIG_DECODE_OCCUPANCY", -1);
        k.occupancy = occupancy >= -1 && occupancy <= 1 ? (int)occupancy : -1;
        k.l2_prefetch = rig_cuda_env("RIG_DECODE_PREFETCH", 1) != 0;
        k.wide = rig_cuda_env("RIG_DECODE_WIDE", 1) != 0;
        long steps = rig_cuda_env("RIG_DECODE_SPLIT_STEPS", RIG_DECODE_SPLIT_STEPS);
        k.split_steps = steps >= 1 && steps <= 64 ? (int)steps : RIG_DECODE_SPLIT_STEPS;
        long cap = rig_cuda_env("RIG_DECODE_SPLIT_CAP", RIG__DECODE_MERGE_EARLY);
        k.split_cap = cap >= 0 && cap <= RIG__SPLITS_MAX ? (int)cap : RIG__DECODE_MERGE_EARLY;
        long wide = rig_cuda_env("RIG_DECODE_SPLIT_CAP_WIDE", RIG__DECODE_SPLIT_CAP_WIDE);
        k.split_cap_wide =
            wide >= 0 && wide <= RIG__SPLITS_MAX ? (int)wide : RIG__DECODE_SPLIT_CAP_WIDE;
        k.grid_trim = rig_cuda_env("RIG_DECODE_GRID_TRIM", 1) != 0;
        long one = rig_cuda_env("RIG_DECODE_ONE_SPLIT", RIG__DECODE_ONE_SPLIT);
        k.one_split = one >= 0 && one <= 100 ? (int)one : RIG__DECODE_ONE_SPLIT;
        return k;
    }();
    return knobs;
}

/* See attention_decode.cuh. Blocks of one wave run side by side and end together, so a nearly
 * empty last wave runs a few blocks at the latency of their own loads while the rest of the
 * GPU idles (at 256 x 1024 with 5 blocks per SM: 3.1 waves). */
int64_t rig_cuda_decode_waves(int64_t blocks, int64_t capacity, int64_t limit)
{
    RIG_ASSERT(blocks >= 1);
    RIG_ASSERT(capacity >= 1);
    int64_t best = 1;
    double best_fill = 0.0;
    for (int64_t s = 1; s <= limit; s++) {
        double waves = (double)(blocks * s) / (double)capacity;
        double fill = waves < 1.0 ? waves : waves / ceil(waves);
        if (fill >= 0.9) return s;
        if (fill > best_fill) {
            best = s;
            best_fill = fill;
        }
    }
    return best;
}

/* See attention_decode.cuh. */
bool rig_cuda_decode_one_split(int64_t blocks, int64_t capacity, int percent)
{
    RIG_ASSERT(blocks >= 0 && capacity >= 1 && percent >= 0 && percent <= 100);
    return percent > 0 && blocks * 100 >= (int64_t)percent * capacity;
}

/* Splits for the register path: with `capacity` (resident blocks on the GPU; 0 for the
 * earlier rule) by rig_cuda_decode_waves, else enough blocks for RIG_DECODE_BLOCKS_PER_SM per
 * multiprocessor; at least `split_steps` steps of keys per split at the page-table
 * width, at most RIG__SPLITS_MAX, within the stream's scratch, and one when (row, KV head)
 * pairs outnumber the arrival counters. Host values only (graph-safe); the kernel may use
 * fewer for a short row (rig__decode_share). */
static int32_t rig__decode_splits(const struct rig_cuda_launch *launch,
                                  const struct rig_cuda_attention_args *a, int64_t keys_per_step,
                                  int64_t split_steps, int64_t capacity)
{
    int64_t blocks = a->rows * a->heads_kv;
    int64_t steps = rig_cuda_div_up(a->page_table_cols, keys_per_step * split_steps);
    int64_t limit = steps < RIG__SPLITS_MAX ? steps : RIG__SPLITS_MAX;
    int64_t splits = 1;
    if (capacity > 0 && blocks > 0 && limit > 0) {
        splits = rig_cuda_decode_waves(blocks, capacity, limit);
    } else {
        int64_t target = (int64_t)RIG_DECODE_BLOCKS_PER_SM * launch->sm_count;
        splits = rig_cuda_div_up(target, blocks > 0 ? blocks : 1);
    }
    if (splits > limit) splits = limit;
    if (blocks > (int64_t)(RIG_CUDA_COUNTER_BYTES / sizeof(uint32_t))) splits = 1;
    size_t per_split = (size_t)(a->rows * a->heads_q) * (size_t)(a->head_dim + 1) * sizeof(float);
    while (splits > 1 && (size_t)splits * per_split > launch->scratch_bytes)
        splits--;
    return splits < 1 ? 1 : (int32_t)splits;
}

/* Blocks of `kernel` resident per multiprocessor with `shared` dynamic bytes (0 on error). */
static int rig__decode_occupancy(const void *kernel, int threads, size_t shared)
{
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, shared) != cudaSuccess)
        return 0;
    return n;
}

/* Dynamic shared bytes (more than `shared`) with which exactly `blocks` blocks of `kernel`
 * fit on a multiprocessor: halfway between a multiprocessor's shared memory over blocks + 1
 * and over blocks, less what the runtime reserves per block and the kernel's static bytes.
 * Opts the kernel into that size. 0 when it cannot be had (no padding is used then). */
static size_t rig__decode_padded(const void *kernel, int threads, size_t shared, int blocks)
{
    int device = 0, per_sm = 0, reserved = 0;
    struct cudaFuncAttributes attributes;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device) !=
            cudaSuccess ||
        cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess)
        return 0;
    size_t share = ((size_t)per_sm / (size_t)(blocks + 1) + (size_t)per_sm / (size_t)blocks) / 2;
    size_t fixed = (size_t)reserved + attributes.sharedSizeBytes;
    if (share <= fixed + shared) return 0;
    size_t padded = (share - fixed) / 16 * 16;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)padded) !=
        cudaSuccess)
        return 0;
    return rig__decode_occupancy(kernel, threads, padded) == blocks ? padded : 0;
}

/* What rig__decode_kernel<D, G, WIDE, STORE> allows, asked once per process (the same on every
 * GPU of a tensor-parallel group): blocks per multiprocessor, and the padded dynamic shared bytes
 * that leave one fewer (0: none). */
struct rig__decode_facts {
    int natural;
    size_t fewer_shared;
};

template <int D, int G, bool WIDE, bool STORE = false>
static const struct rig__decode_facts &rig__decode_facts_get(void)
{
    static const struct rig__decode_facts facts = []() {
        using S = rig__decode_shape<D, G, WIDE>;
        const void *kernel = (const void *)rig__decode_kernel<D, G, WIDE, STORE>;
        size_t shared = rig__decode_shared_bytes(G, D);
        struct rig__decode_facts f = {rig__decode_occupancy(kernel, S::threads, shared), 0};
        if (f.natural > 1)
            f.fewer_shared = rig__decode_padded(kernel, S::threads, shared, f.natural - 1);
        (void)cudaGetLastError(); /* a refused query leaves no error for the next launch */
        return f;
    }();
    return facts;
}

/* How the register path launches for one shape: its dynamic shared bytes and splits. */
struct rig__decode_plan {
    size_t shared;
    int32_t splits;    /* the grid's splits a row (rig_cuda_decode_grid_splits when trimmed) */
    int32_t split_cap; /* rig__decode_share's cap for the layout (0: none) */
};

/* The waves' plan for arguments `a`. From RIG_DECODE_ONE_SPLIT % of a wave of resident blocks
 * up (at the natural occupancy) a row takes one split; below it the split count fills whole
 * waves of resident blocks (rig_cuda_decode_waves); with RIG_DECODE_OCCUPANCY -1 it is
 * planned both for the natural occupancy and for one block fewer per multiprocessor, and the
 * fewer-blocks plan wins when it needs fewer splits. Measured on an H100 (132 SMs; D 128, G 2
 * fits 5 blocks per SM by registers): at 256 x 1024 (2,048 blocks) 5 per SM need 3 splits of
 * 11 steps (412 us), 4 per SM none (3.88 waves, 385 us; the earlier rule 403 us). At 64 x 8192
 * the fewer-blocks plan (no split, 744 us) loses to 5 per SM and 5 splits (715 us; the earlier
 * rule 757 us), but the host plans from the page-table width, not from kv_len (on the device):
 * the engine's tables are max_seq_len wide, so long splits cannot be told from short rows, and
 * fewer splits are the safer plan. */
template <int D, int G, bool WIDE, bool STORE>
static struct rig__decode_plan rig__decode_plan_waves(const struct rig_cuda_launch *launch,
                                                      const struct rig_cuda_attention_args *a,
                                                      const struct rig__decode_knobs &knobs)
{
    using S = rig__decode_shape<D, G, WIDE>;
    struct rig__decode_plan plan = {rig__decode_shared_bytes(G, D), 1, 0};
    if (!knobs.v2) {
        plan.splits = rig__decode_splits(launch, a, S::keys_per_step, knobs.split_steps, 0);
        return plan;
    }
    const struct rig__decode_facts &facts = rig__decode_facts_get<D, G, WIDE, STORE>();
    int64_t per_sm = facts.natural > 0 ? facts.natural : 1;
    if (rig_cuda_decode_one_split(a->rows * a->heads_kv, per_sm * launch->sm_count,
                                  knobs.one_split))
        return plan;
    plan.splits = rig__decode_splits(launch, a, S::keys_per_step, knobs.split_steps,
                                     per_sm * launch->sm_count);
    if (facts.fewer_shared == 0 || knobs.occupancy == 0) return plan;
    int32_t splits =
        rig__decode_splits(launch, a, S::keys_per_step, knobs.split_steps,
                           (per_sm - 1) * launch->sm_count);
    if (knobs.occupancy == 1 || splits < plan.splits) {
        plan.splits = splits;
        plan.shared = facts.fewer_shared;
    }
    RIG_ASSERT(plan.splits >= 1 && plan.splits <= RIG__SPLITS_MAX);
    return plan;
}

/* The launch's plan: the waves' plan (rig__decode_plan_waves), the layout's split cap, and the
 * grid trimmed to the splits a row of the page table's width can run under it. */
template <int D, int G, bool WIDE, bool STORE>
static struct rig__decode_plan rig__decode_plan_make(const struct rig_cuda_launch *launch,
                                                     const struct rig_cuda_attention_args *a,
                                                     const struct rig__decode_knobs &knobs)
{
    using S = rig__decode_shape<D, G, WIDE>;
    struct rig__decode_plan plan = rig__decode_plan_waves<D, G, WIDE, STORE>(launch, a, knobs);
    plan.split_cap = WIDE ? knobs.split_cap_wide : knobs.split_cap;
    if (knobs.grid_trim)
        plan.splits = rig_cuda_decode_grid_splits(plan.splits, a->page_table_cols,
                                                  S::keys_per_step, plan.split_cap);
    return plan;
}

/* Most splits (blocks of one cluster) the cluster path takes: 16, past the portable 8 (the
 * kernel is opted in). */
#define RIG__DECODE_CLUSTER_MAX 16

/* Whether the register path merges a launch's splits in a cluster (rig__decode_merge_cluster):
 * RIG_DECODE_CLUSTER (a timing and testing switch read at every call) 0 never, 1 wherever it
 * can, unset: batches of at most RIG__DECODE_CLUSTER_ROWS rows; it can where the grid has 2 to
 * RIG__DECODE_CLUSTER_MAX splits, the plan's shared memory is the natural one (not padded to
 * hold fewer blocks: at most 33 KB, so no opt-in above 48 KB, and the one the fit was asked
 * for) and the device holds such a cluster of the kernel's blocks
 * (cudaOccupancyMaxActiveClusters, asked once a size and kernel; 0 keeps the arrival count).
 * Measured on an H200 (docs/performance.md, eleventh session): one row of 512 keys 0.945 ->
 * 0.921 ms a Qwen3-0.6B step (11 splits), Llama-3.2-1B 1.088 -> 1.065; at 2,048 keys (16
 * splits) and for Qwen3-8B no change; at 8 rows Qwen3-0.6B's step took 1.17 -> 1.39 ms (x 512)
 * and 1.62 -> 2.13 (x 2,048): 64 clusters wait on one another's multiprocessors. So 1 row. */
#ifndef RIG__DECODE_CLUSTER_ROWS
#define RIG__DECODE_CLUSTER_ROWS 1
#endif
template <int D, int G, bool WIDE>
static bool rig__decode_cluster_wanted(const struct rig_cuda_attention_args *a, int32_t splits,
                                       size_t shared)
{
    long mode = rig_cuda_env("RIG_DECODE_CLUSTER", -1);
    if (mode == 0 || splits < 2 || splits > RIG__DECODE_CLUSTER_MAX) return false;
    if (shared != rig__decode_shared_bytes(G, D)) return false;
    if (mode != 1 && a->rows > RIG__DECODE_CLUSTER_ROWS) return false;
    static int fits[RIG__DECODE_CLUSTER_MAX + 1]; /* 0: not asked; 1 fits; -1 does not */
    int known = __atomic_load_n(&fits[splits], __ATOMIC_RELAXED);
    if (known == 0) {
        using S = rig__decode_shape<D, G, WIDE>;
        const void *kernel = (const void *)rig__decode_kernel<D, G, WIDE, false, true>;
        int clusters = 0;
        cudaLaunchAttribute attribute[2];
        cudaLaunchConfig_t config =
            rig_cuda_launch_config(dim3(1, 1, (unsigned)splits), dim3(S::threads), shared, 0,
                                   false, (unsigned)splits, attribute);
        bool ok = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed,
                                       1) == cudaSuccess &&
                  cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) == cudaSuccess &&
                  clusters > 0;
        (void)cudaGetLastError(); /* a refused query leaves no error for the next launch */
        known = ok ? 1 : -1;
        __atomic_store_n(&fits[splits], known, __ATOMIC_RELAXED);
    }
    return known == 1;
}

/* `st` NULL: attention alone; else with the store prologue (attention_decode_store). */
template <int D, int G, bool WIDE, bool STORE>
static enum rig_status rig__decode_launch(const struct rig_cuda_launch *launch,
                                          const struct rig_cuda_attention_args *a,
                                          const struct rig__decode_store *st)
{
    using S = rig__decode_shape<D, G, WIDE>;
    const struct rig__decode_knobs &knobs = rig__decode_knobs();
    struct rig__decode_plan plan = rig__decode_plan_make<D, G, WIDE, STORE>(launch, a, knobs);
    if (plan.shared > 48 * 1024) /* per device: set where it launches */
        RIG_CUDA_TRY(cudaFuncSetAttribute(rig__decode_kernel<D, G, WIDE, STORE>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          (int)plan.shared));
    struct rig__partials part;
    part.split_steps = knobs.split_steps;
    part.split_cap = plan.split_cap; /* rig__decode_share */
    part.splits = plan.splits;
    part.values = (float *)launch->scratch;
    part.lse = part.values + (size_t)a->rows * a->heads_q * part.splits * D;
    part.counters = launch->counters;
    part.heads_first = knobs.v2 && a->rows <= 65535;
    part.merge_prefetch = knobs.v2;
    int64_t blocks = a->rows * a->heads_kv * part.splits;
    int64_t per_sm = rig__decode_facts_get<D, G, WIDE, STORE>().natural;
    part.l2_prefetch = knobs.l2_prefetch && blocks <= (per_sm > 0 ? per_sm : 1) * launch->sm_count;
    dim3 grid((unsigned)a->rows, (unsigned)a->heads_kv, (unsigned)part.splits);
    if (part.heads_first) grid = dim3((unsigned)a->heads_kv, (unsigned)a->rows, grid.z);
    static const struct rig__decode_store none = {};
    if constexpr (!STORE) {
        if (rig__decode_cluster_wanted<D, G, WIDE>(a, part.splits, plan.shared)) {
            /* a cluster is the splits of one (row, KV head): blocks z */
            RIG_CUDA_TRY(rig_cuda_launch_pdl_cluster(
                launch, rig__decode_kernel<D, G, WIDE, false, true>, grid, dim3(S::threads),
                plan.shared, grid.z, *a, part, none));
            RIG_CUDA_LAUNCHED();
            return RIG_OK;
        }
    }
    RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__decode_kernel<D, G, WIDE, STORE>, grid,
                                     dim3(S::threads), plan.shared, *a, part,
                                     STORE ? *st : none));
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}

template <int D, int G, bool WIDE>
static enum rig_status rig__decode_launch_store(const struct rig_cuda_launch *launch,
                                                const struct rig_cuda_attention_args *a,
                                                const struct rig__decode_store *st)
{
    if (st != NULL) return rig__decode_launch<D, G, WIDE, true>(launch, a, st);
    return rig__decode_launch<D, G, WIDE, false>(launch, a, NULL);
}

template <int D>
static enum rig_status rig__decode_launch_group(const struct rig_cuda_launch *launch,
                                                const struct rig_cuda_attention_args *a,
                                                int64_t group, const struct rig__decode_store *st)
{
    if constexpr (D != 256) { /* D = 256: one lane group per warp, every head per thread */
        if (group >= 4 && rig__decode_knobs().wide) {
            if (group == 4) return rig__decode_launch_store<D, 4, true>(launch, a, st);
            return rig__decode_launch_store<D, 8, true>(launch, a, st);
        }
    }
    switch (group) {
    case 1: return rig__decode_launch_store<D, 1, false>(launch, a, st);
    case 2: return rig__decode_launch_store<D, 2, false>(launch, a, st);
    case 4: return rig__decode_launch_store<D, 4, false>(launch, a, st);
    default: RIG_ASSERT(group == 8); return rig__decode_launch_store<D, 8, false>(launch, a, st);
    }
}

/* True when the register path takes these arguments: D 64, 128 or 256; G 1, 2, 4 or 8 (at
 * most RIG_DECODE_GROUP_MAX); every K/V row 16-byte aligned; the merge fits in shared memory. */
static bool rig__decode_fits(const struct rig_cuda_launch *launch,
                             const struct rig_cuda_attention_args *a)
{
    int64_t dim = a->head_dim, group = a->heads_q / a->heads_kv;
    if (dim != 64 && dim != 128 && dim != 256) return false;
    if (group != 1 && group != 2 && group != 4 && group != 8) return false;
    if (group > RIG_DECODE_GROUP_MAX) return false;
    if (a->heads_q != group * a->heads_kv) return false;
    if (a->cache_stride_s % 8 != 0 || a->cache_stride_h % 8 != 0) return false;
    if (!rig_cuda_aligned(a->k_cache, 16) || !rig_cuda_aligned(a->v_cache, 16)) return false;
    return rig__decode_shared_bytes(group, dim) <= launch->shared_optin_bytes;
}

/* True when decode takes the tensor-core kernel (attention_prefill_wgmma.cu with one query
 * token a request: one block a (request, KV head) item, no split of the keys, K and V staged in
 * shared memory by a producer warpgroup, so bytes in flight cost no registers). RIG_DECODE_TC
 * (a timing and testing switch read at every call, like RIG_PREFILL_WGMMA): 0 never, 1
 * whenever that kernel runs the shape; unset: rig_decode_tensor_cores (hal/optable.h: groups
 * of 4 and 8 with at least SMs / 3 items; the simulator follows the same rule). Measured on an H200 over the op table's decode points
 * (docs/performance.md): at G = 4, 64 items and more take 0.47-0.73 x the register path's time
 * (median by item count), 48 items 0.77-0.89 x; below that the register path's splits win on
 * long rows (up to 3.9 x at one item). At G = 2 the gain is smaller and short rows of big
 * batches lose (1.3 x), so G <= 2 stays on the register path. */
static bool rig__decode_tc_wanted(const struct rig_cuda_launch *launch,
                                  const struct rig_cuda_attention_args *a)
{
    long wanted = rig_cuda_env("RIG_DECODE_TC", -1);
    if (wanted == 0 || launch->compute_capability != 90) return false;
    if (a->head_dim != 64 && a->head_dim != 128) return false;
    if (!rig_cuda_attention_mma_usable(a)) return false;
    if (wanted == 1) return true;
    return rig_decode_tensor_cores(a->rows, a->heads_q, a->heads_kv, a->head_dim,
                                   launch->sm_count);
}

/* Whether attention_decode_store runs its store in the register path's prologue, for
 * arguments `a` that path takes. Measured on an H200 (docs/performance.md, "decode attention
 * with the store in its prologue"): the separate q/k norm + RoPE + store kernel costs 1.5-3.5 us
 * a layer and, starting early under PDL, less on the critical path; the prologue adds its
 * chain (the position's table, the q heads' norm and rotation, the newest key after the loop)
 * to every block, 1.2-4 us a layer in the narrow layout below 64 rows and 3-6 us in the wide
 * layout (groups of 4 and 8) at every size. From 64 rows in the narrow layout it is faster
 * where rows hold 1,024 keys or more and slower at 512 and below. So: the narrow layout from
 * RIG__STORE_ROWS_MIN rows. RIG_DECODE_STORE_FUSED (a testing and timing switch read at every
 * call, as RIG_DECODE_TC): 0 never, 1 wherever the register path runs. */
#define RIG__STORE_ROWS_MIN 64

static bool rig__store_wanted(const struct rig_cuda_attention_args *a)
{
    long mode = rig_cuda_env("RIG_DECODE_STORE_FUSED", -1);
    if (mode == 0 || mode == 1) return mode == 1;
    int64_t group = a->heads_q / a->heads_kv;
    bool wide = group >= 4 && a->head_dim != 256 && rig__decode_knobs().wide;
    return !wide && a->rows >= RIG__STORE_ROWS_MIN;
}

/* The register path's store prologue for `p` (attention over `a`), when it is wanted
 * (rig__store_wanted) and the views allow 16-byte loads of a lane's 8 dims: false leaves the
 * two kernels. */
static bool rig__store_make(const struct rig_op_qk_norm_rope_store *p,
                            const struct rig_cuda_attention_args *a, struct rig__decode_store *st)
{
    if (!rig__store_wanted(a) || a->head_dim / 2 > RIG__STORE_HALF_MAX) return false;
    const struct rig_tensor *views[2] = {&p->k, &p->v};
    for (int i = 0; i < 2; i++) {
        if (!rig_cuda_aligned(views[i]->data, 16) || views[i]->stride[0] % 8 != 0 ||
            views[i]->stride[1] % 8 != 0)
            return false;
    }
    if (p->q_norm.data != NULL &&
        (!rig_cuda_aligned(p->q_norm.data, 16) || !rig_cuda_aligned(p->k_norm.data, 16)))
        return false;
    memset(st, 0, sizeof *st);
    st->k = (const uint16_t *)p->k.data;
    st->v = (const uint16_t *)p->v.data;
    st->k_stride_t = p->k.stride[0];
    st->k_stride_h = p->k.stride[1];
    st->v_stride_t = p->v.stride[0];
    st->v_stride_h = p->v.stride[1];
    st->q_norm = (const uint16_t *)p->q_norm.data;
    st->k_norm = (const uint16_t *)p->k_norm.data;
    st->positions = (const int32_t *)p->positions.data;
    st->out_loc = (const int32_t *)p->out_loc.data;
    st->k_cache = (uint16_t *)p->k_cache.data;
    st->v_cache = (uint16_t *)p->v_cache.data;
    st->slots = p->k_cache.shape[0];
    st->eps = p->eps;
    for (int64_t i = 0; i < a->head_dim / 2; i++)
        st->inv_freq[i] = rig_rope_inv_freq(&p->params, (int32_t)i, (int32_t)a->head_dim);
    return true;
}

/* Decode: the tensor-core kernel for big batches of large groups (rig__decode_tc_wanted), else
 * the register path when it fits, else the staged split-KV kernel. `store` (NULL: none) is
 * attention_decode_store's prologue: the register path runs it in its own blocks
 * (rig__store_make), the other paths as qk_norm_rope_store's kernel before theirs. */
static enum rig_status rig__decode(const struct rig_cuda_launch *launch,
                                   const struct rig_cuda_attention_args *a,
                                   const struct rig_op_qk_norm_rope_store *store)
{
    if (a->rows == 0 || a->heads_q == 0) return RIG_OK;
    if (rig__decode_tc_wanted(launch, a)) {
        if (store != NULL) RIG_TRY(rig_cuda_op_qk_norm_rope_store(launch, store));
        store = NULL;
        /* RIG_DECODE_TC_FORWARD=1 (a measuring switch, read at every call; not yet run on a
         * GPU): the kernel deals the requests in batch order, so the engine's longest-first
         * rows start first. By default it starts from the last request (its prefill rule), and
         * the thirteenth session's sweep found groups of 4 6-24 % slower with rows longest
         * first at 40, 72, 104, 136 ... rows, where the persistent grid's second round then
         * holds the longest rows (docs/performance.md). */
        struct rig_cuda_attention_args tc = *a;
        tc.decode_in_order = rig_cuda_env("RIG_DECODE_TC_FORWARD", 0) != 0;
        enum rig_status status = rig_cuda_attention_prefill_wgmma(launch, &tc, false);
        if (status != RIG_E_UNSUPPORTED) return status;
    }
    struct rig__decode_store prologue;
    const struct rig__decode_store *st = NULL;
    bool fits = rig__decode_fits(launch, a);
    if (store != NULL && fits && rig__store_make(store, a, &prologue)) st = &prologue;
    else if (store != NULL) RIG_TRY(rig_cuda_op_qk_norm_rope_store(launch, store));
    if (!fits) return rig_cuda_attention_split_kv(launch, a);
    int64_t group = a->heads_q / a->heads_kv;
    switch (a->head_dim) {
    case 64: return rig__decode_launch_group<64>(launch, a, group, st);
    case 128: return rig__decode_launch_group<128>(launch, a, group, st);
    default: return rig__decode_launch_group<256>(launch, a, group, st);
    }
}

bool rig_cuda_attention_caches_alike(const struct rig_tensor *k_cache,
                                     const struct rig_tensor *v_cache)
{
    if (k_cache->stride[0] == v_cache->stride[0] && k_cache->stride[1] == v_cache->stride[1])
        return true;
    fprintf(stderr, "rig: cuda: attention: k_cache and v_cache must have the same strides\n");
    return false;
}

struct rig_cuda_attention_args
rig_cuda_attention_args_make(const struct rig_tensor *out, const struct rig_tensor *q,
                             const struct rig_tensor *k_cache, const struct rig_tensor *v_cache,
                             const struct rig_tensor *page_table,
                             const struct rig_tensor *table_idx, const struct rig_tensor *kv_len,
                             const struct rig_tensor *cu_q, float scale)
{
    struct rig_cuda_attention_args a;
    memset(&a, 0, sizeof a);
    a.out = (uint16_t *)out->data;
    a.out_stride_t = out->stride[0];
    a.out_stride_h = out->stride[1];
    a.q = (const uint16_t *)q->data;
    a.q_stride_t = q->stride[0];
    a.q_stride_h = q->stride[1];
    a.k_cache = (const uint16_t *)k_cache->data;
    a.v_cache = (const uint16_t *)v_cache->data;
    a.cache_stride_s = k_cache->stride[0];
    a.cache_stride_h = k_cache->stride[1];
    a.page_table = (const int32_t *)page_table->data;
    a.page_table_stride = page_table->stride[0];
    a.page_table_rows = page_table->shape[0];
    a.page_table_cols = page_table->shape[1];
    a.table_idx = (const int32_t *)table_idx->data;
    a.kv_len = (const int32_t *)kv_len->data;
    a.cu_q = cu_q != NULL ? (const int32_t *)cu_q->data : NULL;
    a.requests = table_idx->shape[0];
    a.rows = q->shape[0];
    a.heads_q = q->shape[1];
    a.heads_kv = k_cache->shape[1];
    a.head_dim = q->shape[2];
    a.scale = scale;
    return a;
}

enum rig_status rig_cuda_op_attention_decode(const struct rig_cuda_launch *launch,
                                             const struct rig_op_attention_decode *p)
{
    if (!rig_cuda_attention_caches_alike(&p->k_cache, &p->v_cache)) return RIG_E_UNSUPPORTED;
    struct rig_cuda_attention_args a =
        rig_cuda_attention_args_make(&p->out, &p->q, &p->k_cache, &p->v_cache, &p->page_table,
                                     &p->table_idx, &p->kv_len, NULL, p->scale);
    return rig__decode(launch, &a, NULL);
}

enum rig_status rig_cuda_op_attention_decode_store(const struct rig_cuda_launch *launch,
                                                   const struct rig_op_attention_decode_store *p)
{
    const struct rig_op_attention_decode *d = &p->attend;
    if (!rig_cuda_attention_caches_alike(&d->k_cache, &d->v_cache)) return RIG_E_UNSUPPORTED;
    struct rig_cuda_attention_args a =
        rig_cuda_attention_args_make(&d->out, &d->q, &d->k_cache, &d->v_cache, &d->page_table,
                                     &d->table_idx, &d->kv_len, NULL, d->scale);
    return rig__decode(launch, &a, &p->store);
}
