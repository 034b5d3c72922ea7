/* preload.h — every kernel of rig's own modules loaded when a device opens.
 *
 * CUDA loads a kernel lazily, at its first launch (CUDA_MODULE_LOADING=LAZY, the default):
 * on a wall-clock run the first step that meets a kernel stalls for the load (quickstart on
 * the H100: one request's TTFT 9.5 ms, and a later arrival missed its cached prefix). The
 * process-wide cure, CUDA_MODULE_LOADING=EAGER, also loads all of cuBLAS's kernels at
 * cublasCreate — half a gigabyte of code, 2.1–3.0 s of a 4.4 s cold start on the H100
 * (docs/performance.md). So the backend leaves the loading mode alone and loads only its own
 * modules' kernels, through the driver's cuModuleEnumerateFunctions / cuFuncLoad (CUDA 12.4),
 * reached with cudaGetDriverEntryPointByVersion so that rig never links libcuda (CI has no
 * driver). cuBLAS's kernels load at their first use, which the GEMM plans make at start
 * (cuda/ops/gemm_plan.cuh).
 *
 * Threads: call with the device current on the calling thread, at open, before any stream.
 */
#ifndef RIG_CUDA_PRELOAD_H
#define RIG_CUDA_PRELOAD_H

#include <stdint.h>

#include "hal/status.h"

/* Loads every function of every rig module into the current device's context; adds their
 * count to *functions. A driver older than CUDA 12.4 (no cuFuncLoad) is not an error: the
 * kernels then load at first use, and *functions stays as it was. */
enum rig_status rig_cuda_preload(int64_t *functions);

/* For tests: rig's modules on the current device, their functions and how many of those are
 * loaded. RIG_E_UNSUPPORTED on a driver before CUDA 12.4. */
enum rig_status rig_cuda_kernels_loaded(int64_t *modules, int64_t *functions, int64_t *loaded);

#endif
