/* gemv.cu — out[m, n] = sum_k a[m, k] * b[n, k] (+ bias[n]) for M <= 16 rows (see gemv.cuh).
 *
 * Launch geometry. A block owns 8 output columns (the n8 of one m16n8k16 tile: 8 rows of the
 * weight b) over the whole of K, so the grid is ceil(N / 8) blocks. Its W warps split K: warp w
 * takes a contiguous run of `steps_per_warp` steps of 32 k (the last run may be shorter), and
 * the block adds the W partial tiles in shared memory in warp order. W (1..16) is picked on the
 * host so that a warp's run fits one batch of RIG_GEMV_UNROLL steps where K allows and the grid
 * holds about RIG_GEMV_WARPS_PER_SM warps per multiprocessor: for Qwen3-0.6B on 132 SMs, qkv
 * (N 4096, K 1024) runs 512 blocks x 5 warps, o (1024, 2048) 128 x 16, gate_up (6144, 1024)
 * 768 x 4, down (1024, 3072) 128 x 16, the LM head (151936, 1024) 18992 x 4.
 *
 * One step of a warp. Lane (g, t) = (lane / 4, lane % 4) loads 16 bytes of weight row g at
 * k0 + 8t (so the warp reads 8 rows x 64 contiguous bytes) and 16 bytes of activation rows g
 * and g + 8 at the same k. Those 8 values are the lane's k-slots {2t, 2t+1, 2t+8, 2t+9} of two
 * consecutive k16 mmas (values 0-3 the first, 4-7 the second). That is a permutation of k, but
 * the same one for the A operand (activations, rows = tokens) and the B operand (weights,
 * columns = outputs), so each dot product is unchanged: the fragment layouts of m16n8k16 give
 * lane (g, t) exactly A[g][slots], A[g+8][slots] and B[slots][g]. No shuffles, no shared memory
 * in the main loop, every global access 16 bytes.
 *
 * Persistent form (rig__gemv_persistent_kernel, Qwen3-8B's and Qwen3-32B's shapes at batches
 * 1-8, and 1-2 where a warp's K run is several batches): one wave of blocks walks the column
 * tiles, each warp staging the weights of its next two units (a batch of its K run for one
 * tile) in shared memory by cp.async, so a multiprocessor keeps 2-3 units in flight where the
 * per-tile kernel's registers hold one; the same bits. Tried and dropped: the per-tile kernel
 * asking L2 for a warp's next batch while one computes made every decode step of 1 and 8 rows
 * 2-7 % slower (H200).
 *
 * Memory. The weights are read once, with ld.global.nc.L1::no_allocate (streamed, kept out
 * of L1); a warp issues all RIG_GEMV_UNROLL weight loads of a batch before its first mma. The
 * activations (M x K, at most 16 x K bf16) are read through L1 with ld.global.nc: a block's
 * warps read disjoint K ranges, so there is nothing to share inside a block, and blocks on the
 * same multiprocessor reading the same K ranges hit L1. For M <= 8 the rows g + 8 are zero
 * registers and their loads are skipped (template UPPER = false).
 *
 * Fused forms (hal/ops.h; templates PRO, ACC). A prologue rides on the persistent kernel only,
 * where a warp's K run is one batch: each block first makes the operand rows [M, K] once, all
 * its threads together, into shared memory after its weight stages (rig__gemv_stage_operand:
 * RMS_NORM after a block-wide sum of squares, rig__gemv_norm_rows; SILU_MUL from the gate and
 * up halves); block 0 also stores them into `operand`, and each warp reads its run of them
 * into registers once. Elsewhere the launcher answers RIG_E_UNSUPPORTED and gemm.cu runs the
 * prologue as its own kernel. Measured on an H200 (docs/performance.md, "the GEMM's fused
 * forms"): made in the lanes that hold a row in the mma's layout (4 of a warp's 32 at one
 * row), for every block and batch, a prologue was 1.5-11 x the plain GEMM; once a block of the
 * per-tile kernel it was paid again every wave and still lost; once a block of the persistent
 * kernel a one-row decode step gains 3-4 %. ACC adds the rounded sum into out at the store,
 * each output read and written by the one thread that owns it; both kernels take it.
 */
#include "cuda/ops/common.cuh"
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/gemv.cuh"
#include "hal/optable.h" /* the launch geometry, shared with the simulator */

RIG_CUDA_MODULE(gemv)

/* RIG_GEMV_COLUMNS (8: the n of one mma tile), RIG_GEMV_STEP (32 k: 16 bytes a lane, two k16
 * mmas), RIG_GEMV_UNROLL (steps whose weight loads a warp has in flight at once),
 * RIG_GEMV_WARPS_MAX and RIG_GEMV_WARPS_PER_SM: hal/optable.h, with the geometry. */
#define RIG__PARTIAL_REGS 4 /* floats of an m16n8 accumulator tile per lane */

static_assert(RIG_CUDA_GEMV_ROWS_MAX == 16, "one m16 operand holds all rows");
static_assert(RIG_GEMV_STEP == 4 * 8, "four lanes of 8 bf16 values cover a step");

