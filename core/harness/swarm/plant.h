/* plant.h — planted bugs, for proving that the swarm's checks bite (issue 6, item 5).
 *
 * rig_debug_plant is a bitmask of enum rig_plant (core/engine/debug.h), 0 in every normal
 * run. A test (or `rig fuzz` with RIG_PLANT=MASK) sets bits, runs the swarm and expects it to
 * fail within a stated number of seeds (tests/test_swarm_plant.c). The swarm hands the mask
 * to each engine it creates through the engine config's debug hook (debug_plant); the engine
 * never reads this variable. Threads: set it only while no swarm runs.
 */
#ifndef RIG_SWARM_PLANT_H
#define RIG_SWARM_PLANT_H

#include <stdint.h>

#include "core/engine/debug.h"

extern uint32_t rig_debug_plant;

#endif /* RIG_SWARM_PLANT_H */
