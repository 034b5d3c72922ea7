/* gemm_skinny.cu — out[m, n] = sum_k a[m, k] * b[n, k] (+ bias[n]) for M <= 64 rows (see
 * gemm_skinny.cuh).
 *
 * Grid. Block (x, y) owns the 32 output columns of tile x over split y of K (a contiguous run
 * of steps_per_split 32-k steps); its warps split that run again, warp w taking
 * steps_per_warp steps. For Qwen3-0.6B on 132 SMs: qkv (N 4096, K 1024) 128 x 1 blocks of 8
 * warps, o (1024, 2048) 32 x 4 of 4, gate_up (6144, 1024) 192 x 1 of 8, down (1024, 3072)
 * 32 x 4 of 6 (rig_cuda_skinny_plan).
 *
 * One step of a warp. Lane (g, t) loads 16 bytes of weight row g of each of the 4 column
 * tiles and 16 bytes of activation rows g and g + 8 of each of the RT row tiles at
 * k0 + 8t, and runs the 2 x RT x 4 mmas of the step through the k permutation of
 * mma_rows.cuh. Weights: a warp issues the loads of a batch of RIG__UNROLL steps at once
 * (4 x 16 bytes a step and lane), the first batch before it waits for the previous kernel.
 * Activations (at most 64 x K, written by that kernel) are loaded a step ahead of the mmas.
 *
 * Reductions, in a fixed order. The warps' accumulators meet in shared memory by a tree
 * (warp w + s into warp w for s = 4, 2, 1), so warp 0 holds the block's sum. Unsplit, warp 0
 * adds the bias and stores. Split, warp 0 writes its partial tile to the stream's scratch and
 * counts the block's arrival in the tile's counter; the block that arrives last adds the
 * splits' partials in split order (its own read back like the others), adds the bias, stores
 * and sets the counter back to 0.
 */
#include "cuda/ops/common.cuh"
#include "cuda/ops/gemm_skinny.cuh"
#include "cuda/ops/mma_rows.cuh"

RIG_CUDA_MODULE(gemm_skinny)

#define RIG__TILES_N       4  /* n8 tiles of a warp (and of its block): 32 columns */
#define RIG__STEP          32 /* k per step: 16 bytes per lane, two k16 mmas */
#define RIG__UNROLL        4  /* steps whose weight loads a warp has in flight at once */
#define RIG__WARPS_MAX     8
#define RIG__SPLITS_MAX    16
#define RIG__SPLIT_STEPS   4 /* fewest steps of a split */
#define RIG__ROW_TILES_MAX (RIG_CUDA_SKINNY_ROWS_MAX / 16)

static_assert(RIG__TILES_N * 8 == RIG_CUDA_SKINNY_COLUMNS, "a warp covers the block's columns");

struct rig__skinny_args {
    struct rig_cuda_rows_operands op; /* out, a, b, bias, strides, M, N, K */
    float4 *partials;                 /* [tiles][splits][RT * 4][32] (scratch), when splits > 1 */
    uint32_t *counters;               /* [tiles] arrivals, zero between launches, when splits > 1 */
    int32_t splits, steps, steps_per_split, steps_per_warp;
};

/* The lane's view: its weight row g in column tile 0 and activation row g in row tile 0,
 * already offset by its 8t (tile j is 8j rows of b further, row tile i 16i rows of a), and
 * which rows exist (bit j of `columns`; bits i and RT + i of `rows` for rows 16i + g and
 * 16i + g + 8). */
struct rig__skinny_lane {
    const uint16_t *weight, *activation;
    int64_t weight_tile, activation_tile; /* 8 rows of b, 16 rows of a */
    uint32_t columns, rows;
    int32_t k_offset; /* 8t */
};

/* The weights of steps [first, first + RIG__UNROLL) clipped to `end`; zeros past K. */
template <int RT>
static __device__ __forceinline__ void
rig__skinny_weights(uint4 (&w)[RIG__UNROLL][RIG__TILES_N], const struct rig__skinny_lane &lane,
                    int32_t first, int32_t end, int32_t depth)
{
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < RIG__UNROLL; u++) {
        int64_t k = (int64_t)(first + u) * RIG__STEP;
        bool inside = first + u < end && k + lane.k_offset < depth;
#pragma unroll
        for (int j = 0; j < RIG__TILES_N; j++)
            w[u][j] = inside && (lane.columns >> j & 1u)
                          ? rig_cuda_load_stream(lane.weight + j * lane.weight_tile + k)
                          : zero;
    }
}

