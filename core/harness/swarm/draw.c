/* draw.c — a seed's random case (see swarm.h): configuration, trace, fault plan.
 *
 * Why these distributions: bugs live at the edges, so sizes are drawn from small, odd ranges
 * (a pool barely larger than one request, budgets of a few tokens, one row) much more often
 * than from comfortable ones, and prompts share prefixes on purpose (the radix cache only
 * does something interesting when prompts overlap: splits, duplicate inserts, eviction of
 * shared leaves).
 */
#include <stdio.h>
#include <string.h>

#include "core/harness/swarm/swarm.h"
#include "hal/philox.h"

struct rig__rng {
    uint64_t state;
};

/* splitmix64 through rig_mix64: a stream of 64-bit words from one seed. */
static uint64_t rig__next(struct rig__rng *rng)
{
    rng->state += 0x9E3779B97F4A7C15ull;
    return rig_mix64(rng->state, 0x5357524du); /* "SWRM" */
}

/* Uniform in [lo, hi]. */
static int32_t rig__int(struct rig__rng *rng, int32_t lo, int32_t hi)
{
    RIG_ASSERT(lo <= hi);
    return lo + (int32_t)(rig__next(rng) % (uint64_t)((int64_t)hi - lo + 1));
}

static bool rig__chance(struct rig__rng *rng, int32_t percent)
{
    return rig__int(rng, 0, 99) < percent;
}

/* Mostly small, sometimes anywhere in [lo, hi]: edges first. */
static int32_t rig__skewed(struct rig__rng *rng, int32_t lo, int32_t hi)
{
    int32_t small_hi = lo + (hi - lo) / 8;
    return rig__chance(rng, 60) ? rig__int(rng, lo, small_hi) : rig__int(rng, lo, hi);
}

static void rig__draw_config(struct rig__rng *rng, struct rig_swarm_case *c)
{
    static const int32_t tps[] = {1, 1, 1, 2, 4};
    static const int32_t page_sizes[] = {1, 1, 1, 2, 4, 16};
    static const int32_t vocabs[] = {1024, 64, 61, 13};
    c->vocab_size = vocabs[rig__int(rng, 0, 3)];
    c->tp_size = tps[rig__int(rng, 0, 4)];
    c->page_size = page_sizes[rig__int(rng, 0, 5)];
    c->max_running_req = rig__skewed(rng, 1, 24);
    int32_t seq = rig__int(rng, c->max_running_req + 2 + c->page_size, RIG_SWARM_SEQ_LEN_MAX);
    c->max_seq_len = seq - seq % c->page_size;
    if (c->max_seq_len <= c->max_running_req + 1) c->max_seq_len += c->page_size;
    /* Pool: from one page short of a full-length request to plenty. */
    int32_t full = (c->max_seq_len + c->page_size - 1) / c->page_size;
    c->num_pages = rig__chance(rng, 50) ? rig__int(rng, 2, full + 8)
                                        : rig__int(rng, full, 6 * full + 16);
    c->prefill_budget = rig__chance(rng, 40) ? rig__int(rng, 1, 8) : rig__skewed(rng, 1, 512);
    c->policy = (enum rig_policy)rig__int(rng, 0, 2);
    c->cache = rig__chance(rng, 75) ? RIG_CACHE_RADIX : RIG_CACHE_NAIVE;
    c->overlap = rig__chance(rng, 60);
    c->graphs = rig__chance(rng, 50);
    c->graph_max_bs = rig__int(rng, 1, 40);
}

static void rig__draw_faults(struct rig__rng *rng, struct rig_swarm_case *c)
{
    c->fail_alloc_at = -1;
    c->stall_op_at = -1;
    c->stall_rank = 0;
    c->stall_ns = 0;
    c->fault_steps = 0;
    if (!c->faults) return;
    if (rig__chance(rng, 30)) c->fail_alloc_at = rig__int(rng, 0, 60);
    if (rig__chance(rng, 50)) {
        c->stall_rank = rig__int(rng, 0, c->tp_size - 1);
        c->stall_op_at = rig__int(rng, 0, 3000);
        c->stall_ns = (int64_t)rig__int(rng, 1, 50) * 1000000;
    }
    c->fault_steps = rig__int(rng, 0, 400);
}

/* A prompt: a prefix of an earlier prompt (shared prefix of random depth, or the whole
 * prompt: a duplicate) and/or fresh tokens. */
