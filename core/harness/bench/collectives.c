/* collectives.c — the TP group's all-reduce timed alone, as nccl-tests' all_reduce_perf times
 * it, so the bus bandwidth rig's collectives reach can be held against the fabric's.
 *
 * `tp` devices are opened as one group (rig_hal_open, rig_hal_comm_create), each with a
 * stream, a bf16 buffer of the largest size and event pairs; one thread per rank, as the
 * engine's ranks issue collectives. For each size the ranks all-reduce in place `warmup`
 * times, then `repeats` times back to back each between its own events, synchronise, and
 * take the median event-to-event time; a size's time is the slowest rank's median, and its
 * issue time the slowest rank's host time per all-reduce over that loop (with events; on
 * the simulator, the host's real time, not a prediction). Then the same all-reduce in a
 * CUDA graph, as a decode step replays it: 20 captured, the graph replayed `repeats` times,
 * a call's time the slowest rank's median replay / 20 (nccl-tests' -G). Bandwidths
 * follow nccl-tests (PERFORMANCE.md there): algbw = bytes / time, busbw = algbw x 2 (n - 1) / n,
 * the rate each link carries in a ring all-reduce, comparable across rank counts. On the
 * simulator the events carry virtual times: the cost model's collective prediction.
 * Sizes: 8 KiB (a decode step's all-reduce at batch 1 of a 4096-wide model) to 256 MiB.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/harness/bench/bench_impl.h"

static const int64_t rig__sizes[] = {8 << 10,   64 << 10,  512 << 10, 2 << 20,
                                     16 << 20, 64 << 20, 256 << 20};
static const int64_t rig__sizes_quick[] = {8 << 10, 2 << 20};
#define RIG__GRAPH_CALLS 20 /* all-reduces in the timed graph */

struct rig__coll_rank {
    struct rig_device *device;
    struct rig_stream *stream;
    struct rig_comm *comm;
    struct rig_buffer *data; /* (bytes_max) bf16 */
    struct rig_event *start[RIG_BENCH_REPEATS_MAX], *end[RIG_BENCH_REPEATS_MAX];
    int32_t events;
    /* The size being timed, set before the threads start. */
    int64_t bytes;
    int32_t warmup, repeats;
    double median_ns, issue_ns, graph_ns;
    enum rig_status status;
};

static enum rig_status rig__coll_once(struct rig__coll_rank *r)
{
    struct rig_op_all_reduce op = {
        .data = rig_tensor_1d(rig_hal_buffer_ptr(r->data), RIG_DTYPE_BF16, r->bytes / 2),
        .comm = r->comm};
    return rig_hal_all_reduce(r->stream, &op);
}

