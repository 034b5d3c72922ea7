/* test_prefill.c — the prefill and decode managers (core/engine/sched/prefill.h, decode.h) on host
 * data, standing in for the scheduler by allocating each chunk's slots and advancing cached_len the
 * way a launch does.
 *
 * Checks: a 10,000-token prompt with a 2048-token budget runs as chunks 2048, 2048, 2048,
 * 2048, 1808 and stays at the head of the queue until the last chunk, the request behind
 * it getting the 240 tokens left of the last budget; admission is blocked by the decode
 * reservation and passes once it shrinks; the second check after locking the matched prefix
 * refuses (and unlocks) a request whose matched pages were the evictable ones it counted on;
 * FIFO order is kept (a small request never overtakes a blocked one); no free row blocks;
 * decode order is admission order whatever the insertion order; the table-write bound
 * stops admission (a row costs its cached prefix plus its chunk plus a page). */
#include <stdint.h>
#include <string.h>

#include "core/engine/cache/cache.h"
#include "core/engine/request.h"
#include "core/engine/sched/decode.h"
#include "core/engine/sched/prefill.h"
#include "core/engine/table.h"
#include "tests/support/test_support.h"

struct fixture {
    struct rig_request_pool pool;
    struct rig_cache cache;
    struct rig_table table;
    struct rig_prefill prefill;
    int32_t prompt[12000];
};

static struct fixture fx;

static void setup(int32_t pages, int32_t rows, int32_t max_seq_len)
{
    assert_int_equal(rig_request_pool_init(&fx.pool, 8, max_seq_len), RIG_OK);
    assert_int_equal(rig_cache_init(&fx.cache, RIG_CACHE_RADIX, pages, 1), RIG_OK);
    assert_int_equal(rig_table_init(&fx.table, rows, max_seq_len, pages), RIG_OK);
    assert_int_equal(rig_prefill_init(&fx.prefill, 8, max_seq_len), RIG_OK);
    for (int32_t i = 0; i < 12000; i++) fx.prompt[i] = 1000 + i;
}

static void teardown(void)
{
    rig_prefill_free(&fx.prefill);
    rig_table_free(&fx.table);
    rig_cache_free(&fx.cache);
    rig_request_pool_free(&fx.pool);
}

static struct rig_request *submit(uint64_t uid, const int32_t *prompt, int32_t len,
                                  int32_t max_tokens)
{
    struct rig_request *r;
    assert_int_equal(rig_request_pool_add(&fx.pool, uid, prompt, len, &r), RIG_OK);
    r->sampling = rig_sampling_default();
    r->sampling.max_tokens = max_tokens;
    r->max_device_len = len + max_tokens;
    assert_int_equal(rig_prefill_push(&fx.prefill, r), RIG_OK);
    return r;
}

/* What the scheduler does at launch: slots for [cached_len, device_len), then advance. */
static void launch(struct rig_request *r)
{
    int32_t n = rig_request_extend_len(r);
    int32_t *row = rig_table_page_row(&fx.table, r->table_idx);
    assert_int_equal(rig_cache_alloc(&fx.cache, n, row + r->cached_len), RIG_OK);
    r->alloc_len = r->device_len;
    r->cached_len = r->device_len;
}

static void test_prefill_chunks_of_long_prompt(void **state)
{
    (void)state;
    setup(16384, 4, 12000);
    struct rig_request *big = submit(1, fx.prompt, 10000, 16);
    struct rig_request *small = submit(2, fx.prompt + 10000, 300, 4);
    const int32_t expect[5] = {2048, 2048, 2048, 2048, 1808};
    struct rig_request *out[8];
    for (int step = 0; step < 5; step++) {
        assert_ptr_equal(fx.prefill.queue[0], big);
        int32_t n = rig_prefill_schedule(&fx.prefill, &fx.cache, &fx.table, 2048, 0, out, 8);
        assert_ptr_equal(out[0], big);
        assert_int_equal(rig_request_extend_len(big), expect[step]);
        assert_int_equal(big->state, RIG_REQUEST_CHUNKED);
        if (step < 4) {
            assert_int_equal(n, 1);
            assert_int_equal(fx.prefill.count, 2);
        } else {
            /* The last chunk leaves 240 tokens of budget: the next request gets a chunk. */
            assert_int_equal(n, 2);
            assert_ptr_equal(out[1], small);
            assert_int_equal(rig_request_extend_len(small), 240);
            assert_int_equal(fx.prefill.count, 1);
            assert_ptr_equal(fx.prefill.queue[0], small);
        }
        for (int32_t i = 0; i < n; i++) launch(out[i]);
    }
    assert_int_equal(big->cached_len, 10000);
    int32_t n = rig_prefill_schedule(&fx.prefill, &fx.cache, &fx.table, 2048, 0, out, 8);
    assert_int_equal(n, 1);
    assert_int_equal(rig_request_extend_len(small), 60);
    assert_int_equal(fx.prefill.count, 0);
    teardown();
}

static void test_prefill_reservation_blocks_admission(void **state)
{
    (void)state;
    setup(64, 4, 256);
    struct rig_request *r = submit(1, fx.prompt, 16, 16);
    struct rig_request *out[4];
    /* 16 + 16 + 40 reserved > 64 available. */
    assert_int_equal(rig_prefill_schedule(&fx.prefill, &fx.cache, &fx.table, 8192, 40, out, 4),
                     0);
    assert_int_equal(r->state, RIG_REQUEST_PENDING);
    assert_int_equal(rig_table_free_count(&fx.table), 4);
    /* A running request finished: 32 reserved leaves exactly room. */
    assert_int_equal(rig_prefill_schedule(&fx.prefill, &fx.cache, &fx.table, 8192, 32, out, 4),
                     1);
    assert_int_equal(r->state, RIG_REQUEST_CHUNKED);
    assert_int_equal(rig_request_extend_len(r), 16);
    teardown();
}

