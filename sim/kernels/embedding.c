/* embedding.c — token embedding lookup, vocabulary-range aware for TP shards.
 *
 * A shard holds rows [vocab_start, vocab_start + V) of the table. Ids outside that range
 * produce a zero row, so summing the shards of all ranks (the all-reduce after the lookup)
 * gives the full table's row exactly: every id is non-zero on exactly one rank.
 */
#include "sim/kernels.h"

#include "sim/kernels/access.h"

void rig_sim_op_embedding(const struct rig_op_embedding *p)
{
    int64_t tokens = p->out.shape[0];
    int64_t hidden = p->out.shape[1];
    int64_t rows = p->table.shape[0];
    size_t row_bytes = (size_t)hidden * sizeof(uint16_t);
    for (int64_t t = 0; t < tokens; t++) {
        int64_t id = rig_sim_get_i32(&p->ids, t);
        RIG_ASSERT_MSG(id >= 0, "embedding: negative token id");
        uint16_t *out = rig_sim_row_bf16(&p->out, t);
        int64_t local = id - p->vocab_start;
        if (local >= 0 && local < rows) {
            memcpy(out, rig_sim_row_bf16(&p->table, local), row_bytes);
        } else {
            memset(out, 0, row_bytes); /* +0.0 in bf16 is all-zero bits */
        }
    }
}
