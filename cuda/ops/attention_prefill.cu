/* attention_prefill.cu — causal paged attention of new tokens over a cached prefix plus
 * themselves, FlashAttention-2 style on tensor cores (see attention_prefill.cuh).
 *
 * GQA packing: for KV head kh the G = Hq/Hk query heads reading it are packed into the rows
 * of one matrix, row rho = token * G + g (as FlashInfer packs them), so each K/V tile is
 * loaded once for the whole group and even short chunks fill 64-row tiles. Grid: (row tiles,
 * KV heads); a block finds its request and tile by walking cu_q (tile counts depend on
 * device-side lengths, so the grid is the bound ceil(T*G/64) + R and spare blocks leave).
 *
 * Per block: 4 warps, 64 packed rows (16 per warp), key tiles of 64 gathered through the
 * page table into shared memory with 16-byte loads (rows past the keys are zero, so masked
 * probabilities never meet garbage). S = Q K^T and O += P V run on tensor cores through WMMA
 * (bf16 in, fp32 accumulate, 16x16x16); the online softmax runs in fp32 on S in shared
 * memory, two lanes per row, with the causal mask (key position <= query position). P is
 * rounded to bf16 for the second product, and the row sum adds the rounded values so that
 * numerator and denominator agree. O lives in shared memory in fp32 and is rescaled per row
 * before each P V. Loop bound per tile: the largest causal position of its rows, so tiles
 * above the diagonal are never loaded. Head dims that are not a multiple of 16 or above 256
 * take the split-KV kernel of attention_common.cuh instead (correct, slower).
 */
#include <cuda_bf16.h>
#include <mma.h>

#include "cuda/ops/attention_common.cuh"
#include "cuda/ops/attention_prefill.cuh"

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