static void *rig__coll_main(void *arg)
{
    struct rig__coll_rank *r = arg;
    enum rig_status status = RIG_OK;
    for (int32_t i = 0; i < r->warmup && status == RIG_OK; i++)
        status = rig__coll_once(r);
    if (status == RIG_OK) status = rig_hal_stream_synchronize(r->stream);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int32_t i = 0; i < r->repeats && status == RIG_OK; i++) {
        status = rig_hal_event_record(r->start[i], r->stream);
        if (status == RIG_OK) status = rig__coll_once(r);
        if (status == RIG_OK) status = rig_hal_event_record(r->end[i], r->stream);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->issue_ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
                  r->repeats;
    if (status == RIG_OK) status = rig_hal_stream_synchronize(r->stream);
    double times[RIG_BENCH_REPEATS_MAX];
    for (int32_t i = 0; i < r->repeats && status == RIG_OK; i++) {
        int64_t ns = 0;
        status = rig_hal_event_elapsed_ns(r->start[i], r->end[i], &ns);
        times[i] = (double)ns;
    }
    if (status == RIG_OK) r->median_ns = rig_bench_median(times, r->repeats);
    /* In a graph, as decode steps issue them: RIG__GRAPH_CALLS all-reduces captured once,
     * the graph replayed `repeats` times each between events; a call's time is the median
     * replay over the calls (nccl-tests' -G). The first replay is a warm-up. */
    struct rig_graph *graph = NULL;
    if (status == RIG_OK) status = rig_hal_graph_capture_begin(r->stream);
    if (status == RIG_OK) {
        enum rig_status captured = RIG_OK;
        for (int32_t i = 0; i < RIG__GRAPH_CALLS && captured == RIG_OK; i++)
            captured = rig__coll_once(r);
        status = rig_hal_graph_capture_end(r->stream, &graph);
        if (status == RIG_OK) status = captured;
    }
    if (status == RIG_OK) status = rig_hal_graph_launch(graph, r->stream);
    if (status == RIG_OK) status = rig_hal_stream_synchronize(r->stream);
    for (int32_t i = 0; i < r->repeats && status == RIG_OK; i++) {
        status = rig_hal_event_record(r->start[i], r->stream);
        if (status == RIG_OK) status = rig_hal_graph_launch(graph, r->stream);
        if (status == RIG_OK) status = rig_hal_event_record(r->end[i], r->stream);
    }
    if (status == RIG_OK) status = rig_hal_stream_synchronize(r->stream);
    for (int32_t i = 0; i < r->repeats && status == RIG_OK; i++) {
        int64_t ns = 0;
        status = rig_hal_event_elapsed_ns(r->start[i], r->end[i], &ns);
        times[i] = (double)ns / RIG__GRAPH_CALLS;
    }
    if (status == RIG_OK) r->graph_ns = rig_bench_median(times, r->repeats);
    if (graph != NULL) rig_hal_graph_destroy(graph);
    r->status = status;
    return NULL;
}

static void rig__coll_close(struct rig__coll_rank *ranks, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        struct rig__coll_rank *r = &ranks[i];
        for (int32_t e = 0; e < r->events; e++) {
            rig_hal_event_destroy(r->start[e]);
            rig_hal_event_destroy(r->end[e]);
        }
        rig_hal_buffer_free(r->data);
        if (r->stream != NULL) rig_hal_stream_destroy(r->stream);
        if (r->comm != NULL) rig_hal_comm_destroy(r->comm);
    }
    for (int32_t i = 0; i < n; i++)
        if (ranks[i].device != NULL) rig_hal_close(ranks[i].device);
}

/* Opens the group: devices, comms, and each rank's stream, buffer and events. */
static enum rig_status rig__coll_open(const struct rig_bench_options *o, int64_t bytes_max,
                                      struct rig__coll_rank *ranks, char *error, size_t error_len)
{
    int32_t n = o->tp;
    struct rig_device *devices[RIG_DEVICES_MAX] = {0};
    struct rig_comm *comms[RIG_DEVICES_MAX] = {0};
    struct rig_device_config config = {.first_ordinal = 0, .profile = o->profile, .seed = 1,
                                       .timing_only = strcmp(o->backend, "sim") == 0,
                                       .collective_timeout_ms = 120000};
    enum rig_status status = rig_hal_open(o->backend, &config, n, devices);
    if (status < 0) {
        snprintf(error, error_len, "opening %d %s devices: %s", (int)n, o->backend,
                 rig_status_message(status));
        return status;
    }
    for (int32_t i = 0; i < n; i++)
        ranks[i].device = devices[i];
    status = rig_hal_comm_create(devices, n, comms);
    if (status < 0) {
        rig__coll_close(ranks, n);
        snprintf(error, error_len, "creating the group of %d: %s", (int)n,
                 rig_status_message(status));
        return status;
    }
    for (int32_t i = 0; i < n && status == RIG_OK; i++) {
        struct rig__coll_rank *r = &ranks[i];
        r->comm = comms[i];
        status = rig_hal_stream_create(r->device, &r->stream);
        if (status == RIG_OK)
            status = rig_hal_buffer_alloc(r->device, (size_t)bytes_max, RIG_MEMORY_ACTIVATIONS,
                                          &r->data);
        /* Zero, so the sums stay finite (timing does not depend on the values). */
        if (status == RIG_OK)
            status = rig_hal_buffer_fill(r->stream, r->data, 0, 0, (size_t)bytes_max / 4);
        if (status == RIG_OK)
            status = rig__bench_event_pairs(r->device, o->repeats, r->start, r->end, &r->events);
        if (status == RIG_OK) status = rig_hal_stream_synchronize(r->stream);
    }
    if (status < 0) {
        snprintf(error, error_len, "collectives: setting up the ranks: %s",
                 rig_status_message(status));
        rig__coll_close(ranks, n);
    }
    return status;
}