/* The activations of step `step` (zeros past K, past M, or at step >= end). */
template <int RT>
static __device__ __forceinline__ void
rig__skinny_activations(uint4 (&low)[RT], uint4 (&high)[RT], const struct rig__skinny_lane &lane,
                        int32_t step, int32_t end, int32_t depth)
{
    const uint4 zero = make_uint4(0, 0, 0, 0);
    int64_t k = (int64_t)step * RIG__STEP;
    bool inside = step < end && k + lane.k_offset < depth;
#pragma unroll
    for (int i = 0; i < RT; i++) {
        const uint16_t *row = lane.activation + i * lane.activation_tile + k;
        low[i] = inside && (lane.rows >> i & 1u) ? rig_cuda_load_cached(row) : zero;
        high[i] = inside && (lane.rows >> (RT + i) & 1u)
                      ? rig_cuda_load_cached(row + lane.activation_tile / 2)
                      : zero;
    }
}

/* One batch: steps [first, min(first + RIG__UNROLL, end)) with their weights in w. `end` is
 * the same in the whole warp, so the mmas run converged. */
template <int RT>
static __device__ __forceinline__ void
rig__skinny_batch(float (&acc)[RT][RIG__TILES_N][4], const uint4 (&w)[RIG__UNROLL][RIG__TILES_N],
                  const struct rig__skinny_lane &lane, int32_t first, int32_t end, int32_t depth)
{
    uint4 low[2][RT], high[2][RT];
    rig__skinny_activations<RT>(low[0], high[0], lane, first, end, depth);
#pragma unroll
    for (int u = 0; u < RIG__UNROLL; u++) {
        if (first + u >= end) break;
        if (u + 1 < RIG__UNROLL)
            rig__skinny_activations<RT>(low[(u + 1) % 2], high[(u + 1) % 2], lane, first + u + 1,
                                        end, depth);
#pragma unroll
        for (int i = 0; i < RT; i++) {
#pragma unroll
            for (int j = 0; j < RIG__TILES_N; j++)
                rig_cuda_mma_step(acc[i][j], low[u % 2][i], high[u % 2][i], w[u][j]);
        }
    }
}

/* Outputs (row, column0) and (row, column0 + 1): bias in fp32, one rounding. */
template <typename OUT>
static __device__ __forceinline__ void rig__skinny_store(const struct rig__skinny_args &p,
                                                         int64_t column0, int row, float value0,
                                                         float value1)
{
    if (row >= p.op.rows) return;
    float values[2] = {value0, value1};
#pragma unroll
    for (int c = 0; c < 2; c++) {
        int64_t column = column0 + c;
        if (column >= p.op.columns) continue;
        float sum = values[c];
        if (p.op.bias != NULL) sum += rig_cuda_bf16(p.op.bias[column]);
        OUT *out = (OUT *)p.op.out + row * p.op.out_stride + column;
        if constexpr (sizeof(OUT) == 4) {
            *out = sum;
        } else {
            *out = rig_cuda_to_bf16(sum);
        }
    }
}

/* Stores the m16n8 tile (i, j) of the block held as `c` by lane (g, t): register 2h + c is
 * output (16i + g + 8h, 8j + 2t + c), the mma accumulator layout. */
template <typename OUT>
static __device__ __forceinline__ void rig__skinny_store_tile(const struct rig__skinny_args &p,
                                                              int i, int j, const float (&c)[4])
{
    int lane = (int)threadIdx.x % RIG_CUDA_WARP;
    int g = lane / 4, t = lane % 4;
    int64_t column = (int64_t)blockIdx.x * RIG_CUDA_SKINNY_COLUMNS + 8 * j + 2 * t;
    rig__skinny_store<OUT>(p, column, 16 * i + g, c[0], c[1]);
    rig__skinny_store<OUT>(p, column, 16 * i + g + 8, c[2], c[3]);
}

