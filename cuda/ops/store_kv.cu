/* store_kv.cu — k_cache[out_loc[t]] = k[t], v_cache[out_loc[t]] = v[t] (see store_kv.cuh).
 * One block per token copies its Hk * D values of K and of V, 16 bytes at a time when rows
 * allow. A slot outside [0, S) is skipped, so a padded batch may point at no slot at all
 * (the simulator asserts instead). */
#include "cuda/ops/common.cuh"
#include "cuda/ops/store_kv.cuh"

RIG_CUDA_MODULE(store_kv)

struct rig__kv_side {
    uint16_t *cache; /* [S, Hk, D] */
    int64_t cache_stride_s, cache_stride_h;
    const uint16_t *src; /* [T, Hk, D] */
    int64_t src_stride_t, src_stride_h;
};

template <int VEC>
static __global__ void rig__store_kv_kernel(struct rig__kv_side k, struct rig__kv_side v,
                                            const int32_t *out_loc, int64_t slots, int64_t heads,
                                            int64_t dim)
{
    int64_t t = blockIdx.x;
    int64_t slot = out_loc[t];
    if (slot < 0 || slot >= slots) return;
    int64_t chunks = heads * (dim / VEC);
    for (int64_t c = threadIdx.x; c < 2 * chunks; c += blockDim.x) {
        const struct rig__kv_side *side = c < chunks ? &k : &v;
        int64_t chunk = c < chunks ? c : c - chunks;
        int64_t h = chunk / (dim / VEC), d = (chunk % (dim / VEC)) * VEC;
        uint16_t value[VEC];
        rig_cuda_load_bf16<VEC>(side->src + t * side->src_stride_t + h * side->src_stride_h + d,
                                value);
        rig_cuda_store_bf16<VEC>(
            side->cache + slot * side->cache_stride_s + h * side->cache_stride_h + d, value);
    }
}

static bool rig__vec8(const struct rig_tensor *t)
{
    return t->shape[2] % 8 == 0 && t->stride[0] % 8 == 0 && t->stride[1] % 8 == 0 &&
           rig_cuda_aligned(t->data, 16);
}

enum rig_status rig_cuda_op_store_kv(const struct rig_cuda_launch *launch,
                                     const struct rig_op_store_kv *p)
{
    int64_t tokens = p->k.shape[0], heads = p->k.shape[1], dim = p->k.shape[2];
    if (tokens == 0 || heads * dim == 0) return RIG_OK;
    struct rig__kv_side k = {
        (uint16_t *)p->k_cache.data, p->k_cache.stride[0], p->k_cache.stride[1],
        (const uint16_t *)p->k.data, p->k.stride[0],       p->k.stride[1]};
    struct rig__kv_side v = {
        (uint16_t *)p->v_cache.data, p->v_cache.stride[0], p->v_cache.stride[1],
        (const uint16_t *)p->v.data, p->v.stride[0],       p->v.stride[1]};
    bool vec =
        rig__vec8(&p->k_cache) && rig__vec8(&p->v_cache) && rig__vec8(&p->k) && rig__vec8(&p->v);
    const int32_t *out_loc = (const int32_t *)p->out_loc.data;
    if (vec) {
        rig__store_kv_kernel<8><<<(unsigned)tokens, 128, 0, launch->stream>>>(
            k, v, out_loc, p->k_cache.shape[0], heads, dim);
    } else {
        rig__store_kv_kernel<1><<<(unsigned)tokens, 128, 0, launch->stream>>>(
            k, v, out_loc, p->k_cache.shape[0], heads, dim);
    }
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
