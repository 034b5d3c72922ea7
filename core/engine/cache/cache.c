/* cache.c — the KV cache manager over the page allocator and the radix tree. */
#include "core/engine/cache/cache.h"

#include <stdlib.h>
#include <string.h>

#include "core/engine/debug.h"

enum rig_status rig_cache_init(struct rig_cache *cache, enum rig_cache_type type,
                               int32_t num_pages, int32_t page_size)
{
    memset(cache, 0, sizeof *cache);
    if (type != RIG_CACHE_RADIX && type != RIG_CACHE_NAIVE) return RIG_E_INVALID;
    if (num_pages <= 0 || page_size <= 0 || page_size > 64) return RIG_E_INVALID;
    enum rig_status status = rig_pages_init(&cache->pages, num_pages, page_size);
    if (status != RIG_OK) return status;
    status = rig_radix_init(&cache->tree, num_pages, page_size);
    cache->scratch_slots = malloc((size_t)num_pages * (size_t)page_size * sizeof(int32_t));
    cache->scratch_pages = malloc((size_t)num_pages * sizeof(int32_t));
    if (status != RIG_OK || !cache->scratch_slots || !cache->scratch_pages) {
        rig_cache_free(cache);
        return status != RIG_OK ? status : RIG_E_NO_MEMORY;
    }
    cache->type = type;
    cache->num_pages = num_pages;
    cache->page_size = page_size;
    return RIG_OK;
}

void rig_cache_free(struct rig_cache *cache)
{
    if (cache->pages.free_stack) rig_pages_free_all(&cache->pages);
    if (cache->tree.nodes) rig_radix_free(&cache->tree);
    free(cache->scratch_slots);
    free(cache->scratch_pages);
    memset(cache, 0, sizeof *cache);
}

enum rig_status rig_cache_type_parse(const char *name, enum rig_cache_type *out)
{
    if (strcmp(name, "radix") == 0) *out = RIG_CACHE_RADIX;
    else if (strcmp(name, "naive") == 0) *out = RIG_CACHE_NAIVE;
    else return RIG_E_NOT_FOUND;
    return RIG_OK;
}

const char *rig_cache_type_name(enum rig_cache_type type)
{
    return type == RIG_CACHE_RADIX ? "radix" : type == RIG_CACHE_NAIVE ? "naive" : "?";
}

struct rig_cache_sizes rig_cache_sizes(const struct rig_cache *cache)
{
    struct rig_cache_sizes s;
    s.total = (int64_t)cache->num_pages * cache->page_size;
    s.free = (int64_t)rig_pages_free_count(&cache->pages) * cache->page_size;
    s.evictable = cache->tree.evictable_tokens;
    s.protected_ = cache->tree.protected_tokens;
    s.owned = s.total - s.free - s.evictable - s.protected_;
    return s;
}

int64_t rig_cache_available(const struct rig_cache *cache)
{
    return (int64_t)rig_pages_free_count(&cache->pages) * cache->page_size +
           cache->tree.evictable_tokens;
}

struct rig_radix_handle rig_cache_match(struct rig_cache *cache, const int32_t *prompt,
                                        int32_t len, int32_t *slots_out)
{
    RIG_ASSERT(len > 0);
    struct rig_radix_handle root = {RIG_RADIX_ROOT, 0};
    if (cache->type == RIG_CACHE_NAIVE) return root;
    return rig_radix_match(&cache->tree, prompt, len - 1, slots_out);
}

void rig_cache_lock(struct rig_cache *cache, struct rig_radix_handle handle)
{
    if (cache->type == RIG_CACHE_RADIX) rig_radix_lock(&cache->tree, handle);
}

void rig_cache_unlock(struct rig_cache *cache, struct rig_radix_handle handle)
{
    if (cache->type == RIG_CACHE_RADIX) rig_radix_unlock(&cache->tree, handle);
}

