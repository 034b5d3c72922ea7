/* swarm.h — swarm testing of the engine (FoundationDB / TigerBeetle style, issue 6).
 *
 * One seed → one case: a random engine configuration (tiny and odd KV pools, page sizes,
 * row counts, prefill budgets down to a handful of tokens, policy, overlap, radix or naive
 * cache, decode-graph sizes, TP 1/2/4) and a random trace (bursty arrivals, shared prefixes of
 * random depth, duplicate prompts, prompts up to and beyond the context limit, max_tokens 1,
 * large or "up to the context", random sampling) plus a fault plan (a device allocation
 * failing while the engine starts, a stalled stream, aborts at the worst moments — queued,
 * mid-chunk, mid-decode, with the last token in flight, a client gone before its first token;
 * a second abort of the same request, a duplicate uid and malformed submissions, all of which
 * must be refused without effect).
 * rig_swarm_draw is a pure function of (seed, faults): a failure is replayed from its seed.
 *
 * Checks of a run (rig_swarm_run, timing-only simulator): the engine's invariant checker
 * after every step; request lifecycle (every request ends exactly once, tokens streamed in
 * order, never after the end, lengths as promised, the end reason the one the token stream
 * implies — first EOS, stop id, max_tokens or context limit — and times in order); no device
 * allocation in the step loop;
 * liveness (after the fault phase, a fault-free drain in which everything ends within a bound
 * of steps); conservation (at the end every slot free or cached-unlocked, every row free).
 * Equivalence (rig_swarm_equivalence, real tiny model): a request's tokens are identical with
 * the cache on or off, overlap on or off, tiny and large budgets, every policy, TP 1/2/4.
 *
 * Ownership: a case is a plain value (fixed arrays), copied freely; shrinking edits a copy.
 * Threads: runs are sequential on the caller's thread (the engine's own TP workers aside);
 * rig_hal_set_open_faults makes a run non-reentrant, like the planted-bug mask.
 */
#ifndef RIG_SWARM_H
#define RIG_SWARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine/engine.h"

#define RIG_SWARM_REQUESTS_MAX 40
#define RIG_SWARM_SEQ_LEN_MAX 320                 /* largest context limit drawn */
#define RIG_SWARM_PROMPT_MAX (RIG_SWARM_SEQ_LEN_MAX + 24) /* beyond the limit: rejections */
#define RIG_SWARM_TOKENS_MAX (RIG_SWARM_REQUESTS_MAX * RIG_SWARM_PROMPT_MAX)
#define RIG_SWARM_MESSAGE_MAX 512
#define RIG_SWARM_STAGES 17 /* the case, then 8 timing-only and 8 real-model equivalence runs */

/* When a request's client aborts it (the trigger is checked between steps). */
enum rig_swarm_abort {
    RIG_SWARM_ABORT_NONE = 0,
    RIG_SWARM_ABORT_AT_TIME,        /* at abort_ns on the virtual clock (maybe before arrival) */
    RIG_SWARM_ABORT_QUEUED,         /* right after submission, before admission */
    RIG_SWARM_ABORT_MID_CHUNK,      /* while its prompt is half prefilled (chunked) */
    RIG_SWARM_ABORT_NO_FIRST_TOKEN, /* scheduled, first token not yet seen: client gone */
    RIG_SWARM_ABORT_MID_DECODE,     /* after abort_after output tokens */
    RIG_SWARM_ABORT_AT_FINISH,      /* its last token launched: abort and finish race */
    RIG_SWARM_ABORT_COUNT,
};

struct rig_swarm_request {
    int64_t arrival_ns;
    int32_t prompt_offset;  /* into rig_swarm_case.tokens */
    int32_t prompt_len;
    int32_t max_tokens;     /* 0 = up to the context limit */
    float temperature;      /* 0 = greedy */
    int32_t top_k;
    bool ignore_eos;
    int32_t stop_count;
    int32_t stop_ids[2];    /* (stop_count) stop token ids */
    enum rig_swarm_abort abort;
    int32_t abort_after;    /* MID_DECODE: output tokens first */
    int64_t abort_ns;       /* AT_TIME */
};

struct rig_swarm_case {
    uint64_t seed;
    bool faults;
    /* configuration */
    int32_t vocab_size;     /* the tiny model's, overridden: small ones make EOS and stop tokens
                               frequent, odd ones are not divisible by the TP degree */
    int32_t tp_size;
    int32_t page_size;
    int32_t num_pages;
    int32_t max_running_req;
    int32_t max_seq_len;
    int32_t prefill_budget;
    enum rig_policy policy;
    enum rig_cache_type cache;
    bool real_model;        /* run on the real tiny model (equivalence stages); else timing-only */
    int32_t stage;          /* 0: as drawn; else the equivalence run of the seed's check it is */
    bool overlap;
    bool graphs;
    int32_t graph_max_bs;
    int32_t max_requests;   /* live requests the engine accepts: back-pressure below the count */
    /* fault plan (faults on) */
    int64_t fail_alloc_at;  /* n-th device allocation while the engine starts fails; -1 */
    int32_t stall_rank;
    int64_t stall_op_at;    /* n-th op after start stalls for stall_ns; -1 = none */
    int64_t stall_ns;
    int32_t fault_steps;    /* steps of the fault phase; the drain follows */
    /* trace */
    int32_t request_count;
    struct rig_swarm_request requests[RIG_SWARM_REQUESTS_MAX]; /* (request_count) by arrival */
    int32_t token_count;
    int32_t tokens[RIG_SWARM_TOKENS_MAX];                      /* (token_count) prompts */
};

