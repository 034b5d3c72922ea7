/* qk_norm_rope_store.cu — head_rms_norm(q), head_rms_norm(k), rope(q, k) and store_kv(k, v) as
 * one kernel (see qk_norm_rope_store.cuh): at small batches a decode step is bound by
 * per-kernel latency, and this replaces four launches per layer with one.
 *
 * Grid: one row of blocks per token (blockIdx.x), each block RIG__WARPS warps, one warp per
 * head: q heads, then k heads, then v heads (blockIdx.y picks the group of RIG__WARPS). A block
 * first computes its token's cos/sin table into shared memory (D/2 values; the inverse
 * frequencies are hal/rope.h's rig_rope_inv_freq, passed by value as rope.cu does).
 * A q or k warp reads its head (vectors of VEC values when every view allows: the widest that
 * still gives each of the 32 lanes a pair — 4 bytes at D 128; 16-byte vectors left 24 of 32
 * lanes idle and measured 211 us for an 8192-token chunk on the H100, 4x its bytes at the
 * copy bandwidth), reduces the sum of squares with shuffles, and rewrites each rotary pair
 * (i, i + D/2) — lane c owns pairs
 * c*VEC .. c*VEC+VEC-1 of both halves, so a lane reads every value it writes itself and the
 * update in place needs no barrier. A k warp also writes the result to k_cache, a v warp
 * copies its head to v_cache. Rounding is the three ops': bf16(w * bf16(x * inv_rms)) stored,
 * then rotated from that bf16 value and rounded again. A slot outside [0, S) stores nothing
 * (q and k are still written), as store_kv.cu does for padded batches.
 *
 * The token kernel (the default from RIG__TOKEN_KERNEL_MIN tokens where every view takes
 * 16-byte vectors and D/16 lanes a head is a power of two from 4 to 32: D 64, 128, 256, 512)
 * gives each head LANES = D/16 lanes of one warp instead of a whole warp, each lane holding 8
 * values of both halves in one 16-byte load each, so a warp holds 32/LANES heads and a block
 * every head of its token (blockIdx.y splits them only past 1024 threads). A thread issues its loads before the block's cos/sin table is
 * computed, so they are in flight during the sincosf; the sum of squares is reduced over the
 * head's LANES lanes by shuffles (every thread of the warp takes part, v heads and padding with
 * zeros). Measured at 120 us for an 8192-token chunk of Qwen3-0.6B with the warp-per-head
 * kernel and 67 us with the token kernel (H100, issue 18, docs/performance.md); Llama-3.2-1B's
 * heads (D 64) 112 and 44-45 us. Below RIG__TOKEN_KERNEL_MIN tokens the warp-per-head kernel
 * stays. RIG_QKRS_TOKEN=0 (read once) keeps it for every size, for measuring. Its rounding is
 * the same; only the sum of squares is added in another order.
 *
 * Before the programmatic-dependent-launch wait (both kernels): the token's position and slot
 * (read through L2, __ldcg), its cos/sin table and the lane's norm weights. None of them is
 * written by a kernel of the forward: positions and out_loc are the step's metadata, uploaded
 * or copied before the forward's first kernel (core/engine/ranks/launch.c), which every kernel
 * of the forward starts after (each waits for the whole of its predecessor before its
 * dependents may start: common.cuh), and the weights are never written. So at batch 1, where
 * the kernel before (the small-batch GEMM) lets this one start early, only the head's own
 * loads, the sum of squares and the stores are left after the wait, instead of the position's
 * load, the sincosf and a second load of the head and its weights. A head whose pairs fit one
 * vector a lane (D <= 64 x VEC: every preset) is also loaded once, not twice. The bits are the
 * same. RIG_QKRS_EARLY=0 (read once) keeps the earlier order, for measuring.
 */
#include "cuda/ops/qk_norm_rope_store.cuh"
#include "cuda/ops/qk_rope.cuh"
extern "C" {
#include "hal/rope.h" /* rig_rope_inv_freq: C */

RIG_CUDA_MODULE(qk_norm_rope_store)
}

