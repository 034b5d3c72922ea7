/* sample.c — one token per row of logits: greedy, temperature, top-k, top-p, min-p,
 * per-request seed (the contract is in hal/ops.h, struct rig_op_sample).
 *
 * Non-greedy rows use the Gumbel-max trick: the token is the argmax over the kept set of
 * z_i + g_i, g_i = -log(-log(u_i)), u_i = rig_philox_uniform(seed, position, i). That is an
 * exact draw from the renormalised softmax of the kept set, and because u_i depends only on
 * (seed, position, vocabulary index) the token never depends on the batch a request ran in
 * or its row in it. Ties of z + g (and of z when ranking for top-k) go to the lower index.
 *
 * The kept set: all of the vocabulary when top_k <= 0 (or >= V), top_p >= 1 and min_p <= 0 —
 * then no sorting is needed. Otherwise the candidates are sorted by z descending (lower index
 * first on ties), the first top_k kept, then the shortest prefix of those whose softmax mass
 * (accumulated in float64, taken over the top-k set) reaches top_p, at least one token, then
 * the prefix of those with exp(z - z_max) >= min_p (float64; z_max, the first, always stays).
 *
 * Scratch: sorting needs V (z, index) pairs. They are allocated once per call, only when
 * some row needs them, and freed before returning; a host out of memory for V pairs is
 * treated as fatal (the simulator cannot continue a forward without its sampler).
 *
 * A row with a NaN or +Inf logit, or all -Inf, is not sampled: token 0, and -1 in `checked`
 * (hal/ops.h).
 */
#include "sim/kernels.h"

#include <math.h>
#include <stdlib.h>

#include "hal/philox.h"
#include "sim/kernels/access.h"

struct rig__candidate {
    float z;       /* logit / temperature */
    int32_t index; /* vocabulary index within this row */
};

