/* build.h — private to core/harness/scenario/: the state of one rig_scenario_load while it reads a
 * file, shared by the files that read its sections (scenario.c: top level, model, engine;
 * requests.c: written-out requests and sampling; workload.c: generators; expect_parse.c:
 * expectations).
 *
 * Order of reading: top-level settings, then requests and workloads (appended in declaration
 * order), then the requests are sorted by arrival and given their uids, then expectations,
 * whose request names resolve against the sorted list.
 *
 * Arrays grow by doubling while the file is read (start-up, not a step loop); each is capped
 * by a RIG_SCENARIO_*_MAX limit, beyond which reading fails with RIG_E_CAPACITY.
 */
#ifndef RIG_SCENARIO_BUILD_H
#define RIG_SCENARIO_BUILD_H

#include "core/harness/scenario/scenario.h"
#include "core/harness/scenario/yaml.h"

/* Philox streams of the generators (counter word 3), so no two draws ever share a counter. */
#define RIG_SCENARIO_STREAM_TOKENS 0x544f4b4eu   /* "TOKN": prompt token ids */
#define RIG_SCENARIO_STREAM_LENGTHS 0x4c454e53u  /* "LENS": input/output lengths */
#define RIG_SCENARIO_STREAM_ARRIVALS 0x41525256u /* "ARRV": Poisson gaps */
#define RIG_SCENARIO_STREAM_SHUFFLE 0x53485546u  /* "SHUF": request order */
#define RIG_SCENARIO_STREAM_BLOCKS 0x424c4b53u   /* "BLKS": trace hash blocks */

struct rig_scenario_build {
    struct rig_yaml yaml;
    struct rig_scenario *scenario;
    char dir[RIG_SCENARIO_PATH_MAX];          /* directory of the file, "" = current */
    struct rig_scenario_sampling defaults;    /* the `defaults:` section */
    int32_t default_max_tokens;
    int64_t request_capacity;                 /* allocated entries of scenario->requests */
    int64_t token_capacity;
    int64_t expect_capacity;
    int64_t uid_capacity;
    int64_t output_tokens;                    /* sum of the requests' max_tokens so far */
};

/* Appends a zeroed request (line from `node`, abort -1, defaults applied). NULL on error. */
struct rig_scenario_request *rig_scenario_build_request(struct rig_scenario_build *b,
                                                        struct fy_node *node);
/* Whether `requests` more requests of up to `prompt_len` prompt and `output_len` output tokens
 * each fit RIG_SCENARIO_HOST_BYTES_MAX beside what is loaded already; RIG_OK, or
 * RIG_E_CAPACITY with "<what> need X GiB ..., at most N requests of these lengths fit" at
 * `node`. Checks only: callers check before they allocate, and add output_tokens after. */
enum rig_status rig_scenario_build_budget(struct rig_scenario_build *b, struct fy_node *node,
                                          const char *what, int64_t requests,
                                          int64_t prompt_len, int64_t output_len);
/* Reserves `count` prompt tokens; returns their offset in scenario->tokens, or -1 on error.
 * The tokens array may move: take pointers into it only after the reservation. */
int64_t rig_scenario_build_tokens(struct rig_scenario_build *b, struct fy_node *node,
                                  int64_t count);
/* Appends a zeroed expectation at `node`'s position. NULL on error. */
struct rig_scenario_expect *rig_scenario_build_expect(struct rig_scenario_build *b,
                                                      struct fy_node *node);
/* Reserves `count` uids for a step request list; returns the offset or -1. */
int64_t rig_scenario_build_uids(struct rig_scenario_build *b, struct fy_node *node,
                                int64_t count);

/* Reads sampling keys (temperature, top_k, top_p, ignore_eos, seed, stop_token_ids,
 * max_tokens) of `map` over `sampling` / `max_tokens`, which hold the defaults. */
enum rig_status rig_scenario_parse_sampling(struct rig_scenario_build *b, struct fy_node *map,
                                            struct rig_scenario_sampling *sampling,
                                            int32_t *max_tokens);
enum rig_status rig_scenario_parse_requests(struct rig_scenario_build *b, struct fy_node *list);
enum rig_status rig_scenario_parse_workloads(struct rig_scenario_build *b,
                                             struct fy_node *list);
enum rig_status rig_scenario_parse_expects(struct rig_scenario_build *b, struct fy_node *list);

/* A uniform integer in [lo, hi] from Philox(key; c0, c1, c2, stream). Pure. */
int64_t rig_scenario_uniform(uint64_t key, uint32_t c0, uint32_t c1, uint32_t c2,
                             uint32_t stream, int64_t lo, int64_t hi);

#endif /* RIG_SCENARIO_BUILD_H */