#define RIG__WARPS    8 /* heads per block: the cos/sin table is shared by them */
#define RIG__HALF_MAX 256
/* Fewer tokens take the warp-per-head kernel: at batch 1 it spreads a token over 4 blocks and
 * measured 2.66-2.75 us against the token kernel's 3.27-3.30 (H100, Qwen3-0.6B heads); at 256
 * tokens the token kernel is faster (4.14-4.16 against 5.42-5.61 us). */
#define RIG__TOKEN_KERNEL_MIN 32

struct rig__qkrs_table {
    float inv_freq[RIG__HALF_MAX]; /* (D/2) */
};

/* A [T, heads, D] view, or a [S, Hk, D] cache. */
struct rig__qkrs_view {
    uint16_t *data;
    int64_t stride_0, stride_1;
};

struct rig__qkrs_args {
    struct rig__qkrs_view q, k, v, k_cache, v_cache;
    const uint16_t *q_norm, *k_norm; /* (D) each, or both NULL */
    const int32_t *positions;        /* (T) */
    const int32_t *out_loc;          /* (T) */
    int64_t heads_q, heads_kv, slots, half;
    float eps;
};

static __device__ __forceinline__ uint16_t *rig__at(const struct rig__qkrs_view &view, int64_t i0,
                                                    int64_t i1)
{
    return view.data + i0 * view.stride_0 + i1 * view.stride_1;
}

/* Sum of squares of one head vector x of 2 * half values over the warp (every lane gets it). */
template <int VEC>
static __device__ __forceinline__ float rig__sum_squares(const uint16_t *x, int64_t half, int lane)
{
    float sum = 0.0f;
    for (int64_t i = (int64_t)lane * VEC; i < half; i += RIG_CUDA_WARP * VEC) {
        uint16_t lo[VEC], hi[VEC];
        rig_cuda_load_bf16<VEC>(x + i, lo);
        rig_cuda_load_bf16<VEC>(x + half + i, hi);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            float a = rig_cuda_bf16(lo[j]), b = rig_cuda_bf16(hi[j]);
            sum += a * a + b * b;
        }
    }
    return rig_cuda_warp_sum(sum);
}

/* The pairs (i + j, half + i + j), j < VEC, of a head: normed (when `norm`), rotated by the
 * cos/sin table, rounded, written back to x and, when cache is not NULL, to cache. */
template <int VEC>
static __device__ __forceinline__ void
rig__rotate_store(uint16_t *x, uint16_t *cache, int64_t i, int64_t half, uint16_t (&lo)[VEC],
                  uint16_t (&hi)[VEC], const uint16_t (&w_lo)[VEC], const uint16_t (&w_hi)[VEC],
                  bool norm, float inverse_rms, const float *cosines, const float *sines)
{
#pragma unroll
    for (int j = 0; j < VEC; j++) {
        float x1 = rig_cuda_qk_normed(lo[j], w_lo[j], norm, inverse_rms);
        float x2 = rig_cuda_qk_normed(hi[j], w_hi[j], norm, inverse_rms);
        lo[j] = rig_cuda_rope_low(x1, x2, cosines[i + j], sines[i + j]);
        hi[j] = rig_cuda_rope_high(x1, x2, cosines[i + j], sines[i + j]);
    }
    rig_cuda_store_bf16<VEC>(x + i, lo);
    rig_cuda_store_bf16<VEC>(x + half + i, hi);
    if (cache != NULL) {
        rig_cuda_store_bf16<VEC>(cache + i, lo);
        rig_cuda_store_bf16<VEC>(cache + half + i, hi);
    }
}

/* Norm (when w is given), rotate, write back to x and, when cache is not NULL, to cache. */
template <int VEC>
static __device__ void rig__norm_rope_head(uint16_t *x, uint16_t *cache, const uint16_t *w,
                                           const float *cosines, const float *sines, int64_t half,
                                           float eps, int lane)
{
    bool norm = w != NULL;
    float inverse_rms = 1.0f;
    if (norm) {
        float total = rig__sum_squares<VEC>(x, half, lane);
        inverse_rms = 1.0f / sqrtf(total / (float)(2 * half) + eps);
    }
    for (int64_t i = (int64_t)lane * VEC; i < half; i += RIG_CUDA_WARP * VEC) {
        uint16_t lo[VEC], hi[VEC], w_lo[VEC] = {0}, w_hi[VEC] = {0};
        rig_cuda_load_bf16<VEC>(x + i, lo);
        rig_cuda_load_bf16<VEC>(x + half + i, hi);
        if (norm) {
            rig_cuda_load_bf16<VEC>(w + i, w_lo);
            rig_cuda_load_bf16<VEC>(w + half + i, w_hi);
        }
        rig__rotate_store<VEC>(x, cache, i, half, lo, hi, w_lo, w_hi, norm, inverse_rms, cosines,
                               sines);
    }
}