enum rig_status rig_bench_collectives(const struct rig_bench_options *o,
                                      struct rig_bench_report *report, char *error,
                                      size_t error_len)
{
    const int64_t *sizes = o->quick ? rig__sizes_quick : rig__sizes;
    int32_t count = o->quick ? (int32_t)RIG_ARRAY_LEN(rig__sizes_quick)
                             : (int32_t)RIG_ARRAY_LEN(rig__sizes);
    _Static_assert(RIG_ARRAY_LEN(rig__sizes) <= RIG_BENCH_COLLECTIVES_MAX, "rows fit");
    if (o->tp < 2) {
        snprintf(error, error_len, "collectives: --tp 2 or more (ranks to all-reduce over)");
        return RIG_E_INVALID;
    }
    static struct rig__coll_rank ranks[RIG_DEVICES_MAX];
    memset(ranks, 0, sizeof ranks);
    enum rig_status status = rig__coll_open(o, sizes[count - 1], ranks, error, error_len);
    if (status < 0) return status;
    int32_t n = o->tp;
    for (int32_t s = 0; s < count && status == RIG_OK; s++) {
        rig__bench_progress(o, "collectives", s, count);
        pthread_t threads[RIG_DEVICES_MAX];
        int32_t started = 0;
        for (int32_t i = 0; i < n; i++) {
            ranks[i].bytes = sizes[s];
            ranks[i].warmup = 3;
            ranks[i].repeats = o->repeats;
            ranks[i].status = RIG_OK;
        }
        for (; started < n; started++)
            if (pthread_create(&threads[started], NULL, rig__coll_main, &ranks[started]) != 0)
                break;
        if (started < n) {
            /* The started ranks wait for the others at the first all-reduce: end the group. */
            for (int32_t i = 0; i < n; i++)
                rig_hal_comm_abort(ranks[i].comm, "rig bench collectives: a thread did not start");
            status = RIG_E_NO_MEMORY;
        }
        for (int32_t i = 0; i < started; i++)
            pthread_join(threads[i], NULL);
        struct rig_bench_collective_row *row = &report->collectives[report->collective_count];
        memset(row, 0, sizeof *row);
        row->bytes = sizes[s];
        row->ranks = n;
        for (int32_t i = 0; i < n && status == RIG_OK; i++) {
            if (ranks[i].status != RIG_OK) {
                status = ranks[i].status;
                const char *why = rig_hal_comm_error(ranks[i].comm);
                snprintf(error, error_len, "collectives: all-reduce of %lld bytes, rank %d: %s%s%s",
                         (long long)sizes[s], (int)i, rig_status_message(status),
                         why[0] != '\0' ? ": " : "", why);
            } else {
                if (ranks[i].median_ns > row->ns) row->ns = ranks[i].median_ns;
                if (ranks[i].issue_ns > row->issue_ns) row->issue_ns = ranks[i].issue_ns;
                if (ranks[i].graph_ns > row->graph_ns) row->graph_ns = ranks[i].graph_ns;
            }
        }
        if (status != RIG_OK) break;
        row->algbw = (double)row->bytes / (row->ns * 1e-9);
        row->busbw = row->algbw * 2.0 * (n - 1) / n;
        report->collective_count++;
    }
    rig__bench_progress(o, "collectives", count, count);
    rig__coll_close(ranks, n);
    return status;
}
