/* prefetch.cu — pulls an op's L2 prefetch hint into L2 (see prefetch.cuh).
 *
 * The hint is dealt over a grid of up to one block per multiprocessor in chunks of
 * RIG__CHUNK bytes; thread 0 of a block asks for each of its chunks with one
 * cp.async.bulk.prefetch.L2 (sm_90: the copy engine fetches, nothing waits for the data). Spread
 * over the grid because one multiprocessor's copy engine is slow at it: issued from the one
 * block of a batch-1 RMS norm, 8-64 MB of hints made decode steps 3-5 x slower on the H100
 * (46c5f43, docs/performance.md).
 *
 * Ordering. The kernel is launched with programmatic dependent launch (common.cuh): it may
 * start while its predecessor runs, and it reads nothing an op writes (a hint names weights),
 * so it issues its prefetches first and then waits in rig_cuda_pdl_begin. Its completion thus
 * still follows the predecessor's, and the op after it, which waits for this kernel, keeps the
 * stream's order.
 */
#include "cuda/ops/common.cuh"
#include "cuda/ops/prefetch.cuh"

RIG_CUDA_MODULE(prefetch)

#define RIG__CHUNK ((uint64_t)64 << 10) /* bytes of one bulk prefetch */

static __global__ void rig__prefetch_kernel(const char *data, uint64_t bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (threadIdx.x == 0) {
        for (uint64_t at = blockIdx.x * RIG__CHUNK; at < bytes; at += gridDim.x * RIG__CHUNK) {
            uint64_t left = bytes - at;
            uint32_t size = (uint32_t)(left < RIG__CHUNK ? left : RIG__CHUNK);
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(data + at), "r"(size)
                         : "memory");
        }
    }
#endif
    rig_cuda_pdl_begin(); /* after the prefetches: the predecessor's tail overlaps them */
}

enum rig_status rig_cuda_prefetch(const struct rig_cuda_launch *launch, const void *data,
                                  size_t bytes)
{
    if (bytes > RIG_CUDA_PREFETCH_MAX_BYTES) bytes = RIG_CUDA_PREFETCH_MAX_BYTES;
    /* 16-byte boundaries inward, as the bulk prefetch needs */
    uintptr_t begin = ((uintptr_t)data + 15) & ~(uintptr_t)15;
    uintptr_t end = ((uintptr_t)data + bytes) & ~(uintptr_t)15;
    if (end <= begin) return RIG_OK;
    uint64_t size = (uint64_t)(end - begin);
    int64_t blocks = rig_cuda_div_up((int64_t)size, (int64_t)RIG__CHUNK);
    if (blocks > launch->sm_count) blocks = launch->sm_count;
    RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__prefetch_kernel, dim3((unsigned)blocks),
                                     dim3(RIG_CUDA_WARP), 0, (const char *)begin, size));
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
