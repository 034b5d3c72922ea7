/* gemm.c — out[m, n] = sum_k x[m, k] * b[n, k] (+ bias[n]), bf16 inputs, fp32 accumulation.
 *
 * b is a weight in the Hugging Face layout [out_features, in_features], so both operands are
 * read along contiguous rows. Every output element is one fp32 sum taken in increasing k
 * order, then the bias is added in fp32, then the result is stored (rounded to bf16 when out
 * is bf16). That fixed order is the contract: the same inputs give the same bits.
 *
 * The fused forms (hal/ops.h). x is `a` itself, or the prologue's row of it, written into
 * `operand` by the very row functions rms_norm and silu_mul run (sim/kernels/head.h) before
 * the row's products read it back; with `accumulate` the stored value is out's old value plus
 * the bf16-rounded sum, rounded again, as add_rms_norm adds into its residual. So a fused GEMM
 * gives the bits of the ops it replaces, in sequence. op_check keeps `operand` and `out` off
 * `a` and each other, so the row order does not matter.
 *
 * Why four columns at a time: the golden model tests run whole forwards through this kernel.
 * Four independent accumulators (four outputs, each still summed in k order) let the CPU
 * overlap the additions without changing a single bit of any result.
 */
#include "sim/kernels.h"

#include "sim/kernels/access.h"
#include "sim/kernels/head.h"

#define RIG__GEMM_COLUMNS 4

/* One fp32 sum over k of a[k] * b[k], in k order. */
static float rig__dot(const uint16_t *a, const uint16_t *b, int64_t k_count)
{
    float sum = 0.0f;
    for (int64_t k = 0; k < k_count; k++) sum += rig_bf16_to_f32(a[k]) * rig_bf16_to_f32(b[k]);
    return sum;
}

/* Four sums at once: sums[j] = sum over k of a[k] * b[j][k], each in k order. */
static void rig__dot4(const uint16_t *a, const uint16_t *const b[RIG__GEMM_COLUMNS],
                      int64_t k_count, float sums[RIG__GEMM_COLUMNS])
{
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    for (int64_t k = 0; k < k_count; k++) {
        float x = rig_bf16_to_f32(a[k]);
        s0 += x * rig_bf16_to_f32(b[0][k]);
        s1 += x * rig_bf16_to_f32(b[1][k]);
        s2 += x * rig_bf16_to_f32(b[2][k]);
        s3 += x * rig_bf16_to_f32(b[3][k]);
    }
    sums[0] = s0;
    sums[1] = s1;
    sums[2] = s2;
    sums[3] = s3;
}

/* Adds the bias and stores out[m, n] in the output dtype; with accumulate, adds the rounded
 * sum into out[m, n] instead (bf16, no bias: op_check). */
static void rig__store(const struct rig_op_gemm *p, int64_t m, int64_t n, float sum)
{
    if (p->bias.data != NULL) sum += rig_sim_get_bf16(&p->bias, n);
    if (p->out.dtype == RIG_DTYPE_F32) {
        rig_sim_row_f32(&p->out, m)[n] = sum;
    } else if (p->accumulate) {
        uint16_t *out = &rig_sim_row_bf16(&p->out, m)[n];
        *out = rig_f32_to_bf16(rig_bf16_to_f32(*out) + rig_bf16_round(sum));
    } else {
        rig_sim_row_bf16(&p->out, m)[n] = rig_f32_to_bf16(sum);
    }
}

/* Row m of the left operand x, k_count values: a's row, or the prologue's row of it, written
 * into `operand` first. */
static const uint16_t *rig__operand_row(const struct rig_op_gemm *p, int64_t m, int64_t k_count)
{
    const uint16_t *a = rig_sim_row_bf16(&p->a, m);
    if (p->prologue == RIG_GEMM_PROLOGUE_NONE) return a;
    uint16_t *x = rig_sim_row_bf16(&p->operand, m);
    if (p->prologue == RIG_GEMM_PROLOGUE_RMS_NORM) {
        RIG_ASSERT(p->norm_weight.ndim == 1 && p->norm_weight.shape[0] == k_count);
        rig_sim_rms_norm_vector(x, a, (const uint16_t *)p->norm_weight.data, k_count, p->eps);
    } else {
        RIG_ASSERT(p->prologue == RIG_GEMM_PROLOGUE_SILU_MUL);
        rig_sim_silu_mul_row(x, a, a + k_count, k_count); /* a is [gate | up] */
    }
    return x;
}

void rig_sim_op_gemm(const struct rig_op_gemm *p)
{
    int64_t rows = p->out.shape[0];
    int64_t columns = p->out.shape[1];
    int64_t k_count = rig_gemm_depth(p);
    RIG_ASSERT(p->b.shape[0] == columns && p->b.shape[1] == k_count);
    RIG_ASSERT(!p->accumulate || p->out.dtype == RIG_DTYPE_BF16);
    int64_t columns_blocked = columns - columns % RIG__GEMM_COLUMNS;
    for (int64_t m = 0; m < rows; m++) {
        const uint16_t *a = rig__operand_row(p, m, k_count);
        for (int64_t n = 0; n < columns_blocked; n += RIG__GEMM_COLUMNS) {
            const uint16_t *b[RIG__GEMM_COLUMNS];
            for (int32_t j = 0; j < RIG__GEMM_COLUMNS; j++) b[j] = rig_sim_row_bf16(&p->b, n + j);
            float sums[RIG__GEMM_COLUMNS];
            rig__dot4(a, b, k_count, sums);
            for (int32_t j = 0; j < RIG__GEMM_COLUMNS; j++) rig__store(p, m, n + j, sums[j]);
        }
        for (int64_t n = columns_blocked; n < columns; n++) {
            rig__store(p, m, n, rig__dot(a, rig_sim_row_bf16(&p->b, n), k_count));
        }
    }
}