enum rig_status rig_cache_alloc(struct rig_cache *cache, int32_t count, int32_t *slots_out)
{
    RIG_ASSERT(count >= 0);
    int32_t ps = cache->page_size;
    int32_t free_pages = rig_pages_free_count(&cache->pages);
    if ((int64_t)count * ps > rig_cache_available(cache)) return RIG_E_CAPACITY;
    if (count > free_pages) {
        int32_t evicted = rig_radix_evict(&cache->tree, (count - free_pages) * ps,
                                          cache->scratch_slots);
        RIG_ASSERT(evicted >= (count - free_pages) * ps);
        cache->evictions += evicted;
        rig_pages_release_slots(&cache->pages, cache->scratch_slots, evicted);
    }
    bool ok = rig_pages_alloc(&cache->pages, count, cache->scratch_pages);
    RIG_ASSERT(ok);
    for (int32_t i = 0; i < count; i++)
        for (int32_t j = 0; j < ps; j++) slots_out[i * ps + j] = cache->scratch_pages[i] * ps + j;
    return RIG_OK;
}

int64_t rig_cache_flush(struct rig_cache *cache)
{
    int64_t tokens = cache->tree.evictable_tokens;
    RIG_ASSERT(tokens >= 0 && tokens <= (int64_t)cache->num_pages * cache->page_size);
    if (tokens == 0) return 0;
    int32_t evicted = rig_radix_evict(&cache->tree, (int32_t)tokens, cache->scratch_slots);
    RIG_ASSERT(evicted == tokens);
    cache->evictions += evicted;
    rig_pages_release_slots(&cache->pages, cache->scratch_slots, evicted);
    return evicted;
}

void rig_cache_release(struct rig_cache *cache, const int32_t *slots, int32_t count)
{
    rig_pages_release_slots(&cache->pages, slots, count);
}

/* Frees the pages of row[from, to) (page-aligned bounds). */
static void rig__cache_release_range(struct rig_cache *cache, const int32_t *row, int32_t from,
                                     int32_t to)
{
    if (to > from) rig_pages_release_slots(&cache->pages, row + from, to - from);
}

int32_t rig_cache_insert(struct rig_cache *cache, const int32_t *tokens, int32_t *row,
                         int32_t cached_len, int32_t alloc_len,
                         struct rig_radix_handle handle, bool finished,
                         struct rig_radix_handle *handle_out, int32_t *rewritten)
{
    int32_t ps = cache->page_size;
    int32_t alloc_end = (alloc_len + ps - 1) / ps * ps;
    RIG_ASSERT(cached_len <= alloc_len && handle.cached_len <= cached_len);
    if (cache->type == RIG_CACHE_NAIVE) {
        if (finished) rig__cache_release_range(cache, row, 0, alloc_end);
        else *handle_out = handle;
        return 0;
    }
    int32_t insert_len = cached_len / ps * ps;
    struct rig_radix_handle fresh;
    int32_t prefix = rig_radix_insert(&cache->tree, tokens, row, insert_len, &fresh);
    /* Positions [handle.cached_len, prefix) were cached by someone else meanwhile: point the
     * row at the tree's slots, then free ours (a page at a time). */
    int32_t count = 0;
    if (prefix > handle.cached_len) {
        struct rig_radix_handle again = rig_radix_match(&cache->tree, tokens, insert_len,
                                                        cache->scratch_slots);
        RIG_ASSERT(again.node == fresh.node && again.cached_len == insert_len);
        for (int32_t pos = handle.cached_len; pos < prefix; pos += ps) {
            RIG_ASSERT(row[pos] != cache->scratch_slots[pos]);
            bool plant = rig_plant_on(cache->plant, RIG_PLANT_FREE_SHARED_PAGE);
            int32_t freed = plant ? cache->scratch_slots[pos] : row[pos];
            rig_pages_release(&cache->pages, freed / ps);
            for (int32_t j = 0; j < ps; j++) {
                row[pos + j] = cache->scratch_slots[pos + j];
                rewritten[count++] = pos + j;
            }
        }
    }
    if (!(finished && rig_plant_on(cache->plant, RIG_PLANT_SKIP_UNLOCK)))
        rig_radix_unlock(&cache->tree, handle);
    if (finished) {
        rig__cache_release_range(cache, row, insert_len, alloc_end);
    } else {
        rig_radix_lock(&cache->tree, fresh);
        *handle_out = fresh;
    }
    return count;
}
