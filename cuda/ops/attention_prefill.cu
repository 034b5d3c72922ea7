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

#define RIG__BM 64      /* packed query rows per block */
#define RIG__BN 64      /* keys per tile */
#define RIG__WARPS 4    /* 16 rows each */
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
            for (int j = 0; j < 8; j++) values[j] = src[j];
        }
        rig_cuda_store_bf16<8>(reinterpret_cast<uint16_t *>(t->q + i * (dim + 8) + d), values);
    }
    for (int64_t i = threadIdx.x; i < RIG__BM; i += blockDim.x) {
        t->m[i] = -INFINITY;
        t->l[i] = 0.0f;
    }
    for (int64_t i = threadIdx.x; i < RIG__BM * (dim + 4); i += blockDim.x) t->o[i] = 0.0f;
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
                for (int i = 1; i < 8; i++) values[i] = src[i];
            }
        }
        rig_cuda_store_bf16<8>(reinterpret_cast<uint16_t *>((is_v ? t->v : t->k) +
                                                             j * (dim + 8) + d),
                               values);
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
        if (key - key0 < n && key <= position) value = rig_bf16_round(expf(s[c] * a->scale - m_new));
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
    for (int64_t d = half * (dim / 2); d < (half + 1) * (dim / 2); d++) o[d] *= scale_o;
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
                                      const struct rig__tiles *t, int64_t kv_head,
                                      int64_t group, int64_t row0, int64_t q_begin,
                                      int64_t packed_rows)
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

static __global__ void __launch_bounds__(RIG__WARPS * RIG_CUDA_WARP)
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
                        shared <= launch->shared_optin_bytes &&
                        a.q_stride_t % 8 == 0 && a.q_stride_h % 8 == 0;
    if (!tensor_cores) return rig_cuda_attention_split_kv(launch, &a);
    bool vec = a.cache_stride_s % 8 == 0 && a.cache_stride_h % 8 == 0 &&
               rig_cuda_aligned(a.k_cache, 16) && rig_cuda_aligned(a.v_cache, 16);
    RIG_CUDA_TRY(cudaFuncSetAttribute(rig__prefill_kernel,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    int64_t tiles = rig_cuda_div_up(a.rows * group, RIG__BM) + a.requests;
    dim3 grid((unsigned)tiles, (unsigned)a.heads_kv);
    rig__prefill_kernel<<<grid, RIG__WARPS * RIG_CUDA_WARP, shared, launch->stream>>>(a, vec);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
