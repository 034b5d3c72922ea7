/* scenario.h — a scenario: a scripted request trace plus the expectations it must meet.
 *
 * A scenario file (YAML, docs/scenarios.md) says which model and backend to use, how to
 * configure the engine, which requests arrive when (written out one by one or produced by
 * seeded workload generators) and what must hold afterwards. rig_scenario_load turns it into
 * the plain data below: a list of timed requests sorted by arrival, engine settings and a list
 * of checks. Nothing here talks to the engine; `rig run` (tools/rig/cmd_run.c) feeds the
 * requests to it and core/harness/scenario/expect.h checks the results.
 *
 * Why a strict parser: a scenario is a test. A misspelt key silently ignored would make a
 * test pass that checks nothing, so an unknown key, a wrong type or a value out of range is
 * an error naming file:line:column and the key.
 *
 * Invariants after a successful load: requests are sorted by (arrival_ns, declaration order)
 * and request i has uid i; every token id lies in [0, token_id_max]; every request has
 * input_len >= 1 and max_tokens >= 1; expectation request indices are valid.
 * Determinism: the result is a pure function of the file, the `--set` overrides and the files
 * it names — generators draw from a counter-based RNG keyed by the scenario seed.
 *
 * Ownership: struct rig_scenario owns every array it points to; rig_scenario_free releases
 * them. Threads: a loaded scenario is immutable and may be read from any thread.
 */
#ifndef RIG_SCENARIO_H
#define RIG_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/status.h"

#define RIG_SCENARIO_NAME_MAX 64
#define RIG_SCENARIO_PATH_MAX 512
#define RIG_SCENARIO_ID_MAX 48        /* request ids, with the NUL */
#define RIG_SCENARIO_STOP_MAX 8       /* stop token ids per request */
#define RIG_SCENARIO_REQUESTS_MAX (1 << 22)
#define RIG_SCENARIO_TOKENS_MAX ((int64_t)1 << 32) /* all prompts together */
#define RIG_SCENARIO_PROMPT_MAX (1 << 22)          /* one prompt */
#define RIG_SCENARIO_WORKLOADS_MAX 64
#define RIG_SCENARIO_EXPECT_MAX 4096
#define RIG_SCENARIO_SETS_MAX 64      /* --set overrides */
#define RIG_SCENARIO_ERROR_MAX 512    /* a good size for the error buffer */
/* Host memory a scenario's requests may take: their rows, prompt tokens, and the result rows
 * a run reserves for every output token it may produce (max_tokens each). Checked as requests
 * and workloads are read, before their memory is allocated; a fixed budget, so a scenario
 * loads or fails alike on every machine. */
#define RIG_SCENARIO_HOST_BYTES_MAX ((int64_t)16 << 30)

/* Settings left at RIG_SCENARIO_DEFAULT take the engine's default. */
#define RIG_SCENARIO_DEFAULT (-1)

enum rig_scenario_backend {
    RIG_SCENARIO_BACKEND_SIM = 0,
    RIG_SCENARIO_BACKEND_CUDA = 1,
};

enum rig_scenario_policy {
    RIG_SCENARIO_POLICY_PREFILL_FIRST = 0,
    RIG_SCENARIO_POLICY_DECODE_FIRST = 1,
    RIG_SCENARIO_POLICY_MIXED = 2,
};

enum rig_scenario_cache {
    RIG_SCENARIO_CACHE_RADIX = 0,
    RIG_SCENARIO_CACHE_NAIVE = 1,
};

struct rig_scenario_model {
    char preset[RIG_SCENARIO_NAME_MAX]; /* built-in config ("tiny", "qwen3-0.6b"); "" = path */
    char path[RIG_SCENARIO_PATH_MAX];   /* model directory (config.json + safetensors) */
    char config[RIG_SCENARIO_PATH_MAX]; /* a config.json alone (implies dummy weights) */
    bool dummy_weights;                 /* seeded weights instead of safetensors */
    uint64_t weights_seed;
    bool skip_weight_check;             /* load without scanning for NaN / Inf */
};

