/* cuda_internal.h — the CUDA backend's private contexts and its error-checking macros.
 *
 * Included by the backend's C files and by every cuda/ops/ *.cu file. An op launcher gets a
 * `struct rig_cuda_launch` (stream, cuBLAS handle, scratch) and the op's validated parameters
 * (hal/op_check.c has checked shapes and dtypes); it enqueues kernels and returns a status.
 * Launchers never allocate and never synchronise, so every one of them can be captured into
 * a CUDA graph.
 */
#ifndef RIG_CUDA_INTERNAL_H
#define RIG_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The HAL headers are C; inside this block the .cu files see them with C linkage. */
#include "hal/hal_impl.h"

/* Per-stream memory carved at stream creation. The cuBLAS workspace size follows NVIDIA's
 * advice for Hopper (32 MiB); the scratch holds split-KV partial results:
 * R * Hq * splits * (D + 2) floats, which bounds the split count at launch. */
#define RIG_CUDA_BLAS_WORKSPACE_BYTES ((size_t)32 << 20)
#define RIG_CUDA_SCRATCH_BYTES        ((size_t)64 << 20)
/* The last RIG_CUDA_COUNTER_BYTES of the scratch are arrival counters (uint32), zeroed once
 * when the stream is created and zero again whenever no kernel runs: a kernel that counts in
 * them (decode attention's split merge) resets what it used before it ends. Ops get the rest
 * as `scratch`, so nothing else writes there. */
#define RIG_CUDA_COUNTER_BYTES ((size_t)64 << 10)

struct rig_cuda_group; /* comm.c: the TP group's NCCL comms and its watchdog state */
struct rig_cuda_gemm_plans; /* ops/gemm_plan.cu: cuBLASLt algorithms per GEMM size class */

/* GEMM shape families the process's plan table holds (ops/gemm_plan.cuh); a model's forward
 * has a handful per device (qkv, o, gate_up, down, LM head, their biased variants). */
#define RIG_CUDA_GEMM_FAMILIES_MAX 64

struct rig_cuda_device {
    int32_t ordinal;           /* CUDA device index */
    int64_t collective_timeout_ms; /* the watchdog's bound (device config, or the default) */
    struct rig_cuda_group *group;  /* set while the device is in a TP group of > 1 */
    int32_t rank;                  /* in `group` */
    int32_t sm_count;          /* multiprocessors */
    int32_t compute_capability; /* major * 10 + minor (90: Hopper) */
    size_t shared_optin_bytes; /* largest dynamic shared memory a block may opt into */
    bool pdl;                  /* programmatic dependent launch (RIG_CUDA_PDL=0: off) */
};

struct rig_cuda_stream {
    cudaStream_t stream;
    cublasHandle_t blas;  /* bound to `stream` and to `blas_workspace` */
    void *blas_workspace; /* (RIG_CUDA_BLAS_WORKSPACE_BYTES) device bytes, also cuBLASLt's */
    void *scratch;        /* (RIG_CUDA_SCRATCH_BYTES) device bytes */
    struct rig_cuda_gemm_plans *plans; /* GEMM algorithms chosen for this stream's calls */
};

struct rig_cuda_event {
    cudaEvent_t event;
};

struct rig_cuda_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    int64_t collectives;  /* NCCL calls recorded in it (the watchdog's count) */
    int32_t last_kind;    /* enum rig_op_kind of the last */
};

struct rig_cuda_comm {
    ncclComm_t comm;
    struct rig_cuda_group *group; /* shared by the group's comms, freed with the last */
    int32_t rank;
};

/* What an op launcher needs from its stream and device. */
struct rig_cuda_launch {
    cudaStream_t stream;
    cublasHandle_t blas;
    struct rig_cuda_gemm_plans *plans; /* the stream's GEMM plan table */
    void *workspace;                   /* (workspace_bytes) the stream's cuBLAS workspace */
    size_t workspace_bytes;
    void *scratch; /* (scratch_bytes) device bytes, owned by the stream */
    size_t scratch_bytes;
    uint32_t *counters; /* (RIG_CUDA_COUNTER_BYTES / 4) zero between kernels, see above */
    int32_t sm_count;
    int32_t compute_capability; /* major * 10 + minor */
    size_t shared_optin_bytes;
    /* Launch the kernels that support it (rig_cuda_launch_pdl, common.cuh) with programmatic
     * dependent launch: a kernel may start while its predecessor finishes and waits in
     * griddepcontrol.wait before touching what that one wrote. */
    bool pdl;
};