/* rig__norm_rope_head for a head whose pairs fit one vector a lane (half <= 32 x VEC), with
 * the lane's weights already loaded (zeros without a norm): the head is loaded once and the
 * sum of squares taken from registers, in the same order, so the bits are the same. */
template <int VEC>
static __device__ void rig__norm_rope_head_once(uint16_t *x, uint16_t *cache, bool norm,
                                                const uint16_t (&w_lo)[VEC],
                                                const uint16_t (&w_hi)[VEC], const float *cosines,
                                                const float *sines, int64_t half, float eps,
                                                int lane)
{
    int64_t i = (int64_t)lane * VEC;
    uint16_t lo[VEC] = {0}, hi[VEC] = {0};
    if (i < half) {
        rig_cuda_load_bf16<VEC>(x + i, lo);
        rig_cuda_load_bf16<VEC>(x + half + i, hi);
    }
    float inverse_rms = 1.0f;
    if (norm) {
        float sum = 0.0f;
        if (i < half) {
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                float p = rig_cuda_bf16(lo[j]), q = rig_cuda_bf16(hi[j]);
                sum += p * p + q * q;
            }
        }
        float total = rig_cuda_warp_sum(sum);
        inverse_rms = 1.0f / sqrtf(total / (float)(2 * half) + eps);
    }
    if (i >= half) return;
    rig__rotate_store<VEC>(x, cache, i, half, lo, hi, w_lo, w_hi, norm, inverse_rms, cosines,
                           sines);
}

/* EARLY: the position, the slot, the cos/sin table and (one vector a lane) the weights before
 * the PDL wait (see the header); else all of it after, the head loaded twice. */
template <int VEC, bool EARLY>
static __global__ void __launch_bounds__(RIG__WARPS * RIG_CUDA_WARP)
    rig__qk_norm_rope_store_kernel(const struct rig__qkrs_args a,
                                   const struct rig__qkrs_table table)
{
    if (!EARLY) rig_cuda_pdl_begin(); /* before any read of what earlier kernels wrote */
    __shared__ float cosines[RIG__HALF_MAX], sines[RIG__HALF_MAX];
    int64_t t = blockIdx.x;
    float position = (float)(EARLY ? __ldcg(a.positions + t) : a.positions[t]);
    int64_t slot = EARLY ? __ldcg(a.out_loc + t) : a.out_loc[t];
    for (int64_t i = threadIdx.x; i < a.half; i += blockDim.x)
        sincosf(position * table.inv_freq[i], &sines[i], &cosines[i]);
    int64_t head = (int64_t)blockIdx.y * RIG__WARPS + threadIdx.x / RIG_CUDA_WARP;
    int lane = threadIdx.x % RIG_CUDA_WARP;
    bool once = EARLY && a.half <= (int64_t)RIG_CUDA_WARP * VEC;
    const uint16_t *w = head < a.heads_q ? a.q_norm
                                         : (head < a.heads_q + a.heads_kv ? a.k_norm : NULL);
    uint16_t w_lo[VEC] = {0}, w_hi[VEC] = {0};
    if (once && w != NULL && (int64_t)lane * VEC < a.half) {
        rig_cuda_load_bf16<VEC>(w + (int64_t)lane * VEC, w_lo);
        rig_cuda_load_bf16<VEC>(w + a.half + (int64_t)lane * VEC, w_hi);
    }
    if (EARLY) rig_cuda_pdl_begin();
    __syncthreads();
    bool store = slot >= 0 && slot < a.slots;
    if (head < a.heads_q) {
        uint16_t *x = rig__at(a.q, t, head);
        if (once)
            rig__norm_rope_head_once<VEC>(x, NULL, w != NULL, w_lo, w_hi, cosines, sines,
                                          a.half, a.eps, lane);
        else
            rig__norm_rope_head<VEC>(x, NULL, a.q_norm, cosines, sines, a.half, a.eps, lane);
        return;
    }
    head -= a.heads_q;
    if (head < a.heads_kv) {
        uint16_t *x = rig__at(a.k, t, head);
        uint16_t *cache = store ? rig__at(a.k_cache, slot, head) : NULL;
        if (once)
            rig__norm_rope_head_once<VEC>(x, cache, w != NULL, w_lo, w_hi, cosines, sines,
                                          a.half, a.eps, lane);
        else
            rig__norm_rope_head<VEC>(x, cache, a.k_norm, cosines, sines, a.half, a.eps, lane);
        return;
    }
    head -= a.heads_kv;
    if (head >= a.heads_kv || !store) return; /* a whole warp leaves together */
    const uint16_t *v = rig__at(a.v, t, head);
    uint16_t *cache = rig__at(a.v_cache, slot, head);
    for (int64_t i = (int64_t)lane * VEC; i < 2 * a.half; i += RIG_CUDA_WARP * VEC) {
        uint16_t value[VEC];
        rig_cuda_load_bf16<VEC>(v + i, value);
        rig_cuda_store_bf16<VEC>(cache + i, value);
    }
}