struct rig__gemv_args {
    void *out;            /* [M, N] bf16 | f32, row stride out_stride */
    const uint16_t *a;    /* [M, K] bf16, row stride a_stride */
    const uint16_t *b;    /* [N, K] bf16, row stride b_stride */
    const uint16_t *bias; /* [N] bf16, or NULL */
    int64_t out_stride, a_stride, b_stride;
    int32_t rows, columns, depth;  /* M, N, K */
    int32_t steps, steps_per_warp; /* ceil(K / 32); a warp's share of them */
    const uint16_t *norm_weight;   /* [K] bf16: RMS_NORM */
    uint16_t *operand;             /* [M, K] bf16, row stride operand_stride: with a prologue */
    int64_t operand_stride;
    float eps;                     /* RMS_NORM */
    bool prefetch;                 /* the grid is one wave: prefetch weights before the wait */
    bool preload; /* the grid is one wave: load the first batch of weights before the wait
                   * (M <= 8 only), not just prefetch it; RIG_GEMV_PRELOAD=0 turns it off */
};

/* What one lane reads: its weight row and activation rows, already offset by 8t. */
struct rig__gemv_lane {
    const uint16_t *weight; /* b row g (row 0 when g >= N - n0, never read then) */
    const uint16_t *low;    /* a row g */
    const uint16_t *high;   /* a row g + 8 */
    bool has_column, has_low, has_high;
    int32_t k_offset; /* 8t: the lane's first k inside a step */
};

