/* attention_prefill.cu — causal paged attention of new tokens over a cached prefix plus
 * themselves, FlashAttention-2 on tensor cores (see attention_prefill.cuh).
 *
 * GQA packing: for KV head kh the G = Hq/Hk query heads reading it are packed into the rows
 * of one matrix, row rho = token * G + g (as FlashInfer packs them), so each K/V tile is
 * loaded once for the whole group and even short chunks fill a row tile. A block finds its
 * request and row tile by walking cu_q (tile counts depend on device-side lengths, so the
 * grid is the upper bound ceil(T*G/BM) + R per KV head and spare blocks leave at once).
 *
 * The main path (rig__fa_kernel<D, WARPS, MT>: head dims 64, 128, 256, 16-byte aligned
 * tensors) is FA2 with mma.sync m16n8k16 (bf16 in, fp32 accumulate):
 *  - block shape: WARPS warps, each owning MT consecutive 16-row MMA tiles, BM = 16 WARPS MT
 *    packed rows; key tiles of BN = 64. D 128 defaults to 8 warps x 1 row tile (BM 128, Q in
 *    registers, 191 registers, 1 block of 256 threads per SM), D 64 to 4 warps x 2 row tiles
 *    (BM 128, FA2's shape: every K and V fragment read by ldmatrix feeds two MMAs). Measured on
 *    the H100 at D 128, one causal 8192-token chunk, 16/8 heads (docs/performance.md): 8 x 1
 *    1151-1171 us, 4 x 2 (255 registers, 2 blocks per SM) 1186-1284 us. A later variant with
 *    K and V in separate cp.async groups and slots kept in registers (224 registers) measured
 *    1402-1502 us and was not kept. D 256 keeps 4 x 1 (its O alone is 128 registers).
 *  - Q is staged once into shared memory; with one row tile per warp its fragments are then
 *    held in registers for the whole key loop, with two they are re-read by ldmatrix (each Q
 *    fragment feeds BN/8 MMAs, so that costs a quarter of the K reads).
 *  - K and V tiles are gathered through the page table by cp.async (16 bytes, one slot read
 *    for both caches) into two stages: the next tile's copy is in flight during this tile's
 *    math. Rows are padded by 16 bytes so the eight rows one ldmatrix reads hit distinct banks.
 *    Keys past the block's last are zero-filled, so masked (exactly 0) probabilities never meet
 *    NaN.
 *  - S and O stay in registers as accumulators; P goes from the S accumulators straight into
 *    A fragments (the layouts line up), V fragments come by ldmatrix.trans.
 *  - online softmax in fp32, log2 units (scale * log2 e folded into one multiply, ex2.approx),
 *    row max and sum over the 4 lanes of a row by 2 shuffles. Key tiles every row of the block
 *    sees whole (below the causal diagonal of the block's first row) run unmasked; only the
 *    diagonal tiles (2 or 3 per block) pay for the mask, in 32-bit index math.
 *  - grid: 1-D, KV head fastest, row tiles in reverse so the bottom (longest) causal tiles of
 *    every head start first and the short top ones fill the tail.
 *  - output: normalised rows are staged as bf16 in the warp's own Q rows and written with
 *    16-byte stores.
 * Compile-time knobs for measuring other shapes (RIG_PREFILL_* macros): see the mma.sync section.
 *
 * Hopper (sm_90a) has a second path for head dims 128 and 64 on warpgroup MMA, FA3's structure:
 * attention_prefill_wgmma.cu, chosen by RIG_PREFILL_WGMMA (see rig__wgmma_wanted).
 *
 * The fallback (rig__prefill_kernel: other head dims that are a multiple of 16 up to 256, or
 * unaligned views) is the same algorithm on WMMA 16x16x16 with S, P and O in shared memory,
 * BM 64; head dims that are not a multiple of 16 or above 256 take the split-KV kernel of
 * attention_common.cuh (correct, slower). P is rounded to bf16 for the second product in
 * every path.
 */
#include <cuda_bf16.h>
#include <mma.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/ops/attention_common.cuh"
#include "cuda/ops/attention_prefill.cuh"

RIG_CUDA_MODULE(attention_prefill)

using namespace nvcuda;

#define RIG__BM      64 /* packed query rows per block */
#define RIG__BN      64 /* keys per tile */
#define RIG__WARPS   4  /* 16 rows each */
#define RIG__DIM_MAX 256

struct rig__tiles {
    __nv_bfloat16 *q; /* [BM][D + 8] */
    __nv_bfloat16 *k; /* [BN][D + 8] */
    __nv_bfloat16 *v; /* [BN][D + 8] */
    float *s;         /* [BM][BN + 4] scores */
    __nv_bfloat16 *p; /* [BM][BN + 8] probabilities */
    float *o;         /* [BM][D + 4] output accumulator */
    float *m;         /* [BM] running max */
    float *l;         /* [BM] running sum */
    int32_t *slots;   /* [BN] */
    int32_t *place;   /* [4] request, tile, q_begin, q_len */
};

static __host__ __device__ size_t rig__shared_bytes(int64_t dim)
{
    return (size_t)3 * RIG__BM * (dim + 8) * 2 + (size_t)RIG__BM * (RIG__BN + 4) * 4 +
           (size_t)RIG__BM * (RIG__BN + 8) * 2 + (size_t)RIG__BM * (dim + 4) * 4 +
           (size_t)2 * RIG__BM * 4 + RIG__BN * 4 + 4 * 4;
}

