/* cache.h — the KV cache manager: page allocation, the prefix cache, and what a request
 * gives back when it is cached or finishes (docs/architecture.md §2 steps 4, 6, 15).
 *
 * Two types: RADIX reuses prefixes through the radix tree (radix.h); NAIVE never reuses
 * (every request computes its whole prompt and frees every page when it ends) — the
 * baseline a user compares against. Both share one page allocator (pages.h).
 *
 * Sizes in token slots: free (on the free list), evictable (cached, unlocked), protected
 * (cached, locked by some request), owned (held by requests, not in the tree). Invariant:
 * free + evictable + protected + owned = total. `available` = free + evictable is what an
 * admission may count on (eviction turns evictable into free).
 *
 * Caching a request (Mini-SGLang's cache_req, with its defect fixed): the computed prefix
 * tokens[0, cached_len) is inserted; the part another request cached meanwhile is a
 * duplicate — its pages are freed AND the request's page-table row is rewritten to the
 * tree's slots, so the row never points at a freed page (the Python original freed them and
 * left the row pointing there). The rewritten positions are reported so the caller can
 * update the device copy of the row.
 *
 * Ownership: the manager owns the allocator, the tree and its scratch arrays. Page-table
 * rows belong to the table manager; the manager reads and rewrites the row it is given.
 * Threads: the scheduler thread only.
 */
#ifndef RIG_CACHE_H
#define RIG_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/cache/pages.h"
#include "core/engine/cache/radix.h"

enum rig_cache_type {
    RIG_CACHE_RADIX = 0,
    RIG_CACHE_NAIVE = 1,
};

struct rig_cache_sizes {
    int64_t total;      /* slots in the pool */
    int64_t free;
    int64_t evictable;
    int64_t protected_; /* trailing underscore: `protected` is a C++ keyword */
    int64_t owned;      /* total − the three above */
};

struct rig_cache {
    enum rig_cache_type type;
    int32_t page_size;
    int32_t num_pages;
    struct rig_pages pages;
    struct rig_radix tree;   /* also initialised for NAIVE (the handle is always the root) */
    int32_t *scratch_slots;  /* (num_pages * page_size) eviction output, matched slots */
    int32_t *scratch_pages;  /* (num_pages) allocation output */
    int64_t evictions;       /* slots evicted so far (statistics) */
    uint32_t plant;          /* planted bugs (core/engine/debug.h); 0 but in the swarm */
};

/* RIG_E_INVALID for bad sizes or type, RIG_E_NO_MEMORY; nothing allocated on error. */
enum rig_status rig_cache_init(struct rig_cache *cache, enum rig_cache_type type,
                               int32_t num_pages, int32_t page_size);
void rig_cache_free(struct rig_cache *cache);
/* "radix" / "naive" → type; RIG_E_NOT_FOUND for another name. */
enum rig_status rig_cache_type_parse(const char *name, enum rig_cache_type *out);
const char *rig_cache_type_name(enum rig_cache_type type);

struct rig_cache_sizes rig_cache_sizes(const struct rig_cache *cache);
/* free + evictable slots. */
int64_t rig_cache_available(const struct rig_cache *cache);

/* Longest cached prefix of prompt[0, len − 1) (at least one token is always computed, to
 * get logits). Writes the matched slots to slots_out[0, handle.cached_len). Not locked. */
struct rig_radix_handle rig_cache_match(struct rig_cache *cache, const int32_t *prompt,
                                        int32_t len, int32_t *slots_out);
void rig_cache_lock(struct rig_cache *cache, struct rig_radix_handle handle);
void rig_cache_unlock(struct rig_cache *cache, struct rig_radix_handle handle);

/* Allocates `count` pages, evicting unlocked LRU leaves when the free list is short, and
 * writes their slots (count * page_size) to slots_out. RIG_E_CAPACITY when even eviction
 * cannot make room; then nothing is allocated or evicted. */
enum rig_status rig_cache_alloc(struct rig_cache *cache, int32_t count, int32_t *slots_out);
/* Frees the pages whose slots are slots[0, count) (count a multiple of page_size). */
void rig_cache_release(struct rig_cache *cache, const int32_t *slots, int32_t count);

/* Evicts every evictable (cached, unlocked) slot back to the free list; returns how many.
 * Locked prefixes stay. Can't fail. */
int64_t rig_cache_flush(struct rig_cache *cache);

/* Caches the computed prefix of a request and gives back what it no longer needs.
 *  tokens, row   the request's tokens and page-table row (host mirror), both ≥ alloc_len;
 *  cached_len    positions whose K/V is complete;  alloc_len: slots allocated in the row;
 *  handle        the request's locked handle (unlocked here);
 *  finished      true: free everything not inserted, *handle_out is unset; false: keep the
 *                tail, lock and return the new handle in *handle_out.
 * Rewritten row positions are written to rewritten[] (capacity alloc_len), their count
 * returned. */
int32_t rig_cache_insert(struct rig_cache *cache, const int32_t *tokens, int32_t *row,
                         int32_t cached_len, int32_t alloc_len,
                         struct rig_radix_handle handle, bool finished,
                         struct rig_radix_handle *handle_out, int32_t *rewritten);

#endif /* RIG_CACHE_H */