static __device__ __forceinline__ uint4 rig__load_stream(const uint16_t *p)
{
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

/* The same load, pinned in program order (volatile) so that it stays before the PDL wait. */
static __device__ __forceinline__ uint4 rig__load_stream_early(const uint16_t *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

static __device__ __forceinline__ uint4 rig__load_cached(const uint16_t *p)
{
    return __ldg(reinterpret_cast<const uint4 *>(p));
}

/* c += A . B over one 16x8x16 bf16 tile, fp32 accumulate. a0/a2: row g, a1/a3: row g + 8. */
static __device__ __forceinline__ void rig__mma(float (&c)[4], uint32_t a0, uint32_t a1,
                                                uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* The weights of steps [first, min(first + RIG_GEMV_UNROLL, end)) of the lane's warp; a chunk past
 * K (the last step when K % 32 != 0) reads as zeros. EARLY: each load pinned in program order
 * (the batch loaded before the PDL wait). */
template <bool EARLY>
static __device__ __forceinline__ void rig__gemv_weights(uint4 (&weight)[RIG_GEMV_UNROLL],
                                                         const struct rig__gemv_lane &lane,
                                                         int32_t first, int32_t end, int32_t depth)
{
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < RIG_GEMV_UNROLL; u++) {
        int64_t k = (int64_t)(first + u) * RIG_GEMV_STEP;
        bool inside = first + u < end && k + lane.k_offset < depth && lane.has_column;
        if constexpr (EARLY) {
            weight[u] = inside ? rig__load_stream_early(lane.weight + k) : zero;
        } else {
            weight[u] = inside ? rig__load_stream(lane.weight + k) : zero;
        }
    }
}

/* The prologue's eight operand values from eight loaded values `x` of a row: RMS_NORM with the
 * row's 1 / rms and eight norm weights `other`, SILU_MUL with `x` the gate and `other` the up
 * values. */
template <int PRO>
static __device__ __forceinline__ uint4 rig__gemv_prologue(uint4 x, uint4 other, float inverse_rms)
{
    uint16_t in[8], with[8], out[8];
    memcpy(in, &x, sizeof x);
    memcpy(with, &other, sizeof other);
#pragma unroll
    for (int j = 0; j < 8; j++) {
        if constexpr (PRO == RIG_GEMM_PROLOGUE_RMS_NORM) {
            out[j] = rig_cuda_norm_value(in[j], with[j], inverse_rms);
        } else {
            out[j] = rig_cuda_silu_mul_value(in[j], with[j]);
        }
    }
    uint4 v;
    memcpy(&v, out, sizeof v);
    return v;
}

/* The activations of steps [first, min(first + RIG_GEMV_UNROLL, end)) (rows g and, with UPPER,
 * g + 8); a chunk past K reads as zeros. STAGED: the lane's rows point into shared memory (a
 * prologue's operand, rig__gemv_stage_operand), read with plain loads. */
template <bool UPPER, bool STAGED = false>
static __device__ __forceinline__ void
rig__gemv_activations(uint4 (&low)[RIG_GEMV_UNROLL], uint4 (&high)[RIG_GEMV_UNROLL],
                      const struct rig__gemv_lane &lane, int32_t first, int32_t end, int32_t depth)
{
    const uint4 zero = make_uint4(0, 0, 0, 0);
    auto load = [](const uint16_t *p) {
        if constexpr (STAGED) return *reinterpret_cast<const uint4 *>(p);
        return rig__load_cached(p);
    };
#pragma unroll
    for (int u = 0; u < RIG_GEMV_UNROLL; u++) {
        int64_t k = (int64_t)(first + u) * RIG_GEMV_STEP;
        bool inside = first + u < end && k + lane.k_offset < depth;
        low[u] = inside && lane.has_low ? load(lane.low + k) : zero;
        high[u] = UPPER && inside && lane.has_high ? load(lane.high + k) : zero;
    }
}

/* RMS_NORM: 1 / rms of each of the p.rows rows of a, into inverse[0, rows) (shared), as
 * rig_cuda_norm_write computes it. Every block sums the same squares in the same order
 * (thread i takes the 8 values at k = 8i, 8i + 8 blockDim, ...; then its warp, then the warps
 * in order), so the blocks and the operand the first one stores agree. `sums` is shared
 * scratch. Ends with a barrier. */
static __device__ void rig__gemv_norm_rows(const struct rig__gemv_args &p, float *inverse,
                                           float (*sums)[RIG_GEMV_WARPS_MAX])
{
    int lane = (int)threadIdx.x % RIG_CUDA_WARP, warp = (int)threadIdx.x / RIG_CUDA_WARP;
    int warps = (int)blockDim.x / RIG_CUDA_WARP;
    for (int r = 0; r < p.rows; r++) {
        const uint16_t *row = p.a + r * p.a_stride;
        float squares = 0.0f;
        for (int64_t k = (int64_t)threadIdx.x * 8; k < p.depth; k += (int64_t)blockDim.x * 8) {
            uint4 v = rig__load_cached(row + k);
            uint16_t x[8];
            memcpy(x, &v, sizeof v);
#pragma unroll
            for (int j = 0; j < 8; j++)
                squares += rig_cuda_bf16(x[j]) * rig_cuda_bf16(x[j]);
        }
        squares = rig_cuda_warp_sum(squares);
        if (lane == 0) sums[r][warp] = squares;
    }
    __syncthreads();
    if ((int)threadIdx.x < p.rows) {
        float total = 0.0f;
        for (int w = 0; w < warps; w++)
            total += sums[threadIdx.x][w];
        inverse[threadIdx.x] = 1.0f / sqrtf(total / (float)p.depth + p.eps);
    }
    __syncthreads();
}

/* A prologue's operand rows [p.rows][K], made once by the whole block into shared memory
 * `staged` (row stride RIG__STAGED_STRIDE(K): 8 values of padding, so the lanes of a warp reading
 * 8 rows at the same k fall in different banks), and by block 0 into `operand` too. Thread i
 * makes the 8 values at k = 8i, 8i + 8 blockDim, ... of each row (unrolled by 4, so a thread
 * has several loads in flight). `inverse`: the rows' 1 / rms (RMS_NORM). Ends with a
 * barrier. (Made by the four lanes of a warp that hold a row in the mma's layout, and
 * again by every block for every batch, the prologue took 1.5-11 x the GEMM's time: calls 2-4
 * of docs/data/round-h200-b1b46b3.) */
#define RIG__STAGED_STRIDE(depth) RIG_GEMV_STAGED_STRIDE(depth)
/* the persistent kernel's dynamic shared memory with a prologue (hal/optable.h): a
 * multiprocessor's 227 KB less its static 17,472 bytes (two partial buffers, the norm's sums) */
#define RIG__PERSISTENT_DYNAMIC_MAX RIG_GEMV_PROLOGUE_SHARED_MAX
template <int PRO>
static __device__ void rig__gemv_stage_operand(const struct rig__gemv_args &p, uint16_t *staged,
                                               const float *inverse)
{
    const int64_t stride = RIG__STAGED_STRIDE(p.depth), chunks = p.depth / 8;
    for (int r = 0; r < p.rows; r++) {
        const uint16_t *row = p.a + r * p.a_stride;
        float inverse_rms = PRO == RIG_GEMM_PROLOGUE_RMS_NORM ? inverse[r] : 1.0f;
#pragma unroll 4
        for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
            uint4 x = rig__load_cached(row + 8 * c);
            uint4 with = PRO == RIG_GEMM_PROLOGUE_RMS_NORM ? rig__load_cached(p.norm_weight + 8 * c)
                                                            : rig__load_cached(row + p.depth + 8 * c);
            uint4 v = rig__gemv_prologue<PRO>(x, with, inverse_rms);
            *reinterpret_cast<uint4 *>(staged + r * stride + 8 * c) = v;
            if (blockIdx.x == 0) *reinterpret_cast<uint4 *>(p.operand + r * p.operand_stride + 8 * c) = v;
        }
    }
    __syncthreads();
}

/* acc += the steps' activations . weights, step by step (two k16 mmas a step). `end` is the
 * same in the whole warp, so the mmas run converged. */
static __device__ __forceinline__ void
rig__gemv_mmas(float (&acc)[4], const uint4 (&weight)[RIG_GEMV_UNROLL], const uint4 (&low)[RIG_GEMV_UNROLL],
               const uint4 (&high)[RIG_GEMV_UNROLL], int32_t first, int32_t end)
{
#pragma unroll
    for (int u = 0; u < RIG_GEMV_UNROLL; u++) {
        if (first + u >= end) break;
        rig__mma(acc, low[u].x, high[u].x, low[u].y, high[u].y, weight[u].x, weight[u].y);
        rig__mma(acc, low[u].z, high[u].z, low[u].w, high[u].w, weight[u].z, weight[u].w);
    }
}

/* Asks L2 for the weight bytes of the warp's first batch of steps. Weights are never written
 * during a forward, so under programmatic dependent launch this runs while the previous
 * kernel finishes (rig_cuda_pdl_begin comes after): the weight stream of a decode GEMM then
 * starts before its activations exist. For the decode shapes a warp's whole run is one batch.
 * Only for a grid of one wave: blocks of later waves start after the predecessor anyway, and
 * on the LM head (18992 blocks) the extra L2 requests cost 102 -> 119 us (H100, test_timing). */
static __device__ __forceinline__ void rig__gemv_prefetch(const struct rig__gemv_lane &lane,
                                                          int32_t first, int32_t end, int32_t depth)
{
    if (!lane.has_column) return;
#pragma unroll
    for (int u = 0; u < RIG_GEMV_UNROLL; u++) {
        int64_t k = (int64_t)(first + u) * RIG_GEMV_STEP;
        if (first + u < end && k + lane.k_offset < depth)
            asm volatile("prefetch.global.L2 [%0];\n" ::"l"(lane.weight + k));
    }
}

/* Adds the warps' tiles of column tile `tile` in warp order, then bias in fp32, then one
 * rounding at the store. Thread i < 8M takes output (i / 8, n0 + i % 8), held by lane
 * (row % 8) * 4 + n / 2 in accumulator (row / 8) * 2 + n % 2 of every warp. With ACC the
 * rounded sum is added into out, out = bf16(out + bf16(sum)) (bf16 out, no bias). Returns once
 * the block's partials are in `partial`; they are read after, so the caller gives the next
 * tile another buffer or waits for the block. */
template <bool UPPER, typename OUT, bool ACC = false>
static __device__ __forceinline__ void
rig__gemv_store(const float (&acc)[4], const struct rig__gemv_args &p,
                float (*partial)[RIG__PARTIAL_REGS][RIG_CUDA_WARP], int64_t tile)
{
    int lane = (int)threadIdx.x % RIG_CUDA_WARP;
    int warp = (int)threadIdx.x / RIG_CUDA_WARP;
    int warps = (int)blockDim.x / RIG_CUDA_WARP;
#pragma unroll
    for (int r = 0; r < (UPPER ? 4 : 2); r++)
        partial[warp][r][lane] = acc[r];
    __syncthreads();
    int outputs = p.rows * RIG_GEMV_COLUMNS;
    for (int i = (int)threadIdx.x; i < outputs; i += (int)blockDim.x) {
        int row = i / RIG_GEMV_COLUMNS, n = i % RIG_GEMV_COLUMNS;
        int64_t column = tile * RIG_GEMV_COLUMNS + n;
        if (column >= p.columns) continue;
        int source = (row % 8) * 4 + n / 2, reg = (row / 8) * 2 + n % 2;
        float sum = 0.0f;
        for (int w = 0; w < warps; w++)
            sum += partial[w][reg][source];
        if (p.bias != NULL) sum += rig_cuda_bf16(p.bias[column]);
        OUT *out = (OUT *)p.out + row * p.out_stride + column;
        if constexpr (sizeof(OUT) == 4) {
            *out = sum;
        } else if constexpr (ACC) {
            *out = rig_cuda_to_bf16(rig_cuda_bf16(*out) + rig_bf16_round(sum));
        } else {
            *out = rig_cuda_to_bf16(sum);
        }
    }
}

/* What this thread's lane reads for column tile `tile` (8 columns). */
template <bool UPPER>
static __device__ __forceinline__ struct rig__gemv_lane
rig__gemv_lane_at(const struct rig__gemv_args &p, int64_t tile)
{
    int lane_index = (int)threadIdx.x % RIG_CUDA_WARP;
    int group = lane_index / 4, quad = lane_index % 4; /* mma groupID, threadID_in_group */
    int64_t column = tile * RIG_GEMV_COLUMNS + group;
    struct rig__gemv_lane lane;
    lane.has_column = column < p.columns;
    lane.has_low = group < p.rows;
    lane.has_high = UPPER && group + 8 < p.rows;
    lane.k_offset = 8 * quad;
    lane.weight = p.b + (lane.has_column ? column : 0) * p.b_stride + lane.k_offset;
    lane.low = p.a + (lane.has_low ? group : 0) * p.a_stride + lane.k_offset;
    lane.high = p.a + (lane.has_high ? group + 8 : 0) * p.a_stride + lane.k_offset;
    return lane;
}

/* The shared memory of a prologue's 1 / rms a row: ROWS = RIG_CUDA_GEMV_ROWS_MAX with RMS_NORM,
 * 1 (unused) otherwise. */
template <int ROWS> struct rig__gemv_norm_shared {
    float sums[ROWS][RIG_GEMV_WARPS_MAX];
    float inverse[ROWS];
};
#define RIG__NORM_ROWS(PRO) ((PRO) == RIG_GEMM_PROLOGUE_RMS_NORM ? RIG_CUDA_GEMV_ROWS_MAX : 1)

template <bool UPPER, typename OUT, bool ACC>
static __global__ void __launch_bounds__(RIG_GEMV_WARPS_MAX *RIG_CUDA_WARP)
    rig__gemv_kernel(const struct rig__gemv_args p)
{
    __shared__ float partial[RIG_GEMV_WARPS_MAX][RIG__PARTIAL_REGS][RIG_CUDA_WARP];
    int warp = (int)threadIdx.x / RIG_CUDA_WARP;
    struct rig__gemv_lane lane = rig__gemv_lane_at<UPPER>(p, blockIdx.x);
    int32_t begin = warp * p.steps_per_warp;
    int32_t end = min(begin + p.steps_per_warp, p.steps);
    uint4 weight[RIG_GEMV_UNROLL];
    /* the early batch stays in registers across the wait: at 9-16 rows that spills (UPPER
     * needs a second activation row per lane), so those keep the L2 prefetch */
    bool preload = !UPPER && p.preload;
    if (preload) {
        rig__gemv_weights<true>(weight, lane, begin, end, p.depth);
    } else if (p.prefetch) {
        rig__gemv_prefetch(lane, begin, end, p.depth);
    }
    rig_cuda_pdl_begin(); /* the activations are the previous kernel's output */
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int32_t first = begin; first < end; first += RIG_GEMV_UNROLL) {
        if (!preload || first != begin) rig__gemv_weights<false>(weight, lane, first, end, p.depth);
        uint4 low[RIG_GEMV_UNROLL], high[RIG_GEMV_UNROLL];
        rig__gemv_activations<UPPER>(low, high, lane, first, end, p.depth);
        rig__gemv_mmas(acc, weight, low, high, first, end);
    }
    rig__gemv_store<UPPER, OUT, ACC>(acc, p, partial, blockIdx.x);
}

