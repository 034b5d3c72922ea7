/* expect.h — checking a scenario's expectations against the records of its run.
 *
 * Each check of the `expect:` list (docs/scenarios.md "Expectations") becomes one struct
 * rig_scenario_expect (scenario.h) with a kind and a field below. rig_expect_check evaluates
 * all of them and reports every failure in a sentence that says what was expected, what
 * happened and where the check is written ("quickstart.yaml:40:5: request b: cached_len is
 * 0, expected 15").
 *
 * Threads: pure functions of their inputs (the report callback is called in order).
 */
#ifndef RIG_EXPECT_H
#define RIG_EXPECT_H

#include <stddef.h>
#include <stdint.h>

#include "core/harness/results/metrics.h"
#include "core/harness/results/results.h"
#include "core/harness/scenario/scenario.h"

/* RIG_EXPECT_REQUEST fields. ttft and e2e bounds are in seconds. */
enum rig_expect_request_field {
    RIG_FIELD_CACHED_LEN = 0,
    RIG_FIELD_OUTPUT_LEN,
    RIG_FIELD_INPUT_LEN,
    RIG_FIELD_FINISH_REASON, /* value: enum rig_finish_reason */
    RIG_FIELD_TTFT,
    RIG_FIELD_E2E,
    RIG_FIELD_REQUEST_COUNT_
};

/* RIG_EXPECT_STEP fields. */
enum rig_expect_step_field {
    RIG_FIELD_PHASE = 0, /* value: enum rig_step_phase */
    RIG_FIELD_BATCH_SIZE,
    RIG_FIELD_TOKENS,
    RIG_FIELD_PADDED_SIZE,
    RIG_FIELD_GRAPH_USED,
    RIG_FIELD_STEP_COUNT_
};

/* RIG_EXPECT_TOTAL fields. */
enum rig_expect_total_field {
    RIG_FIELD_PAGES_LEAKED = 0,
    RIG_FIELD_INVARIANT_VIOLATIONS,
    RIG_FIELD_CACHE_HIT_TOKENS,
    RIG_FIELD_REQUESTS_FINISHED,
    RIG_FIELD_REQUESTS_ABORTED,
    RIG_FIELD_REQUESTS_REJECTED,
    RIG_FIELD_STEPS,
    RIG_FIELD_PREFILL_STEPS,
    RIG_FIELD_DECODE_STEPS,
    RIG_FIELD_MIXED_STEPS,
    RIG_FIELD_COMPUTED_TOKENS,
    RIG_FIELD_OUTPUT_TOKENS,
    RIG_FIELD_MAX_BATCH_SIZE,
    RIG_FIELD_TOTAL_COUNT_
};

/* Key names of the fields above, in enum order (NULL-terminated). */
extern const char *const rig_expect_request_fields[];
extern const char *const rig_expect_step_fields[];
extern const char *const rig_expect_total_fields[];

/* The value of total `field` in `results`. */
int64_t rig_expect_total(const struct rig_results *results, int32_t field);

/* Called once per failed check with a one-line message. */
typedef void (*rig_expect_report_fn)(void *user, const char *message);

/* Evaluates every expectation of `scenario` against `results` (whose request uids are the
 * scenario's) and `metrics`; calls `report` for each failure (may be NULL). Returns the
 * number of failures. Can't fail otherwise. */
int32_t rig_expect_check(const struct rig_scenario *scenario, const struct rig_results *results,
                         const struct rig_metrics *metrics, rig_expect_report_fn report,
                         void *user);

#endif /* RIG_EXPECT_H */
