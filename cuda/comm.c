/* comm.c — TP collectives over NCCL for the GPUs of one process (docs/gpu.md).
 *
 * One ncclComm_t per rank from ncclCommInitAll over the group's ordinals. Each rank's thread
 * issues its collective on its own stream; NCCL blocks the stream (not the host) until every
 * rank has joined. Reduction order is NCCL's (ring or tree), fixed for a given group and
 * size, so results repeat run to run, but it is not the simulator's rank order: TP results
 * match the simulator to rounding, not bit for bit.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cuda/cuda_internal.h"

static enum rig_status rig__select_rank(const struct rig_comm *comm)
{
    const struct rig_cuda_device *device = comm->device->context;
    RIG_CUDA_TRY(cudaSetDevice(device->ordinal));
    return RIG_OK;
}

enum rig_status rig_cuda_comm_create(struct rig_device **devices, int32_t count,
                                     struct rig_comm **comms)
{
    RIG_ASSERT(count >= 1 && count <= RIG_DEVICES_MAX);
    ncclComm_t handles[RIG_DEVICES_MAX] = {0};
    int ordinals[RIG_DEVICES_MAX] = {0};
    struct rig_cuda_comm *contexts[RIG_DEVICES_MAX] = {0};
    for (int32_t i = 0; i < count; i++) {
        ordinals[i] = ((const struct rig_cuda_device *)devices[i]->context)->ordinal;
        contexts[i] = calloc(1, sizeof *contexts[i]);
        if (contexts[i] == NULL) {
            for (int32_t j = 0; j < i; j++)
                free(contexts[j]);
            return RIG_E_NO_MEMORY;
        }
    }
    ncclResult_t result = ncclCommInitAll(handles, count, ordinals);
    if (result != ncclSuccess) {
        for (int32_t i = 0; i < count; i++)
            free(contexts[i]);
        RIG_NCCL_TRY(result);
    }
    for (int32_t i = 0; i < count; i++) {
        contexts[i]->comm = handles[i];
        comms[i]->context = contexts[i];
    }
    return RIG_OK;
}

void rig_cuda_comm_destroy(struct rig_comm *comm)
{
    struct rig_cuda_comm *context = comm->context;
    if (context == NULL) return;
    if (rig__select_rank(comm) == RIG_OK) {
        ncclResult_t result = ncclCommDestroy(context->comm);
        if (result != ncclSuccess)
            rig_cuda_report(RIG_E_DEVICE, __FILE__, __LINE__, "ncclCommDestroy",
                            ncclGetErrorString(result));
    }
    free(context);
    comm->context = NULL;
}

static ncclDataType_t rig__nccl_type(enum rig_dtype dtype)
{
    RIG_ASSERT(dtype == RIG_DTYPE_BF16 || dtype == RIG_DTYPE_F32); /* checked by op_check */
    return dtype == RIG_DTYPE_BF16 ? ncclBfloat16 : ncclFloat32;
}

enum rig_status rig_cuda_op_all_reduce(const struct rig_cuda_launch *launch,
                                       const struct rig_op_all_reduce *p)
{
    const struct rig_cuda_comm *context = p->comm->context;
    RIG_ASSERT(context != NULL);
    size_t count = (size_t)rig_tensor_numel(&p->data);
    if (count == 0) return RIG_OK;
    RIG_NCCL_TRY(ncclAllReduce(p->data.data, p->data.data, count, rig__nccl_type(p->data.dtype),
                               ncclSum, context->comm, launch->stream));
    return RIG_OK;
}

enum rig_status rig_cuda_op_all_gather(const struct rig_cuda_launch *launch,
                                       const struct rig_op_all_gather *p)
{
    const struct rig_cuda_comm *context = p->comm->context;
    RIG_ASSERT(context != NULL);
    size_t count = (size_t)rig_tensor_numel(&p->in);
    if (count == 0) return RIG_OK;
    RIG_NCCL_TRY(ncclAllGather(p->in.data, p->out.data, count, rig__nccl_type(p->in.dtype),
                               context->comm, launch->stream));
    return RIG_OK;
}
