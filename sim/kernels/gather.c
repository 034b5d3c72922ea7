/* gather.c — row gather (last position of each request) and the token pool's flat i32
 * gather / scatter. Index values are asserted in range: they come from the engine's own
 * metadata, so one outside its array is a bug.
 */
#include "sim/kernels.h"

#include "sim/kernels/access.h"

void rig_sim_op_gather_rows(const struct rig_op_gather_rows *p)
{
    int64_t rows = p->out.shape[0];
    int64_t in_rows = p->in.shape[0];
    size_t row_bytes = (size_t)p->out.shape[1] * rig_dtype_size(p->out.dtype);
    RIG_ASSERT(p->in.dtype == p->out.dtype);
    for (int64_t r = 0; r < rows; r++) {
        int64_t source = rig_sim_get_i32(&p->idx, r);
        RIG_ASSERT_MSG(source >= 0 && source < in_rows, "gather_rows: index out of range");
        memcpy(rig_sim_addr(&p->out, r, 0), rig_sim_addr(&p->in, source, 0), row_bytes);
    }
}

void rig_sim_op_index_gather(const struct rig_op_index_gather *p)
{
    int64_t count = p->out.shape[0];
    int64_t source_count = p->src.shape[0];
    for (int64_t n = 0; n < count; n++) {
        int64_t index = rig_sim_get_i32(&p->idx, n);
        RIG_ASSERT_MSG(index >= 0 && index < source_count, "index_gather: index out of range");
        *rig_sim_ptr_i32(&p->out, n) = rig_sim_get_i32(&p->src, index);
    }
}

void rig_sim_op_index_scatter(const struct rig_op_index_scatter *p)
{
    int64_t count = p->src.shape[0];
    int64_t destination_count = p->dst.shape[0];
    for (int64_t n = 0; n < count; n++) {
        int64_t index = rig_sim_get_i32(&p->idx, n);
        RIG_ASSERT_MSG(index >= 0 && index < destination_count,
                       "index_scatter: index out of range");
        *rig_sim_ptr_i32(&p->dst, index) = rig_sim_get_i32(&p->src, n);
    }
}