/* The persistent kernel's weight pipeline: each warp stages its batch of a tile (RIG_GEMV_UNROLL
 * steps, 16 bytes a lane a step: 4 KB) in its own slot of shared memory, RIG__STAGES tiles
 * deep. */
#define RIG__STAGES     RIG_GEMV_STAGES /* hal/optable.h: the simulator's rule counts them */
#define RIG__SLOT_BYTES RIG_GEMV_SLOT_BYTES
static_assert(RIG_GEMV_SLOT_BYTES == RIG_GEMV_UNROLL * RIG_CUDA_WARP * 16, "a warp's batch");

static size_t rig__gemv_stage_bytes(int32_t warps)
{
    return (size_t)RIG__STAGES * (size_t)warps * RIG__SLOT_BYTES;
}

/* Starts copying the lane's weights of one tile (its batch of steps; zeros past K or N) into
 * `slot` (this warp's slot of one stage), as one commit group; an empty group past the last
 * tile, so that every thread commits one group a tile. */
static __device__ __forceinline__ void rig__gemv_stage(const struct rig__gemv_lane &lane,
                                                       bool tile_exists, uint4 *slot, int32_t first,
                                                       int32_t end, int32_t depth)
{
    int lane_index = (int)threadIdx.x % RIG_CUDA_WARP;
    if (tile_exists) {
#pragma unroll
        for (int u = 0; u < RIG_GEMV_UNROLL; u++) {
            int64_t k = (int64_t)(first + u) * RIG_GEMV_STEP;
            bool inside = first + u < end && k + lane.k_offset < depth && lane.has_column;
            uint32_t dst =
                (uint32_t)__cvta_generic_to_shared(slot + u * RIG_CUDA_WARP + lane_index);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst),
                         "l"(inside ? lane.weight + k : lane.weight), "r"(inside ? 16 : 0));
        }
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* The persistent kernel (M <= 8, more column tiles than the GPU holds blocks at once): block b
 * takes tiles b, b + G, b + 2G, ... (G blocks, one wave). Each warp copies its weights of the
 * next RIG__STAGES - 1 units into shared memory (cp.async, no registers held) while it
 * multiplies the current one, so a multiprocessor keeps up to 2-3 units of weights in flight
 * instead of one. A unit is one batch of a warp's K run for one tile: a tile is `batches`
 * units (1 when a warp's run fits one batch, K <= 4,096 at 16 warps; 3 for Qwen3-8B's down
 * projection, K 12,288; 2-7 for Qwen3-32B's shapes), and the stream of units runs on from one
 * tile into the next. The kernel above starts every tile as a block of its own, whose weights
 * sit in registers: one 512-thread block a multiprocessor (108 registers) holds 64 KB in
 * flight, and on an H200 the Qwen3-8B gate_up at batch 1 (201 MB) took 69 us against 42 at
 * the bandwidth. A register double buffer (a first version) held the same 64 KB and was no
 * faster (71 us). With one unit a tile (ONE) the activations, the same for every tile, are
 * loaded into registers once (a version that re-read them from L1 each tile lost at 8 rows: 64
 * KB of them a block did not fit the L1 left beside 192 KB of stages, and the batch-8 step took
 * 6.53 -> 7.70 ms); with several, a unit reads its batch of activations through L1, which is
 * why the launcher takes that form only for few rows. The sums alternate between two shared
 * buffers, so a tile needs one barrier. Same warps, K runs and summation order as the kernel
 * above: the same bits. */
template <typename OUT, bool ONE, int PRO, bool ACC>
static __global__ void __launch_bounds__(RIG_GEMV_WARPS_MAX *RIG_CUDA_WARP)
    rig__gemv_persistent_kernel(const struct rig__gemv_args p, int64_t tiles)
{
    static_assert(PRO == RIG_GEMM_PROLOGUE_NONE || ONE, "a prologue needs one batch a run");
    __shared__ float partial[2][RIG_GEMV_WARPS_MAX][RIG__PARTIAL_REGS][RIG_CUDA_WARP];
    __shared__ struct rig__gemv_norm_shared<RIG__NORM_ROWS(PRO)> norm;
    /* [RIG__STAGES][warps][RIG_GEMV_UNROLL][32] weights, then with a prologue the operand rows
     * [rows][RIG__STAGED_STRIDE(K)] bf16 */
    extern __shared__ uint4 rig__gemv_stages[];
    int warp = (int)threadIdx.x / RIG_CUDA_WARP, warps = (int)blockDim.x / RIG_CUDA_WARP;
    int lane_index = (int)threadIdx.x % RIG_CUDA_WARP;
    int32_t begin = warp * p.steps_per_warp;
    int32_t end = min(begin + p.steps_per_warp, p.steps);
    /* units a tile, the same for every warp (a shorter last run stages zeros) */
    const int32_t batches = ONE ? 1 : (p.steps_per_warp + RIG_GEMV_UNROLL - 1) / RIG_GEMV_UNROLL;
    int64_t stride = gridDim.x;
    int64_t mine = (tiles - blockIdx.x + stride - 1) / stride; /* this block's tiles */
    int64_t units = mine * batches;
    auto slot = [&](int64_t u) { /* this warp's slot for the block's u-th unit */
                                 return rig__gemv_stages + ((u % RIG__STAGES) * warps + warp) *
                                                               (RIG_GEMV_UNROLL * RIG_CUDA_WARP);
    };
    auto stage = [&](int64_t u) { /* starts unit u's copies (an empty group past the last) */
                                  int64_t tile = blockIdx.x + (u / batches) * stride;
                                  bool exists = u < units;
                                  rig__gemv_stage(rig__gemv_lane_at<false>(p, exists ? tile : 0),
                                                  exists, slot(u),
                                                  begin + (int32_t)(u % batches) * RIG_GEMV_UNROLL,
                                                  end, p.depth);
    };
    /* the weights never change during a forward: the first units' copies start before the wait */
    for (int u = 0; u < RIG__STAGES - 1; u++)
        stage(u);
    rig_cuda_pdl_begin(); /* the activations are the previous kernel's output */
    struct rig__gemv_lane rows = rig__gemv_lane_at<false>(p, blockIdx.x); /* a rows only */
    uint4 low[RIG_GEMV_UNROLL], high[RIG_GEMV_UNROLL];
    if constexpr (PRO != RIG_GEMM_PROLOGUE_NONE) {
        /* the operand made once by the block; each warp reads its rows' run there, once */
        uint16_t *operand_rows = reinterpret_cast<uint16_t *>(
            rig__gemv_stages + RIG__STAGES * warps * RIG_GEMV_UNROLL * RIG_CUDA_WARP);
        if constexpr (PRO == RIG_GEMM_PROLOGUE_RMS_NORM)
            rig__gemv_norm_rows(p, norm.inverse, norm.sums);
        rig__gemv_stage_operand<PRO>(p, operand_rows, norm.inverse);
        int group = lane_index / 4;
        rows.low = operand_rows + (rows.has_low ? group : 0) * RIG__STAGED_STRIDE(p.depth) +
                   rows.k_offset;
        rig__gemv_activations<false, true>(low, high, rows, begin, end, p.depth);
    } else if constexpr (ONE) {
        rig__gemv_activations<false>(low, high, rows, begin, end, p.depth);
    }
    int64_t u = 0;
    for (int64_t n = 0, tile = blockIdx.x; tile < tiles; n++, tile += stride) {
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int32_t b = 0; b < batches; b++, u++) {
            asm volatile("cp.async.wait_group %0;\n" ::"n"(RIG__STAGES - 2) : "memory");
            uint4 weight[RIG_GEMV_UNROLL];
            const uint4 *staged = slot(u);
#pragma unroll
            for (int i = 0; i < RIG_GEMV_UNROLL; i++)
                weight[i] = staged[i * RIG_CUDA_WARP + lane_index]; /* the lane's own copies */
            stage(u + RIG__STAGES - 1); /* into the slot read last round */
            int32_t first = begin + b * RIG_GEMV_UNROLL;
            if constexpr (!ONE) rig__gemv_activations<false>(low, high, rows, first, end, p.depth);
            rig__gemv_mmas(acc, weight, low, high, first, end);
        }
        rig__gemv_store<false, OUT, ACC>(acc, p, partial[n & 1], tile);
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}

bool rig_cuda_gemv_accepts(const struct rig_op_gemm *p)
{
    int64_t rows = p->out.shape[0], columns = p->out.shape[1], depth = rig_gemm_depth(p);
    if (rows < 1 || rows > RIG_CUDA_GEMV_ROWS_MAX) return false;
    if (columns > INT32_MAX || depth > INT32_MAX - RIG_GEMV_STEP || depth % 8 != 0) return false;
    if (!rig_cuda_aligned(p->a.data, 16) || !rig_cuda_aligned(p->b.data, 16)) return false;
    if (rows > 1 && p->a.stride[0] % 8 != 0) return false;
    if (columns > 1 && p->b.stride[0] % 8 != 0) return false;
    if (p->prologue == RIG_GEMM_PROLOGUE_NONE && !p->accumulate) return true;
    /* the fused forms: bf16 out, and a prologue's operand (and norm weight) 16-byte aligned */
    if (p->out.dtype != RIG_DTYPE_BF16) return false;
    if (p->prologue == RIG_GEMM_PROLOGUE_NONE) return true;
    if (!rig_cuda_aligned(p->operand.data, 16)) return false;
    if (rows > 1 && p->operand.stride[0] % 8 != 0) return false;
    return p->prologue != RIG_GEMM_PROLOGUE_RMS_NORM || rig_cuda_aligned(p->norm_weight.data, 16);
}

/* Blocks of the persistent kernel with `warps` warps a multiprocessor holds at once (asked
 * once per kernel and warp count; 0 when the query fails). */
/* Blocks of the persistent kernel with `warps` warps and `operand` bytes of staged operand
 * rows a multiprocessor holds at once (0 when the query fails or none fits). Without a
 * prologue (operand 0) asked once per kernel and warp count. */
template <typename OUT, bool ONE, int PRO, bool ACC>
static int rig__gemv_resident(int32_t warps, size_t operand)
{
    static int known[RIG_GEMV_WARPS_MAX + 1]; /* 0: not asked yet; the same answer on every GPU */
    int value = __atomic_load_n(&known[warps], __ATOMIC_RELAXED);
    if (value != 0 && operand == 0) return value;
    const void *kernel = (const void *)rig__gemv_persistent_kernel<OUT, ONE, PRO, ACC>;
    size_t most = PRO == RIG_GEMM_PROLOGUE_NONE ? rig__gemv_stage_bytes(RIG_GEMV_WARPS_MAX)
                                                : RIG__PERSISTENT_DYNAMIC_MAX;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)most) !=
            cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &value, kernel, warps * RIG_CUDA_WARP, rig__gemv_stage_bytes(warps) + operand) !=
            cudaSuccess) {
        cudaGetLastError(); /* a size over the limit: none fits, not a sticky error */
        return 0;
    }
    if (operand == 0) __atomic_store_n(&known[warps], value, __ATOMIC_RELAXED);
    return value;
}

