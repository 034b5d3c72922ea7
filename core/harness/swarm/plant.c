/* plant.c — the planted-bug mask (see plant.h). */
#include "core/harness/swarm/plant.h"

uint32_t rig_debug_plant = 0;
