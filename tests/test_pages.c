/* test_pages.c — the KV page allocator (core/engine/cache/pages.h) and the hash multimap behind the
 * radix tree and uid lookups (core/engine/cache/keymap.h).
 *
 * Pages: a fresh pool hands out 0, 1, 2, ... in order; an allocation larger than what is
 * free fails and changes nothing; freed pages are reused last-freed-first; slot runs of a
 * page size > 1 map back to their pages; invalid sizes are rejected.
 * Keymap: many entries with colliding keys are found, removed and re-found after backward
 * shift deletion, compared against a brute-force model on a seeded random workload. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/engine/cache/keymap.h"
#include "core/engine/cache/pages.h"
#include "tests/support/test_support.h"

static void test_pages_order_and_exhaustion(void **state)
{
    (void)state;
    struct rig_pages pages;
    assert_int_equal(rig_pages_init(&pages, 4, 1), RIG_OK);
    int32_t got[4];
    assert_true(rig_pages_alloc(&pages, 3, got));
    assert_int_equal(got[0], 0);
    assert_int_equal(got[1], 1);
    assert_int_equal(got[2], 2);
    assert_int_equal(rig_pages_free_count(&pages), 1);
    assert_false(rig_pages_alloc(&pages, 2, got)); /* only one left: nothing changes */
    assert_int_equal(rig_pages_free_count(&pages), 1);
    rig_pages_release(&pages, 1);
    assert_int_equal(rig_pages_free_count(&pages), 2);
    assert_true(rig_pages_alloc(&pages, 1, got));
    assert_int_equal(got[0], 1); /* last freed, first reused */
    assert_true(rig_pages_alloc(&pages, 1, got));
    assert_int_equal(got[0], 3);
    assert_int_equal(rig_pages_free_count(&pages), 0);
    rig_pages_free_all(&pages);
}

static void test_pages_slots_with_page_size(void **state)
{
    (void)state;
    struct rig_pages pages;
    assert_int_equal(rig_pages_init(&pages, 3, 4), RIG_OK);
    int32_t got[3];
    assert_true(rig_pages_alloc(&pages, 3, got));
    int32_t slots[8] = {8, 9, 10, 11, 0, 1, 2, 3}; /* pages 2 and 0 */
    rig_pages_release_slots(&pages, slots, 8);
    assert_int_equal(rig_pages_free_count(&pages), 2);
    assert_true(rig_pages_alloc(&pages, 2, got));
    assert_int_equal(got[0], 0);
    assert_int_equal(got[1], 2);
    rig_pages_free_all(&pages);
}

static void test_pages_invalid(void **state)
{
    (void)state;
    struct rig_pages pages;
    assert_int_equal(rig_pages_init(&pages, 0, 1), RIG_E_INVALID);
    assert_int_equal(rig_pages_init(&pages, 4, 0), RIG_E_INVALID);
}

static void test_keymap_model(void **state)
{
    (void)state;
    enum { N = 500 };
    struct rig_keymap map;
    assert_int_equal(rig_keymap_init(&map, N), RIG_OK);
    static uint64_t keys[N];
    static bool present[N];
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 7);
    for (int i = 0; i < N; i++) keys[i] = (uint64_t)rig_test_rng_int(&rng, 0, 40); /* collide */
    for (int round = 0; round < 20000; round++) {
        int i = (int)rig_test_rng_int(&rng, 0, N - 1);
        if (present[i]) {
            assert_true(rig_keymap_remove(&map, keys[i], i));
            assert_false(rig_keymap_remove(&map, keys[i], i));
        } else {
            rig_keymap_put(&map, keys[i], i);
        }
        present[i] = !present[i];
        int j = (int)rig_test_rng_int(&rng, 0, N - 1);
        int64_t cursor = -1;
        bool found = false;
        for (int32_t v; (v = rig_keymap_next(&map, keys[j], &cursor)) >= 0;) {
            assert_int_equal(keys[v], keys[j]);
            assert_true(present[v]);
            found |= v == j;
        }
        assert_int_equal(found, present[j]);
    }
    int64_t count = 0;
    for (int i = 0; i < N; i++) count += present[i];
    assert_int_equal(map.count, count);
    assert_int_equal(rig_keymap_get(&map, 1000), -1);
    rig_keymap_free(&map);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_order_and_exhaustion),
        cmocka_unit_test(test_pages_slots_with_page_size),
        cmocka_unit_test(test_pages_invalid),
        cmocka_unit_test(test_keymap_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