/* The persistent kernel when it applies, else RIG_E_UNSUPPORTED (the caller takes the per-tile
 * kernel): at most 8 rows, blocks of RIG_GEMV_WARPS_MAX warps (K over 3,840: the per-tile kernel
 * fits one such block a multiprocessor), more tiles than blocks fit at once, and where a warp's
 * K run is several batches (K over 4,096) at most RIG_GEMV_MULTI_ROWS rows, whose activations the
 * units re-read through L1. Measured on an H200 (docs/performance.md): Qwen3-8B's decode step
 * at batch 1 5.94 -> 5.39 ms, at batch 8 6.55 -> 6.06 ms (x 2048: 6.24 -> 5.64, 7.32 -> 6.76)
 * with one batch a run. With blocks of 4-8 warps (Qwen3-0.6B's LM head, Llama-3.2-1B) the
 * per-tile kernel already holds several blocks a multiprocessor, and an earlier version of
 * this one was 1-4 % slower there. RIG_GEMV_PERSISTENT=0 (read at every call, a timing and
 * testing switch) never takes it; =2 takes it whenever it can run (any warps, any rows up to
 * 8); RIG_GEMV_PERSISTENT_ROWS=R sets the rows limit of several batches a run. With several
 * batches a run (H200, docs/performance.md): Qwen3-32B's step at batch 1 22.66 -> 21.28 ms (x
 * 2048: 24.26 -> 22.15); Qwen3-8B's down projection 31.8 -> 28.5 us a layer, its step at
 * batch 1 -1 % (the early weight copies share the bandwidth with the nodes before). At 8 rows
 * Qwen3-32B's step took 24.4 -> 29.3 ms (80 KB of activations a block, re-read each unit from
 * L2), hence 2 rows. */
