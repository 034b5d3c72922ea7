/* pages.h — the KV page allocator: a stack of free page indices.
 *
 * The KV pool holds `num_pages` pages of `page_size` token slots; page p covers slots
 * [p * page_size, (p + 1) * page_size). Kernels address slots (hal/ops.h), the allocator hands
 * out pages. A stack (last freed, first reused) keeps allocation O(1) and deterministic.
 *
 * Invariants: every page is either on the free stack exactly once or held by the caller
 * (a request or the radix tree); free_count <= num_pages. In verify builds, freeing a page
 * that is already free is caught (a per-page flag). Ownership: the allocator owns its
 * arrays. Threads: the scheduler thread only.
 */
#ifndef RIG_PAGES_H
#define RIG_PAGES_H

#include <stdbool.h>
#include <stdint.h>

#include "hal/status.h"

struct rig_pages {
    int32_t num_pages;
    int32_t page_size;
    int32_t *free_stack; /* (num_pages) page indices; [0, free_count) are free */
    int32_t free_count;
    bool *is_free;       /* (num_pages) true while the page is on the stack */
};

/* Creates an allocator with every page free (page 0 on top). RIG_E_INVALID for
 * non-positive sizes, RIG_E_NO_MEMORY when the host is out of memory. */
enum rig_status rig_pages_init(struct rig_pages *pages, int32_t num_pages, int32_t page_size);
void rig_pages_free_all(struct rig_pages *pages);

/* Pops `count` pages into out[0..count). Returns false and changes nothing when fewer than
 * `count` are free. */
bool rig_pages_alloc(struct rig_pages *pages, int32_t count, int32_t *out);
/* Pushes one page back. Freeing a free page or an index out of range is a bug. */
void rig_pages_release(struct rig_pages *pages, int32_t page);
/* Releases the pages of `count` slots (slot indices, page-aligned runs: every page_size-th
 * slot starts a page). */
void rig_pages_release_slots(struct rig_pages *pages, const int32_t *slots, int32_t count);

static inline int32_t rig_pages_free_count(const struct rig_pages *pages)
{
    return pages->free_count;
}

#endif /* RIG_PAGES_H */
