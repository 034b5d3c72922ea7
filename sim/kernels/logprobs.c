/* logprobs.c — log-probabilities of the sampled token and of the most likely tokens (the
 * contract is in hal/ops.h, struct rig_op_logprobs).
 *
 * Per row: z_i = logit_i / t (t = 1 for greedy rows), the log-sum-exp in float64 in index
 * order, then the top N by selection: N passes, each taking the largest z not yet taken
 * (the lower index on ties). N <= 20, so the N passes over V stay cheap and obvious.
 */
#include "sim/kernels.h"

#include <math.h>

#include "sim/kernels/access.h"

/* Whether (z_a, a) ranks before (z_b, b): larger z first, then the lower index. */
static bool rig__before(float z_a, int64_t a, float z_b, int64_t b)
{
    return z_a > z_b || (z_a == z_b && a < b);
}

/* The best-ranked index not ranked before (after_z, after) — i.e. the next one in the
 * order — or the best overall when after < 0. */
static int64_t rig__next(const float *logits, int64_t vocab, float t, float after_z,
                         int64_t after)
{
    int64_t best = -1;
    float best_z = -INFINITY;
    for (int64_t i = 0; i < vocab; i++) {
        float z = logits[i] / t;
        if (after >= 0 && !rig__before(after_z, after, z, i)) continue;
        if (best < 0 || rig__before(z, i, best_z, best)) {
            best = i;
            best_z = z;
        }
    }
    RIG_ASSERT(best >= 0);
    return best;
}

/* A row that is no distribution — a NaN or +Inf logit, or all -Inf (the sampler flagged it;
 * the step fails) — gets NaN logprobs and ids 0; false for it. */
static bool rig__row_valid(const float *logits, int64_t vocab,
                           const struct rig_op_logprobs *p, int64_t top, int64_t r)
{
    if (rig_sim_logits_valid(logits, vocab)) return true;
    *(float *)rig_sim_addr(&p->logprob, r, 0) = NAN;
    for (int64_t k = 0; k < top; k++) {
        *(int32_t *)rig_sim_addr(&p->top_ids, r, k) = 0;
        *(float *)rig_sim_addr(&p->top_logprobs, r, k) = NAN;
    }
    return false;
}

void rig_sim_op_logprobs(const struct rig_op_logprobs *p)
{
    int64_t rows = p->logits.shape[0], vocab = p->logits.shape[1];
    int64_t top = p->top_ids.data != NULL ? p->top_ids.shape[1] : 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *logits = rig_sim_row_f32(&p->logits, r);
        if (!rig__row_valid(logits, vocab, p, top, r)) continue;
        float temperature = rig_sim_get_f32(&p->temperature, r);
        float t = temperature > 0.0f ? temperature : 1.0f;
        int64_t first = rig__next(logits, vocab, t, 0.0f, -1);
        double z_max = (double)(logits[first] / t), sum = 0.0;
        for (int64_t i = 0; i < vocab; i++) sum += exp((double)(logits[i] / t) - z_max);
        double lse = z_max + log(sum);
        int32_t token = rig_sim_get_i32(&p->tokens, r);
        RIG_ASSERT(token >= 0 && token < vocab);
        *(float *)rig_sim_addr(&p->logprob, r, 0) = (float)((double)(logits[token] / t) - lse);
        int64_t taken = -1;
        float taken_z = 0.0f;
        for (int64_t k = 0; k < top; k++) {
            taken = rig__next(logits, vocab, t, taken_z, taken);
            taken_z = logits[taken] / t;
            *(int32_t *)rig_sim_addr(&p->top_ids, r, k) = (int32_t)taken;
            *(float *)rig_sim_addr(&p->top_logprobs, r, k) = (float)((double)taken_z - lse);
        }
    }
}