static __device__ struct rig__tiles rig__carve(char *base, int64_t dim)
{
    struct rig__tiles t;
    t.q = reinterpret_cast<__nv_bfloat16 *>(base);
    t.k = t.q + RIG__BM * (dim + 8);
    t.v = t.k + RIG__BN * (dim + 8);
    t.s = reinterpret_cast<float *>(t.v + RIG__BN * (dim + 8));
    t.p = reinterpret_cast<__nv_bfloat16 *>(t.s + RIG__BM * (RIG__BN + 4));
    t.o = reinterpret_cast<float *>(t.p + RIG__BM * (RIG__BN + 8));
    t.m = t.o + RIG__BM * (dim + 4);
    t.l = t.m + RIG__BM;
    t.slots = reinterpret_cast<int32_t *>(t.l + RIG__BM);
    t.place = t.slots + RIG__BN;
    return t;
}

/* Thread 0 walks cu_q to find which request and which of its row tiles (of bm packed rows)
 * block b is: place = {request, tile, q_begin, q_len}, or place[0] = -1 past the last. */
static __device__ void rig__find_tile(const struct rig_cuda_attention_args *a, int64_t group,
                                      int64_t bm, int64_t b, int32_t *place)
{
    place[0] = -1;
    for (int64_t r = 0; r < a->requests; r++) {
        int64_t q_begin = a->cu_q[r], q_len = a->cu_q[r + 1] - q_begin;
        int64_t tiles = rig_cuda_div_up(q_len * group, bm);
        if (b < tiles) {
            place[0] = (int32_t)r;
            place[1] = (int32_t)b;
            place[2] = (int32_t)q_begin;
            place[3] = (int32_t)q_len;
            return;
        }
        b -= tiles;
    }
}

static __device__ void rig__load_q(const struct rig_cuda_attention_args *a,
                                   const struct rig__tiles *t, int64_t kv_head, int64_t group,
                                   int64_t row0, int64_t q_begin, int64_t packed_rows)
{
    int64_t dim = a->head_dim, chunks = dim / 8;
    for (int64_t c = threadIdx.x; c < RIG__BM * chunks; c += blockDim.x) {
        int64_t i = c / chunks, d = (c % chunks) * 8, rho = row0 + i;
        uint16_t values[8] = {0};
        if (rho < packed_rows) {
            int64_t token = q_begin + rho / group, head = kv_head * group + rho % group;
            const uint16_t *src = a->q + token * a->q_stride_t + head * a->q_stride_h + d;
#pragma unroll
            for (int j = 0; j < 8; j++)
                values[j] = src[j];
        }
        rig_cuda_store_bf16<8>(reinterpret_cast<uint16_t *>(t->q + i * (dim + 8) + d), values);
    }
    for (int64_t i = threadIdx.x; i < RIG__BM; i += blockDim.x) {
        t->m[i] = -INFINITY;
        t->l[i] = 0.0f;
    }
    for (int64_t i = threadIdx.x; i < RIG__BM * (dim + 4); i += blockDim.x)
        t->o[i] = 0.0f;
}

/* Stages K and V of keys [first, first + n) (n <= BN); rows past n are zeros. */
static __device__ void rig__stage_kv(const struct rig_cuda_attention_args *a,
                                     const struct rig__tiles *t, int64_t kv_head, int64_t n,
                                     bool vec)
{
    int64_t dim = a->head_dim, chunks = dim / 8;
    for (int64_t c = threadIdx.x; c < 2 * RIG__BN * chunks; c += blockDim.x) {
        bool is_v = c >= RIG__BN * chunks;
        int64_t local = is_v ? c - RIG__BN * chunks : c;
        int64_t j = local / chunks, d = (local % chunks) * 8;
        uint16_t values[8] = {0};
        if (j < n) {
            const uint16_t *src = (is_v ? a->v_cache : a->k_cache) +
                                  (int64_t)t->slots[j] * a->cache_stride_s +
                                  kv_head * a->cache_stride_h + d;
            if (vec) {
                rig_cuda_load_bf16<8>(src, values);
            } else {
                rig_cuda_load_bf16<1>(src, values);
#pragma unroll
                for (int i = 1; i < 8; i++)
                    values[i] = src[i];
            }
        }
        rig_cuda_store_bf16<8>(
            reinterpret_cast<uint16_t *>((is_v ? t->v : t->k) + j * (dim + 8) + d), values);
    }
}

/* S[warp rows] = Q[warp rows] . K^T over the whole head dim. */
static __device__ void rig__scores(const struct rig__tiles *t, int64_t dim, int warp)
{
    for (int nt = 0; nt < RIG__BN / 16; nt++) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int64_t kk = 0; kk < dim / 16; kk++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> qa;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> kb;
            wmma::load_matrix_sync(qa, t->q + warp * 16 * (dim + 8) + kk * 16, (unsigned)(dim + 8));
            wmma::load_matrix_sync(kb, t->k + nt * 16 * (dim + 8) + kk * 16, (unsigned)(dim + 8));
            wmma::mma_sync(acc, qa, kb, acc);
        }
        wmma::store_matrix_sync(t->s + warp * 16 * (RIG__BN + 4) + nt * 16, acc, RIG__BN + 4,
                                wmma::mem_row_major);
    }
}

/* Online softmax of the warp's 16 rows over the tile: two lanes per row, 32 keys each.
 * Writes P (bf16), updates m and l, rescales the row of O. */
