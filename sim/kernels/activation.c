/* activation.c — SiLU(gate) * up of the MLP, with in = [gate | up] along the last dim.
 *
 * Rounds as Hugging Face's `act_fn(gate_proj(x)) * up_proj(x)` in bf16: the activation is
 * stored as bf16, then the product is stored as bf16. The GEMM's SILU_MUL prologue runs the
 * very same row function (rig_sim_silu_mul_row), so the fused form gives these bits.
 */
#include "sim/kernels.h"

#include <math.h>

#include "sim/kernels/access.h"
#include "sim/kernels/head.h"

void rig_sim_silu_mul_row(uint16_t *out, const uint16_t *gate, const uint16_t *up, int64_t n)
{
    RIG_ASSERT(n > 0);
    for (int64_t i = 0; i < n; i++) {
        float g = rig_bf16_to_f32(gate[i]);
        float activated = rig_bf16_round(g / (1.0f + expf(-g)));
        out[i] = rig_f32_to_bf16(activated * rig_bf16_to_f32(up[i]));
    }
}

void rig_sim_op_silu_mul(const struct rig_op_silu_mul *p)
{
    int64_t tokens = p->out.shape[0];
    int64_t inter = p->out.shape[1];
    RIG_ASSERT(p->in.shape[1] == 2 * inter);
    for (int64_t t = 0; t < tokens; t++) {
        const uint16_t *gate = rig_sim_row_bf16(&p->in, t);
        rig_sim_silu_mul_row(rig_sim_row_bf16(&p->out, t), gate, gate + inter, inter);
    }
}