/* Thread 0 walks cu_q to find which request and which of its row tiles block b is. */
static __device__ void rig__find_tile(const struct rig_cuda_attention_args *a, int64_t group,
                                      int64_t b, int32_t *place)
{
    place[0] = -1;
    for (int64_t r = 0; r < a->requests; r++) {
        int64_t q_begin = a->cu_q[r], q_len = a->cu_q[r + 1] - q_begin;
        int64_t tiles = rig_cuda_div_up(q_len * group, RIG__BM);
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
    if (threadIdx.x == 0) rig__find_tile(&a, group, blockIdx.x, t.place);
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
 * FlashAttention-2 proper: S and O stay in registers as m16n8k16 accumulators, P goes from
 * the S accumulators straight into A fragments (their layouts line up), Q/K/V fragments come
 * from shared memory by ldmatrix (.trans for V), and the K/V tiles of the next key block are
 * gathered by cp.async into a second stage while the current one is in use. Rows are padded
 * by 16 bytes so the eight rows an ldmatrix reads fall into distinct banks. Same packing,
 * grid and masking as the WMMA kernel above; this one is used whenever the head dim is one of
 * its instantiations and the tensors are 16-byte aligned. */

static __device__ __forceinline__ uint32_t rig__smem(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared, asynchronously; zero-filled when !valid. */
static __device__ __forceinline__ void rig__cp_async16(uint32_t dst, const void *src, bool valid)
{
    int bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(bytes));
}

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

static __device__ __forceinline__ uint32_t rig__pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

static __host__ __device__ constexpr size_t rig__fa_shared_bytes(int dim)
{
    return (size_t)(RIG__BM + 4 * RIG__BN) * (size_t)(dim + 8) * 2;
}

/* Gathers keys [key0, key0 + BN) of K and V into one stage; keys >= `keys` are zeros. */
template <int D>
static __device__ __forceinline__ void
rig__fa_load_kv(const struct rig_cuda_attention_args *a, uint16_t *k_stage, uint16_t *v_stage,
                const int32_t *slots, int64_t kv_head, int64_t key0, int64_t keys)
{
    constexpr int P = D + 8, CHUNKS = D / 8;
    for (int c = threadIdx.x; c < 2 * RIG__BN * CHUNKS; c += RIG__WARPS * RIG_CUDA_WARP) {
        bool is_v = c >= RIG__BN * CHUNKS;
        int local = is_v ? c - RIG__BN * CHUNKS : c;
        int j = local / CHUNKS, d = (local % CHUNKS) * 8;
        bool valid = key0 + j < keys;
        int64_t slot = valid ? slots[key0 + j] : 0;
        const uint16_t *src = (is_v ? a->v_cache : a->k_cache) + slot * a->cache_stride_s +
                              kv_head * a->cache_stride_h + d;
        rig__cp_async16(rig__smem((is_v ? v_stage : k_stage) + j * P + d), src, valid);
    }
}

template <int D>
static __device__ __forceinline__ void
rig__fa_load_q(const struct rig_cuda_attention_args *a, uint16_t *q_tile, int64_t kv_head,
               int64_t group, int64_t row0, int64_t q_begin, int64_t packed_rows)
{
    constexpr int P = D + 8, CHUNKS = D / 8;
    for (int c = threadIdx.x; c < RIG__BM * CHUNKS; c += RIG__WARPS * RIG_CUDA_WARP) {
        int i = c / CHUNKS, d = (c % CHUNKS) * 8;
        int64_t rho = row0 + i;
        bool valid = rho < packed_rows;
        int64_t token = valid ? q_begin + rho / group : 0;
        int64_t head = valid ? kv_head * group + rho % group : 0;
        const uint16_t *src = a->q + token * a->q_stride_t + head * a->q_stride_h + d;
        rig__cp_async16(rig__smem(q_tile + i * P + d), src, valid);
    }
}

/* Running softmax state of the thread's two rows (g and g + 8 of its warp's 16). */
struct rig__fa_rows {
    float m[2];          /* running max, in log2 units of scale * score */
    float l[2];          /* this thread's share of the running sum */
    int64_t position[2]; /* query position of the row; -1 for a padding row */
};

/* Masks, scales (into log2 units) and exponentiates one 16x64 score tile in place, updates
 * the running max and sums, and returns the factors the output rows must be rescaled by. */
static __device__ __forceinline__ void rig__fa_softmax(float (&s)[RIG__BN / 8][4],
                                                       struct rig__fa_rows *rows, int64_t key0,
                                                       int64_t keys, float scale_log2,
                                                       float (&alpha)[2])
{
    int tig = threadIdx.x % 4;
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < RIG__BN / 8; j++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int64_t key = key0 + j * 8 + tig * 2 + (e & 1);
            bool visible = key < keys && key <= rows->position[e / 2];
            s[j][e] = visible ? s[j][e] * scale_log2 : -INFINITY;
            tile_max[e / 2] = fmaxf(tile_max[e / 2], s[j][e]);
        }
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 1));
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 2));
        float m_new = fmaxf(rows->m[h], tile_max[h]);
        float base = m_new == -INFINITY ? 0.0f : m_new; /* a row with nothing visible yet */
        alpha[h] = exp2f(rows->m[h] - base);
        rows->m[h] = m_new;
        tile_max[h] = base;
    }
    float sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < RIG__BN / 8; j++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            s[j][e] = exp2f(s[j][e] - tile_max[e / 2]);
            sum[e / 2] += s[j][e];
        }
    }
    rows->l[0] = rows->l[0] * alpha[0] + sum[0];
    rows->l[1] = rows->l[1] * alpha[1] + sum[1];
}

