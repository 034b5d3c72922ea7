/* run.c — runs one op (already checked by hal/op_check.c) through its reference kernel.
 * Collectives need the TP world and are the simulator runtime's (sim/comm.c). */
#include "sim/kernels.h"

enum rig_status rig_sim_op_run(const struct rig_op *op)
{
    RIG_ASSERT(op != NULL);
    switch (op->kind) {
    case RIG_OP_EMBEDDING: rig_sim_op_embedding(&op->u.embedding); return RIG_OK;
    case RIG_OP_RMS_NORM: rig_sim_op_rms_norm(&op->u.rms_norm); return RIG_OK;
    case RIG_OP_ADD_RMS_NORM: rig_sim_op_add_rms_norm(&op->u.add_rms_norm); return RIG_OK;
    case RIG_OP_GEMM: rig_sim_op_gemm(&op->u.gemm); return RIG_OK;
    case RIG_OP_HEAD_RMS_NORM: rig_sim_op_head_rms_norm(&op->u.head_rms_norm); return RIG_OK;
    case RIG_OP_ROPE: rig_sim_op_rope(&op->u.rope); return RIG_OK;
    case RIG_OP_STORE_KV: rig_sim_op_store_kv(&op->u.store_kv); return RIG_OK;
    case RIG_OP_QK_NORM_ROPE_STORE:
        rig_sim_op_qk_norm_rope_store(&op->u.qk_norm_rope_store);
        return RIG_OK;
    case RIG_OP_ATTENTION_PREFILL:
        rig_sim_op_attention_prefill(&op->u.attention_prefill);
        return RIG_OK;
    case RIG_OP_ATTENTION_DECODE:
        rig_sim_op_attention_decode(&op->u.attention_decode);
        return RIG_OK;
    case RIG_OP_SILU_MUL: rig_sim_op_silu_mul(&op->u.silu_mul); return RIG_OK;
    case RIG_OP_GATHER_ROWS: rig_sim_op_gather_rows(&op->u.gather_rows); return RIG_OK;
    case RIG_OP_INDEX_GATHER: rig_sim_op_index_gather(&op->u.index_gather); return RIG_OK;
    case RIG_OP_INDEX_SCATTER: rig_sim_op_index_scatter(&op->u.index_scatter); return RIG_OK;
    case RIG_OP_SAMPLE: rig_sim_op_sample(&op->u.sample); return RIG_OK;
    case RIG_OP_COPY: rig_sim_op_copy(&op->u.copy); return RIG_OK;
    case RIG_OP_PENALIZE: rig_sim_op_penalize(&op->u.penalize); return RIG_OK;
    case RIG_OP_LOGPROBS: rig_sim_op_logprobs(&op->u.logprobs); return RIG_OK;
    case RIG_OP_ATTENTION_DECODE_STORE: /* exactly the composition (hal/ops.h) */
        rig_sim_op_qk_norm_rope_store(&op->u.attention_decode_store.store);
        rig_sim_op_attention_decode(&op->u.attention_decode_store.attend);
        return RIG_OK;
    case RIG_OP_ALL_REDUCE:
    case RIG_OP_ALL_GATHER: return RIG_E_UNSUPPORTED;
    case RIG_OP_COUNT: break;
    }
    RIG_UNREACHABLE();
}