/* qsort order: z descending, then index ascending — a total order on distinct indices. */
static int rig__candidate_order(const void *left, const void *right)
{
    const struct rig__candidate *a = left, *b = right;
    if (a->z > b->z) return -1;
    if (a->z < b->z) return 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* The first index of the maximum logit. */
static int32_t rig__greedy(const float *logits, int64_t vocab)
{
    int64_t best = 0;
    for (int64_t i = 1; i < vocab; i++) {
        if (logits[i] > logits[best]) best = i;
    }
    return (int32_t)best;
}

static float rig__gumbel(uint64_t seed, uint32_t position, int32_t index)
{
    float u = rig_philox_uniform(seed, position, (uint32_t)index);
    return -logf(-logf(u));
}

/* Sampling parameters of one row. */
struct rig__row_params {
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p;
    uint64_t seed;
    uint32_t position;
};

static bool rig__is_greedy(const struct rig__row_params *row)
{
    return !(row->temperature > 0.0f) || row->top_k == 1;
}

static bool rig__needs_sort(const struct rig__row_params *row, int64_t vocab)
{
    bool top_k_active = row->top_k > 0 && row->top_k < vocab;
    return top_k_active || row->top_p < 1.0f || row->min_p > 0.0f;
}

/* Gumbel-max over the whole row (no top-k, no top-p). */
static int32_t rig__sample_all(const float *logits, int64_t vocab,
                               const struct rig__row_params *row)
{
    int32_t best = -1;
    float best_score = -INFINITY;
    for (int64_t i = 0; i < vocab; i++) {
        float score = logits[i] / row->temperature + rig__gumbel(row->seed, row->position,
                                                                 (int32_t)i);
        if (best < 0 || score > best_score) {
            best = (int32_t)i;
            best_score = score;
        }
    }
    return best;
}

/* Number of leading candidates (sorted, `kept` of them) whose softmax mass reaches top_p;
 * at least 1. */
static int64_t rig__top_p_prefix(const struct rig__candidate *sorted, int64_t kept, float top_p)
{
    if (top_p >= 1.0f) return kept;
    double max_z = (double)sorted[0].z;
    double total = 0.0;
    for (int64_t j = 0; j < kept; j++) total += exp((double)sorted[j].z - max_z);
    double cumulative = 0.0;
    for (int64_t j = 0; j < kept; j++) {
        cumulative += exp((double)sorted[j].z - max_z);
        if (cumulative >= (double)top_p * total) return j + 1;
    }
    return kept; /* rounding left the sum a hair short of top_p * total */
}

/* Number of leading candidates (sorted, `kept` of them) with exp(z - z_max) >= min_p; at
 * least 1 (the first is z_max). */
static int64_t rig__min_p_prefix(const struct rig__candidate *sorted, int64_t kept, float min_p)
{
    if (!(min_p > 0.0f)) return kept;
    double max_z = (double)sorted[0].z;
    int64_t j = 1;
    while (j < kept && exp((double)sorted[j].z - max_z) >= (double)min_p) j++;
    return j;
}

/* Top-k, then top-p, then min-p, then Gumbel-max over what is kept. `scratch` holds V
 * candidates. */
static int32_t rig__sample_sorted(const float *logits, int64_t vocab,
                                  const struct rig__row_params *row,
                                  struct rig__candidate *scratch)
{
    for (int64_t i = 0; i < vocab; i++) {
        scratch[i].z = logits[i] / row->temperature;
        scratch[i].index = (int32_t)i;
    }
    qsort(scratch, (size_t)vocab, sizeof scratch[0], rig__candidate_order);
    int64_t kept = row->top_k > 0 && row->top_k < vocab ? row->top_k : vocab;
    kept = rig__top_p_prefix(scratch, kept, row->top_p);
    kept = rig__min_p_prefix(scratch, kept, row->min_p);
    RIG_ASSERT(kept >= 1 && kept <= vocab);
    int32_t best = -1;
    float best_score = -INFINITY;
    for (int64_t j = 0; j < kept; j++) {
        int32_t index = scratch[j].index;
        float score = scratch[j].z + rig__gumbel(row->seed, row->position, index);
        if (best < 0 || score > best_score || (score == best_score && index < best)) {
            best = index;
            best_score = score;
        }
    }
    return best;
}

static struct rig__row_params rig__row(const struct rig_op_sample *p, int64_t r)
{
    struct rig__row_params row = {
        .temperature = rig_sim_get_f32(&p->temperature, r),
        .top_k = rig_sim_get_i32(&p->top_k, r),
        .top_p = rig_sim_get_f32(&p->top_p, r),
        .min_p = p->min_p.data != NULL ? rig_sim_get_f32(&p->min_p, r) : 0.0f,
        .seed = rig_sim_get_u64(&p->seed, r),
        .position = (uint32_t)rig_sim_get_i32(&p->position, r),
    };
    return row;
}

void rig_sim_op_sample(const struct rig_op_sample *p)
{
    int64_t rows = p->logits.shape[0];
    int64_t vocab = p->logits.shape[1];
    RIG_ASSERT(vocab >= 1 && vocab <= INT32_MAX);
    struct rig__candidate *scratch = NULL; /* (V) only when some row sorts */
    for (int64_t r = 0; r < rows; r++) {
        struct rig__row_params row = rig__row(p, r);
        const float *logits = rig_sim_row_f32(&p->logits, r);
        int32_t token;
        bool finite = rig_sim_logits_valid(logits, vocab);
        if (!finite) {
            token = 0; /* in range for what reads it next; `checked` says -1 */
        } else if (rig__is_greedy(&row)) {
            token = rig__greedy(logits, vocab);
        } else if (!rig__needs_sort(&row, vocab)) {
            token = rig__sample_all(logits, vocab, &row);
        } else {
            if (scratch == NULL) scratch = malloc((size_t)vocab * sizeof *scratch);
            RIG_ASSERT_MSG(scratch != NULL, "sample: out of host memory for the sort scratch");
            token = rig__sample_sorted(logits, vocab, &row, scratch);
        }
        *rig_sim_ptr_i32(&p->tokens, r) = token;
        if (p->checked.data != NULL) *rig_sim_ptr_i32(&p->checked, r) = finite ? token : -1;
    }
    free(scratch);
}

void rig_sim_op_sample_timing_only(const struct rig_op_sample *p)
{
    int64_t rows = p->tokens.shape[0];
    uint64_t vocab = (uint64_t)p->logits.shape[1];
    RIG_ASSERT(vocab >= 1);
    for (int64_t r = 0; r < rows; r++) {
        uint32_t position = (uint32_t)rig_sim_get_i32(&p->position, r);
        struct rig_philox_out bits = rig_philox4x32(rig_sim_get_u64(&p->seed, r), position, 0,
                                                    RIG_PHILOX_STREAM_TIMING, 0);
        int32_t token = (int32_t)(bits.v[0] % vocab);
        *rig_sim_ptr_i32(&p->tokens, r) = token;
        if (p->checked.data != NULL) *rig_sim_ptr_i32(&p->checked, r) = token;
    }
}
