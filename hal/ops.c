/* ops.c — generic access to the tensor arguments of any op (hal/ops.h, rig_op_tensors). */
#include <stddef.h>

#include "hal/ops.h"
#include "hal/status.h"

#define RIG__AT(field) offsetof(struct rig_op, u.field)

/* Where each op kind keeps its tensor arguments (absent optional ones included); a list ends
 * at the first 0 (no tensor sits at offset 0: the kind does). The order is the order of the
 * fields in hal/ops.h; callers may rely on it (the simulator reads SAMPLE's by position). */
static const size_t rig__tensor_offsets[RIG_OP_COUNT][RIG_OP_TENSORS_MAX] = {
    [RIG_OP_EMBEDDING] = {RIG__AT(embedding.out), RIG__AT(embedding.table), RIG__AT(embedding.ids)},
    [RIG_OP_RMS_NORM] = {RIG__AT(rms_norm.out), RIG__AT(rms_norm.in), RIG__AT(rms_norm.weight)},
    [RIG_OP_ADD_RMS_NORM] = {RIG__AT(add_rms_norm.out), RIG__AT(add_rms_norm.residual),
                             RIG__AT(add_rms_norm.in), RIG__AT(add_rms_norm.weight)},
    [RIG_OP_GEMM] = {RIG__AT(gemm.out), RIG__AT(gemm.a), RIG__AT(gemm.b), RIG__AT(gemm.bias),
                     RIG__AT(gemm.operand), RIG__AT(gemm.norm_weight)},
    [RIG_OP_HEAD_RMS_NORM] = {RIG__AT(head_rms_norm.x), RIG__AT(head_rms_norm.weight)},
    [RIG_OP_ROPE] = {RIG__AT(rope.q), RIG__AT(rope.k), RIG__AT(rope.positions)},
    [RIG_OP_STORE_KV] = {RIG__AT(store_kv.k_cache), RIG__AT(store_kv.v_cache), RIG__AT(store_kv.k),
                         RIG__AT(store_kv.v), RIG__AT(store_kv.out_loc)},
    [RIG_OP_QK_NORM_ROPE_STORE] = {RIG__AT(qk_norm_rope_store.q), RIG__AT(qk_norm_rope_store.k),
                                   RIG__AT(qk_norm_rope_store.v),
                                   RIG__AT(qk_norm_rope_store.k_cache),
                                   RIG__AT(qk_norm_rope_store.v_cache),
                                   RIG__AT(qk_norm_rope_store.q_norm),
                                   RIG__AT(qk_norm_rope_store.k_norm),
                                   RIG__AT(qk_norm_rope_store.positions),
                                   RIG__AT(qk_norm_rope_store.out_loc)},
    [RIG_OP_ATTENTION_PREFILL] = {RIG__AT(attention_prefill.out), RIG__AT(attention_prefill.q),
                                  RIG__AT(attention_prefill.k_cache),
                                  RIG__AT(attention_prefill.v_cache),
                                  RIG__AT(attention_prefill.page_table),
                                  RIG__AT(attention_prefill.table_idx),
                                  RIG__AT(attention_prefill.cu_q),
                                  RIG__AT(attention_prefill.kv_len)},
    [RIG_OP_ATTENTION_DECODE] = {RIG__AT(attention_decode.out), RIG__AT(attention_decode.q),
                                 RIG__AT(attention_decode.k_cache),
                                 RIG__AT(attention_decode.v_cache),
                                 RIG__AT(attention_decode.page_table),
                                 RIG__AT(attention_decode.table_idx),
                                 RIG__AT(attention_decode.kv_len)},
    [RIG_OP_SILU_MUL] = {RIG__AT(silu_mul.out), RIG__AT(silu_mul.in)},
    [RIG_OP_GATHER_ROWS] = {RIG__AT(gather_rows.out), RIG__AT(gather_rows.in),
                            RIG__AT(gather_rows.idx)},
    [RIG_OP_INDEX_GATHER] = {RIG__AT(index_gather.out), RIG__AT(index_gather.src),
                             RIG__AT(index_gather.idx)},
    [RIG_OP_INDEX_SCATTER] = {RIG__AT(index_scatter.dst), RIG__AT(index_scatter.src),
                              RIG__AT(index_scatter.idx)},
    [RIG_OP_SAMPLE] = {RIG__AT(sample.tokens), RIG__AT(sample.logits), RIG__AT(sample.temperature),
                       RIG__AT(sample.top_k), RIG__AT(sample.top_p), RIG__AT(sample.seed),
                       RIG__AT(sample.position), RIG__AT(sample.min_p),
                       RIG__AT(sample.checked)},
    [RIG_OP_COPY] = {RIG__AT(copy.out), RIG__AT(copy.in)},
    [RIG_OP_ALL_REDUCE] = {RIG__AT(all_reduce.data)},
    [RIG_OP_ALL_GATHER] = {RIG__AT(all_gather.out), RIG__AT(all_gather.in)},
    [RIG_OP_PENALIZE] = {RIG__AT(penalize.logits), RIG__AT(penalize.counts),
                         RIG__AT(penalize.token_pool), RIG__AT(penalize.table_idx),
                         RIG__AT(penalize.kv_len), RIG__AT(penalize.out_len),
                         RIG__AT(penalize.repetition), RIG__AT(penalize.frequency),
                         RIG__AT(penalize.presence)},
    [RIG_OP_LOGPROBS] = {RIG__AT(logprobs.logprob), RIG__AT(logprobs.top_ids),
                         RIG__AT(logprobs.top_logprobs), RIG__AT(logprobs.logits),
                         RIG__AT(logprobs.temperature), RIG__AT(logprobs.tokens)},
    /* store's, then attend's: q and the caches twice (the same views), so that code which
     * remaps every tensor (tests/test_cuda_ops.c) keeps them the same */
    [RIG_OP_ATTENTION_DECODE_STORE] = {RIG__AT(attention_decode_store.store.q),
                                       RIG__AT(attention_decode_store.store.k),
                                       RIG__AT(attention_decode_store.store.v),
                                       RIG__AT(attention_decode_store.store.k_cache),
                                       RIG__AT(attention_decode_store.store.v_cache),
                                       RIG__AT(attention_decode_store.store.q_norm),
                                       RIG__AT(attention_decode_store.store.k_norm),
                                       RIG__AT(attention_decode_store.store.positions),
                                       RIG__AT(attention_decode_store.store.out_loc),
                                       RIG__AT(attention_decode_store.attend.out),
                                       RIG__AT(attention_decode_store.attend.q),
                                       RIG__AT(attention_decode_store.attend.k_cache),
                                       RIG__AT(attention_decode_store.attend.v_cache),
                                       RIG__AT(attention_decode_store.attend.page_table),
                                       RIG__AT(attention_decode_store.attend.table_idx),
                                       RIG__AT(attention_decode_store.attend.kv_len)},
};

int32_t rig_op_tensors(const struct rig_op *op, const struct rig_tensor **list)
{
    RIG_ASSERT(op->kind >= 0 && op->kind < RIG_OP_COUNT);
    int32_t n = 0;
    while (n < RIG_OP_TENSORS_MAX && rig__tensor_offsets[op->kind][n] != 0) {
        list[n] = (const struct rig_tensor *)((const char *)op + rig__tensor_offsets[op->kind][n]);
        n++;
    }
    RIG_ASSERT(n > 0);
    return n;
}

