/* penalize.c — presence, frequency and repetition penalties over each row's token history,
 * in place on the logits (the contract is in hal/ops.h, struct rig_op_penalize).
 *
 * Three plain passes over the history per row, with the row of `counts` as a map from
 * token id to its number of generated occurrences: clear the entries of every history id,
 * count the generated tokens, then visit the history and penalise each id the first time it
 * is met, marking its entry -1 so later occurrences skip it. Each id is penalised once, from
 * its logit and its count alone, so the order of the visits cannot change the result.
 */
#include "sim/kernels.h"

#include <math.h>

#include "sim/kernels/access.h"

/* Row r's history length and the first position of its generated tokens. */
static void rig__history(const struct rig_op_penalize *p, int64_t r, int32_t *length,
                         int32_t *generated_from)
{
    int32_t kv_len = rig_sim_get_i32(&p->kv_len, r);
    int32_t out_len = rig_sim_get_i32(&p->out_len, r);
    RIG_ASSERT(kv_len >= 0 && kv_len <= p->token_pool.shape[1]);
    if (out_len < 0) out_len = 0;
    if (out_len > kv_len) out_len = kv_len;
    *length = kv_len;
    *generated_from = kv_len - out_len;
}

static float rig__penalised(float logit, int32_t count, float repetition, float frequency,
                            float presence)
{
    float x = logit > 0.0f ? logit / repetition : logit * repetition;
    x = fmaf(-(float)count, frequency, x);
    if (count > 0) x = x - presence;
    return x;
}

void rig_sim_op_penalize(const struct rig_op_penalize *p)
{
    int64_t rows = p->logits.shape[0], vocab = p->logits.shape[1];
    for (int64_t r = 0; r < rows; r++) {
        int32_t length, generated_from;
        rig__history(p, r, &length, &generated_from);
        int64_t table_row = rig_sim_get_i32(&p->table_idx, r);
        const int32_t *history = (const int32_t *)rig_sim_addr(&p->token_pool, table_row, 0);
        int32_t *counts = (int32_t *)rig_sim_addr(&p->counts, r, 0);
        float *logits = rig_sim_row_f32(&p->logits, r);
        float repetition = rig_sim_get_f32(&p->repetition, r);
        float frequency = rig_sim_get_f32(&p->frequency, r);
        float presence = rig_sim_get_f32(&p->presence, r);
        if (repetition == 1.0f && frequency == 0.0f && presence == 0.0f) continue;
        for (int32_t i = 0; i < length; i++) {
            RIG_ASSERT_MSG(history[i] >= 0 && history[i] < vocab, "penalize: id outside V");
            counts[history[i]] = 0;
        }
        for (int32_t i = generated_from; i < length; i++) counts[history[i]]++;
        for (int32_t i = 0; i < length; i++) {
            int32_t id = history[i];
            if (counts[id] < 0) continue; /* penalised at an earlier occurrence */
            logits[id] = rig__penalised(logits[id], counts[id], repetition, frequency, presence);
            counts[id] = -1;
        }
    }
}
