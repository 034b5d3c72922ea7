/* table.c — rows of the page table and token pool. */
#include "core/engine/table.h"

#include <stdlib.h>
#include <string.h>

enum rig_status rig_table_init(struct rig_table *table, int32_t max_running_req,
                               int32_t max_seq_len, int32_t dummy_slot)
{
    memset(table, 0, sizeof *table);
    if (max_running_req <= 0 || max_seq_len <= 0 || dummy_slot < 0) return RIG_E_INVALID;
    int32_t rows = max_running_req + 1;
    size_t cells = (size_t)rows * (size_t)max_seq_len;
    table->page_table = malloc(cells * sizeof(int32_t));
    table->token_pool = calloc(cells, sizeof(int32_t));
    table->free_rows = malloc((size_t)max_running_req * sizeof(int32_t));
    table->row_used = calloc((size_t)rows, sizeof(bool));
    if (!table->page_table || !table->token_pool || !table->free_rows || !table->row_used) {
        rig_table_free(table);
        return RIG_E_NO_MEMORY;
    }
    for (size_t i = 0; i < cells; i++) table->page_table[i] = dummy_slot;
    for (int32_t i = 0; i < max_running_req; i++) table->free_rows[i] = max_running_req - 1 - i;
    table->rows = rows;
    table->max_seq_len = max_seq_len;
    table->dummy_slot = dummy_slot;
    table->free_count = max_running_req;
    return RIG_OK;
}

void rig_table_free(struct rig_table *table)
{
    free(table->page_table);
    free(table->token_pool);
    free(table->free_rows);
    free(table->row_used);
    memset(table, 0, sizeof *table);
}

int32_t rig_table_alloc(struct rig_table *table)
{
    if (table->free_count == 0) return -1;
    int32_t row = table->free_rows[--table->free_count];
    RIG_ASSERT(row >= 0 && row < rig_table_dummy_row(table));
    RIG_ASSERT(!table->row_used[row]);
    table->row_used[row] = true;
    return row;
}

void rig_table_release(struct rig_table *table, int32_t row)
{
    RIG_ASSERT(row >= 0 && row < rig_table_dummy_row(table));
    RIG_ASSERT_MSG(table->row_used[row], "table row released twice");
    table->row_used[row] = false;
    int32_t *entries = rig_table_page_row(table, row);
    for (int32_t i = 0; i < table->max_seq_len; i++) entries[i] = table->dummy_slot;
    RIG_ASSERT(table->free_count < table->rows - 1);
    table->free_rows[table->free_count++] = row;
}
