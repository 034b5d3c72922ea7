/* test_table.c — the table manager (core/engine/table.h) and the request pool
 * (core/engine/request.h).
 *
 * Table: rows come out lowest first, the dummy row is never handed out, releasing resets a
 * row's page-table entries to the dummy slot, a full table returns -1, invalid sizes fail.
 * Request pool: uids are found and removed, a duplicate uid / empty or too long prompt /
 * full pool are refused without changing anything, lengths start as documented. */
#include <stdint.h>
#include <string.h>

#include "core/engine/request.h"
#include "core/engine/table.h"
#include "tests/support/test_support.h"

static void test_table_rows(void **state)
{
    (void)state;
    struct rig_table table;
    assert_int_equal(rig_table_init(&table, 3, 8, 99), RIG_OK);
    assert_int_equal(table.rows, 4);
    assert_int_equal(rig_table_dummy_row(&table), 3);
    assert_int_equal(rig_table_page_row(&table, 3)[7], 99);
    assert_int_equal(rig_table_alloc(&table), 0);
    assert_int_equal(rig_table_alloc(&table), 1);
    assert_int_equal(rig_table_alloc(&table), 2);
    assert_int_equal(rig_table_alloc(&table), -1); /* full: the dummy row is never given */
    rig_table_page_row(&table, 1)[2] = 5;
    rig_table_release(&table, 1);
    assert_int_equal(rig_table_page_row(&table, 1)[2], 99);
    assert_int_equal(rig_table_free_count(&table), 1);
    assert_int_equal(rig_table_alloc(&table), 1);
    rig_table_free(&table);
    assert_int_equal(rig_table_init(&table, 0, 8, 0), RIG_E_INVALID);
    assert_int_equal(rig_table_init(&table, 2, 0, 0), RIG_E_INVALID);
}

static void test_request_pool(void **state)
{
    (void)state;
    struct rig_request_pool pool;
    assert_int_equal(rig_request_pool_init(&pool, 2, 8), RIG_OK);
    int32_t prompt[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    struct rig_request *a, *b, *c;
    assert_int_equal(rig_request_pool_add(&pool, 42, prompt, 3, &a), RIG_OK);
    assert_int_equal(a->state, RIG_REQUEST_PENDING);
    assert_int_equal(a->input_len, 3);
    assert_int_equal(a->tokens[2], 3);
    assert_int_equal(a->table_idx, -1);
    assert_int_equal(a->first_token_ns, -1);
    assert_int_equal(rig_request_pool_add(&pool, 42, prompt, 3, &b), RIG_E_INVALID);
    assert_int_equal(rig_request_pool_add(&pool, 43, prompt, 0, &b), RIG_E_INVALID);
    assert_int_equal(rig_request_pool_add(&pool, 43, prompt, 9, &b), RIG_E_INVALID);
    assert_int_equal(rig_request_pool_add(&pool, 43, prompt, 8, &b), RIG_OK);
    assert_int_equal(rig_request_pool_add(&pool, 44, prompt, 1, &c), RIG_E_CAPACITY);
    assert_ptr_equal(rig_request_pool_find(&pool, 43), b);
    rig_request_pool_remove(&pool, a);
    assert_null(rig_request_pool_find(&pool, 42));
    assert_int_equal(rig_request_pool_add(&pool, 44, prompt, 1, &c), RIG_OK);
    assert_ptr_equal(c, a); /* the slot is reused */
    assert_string_equal(rig_request_end_name(RIG_END_STOP_TOKEN), "stop_token");
    assert_string_equal(rig_request_state_name(RIG_REQUEST_CHUNKED), "chunked");
    rig_request_pool_free(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_rows),
        cmocka_unit_test(test_request_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