template <int D>
static __global__ void __launch_bounds__(RIG__WARPS *RIG_CUDA_WARP)
    rig__fa_kernel(struct rig_cuda_attention_args a)
{
    constexpr int P = D + 8;
    extern __shared__ __align__(128) char rig__shared[];
    __shared__ int32_t place[4];
    uint16_t *q_tile = reinterpret_cast<uint16_t *>(rig__shared);
    uint16_t *k_tiles = q_tile + RIG__BM * P; /* [2][BN][P] */
    uint16_t *v_tiles = k_tiles + 2 * RIG__BN * P;
    int64_t group = a.heads_q / a.heads_kv, kv_head = blockIdx.y;
    int warp = threadIdx.x / RIG_CUDA_WARP, lane = threadIdx.x % RIG_CUDA_WARP;
    if (threadIdx.x == 0) rig__find_tile(&a, group, blockIdx.x, place);
    __syncthreads();
    if (place[0] < 0) return; /* a spare block: the grid is an upper bound */
    int64_t r = place[0], row0 = (int64_t)place[1] * RIG__BM, q_begin = place[2];
    int64_t q_len = place[3], packed_rows = q_len * group;
    int64_t table_row = a.table_idx[r], kv_len = a.kv_len[r];
    bool usable = table_row >= 0 && table_row < a.page_table_rows && kv_len <= a.page_table_cols;
    int64_t first_position = kv_len - q_len;
    int64_t last_row = (row0 + RIG__BM < packed_rows ? row0 + RIG__BM : packed_rows) - 1;
    int64_t keys = usable ? first_position + last_row / group + 1 : 0;
    const int32_t *slots = a.page_table + (usable ? table_row : 0) * a.page_table_stride;
    rig__fa_load_q<D>(&a, q_tile, kv_head, group, row0, q_begin, packed_rows);
    rig__cp_async_commit();
    int64_t tiles = rig_cuda_div_up(keys, RIG__BN);
    if (tiles > 0) rig__fa_load_kv<D>(&a, k_tiles, v_tiles, slots, kv_head, 0, keys);
    rig__cp_async_commit();

    struct rig__fa_rows rows;
    for (int h = 0; h < 2; h++) {
        int64_t rho = row0 + warp * 16 + lane / 4 + h * 8;
        rows.m[h] = -INFINITY;
        rows.l[h] = 0.0f;
        rows.position[h] = rho < packed_rows ? first_position + rho / group : -1;
    }
    float o[D / 8][4];
#pragma unroll
    for (int t = 0; t < D / 8; t++)
        o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
    const float scale_log2 = a.scale * 1.4426950408889634f;

    for (int64_t tile = 0; tile < tiles; tile++) {
        int stage = (int)(tile & 1);
        if (tile + 1 < tiles) {
            rig__fa_load_kv<D>(&a, k_tiles + (1 - stage) * RIG__BN * P,
                               v_tiles + (1 - stage) * RIG__BN * P, slots, kv_head,
                               (tile + 1) * RIG__BN, keys);
            rig__cp_async_commit();
            rig__cp_async_wait<1>();
        } else {
            rig__cp_async_wait<0>();
        }
        __syncthreads();
        const uint16_t *k_tile = k_tiles + stage * RIG__BN * P;
        const uint16_t *v_tile = v_tiles + stage * RIG__BN * P;
        float s[RIG__BN / 8][4];
#pragma unroll
        for (int j = 0; j < RIG__BN / 8; j++)
            s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t qa[4];
            rig__ldmatrix_x4(
                qa, rig__smem(q_tile + (warp * 16 + (lane & 15)) * P + kk * 16 + (lane >> 4) * 8));
#pragma unroll
            for (int jp = 0; jp < RIG__BN / 16; jp++) {
                uint32_t kb[4];
                rig__ldmatrix_x4(kb, rig__smem(k_tile +
                                               (jp * 16 + (lane & 7) + ((lane >> 4) << 3)) * P +
                                               kk * 16 + ((lane >> 3) & 1) * 8));
                rig__mma(s[2 * jp], qa, kb[0], kb[1]);
                rig__mma(s[2 * jp + 1], qa, kb[2], kb[3]);
            }
        }
        float alpha[2];
        rig__fa_softmax(s, &rows, tile * RIG__BN, keys, scale_log2, alpha);
#pragma unroll
        for (int t = 0; t < D / 8; t++) {
            o[t][0] *= alpha[0];
            o[t][1] *= alpha[0];
            o[t][2] *= alpha[1];
            o[t][3] *= alpha[1];
        }
#pragma unroll
        for (int kk = 0; kk < RIG__BN / 16; kk++) {
            uint32_t pa[4] = {rig__pack_bf16(s[2 * kk][0], s[2 * kk][1]),
                              rig__pack_bf16(s[2 * kk][2], s[2 * kk][3]),
                              rig__pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              rig__pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
            for (int dp = 0; dp < D / 16; dp++) {
                uint32_t vb[4];
                rig__ldmatrix_x4_trans(
                    vb, rig__smem(v_tile + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * P +
                                  dp * 16 + (lane >> 4) * 8));
                rig__mma(o[2 * dp], pa, vb[0], vb[1]);
                rig__mma(o[2 * dp + 1], pa, vb[2], vb[3]);
            }
        }
        __syncthreads(); /* this stage is refilled by the next iteration's loads */
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        rows.l[h] += __shfl_xor_sync(0xffffffffu, rows.l[h], 1);
        rows.l[h] += __shfl_xor_sync(0xffffffffu, rows.l[h], 2);
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        int64_t rho = row0 + warp * 16 + lane / 4 + h * 8;
        if (rho >= packed_rows) continue;
        float inverse = rows.l[h] > 0.0f ? 1.0f / rows.l[h] : 0.0f;
        uint16_t *out = a.out + (q_begin + rho / group) * a.out_stride_t +
                        (kv_head * group + rho % group) * a.out_stride_h + (lane % 4) * 2;
#pragma unroll
        for (int t = 0; t < D / 8; t++) {
            uint32_t pair = rig__pack_bf16(o[t][2 * h] * inverse, o[t][2 * h + 1] * inverse);
            *reinterpret_cast<uint32_t *>(out + t * 8) = pair;
        }
    }
}