static __device__ void rig__softmax(const struct rig_cuda_attention_args *a,
                                    const struct rig__tiles *t, int warp, int64_t row0,
                                    int64_t packed_rows, int64_t group, int64_t first_position,
                                    int64_t key0, int64_t n)
{
    int lane = threadIdx.x % RIG_CUDA_WARP;
    int64_t i = warp * 16 + lane / 2, half = lane % 2, rho = row0 + i, dim = a->head_dim;
    int64_t position = rho < packed_rows ? first_position + rho / group : -1;
    const float *s = t->s + i * (RIG__BN + 4) + half * 32;
    float tile_max = -INFINITY;
    for (int c = 0; c < 32; c++) {
        int64_t key = key0 + half * 32 + c;
        if (key - key0 < n && key <= position) tile_max = fmaxf(tile_max, s[c] * a->scale);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    float m_old = t->m[i], m_new = fmaxf(m_old, tile_max);
    float alpha = (m_old == -INFINITY) ? 0.0f : expf(m_old - m_new);
    float sum = 0.0f;
    __nv_bfloat16 *p = t->p + i * (RIG__BN + 8) + half * 32;
    for (int c = 0; c < 32; c++) {
        int64_t key = key0 + half * 32 + c;
        float value = 0.0f;
        if (key - key0 < n && key <= position)
            value = rig_bf16_round(expf(s[c] * a->scale - m_new));
        sum += value;
        p[c] = __float2bfloat16_rn(value);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    __syncwarp();
    if (half == 0 && m_new != -INFINITY) {
        t->l[i] = t->l[i] * alpha + sum;
        t->m[i] = m_new;
    }
    float scale_o = m_new == -INFINITY ? 1.0f : alpha;
    float *o = t->o + i * (dim + 4);
    for (int64_t d = half * (dim / 2); d < (half + 1) * (dim / 2); d++)
        o[d] *= scale_o;
    __syncwarp();
}

/* O[warp rows] += P[warp rows] . V. */
static __device__ void rig__accumulate(const struct rig__tiles *t, int64_t dim, int warp)
{
    for (int64_t dt = 0; dt < dim / 16; dt++) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        float *o = t->o + warp * 16 * (dim + 4) + dt * 16;
        wmma::load_matrix_sync(acc, o, (unsigned)(dim + 4), wmma::mem_row_major);
        for (int kk = 0; kk < RIG__BN / 16; kk++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> pa;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> vb;
            wmma::load_matrix_sync(pa, t->p + warp * 16 * (RIG__BN + 8) + kk * 16, RIG__BN + 8);
            wmma::load_matrix_sync(vb, t->v + kk * 16 * (dim + 8) + dt * 16, (unsigned)(dim + 8));
            wmma::mma_sync(acc, pa, vb, acc);
        }
        wmma::store_matrix_sync(o, acc, (unsigned)(dim + 4), wmma::mem_row_major);
    }
}

static __device__ void rig__write_out(const struct rig_cuda_attention_args *a,
                                      const struct rig__tiles *t, int64_t kv_head, int64_t group,
                                      int64_t row0, int64_t q_begin, int64_t packed_rows)
{
    int64_t dim = a->head_dim;
    for (int64_t c = threadIdx.x; c < RIG__BM * dim; c += blockDim.x) {
        int64_t i = c / dim, d = c % dim, rho = row0 + i;
        if (rho >= packed_rows) continue;
        int64_t token = q_begin + rho / group, head = kv_head * group + rho % group;
        float l = t->l[i];
        float value = l > 0.0f ? t->o[i * (dim + 4) + d] / l : 0.0f;
        a->out[token * a->out_stride_t + head * a->out_stride_h + d] = rig_cuda_to_bf16(value);
    }
}

static __global__ void __launch_bounds__(RIG__WARPS *RIG_CUDA_WARP)
    rig__prefill_kernel(struct rig_cuda_attention_args a, bool vec)
{
    extern __shared__ __align__(128) char rig__shared[];
    int64_t dim = a.head_dim, group = a.heads_q / a.heads_kv, kv_head = blockIdx.y;
    int warp = threadIdx.x / RIG_CUDA_WARP;
    struct rig__tiles t = rig__carve(rig__shared, dim);
    if (threadIdx.x == 0) rig__find_tile(&a, group, RIG__BM, blockIdx.x, t.place);
    __syncthreads();
    if (t.place[0] < 0) return; /* a spare block: the grid is an upper bound */
    int64_t r = t.place[0], row0 = (int64_t)t.place[1] * RIG__BM, q_begin = t.place[2];
    int64_t q_len = t.place[3], packed_rows = q_len * group;
    int64_t table_row = a.table_idx[r], kv_len = a.kv_len[r];
    bool usable = table_row >= 0 && table_row < a.page_table_rows && kv_len <= a.page_table_cols;
    int64_t first_position = kv_len - q_len;
    int64_t last_row = (row0 + RIG__BM < packed_rows ? row0 + RIG__BM : packed_rows) - 1;
    int64_t keys = usable ? first_position + last_row / group + 1 : 0;
    const int32_t *slots = a.page_table + (usable ? table_row : 0) * a.page_table_stride;
    rig__load_q(&a, &t, kv_head, group, row0, q_begin, packed_rows);
    for (int64_t key0 = 0; key0 < keys; key0 += RIG__BN) {
        int64_t n = keys - key0 < RIG__BN ? keys - key0 : RIG__BN;
        __syncthreads(); /* the previous tile is consumed */
        for (int64_t j = threadIdx.x; j < RIG__BN; j += blockDim.x)
            t.slots[j] = j < n ? slots[key0 + j] : 0;
        __syncthreads();
        rig__stage_kv(&a, &t, kv_head, n, vec);
        __syncthreads();
        rig__scores(&t, dim, warp);
        __syncwarp();
        rig__softmax(&a, &t, warp, row0, packed_rows, group, first_position, key0, n);
        rig__accumulate(&t, dim, warp);
    }
    __syncthreads();
    rig__write_out(&a, &t, kv_head, group, row0, q_begin, packed_rows);
}

/* --- the mma.sync path (head dims 64, 128, 256) ---------------------------------------------
 * See the file header. Compile-time knobs (-D on the nvcc line) for measuring alternatives:
 *   RIG_PREFILL_D128_WARPS, RIG_PREFILL_D128_ROW_TILES  warps per block and 16-row MMA tiles
 *       per warp at head dim 128 (default 8 x 1, measured fastest; 4 x 2 is FA2's 128-row
 *       shape, 4 x 1 the old 64-row one);
 *   RIG_PREFILL_D64_WARPS, RIG_PREFILL_D64_ROW_TILES    the same at head dim 64 (default 4 x 2);
 *   RIG_PREFILL_Q_IN_REGISTERS  1 keeps the Q fragments in registers for the whole key loop
 *       when a warp has one row tile (default 1; with two row tiles they would not fit).
 * Head dim 256 keeps 4 warps x 1 (64 rows): its O accumulators alone take 128 registers. */

#ifndef RIG_PREFILL_D128_WARPS
#define RIG_PREFILL_D128_WARPS 8
#endif
#ifndef RIG_PREFILL_D128_ROW_TILES
#define RIG_PREFILL_D128_ROW_TILES 1
#endif
#ifndef RIG_PREFILL_D64_WARPS
#define RIG_PREFILL_D64_WARPS 4
#endif
#ifndef RIG_PREFILL_D64_ROW_TILES
#define RIG_PREFILL_D64_ROW_TILES 2
#endif
#ifndef RIG_PREFILL_Q_IN_REGISTERS
#define RIG_PREFILL_Q_IN_REGISTERS 1
#endif

/* Head dims 128 and 64 on Hopper go through attention_prefill_wgmma.cu when RIG_PREFILL_WGMMA is
 * unset: it passed test_attention_prefill on the H100 and measured 2.0-2.3 x faster than the
 * mma.sync kernel (docs/performance.md, "Issue 18: prefill attention on wgmma"). */
#ifndef RIG_PREFILL_WGMMA_DEFAULT
#define RIG_PREFILL_WGMMA_DEFAULT 1
#endif

#define RIG__FA_BN 64 /* keys per tile */

static __device__ __forceinline__ void rig__cp_async_commit(void)
{
    asm volatile("cp.async.commit_group;\n" ::);
}

template <int N> static __device__ __forceinline__ void rig__cp_async_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

static __device__ __forceinline__ void rig__ldmatrix_x4(uint32_t (&r)[4], uint32_t address)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}

