/* memory.h — a simulated device's memory: real host buffers, or phantom address ranges.
 *
 * Every buffer counts against the device's memory size (the profile's memory_bytes, in
 * units of RIG_SIM_MEMORY_ALIGN); past it, allocation fails with RIG_E_DEVICE_MEMORY, as
 * cudaMalloc does. A buffer is either
 *  - real: 64-byte aligned host memory, zero-filled (so results never depend on garbage);
 *    from 1 MiB up an anonymous mapping whose zero pages arrive only when touched, or
 *  - phantom (timing-only mode, every use but METADATA): a range inside one PROT_NONE,
 *    MAP_NORESERVE reservation of the device's size. It costs no resident memory, and any
 *    access faults at once, which turns "the simulator touched a phantom buffer" into a crash
 *    instead of a silent read. Ranges are handed out first-fit from a sorted free list that
 *    coalesces on free.
 * Invariants: free extents are sorted, disjoint, non-adjacent and inside the reservation;
 * allocated_bytes = sum of live buffers' rounded sizes <= capacity_bytes.
 * Ownership: the memory owns the reservation and the free list; each buffer's context is a
 * struct rig_sim_allocation owned by the buffer until freed.
 * Threads: one device, one thread (hal.h), so no locking.
 */
#ifndef RIG_SIM_MEMORY_H
#define RIG_SIM_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/hal.h"

#define RIG_SIM_MEMORY_ALIGN        256        /* allocation granularity, as cudaMalloc's */
#define RIG_SIM_HOST_ALIGN          64         /* alignment of real buffers */
#define RIG_SIM_PHANTOM_BUFFERS_MAX 16384      /* live phantom buffers per device */
#define RIG_SIM_MAPPED_MIN          (1u << 20) /* real buffers this large get their own mapping */

struct rig_sim_extent {
    uint64_t offset; /* from the reservation's start, a multiple of RIG_SIM_MEMORY_ALIGN */
    uint64_t bytes;  /* a multiple of RIG_SIM_MEMORY_ALIGN, > 0 */
};

struct rig_sim_allocation {
    uint64_t bytes; /* rounded size counted against the device */
    bool phantom;   /* a range of the PROT_NONE reservation */
    bool mapped;    /* real, from its own anonymous mapping (large buffers) */
};

struct rig_sim_memory {
    int64_t capacity_bytes;  /* the device's memory size */
    int64_t allocated_bytes; /* live buffers, rounded, phantom included */
    int64_t resident_bytes;  /* host bytes backing real buffers (mapped ones fill lazily) */
    bool timing_only;
    uintptr_t phantom_base;              /* start of the reservation; 0 when not timing-only */
    uint64_t phantom_bytes;              /* size of the reservation */
    struct rig_sim_extent *free_extents; /* (RIG_SIM_PHANTOM_BUFFERS_MAX + 1) sorted */
    int32_t free_count;
    int32_t phantom_live; /* live phantom buffers */
};

/* Sets up the memory of one device. In timing-only mode reserves `capacity_bytes` of
 * address space (no resident memory). RIG_E_NO_MEMORY when the reservation fails; nothing
 * is left allocated then. */
enum rig_status rig_sim_memory_init(struct rig_sim_memory *memory, int64_t capacity_bytes,
                                    bool timing_only);
/* Releases the reservation; every buffer must have been freed. */
void rig_sim_memory_deinit(struct rig_sim_memory *memory);

/* Allocates a buffer of `bytes` (> 0). Phantom when timing-only and use != METADATA.
 * RIG_E_DEVICE_MEMORY when the device is full (or, phantom, too fragmented),
 * RIG_E_CAPACITY past RIG_SIM_PHANTOM_BUFFERS_MAX live phantom buffers, RIG_E_NO_MEMORY when
 * the host has no memory; on error nothing changes. */
enum rig_status rig_sim_memory_alloc(struct rig_sim_memory *memory, size_t bytes,
                                     enum rig_memory_use use, void **data, void **context);
void rig_sim_memory_free(struct rig_sim_memory *memory, void *data, void *context);

/* True when `address` lies in the phantom reservation (must never be dereferenced).
 * Can't fail; false for NULL. */
bool rig_sim_memory_is_phantom(const struct rig_sim_memory *memory, const void *address);

#endif /* RIG_SIM_MEMORY_H */
