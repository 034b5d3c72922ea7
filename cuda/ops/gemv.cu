/* gemv.cu — out[m, n] = sum_k a[m, k] * b[n, k] (+ bias[n]) for M <= 16 rows (see gemv.cuh).
 *
 * Launch geometry. A block owns 8 output columns (the n8 of one m16n8k16 tile: 8 rows of the
 * weight b) over the whole of K, so the grid is ceil(N / 8) blocks. Its W warps split K: warp w
 * takes a contiguous run of `steps_per_warp` steps of 32 k (the last run may be shorter), and
 * the block adds the W partial tiles in shared memory in warp order. W (1..16) is picked on the
 * host so that a warp's run fits one batch of RIG__UNROLL steps where K allows and the grid
 * holds about RIG__WARPS_PER_SM warps per multiprocessor: for Qwen3-0.6B on 132 SMs, qkv
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
 * Memory. The weights are read once, with ld.global.nc.L1::no_allocate (streamed, kept out
 * of L1); a warp issues all RIG__UNROLL weight loads of a batch before its first mma. The
 * activations (M x K, at most 16 x K bf16) are read through L1 with ld.global.nc: a block's
 * warps read disjoint K ranges, so there is nothing to share inside a block, and blocks on the
 * same multiprocessor reading the same K ranges hit L1. For M <= 8 the rows g + 8 are zero
 * registers and their loads are skipped (template UPPER = false).
 */
#include "cuda/ops/common.cuh"
#include "cuda/ops/gemv.cuh"

RIG_CUDA_MODULE(gemv)

#define RIG__COLUMNS      8  /* output columns per block: the n of one mma tile */
#define RIG__STEP         32 /* k per step: 16 bytes per lane, two k16 mmas */
#define RIG__UNROLL       8  /* steps whose weight loads a warp has in flight at once */
#define RIG__WARPS_MAX    16 /* warps per block */
#define RIG__WARPS_PER_SM 16 /* warps per multiprocessor the grid aims for */
#define RIG__PARTIAL_REGS 4  /* floats of an m16n8 accumulator tile per lane */

static_assert(RIG_CUDA_GEMV_ROWS_MAX == 16, "one m16 operand holds all rows");
static_assert(RIG__STEP == 4 * 8, "four lanes of 8 bf16 values cover a step");

struct rig__gemv_args {
    void *out;            /* [M, N] bf16 | f32, row stride out_stride */
    const uint16_t *a;    /* [M, K] bf16, row stride a_stride */
    const uint16_t *b;    /* [N, K] bf16, row stride b_stride */
    const uint16_t *bias; /* [N] bf16, or NULL */
    int64_t out_stride, a_stride, b_stride;
    int32_t rows, columns, depth;  /* M, N, K */
    int32_t steps, steps_per_warp; /* ceil(K / 32); a warp's share of them */
    bool prefetch;                 /* the grid is one wave: prefetch weights before the wait */
    bool preload;  /* the grid is one wave: load the first batch of weights before the wait
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

/* The weights of steps [first, min(first + RIG__UNROLL, end)) of the lane's warp; a chunk past
 * K (the last step when K % 32 != 0) reads as zeros. EARLY: each load pinned in program order
 * (the batch loaded before the PDL wait). */
template <bool EARLY>
static __device__ __forceinline__ void rig__gemv_weights(uint4 (&weight)[RIG__UNROLL],
                                                         const struct rig__gemv_lane &lane,
                                                         int32_t first, int32_t end, int32_t depth)
{
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < RIG__UNROLL; u++) {
        int64_t k = (int64_t)(first + u) * RIG__STEP;
        bool inside = first + u < end && k + lane.k_offset < depth && lane.has_column;
        if constexpr (EARLY) {
            weight[u] = inside ? rig__load_stream_early(lane.weight + k) : zero;
        } else {
            weight[u] = inside ? rig__load_stream(lane.weight + k) : zero;
        }
    }
}

/* The same steps into acc with their weights in `weight`: every activation load of the batch
 * first, then the mmas. A chunk past K reads as zeros. `end` is the same in the whole warp, so
 * the mmas run converged. */