static __device__ __forceinline__ void rig__ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t address)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}

/* c += a . b over one 16x8x16 bf16 tile, fp32 accumulate. */
static __device__ __forceinline__ void rig__mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                                uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* The block shape of one instantiation. WARPS warps each own MT consecutive 16-row MMA
 * tiles of the block's BM packed query rows; QR: Q fragments live in registers. */
template <int D, int WARPS, int MT> struct rig__fa_shape {
    static constexpr int BM = WARPS * 16 * MT; /* packed query rows per block */
    static constexpr int BN = RIG__FA_BN;
    static constexpr int P = D + 8; /* shared row pitch in elements: 16 bytes of padding put
                                       the 8 rows one ldmatrix reads in distinct banks */
    static constexpr int THREADS = WARPS * RIG_CUDA_WARP;
    static constexpr bool QR = RIG_PREFILL_Q_IN_REGISTERS && MT == 1 && D <= 128;
    static constexpr size_t SHARED = (size_t)(BM + 4 * BN) * P * 2; /* Q, 2 x K, 2 x V */
};

/* What a block works on, found from cu_q by its first thread. */
struct rig__fa_place {
    const int32_t *slots; /* [keys] the request's page-table row */
    int64_t q_begin;      /* first token of the request in q and out */
    int row0;             /* first packed row of the block */
    int packed_rows;      /* q_len * group of the request */
    int first_position;   /* kv_len - q_len: position of the request's first new token */
    int keys;             /* keys the block's last row sees (0: nothing to attend) */
    int open_tiles;       /* leading key tiles every row of the block sees whole */
};

/* Per-thread register state: row r of the thread in row tile mt is warp row mt * 16 +
 * lane / 4 + 8 * h (the m16n8 accumulator layout), for h = 0, 1. */
template <int D, int MT, bool QR> struct rig__fa_state {
    float o[MT][D / 8][4]; /* O accumulators, m16n8 C fragments over the head dim */
    float m[MT][2];        /* running max of scale * score, log2 units */
    float l[MT][2];        /* this thread's share of the running sum */
    int position[MT][2];   /* query position of the row; -1 for a padding row */
    uint32_t q[QR ? MT : 1][QR ? D / 16 : 1][4]; /* Q A fragments when QR */
};

/* Thread 0 of the block places it; place->keys < 0 marks a spare block (the grid is an
 * upper bound computed on the host, device lengths decide how many tiles exist). */
