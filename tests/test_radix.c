/* test_radix.c — the radix prefix cache (core/engine/cache/radix.h) and the cache manager over it
 * (core/engine/cache/cache.h), on host data only.
 *
 * Checks, with exact numbers: inserting a 31-token sequence over a cached 16-token prefix
 * gives two nodes (16 + 15 tokens); matching 15 of them splits the first node (15 | 1); a
 * prompt sharing 12 tokens splits again at 12; matched slots come back in order; a second
 * insert of an existing prefix reports it as already cached. Locks protect paths (sizes
 * move between evictable and protected), eviction takes unlocked leaves in LRU order and
 * never a locked node; page size 4 matches whole pages only. The cache manager's insert
 * frees duplicate pages and rewrites the row to the tree's slots (the Python original's
 * defect), and allocation evicts when the free list is short. rig_radix_check finds no
 * violation after every operation and does find a planted one. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/engine/cache/cache.h"
#include "core/engine/cache/radix.h"
#include "tests/support/test_support.h"

static void check_clean(struct rig_radix *tree)
{
    assert_int_equal(rig_radix_check(tree, NULL, NULL), 0);
}

static void seq(int32_t *out, int32_t n, int32_t base)
{
    for (int32_t i = 0; i < n; i++) out[i] = base + i;
}

static void test_radix_seed_shapes(void **state)
{
    (void)state;
    struct rig_radix tree;
    assert_int_equal(rig_radix_init(&tree, 64, 1), RIG_OK);
    int32_t tokens[32], slots[32], got[32];
    seq(tokens, 32, 100);
    seq(slots, 32, 0);
    struct rig_radix_handle h;
    assert_int_equal(rig_radix_insert(&tree, tokens, slots, 16, &h), 0);
    assert_int_equal(h.cached_len, 16);
    assert_int_equal(rig_radix_insert(&tree, tokens, slots, 31, &h), 16);
    assert_int_equal(tree.live_nodes, 3); /* root + 16 + 15 */
    assert_int_equal(tree.evictable_tokens, 31);
    check_clean(&tree);
    /* The identical prompt matches input_ids[:15]: the 16-token node splits 15 | 1. */
    struct rig_radix_handle m = rig_radix_match(&tree, tokens, 15, got);
    assert_int_equal(m.cached_len, 15);
    for (int32_t i = 0; i < 15; i++) assert_int_equal(got[i], i);
    assert_int_equal(tree.live_nodes, 4);
    assert_int_equal(tree.nodes[m.node].length, 15);
    check_clean(&tree);
    /* A prompt sharing its first 12 tokens matches 12: the 15-token node splits 12 | 3. */
    int32_t other[16];
    memcpy(other, tokens, sizeof other);
    for (int32_t i = 12; i < 16; i++) other[i] = 900 + i;
    m = rig_radix_match(&tree, other, 15, got);
    assert_int_equal(m.cached_len, 12);
    assert_int_equal(tree.live_nodes, 5);
    assert_int_equal(tree.evictable_tokens, 31);
    check_clean(&tree);
    /* No match at all. */
    int32_t none[4] = {1, 2, 3, 4};
    m = rig_radix_match(&tree, none, 4, got);
    assert_int_equal(m.cached_len, 0);
    assert_int_equal(m.node, RIG_RADIX_ROOT);
    rig_radix_free(&tree);
}

