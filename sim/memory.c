/* memory.c — real and phantom device memory, see memory.h.
 *
 * _DEFAULT_SOURCE: glibc exposes MAP_ANONYMOUS and MAP_NORESERVE (Linux, the BSDs and macOS
 * all have them) only beyond strict POSIX; nothing else of the extension set is used. */
#define _DEFAULT_SOURCE 1
#include "sim/memory.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t rig__round_up(uint64_t value, uint64_t align)
{
    return (value + align - 1) / align * align;
}

/* O(n) walk of the free list: sorted, disjoint, non-adjacent, inside the reservation. */
static bool rig__free_list_ok(const struct rig_sim_memory *memory)
{
    for (int32_t i = 0; i < memory->free_count; i++) {
        const struct rig_sim_extent *e = &memory->free_extents[i];
        if (e->bytes == 0 || e->offset % RIG_SIM_MEMORY_ALIGN != 0) return false;
        if (e->offset + e->bytes > memory->phantom_bytes) return false;
        if (i > 0) {
            const struct rig_sim_extent *prev = &memory->free_extents[i - 1];
            if (prev->offset + prev->bytes >= e->offset) return false;
        }
    }
    return true;
}

enum rig_status rig_sim_memory_init(struct rig_sim_memory *memory, int64_t capacity_bytes,
                                    bool timing_only)
{
    RIG_ASSERT(memory != NULL);
    RIG_ASSERT(capacity_bytes > 0);
    memset(memory, 0, sizeof *memory);
    memory->capacity_bytes = capacity_bytes;
    memory->timing_only = timing_only;
    if (!timing_only) return RIG_OK;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t bytes = rig__round_up((uint64_t)capacity_bytes, page);
    memory->free_extents = calloc(RIG_SIM_PHANTOM_BUFFERS_MAX + 1, sizeof *memory->free_extents);
    if (memory->free_extents == NULL) return RIG_E_NO_MEMORY;
    /* PROT_NONE + MAP_NORESERVE: address space only, no commit charge, no resident pages;
     * any access faults. */
    void *base = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        free(memory->free_extents);
        memory->free_extents = NULL;
        return RIG_E_NO_MEMORY;
    }
    memory->phantom_base = (uintptr_t)base;
    memory->phantom_bytes = bytes;
    memory->free_extents[0] = (struct rig_sim_extent){0, bytes};
    memory->free_count = 1;
    return RIG_OK;
}

void rig_sim_memory_deinit(struct rig_sim_memory *memory)
{
    RIG_ASSERT(memory != NULL);
    RIG_ASSERT_MSG(memory->allocated_bytes == 0, "device memory freed with live buffers");
    RIG_ASSERT(memory->phantom_live == 0);
    if (memory->phantom_base != 0) munmap((void *)memory->phantom_base, memory->phantom_bytes);
    free(memory->free_extents);
    memset(memory, 0, sizeof *memory);
}

/* First fit: takes `bytes` from the front of the first extent large enough. */
static bool rig__phantom_take(struct rig_sim_memory *memory, uint64_t bytes, uint64_t *offset)
{
    for (int32_t i = 0; i < memory->free_count; i++) {
        struct rig_sim_extent *e = &memory->free_extents[i];
        if (e->bytes < bytes) continue;
        *offset = e->offset;
        e->offset += bytes;
        e->bytes -= bytes;
        if (e->bytes == 0) {
            memmove(e, e + 1, (size_t)(memory->free_count - i - 1) * sizeof *e);
            memory->free_count--;
        }
        return true;
    }
    return false;
}

/* Returns [offset, offset + bytes) to the free list, merging with its neighbours. The list
 * never overflows: it holds at most one extent more than there are live buffers. */
static void rig__phantom_give(struct rig_sim_memory *memory, uint64_t offset, uint64_t bytes)
{
    int32_t i = 0;
    while (i < memory->free_count && memory->free_extents[i].offset < offset)
        i++;
    struct rig_sim_extent *list = memory->free_extents;
    bool merge_prev = i > 0 && list[i - 1].offset + list[i - 1].bytes == offset;
    bool merge_next = i < memory->free_count && offset + bytes == list[i].offset;
    if (merge_prev && merge_next) {
        list[i - 1].bytes += bytes + list[i].bytes;
        memmove(&list[i], &list[i + 1], (size_t)(memory->free_count - i - 1) * sizeof *list);
        memory->free_count--;
    } else if (merge_prev) {
        list[i - 1].bytes += bytes;
    } else if (merge_next) {
        list[i].offset = offset;
        list[i].bytes += bytes;
    } else {
        RIG_ASSERT(memory->free_count < RIG_SIM_PHANTOM_BUFFERS_MAX + 1);
        memmove(&list[i + 1], &list[i], (size_t)(memory->free_count - i) * sizeof *list);
        list[i] = (struct rig_sim_extent){offset, bytes};
        memory->free_count++;
    }
}