template <int BM>
static __device__ void rig__fa_find(const struct rig_cuda_attention_args *a, int group, int64_t b,
                                    struct rig__fa_place *place)
{
    int32_t where[4];
    rig__find_tile(a, group, BM, b, where);
    place->keys = -1;
    if (where[0] < 0) return;
    int64_t r = where[0], table_row = a->table_idx[r];
    int kv_len = a->kv_len[r], q_len = where[3];
    bool usable = table_row >= 0 && table_row < a->page_table_rows && kv_len <= a->page_table_cols;
    place->slots = a->page_table + (usable ? table_row : 0) * a->page_table_stride;
    place->q_begin = where[2];
    place->row0 = where[1] * BM;
    place->packed_rows = q_len * group;
    place->first_position = kv_len - q_len;
    int last_row = min(place->row0 + BM, place->packed_rows) - 1;
    int keys = usable ? place->first_position + last_row / group + 1 : 0;
    int open = (place->first_position + place->row0 / group + 1) / RIG__FA_BN;
    place->keys = max(keys, 0);
    place->open_tiles =
        usable ? min(max(open, 0), (int)rig_cuda_div_up(place->keys, RIG__FA_BN)) : 0;
}

/* Gathers keys [key0, key0 + BN) of K and V into one stage; keys >= `keys` are zeros (so a
 * masked probability, exactly 0, never meets a NaN). One slot read serves both caches. */
template <int D, int WARPS, int MT>
static __device__ __forceinline__ void
rig__fa_load_kv(const struct rig_cuda_attention_args *a, uint16_t *k_stage, uint16_t *v_stage,
                const struct rig__fa_place *place, int kv_head, int key0)
{
    using S = rig__fa_shape<D, WARPS, MT>;
    constexpr int CHUNKS = D / 8;
    const uint16_t *k_head = a->k_cache + kv_head * a->cache_stride_h;
    const uint16_t *v_head = a->v_cache + kv_head * a->cache_stride_h;
    static_assert(S::BN * CHUNKS % S::THREADS == 0, "whole K/V rounds per thread");
#pragma unroll 2
    for (int round = 0; round < S::BN * CHUNKS / S::THREADS; round++) {
        int c = round * S::THREADS + (int)threadIdx.x;
        int j = c / CHUNKS, d = (c % CHUNKS) * 8;
        bool valid = key0 + j < place->keys;
        int64_t offset = (valid ? (int64_t)place->slots[key0 + j] : 0) * a->cache_stride_s + d;
        rig_cuda_cp_async16(rig_cuda_smem_address(k_stage + j * S::P + d), k_head + offset, valid);
        rig_cuda_cp_async16(rig_cuda_smem_address(v_stage + j * S::P + d), v_head + offset, valid);
    }
}

template <int D, int WARPS, int MT>
static __device__ __forceinline__ void
rig__fa_load_q(const struct rig_cuda_attention_args *a, uint16_t *q_tile,
               const struct rig__fa_place *place, int kv_head, int group)
{
    using S = rig__fa_shape<D, WARPS, MT>;
    constexpr int CHUNKS = D / 8;
    static_assert(S::BM * CHUNKS % S::THREADS == 0, "whole Q rounds per thread");
#pragma unroll
    for (int round = 0; round < S::BM * CHUNKS / S::THREADS; round++) {
        int c = round * S::THREADS + (int)threadIdx.x;
        int i = c / CHUNKS, d = (c % CHUNKS) * 8, rho = place->row0 + i;
        bool valid = rho < place->packed_rows;
        int64_t token = valid ? place->q_begin + rho / group : 0;
        int64_t head = valid ? kv_head * group + rho % group : 0;
        const uint16_t *src = a->q + token * a->q_stride_t + head * a->q_stride_h + d;
        rig_cuda_cp_async16(rig_cuda_smem_address(q_tile + i * S::P + d), src, valid);
    }
}

/* S = Q K^T for the warp's MT row tiles against the staged key tile. Each K fragment
 * (ldmatrix) feeds MT row tiles. */
template <int D, int WARPS, int MT>
static __device__ __forceinline__ void
rig__fa_scores(float (&s)[MT][RIG__FA_BN / 8][4],
               const struct rig__fa_state<D, MT, rig__fa_shape<D, WARPS, MT>::QR> &st,
               const uint16_t *q_rows, const uint16_t *k_tile)
{
    using S = rig__fa_shape<D, WARPS, MT>;
    int lane = threadIdx.x % RIG_CUDA_WARP;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int j = 0; j < S::BN / 8; j++)
            s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.0f;
#pragma unroll(S::QR ? D / 16 : 2)
    for (int kk = 0; kk < D / 16; kk++) {
        uint32_t qa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            if constexpr (S::QR) {
                for (int i = 0; i < 4; i++)
                    qa[mt][i] = st.q[mt][kk][i];
            } else {
                rig__ldmatrix_x4(qa[mt], rig_cuda_smem_address(q_rows + (mt * 16 + (lane & 15)) * S::P +
                                                   kk * 16 + (lane >> 4) * 8));
            }
        }
#pragma unroll
        for (int jp = 0; jp < S::BN / 16; jp++) {
            uint32_t kb[4];
            rig__ldmatrix_x4(kb,
                             rig_cuda_smem_address(k_tile + (jp * 16 + (lane & 7) + ((lane >> 4) << 3)) * S::P +
                                       kk * 16 + ((lane >> 3) & 1) * 8));
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                rig__mma(s[mt][2 * jp], qa[mt], kb[0], kb[1]);
                rig__mma(s[mt][2 * jp + 1], qa[mt], kb[2], kb[3]);
            }
        }
    }
}

