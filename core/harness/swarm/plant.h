/* plant.h — planted bugs, for proving that the swarm's checks bite (issue 6, item 5).
 *
 * rig_debug_plant is a bitmask, 0 in every normal run. A test sets a bit, runs the swarm and
 * expects it to fail within a stated number of seeds (tests/test_swarm_plant.c). Each bit
 * switches on one deliberate defect at one place in the engine; the places read the mask
 * through rig_debug_planted(), which is a single load, so normal runs pay nothing to speak of.
 * Threads: set it only while no engine runs.
 */
#ifndef RIG_SWARM_PLANT_H
#define RIG_SWARM_PLANT_H

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

extern uint32_t rig_debug_plant;

static inline bool rig_debug_planted(enum rig_plant bug)
{
    return (rig_debug_plant & (uint32_t)bug) != 0;
}

#endif /* RIG_SWARM_PLANT_H */
