/* issue_trace.h — the host time of each op and copy a device is asked to issue, by kind.
 *
 * Why: the simulator charges an eager op the host time `rig profile` measured for it alone
 * (sim/optable.h), and some models' eager steps issue 30-50 % slower on the GPU's host than
 * that (docs/simulator.md, "Waking for a replayed arrival"). Which ops? With RIG_ISSUE_TRACE
 * set (to anything but "0") when a device is opened, the dispatch layer (hal/hal.c) times
 * every rig_hal_op call and every upload, download and device copy on that device — the
 * HAL's checks and the backend's issue, wall clock, ops recorded into a graph capture left
 * out — and prints the totals by kind on stderr when the device closes. Results and timing
 * are untouched apart from the clock reads.
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

/* Kinds: every op kind, then the three copies. */
enum {
    RIG_ISSUE_UPLOAD = RIG_OP_COUNT,
    RIG_ISSUE_DOWNLOAD,
    RIG_ISSUE_COPY,
    RIG_ISSUE_KINDS
};

struct rig_issue_trace {
    int64_t count[RIG_ISSUE_KINDS];
    int64_t total_ns[RIG_ISSUE_KINDS];
    int64_t max_ns[RIG_ISSUE_KINDS];
};

/* Whether RIG_ISSUE_TRACE asks for traces (read at every call: devices opened later see a
 * change). */
bool rig_issue_trace_wanted(void);

/* Adds one issue of `kind` that took `ns` of host time. */
void rig_issue_trace_add(struct rig_issue_trace *trace, int32_t kind, int64_t ns);

/* The kind's name: the op's (rig_op_name), "upload", "download" or "copy". */
const char *rig_issue_trace_kind_name(int32_t kind);

/* One line per kind issued at least once: issues, mean and max host time in us, total in
 * ms; a header naming `device` first. Write errors are the stream's. */
void rig_issue_trace_print(const struct rig_issue_trace *trace, const char *device, FILE *out);

#endif /* RIG_HAL_ISSUE_TRACE_H */