/* One token's heads (q, then k, then v) a block (see the header): LANES lanes a head, 8 values
 * of each half a lane. Rounding as rig__norm_rope_head. */
template <int LANES, bool EARLY>
static __global__ void __launch_bounds__(1024)
    rig__qk_norm_rope_store_token_kernel(const struct rig__qkrs_args a,
                                         const struct rig__qkrs_table table, int heads_per_block)
{
    if (!EARLY) rig_cuda_pdl_begin(); /* before any read of what earlier kernels wrote */
    __shared__ float cosines[RIG__HALF_MAX], sines[RIG__HALF_MAX];
    int64_t t = blockIdx.x;
    int local = (int)threadIdx.x / LANES, lane = (int)threadIdx.x % LANES;
    int64_t head = (int64_t)blockIdx.y * heads_per_block + local;
    int64_t heads = a.heads_q + 2 * a.heads_kv, i = (int64_t)lane * 8;
    bool active = local < heads_per_block && head < heads;
    bool is_q = head < a.heads_q, is_k = !is_q && head < a.heads_q + a.heads_kv;
    int64_t kv_head = is_q ? 0 : (is_k ? head - a.heads_q : head - a.heads_q - a.heads_kv);
    bool norm = a.q_norm != NULL;
    uint16_t w_lo[8] = {0}, w_hi[8] = {0};
    float position = 0.0f;
    int64_t slot = -1;
    if (EARLY) { /* see the header: none of this is written by the forward's kernels */
        if (active && (is_q || is_k) && norm) {
            const uint16_t *w = is_q ? a.q_norm : a.k_norm;
            rig_cuda_load_bf16<8>(w + i, w_lo);
            rig_cuda_load_bf16<8>(w + a.half + i, w_hi);
        }
        position = (float)__ldcg(a.positions + t);
        slot = __ldcg(a.out_loc + t);
        for (int64_t j = threadIdx.x; j < a.half; j += blockDim.x)
            sincosf(position * table.inv_freq[j], &sines[j], &cosines[j]);
        rig_cuda_pdl_begin();
    }
    uint16_t *x = NULL;
    if (active)
        x = is_q ? rig__at(a.q, t, head) : (is_k ? rig__at(a.k, t, kv_head) : NULL);
    const uint16_t *v = active && !is_q && !is_k ? rig__at(a.v, t, kv_head) : NULL;
    uint16_t lo[8] = {0}, hi[8] = {0};
    if (x != NULL) {
        rig_cuda_load_bf16<8>(x + i, lo);
        rig_cuda_load_bf16<8>(x + a.half + i, hi);
    } else if (v != NULL) {
        rig_cuda_load_bf16<8>(v + i, lo);
        rig_cuda_load_bf16<8>(v + a.half + i, hi);
    }
    if (!EARLY) {
        if (x != NULL && norm) {
            const uint16_t *w = is_q ? a.q_norm : a.k_norm;
            rig_cuda_load_bf16<8>(w + i, w_lo);
            rig_cuda_load_bf16<8>(w + a.half + i, w_hi);
        }
        position = (float)a.positions[t];
        for (int64_t j = threadIdx.x; j < a.half; j += blockDim.x)
            sincosf(position * table.inv_freq[j], &sines[j], &cosines[j]);
        slot = a.out_loc[t];
    }
    bool store = slot >= 0 && slot < a.slots;
    float sum = 0.0f;
    if (x != NULL && norm) {
#pragma unroll
        for (int j = 0; j < 8; j++) {
            float p = rig_cuda_bf16(lo[j]), q = rig_cuda_bf16(hi[j]);
            sum += p * p + q * q;
        }
    }
    if (norm) { /* uniform: both weights are given or neither */
#pragma unroll
        for (int offset = LANES / 2; offset > 0; offset /= 2)
            sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    }
    __syncthreads(); /* the cos/sin table */
    if (!active) return;
    if (v != NULL) { /* a v head: a copy into the cache */
        if (store) {
            uint16_t *cache = rig__at(a.v_cache, slot, kv_head);
            rig_cuda_store_bf16<8>(cache + i, lo);
            rig_cuda_store_bf16<8>(cache + a.half + i, hi);
        }
        return;
    }
    float inverse_rms = norm ? 1.0f / sqrtf(sum / (float)(2 * a.half) + a.eps) : 1.0f;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        float x1 = rig_cuda_qk_normed(lo[j], w_lo[j], norm, inverse_rms);
        float x2 = rig_cuda_qk_normed(hi[j], w_hi[j], norm, inverse_rms);
        lo[j] = rig_cuda_rope_low(x1, x2, cosines[i + j], sines[i + j]);
        hi[j] = rig_cuda_rope_high(x1, x2, cosines[i + j], sines[i + j]);
    }
    rig_cuda_store_bf16<8>(x + i, lo);
    rig_cuda_store_bf16<8>(x + a.half + i, hi);
    if (is_k && store) {
        uint16_t *cache = rig__at(a.k_cache, slot, kv_head);
        rig_cuda_store_bf16<8>(cache + i, lo);
        rig_cuda_store_bf16<8>(cache + a.half + i, hi);
    }
}