struct rig_scenario_engine {
    int64_t num_pages;          /* KV pages; DEFAULT = sized from device memory */
    int32_t page_size;          /* tokens per page */
    int32_t max_running_req;
    int32_t max_seq_len;        /* page-table row length; DEFAULT = model context limit */
    int32_t prefill_budget;     /* tokens per prefill batch */
    int32_t cuda_graph_max_bs;  /* 0 = no CUDA graphs */
    int32_t tp_size;            /* >= 1 */
    int32_t policy;             /* enum rig_scenario_policy, or DEFAULT */
    int32_t decode_order;       /* enum rig_decode_order (core/engine/engine.h), or DEFAULT */
    int32_t cache;              /* enum rig_scenario_cache, or DEFAULT */
    int32_t overlap;            /* 0 / 1, or DEFAULT */
    int64_t collective_timeout_ns; /* TP collective timeout (device config); 0 = default */
    int32_t max_requests;       /* live requests at once (back-pressure beyond); DEFAULT =
                                   all of a small scenario, a window over a big one */
};

/* A fault one simulated rank injects into a TP collective (sim/sim.h, rig_sim_faults). */
struct rig_scenario_fault {
    char kind[16];       /* "none" (no fault), "late", "stall", "fail" */
    int32_t rank;        /* the rank that misbehaves, < engine.tp_size */
    int64_t collective;  /* at its n-th collective after the engine is ready (0 = first) */
    int64_t delay_ns;    /* late: by how much (virtual clock) */
};

/* Injected faults (simulator only), so a swarm case (core/harness/swarm/) replays with its
 * whole fault plan. With a `faults:` section the run also makes every device allocation in
 * the step loop fail, as the swarm does (the engine makes none). */
struct rig_scenario_faults {
    bool set;                   /* the scenario has a `faults:` section */
    int64_t start_alloc_fail;   /* the n-th device allocation of a first engine start fails
                                   (it must fail cleanly, then the run starts again); -1 */
    int32_t stall_rank;         /* the rank whose stream stalls */
    int64_t stall_op;           /* the n-th op that rank issues in the run stalls; -1 */
    int64_t stall_ns;           /* for this long (virtual time) */
    int64_t until_step;         /* the stall is cleared before this engine step; -1 = never */
};

struct rig_scenario_sim {
    char profile[RIG_SCENARIO_NAME_MAX]; /* device profile name or YAML path; "" = default */
    bool timing_only;                    /* skip the math: phantom buffers, RNG tokens */
    struct rig_scenario_fault fault;
};

/* `cluster:` — run the scenario on a fleet of replicas behind a router
 * (core/harness/fleet/fleet.h); replicas == 0: one engine, no cluster. */
#define RIG_SCENARIO_REPLICAS_MAX 64

enum rig_scenario_router { /* the order of enum rig_fleet_router */
    RIG_SCENARIO_ROUND_ROBIN = 0,
    RIG_SCENARIO_LEAST_LOAD = 1,
    RIG_SCENARIO_CACHE_AWARE = 2,
};

struct rig_scenario_cluster {
    int32_t replicas; /* 1..RIG_SCENARIO_REPLICAS_MAX; 0 = no cluster key */
    int32_t tp;       /* ranks per replica; 0 = engine.tp_size */
    int32_t router;   /* enum rig_scenario_router */
    int32_t load_cap; /* cache_aware: 0 = engine.max_running_req */
};

struct rig_scenario_sampling {
    float temperature;   /* 0 = greedy */
    int32_t top_k;       /* -1 = whole vocabulary */
    float top_p;         /* 1 = off */
    bool ignore_eos;
    bool has_seed;       /* false: the engine derives one from (scenario seed, uid) */
    uint64_t seed;
    int32_t stop_token_ids[RIG_SCENARIO_STOP_MAX]; /* (stop_count) */
    int32_t stop_count;
};

struct rig_scenario_request {
    char id[RIG_SCENARIO_ID_MAX]; /* unique; generated ones are "<workload>-<n>" */
    int64_t arrival_ns;           /* virtual time the request reaches the engine */
    int64_t abort_ns;             /* abort at this time; -1 = never */
    int64_t token_offset;         /* first prompt token in rig_scenario.tokens */
    int32_t input_len;            /* prompt tokens, >= 1 */
    int32_t max_tokens;           /* output tokens at most, >= 1 */
    struct rig_scenario_sampling sampling;
    int32_t workload;             /* generating workload, -1 = written out */
    int32_t line;                 /* 1-based source line (0 = generated) */
};

enum rig_workload_kind {
    RIG_WORKLOAD_RANDOM = 0,
    RIG_WORKLOAD_SHARED_PREFIX = 1,
    RIG_WORKLOAD_TRACE = 2,
};

/* What a workload entry asked for, kept for the report and the results file. */
struct rig_scenario_workload {
    enum rig_workload_kind kind;
    char name[RIG_SCENARIO_NAME_MAX]; /* id prefix of its requests */
    int32_t first_request;            /* declaration index of its first request */
    int32_t count;                    /* requests it produced */
};

