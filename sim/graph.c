/* graph.c — recording ops during capture and replaying them, see graph.h. */
#include "sim/graph.h"

#include <stdlib.h>
#include <string.h>

#include "sim/device.h"

enum rig_status rig_sim_graph_capture_begin(struct rig_stream *stream)
{
    struct rig_sim_stream *sim_stream = rig_sim_stream_of(stream);
    RIG_ASSERT(sim_stream->recording == NULL);
    struct rig_sim_recording *recording = calloc(1, sizeof *recording);
    if (recording == NULL) return RIG_E_NO_MEMORY;
    sim_stream->recording = recording;
    return RIG_OK;
}

enum rig_status rig_sim_graph_record(struct rig_stream *stream, const struct rig_op *op)
{
    struct rig_sim_recording *recording = rig_sim_stream_of(stream)->recording;
    RIG_ASSERT(recording != NULL && op != NULL);
    RIG_ASSERT(recording->count <= recording->capacity);
    if (recording->count == recording->capacity) {
        if (recording->capacity >= RIG_SIM_GRAPH_OPS_MAX) return RIG_E_CAPACITY;
        int32_t capacity = recording->capacity ? 2 * recording->capacity : 64;
        struct rig_op *ops = realloc(recording->ops, (size_t)capacity * sizeof *ops);
        if (ops == NULL) return RIG_E_NO_MEMORY;
        recording->ops = ops;
        recording->capacity = capacity;
    }
    recording->ops[recording->count++] = *op;
    return RIG_OK;
}

enum rig_status rig_sim_graph_capture_end(struct rig_stream *stream, void **context)
{
    struct rig_sim_stream *sim_stream = rig_sim_stream_of(stream);
    RIG_ASSERT(sim_stream->recording != NULL && context != NULL);
    struct rig_sim_graph *graph = calloc(1, sizeof *graph);
    struct rig_sim_recording *recorded = sim_stream->recording;
    struct rig_sim_node_memo *costs =
        calloc(recorded->count > 0 ? (size_t)recorded->count : 1, sizeof *costs);
    if (graph == NULL || costs == NULL) {
        free(graph), free(costs);
        return RIG_E_NO_MEMORY;
    }
    graph->recording = *recorded;
    graph->recording.costs = costs;
    free(sim_stream->recording);
    sim_stream->recording = NULL;
    /* stream->captured_ops (the graph's op count) may exceed the recording: the dispatch
     * layer counts single-rank all-reduces, which it completes without the backend. */
    RIG_ASSERT(graph->recording.count <= stream->captured_ops);
    *context = graph;
    return RIG_OK;
}

enum rig_status rig_sim_graph_launch(struct rig_graph *graph, struct rig_stream *stream)
{
    RIG_ASSERT(graph != NULL && graph->context != NULL);
    struct rig_sim_device *device = rig_sim_device_of(stream->device);
    const struct rig_sim_recording *recording =
        &((const struct rig_sim_graph *)graph->context)->recording;
    rig_sim_clock_host_work(&device->clock, device->profile.graph_launch_host_ns);
    device->stats.graph_launches++;
    for (int32_t i = 0; i < recording->count; i++) {
        enum rig_status status =
            rig_sim_exec_launch(stream, &recording->ops[i], RIG_SIM_LAUNCH_GRAPH_NODE,
                                &recording->costs[i]);
        /* Recorded ops were validated at capture; only a fault can stop a replay. */
        if (status != RIG_OK) return status;
    }
    return RIG_OK;
}

void rig_sim_graph_recording_free(struct rig_sim_recording *recording)
{
    if (recording == NULL) return;
    free(recording->ops);
    free(recording->costs);
    recording->ops = NULL;
    recording->costs = NULL;
    recording->count = 0;
    recording->capacity = 0;
}

void rig_sim_graph_destroy(struct rig_graph *graph)
{
    RIG_ASSERT(graph != NULL);
    struct rig_sim_graph *sim_graph = graph->context;
    rig_sim_graph_recording_free(&sim_graph->recording);
    free(sim_graph);
}