/* RIG_QKRS_TOKEN=0 keeps the warp-per-head kernel (a measuring switch, read once). */
static bool rig__token_kernel_on(void)
{
    static const bool on = rig_cuda_env("RIG_QKRS_TOKEN", 1) != 0;
    return on;
}

/* RIG_QKRS_EARLY=0: nothing before the PDL wait (a measuring switch, read once; the header). */
static bool rig__early_on(void)
{
    static const bool on = rig_cuda_env("RIG_QKRS_EARLY", 1) != 0;
    return on;
}

template <int LANES>
static cudaError_t rig__launch_token(const struct rig_cuda_launch *launch,
                                     const struct rig__qkrs_args &a,
                                     const struct rig__qkrs_table &table, int64_t tokens,
                                     int64_t heads)
{
    int64_t per_block = heads < 1024 / LANES ? heads : 1024 / LANES;
    unsigned threads = (unsigned)(rig_cuda_div_up(per_block * LANES, RIG_CUDA_WARP) *
                                  RIG_CUDA_WARP);
    dim3 grid((unsigned)tokens, (unsigned)rig_cuda_div_up(heads, per_block));
    if (rig__early_on())
        return rig_cuda_launch_pdl(launch, rig__qk_norm_rope_store_token_kernel<LANES, true>,
                                   grid, dim3(threads), 0, a, table, (int)per_block);
    return rig_cuda_launch_pdl(launch, rig__qk_norm_rope_store_token_kernel<LANES, false>, grid,
                               dim3(threads), 0, a, table, (int)per_block);
}

template <int VEC>
static cudaError_t rig__launch_heads(const struct rig_cuda_launch *launch,
                                     const struct rig__qkrs_args &a,
                                     const struct rig__qkrs_table &table, dim3 grid,
                                     unsigned threads)
{
    if (rig__early_on())
        return rig_cuda_launch_pdl(launch, rig__qk_norm_rope_store_kernel<VEC, true>, grid,
                                   dim3(threads), 0, a, table);
    return rig_cuda_launch_pdl(launch, rig__qk_norm_rope_store_kernel<VEC, false>, grid,
                               dim3(threads), 0, a, table);
}