template <int D>
static enum rig_status rig__fa_launch(const struct rig_cuda_launch *launch,
                                      const struct rig_cuda_attention_args *a, dim3 grid)
{
    size_t shared = rig__fa_shared_bytes(D);
    if (shared > launch->shared_optin_bytes) return RIG_E_UNSUPPORTED;
    RIG_CUDA_TRY(cudaFuncSetAttribute(rig__fa_kernel<D>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    rig__fa_kernel<D><<<grid, RIG__WARPS * RIG_CUDA_WARP, shared, launch->stream>>>(*a);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}

/* True when every global access of the mma path is 16-byte aligned. */
static bool rig__fa_aligned(const struct rig_cuda_attention_args *a)
{
    return a->q_stride_t % 8 == 0 && a->q_stride_h % 8 == 0 && rig_cuda_aligned(a->q, 16) &&
           a->out_stride_t % 2 == 0 && a->out_stride_h % 2 == 0 && rig_cuda_aligned(a->out, 4) &&
           a->cache_stride_s % 8 == 0 && a->cache_stride_h % 8 == 0 &&
           rig_cuda_aligned(a->k_cache, 16) && rig_cuda_aligned(a->v_cache, 16);
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
    int64_t tiles = rig_cuda_div_up(a.rows * group, RIG__BM) + a.requests;
    dim3 grid((unsigned)tiles, (unsigned)a.heads_kv);
    if (rig__fa_aligned(&a)) {
        enum rig_status status = RIG_E_UNSUPPORTED;
        if (dim == 64) status = rig__fa_launch<64>(launch, &a, grid);
        if (dim == 128) status = rig__fa_launch<128>(launch, &a, grid);
        if (dim == 256) status = rig__fa_launch<256>(launch, &a, grid);
        if (status != RIG_E_UNSUPPORTED) return status;
    }
    bool vec = a.cache_stride_s % 8 == 0 && a.cache_stride_h % 8 == 0 &&
               rig_cuda_aligned(a.k_cache, 16) && rig_cuda_aligned(a.v_cache, 16);
    RIG_CUDA_TRY(cudaFuncSetAttribute(rig__prefill_kernel,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    rig__prefill_kernel<<<grid, RIG__WARPS * RIG_CUDA_WARP, shared, launch->stream>>>(a, vec);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