static void test_radix_lock_and_lru_eviction(void **state)
{
    (void)state;
    struct rig_radix tree;
    assert_int_equal(rig_radix_init(&tree, 64, 1), RIG_OK);
    int32_t a[8], b[8], c[8], slots[8], out[64];
    seq(a, 8, 10);
    seq(b, 8, 20);
    seq(c, 8, 30);
    struct rig_radix_handle ha, hb, hc;
    seq(slots, 8, 0);
    rig_radix_insert(&tree, a, slots, 8, &ha);
    seq(slots, 8, 8);
    rig_radix_insert(&tree, b, slots, 8, &hb);
    seq(slots, 8, 16);
    rig_radix_insert(&tree, c, slots, 8, &hc);
    /* Touch a: now b is the least recently used, then c, then a. */
    rig_radix_match(&tree, a, 8, NULL);
    rig_radix_lock(&tree, hb); /* b is locked: it must survive */
    assert_int_equal(tree.protected_tokens, 8);
    assert_int_equal(tree.evictable_tokens, 16);
    check_clean(&tree);
    int32_t freed = rig_radix_evict(&tree, 1, out);
    assert_int_equal(freed, 8); /* whole node c */
    assert_int_equal(out[0], 16);
    freed = rig_radix_evict(&tree, 100, out); /* everything evictable: a */
    assert_int_equal(freed, 8);
    assert_int_equal(out[0], 0);
    assert_int_equal(tree.evictable_tokens, 0);
    assert_int_equal(tree.live_nodes, 2);
    check_clean(&tree);
    rig_radix_unlock(&tree, hb);
    assert_int_equal(tree.evictable_tokens, 8);
    assert_int_equal(rig_radix_evict(&tree, 8, out), 8);
    assert_int_equal(out[0], 8);
    check_clean(&tree);
    rig_radix_free(&tree);
}

static void test_radix_evicts_leaf_then_parent(void **state)
{
    (void)state;
    struct rig_radix tree;
    assert_int_equal(rig_radix_init(&tree, 64, 1), RIG_OK);
    int32_t t[10], slots[10], out[64];
    seq(t, 10, 50);
    seq(slots, 10, 0);
    struct rig_radix_handle h;
    rig_radix_insert(&tree, t, slots, 4, &h);
    rig_radix_insert(&tree, t, slots, 10, &h); /* parent 4, leaf 6 */
    assert_int_equal(rig_radix_evict(&tree, 7, out), 10); /* leaf, then the parent */
    assert_int_equal(out[0], 4);
    assert_int_equal(out[6], 0);
    assert_int_equal(tree.live_nodes, 1);
    check_clean(&tree);
    rig_radix_free(&tree);
}

static void test_radix_page_size_four(void **state)
{
    (void)state;
    struct rig_radix tree;
    assert_int_equal(rig_radix_init(&tree, 16, 4), RIG_OK);
    int32_t t[12], slots[12], got[12];
    seq(t, 12, 70);
    seq(slots, 12, 20);
    struct rig_radix_handle h;
    assert_int_equal(rig_radix_insert(&tree, t, slots, 12, &h), 0);
    int32_t q[12];
    memcpy(q, t, sizeof q);
    q[6] = 1; /* differs inside the second page */
    struct rig_radix_handle m = rig_radix_match(&tree, q, 12, got);
    assert_int_equal(m.cached_len, 4); /* whole pages only */
    assert_int_equal(got[3], 23);
    q[2] = 1; /* differs inside the first page: nothing */
    m = rig_radix_match(&tree, q, 12, got);
    assert_int_equal(m.cached_len, 0);
    check_clean(&tree);
    rig_radix_free(&tree);
}

static void count_report(void *ctx, const char *msg)
{
    (void)msg;
    (*(int *)ctx)++;
}

static void test_radix_check_finds_corruption(void **state)
{
    (void)state;
    struct rig_radix tree;
    assert_int_equal(rig_radix_init(&tree, 8, 1), RIG_OK);
    int32_t t[4] = {1, 2, 3, 4}, slots[4] = {0, 1, 2, 3};
    struct rig_radix_handle h;
    rig_radix_insert(&tree, t, slots, 4, &h);
    tree.evictable_tokens += 1;
    int reports = 0;
    assert_int_equal(rig_radix_check(&tree, count_report, &reports), 1);
    assert_int_equal(reports, 1);
    tree.evictable_tokens -= 1;
    tree.slot_next[1] = 3; /* skips slot 2: wrong chain length */
    assert_true(rig_radix_check(&tree, NULL, NULL) > 0);
    rig_radix_free(&tree);
}