/* Prints "rig: cuda: file:line: call: message" and returns `status`. */
enum rig_status rig_cuda_report(enum rig_status status, const char *file, int line,
                                const char *call, const char *message);

#define RIG_CUDA_TRY(call)                                                                         \
    do {                                                                                           \
        cudaError_t rig__cuda_error = (call);                                                      \
        if (rig__cuda_error != cudaSuccess)                                                        \
            return rig_cuda_report(RIG_E_DEVICE, __FILE__, __LINE__, #call,                        \
                                   cudaGetErrorString(rig__cuda_error));                           \
    } while (0)

#define RIG_CUBLAS_TRY(call)                                                                       \
    do {                                                                                           \
        cublasStatus_t rig__blas_status = (call);                                                  \
        if (rig__blas_status != CUBLAS_STATUS_SUCCESS)                                             \
            return rig_cuda_report(RIG_E_DEVICE, __FILE__, __LINE__, #call,                        \
                                   cublasGetStatusString(rig__blas_status));                       \
    } while (0)

#define RIG_NCCL_TRY(call)                                                                         \
    do {                                                                                           \
        ncclResult_t rig__nccl_result = (call);                                                    \
        if (rig__nccl_result != ncclSuccess)                                                       \
            return rig_cuda_report(RIG_E_DEVICE, __FILE__, __LINE__, #call,                        \
                                   ncclGetErrorString(rig__nccl_result));                          \
    } while (0)

/* Host waits on a stream or an event of `device`: plain CUDA waits outside a TP group; in
 * one, the watchdog (comm.c): poll until done, the group's NCCL error, or the collective
 * timeout — then abort the group (ncclCommAbort) and fail with a message naming the rank
 * and the collective. Exactly one of `stream` and `event` is non-NULL. */
enum rig_status rig_cuda_group_wait(const struct rig_cuda_device *device, cudaStream_t stream,
                                    cudaEvent_t event);
/* True once an NCCL abort of `device`'s group was left behind (comm.c): its GPU may still
 * run NCCL's kernels, and a CUDA free or destroy, which waits for the device, would never
 * return — the backend then leaks what it would free (the process is ending). */
bool rig_cuda_group_abandoned(const struct rig_cuda_device *device);
/* Graph capture on this thread begins (begin) or ends (returns the collectives it recorded
 * and the last one's enum rig_op_kind): the watchdog counts them again at each replay. */
void rig_cuda_group_capture(bool begin, int64_t *collectives, int32_t *last_kind);
/* A graph holding `collectives` collectives was launched on `device`'s stream. */
void rig_cuda_group_replayed(const struct rig_cuda_device *device, int64_t collectives,
                             int32_t last_kind);
/* Collective faults (rig_hal_set_faults on a device of a TP group; hal/hal.h): the plan of
 * `device`'s rank, its collectives counted from now. Only collective faults: a plan with an
 * allocation or stream-stall fault, or a collective fault outside a TP group, is
 * RIG_E_UNSUPPORTED (the simulator injects those). */
enum rig_status rig_cuda_group_set_faults(struct rig_cuda_device *device,
                                          const struct rig_hal_faults *faults);
/* Before a graph holding `collectives` collectives is launched on `device`'s stream: the
 * planned fault when its collective is among them (see comm.c); *skip: do not launch it. */
enum rig_status rig_cuda_group_replay_fault(const struct rig_cuda_device *device,
                                            int64_t collectives, bool *skip);
/* Default collective timeout: as PyTorch's NCCL watchdog, 10 minutes. */
#define RIG_CUDA_COLLECTIVE_TIMEOUT_MS_DEFAULT 600000

/* After a kernel launch: a bad configuration shows up here, not at the launch. */
#define RIG_CUDA_LAUNCHED() RIG_CUDA_TRY(cudaGetLastError())

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_INTERNAL_H */