enum rig_expect_kind {
    RIG_EXPECT_REQUEST = 0,  /* a field of one request's record */
    RIG_EXPECT_SAME_OUTPUT,  /* request's output tokens equal other's */
    RIG_EXPECT_STARTS_AFTER, /* request first scheduled in a step after other finished */
    RIG_EXPECT_STEP,         /* a field of one step's record */
    RIG_EXPECT_STEP_REQUESTS,/* a step ran exactly these requests, in this order */
    RIG_EXPECT_TOTAL,        /* a run-wide counter */
    RIG_EXPECT_METRIC,       /* a summary metric (sglang.bench_serving definitions) */
};

/* One check. Numbers are compared as lo <= value <= hi (lo == hi for an exact value). */
struct rig_scenario_expect {
    enum rig_expect_kind kind;
    int32_t field;         /* RIG_FIELD_* (core/harness/scenario/expect.h) */
    int32_t request;       /* request uid, -1 when none */
    int32_t other;         /* second request uid, -1 when none */
    int64_t step;          /* step index, -1 when none */
    double lo, hi;         /* bounds; times in seconds */
    int64_t ids_offset;    /* STEP_REQUESTS: uids in rig_scenario.expect_uids */
    int32_t ids_count;
    int32_t line, column;  /* 1-based position of the check in the file */
};

struct rig_scenario {
    char name[RIG_SCENARIO_NAME_MAX];
    char path[RIG_SCENARIO_PATH_MAX];      /* the file it was read from (for messages) */
    char sha256[65];                       /* hex SHA-256 of the file's bytes, then of each
                                              --set override: what identifies the scenario
                                              in results, whatever the path's spelling */
    enum rig_scenario_backend backend;
    struct rig_scenario_model model;
    struct rig_scenario_engine engine;
    struct rig_scenario_sim sim;
    struct rig_scenario_cluster cluster;
    struct rig_scenario_faults faults;
    uint64_t seed;
    int32_t token_id_max;                  /* largest prompt token id (the runner checks it
                                              against the model's vocabulary) */

    struct rig_scenario_request *requests; /* (request_count) sorted by arrival */
    int32_t request_count;
    int32_t *tokens;                       /* (token_count) prompts, back to back */
    int64_t token_count;

    struct rig_scenario_workload workloads[RIG_SCENARIO_WORKLOADS_MAX]; /* (workload_count) */
    int32_t workload_count;

    struct rig_scenario_expect *expects;   /* (expect_count) */
    int32_t expect_count;
    int32_t *expect_uids;                  /* (expect_uid_count) step request lists */
    int64_t expect_uid_count;
};

/* Reads and checks the scenario at `path`, applying `set_count` overrides "a.b.c=value"
 * (each replaces or adds the scalar at that key path before the file is interpreted, so a
 * `--set` is checked exactly like the file). On success returns RIG_OK and fills `out`,
 * which the caller releases with rig_scenario_free. On error returns a negative status
 * (RIG_E_IO, RIG_E_PARSE, RIG_E_INVALID, RIG_E_RANGE, RIG_E_CAPACITY, RIG_E_NO_MEMORY),
 * writes "file:line:column: message" to `error` and leaves `out` empty (zeroed). */
enum rig_status rig_scenario_load(const char *path, const char *const *sets, int32_t set_count,
                                  struct rig_scenario *out, char *error, size_t error_len);
/* As rig_scenario_load, from YAML text in memory; `name` stands for the file in messages
 * and relative paths (trace files) resolve against the current directory. */
enum rig_status rig_scenario_load_string(const char *text, const char *name,
                                         const char *const *sets, int32_t set_count,
                                         struct rig_scenario *out, char *error,
                                         size_t error_len);
/* Releases what a successful load allocated and zeroes `scenario`. NULL-safe. */
void rig_scenario_free(struct rig_scenario *scenario);

/* The uid of the request called `id`, or -1. O(n). */
int32_t rig_scenario_find(const struct rig_scenario *scenario, const char *id);
/* The prompt of request `uid` (input_len tokens). */
const int32_t *rig_scenario_prompt(const struct rig_scenario *scenario, int32_t uid);

/* Lower-case names, for messages and results ("prefill_first", "radix", "sim"). */
const char *rig_scenario_policy_name(int32_t policy);
const char *rig_scenario_cache_name(int32_t cache);
const char *rig_scenario_backend_name(enum rig_scenario_backend backend);

#endif /* RIG_SCENARIO_H */