/* Scales (into log2 units), masks when MASK (key position > query position; that also
 * covers keys past the request's last, zero-filled in shared memory), and exponentiates one
 * 16 x BN score tile in place; updates the running max and sums; returns in alpha the
 * factors the two rows' O accumulators must be rescaled by. Tiles every row sees whole take
 * MASK = false and skip the index math. */
template <bool MASK>
static __device__ __forceinline__ void
rig__fa_softmax(float (&s)[RIG__FA_BN / 8][4], float (&m)[2], float (&l)[2],
                const int (&position)[2], int key0, float scale_log2, float (&alpha)[2])
{
    int key_lane = key0 + (threadIdx.x % 4) * 2;
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < RIG__FA_BN / 8; j++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            float x = s[j][e] * scale_log2;
            if (MASK && key_lane + j * 8 + (e & 1) > position[e / 2]) x = -INFINITY;
            s[j][e] = x;
            tile_max[e / 2] = fmaxf(tile_max[e / 2], x);
        }
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 1));
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 2));
        float m_new = fmaxf(m[h], tile_max[h]);
        float base = m_new == -INFINITY ? 0.0f : m_new; /* a row with nothing visible yet */
        alpha[h] = rig_cuda_exp2(m[h] - base);
        m[h] = m_new;
        tile_max[h] = base;
    }
    float sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < RIG__FA_BN / 8; j++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            s[j][e] = rig_cuda_exp2(s[j][e] - tile_max[e / 2]);
            sum[e / 2] += s[j][e];
        }
    }
    l[0] = l[0] * alpha[0] + sum[0];
    l[1] = l[1] * alpha[1] + sum[1];
}

/* O = alpha O + P V for the warp's row tiles: P comes straight from the score accumulators
 * (the m16n8 C layout of two adjacent n-tiles is the m16k16 A layout), V by ldmatrix.trans;
 * each V fragment feeds MT row tiles. */
template <int D, int WARPS, int MT>
static __device__ __forceinline__ void
rig__fa_accumulate(struct rig__fa_state<D, MT, rig__fa_shape<D, WARPS, MT>::QR> &st,
                   const float (&s)[MT][RIG__FA_BN / 8][4], const float (&alpha)[MT][2],
                   const uint16_t *v_tile)
{
    using S = rig__fa_shape<D, WARPS, MT>;
    int lane = threadIdx.x % RIG_CUDA_WARP;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int t = 0; t < D / 8; t++) {
            st.o[mt][t][0] *= alpha[mt][0];
            st.o[mt][t][1] *= alpha[mt][0];
            st.o[mt][t][2] *= alpha[mt][1];
            st.o[mt][t][3] *= alpha[mt][1];
        }
    }
#pragma unroll
    for (int kk = 0; kk < S::BN / 16; kk++) {
        uint32_t pa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            pa[mt][0] = rig_cuda_pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
            pa[mt][1] = rig_cuda_pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
            pa[mt][2] = rig_cuda_pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
            pa[mt][3] = rig_cuda_pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
        }
#pragma unroll
        for (int dp = 0; dp < D / 16; dp++) {
            uint32_t vb[4];
            rig__ldmatrix_x4_trans(
                vb, rig_cuda_smem_address(v_tile + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * S::P +
                              dp * 16 + (lane >> 4) * 8));
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                rig__mma(st.o[mt][2 * dp], pa[mt], vb[0], vb[1]);
                rig__mma(st.o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
            }
        }
    }
}

/* One key tile, staged: scores, softmax (masked or not), O update. */
template <int D, int WARPS, int MT, bool MASK>
static __device__ __forceinline__ void
rig__fa_tile(struct rig__fa_state<D, MT, rig__fa_shape<D, WARPS, MT>::QR> &st,
             const uint16_t *q_rows, const uint16_t *k_tile, const uint16_t *v_tile, int key0,
             float scale_log2)
{
    float s[MT][RIG__FA_BN / 8][4];
    rig__fa_scores<D, WARPS, MT>(s, st, q_rows, k_tile);
    float alpha[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
        rig__fa_softmax<MASK>(s[mt], st.m[mt], st.l[mt], st.position[mt], key0, scale_log2,
                              alpha[mt]);
    rig__fa_accumulate<D, WARPS, MT>(st, s, alpha, v_tile);
}

/* Normalises the warp's rows, stages them as bf16 in the warp's own rows of the Q tile (no
 * other warp reads them) and writes them out with 16-byte stores. */
template <int D, int WARPS, int MT>
static __device__ __forceinline__ void
rig__fa_store(const struct rig_cuda_attention_args *a,
              struct rig__fa_state<D, MT, rig__fa_shape<D, WARPS, MT>::QR> &st, uint16_t *q_rows,
              const struct rig__fa_place *place, int kv_head, int group, int warp_row0)
{
    using S = rig__fa_shape<D, WARPS, MT>;
    constexpr int CHUNKS = D / 8;
    int lane = threadIdx.x % RIG_CUDA_WARP;
    __syncwarp(); /* every lane's last ldmatrix of its Q rows is done */
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float l = st.l[mt][h];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            float inverse = l > 0.0f ? 1.0f / l : 0.0f;
            uint16_t *row = q_rows + (mt * 16 + lane / 4 + h * 8) * S::P + (lane % 4) * 2;
#pragma unroll
            for (int t = 0; t < D / 8; t++) {
                *reinterpret_cast<uint32_t *>(row + t * 8) =
                    rig_cuda_pack_bf16(st.o[mt][t][2 * h] * inverse, st.o[mt][t][2 * h + 1] * inverse);
            }
        }
    }
    __syncwarp();