static void rig__draw_prompt(struct rig__rng *rng, struct rig_swarm_case *c, int32_t index,
                             int32_t len)
{
    int32_t *out = c->tokens + c->token_count;
    int32_t shared = 0;
    if (index > 0 && rig__chance(rng, 55)) {
        const struct rig_swarm_request *other = &c->requests[rig__int(rng, 0, index - 1)];
        shared = rig__chance(rng, 30) ? other->prompt_len : rig__int(rng, 1, other->prompt_len);
        if (shared > len) shared = len;
        if (shared == other->prompt_len) len = shared; /* a duplicate prompt */
        memcpy(out, c->tokens + other->prompt_offset, (size_t)shared * sizeof *out);
    }
    /* A small alphabet makes accidental overlaps (and node splits) common too. */
    int32_t alphabet = rig__chance(rng, 50) ? 4 : c->vocab_size - 3;
    for (int32_t t = shared; t < len; t++) out[t] = 3 + rig__int(rng, 0, alphabet - 1);
    c->requests[index].prompt_offset = c->token_count;
    c->requests[index].prompt_len = len;
    c->token_count += len;
}

static void rig__draw_abort(struct rig__rng *rng, struct rig_swarm_case *c,
                            struct rig_swarm_request *r)
{
    r->abort = RIG_SWARM_ABORT_NONE;
    r->abort_after = 0;
    r->abort_ns = -1;
    if (!c->faults || !rig__chance(rng, 30)) return;
    r->abort = (enum rig_swarm_abort)rig__int(rng, 1, RIG_SWARM_ABORT_COUNT - 1);
    r->abort_after = rig__int(rng, 1, 8);
    r->abort_ns = r->arrival_ns + (int64_t)rig__int(rng, -5, 200) * 1000000;
    if (r->abort_ns < 0) r->abort_ns = 0;
}

static void rig__draw_request(struct rig__rng *rng, struct rig_swarm_case *c, int32_t index,
                              int64_t *clock_ns)
{
    struct rig_swarm_request *r = &c->requests[index];
    /* Bursts: a third arrive together with the previous one. */
    if (!rig__chance(rng, 33)) *clock_ns += (int64_t)rig__int(rng, 0, 80) * 1000000;
    r->arrival_ns = *clock_ns;
    int32_t limit = c->max_seq_len;
    int32_t len = rig__chance(rng, 8) ? rig__int(rng, limit - 4 > 1 ? limit - 4 : 1,
                                                 limit + 24)
                                      : rig__skewed(rng, 1, limit);
    if (len > RIG_SWARM_PROMPT_MAX) len = RIG_SWARM_PROMPT_MAX;
    rig__draw_prompt(rng, c, index, len);
    int32_t kind = rig__int(rng, 0, 9);
    r->max_tokens = kind < 3 ? 1 : kind < 8 ? rig__int(rng, 2, 24) : kind < 9 ? 0
                                                                             : limit;
    r->temperature = rig__chance(rng, 50) ? 0.0f : 0.7f;
    r->top_k = rig__chance(rng, 50) ? -1 : rig__int(rng, 1, 50);
    r->ignore_eos = rig__chance(rng, 70);
    r->stop_count = rig__chance(rng, 25) ? rig__int(rng, 1, 2) : 0;
    for (int32_t i = 0; i < r->stop_count; i++)
        r->stop_ids[i] = rig__int(rng, 3, c->vocab_size - 1);
    rig__draw_abort(rng, c, r);
}

void rig_swarm_draw(uint64_t seed, bool faults, struct rig_swarm_case *out)
{
    RIG_ASSERT(out != NULL);
    struct rig__rng rng = {rig_mix64(seed, faults ? 1 : 0)};
    memset(out, 0, offsetof(struct rig_swarm_case, tokens));
    out->seed = seed;
    out->faults = faults;
    rig__draw_config(&rng, out);
    rig__draw_faults(&rng, out);
    out->request_count = rig__skewed(&rng, 1, RIG_SWARM_REQUESTS_MAX);
    int64_t clock_ns = 0;
    for (int32_t i = 0; i < out->request_count; i++) rig__draw_request(&rng, out, i, &clock_ns);
    /* Drawn last, so adding it left every earlier seed's trace as it was. */
    out->max_requests = rig__chance(&rng, 50) ? out->request_count
                                              : rig__int(&rng, 1, out->request_count);
    RIG_ASSERT(out->token_count <= RIG_SWARM_TOKENS_MAX);
}

void rig_swarm_describe(const struct rig_swarm_case *c, char *out, size_t len)
{
    snprintf(out, len,
             "vocab%d tp%d ps%d pages%d rows%d seq%d budget%d %s %s overlap=%d graphs=%d(%d) "
             "requests=%d/%d fail_alloc_at=%lld stall=%lld",
             c->vocab_size, c->tp_size, c->page_size, c->num_pages, c->max_running_req,
             c->max_seq_len, c->prefill_budget, rig_policy_name(c->policy),
             rig_cache_type_name(c->cache),
             c->overlap, c->graphs, c->graph_max_bs, c->request_count, c->max_requests,
             (long long)c->fail_alloc_at, (long long)c->stall_op_at);
}
