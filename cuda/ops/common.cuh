/* common.cuh — device helpers shared by the op kernels (CUDA C++ only, header-only). bf16 values
 * travel as uint16_t, converted with hal/tensor.h's rig_bf16_to_f32 / rig_f32_to_bf16 (round to
 * nearest even, NaN kept quiet), the very functions the simulator uses, so a kernel and its
 * reference round identically. Reductions are warp shuffles then one shared-memory pass; their
 * order is fixed by the launch shape, so results are deterministic run to run (they differ from
 * the simulator's sequential order only by fp32 rounding).
 */
#ifndef RIG_CUDA_OPS_COMMON_CUH
#define RIG_CUDA_OPS_COMMON_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_internal.h"
#include "hal/tensor.h"

#define RIG_CUDA_WARP 32

/* Every .cu file of the backend names itself once, at file scope, with its file name:
 * RIG_CUDA_MODULE(attention_decode). Each file is its own module (no separable compilation),
 * and the anchor's address finds it, so cuda/preload.c can load every kernel of every module
 * when a device opens (cuda/CMakeLists.txt lists the files; a file without its anchor fails
 * the link). */
#define RIG_CUDA_MODULE(name)                                                                 \
    static __global__ void rig__module_anchor_##name() {}                                     \
    extern "C" const void *rig_cuda_module_##name(void)                                       \
    {                                                                                         \
        return (const void *)rig__module_anchor_##name;                                       \
    }

/* Programmatic dependent launch (Hopper). A kernel launched by rig_cuda_launch_pdl may start
 * before its predecessor in the stream has finished: it must call rig_cuda_pdl_begin before
 * its first access to memory another kernel writes (loads of weights, which nothing writes
 * during a forward, may come first). rig_cuda_pdl_begin waits until the predecessor has
 * completed and its writes are visible (a no-op in a kernel launched plainly), then lets the
 * next kernel's blocks be scheduled as this one's run. Since each kernel waits for the whole
 * of its predecessor, which waited for its own, the order of a stream is kept transitively. */
static __device__ __forceinline__ void rig_cuda_pdl_begin()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* A measuring switch: the environment variable `name` as a base-10 integer, or `fallback` when
 * it is unset or empty. A launcher that must not call getenv per launch keeps the value in a
 * function-local static const, which C++ initialises once and thread-safely. */
static inline long rig_cuda_env(const char *name, long fallback)
{
    const char *value = getenv(name);
    return value != NULL && value[0] != '\0' ? strtol(value, NULL, 10) : fallback;
}

/* The launch configuration of rig_cuda_launch_pdl(_cluster), its attributes in `attribute`:
 * programmatic stream serialisation when `pdl`, a cluster of 1 x 1 x cluster_z blocks when
 * cluster_z > 1. Also what an occupancy query of the same launch takes. */
