/* pages.c — the free-page stack. */
#include "core/engine/cache/pages.h"

#include <stdlib.h>

enum rig_status rig_pages_init(struct rig_pages *pages, int32_t num_pages, int32_t page_size)
{
    if (num_pages <= 0 || page_size <= 0) return RIG_E_INVALID;
    pages->free_stack = malloc((size_t)num_pages * sizeof *pages->free_stack);
    pages->is_free = malloc((size_t)num_pages * sizeof *pages->is_free);
    if (!pages->free_stack || !pages->is_free) {
        free(pages->free_stack);
        free(pages->is_free);
        return RIG_E_NO_MEMORY;
    }
    pages->num_pages = num_pages;
    pages->page_size = page_size;
    /* Page 0 on top of the stack, so a fresh pool hands out 0, 1, 2, ... */
    for (int32_t i = 0; i < num_pages; i++) {
        pages->free_stack[i] = num_pages - 1 - i;
        pages->is_free[i] = true;
    }
    pages->free_count = num_pages;
    return RIG_OK;
}

void rig_pages_free_all(struct rig_pages *pages)
{
    free(pages->free_stack);
    free(pages->is_free);
    pages->free_stack = NULL;
    pages->is_free = NULL;
    pages->free_count = 0;
}

bool rig_pages_alloc(struct rig_pages *pages, int32_t count, int32_t *out)
{
    RIG_ASSERT(count >= 0);
    if (count > pages->free_count) return false;
    for (int32_t i = 0; i < count; i++) {
        int32_t page = pages->free_stack[--pages->free_count];
        RIG_ASSERT(pages->is_free[page]);
        pages->is_free[page] = false;
        out[i] = page;
    }
    return true;
}

void rig_pages_release(struct rig_pages *pages, int32_t page)
{
    RIG_ASSERT(page >= 0 && page < pages->num_pages);
    RIG_ASSERT_MSG(!pages->is_free[page], "page freed twice");
    RIG_ASSERT(pages->free_count < pages->num_pages);
    pages->is_free[page] = true;
    pages->free_stack[pages->free_count++] = page;
}

void rig_pages_release_slots(struct rig_pages *pages, const int32_t *slots, int32_t count)
{
    RIG_ASSERT(count % pages->page_size == 0);
    for (int32_t i = 0; i < count; i += pages->page_size) {
        RIG_ASSERT(slots[i] % pages->page_size == 0);
        rig_pages_release(pages, slots[i] / pages->page_size);
    }
}