enum rig_swarm_verdict {
    RIG_SWARM_PASS = 0,
    RIG_SWARM_INVARIANT,    /* the engine's checker reported a violation */
    RIG_SWARM_LIFECYCLE,    /* an end missing or twice, a token out of order or after the end */
    RIG_SWARM_LIVENESS,     /* the drain did not finish within its bound, or the engine stuck */
    RIG_SWARM_CONSERVATION, /* slots or rows not given back at the end */
    RIG_SWARM_EQUIVALENCE,  /* tokens differ between configurations */
    RIG_SWARM_ERROR,        /* an engine call failed (device error, allocation in the loop) */
    RIG_SWARM_CRASH,        /* the run died (an assertion): only with isolation */
    RIG_SWARM_VERDICT_COUNT,
};

struct rig_swarm_result {
    enum rig_swarm_verdict verdict;
    int64_t steps;                     /* engine steps of the failing (or last) run */
    int64_t step_failed;               /* step of the first failure, -1 */
    int32_t stage;                     /* the run that failed: 0 the case itself, else an
                                          equivalence run (rig_swarm_stage_case) */
    int32_t finished, aborted, rejected;
    int64_t tokens;                    /* output tokens streamed */
    char message[RIG_SWARM_MESSAGE_MAX];
};

/* "pass", "invariant", "lifecycle", ... Can't fail. */
const char *rig_swarm_verdict_name(enum rig_swarm_verdict verdict);

/* Draws the case of `seed` (faults: with a fault plan and aborts). Pure; can't fail. */
void rig_swarm_draw(uint64_t seed, bool faults, struct rig_swarm_case *out);

/* One line describing the configuration ("tp2 ps4 pages37 rows3 ..."). */
void rig_swarm_describe(const struct rig_swarm_case *c, char *out, size_t len);

/* Runs the case on the timing-only simulator with every check above; fills `out`.
 * Returns out->verdict. */
enum rig_swarm_verdict rig_swarm_run(const struct rig_swarm_case *c,
                                     struct rig_swarm_result *out);

/* Runs a fault-free, abort-free cut of the case under several configurations (stages 1-8:
 * the whole trace, timing-only; 9-16: at most 6 requests, short prompts and outputs, on the
 * real tiny model) and compares every request's tokens and end reason. Writes each run's
 * stage to *stage (when not NULL) before it starts, so a parent sharing it with a forked
 * child learns which run crashed; out->stage names the failing run. Returns out->verdict. */
enum rig_swarm_verdict rig_swarm_equivalence(const struct rig_swarm_case *c,
                                             volatile int32_t *stage,
                                             struct rig_swarm_result *out);

/* The case that stage `stage` of a check of `c` runs: `c` itself (0) or an equivalence run's
 * cut and variant (no faults or aborts; real_model set for stages 9-16). Can't fail. */
void rig_swarm_stage_case(const struct rig_swarm_case *c, int32_t stage,
                          struct rig_swarm_case *out);
/* "the case", "equivalence run 3 (timing-only, overlap flipped)". Can't fail. */
void rig_swarm_stage_name(int32_t stage, char *out, size_t len);

/* Both of the above (equivalence when `equivalence`), in a forked child when `isolate`, so
 * an assertion in the engine becomes a CRASH verdict (out->stage: the run that died) instead
 * of ending the caller. */
enum rig_swarm_verdict rig_swarm_check(const struct rig_swarm_case *c, bool equivalence,
                                       bool isolate, struct rig_swarm_result *out);

/* Shrinks a failing case in place: drops requests (halves, then one at a time) and shortens
 * prompts while rig_swarm_check still gives the same verdict; at most `attempts` runs.
 * Returns the number of runs made. */
int32_t rig_swarm_shrink(struct rig_swarm_case *c, enum rig_swarm_verdict verdict,
                         bool equivalence, bool isolate, int32_t attempts);

/* Runs the case in this process and writes the engine's clock when it was ready to
 * *origin_ns and, per request, the virtual time since then its planned abort was issued to
 * abort_ns[0, request_count) (-1: none; a request its client left before sending: the abort
 * time, before its arrival). Each is written when it happens, so memory the
 * caller shares with a child running this keeps what happened before a crash.
 * RIG_E_NO_MEMORY when the run's state cannot be allocated. */
enum rig_status rig_swarm_abort_times(const struct rig_swarm_case *c, int64_t *abort_ns,
                                      int64_t *origin_ns);

/* Writes the case as a scenario YAML (docs/scenarios.md) that `rig run` replays: the
 * configuration (back-pressure included), the fault plan as a `faults:` section, the
 * requests with their prompts, the aborts as times (those of triggered aborts as first
 * observed in a run of the case, in a child process so a crashing case is written too).
 * Times count from the engine's start, as a scenario's do. RIG_E_IO when the file cannot be
 * written. */
enum rig_status rig_swarm_write_scenario(const struct rig_swarm_case *c, const char *path);

#endif /* RIG_SWARM_H */