#pragma unroll
    for (int round = 0; round < MT * 16 * CHUNKS / RIG_CUDA_WARP; round++) {
        int c = round * RIG_CUDA_WARP + lane;
        int i = c / CHUNKS, d = (c % CHUNKS) * 8, rho = place->row0 + warp_row0 + i;
        if (rho >= place->packed_rows) continue;
        uint16_t *out = a->out + (place->q_begin + rho / group) * a->out_stride_t +
                        (int64_t)(kv_head * group + rho % group) * a->out_stride_h + d;
        *reinterpret_cast<uint4 *>(out) = *reinterpret_cast<const uint4 *>(q_rows + i * S::P + d);
    }
}

/* Register state at the start: empty rows, positions, and (QR) the Q fragments, read once
 * the Q tile has landed (the caller waits for it). */
template <int D, int WARPS, int MT>
static __device__ __forceinline__ void
rig__fa_state_init(struct rig__fa_state<D, MT, rig__fa_shape<D, WARPS, MT>::QR> &st,
                   const struct rig__fa_place *place, int group, int warp_row0)
{
    int lane = threadIdx.x % RIG_CUDA_WARP;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int rho = place->row0 + warp_row0 + mt * 16 + lane / 4 + h * 8;
            st.m[mt][h] = -INFINITY;
            st.l[mt][h] = 0.0f;
            st.position[mt][h] =
                rho < place->packed_rows ? place->first_position + rho / group : -1;
        }
#pragma unroll
        for (int t = 0; t < D / 8; t++)
            st.o[mt][t][0] = st.o[mt][t][1] = st.o[mt][t][2] = st.o[mt][t][3] = 0.0f;
    }
}

template <int D, int WARPS, int MT>
static __device__ __forceinline__ void
rig__fa_q_fragments(struct rig__fa_state<D, MT, rig__fa_shape<D, WARPS, MT>::QR> &st,
                    const uint16_t *q_rows)
{
    using S = rig__fa_shape<D, WARPS, MT>;
    if constexpr (S::QR) {
        int lane = threadIdx.x % RIG_CUDA_WARP;
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++)
                rig__ldmatrix_x4(st.q[mt][kk], rig_cuda_smem_address(q_rows + (mt * 16 + (lane & 15)) * S::P +
                                                         kk * 16 + (lane >> 4) * 8));
    }
}

/* Grid: one block per (row tile, KV head), KV head fastest, row tiles in reverse so the
 * bottom (longest) causal tiles of every head start first; the spare blocks of the upper
 * bound come first and leave at once. */
template <int D, int WARPS, int MT>
static __global__ void __launch_bounds__(rig__fa_shape<D, WARPS, MT>::THREADS)
    rig__fa_kernel(struct rig_cuda_attention_args a)
{
    using S = rig__fa_shape<D, WARPS, MT>;
    extern __shared__ __align__(128) char rig__shared[];
    __shared__ struct rig__fa_place place;
    uint16_t *q_tile = reinterpret_cast<uint16_t *>(rig__shared); /* [BM][P] */
    uint16_t *k_tiles = q_tile + S::BM * S::P;                    /* [2][BN][P] */
    uint16_t *v_tiles = k_tiles + 2 * S::BN * S::P;               /* [2][BN][P] */
    int heads_kv = (int)a.heads_kv, group = (int)(a.heads_q / a.heads_kv);
    int kv_head = (int)(blockIdx.x % (unsigned)heads_kv);
    int64_t b = (int64_t)(gridDim.x / heads_kv) - 1 - (int64_t)(blockIdx.x / heads_kv);
    if (threadIdx.x == 0) rig__fa_find<S::BM>(&a, group, b, &place);
    __syncthreads();
    if (place.keys < 0) return;
    int warp = threadIdx.x / RIG_CUDA_WARP, warp_row0 = warp * 16 * MT;
    uint16_t *q_rows = q_tile + warp_row0 * S::P;
    rig__fa_load_q<D, WARPS, MT>(&a, q_tile, &place, kv_head, group);
    int tiles = (int)rig_cuda_div_up(place.keys, S::BN);
    if (tiles > 0) rig__fa_load_kv<D, WARPS, MT>(&a, k_tiles, v_tiles, &place, kv_head, 0);
    rig__cp_async_commit();
    struct rig__fa_state<D, MT, S::QR> st;
    rig__fa_state_init<D, WARPS, MT>(st, &place, group, warp_row0);
    const float scale_log2 = a.scale * 1.4426950408889634f;
    for (int tile = 0; tile < tiles; tile++) {
        int stage = tile & 1;
        if (tile + 1 < tiles) {
            rig__fa_load_kv<D, WARPS, MT>(&a, k_tiles + (1 - stage) * S::BN * S::P,
                                          v_tiles + (1 - stage) * S::BN * S::P, &place, kv_head,
                                          (tile + 1) * S::BN);
            rig__cp_async_commit();
            rig__cp_async_wait<1>();
        } else {
            rig__cp_async_wait<0>();
        }
        __syncthreads();
        if (tile == 0) rig__fa_q_fragments<D, WARPS, MT>(st, q_rows);
        const uint16_t *k_tile = k_tiles + stage * S::BN * S::P;
        const uint16_t *v_tile = v_tiles + stage * S::BN * S::P;
        if (tile < place.open_tiles)
            rig__fa_tile<D, WARPS, MT, false>(st, q_rows, k_tile, v_tile, tile * S::BN, scale_log2);
        else
            rig__fa_tile<D, WARPS, MT, true>(st, q_rows, k_tile, v_tile, tile * S::BN, scale_log2);
        __syncthreads(); /* this stage is refilled by the next iteration's loads */
    }
    rig__cp_async_wait<0>(); /* with no key tiles the Q loads, by every thread into every
                                warp's rows, may still be in flight */
    __syncthreads();
    rig__fa_store<D, WARPS, MT>(&a, st, q_rows, &place, kv_head, group, warp_row0);
}

