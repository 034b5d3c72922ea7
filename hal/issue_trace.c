/* issue_trace.c — host time of issues by kind (see issue_trace.h). */
#include "hal/issue_trace.h"

#include <stdlib.h>
#include <string.h>

#include "hal/status.h"

bool rig_issue_trace_wanted(void)
{
    const char *value = getenv("RIG_ISSUE_TRACE");
    return value != NULL && value[0] != '\0' && strcmp(value, "0") != 0;
}

void rig_issue_trace_add(struct rig_issue_trace *trace, int32_t kind, int64_t ns)
{
    RIG_ASSERT(trace != NULL && kind >= 0 && kind < RIG_ISSUE_KINDS);
    if (ns < 0) ns = 0;
    trace->count[kind]++;
    trace->total_ns[kind] += ns;
    if (ns > trace->max_ns[kind]) trace->max_ns[kind] = ns;
    int64_t bucket = ns / RIG_ISSUE_BUCKET_NS;
    trace->buckets[kind][bucket < RIG_ISSUE_BUCKETS - 1 ? bucket : RIG_ISSUE_BUCKETS - 1]++;
}

void rig_issue_trace_start(struct rig_issue_trace *trace, int64_t start_ns)
{
    RIG_ASSERT(trace != NULL);
    int64_t since = start_ns - trace->last_end_ns;
    if (trace->last_end_ns > 0 && since >= 0 && since < RIG_ISSUE_BETWEEN_MAX_NS)
        rig_issue_trace_add(trace, RIG_ISSUE_BETWEEN, since);
}

void rig_issue_trace_end(struct rig_issue_trace *trace, int64_t end_ns)
{
    RIG_ASSERT(trace != NULL);
    trace->last_end_ns = end_ns;
}

double rig_issue_trace_percentile_ns(const struct rig_issue_trace *trace, int32_t kind, double q)
{
    RIG_ASSERT(trace != NULL && kind >= 0 && kind < RIG_ISSUE_KINDS && q > 0 && q <= 100);
    if (trace->count[kind] == 0) return 0;
    double reach = q / 100.0 * (double)trace->count[kind];
    int64_t seen = 0;
    for (int32_t b = 0; b < RIG_ISSUE_BUCKETS - 1; b++) {
        seen += trace->buckets[kind][b];
        if ((double)seen >= reach) return ((double)b + 0.5) * RIG_ISSUE_BUCKET_NS;
    }
    return (double)trace->max_ns[kind];
}

const char *rig_issue_trace_kind_name(int32_t kind)
{
    RIG_ASSERT(kind >= 0 && kind < RIG_ISSUE_KINDS);
    if (kind == RIG_ISSUE_UPLOAD) return "upload";
    if (kind == RIG_ISSUE_DOWNLOAD) return "download";
    if (kind == RIG_ISSUE_COPY) return "copy";
    if (kind == RIG_ISSUE_EVENT_RECORD) return "event_record";
    if (kind == RIG_ISSUE_STREAM_WAIT) return "stream_wait";
    if (kind == RIG_ISSUE_GRAPH_LAUNCH) return "graph_launch";
    if (kind == RIG_ISSUE_BETWEEN) return "between";
    return rig_op_name((enum rig_op_kind)kind);
}

void rig_issue_trace_print(const struct rig_issue_trace *trace, const char *device, FILE *out)
{
    RIG_ASSERT(trace != NULL && device != NULL && out != NULL);
    fprintf(out, "rig issue trace, %s (host time of each issue, graph captures left out):\n",
            device);
    fprintf(out, "  %-20s %10s %10s %10s %10s %10s %10s\n", "kind", "issues", "mean us",
            "median us", "p90 us", "max us", "total ms");
    for (int32_t k = 0; k < RIG_ISSUE_KINDS; k++) {
        if (trace->count[k] == 0) continue;
        fprintf(out, "  %-20s %10lld %10.2f %10.2f %10.2f %10.1f %10.2f\n",
                rig_issue_trace_kind_name(k), (long long)trace->count[k],
                (double)trace->total_ns[k] / (double)trace->count[k] * 1e-3,
                rig_issue_trace_percentile_ns(trace, k, 50) * 1e-3,
                rig_issue_trace_percentile_ns(trace, k, 90) * 1e-3,
                (double)trace->max_ns[k] * 1e-3, (double)trace->total_ns[k] * 1e-6);
    }
}
