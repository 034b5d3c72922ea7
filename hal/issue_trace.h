/* issue_trace.h — the host time of each op and copy a device is asked to issue, by kind.
 *
 * Why: the simulator charges an eager op the host time `rig profile` measured for it alone
 * (sim/optable.h), and some models' eager steps issue 30-50 % slower on the GPU's host than
 * that (docs/simulator.md, "Waking for a replayed arrival"). Which ops? With RIG_ISSUE_TRACE
 * set (to anything but "0") when a device is opened, the dispatch layer (hal/hal.c) times
 * every rig_hal_op call, every upload, download and device copy, event record, stream wait
 * and graph launch on that device — the HAL's checks and the backend's issue, wall clock,
 * ops recorded into a graph capture left out — and, as the kind "between", the host time from
 * one such issue's end to the next one's start (the caller's own code between its calls), and
 * prints the totals by kind on stderr when the device closes. Results and timing are untouched
 * apart from the clock reads.
 *
 * Ownership: the device owns its trace (rig_hal_open / rig_hal_close). Threads: a device's
 * trace is updated by the thread that issues on it (one per rank, as the engine does).
 */
#ifndef RIG_HAL_ISSUE_TRACE_H
#define RIG_HAL_ISSUE_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hal/ops.h"

/* Kinds: every op kind, the three copies, then the stream's other calls a step issues. */
enum {
    RIG_ISSUE_UPLOAD = RIG_OP_COUNT,
    RIG_ISSUE_DOWNLOAD,
    RIG_ISSUE_COPY,
    RIG_ISSUE_EVENT_RECORD,
    RIG_ISSUE_STREAM_WAIT,
    RIG_ISSUE_GRAPH_LAUNCH,
    RIG_ISSUE_BETWEEN, /* host time from the end of one traced issue to the start of the next,
                          when under RIG_ISSUE_BETWEEN_MAX_NS: the caller's own code between
                          its calls (an eager forward's, the engine's), not its idle waits */
    RIG_ISSUE_KINDS
};
#define RIG_ISSUE_BETWEEN_MAX_NS 1000000

/* A kind's issues are also counted in buckets of RIG_ISSUE_BUCKET_NS up to
 * RIG_ISSUE_BUCKETS - 1 of them, the last bucket holding everything longer: percentiles that a
 * few first uses (a cuBLAS plan, a module load: tens of ms) do not move, as they move a mean. */
#define RIG_ISSUE_BUCKET_NS 250
#define RIG_ISSUE_BUCKETS   257 /* 0 .. 64 us in quarters of a us, then the rest */

struct rig_issue_trace {
    int64_t count[RIG_ISSUE_KINDS];
    int64_t total_ns[RIG_ISSUE_KINDS];
    int64_t max_ns[RIG_ISSUE_KINDS];
    int32_t buckets[RIG_ISSUE_KINDS][RIG_ISSUE_BUCKETS];
    int64_t last_end_ns; /* wall clock at the end of the latest traced issue; 0: none yet */
};

/* Whether RIG_ISSUE_TRACE asks for traces (read at every call: devices opened later see a
 * change). */
bool rig_issue_trace_wanted(void);

/* Adds one issue of `kind` that took `ns` of host time. */
void rig_issue_trace_add(struct rig_issue_trace *trace, int32_t kind, int64_t ns);

/* An issue starts at wall clock `start_ns` / ended at `end_ns`: counts the time since the
 * previous issue's end as RIG_ISSUE_BETWEEN (when under RIG_ISSUE_BETWEEN_MAX_NS) / marks the
 * end. */
void rig_issue_trace_start(struct rig_issue_trace *trace, int64_t start_ns);
void rig_issue_trace_end(struct rig_issue_trace *trace, int64_t end_ns);

/* The `q`-th percentile (0 < q <= 100) of the kind's issue times in ns, to a bucket: the
 * middle of the first bucket the q % of issues reach, or the max when that is the last
 * bucket; 0 when the kind has no issues. */
double rig_issue_trace_percentile_ns(const struct rig_issue_trace *trace, int32_t kind, double q);

/* The kind's name: the op's (rig_op_name), "upload", "download", "copy", "event_record",
 * "stream_wait", "graph_launch" or "between". */
const char *rig_issue_trace_kind_name(int32_t kind);

/* One line per kind issued at least once: issues, mean, median, p90 and max host time in us,
 * total in ms; a header naming `device` first. Write errors are the stream's. */
void rig_issue_trace_print(const struct rig_issue_trace *trace, const char *device, FILE *out);

#endif /* RIG_HAL_ISSUE_TRACE_H */