template <bool UPPER>
static __device__ __forceinline__ void rig__gemv_batch(float (&acc)[4],
                                                       const uint4 (&weight)[RIG__UNROLL],
                                                       const struct rig__gemv_lane &lane,
                                                       int32_t first, int32_t end, int32_t depth)
{
    const uint4 zero = make_uint4(0, 0, 0, 0);
    uint4 low[RIG__UNROLL], high[RIG__UNROLL];
#pragma unroll
    for (int u = 0; u < RIG__UNROLL; u++) {
        int64_t k = (int64_t)(first + u) * RIG__STEP;
        bool inside = first + u < end && k + lane.k_offset < depth;
        low[u] = inside && lane.has_low ? rig__load_cached(lane.low + k) : zero;
        high[u] = UPPER && inside && lane.has_high ? rig__load_cached(lane.high + k) : zero;
    }
#pragma unroll
    for (int u = 0; u < RIG__UNROLL; u++) {
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
    for (int u = 0; u < RIG__UNROLL; u++) {
        int64_t k = (int64_t)(first + u) * RIG__STEP;
        if (first + u < end && k + lane.k_offset < depth)
            asm volatile("prefetch.global.L2 [%0];\n" ::"l"(lane.weight + k));
    }
}

/* Adds the warps' tiles in warp order, then bias in fp32, then one rounding at the store.
 * Thread i < 8M takes output (i / 8, n0 + i % 8), held by lane (row % 8) * 4 + n / 2 in
 * accumulator (row / 8) * 2 + n % 2 of every warp. */
template <bool UPPER, typename OUT>
static __device__ __forceinline__ void
rig__gemv_store(const float (&acc)[4], const struct rig__gemv_args &p,
                float (*partial)[RIG__PARTIAL_REGS][RIG_CUDA_WARP])
{
    int lane = (int)threadIdx.x % RIG_CUDA_WARP;
    int warp = (int)threadIdx.x / RIG_CUDA_WARP;
    int warps = (int)blockDim.x / RIG_CUDA_WARP;
#pragma unroll
    for (int r = 0; r < (UPPER ? 4 : 2); r++)
        partial[warp][r][lane] = acc[r];
    __syncthreads();
    int outputs = p.rows * RIG__COLUMNS;
    for (int i = (int)threadIdx.x; i < outputs; i += (int)blockDim.x) {
        int row = i / RIG__COLUMNS, n = i % RIG__COLUMNS;
        int64_t column = (int64_t)blockIdx.x * RIG__COLUMNS + n;
        if (column >= p.columns) continue;
        int source = (row % 8) * 4 + n / 2, reg = (row / 8) * 2 + n % 2;
        float sum = 0.0f;
        for (int w = 0; w < warps; w++)
            sum += partial[w][reg][source];
        if (p.bias != NULL) sum += rig_cuda_bf16(p.bias[column]);
        OUT *out = (OUT *)p.out + row * p.out_stride + column;
        if constexpr (sizeof(OUT) == 4) {
            *out = sum;
        } else {
            *out = rig_cuda_to_bf16(sum);
        }
    }
}

template <bool UPPER, typename OUT>
static __global__ void __launch_bounds__(RIG__WARPS_MAX *RIG_CUDA_WARP)
    rig__gemv_kernel(const struct rig__gemv_args p)
{
    __shared__ float partial[RIG__WARPS_MAX][RIG__PARTIAL_REGS][RIG_CUDA_WARP];
    int lane_index = (int)threadIdx.x % RIG_CUDA_WARP;
    int warp = (int)threadIdx.x / RIG_CUDA_WARP;
    int group = lane_index / 4, quad = lane_index % 4; /* mma groupID, threadID_in_group */
    int64_t column = (int64_t)blockIdx.x * RIG__COLUMNS + group;
    struct rig__gemv_lane lane;
    lane.has_column = column < p.columns;
    lane.has_low = group < p.rows;
    lane.has_high = UPPER && group + 8 < p.rows;
    lane.k_offset = 8 * quad;
    lane.weight = p.b + (lane.has_column ? column : 0) * p.b_stride + lane.k_offset;
    lane.low = p.a + (lane.has_low ? group : 0) * p.a_stride + lane.k_offset;
    lane.high = p.a + (lane.has_high ? group + 8 : 0) * p.a_stride + lane.k_offset;
    int32_t begin = warp * p.steps_per_warp;
    int32_t end = min(begin + p.steps_per_warp, p.steps);
    uint4 weight[RIG__UNROLL];
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
    for (int32_t first = begin; first < end; first += RIG__UNROLL) {
        if (!preload || first != begin) rig__gemv_weights<false>(weight, lane, first, end, p.depth);
        rig__gemv_batch<UPPER>(acc, weight, lane, first, end, p.depth);
    }
    rig__gemv_store<UPPER, OUT>(acc, p, partial);
}

bool rig_cuda_gemv_accepts(const struct rig_op_gemm *p)
{
    int64_t rows = p->out.shape[0], columns = p->out.shape[1], depth = p->a.shape[1];
    if (rows < 1 || rows > RIG_CUDA_GEMV_ROWS_MAX) return false;
    if (columns > INT32_MAX || depth > INT32_MAX - RIG__STEP || depth % 8 != 0) return false;
    if (!rig_cuda_aligned(p->a.data, 16) || !rig_cuda_aligned(p->b.data, 16)) return false;
    if (rows > 1 && p->a.stride[0] % 8 != 0) return false;
    if (columns > 1 && p->b.stride[0] % 8 != 0) return false;
    return true;
}

/* Warps per block for `steps` steps of K over `blocks` blocks (see the file comment): enough
 * that each warp's run fits one batch, and enough for the occupancy target, at most
 * RIG__WARPS_MAX, never more than there are steps. */
static int32_t rig__gemv_warps(int64_t steps, int64_t blocks, int32_t sm_count)
{
    int64_t for_depth = rig_cuda_div_up(steps, RIG__UNROLL);
    int64_t for_occupancy =
        rig_cuda_div_up((int64_t)(sm_count > 0 ? sm_count : 1) * RIG__WARPS_PER_SM, blocks);
    int64_t warps = for_depth > for_occupancy ? for_depth : for_occupancy;
    if (warps > RIG__WARPS_MAX) warps = RIG__WARPS_MAX;
    if (warps > steps) warps = steps;
    return warps < 1 ? 1 : (int32_t)warps;
}

template <bool UPPER, typename OUT>
static enum rig_status rig__gemv_start(const struct rig_cuda_launch *launch,
                                       const struct rig__gemv_args &args, int64_t blocks,
                                       int32_t warps)
{
    RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__gemv_kernel<UPPER, OUT>, dim3((unsigned)blocks),
                                     dim3((unsigned)(warps * RIG_CUDA_WARP)), 0, args));
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
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
    args.rows = (int32_t)p->out.shape[0];
    args.columns = (int32_t)p->out.shape[1];
    args.depth = (int32_t)p->a.shape[1];
    args.steps = (int32_t)rig_cuda_div_up(args.depth, RIG__STEP);
    int64_t blocks = rig_cuda_div_up(args.columns, RIG__COLUMNS);
    if (blocks == 0) return RIG_OK;
    int32_t warps = rig__gemv_warps(args.steps, blocks, launch->sm_count);
    args.steps_per_warp = (int32_t)rig_cuda_div_up(args.steps, warps);
    if (args.steps_per_warp > 0) warps = (int32_t)rig_cuda_div_up(args.steps, args.steps_per_warp);
    RIG_ASSERT(warps >= 1);
    RIG_ASSERT(warps <= RIG__WARPS_MAX);
    args.prefetch = blocks * warps <= (int64_t)launch->sm_count * RIG__WARPS_PER_SM;
    static const bool preload = rig_cuda_env("RIG_GEMV_PRELOAD", 1) != 0;
    args.preload = args.prefetch && preload;
    bool upper = args.rows > 8;
    bool f32 = p->out.dtype == RIG_DTYPE_F32;
    if (upper) {
        return f32 ? rig__gemv_start<true, float>(launch, args, blocks, warps)
                   : rig__gemv_start<true, uint16_t>(launch, args, blocks, warps);
    }
    return f32 ? rig__gemv_start<false, float>(launch, args, blocks, warps)
               : rig__gemv_start<false, uint16_t>(launch, args, blocks, warps);
}