/* The staged operand rows' bytes of a prologue (0 without one). */
static size_t rig__gemv_operand_bytes(const struct rig__gemv_args &args, int prologue)
{
    if (prologue == RIG_GEMM_PROLOGUE_NONE) return 0;
    return (size_t)args.rows * (size_t)RIG__STAGED_STRIDE(args.depth) * sizeof(uint16_t);
}

/* The persistent kernel's grid when it runs `args` (0: it does not), and whether a warp's K
 * run is one batch. Without a prologue, rig_gemv_persistent's rule (hal/optable.h); a prologue
 * rides on it whenever a run is one batch and a block with the operand rows fits, as it is
 * made once a block there (the per-tile kernel would make it again for every block of every
 * wave), on at most as many blocks as tiles. */
template <typename OUT, int PRO, bool ACC>
static int64_t rig__gemv_persistent_grid(const struct rig_cuda_launch *launch,
                                         const struct rig__gemv_args &args,
                                         const struct rig_gemv_geometry &g, bool *one)
{
    long wanted = rig_cuda_env("RIG_GEMV_PERSISTENT", 1);
    if (wanted == 0 || args.rows > 8) return 0;
    *one = rig_gemv_one_batch(&g);
    int32_t warps = (int32_t)g.warps;
    if constexpr (PRO != RIG_GEMM_PROLOGUE_NONE) {
        size_t operand = rig__gemv_operand_bytes(args, PRO);
        /* the simulator asks the same rule (hal/optable.h) which kernel a prologue runs on */
        if (!rig_gemv_prologue_persistent(args.rows, args.depth, &g)) return 0;
        int64_t resident =
            (int64_t)rig__gemv_resident<OUT, true, PRO, ACC>(warps, operand) * launch->sm_count;
        return resident < g.blocks ? resident : g.blocks;
    } else {
        if (wanted != 2 && g.warps != RIG_GEMV_WARPS_MAX) return 0;
        int64_t resident = (int64_t)(*one ? rig__gemv_resident<OUT, true, PRO, ACC>(warps, 0)
                                          : rig__gemv_resident<OUT, false, PRO, ACC>(warps, 0)) *
                           launch->sm_count;
        /* several units a tile need at least two tiles a block, or the pipeline barely runs
         * (Llama-3.2-1B's down projection, 256 tiles: 1.127 -> 1.134 ms a batch-1 step with
         * it); =2 drops that and the rows limit */
        bool runs = wanted == 2 ? resident > 0 && g.blocks > resident
                                : rig_gemv_persistent(args.rows, &g, resident,
                                                      rig_cuda_env("RIG_GEMV_PERSISTENT_ROWS",
                                                                   RIG_GEMV_MULTI_ROWS));
        return runs ? resident : 0;
    }
}

