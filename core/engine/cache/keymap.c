/* keymap.c — open addressing with linear probing and backward-shift deletion. */
#include "core/engine/cache/keymap.h"

#include <stdlib.h>

static uint64_t rig__keymap_hash(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    key ^= key >> 33;
    return key;
}

enum rig_status rig_keymap_init(struct rig_keymap *map, int64_t entries_max)
{
    RIG_ASSERT(entries_max > 0);
    int64_t capacity = 16;
    while (capacity < 2 * entries_max) capacity *= 2;
    map->slots = malloc((size_t)capacity * sizeof *map->slots);
    if (!map->slots) return RIG_E_NO_MEMORY;
    map->capacity = capacity;
    map->entries_max = entries_max;
    rig_keymap_clear(map);
    return RIG_OK;
}

void rig_keymap_free(struct rig_keymap *map)
{
    free(map->slots);
    map->slots = NULL;
    map->capacity = 0;
    map->count = 0;
}

void rig_keymap_clear(struct rig_keymap *map)
{
    for (int64_t i = 0; i < map->capacity; i++) {
        map->slots[i].key = 0;
        map->slots[i].value = -1;
    }
    map->count = 0;
}

void rig_keymap_put(struct rig_keymap *map, uint64_t key, int32_t value)
{
    RIG_ASSERT(value >= 0);
    RIG_ASSERT_MSG(map->count < map->entries_max, "keymap sized too small for its limit");
    int64_t mask = map->capacity - 1;
    int64_t i = (int64_t)(rig__keymap_hash(key) & (uint64_t)mask);
    while (map->slots[i].value >= 0) i = (i + 1) & mask;
    map->slots[i].key = key;
    map->slots[i].value = value;
    map->count++;
}

int32_t rig_keymap_next(const struct rig_keymap *map, uint64_t key, int64_t *cursor)
{
    int64_t mask = map->capacity - 1;
    int64_t i = *cursor < 0 ? (int64_t)(rig__keymap_hash(key) & (uint64_t)mask)
                            : ((*cursor + 1) & mask);
    /* A cluster ends at an empty slot; load <= 0.5 guarantees one exists. */
    for (int64_t probes = 0; probes < map->capacity; probes++) {
        if (map->slots[i].value < 0) break;
        if (map->slots[i].key == key) {
            *cursor = i;
            return map->slots[i].value;
        }
        i = (i + 1) & mask;
    }
    return -1;
}

int32_t rig_keymap_get(const struct rig_keymap *map, uint64_t key)
{
    int64_t cursor = -1;
    return rig_keymap_next(map, key, &cursor);
}

/* Backward-shift deletion: move later members of the cluster into the hole when their home
 * position does not lie cyclically between the hole and their current slot. */
static void rig__keymap_delete_at(struct rig_keymap *map, int64_t hole)
{
    int64_t mask = map->capacity - 1;
    int64_t i = hole;
    for (int64_t probes = 0; probes < map->capacity; probes++) {
        i = (i + 1) & mask;
        if (map->slots[i].value < 0) break;
        int64_t home = (int64_t)(rig__keymap_hash(map->slots[i].key) & (uint64_t)mask);
        bool stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
        if (stays) continue;
        map->slots[hole] = map->slots[i];
        hole = i;
    }
    map->slots[hole].key = 0;
    map->slots[hole].value = -1;
    map->count--;
}

bool rig_keymap_remove(struct rig_keymap *map, uint64_t key, int32_t value)
{
    int64_t cursor = -1;
    for (int64_t n = 0; n <= map->count; n++) {
        int32_t found = rig_keymap_next(map, key, &cursor);
        if (found < 0) return false;
        if (found == value) {
            rig__keymap_delete_at(map, cursor);
            return true;
        }
    }
    return false;
}