template <int RT, typename OUT>
static __global__ void __launch_bounds__(RIG__WARPS_MAX *RIG_CUDA_WARP)
    rig__skinny_kernel(const struct rig__skinny_args p)
{
    /* the tree's exchange: at most 4 warps write at a time */
    __shared__ float4 exchange[RIG__WARPS_MAX / 2][RT * RIG__TILES_N][RIG_CUDA_WARP];
    int lane_index = (int)threadIdx.x % RIG_CUDA_WARP;
    int warp = (int)threadIdx.x / RIG_CUDA_WARP;
    int warps = (int)blockDim.x / RIG_CUDA_WARP;
    int group = lane_index / 4, quad = lane_index % 4; /* mma groupID, threadID_in_group */

    struct rig__skinny_lane lane;
    lane.k_offset = 8 * quad;
    lane.weight_tile = 8 * p.op.b_stride;
    lane.activation_tile = 16 * p.op.a_stride;
    lane.columns = 0;
    lane.rows = 0;
    int64_t column0 = (int64_t)blockIdx.x * RIG_CUDA_SKINNY_COLUMNS + group;
#pragma unroll
    for (int j = 0; j < RIG__TILES_N; j++)
        lane.columns |= (uint32_t)(column0 + 8 * j < p.op.columns) << j;
#pragma unroll
    for (int i = 0; i < RT; i++) {
        lane.rows |= (uint32_t)(16 * i + group < p.op.rows) << i;
        lane.rows |= (uint32_t)(16 * i + group + 8 < p.op.rows) << (RT + i);
    }
    /* rows past N or M are never read; their pointers stay inside the operands */
    lane.weight = p.op.b + (column0 < p.op.columns ? column0 : 0) * p.op.b_stride + lane.k_offset;
    lane.activation = p.op.a + (group < p.op.rows ? group : 0) * p.op.a_stride + lane.k_offset;
    int32_t split_begin = (int32_t)blockIdx.y * p.steps_per_split;
    int32_t split_end = min(split_begin + p.steps_per_split, p.steps);
    int32_t begin = min(split_begin + warp * p.steps_per_warp, split_end);
    int32_t end = min(begin + p.steps_per_warp, split_end);

    float acc[RT][RIG__TILES_N][4] = {};
    uint4 w[RIG__UNROLL][RIG__TILES_N];
    rig__skinny_weights<RT>(w, lane, begin, end, p.op.depth); /* weights: nothing writes them */
    rig_cuda_pdl_begin(); /* the activations are the previous kernel's output */
    for (int32_t first = begin; first < end; first += RIG__UNROLL) {
        if (first != begin) rig__skinny_weights<RT>(w, lane, first, end, p.op.depth);
        rig__skinny_batch<RT>(acc, w, lane, first, end, p.op.depth);
    }

    /* warps [s, 2s) add into warps [0, s), for s = 4, 2, 1: a fixed tree */
    for (int s = RIG__WARPS_MAX / 2; s >= 1; s /= 2) {
        if (s >= warps) continue; /* the same in the whole block */
        if (warp >= s && warp < 2 * s) {
#pragma unroll
            for (int i = 0; i < RT; i++) {
#pragma unroll
                for (int j = 0; j < RIG__TILES_N; j++)
                    exchange[warp - s][i * RIG__TILES_N + j][lane_index] =
                        make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]);
            }
        }
        __syncthreads();
        if (warp < s && warp + s < warps) {
#pragma unroll
            for (int i = 0; i < RT; i++) {
#pragma unroll
                for (int j = 0; j < RIG__TILES_N; j++) {
                    float4 v = exchange[warp][i * RIG__TILES_N + j][lane_index];
                    acc[i][j][0] += v.x, acc[i][j][1] += v.y, acc[i][j][2] += v.z,
                        acc[i][j][3] += v.w;
                }
            }
        }
        __syncthreads();
    }
    if (warp != 0) return;

    if (p.splits == 1) {
#pragma unroll
        for (int i = 0; i < RT; i++) {
#pragma unroll
            for (int j = 0; j < RIG__TILES_N; j++)
                rig__skinny_store_tile<OUT>(p, i, j, acc[i][j]);
        }
        return;
    }
    /* split: publish this block's partial tile, count the arrival, the last one adds up */
    float4 *tile = p.partials + (int64_t)blockIdx.x * p.splits * RT * RIG__TILES_N * RIG_CUDA_WARP;
#pragma unroll
    for (int i = 0; i < RT; i++) {
#pragma unroll
        for (int j = 0; j < RIG__TILES_N; j++) {
            float4 *slot = tile + ((int64_t)blockIdx.y * RT * RIG__TILES_N + i * RIG__TILES_N + j) *
                                      RIG_CUDA_WARP;
            __stcg(slot + lane_index,
                   make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]));
        }
    }
    __threadfence();
    __syncwarp();
    uint32_t arrived = 0;
    if (lane_index == 0) arrived = atomicAdd(p.counters + blockIdx.x, 1u);
    arrived = __shfl_sync(0xffffffffu, arrived, 0);
    if (arrived != (uint32_t)p.splits - 1) return;
    __threadfence();
