/* ops.c — dispatches a validated HAL op to its CUDA launcher (one per cuda/ops/<op>.cu). */
#include "cuda/cuda_internal.h"
#include "cuda/ops/add_rms_norm.cuh"
#include "cuda/ops/attention_decode.cuh"
#include "cuda/ops/attention_prefill.cuh"
#include "cuda/ops/copy.cuh"
#include "cuda/ops/embedding.cuh"
#include "cuda/ops/gather_rows.cuh"
#include "cuda/ops/gemm.cuh"
#include "cuda/ops/head_rms_norm.cuh"
#include "cuda/ops/index_gather.cuh"
#include "cuda/ops/index_scatter.cuh"
#include "cuda/ops/logprobs.cuh"
#include "cuda/ops/penalize.cuh"
#include "cuda/ops/qk_norm_rope_store.cuh"
#include "cuda/ops/rms_norm.cuh"
#include "cuda/ops/rope.cuh"
#include "cuda/ops/sample.cuh"
#include "cuda/ops/silu_mul.cuh"
#include "cuda/ops/store_kv.cuh"

enum rig_status rig_cuda_op_all_reduce(const struct rig_cuda_launch *launch,
                                       const struct rig_op_all_reduce *p);
enum rig_status rig_cuda_op_all_gather(const struct rig_cuda_launch *launch,
                                       const struct rig_op_all_gather *p);
enum rig_status rig_cuda_op_dispatch(const struct rig_cuda_launch *launch, const struct rig_op *op);

enum rig_status rig_cuda_op_dispatch(const struct rig_cuda_launch *launch, const struct rig_op *op)
{
    RIG_ASSERT(launch != NULL && op != NULL);
    switch (op->kind) {
#define RIG__OP_CASE(upper, lower)                                                                 \
    case RIG_OP_##upper: return rig_cuda_op_##lower(launch, &op->u.lower);
        RIG_OP_MAP(RIG__OP_CASE)
#undef RIG__OP_CASE
    case RIG_OP_COUNT: break;
    }
    return RIG_E_INVALID;
}
