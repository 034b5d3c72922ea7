/* fleet.h — a fleet on the simulator: N engine replicas behind a router, on one timeline.
 *
 * Planning data-parallel serving ("how many replicas of which TP size, behind which router,
 * serve this trace at TTFT p99 <= X?") without the machines: every replica is a whole engine
 * (its own simulated devices and virtual clock, usually timing-only), and a router model sends
 * each request of a scenario to one replica at its arrival time:
 *  - round_robin: replica uid mod N, in arrival order;
 *  - least_load: the replica with the fewest live requests (queued + running), lowest index
 *    on a tie;
 *  - cache_aware (SGLang's router): the router keeps, per replica, which prompt prefixes it
 *    has sent there (an approximate radix tree: hashes of every 16-token block prefix, with
 *    the set of replicas holding each, bounded in size), and sends a request to the replica
 *    with the longest match — when the match covers at least cache_threshold of the prompt
 *    and that replica's load is under the load cap; otherwise, and whenever the loads are
 *    imbalanced (max − min > balance_abs and max > balance_rel × min), to the least loaded.
 *
 * Time: request arrival times are the fleet's clock. Before routing a request that arrives at
 * t, every busy replica steps until its clock reaches t (a step in flight may end after t, as
 * in a single engine); idle replicas wait. So the router sees each replica's state at the
 * request's arrival, and the run is a pure function of the scenario and the config.
 * Determinism: the same scenario, seed and config give the same decisions, the same per-
 * request times and the same bytes in the results.
 * Memory: N engines, each sized from the scenario's engine section (timing-only: metadata
 * only); the router's table (RIG_FLEET_PREFIX_TABLE entries); the per-request records (and,
 * recorded, every output token's time).
 * Threads: one thread drives every replica (TP ranks of a replica have their own workers).
 */
#ifndef RIG_FLEET_H
#define RIG_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "core/harness/results/results.h"
#include "core/harness/scenario/scenario.h"
#include "hal/status.h"

#define RIG_FLEET_REPLICAS_MAX 64   /* a replica set fits one uint64_t mask */
#define RIG_FLEET_BLOCK 16          /* tokens per prefix block of the router's tree */
#define RIG_FLEET_PREFIX_TABLE (1 << 20) /* prefix-block entries the router remembers */

enum rig_fleet_router {
    RIG_FLEET_ROUND_ROBIN = 0,
    RIG_FLEET_LEAST_LOAD = 1,
    RIG_FLEET_CACHE_AWARE = 2,
};

struct rig_fleet_config {
    int32_t replicas;             /* 1..RIG_FLEET_REPLICAS_MAX */
    int32_t tp;                   /* ranks per replica; 0 = the scenario's engine.tp_size */
    enum rig_fleet_router router;
    double cache_threshold;       /* cache_aware: smallest matched share of the prompt (0.5) */
    int32_t load_cap;             /* cache_aware: a replica at this load takes no cache hit
                                     (0 = the engine's max_running_req) */
    int32_t balance_abs;          /* cache_aware: imbalance when max − min > this (32) ... */
    double balance_rel;           /* ... and max > this × min (1.5) */
};

/* Defaults: 1 replica, the scenario's TP, round_robin, SGLang's router thresholds. */
void rig_fleet_config_default(struct rig_fleet_config *config);
/* The defaults, then what the scenario's `cluster:` key says (nothing when it has none). */
void rig_fleet_config_of_scenario(const struct rig_scenario *scenario,
                                  struct rig_fleet_config *config);
/* "round_robin" | "least_load" | "cache_aware"; RIG_E_NOT_FOUND otherwise. */
enum rig_status rig_fleet_router_parse(const char *name, enum rig_fleet_router *out);
const char *rig_fleet_router_name(enum rig_fleet_router router);

/* One request's fate. Times on the fleet clock (scenario time), ns; -1 never. */
struct rig_fleet_request {
    int32_t replica;       /* where the router sent it */
    int32_t matched;       /* router: prompt tokens it believed cached there */
    int32_t load;          /* router: that replica's live requests when it was sent */
    int32_t cached_len;    /* engine: prompt tokens the replica found cached */
    int32_t input_len, output_len;
    int32_t finish_reason; /* enum rig_finish_reason */
    int64_t arrival_ns, first_token_ns, finish_ns;
};

struct rig_fleet_results {
    struct rig_fleet_config config;
    struct rig_fleet_request *requests;  /* (request_count) by scenario uid */
    int64_t request_count;
    struct rig_results_replica replicas[RIG_FLEET_REPLICAS_MAX]; /* (config.replicas) */
    int64_t end_ns;                      /* last finish on the fleet clock */
};

/* Runs `scenario` on a fleet. On error (a bad config, an engine that cannot start, a step
 * failure) returns a negative status with a message in `error`; `out` is then partly filled
 * and still released with rig_fleet_results_free. */
enum rig_status rig_fleet_run(const struct rig_scenario *scenario,
                              const struct rig_fleet_config *config,
                              struct rig_fleet_results *out, char *error, size_t error_len);
void rig_fleet_results_free(struct rig_fleet_results *results);

/* As rig_fleet_run, and records the run in `record` (initialised here; the caller frees it
 * with rig_results_free, also on error) as `rig run` records one engine: every request's
 * times and every output token on the fleet clock, the summed totals, and the fleet part
 * (record->fleet: each request's route, each replica's totals). No steps are recorded. */
enum rig_status rig_fleet_run_recorded(const struct rig_scenario *scenario,
                                       const struct rig_fleet_config *config,
                                       struct rig_fleet_results *out, struct rig_results *record,
                                       char *error, size_t error_len);

/* TTFT (first token − arrival) at quantile q in [0, 1] over finished requests, seconds; NaN
 * when none finished. Can't fail beyond that. */
double rig_fleet_ttft_quantile(const struct rig_fleet_results *results, double q);

#endif /* RIG_FLEET_H */