/* Launches the persistent kernel on a grid of `grid` blocks (rig__gemv_persistent_grid). */
template <typename OUT, int PRO, bool ACC>
static enum rig_status rig__gemv_persistent(const struct rig_cuda_launch *launch,
                                            const struct rig__gemv_args &args,
                                            const struct rig_gemv_geometry &g, int64_t grid,
                                            bool one)
{
    int32_t warps = (int32_t)g.warps;
    int64_t blocks = g.blocks;
    dim3 block((unsigned)(warps * RIG_CUDA_WARP));
    size_t shared = rig__gemv_stage_bytes(warps) + rig__gemv_operand_bytes(args, PRO);
    if constexpr (PRO != RIG_GEMM_PROLOGUE_NONE) {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__gemv_persistent_kernel<OUT, true, PRO, ACC>,
                                         dim3((unsigned)grid), block, shared, args, blocks));
    } else if (one) {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__gemv_persistent_kernel<OUT, true, PRO, ACC>,
                                         dim3((unsigned)grid), block, shared, args, blocks));
    } else {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__gemv_persistent_kernel<OUT, false, PRO, ACC>,
                                         dim3((unsigned)grid), block, shared, args, blocks));
    }
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}

template <bool UPPER, typename OUT, bool ACC>
static enum rig_status rig__gemv_start(const struct rig_cuda_launch *launch,
                                       const struct rig__gemv_args &args, int64_t blocks,
                                       int32_t warps)
{
    RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__gemv_kernel<UPPER, OUT, ACC>,
                                     dim3((unsigned)blocks),
                                     dim3((unsigned)(warps * RIG_CUDA_WARP)), 0, args));
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}

