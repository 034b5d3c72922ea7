/* plant.c — the planted-bug mask (see plant.h). */
#include "core/swarm/plant.h"

uint32_t rig_debug_plant = 0;
