/* embedding.cu — embedding gather with a vocabulary range (see embedding.cuh).
 * One block per token; a row is H bf16 values copied 16 bytes at a time when aligned. Ids
 * outside [vocab_start, vocab_start + V) give a zero row: another TP rank holds that row. */
#include "cuda/ops/common.cuh"
#include "cuda/ops/embedding.cuh"

RIG_CUDA_MODULE(embedding)

template <int VEC>
static __global__ void rig__embedding_kernel(uint16_t *out, int64_t out_stride,
                                             const uint16_t *table, int64_t table_stride,
                                             int64_t vocab, const int32_t *ids, int64_t vocab_start,
                                             int64_t hidden)
{
    rig_cuda_pdl_begin(); /* before any read of what earlier kernels wrote */
    int64_t t = blockIdx.x;
    int64_t row = (int64_t)ids[t] - vocab_start;
    bool held = row >= 0 && row < vocab;
    uint16_t *dst = out + t * out_stride;
    const uint16_t *src = table + (held ? row : 0) * table_stride;
    for (int64_t i = (int64_t)threadIdx.x * VEC; i < hidden; i += (int64_t)blockDim.x * VEC) {
        uint16_t v[VEC] = {0};
        if (held) rig_cuda_load_bf16<VEC>(src + i, v);
        rig_cuda_store_bf16<VEC>(dst + i, v);
    }
}

enum rig_status rig_cuda_op_embedding(const struct rig_cuda_launch *launch,
                                      const struct rig_op_embedding *p)
{
    int64_t tokens = p->out.shape[0], hidden = p->out.shape[1];
    if (tokens == 0 || hidden == 0) return RIG_OK;
    uint16_t *out = (uint16_t *)p->out.data;
    const uint16_t *table = (const uint16_t *)p->table.data;
    bool vec = rig_cuda_rows_vec8(out, p->out.stride[0], hidden) &&
               rig_cuda_rows_vec8(table, p->table.stride[0], hidden);
    unsigned threads = 128;
    if (vec) {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__embedding_kernel<8>, dim3((unsigned)tokens),
                                         dim3(threads), 0, out, p->out.stride[0], table,
                                         p->table.stride[0], p->table.shape[0],
                                         (const int32_t *)p->ids.data, p->vocab_start, hidden));
    } else {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__embedding_kernel<1>, dim3((unsigned)tokens),
                                         dim3(threads), 0, out, p->out.stride[0], table,
                                         p->table.stride[0], p->table.shape[0],
                                         (const int32_t *)p->ids.data, p->vocab_start, hidden));
    }
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
