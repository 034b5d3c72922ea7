/* rope.cu — neox (rotate-half) RoPE in place on q and k (see rope.cuh).
 *
 * The inverse frequencies are both backends' (hal/rope.h): computed on the host, in fp32, by
 * rig_rope_inv_freq (llama3 scaling included) and passed to the kernel by value (D/2 <=
 * 256 floats, 1 KB of kernel parameters), so no device buffer is needed and a captured graph
 * carries them. One thread per rotary pair of one head of one token, q heads then k heads.
 */
#include "cuda/ops/common.cuh"
#include "cuda/ops/rope.cuh"
extern "C" {
#include "hal/rope.h" /* rig_rope_inv_freq: C */

RIG_CUDA_MODULE(rope)
}

#define RIG__ROPE_HALF_MAX 256

struct rig__rope_table {
    float inv_freq[RIG__ROPE_HALF_MAX]; /* (D/2) */
};

struct rig__rope_tensor {
    uint16_t *data;
    int64_t stride_t, stride_h;
    int64_t heads;
};

static __global__ void rig__rope_kernel(struct rig__rope_tensor q, struct rig__rope_tensor k,
                                        const int32_t *positions, int64_t tokens, int64_t half,
                                        const struct rig__rope_table table)
{
    int64_t index = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t heads = q.heads + k.heads;
    if (index >= tokens * heads * half) return;
    int64_t i = index % half;
    int64_t head = (index / half) % heads;
    int64_t t = index / (half * heads);
    const struct rig__rope_tensor *x = head < q.heads ? &q : &k;
    int64_t h = head < q.heads ? head : head - q.heads;
    uint16_t *v = x->data + t * x->stride_t + h * x->stride_h;
    float angle = (float)positions[t] * table.inv_freq[i];
    float sine, cosine;
    sincosf(angle, &sine, &cosine);
    float x1 = rig_cuda_bf16(v[i]);
    float x2 = rig_cuda_bf16(v[i + half]);
    v[i] = rig_cuda_to_bf16(x1 * cosine - x2 * sine);
    v[i + half] = rig_cuda_to_bf16(x2 * cosine + x1 * sine);
}

enum rig_status rig_cuda_op_rope(const struct rig_cuda_launch *launch, const struct rig_op_rope *p)
{
    int64_t tokens = p->q.shape[0], head_dim = p->q.shape[2], half = head_dim / 2;
    if (half > RIG__ROPE_HALF_MAX) {
        fprintf(stderr, "rig: cuda: rope: head dim %lld above %d\n", (long long)head_dim,
                2 * RIG__ROPE_HALF_MAX);
        return RIG_E_UNSUPPORTED;
    }
    int64_t total = tokens * (p->q.shape[1] + p->k.shape[1]) * half;
    if (total == 0) return RIG_OK;
    struct rig__rope_table table;
    memset(&table, 0, sizeof table);
    for (int64_t i = 0; i < half; i++)
        table.inv_freq[i] = rig_rope_inv_freq(&p->params, (int32_t)i, (int32_t)head_dim);
    struct rig__rope_tensor q = {(uint16_t *)p->q.data, p->q.stride[0], p->q.stride[1],
                                 p->q.shape[1]};
    struct rig__rope_tensor k = {(uint16_t *)p->k.data, p->k.stride[0], p->k.stride[1],
                                 p->k.shape[1]};
    int64_t blocks = rig_cuda_div_up(total, 256);
    rig__rope_kernel<<<(unsigned)blocks, 256, 0, launch->stream>>>(
        q, k, (const int32_t *)p->positions.data, tokens, half, table);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