static struct rig__qkrs_view rig__view(const struct rig_tensor *t)
{
    return (struct rig__qkrs_view){(uint16_t *)t->data, t->stride[0], t->stride[1]};
}

/* Vectors need every row and head of the view 16-byte aligned and D/2 a multiple of 8 (a
 * lane's vectors start at i and i + D/2); this is checked for the widest, 16 bytes. */
static bool rig__vec8_view(const struct rig_tensor *t)
{
    return t->shape[2] % 16 == 0 && t->stride[0] % 8 == 0 && t->stride[1] % 8 == 0 &&
           rig_cuda_aligned(t->data, 16);
}

static bool rig__vec8(const struct rig_op_qk_norm_rope_store *p)
{
    bool weights = p->q_norm.data == NULL ||
                   (rig_cuda_aligned(p->q_norm.data, 16) && rig_cuda_aligned(p->k_norm.data, 16));
    return weights && rig__vec8_view(&p->q) && rig__vec8_view(&p->k) && rig__vec8_view(&p->v) &&
           rig__vec8_view(&p->k_cache) && rig__vec8_view(&p->v_cache);
}

enum rig_status rig_cuda_op_qk_norm_rope_store(const struct rig_cuda_launch *launch,
                                               const struct rig_op_qk_norm_rope_store *p)
{
    int64_t tokens = p->q.shape[0], head_dim = p->q.shape[2], half = head_dim / 2;
    if (half > RIG__HALF_MAX) {
        fprintf(stderr, "rig: cuda: qk_norm_rope_store: head dim %lld above %d\n",
                (long long)head_dim, 2 * RIG__HALF_MAX);
        return RIG_E_UNSUPPORTED;
    }
    int64_t heads = p->q.shape[1] + 2 * p->k.shape[1];
    if (tokens == 0 || half == 0 || heads == 0) return RIG_OK;
    struct rig__qkrs_table table;
    memset(&table, 0, sizeof table);
    for (int64_t i = 0; i < half; i++)
        table.inv_freq[i] = rig_rope_inv_freq(&p->params, (int32_t)i, (int32_t)head_dim);
    struct rig__qkrs_args a = {
        rig__view(&p->q), rig__view(&p->k), rig__view(&p->v), rig__view(&p->k_cache),
        rig__view(&p->v_cache), (const uint16_t *)p->q_norm.data,
        (const uint16_t *)p->k_norm.data, (const int32_t *)p->positions.data,
        (const int32_t *)p->out_loc.data, p->q.shape[1], p->k.shape[1], p->k_cache.shape[0],
        half, p->eps};
    if (tokens >= RIG__TOKEN_KERNEL_MIN && rig__vec8(p) && rig__token_kernel_on()) {
        cudaError_t launched = cudaErrorNotSupported;
        switch (half / 8) { /* lanes a head */
        case 4: launched = rig__launch_token<4>(launch, a, table, tokens, heads); break;
        case 8: launched = rig__launch_token<8>(launch, a, table, tokens, heads); break;
        case 16: launched = rig__launch_token<16>(launch, a, table, tokens, heads); break;
        case 32: launched = rig__launch_token<32>(launch, a, table, tokens, heads); break;
        default: break; /* the warp-per-head kernel below */
        }
        if (launched != cudaErrorNotSupported) {
            RIG_CUDA_TRY(launched);
            RIG_CUDA_LAUNCHED();
            return RIG_OK;
        }
    }
    dim3 grid((unsigned)tokens, (unsigned)rig_cuda_div_up(heads, RIG__WARPS));
    unsigned threads = RIG__WARPS * RIG_CUDA_WARP;
    int vec = 1;
    if (rig__vec8(p)) vec = half >= 8 * RIG_CUDA_WARP ? 8 : (half >= 4 * RIG_CUDA_WARP ? 4 : 2);
    if (vec == 8)
        RIG_CUDA_TRY(rig__launch_heads<8>(launch, a, table, grid, threads));
    else if (vec == 4)
        RIG_CUDA_TRY(rig__launch_heads<4>(launch, a, table, grid, threads));
    else if (vec == 2)
        RIG_CUDA_TRY(rig__launch_heads<2>(launch, a, table, grid, threads));
    else
        RIG_CUDA_TRY(rig__launch_heads<1>(launch, a, table, grid, threads));
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
