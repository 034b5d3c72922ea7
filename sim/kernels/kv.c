/* kv.c — writes the new tokens' K and V into the paged KV cache at their slots.
 *
 * k and v are usually strided views into the fused qkv projection output, so each head is
 * copied on its own. Slots come from the cache manager; one outside the cache is a bug.
 */
#include "sim/kernels.h"

#include "sim/kernels/access.h"

void rig_sim_op_store_kv(const struct rig_op_store_kv *p)
{
    int64_t tokens = p->k.shape[0];
    int64_t heads_kv = p->k.shape[1];
    size_t head_bytes = (size_t)p->k.shape[2] * sizeof(uint16_t);
    int64_t slots = p->k_cache.shape[0];
    for (int64_t t = 0; t < tokens; t++) {
        int64_t slot = rig_sim_get_i32(&p->out_loc, t);
        RIG_ASSERT_MSG(slot >= 0 && slot < slots, "store_kv: slot outside the KV cache");
        for (int64_t h = 0; h < heads_kv; h++) {
            memcpy(rig_sim_vec_bf16(&p->k_cache, slot, h), rig_sim_vec_bf16(&p->k, t, h),
                   head_bytes);
            memcpy(rig_sim_vec_bf16(&p->v_cache, slot, h), rig_sim_vec_bf16(&p->v, t, h),
                   head_bytes);
        }
    }
}