static inline cudaLaunchConfig_t rig_cuda_launch_config(dim3 grid, dim3 block, size_t shared,
                                                        cudaStream_t stream, bool pdl,
                                                        unsigned cluster_z,
                                                        cudaLaunchAttribute (&attribute)[2])
{
    int count = 0;
    if (pdl) {
        attribute[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attribute[count].val.programmaticStreamSerializationAllowed = 1;
        count++;
    }
    if (cluster_z > 1) {
        attribute[count].id = cudaLaunchAttributeClusterDimension;
        attribute[count].val.clusterDim.x = 1;
        attribute[count].val.clusterDim.y = 1;
        attribute[count].val.clusterDim.z = cluster_z;
        count++;
    }
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = shared;
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = (unsigned)count;
    return config;
}

/* kernel<<<grid, block, shared, launch->stream>>>(args...), with the programmatic
 * stream-serialisation attribute when launch->pdl. The kernel must call rig_cuda_pdl_begin.
 * Returns the launch's error (check it with RIG_CUDA_TRY). */
template <typename... Params, typename... Args>
static inline cudaError_t rig_cuda_launch_pdl(const struct rig_cuda_launch *launch,
                                              void (*kernel)(Params...), dim3 grid, dim3 block,
                                              size_t shared, Args... args)
{
    cudaLaunchAttribute attribute[2];
    cudaLaunchConfig_t config =
        rig_cuda_launch_config(grid, block, shared, launch->stream, launch->pdl, 1, attribute);
    return cudaLaunchKernelEx(&config, kernel, args...);
}

/* rig_cuda_launch_pdl with the grid's blocks in thread-block clusters of 1 x 1 x cluster_z
 * (the grid's z a multiple of it; sizes over 8 need the kernel opted in). */
template <typename... Params, typename... Args>
static inline cudaError_t rig_cuda_launch_pdl_cluster(const struct rig_cuda_launch *launch,
                                                      void (*kernel)(Params...), dim3 grid,
                                                      dim3 block, size_t shared,
                                                      unsigned cluster_z, Args... args)
{
    cudaLaunchAttribute attribute[2];
    cudaLaunchConfig_t config = rig_cuda_launch_config(grid, block, shared, launch->stream,
                                                       launch->pdl, cluster_z, attribute);
    return cudaLaunchKernelEx(&config, kernel, args...);
}

static inline __host__ __device__ int64_t rig_cuda_div_up(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* True when `p` is aligned to `bytes`. */
static inline bool rig_cuda_aligned(const void *p, size_t bytes)
{
    return ((uintptr_t)p % bytes) == 0;
}

static __device__ __forceinline__ float rig_cuda_bf16(uint16_t h)
{
    return rig_bf16_to_f32(h);
}

static __device__ __forceinline__ uint16_t rig_cuda_to_bf16(float f)
{
    return rig_f32_to_bf16(f);
}

static __device__ __forceinline__ float rig_cuda_warp_sum(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

static __device__ __forceinline__ float rig_cuda_warp_max(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

/* Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
 * `shared` holds 32 floats; the call ends with a barrier so it can be reused at once. */
static __device__ __forceinline__ float rig_cuda_block_sum(float v, float *shared)
{
    int lane = threadIdx.x % RIG_CUDA_WARP;
    int warp = threadIdx.x / RIG_CUDA_WARP;
    int warps = blockDim.x / RIG_CUDA_WARP;
    v = rig_cuda_warp_sum(v);
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < warps; w++)
        total += shared[w]; /* same order in every thread */
    __syncthreads();
    return total;
}

/* VEC consecutive bf16 values: one 16-byte access when VEC == 8 (the caller has checked
 * alignment), element by element otherwise. */
template <int VEC>
static __device__ __forceinline__ void rig_cuda_load_bf16(const uint16_t *src, uint16_t *dst)
{
    if constexpr (VEC == 8) {
        uint4 v = *reinterpret_cast<const uint4 *>(src);
        memcpy(dst, &v, sizeof v);
    } else if constexpr (VEC == 4) {
        uint2 v = *reinterpret_cast<const uint2 *>(src);
        memcpy(dst, &v, sizeof v);
    } else if constexpr (VEC == 2) {
        uint32_t v = *reinterpret_cast<const uint32_t *>(src);
        memcpy(dst, &v, sizeof v);
    } else {
#pragma unroll
        for (int i = 0; i < VEC; i++)
            dst[i] = src[i];
    }
}

template <int VEC>
static __device__ __forceinline__ void rig_cuda_store_bf16(uint16_t *dst, const uint16_t *src)
{
    if constexpr (VEC == 8) {
        uint4 v;
        memcpy(&v, src, sizeof v);
        *reinterpret_cast<uint4 *>(dst) = v;
    } else if constexpr (VEC == 4) {
        uint2 v;
        memcpy(&v, src, sizeof v);
        *reinterpret_cast<uint2 *>(dst) = v;
    } else if constexpr (VEC == 2) {
        uint32_t v;
        memcpy(&v, src, sizeof v);
        *reinterpret_cast<uint32_t *>(dst) = v;
    } else {
#pragma unroll
        for (int i = 0; i < VEC; i++)
            dst[i] = src[i];
    }
}

/* True when rows of `n` bf16 values at `base` + r * `stride` are all 16-byte aligned. */
static inline bool rig_cuda_rows_vec8(const void *base, int64_t stride, int64_t n)
{
    return n % 8 == 0 && stride % 8 == 0 && rig_cuda_aligned(base, 16);
}

#endif /* RIG_CUDA_OPS_COMMON_CUH */
