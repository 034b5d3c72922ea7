/* graph.h — graph capture and replay on the simulator.
 *
 * Capture: between begin and end, every op issued on the stream is copied into a recording
 * (ops are values: tensors are descriptors, so a copy is the whole op); nothing runs and no
 * time passes. Replay: the host pays graph_launch_host_ns once, then each recorded op is
 * issued as a graph node (sim/clock.h: no launch cost each, and graph_node_ns instead of
 * min_kernel_ns as the shortest node); the math reads the buffers' current contents, as a
 * CUDA graph does. A node whose cost reads no metadata keeps its duration from the first
 * replay (struct rig_sim_node_memo): the same number, computed once.
 * Limits: at most RIG_SIM_GRAPH_OPS_MAX ops per graph (RIG_E_CAPACITY past it).
 * Ownership: the stream owns the recording while capturing; capture end moves it into the
 * graph. Threads: those of the stream's device.
 */
#ifndef RIG_SIM_GRAPH_H
#define RIG_SIM_GRAPH_H

#include "hal/hal_impl.h"

#define RIG_SIM_GRAPH_OPS_MAX 65536

struct rig_sim_recording {
    struct rig_op *ops; /* (capacity) recorded ops, count used */
    struct rig_sim_node_memo *costs; /* (count) each node's remembered cost (sim/device.h),
                                        allocated at capture end */
    int32_t count;
    int32_t capacity;
};

struct rig_sim_graph {
    struct rig_sim_recording recording;
};

enum rig_status rig_sim_graph_capture_begin(struct rig_stream *stream);
/* Appends `op` to the stream's recording. RIG_E_CAPACITY past the limit, RIG_E_NO_MEMORY;
 * the recording is unchanged on error. */
enum rig_status rig_sim_graph_record(struct rig_stream *stream, const struct rig_op *op);
enum rig_status rig_sim_graph_capture_end(struct rig_stream *stream, void **context);
enum rig_status rig_sim_graph_launch(struct rig_graph *graph, struct rig_stream *stream);
void rig_sim_graph_destroy(struct rig_graph *graph);
/* Frees a capture left unfinished (stream destroyed while capturing is a bug, but close
 * must not leak). */
void rig_sim_graph_recording_free(struct rig_sim_recording *recording);

#endif /* RIG_SIM_GRAPH_H */