static void test_prefill_second_check_after_lock(void **state)
{
    (void)state;
    setup(40, 4, 256);
    /* Cache a 20-token prefix: 20 slots evictable, 20 free. */
    int32_t slots[20], rewritten[20];
    assert_int_equal(rig_cache_alloc(&fx.cache, 20, slots), RIG_OK);
    struct rig_radix_handle root = {RIG_RADIX_ROOT, 0}, h;
    rig_cache_insert(&fx.cache, fx.prompt, slots, 20, 20, root, true, &h, rewritten);
    assert_int_equal(rig_cache_sizes(&fx.cache).evictable, 20);
    struct rig_request *r = submit(1, fx.prompt, 24, 16); /* matches 20, needs 4 + 16 */
    struct rig_request *out[4];
    /* Before the lock: 20 + 15 <= 40. After it the 20 matched slots are protected: 35 > 20. */
    assert_int_equal(rig_prefill_schedule(&fx.prefill, &fx.cache, &fx.table, 8192, 15, out, 4),
                     0);
    assert_int_equal(r->state, RIG_REQUEST_PENDING);
    assert_int_equal(fx.cache.tree.protected_tokens, 0); /* unlocked again */
    assert_int_equal(rig_table_free_count(&fx.table), 4);
    assert_int_equal(rig_prefill_schedule(&fx.prefill, &fx.cache, &fx.table, 8192, 0, out, 4),
                     1);
    assert_int_equal(r->cached_len, 20);
    assert_int_equal(rig_request_extend_len(r), 4);
    assert_int_equal(fx.cache.tree.protected_tokens, 20);
    assert_memory_equal(rig_table_page_row(&fx.table, r->table_idx), slots, sizeof slots);
    teardown();
}

static void test_prefill_fifo_and_rows(void **state)
{
    (void)state;
    setup(64, 1, 256);
    struct rig_request *big = submit(1, fx.prompt, 60, 16); /* can never fit next to 0 */
    struct rig_request *small = submit(2, fx.prompt + 100, 4, 4);
    struct rig_request *out[4];
    assert_int_equal(rig_prefill_schedule(&fx.prefill, &fx.cache, &fx.table, 8192, 0, out, 4),
                     0);
    assert_int_equal(small->state, RIG_REQUEST_PENDING); /* no overtaking */
    assert_true(rig_prefill_remove(&fx.prefill, big));
    assert_false(rig_prefill_remove(&fx.prefill, big));
    struct rig_request *third = submit(3, fx.prompt + 200, 4, 4);
    assert_int_equal(rig_prefill_schedule(&fx.prefill, &fx.cache, &fx.table, 8192, 0, out, 4),
                     1); /* one row only: the third waits */
    assert_ptr_equal(out[0], small);
    assert_int_equal(third->state, RIG_REQUEST_PENDING);
    assert_int_equal(fx.prefill.count, 1);
    teardown();
}

static void test_prefill_write_bound(void **state)
{
    (void)state;
    setup(256, 4, 256);
    struct rig_request *a = submit(1, fx.prompt, 20, 4);
    struct rig_request *b = submit(2, fx.prompt + 50, 20, 4);
    struct rig_request *out[4];
    /* Admission needs cached + chunk + a page of room (21) and spends the row's 20. */
    fx.prefill.writes_left = 40;
    assert_int_equal(rig_prefill_schedule(&fx.prefill, &fx.cache, &fx.table, 8192, 0, out, 4),
                     1);
    assert_ptr_equal(out[0], a);
    assert_int_equal(fx.prefill.writes_left, 20);
    assert_int_equal(b->state, RIG_REQUEST_PENDING);
    fx.prefill.writes_left = 21;
    assert_int_equal(rig_prefill_schedule(&fx.prefill, &fx.cache, &fx.table, 8192, 0, out, 4),
                     1);
    assert_ptr_equal(out[0], b);
    teardown();
}

static void test_decode_admission_order(void **state)
{
    (void)state;
    struct rig_decode decode;
    assert_int_equal(rig_decode_init(&decode, 4), RIG_OK);
    struct rig_request r[4];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 4; i++) {
        r[i].admit_seq = 10 + i;
        r[i].max_device_len = 20;
        r[i].device_len = 10 + i;
    }
    rig_decode_add(&decode, &r[2]);
    rig_decode_add(&decode, &r[0]);
    rig_decode_add(&decode, &r[3]);
    rig_decode_add(&decode, &r[1]);
    for (int i = 0; i < 4; i++) assert_ptr_equal(decode.running[i], &r[i]);
    assert_int_equal(rig_decode_inflight_tokens(&decode), 10 + 9 + 8 + 7);
    assert_true(rig_decode_remove(&decode, &r[1]));
    assert_false(rig_decode_remove(&decode, &r[1]));
    assert_ptr_equal(decode.running[1], &r[2]);
    assert_false(rig_decode_contains(&decode, &r[1]));
    rig_decode_free(&decode);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefill_chunks_of_long_prompt),
        cmocka_unit_test(test_prefill_reservation_blocks_admission),
        cmocka_unit_test(test_prefill_second_check_after_lock),
        cmocka_unit_test(test_prefill_fifo_and_rows),
        cmocka_unit_test(test_prefill_write_bound),
        cmocka_unit_test(test_decode_admission_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
