/* activation.c — SiLU(gate) * up of the MLP, with in = [gate | up] along the last dim.
 *
 * Rounds as Hugging Face's `act_fn(gate_proj(x)) * up_proj(x)` in bf16: the activation is
 * stored as bf16, then the product is stored as bf16.
 */
#include "sim/kernels.h"

#include <math.h>

#include "sim/kernels/access.h"

void rig_sim_op_silu_mul(const struct rig_op_silu_mul *p)
{
    int64_t tokens = p->out.shape[0];
    int64_t inter = p->out.shape[1];
    RIG_ASSERT(p->in.shape[1] == 2 * inter);
    for (int64_t t = 0; t < tokens; t++) {
        const uint16_t *gate = rig_sim_row_bf16(&p->in, t);
        const uint16_t *up = gate + inter;
        uint16_t *out = rig_sim_row_bf16(&p->out, t);
        for (int64_t i = 0; i < inter; i++) {
            float g = rig_bf16_to_f32(gate[i]);
            float activated = rig_bf16_round(g / (1.0f + expf(-g)));
            out[i] = rig_f32_to_bf16(activated * rig_bf16_to_f32(up[i]));
        }
    }
}
