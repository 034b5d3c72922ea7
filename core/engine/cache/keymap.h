/* keymap.h — a fixed-capacity hash multimap from 64-bit keys to 32-bit values.
 *
 * Why: the radix tree finds a child by (parent, first token) and the engine finds a request
 * by uid; both need O(1) lookups with storage sized at start-up and an iteration order that
 * never depends on addresses (determinism). Open addressing with linear probing; deletion
 * by backward shift (no tombstones), so lookups stay short under churn.
 *
 * Several entries may share a key (a multimap): with pages larger than one token the radix
 * tree keys children by a hash of the first page, and the caller tells real matches from
 * collisions by comparing tokens (rig_keymap_next walks every entry with the key).
 *
 * Invariants: count <= capacity / 2 (load factor at most 0.5, asserted); capacity is a
 * power of two. Ownership: the map owns its slot array. Threads: one thread at a time.
 */
#ifndef RIG_KEYMAP_H
#define RIG_KEYMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "hal/status.h"

struct rig_keymap_slot {
    uint64_t key;
    int32_t value; /* -1 = empty slot */
};

struct rig_keymap {
    struct rig_keymap_slot *slots; /* (capacity) */
    int64_t capacity;              /* power of two, >= 2 * entries_max */
    int64_t count;
    int64_t entries_max;
};

/* Sizes the map for at most `entries_max` (> 0) entries. RIG_E_NO_MEMORY on failure. */
enum rig_status rig_keymap_init(struct rig_keymap *map, int64_t entries_max);
void rig_keymap_free(struct rig_keymap *map);
void rig_keymap_clear(struct rig_keymap *map);

/* Adds (key, value); value >= 0. Inserting beyond entries_max is a bug (asserted): callers
 * size the map from the limit that bounds their entries. */
void rig_keymap_put(struct rig_keymap *map, uint64_t key, int32_t value);
/* Removes the entry (key, value); returns false when absent. */
bool rig_keymap_remove(struct rig_keymap *map, uint64_t key, int32_t value);
/* First value stored under `key`, or -1. */
int32_t rig_keymap_get(const struct rig_keymap *map, uint64_t key);
/* Iterates the values under `key`: start with *cursor = -1; returns the next value or -1
 * when there are no more. */
int32_t rig_keymap_next(const struct rig_keymap *map, uint64_t key, int64_t *cursor);

#endif /* RIG_KEYMAP_H */
