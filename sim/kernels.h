/* kernels.h — the simulator's reference kernels: one plain C function per HAL op.
 *
 * Written for clarity, not speed: they are the oracle (STYLE 7). fp32 math; results rounded
 * to bf16 exactly where the GPU stores bf16 (documented per op in hal/ops.h). Arguments
 * have been validated by the dispatch layer (hal/op_check.c); index values inside tensors
 * are asserted in range (a bad index is a bug in the caller). All tensors point at host
 * memory. Same names as the CUDA ops (rig_cuda_op_*). Pure functions of their inputs.
 */
#ifndef RIG_SIM_KERNELS_H
#define RIG_SIM_KERNELS_H

#include "hal/ops.h"
#include "hal/status.h"

void rig_sim_op_embedding(const struct rig_op_embedding *p);
void rig_sim_op_rms_norm(const struct rig_op_rms_norm *p);
void rig_sim_op_add_rms_norm(const struct rig_op_add_rms_norm *p);
void rig_sim_op_gemm(const struct rig_op_gemm *p);
void rig_sim_op_head_rms_norm(const struct rig_op_head_rms_norm *p);
void rig_sim_op_rope(const struct rig_op_rope *p);
void rig_sim_op_store_kv(const struct rig_op_store_kv *p);
void rig_sim_op_qk_norm_rope_store(const struct rig_op_qk_norm_rope_store *p);
void rig_sim_op_attention_prefill(const struct rig_op_attention_prefill *p);
void rig_sim_op_attention_decode(const struct rig_op_attention_decode *p);
void rig_sim_op_silu_mul(const struct rig_op_silu_mul *p);
void rig_sim_op_gather_rows(const struct rig_op_gather_rows *p);
void rig_sim_op_index_gather(const struct rig_op_index_gather *p);
void rig_sim_op_index_scatter(const struct rig_op_index_scatter *p);
void rig_sim_op_sample(const struct rig_op_sample *p);
void rig_sim_op_copy(const struct rig_op_copy *p);

/* Timing-only sampling: logits are phantom, so row r's token is drawn uniformly from
 * [0, vocab) with Philox key seed[r], counter (position[r], 0, RIG_PHILOX_STREAM_TIMING, 0).
 * Reads only the metadata tensors (seed, position) and writes tokens. */
void rig_sim_op_sample_timing_only(const struct rig_op_sample *p);

/* Runs any non-collective op through the functions above. RIG_E_UNSUPPORTED for
 * ALL_REDUCE / ALL_GATHER, which need the TP world (sim/comm.c). */
enum rig_status rig_sim_op_run(const struct rig_op *op);

#endif /* RIG_SIM_KERNELS_H */