template <int D, int WARPS, int MT>
static enum rig_status rig__fa_launch(const struct rig_cuda_launch *launch,
                                      const struct rig_cuda_attention_args *a)
{
    using S = rig__fa_shape<D, WARPS, MT>;
    if (S::SHARED > launch->shared_optin_bytes) return RIG_E_UNSUPPORTED;
    int64_t group = a->heads_q / a->heads_kv;
    int64_t tiles = rig_cuda_div_up(a->rows * group, S::BM) + a->requests;
    if (tiles * a->heads_kv > INT32_MAX) return RIG_E_UNSUPPORTED;
    RIG_CUDA_TRY(cudaFuncSetAttribute(rig__fa_kernel<D, WARPS, MT>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)S::SHARED));
    dim3 grid((unsigned)(tiles * a->heads_kv));
    rig__fa_kernel<D, WARPS, MT><<<grid, S::THREADS, S::SHARED, launch->stream>>>(*a);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}

/* See attention_common.cuh. */
bool rig_cuda_attention_mma_usable(const struct rig_cuda_attention_args *a)
{
    int64_t group = a->heads_q / a->heads_kv;
    return a->q_stride_t % 8 == 0 && a->q_stride_h % 8 == 0 && rig_cuda_aligned(a->q, 16) &&
           a->out_stride_t % 8 == 0 && a->out_stride_h % 8 == 0 && rig_cuda_aligned(a->out, 16) &&
           a->cache_stride_s % 8 == 0 && a->cache_stride_h % 8 == 0 &&
           rig_cuda_aligned(a->k_cache, 16) && rig_cuda_aligned(a->v_cache, 16) &&
           a->rows * group < INT32_MAX / 2 && a->page_table_cols < INT32_MAX / 2;
}

/* RIG_PREFILL_WGMMA=1 sends head dims 128 and 64 to the wgmma kernel where it runs, =2 too
 * with two consumer warpgroups a block whatever the size (a testing switch), =0 keeps them on
 * the mma.sync kernels; unset: RIG_PREFILL_WGMMA_DEFAULT. Read at every call, so one process
 * (the tests) can run every path. Returns 0, 1 or 2. */
static int rig__wgmma_wanted(void)
{
    const char *value = getenv("RIG_PREFILL_WGMMA");
    if (value == NULL || value[0] == '\0') return RIG_PREFILL_WGMMA_DEFAULT;
    return strcmp(value, "0") == 0 ? 0 : strcmp(value, "2") == 0 ? 2 : 1;
}

enum rig_status rig_cuda_op_attention_prefill(const struct rig_cuda_launch *launch,
                                              const struct rig_op_attention_prefill *p)
{
    if (!rig_cuda_attention_caches_alike(&p->k_cache, &p->v_cache)) return RIG_E_UNSUPPORTED;
    struct rig_cuda_attention_args a =
        rig_cuda_attention_args_make(&p->out, &p->q, &p->k_cache, &p->v_cache, &p->page_table,
                                     &p->table_idx, &p->kv_len, &p->cu_q, p->scale);
    if (a.rows == 0 || a.heads_q == 0 || a.requests == 0) return RIG_OK;
    int64_t dim = a.head_dim, group = a.heads_q / a.heads_kv;
    size_t shared = rig__shared_bytes(dim);
    bool tensor_cores = dim % 16 == 0 && dim <= RIG__DIM_MAX &&
                        shared <= launch->shared_optin_bytes && a.q_stride_t % 8 == 0 &&
                        a.q_stride_h % 8 == 0;
    if (!tensor_cores) return rig_cuda_attention_split_kv(launch, &a);
    if (rig_cuda_attention_mma_usable(&a)) {
        enum rig_status status = RIG_E_UNSUPPORTED;
        int wgmma = dim == 128 || dim == 64 ? rig__wgmma_wanted() : 0;
        if (wgmma > 0) status = rig_cuda_attention_prefill_wgmma(launch, &a, wgmma == 2);
        if (status != RIG_E_UNSUPPORTED) return status;
        if (dim == 64)
            status =
                rig__fa_launch<64, RIG_PREFILL_D64_WARPS, RIG_PREFILL_D64_ROW_TILES>(launch, &a);
        if (dim == 128)
            status =
                rig__fa_launch<128, RIG_PREFILL_D128_WARPS, RIG_PREFILL_D128_ROW_TILES>(launch, &a);
        if (dim == 256) status = rig__fa_launch<256, 4, 1>(launch, &a);
        if (status != RIG_E_UNSUPPORTED) return status;
    }
    int64_t tiles = rig_cuda_div_up(a.rows * group, RIG__BM) + a.requests;
    dim3 grid((unsigned)tiles, (unsigned)a.heads_kv);
    bool vec = a.cache_stride_s % 8 == 0 && a.cache_stride_h % 8 == 0 &&
               rig_cuda_aligned(a.k_cache, 16) && rig_cuda_aligned(a.v_cache, 16);
    RIG_CUDA_TRY(cudaFuncSetAttribute(rig__prefill_kernel,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    rig__prefill_kernel<<<grid, RIG__WARPS * RIG_CUDA_WARP, shared, launch->stream>>>(a, vec);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