#pragma unroll
    for (int i = 0; i < RT; i++) {
#pragma unroll
        for (int j = 0; j < RIG__TILES_N; j++) {
            float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int s = 0; s < p.splits; s++) {
                float4 v = __ldcg(
                    tile + ((int64_t)s * RT * RIG__TILES_N + i * RIG__TILES_N + j) * RIG_CUDA_WARP +
                    lane_index);
                c[0] += v.x, c[1] += v.y, c[2] += v.z, c[3] += v.w;
            }
            rig__skinny_store_tile<OUT>(p, i, j, c);
        }
    }
    if (lane_index == 0) p.counters[blockIdx.x] = 0;
}

bool rig_cuda_skinny_plan(int64_t n, int64_t k, int32_t sm_count, size_t scratch_bytes,
                          int64_t counters, struct rig_cuda_skinny_plan *plan)
{
    if (n < 1 || k < 1 || n > INT32_MAX || k > INT32_MAX - RIG__STEP) return false;
    int64_t sms = sm_count > 0 ? sm_count : 1;
    int64_t tiles = rig_cuda_div_up(n, RIG_CUDA_SKINNY_COLUMNS);
    int64_t steps = rig_cuda_div_up(k, RIG__STEP);
    /* bytes of partial sums a split costs at the most rows: 64 x 32 fp32 a tile */
    size_t per_split = (size_t)tiles * RIG_CUDA_SKINNY_ROWS_MAX * RIG_CUDA_SKINNY_COLUMNS * 4;
    int64_t splits = 1;
    while (tiles * splits * 10 < sms * 9 && splits < RIG__SPLITS_MAX &&
           steps / (splits + 1) >= RIG__SPLIT_STEPS && tiles <= counters &&
           per_split * (size_t)(splits + 1) <= scratch_bytes)
        splits++;
    int64_t per = rig_cuda_div_up(steps, splits);
    splits = rig_cuda_div_up(steps, per); /* no empty split */
    int64_t warps = rig_cuda_div_up(per, RIG__UNROLL);
    if (warps > RIG__WARPS_MAX) warps = RIG__WARPS_MAX;
    int64_t per_warp = rig_cuda_div_up(per, warps);
    warps = rig_cuda_div_up(per, per_warp);
    plan->tiles = tiles;
    plan->splits = (int32_t)splits;
    plan->steps = (int32_t)steps;
    plan->steps_per_split = (int32_t)per;
    plan->warps = (int32_t)warps;
    plan->steps_per_warp = (int32_t)per_warp;
    return true;
}

bool rig_cuda_skinny_accepts(const struct rig_op_gemm *p)
{
    return rig_cuda_rows_accept(p, RIG_CUDA_SKINNY_ROWS_MAX);
}

template <int RT, typename OUT>
static enum rig_status rig__skinny_start(const struct rig_cuda_launch *launch,
                                         const struct rig__skinny_args &args,
                                         const struct rig_cuda_skinny_plan &plan)
{
    RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__skinny_kernel<RT, OUT>,
                                     dim3((unsigned)plan.tiles, (unsigned)plan.splits),
                                     dim3((unsigned)(plan.warps * RIG_CUDA_WARP)), 0, args));
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}

template <int RT>
static enum rig_status rig__skinny_rows(const struct rig_cuda_launch *launch,
                                        const struct rig__skinny_args &args,
                                        const struct rig_cuda_skinny_plan &plan, bool f32)
{
    return f32 ? rig__skinny_start<RT, float>(launch, args, plan)
               : rig__skinny_start<RT, uint16_t>(launch, args, plan);
}

enum rig_status rig_cuda_skinny_launch(const struct rig_cuda_launch *launch,
                                       const struct rig_op_gemm *p)
{
    RIG_ASSERT(rig_cuda_skinny_accepts(p));
    struct rig_cuda_skinny_plan plan;
    int64_t counters = (int64_t)(RIG_CUDA_COUNTER_BYTES / sizeof(uint32_t));
    if (!rig_cuda_skinny_plan(p->out.shape[1], p->a.shape[1], launch->sm_count,
                              launch->scratch_bytes, counters, &plan))
        return RIG_E_RANGE;
    struct rig__skinny_args args;
    args.op = rig_cuda_rows_operands(p);
    args.partials = (float4 *)launch->scratch;
    args.counters = launch->counters;
    args.splits = plan.splits;
    args.steps = plan.steps;
    args.steps_per_split = plan.steps_per_split;
    args.steps_per_warp = plan.steps_per_warp;
    bool f32 = p->out.dtype == RIG_DTYPE_F32;
    if (args.op.rows <= 16) return rig__skinny_rows<1>(launch, args, plan, f32);
    if (args.op.rows <= 32) return rig__skinny_rows<2>(launch, args, plan, f32);
    return rig__skinny_rows<RIG__ROW_TILES_MAX>(launch, args, plan, f32);
}