static enum rig_status rig__alloc_phantom(struct rig_sim_memory *memory, uint64_t rounded,
                                          void **data)
{
    if (memory->phantom_live >= RIG_SIM_PHANTOM_BUFFERS_MAX) return RIG_E_CAPACITY;
    uint64_t offset = 0;
    if (!rig__phantom_take(memory, rounded, &offset)) return RIG_E_DEVICE_MEMORY;
    memory->phantom_live++;
    *data = (void *)(memory->phantom_base + offset);
    RIG_VERIFY(rig__free_list_ok(memory));
    return RIG_OK;
}

/* A real, zero-filled buffer. Large ones are anonymous mappings: zero pages arrive lazily, so
 * a KV pool sized from the device's memory costs only the pages the run touches, and
 * MAP_NORESERVE keeps the kernel from refusing it up front. Small ones come from the heap. */
static enum rig_status rig__alloc_real(struct rig_sim_memory *memory,
                                       struct rig_sim_allocation *allocation, void **data)
{
    void *host = NULL;
    allocation->mapped = allocation->bytes >= RIG_SIM_MAPPED_MIN;
    if (allocation->mapped) {
        host = mmap(NULL, allocation->bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (host == MAP_FAILED) return RIG_E_NO_MEMORY;
    } else {
        if (posix_memalign(&host, RIG_SIM_HOST_ALIGN, allocation->bytes) != 0)
            return RIG_E_NO_MEMORY;
        memset(host, 0, allocation->bytes);
    }
    memory->resident_bytes += (int64_t)allocation->bytes;
    *data = host;
    return RIG_OK;
}

enum rig_status rig_sim_memory_alloc(struct rig_sim_memory *memory, size_t bytes,
                                     enum rig_memory_use use, void **data, void **context)
{
    RIG_ASSERT(memory != NULL && data != NULL && context != NULL);
    RIG_ASSERT(bytes > 0);
    uint64_t rounded = rig__round_up(bytes, RIG_SIM_MEMORY_ALIGN);
    if (rounded < bytes || rounded > (uint64_t)(memory->capacity_bytes - memory->allocated_bytes))
        return RIG_E_DEVICE_MEMORY;
    struct rig_sim_allocation *allocation = calloc(1, sizeof *allocation);
    if (allocation == NULL) return RIG_E_NO_MEMORY;
    allocation->bytes = rounded;
    allocation->phantom = memory->timing_only && use != RIG_MEMORY_METADATA;
    enum rig_status status = RIG_OK;
    if (allocation->phantom) {
        status = rig__alloc_phantom(memory, rounded, data);
    } else {
        status = rig__alloc_real(memory, allocation, data);
    }
    if (status != RIG_OK) {
        free(allocation);
        return status;
    }
    memory->allocated_bytes += (int64_t)rounded;
    *context = allocation;
    return RIG_OK;
}

void rig_sim_memory_free(struct rig_sim_memory *memory, void *data, void *context)
{
    RIG_ASSERT(memory != NULL && data != NULL && context != NULL);
    struct rig_sim_allocation *allocation = context;
    RIG_ASSERT(allocation->phantom == rig_sim_memory_is_phantom(memory, data));
    RIG_ASSERT(memory->allocated_bytes >= (int64_t)allocation->bytes);
    if (allocation->phantom) {
        rig__phantom_give(memory, (uintptr_t)data - memory->phantom_base, allocation->bytes);
        memory->phantom_live--;
        RIG_VERIFY(rig__free_list_ok(memory));
    } else {
        memory->resident_bytes -= (int64_t)allocation->bytes;
        if (allocation->mapped)
            munmap(data, allocation->bytes);
        else
            free(data);
    }
    memory->allocated_bytes -= (int64_t)allocation->bytes;
    free(allocation);
}

bool rig_sim_memory_is_phantom(const struct rig_sim_memory *memory, const void *address)
{
    RIG_ASSERT(memory != NULL);
    uintptr_t at = (uintptr_t)address;
    return memory->phantom_base != 0 && at >= memory->phantom_base &&
           at - memory->phantom_base < memory->phantom_bytes;
}
