/* debug.h — the engine's one debug hook: planted bugs, for proving that checks bite.
 *
 * rig_engine_config.debug_plant is a bitmask of enum rig_plant, 0 in every normal run. Each
 * bit switches on one deliberate defect at one place in the engine; the swarm
 * (core/harness/swarm/plant.h) sets bits and expects its checks to fail within a stated
 * number of seeds (tests/test_swarm_plant.c). The engine hands the mask to the parts that
 * hold a defect (the cache keeps its copy in struct rig_cache); nothing else reads it, and a
 * test reaches it only through the config.
 */
#ifndef RIG_ENGINE_DEBUG_H
#define RIG_ENGINE_DEBUG_H

#include <stdbool.h>
#include <stdint.h>

enum rig_plant {
    /* cache.c, rig_cache_insert: a finished request's prefix lock is never released. */
    RIG_PLANT_SKIP_UNLOCK = 1u << 0,
    /* cache.c, rig_cache_insert: when another request cached the same tokens first, the
     * tree's page is freed instead of the duplicate (a page freed while still in use). */
    RIG_PLANT_FREE_SHARED_PAGE = 1u << 1,
    /* scheduler.c, release: an ended request is released while a launched batch that
     * includes it is still unprocessed (the Python original's overlap defect). */
    RIG_PLANT_RELEASE_INFLIGHT = 1u << 2,
    /* prefill.c, admission: only free slots count, not evictable cached ones, so a cache
     * full of finished requests' prefixes blocks every admission (a deadlock). */
    RIG_PLANT_ADMIT_FREE_ONLY = 1u << 3,
};

/* Whether `bug` is planted in `mask`: one test of a bit, so normal runs pay nothing to speak
 * of. Can't fail. */
static inline bool rig_plant_on(uint32_t mask, enum rig_plant bug)
{
    return (mask & (uint32_t)bug) != 0;
}

#endif /* RIG_ENGINE_DEBUG_H */