static void test_cache_insert_rewrites_duplicates(void **state)
{
    (void)state;
    struct rig_cache cache;
    assert_int_equal(rig_cache_init(&cache, RIG_CACHE_RADIX, 32, 1), RIG_OK);
    int32_t tokens[8];
    seq(tokens, 8, 300);
    int32_t row_a[8], row_b[8], rewritten[8];
    /* Two requests with the same prompt prefilled side by side, nothing cached before. */
    assert_int_equal(rig_cache_alloc(&cache, 8, row_a), RIG_OK);
    assert_int_equal(rig_cache_alloc(&cache, 8, row_b), RIG_OK);
    assert_int_equal(rig_cache_sizes(&cache).free, 16);
    struct rig_radix_handle root = {RIG_RADIX_ROOT, 0}, ha, hb;
    assert_int_equal(rig_cache_insert(&cache, tokens, row_a, 8, 8, root, false, &ha, rewritten),
                     0);
    assert_int_equal(cache.tree.protected_tokens, 8);
    /* b's 8 pages duplicate a's: freed, and b's row now names a's slots. */
    int32_t n = rig_cache_insert(&cache, tokens, row_b, 8, 8, root, false, &hb, rewritten);
    assert_int_equal(n, 8);
    assert_memory_equal(row_a, row_b, sizeof row_a);
    assert_int_equal(rig_cache_sizes(&cache).free, 24);
    assert_int_equal(cache.tree.nodes[ha.node].ref_count, 2);
    check_clean(&cache.tree);
    /* Both finish: nothing more to free, the tree keeps the 8 pages, evictable. */
    rig_cache_insert(&cache, tokens, row_a, 8, 8, ha, true, NULL, rewritten);
    rig_cache_insert(&cache, tokens, row_b, 8, 8, hb, true, NULL, rewritten);
    struct rig_cache_sizes s = rig_cache_sizes(&cache);
    assert_int_equal(s.free, 24);
    assert_int_equal(s.evictable, 8);
    assert_int_equal(s.owned, 0);
    /* Allocating all 32 pages evicts the cached 8. */
    int32_t all[32];
    assert_int_equal(rig_cache_alloc(&cache, 33, all), RIG_E_CAPACITY);
    assert_int_equal(rig_cache_sizes(&cache).evictable, 8); /* unchanged on failure */
    assert_int_equal(rig_cache_alloc(&cache, 32, all), RIG_OK);
    assert_int_equal(cache.evictions, 8);
    check_clean(&cache.tree);
    rig_cache_free(&cache);
}

static void test_cache_naive_never_reuses(void **state)
{
    (void)state;
    struct rig_cache cache;
    assert_int_equal(rig_cache_init(&cache, RIG_CACHE_NAIVE, 16, 1), RIG_OK);
    int32_t tokens[8], row[8], rewritten[8];
    seq(tokens, 8, 1);
    assert_int_equal(rig_cache_alloc(&cache, 8, row), RIG_OK);
    struct rig_radix_handle root = {RIG_RADIX_ROOT, 0}, h;
    rig_cache_insert(&cache, tokens, row, 8, 8, root, false, &h, rewritten);
    assert_int_equal(rig_cache_sizes(&cache).owned, 8);
    rig_cache_insert(&cache, tokens, row, 7, 8, h, true, NULL, rewritten);
    assert_int_equal(rig_cache_sizes(&cache).free, 16);
    assert_int_equal(rig_cache_match(&cache, tokens, 8, row).cached_len, 0);
    enum rig_cache_type type;
    assert_int_equal(rig_cache_type_parse("naive", &type), RIG_OK);
    assert_int_equal(type, RIG_CACHE_NAIVE);
    assert_int_equal(rig_cache_type_parse("lru", &type), RIG_E_NOT_FOUND);
    rig_cache_free(&cache);
    assert_int_equal(rig_cache_init(&cache, RIG_CACHE_RADIX, 0, 1), RIG_E_INVALID);
    assert_int_equal(rig_cache_init(&cache, RIG_CACHE_RADIX, 4, 0), RIG_E_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_radix_seed_shapes),
        cmocka_unit_test(test_radix_lock_and_lru_eviction),
        cmocka_unit_test(test_radix_evicts_leaf_then_parent),
        cmocka_unit_test(test_radix_page_size_four),
        cmocka_unit_test(test_radix_check_finds_corruption),
        cmocka_unit_test(test_cache_insert_rewrites_duplicates),
        cmocka_unit_test(test_cache_naive_never_reuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