/* The persistent kernel where it applies, else the per-tile one. A prologue rides on the
 * persistent kernel only (rig__gemv_persistent_grid); where that does not run, RIG_E_UNSUPPORTED:
 * the caller runs the prologue as its own kernel (gemm.cu). */
template <typename OUT, int PRO, bool ACC>
static enum rig_status rig__gemv_run(const struct rig_cuda_launch *launch,
                                     const struct rig__gemv_args &args,
                                     const struct rig_gemv_geometry &g)
{
    bool one = false;
    int64_t grid = rig__gemv_persistent_grid<OUT, PRO, ACC>(launch, args, g, &one);
    if (grid > 0) return rig__gemv_persistent<OUT, PRO, ACC>(launch, args, g, grid, one);
    if constexpr (PRO != RIG_GEMM_PROLOGUE_NONE) return RIG_E_UNSUPPORTED;
    int64_t blocks = g.blocks;
    int32_t warps = (int32_t)g.warps;
    return args.rows > 8 ? rig__gemv_start<true, OUT, ACC>(launch, args, blocks, warps)
                         : rig__gemv_start<false, OUT, ACC>(launch, args, blocks, warps);
}

enum rig_status rig_cuda_gemv_launch(const struct rig_cuda_launch *launch,
                                     const struct rig_op_gemm *p)
{
    RIG_ASSERT(rig_cuda_gemv_accepts(p));
    struct rig__gemv_args args;
    args.out = p->out.data;
    args.a = (const uint16_t *)p->a.data;
    args.b = (const uint16_t *)p->b.data;
    args.bias = (const uint16_t *)p->bias.data;
    args.out_stride = p->out.stride[0];
    args.a_stride = p->a.stride[0];
    args.b_stride = p->b.stride[0];
    args.norm_weight = (const uint16_t *)p->norm_weight.data;
    args.operand = (uint16_t *)p->operand.data;
    args.operand_stride = p->operand.stride[0];
    args.eps = p->eps;
    args.rows = (int32_t)p->out.shape[0];
    args.columns = (int32_t)p->out.shape[1];
    args.depth = (int32_t)rig_gemm_depth(p);
    struct rig_gemv_geometry g = rig_gemv_geometry(args.columns, args.depth, launch->sm_count);
    if (g.blocks == 0) return RIG_OK;
    args.steps = (int32_t)g.steps;
    args.steps_per_warp = (int32_t)g.steps_per_warp;
    RIG_ASSERT(g.warps >= 1);
    RIG_ASSERT(g.warps <= RIG_GEMV_WARPS_MAX);
    args.prefetch = rig_gemv_one_wave(&g, launch->sm_count);
    static const bool preload = rig_cuda_env("RIG_GEMV_PRELOAD", 1) != 0;
    args.preload = args.prefetch && preload;
    if (p->out.dtype == RIG_DTYPE_F32) return rig__gemv_run<float, 0, false>(launch, args, g);
    switch ((int)p->prologue * 2 + (p->accumulate ? 1 : 0)) {
    case 0: return rig__gemv_run<uint16_t, RIG_GEMM_PROLOGUE_NONE, false>(launch, args, g);
    case 1: return rig__gemv_run<uint16_t, RIG_GEMM_PROLOGUE_NONE, true>(launch, args, g);
    case 2: return rig__gemv_run<uint16_t, RIG_GEMM_PROLOGUE_RMS_NORM, false>(launch, args, g);
    case 3: return rig__gemv_run<uint16_t, RIG_GEMM_PROLOGUE_RMS_NORM, true>(launch, args, g);
    case 4: return rig__gemv_run<uint16_t, RIG_GEMM_PROLOGUE_SILU_MUL, false>(launch, args, g);
    default: return rig__gemv_run<uint16_t, RIG_GEMM_PROLOGUE_SILU_MUL, true>(launch, args, g);
    }
}
