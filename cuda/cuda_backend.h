/* cuda_backend.h — the CUDA backend of the HAL (docs/gpu.md): one GPU per TP rank.
 *
 * rig_cuda_backend() returns the backend table the registry registers (hal/backends.c). Everything
 * else goes through the HAL (hal/hal.h): this header only adds what a caller needs before opening a
 * device.
 *
 * Objects and their CUDA counterparts:
 *   device  a GPU ordinal (config->first_ordinal + rank); every entry point selects it with
 *           cudaSetDevice first, because TP ranks run on different host threads;
 *   buffer  cudaMalloc (all at engine start, never in the step loop);
 *   stream  a non-blocking cudaStream_t with its own cuBLAS and cuBLASLt handles, an explicit
 *           cuBLAS workspace (so cuBLAS never allocates, which is what makes graph capture
 *           work) and a scratch area for split-KV attention partials; GEMM algorithms come
 *           from the process's plan table (ops/gemm_plan.cuh, RIG_CUDA_GEMM_PLANS=0: off);
 *   event   a timing cudaEvent_t;
 *   graph   a captured cudaGraph_t and its instantiated exec (thread-local capture mode, so
 *           other ranks' threads may keep working while one captures). A graph's kernels use
 *           the cuBLAS workspace and scratch of the stream it was captured on: replay it on
 *           that stream, or on another only when the capture stream is idle meanwhile;
 *   comm    an ncclComm_t from ncclCommInitAll over the group's ordinals (one process).
 *   host    rig_hal_host_alloc: cudaHostAlloc(cudaHostAllocPortable), pinned for every GPU
 *           of the process (RIG_CUDA_PAGEABLE_HOST=1: pageable, to measure the difference).
 * Copies: to and from pinned host memory they are asynchronous. Host memory given to
 * upload/download may also be pageable; such copies are staged by the driver and block the
 * host (a download returns only once the stream has run everything before it).
 *
 * Errors: every CUDA, cuBLAS and NCCL call is checked; a failure prints
 * "rig: cuda: file:line: call: error string" on stderr and returns RIG_E_DEVICE
 * (RIG_E_DEVICE_MEMORY for an allocation that does not fit).
 *
 * Threads: as the HAL's: one thread per device at a time.
 */
#ifndef RIG_CUDA_BACKEND_H
#define RIG_CUDA_BACKEND_H

#include <stdint.h>

#include "hal/hal_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CUDA backend's table, for rig_hal_register. Can't fail. */
const struct rig_backend_iface *rig_cuda_backend(void);

/* Number of usable GPUs: 0 when there is no driver, no device, or the runtime fails (tests
 * skip themselves then). Never prints. */
int32_t rig_cuda_device_count(void);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_BACKEND_H */
