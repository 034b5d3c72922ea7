/* attention_common.cuh — what the two attention ops share (CUDA C++ only): the paged-KV view,
 * where a query row sits (request, position), and the split-KV kernel that serves decode and, for
 * head dims the tensor-core prefill does not take, prefill too. A "query row" is one token with
 * all its heads. For decode, row r is request r and attends to kv_len[r] keys. For prefill (cu_q
 * given), row t belongs to the request r with cu_q[r] <= t < cu_q[r+1] and attends causally to
 * kv_len[r] - q_len + (t - cu_q[r]) + 1 keys. Key position j of request r lives at slot
 * page_table[table_idx[r], j]. A row with no keys (a padded request) writes zeros. Slots and table
 * rows are trusted (the simulator asserts them), except that a table row outside the table is
 * treated as an empty request.
 */
#ifndef RIG_CUDA_OPS_ATTENTION_COMMON_CUH
#define RIG_CUDA_OPS_ATTENTION_COMMON_CUH

#include <cuda_bf16.h>

#include "cuda/ops/common.cuh"

struct rig_cuda_attention_args {
    uint16_t *out; /* [Q, Hq, D] */
    int64_t out_stride_t, out_stride_h;
    const uint16_t *q; /* [Q, Hq, D] */
    int64_t q_stride_t, q_stride_h;
    const uint16_t *k_cache;                /* [S, Hk, D] */
    const uint16_t *v_cache;                /* [S, Hk, D] */
    int64_t cache_stride_s, cache_stride_h; /* k_cache's and v_cache's (checked equal) */
    const int32_t *page_table;              /* [rows, L] */
    int64_t page_table_stride, page_table_rows, page_table_cols;
    const int32_t *table_idx; /* [R] */
    const int32_t *kv_len;    /* [R] */
    const int32_t *cu_q;      /* [R + 1]; NULL for decode (one row per request) */
    int64_t requests;
    int64_t rows; /* Q */
    int64_t heads_q, heads_kv, head_dim;
    float scale;
    /* The tensor-core decode kernel's order of requests (attention_prefill_wgmma.cu,
     * rig__wg_next): 0 the last request first (prefill's rule: its last row tiles are the
     * longest), 1 in batch order (RIG_DECODE_TC_FORWARD=1, a measuring switch). */
    int32_t decode_in_order;
};

/* Device helpers of the tensor-core prefill kernels (attention_prefill.cu's mma.sync and
 * attention_prefill_wgmma.cu's wgmma). */

/* The shared-memory address of a generic pointer into shared memory. */
static __device__ __forceinline__ uint32_t rig_cuda_smem_address(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared, asynchronously; zero-filled when !valid. */
static __device__ __forceinline__ void rig_cuda_cp_async16(uint32_t dst, const void *src,
                                                           bool valid)
{
    int bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(bytes));
}

/* 2^x in one MUFU instruction (exp2f adds denormal handling the softmax does not need);
 * 2^-inf = +0, which is how masked scores vanish. */
static __device__ __forceinline__ float rig_cuda_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* Two floats rounded to bf16 (nearest even) and packed, `lo` in the low half. */
static __device__ __forceinline__ uint32_t rig_cuda_pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

/* Request, first key slot row and number of keys of query row `row`; keys = 0 for a row
 * that attends to nothing. */
struct rig_cuda_attention_place {
    const int32_t *slots; /* (keys) page-table row of the request */
    int64_t keys;
    int64_t position; /* of the query token: keys - 1 */
};

static __device__ __forceinline__ struct rig_cuda_attention_place
rig_cuda_attention_locate(const struct rig_cuda_attention_args *a, int64_t row)
{
    int64_t r = row, keys = 0;
    if (a->cu_q == NULL) {
        keys = a->kv_len[r];
    } else {
        int64_t lo = 0, hi = a->requests; /* largest r with cu_q[r] <= row */
        while (hi - lo > 1) {
            int64_t mid = (lo + hi) / 2;
            if (a->cu_q[mid] <= row)
                lo = mid;
            else
                hi = mid;
        }
        r = lo;
        int64_t q_len = a->cu_q[r + 1] - a->cu_q[r];
        keys = a->kv_len[r] - q_len + (row - a->cu_q[r]) + 1;
    }
    struct rig_cuda_attention_place place = {NULL, 0, -1};
    int64_t table_row = a->table_idx[r];
    if (table_row < 0 || table_row >= a->page_table_rows || keys <= 0) return place;
    if (keys > a->page_table_cols) keys = a->page_table_cols;
    place.slots = a->page_table + table_row * a->page_table_stride;
    place.keys = keys;
    place.position = keys - 1;
    return place;
}

#ifdef __cplusplus
extern "C" {
#endif

/* True when the two caches share strides (the kernels index both with one set); prints why
 * not otherwise. */
bool rig_cuda_attention_caches_alike(const struct rig_tensor *k_cache,
                                     const struct rig_tensor *v_cache);

/* Fills the argument block from an op's tensors (cu_q NULL for decode). */
struct rig_cuda_attention_args
rig_cuda_attention_args_make(const struct rig_tensor *out, const struct rig_tensor *q,
                             const struct rig_tensor *k_cache, const struct rig_tensor *v_cache,
                             const struct rig_tensor *page_table,
                             const struct rig_tensor *table_idx, const struct rig_tensor *kv_len,
                             const struct rig_tensor *cu_q, float scale);

/* Split-KV flash attention over every query row (attention_decode.cu). Splits the keys of
 * each row over enough blocks to fill the GPU when rows are few, bounded by the stream's
 * scratch; combines the partial results in a second kernel. RIG_E_UNSUPPORTED for a head
 * dim above 512 or odd; RIG_E_DEVICE when a launch fails. */
enum rig_status rig_cuda_attention_split_kv(const struct rig_cuda_launch *launch,
                                            const struct rig_cuda_attention_args *a);

/* True when the tensor-core kernels may take these tensors (attention_prefill.cu): every global
 * access 16-byte aligned, and packed rows and positions within 32-bit range (their index math). */
bool rig_cuda_attention_mma_usable(const struct rig_cuda_attention_args *a);

/* Causal paged attention on Hopper warpgroup MMA (attention_prefill_wgmma.cu): head dim 128 or
 * 64 on a compute capability 9.0 device, every tensor 16-byte aligned (the caller checks with
 * rig_cuda_attention_mma_usable). Prefill (cu_q given), or decode (cu_q NULL: one query token a
 * request, at position kv_len - 1; group at most 64, one consumer warpgroup a block and a
 * persistent grid). `two_consumers`: blocks of two consumer warpgroups whatever the size
 * (testing); otherwise one where two would leave SMs idle. RIG_E_UNSUPPORTED for anything
 * else (the caller then takes another kernel); RIG_E_DEVICE when a launch fails. */
enum rig_status rig_cuda_attention_prefill_wgmma(const struct rig_cuda_launch *launch,
                                                 const struct rig_cuda_attention_args *a,
                                                 bool two_consumers);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_ATTENTION_COMMON_CUH */
