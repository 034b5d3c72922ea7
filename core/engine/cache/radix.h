/* radix.h — the radix prefix cache: which token prefixes already have KV in the pool.
 *
 * A tree over token sequences (SGLang's RadixAttention, Mini-SGLang's radix manager). Each
 * node holds a run of tokens (its key) and the KV slots that hold their K/V (its value);
 * the path from the root to a node spells a cached prefix. Lookups match the longest cached
 * prefix of a prompt, splitting a node when the match ends inside it; inserts add the part
 * of a finished (or prefilled) sequence that is not cached yet; requests lock the path they
 * use (ref counts up to the root) so it cannot be evicted; eviction removes unlocked leaves
 * in least-recently-used order through a binary heap.
 *
 * Storage, all sized at start-up from the slot count: nodes come from a fixed pool (every
 * non-root node holds at least one page of distinct slots, so `num_pages + 1` nodes always
 * suffice); a node's key and value live in two per-slot arrays — slot_token[s] is the token
 * whose K/V slot s holds, slot_next[s] the next slot of the same node — so a split only
 * cuts a link and nothing is ever copied or fragmented. Children are found through one hash
 * multimap keyed by (parent, first page of tokens).
 *
 * Determinism: last-access times are ticks of a logical counter bumped once per lookup or
 * insert (never wall time); ties in eviction order break by node index.
 *
 * Matching works in whole pages: a match length is rounded down to a multiple of
 * page_size, and inserted lengths must be multiples of it.
 *
 * Invariants (rig_radix_check): every live non-root node has a live parent, a positive
 * length that is a multiple of page_size, a chain of exactly `length` slots, and an entry in
 * the child map; no slot is in two nodes; ref_count >= 0 and a parent's ref_count is at
 * least each child's; evictable_tokens / protected_tokens are the summed lengths of the
 * nodes with ref_count == 0 / > 0. The root has ref_count 1 forever and no tokens.
 *
 * Ownership: the tree owns its arrays; it never frees slots itself — evicted slots are
 * handed back to the caller (the cache manager returns them to the page allocator).
 * Threads: the scheduler thread only.
 */
#ifndef RIG_RADIX_H
#define RIG_RADIX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/cache/keymap.h"
#include "hal/status.h"

#define RIG_RADIX_ROOT 0

struct rig_radix_node {
    int32_t parent;      /* node index; -1 for the root and for free nodes */
    int32_t first_slot;  /* first KV slot of the run; -1 for the root */
    int32_t length;      /* tokens in the run (a multiple of page_size) */
    int32_t ref_count;   /* handles whose path passes through this node */
    int32_t child_count;
    uint64_t tick;       /* logical time of the last lookup or insert that used it */
    uint64_t child_key;  /* the key the parent's child map holds for this node */
    bool live;
};

struct rig_radix {
    int32_t page_size;
    int32_t slots_total;
    int32_t nodes_max;
    struct rig_radix_node *nodes; /* (nodes_max) node 0 is the root */
    int32_t *free_nodes;          /* (nodes_max) stack of free node indices */
    int32_t free_node_count;
    int32_t *slot_token;          /* (slots_total) token held at a cached slot */
    int32_t *slot_next;           /* (slots_total) next slot of the same node; -1 at end */
    int32_t *heap;                /* (nodes_max) eviction heap scratch */
    uint8_t *slot_mark;           /* (slots_total) scratch of rig_radix_check */
    struct rig_keymap children;   /* (parent, first page) -> child node */
    uint64_t clock;               /* logical clock for ticks */
    int64_t evictable_tokens;
    int64_t protected_tokens;
    int32_t live_nodes;           /* including the root */
};

/* A request's hold on a cached prefix: the deepest matched node and the prefix length. */
struct rig_radix_handle {
    int32_t node;
    int32_t cached_len;
};

/* Sizes a tree for a pool of `num_pages` pages of `page_size` slots. RIG_E_INVALID for
 * non-positive sizes, RIG_E_NO_MEMORY when the host is out of memory (nothing allocated). */
enum rig_status rig_radix_init(struct rig_radix *tree, int32_t num_pages, int32_t page_size);
void rig_radix_free(struct rig_radix *tree);

/* Longest cached prefix of tokens[0..len), in whole pages. Splits a node the match ends
 * inside, touches the matched path's ticks, and writes the matched slots to
 * slots_out[0..cached_len) when slots_out is not NULL. Does not lock. Can't fail. */
struct rig_radix_handle rig_radix_match(struct rig_radix *tree, const int32_t *tokens,
                                        int32_t len, int32_t *slots_out);

/* Inserts tokens[0..len) whose K/V sit in slots[0..len) (len a multiple of page_size).
 * Returns the length that was already cached (those slots of the caller stay the caller's:
 * duplicates it must free); slots[prefix..len) now belong to the tree. *handle_out is the
 * node that ends the inserted sequence (cached_len = len), not locked. */
int32_t rig_radix_insert(struct rig_radix *tree, const int32_t *tokens, const int32_t *slots,
                         int32_t len, struct rig_radix_handle *handle_out);

/* Adds (lock) or removes (unlock) one reference on every node from handle.node up to the
 * root, moving node sizes between evictable and protected. Unlocking below zero is a bug. */
void rig_radix_lock(struct rig_radix *tree, struct rig_radix_handle handle);
void rig_radix_unlock(struct rig_radix *tree, struct rig_radix_handle handle);

/* Evicts unlocked leaves in LRU order (ties: lower node index first) until at least
 * `tokens` slots are freed or nothing evictable is left; writes the freed slots to
 * slots_out (capacity slots_total) and returns their count. */
int32_t rig_radix_evict(struct rig_radix *tree, int32_t tokens, int32_t *slots_out);

/* Slots of node `node`, in key order, into out (capacity >= its length); returns length. */
int32_t rig_radix_node_slots(const struct rig_radix *tree, int32_t node, int32_t *out);

/* Walks the whole tree and checks the invariants above. Writes one line per violation to
 * `report` (may be NULL) and returns the number of violations. O(nodes + slots). */
int32_t rig_radix_check(struct rig_radix *tree, void (*report)(void *ctx, const char *msg),
                        void *ctx);

#endif /* RIG_RADIX_H */
