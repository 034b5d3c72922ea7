/* device.h — the simulator's per-object state behind the HAL handles, shared by sim/ files.
 *
 * rig_device.context  -> struct rig_sim_device  (profile, memory, clock, faults, stats)
 * rig_stream.context  -> struct rig_sim_stream  (ready time, the ops being captured)
 * rig_event.context   -> struct rig_sim_event   (the timestamp it recorded)
 * rig_graph.context   -> struct rig_sim_graph   (sim/graph.h)
 * rig_comm.context    -> struct rig_sim_world   (sim/comm.h), shared by the ranks; or, for a
 *                        rank of a group across processes, its struct rig_sim_mpi
 * Ownership: each context is created and freed with its handle by the backend's slots.
 * Threads: everything of one device is used by one thread at a time (hal.h); only the
 * world is shared between rank threads, under its own mutex.
 */
#ifndef RIG_SIM_DEVICE_H
#define RIG_SIM_DEVICE_H

#include "hal/hal_impl.h"
#include "sim/clock.h"
#include "sim/memory.h"
#include "sim/profile.h"
#include "sim/sim.h"

struct rig_sim_world;
struct rig_sim_mpi;
struct rig_sim_recording;

struct rig_sim_device {
    struct rig_sim_profile profile;
    struct rig_sim_memory memory;
    struct rig_sim_clock clock;
    struct rig_sim_faults faults; /* the plan; counters below count from when it was set */
    int64_t allocs_since_faults;  /* allocations attempted since rig_sim_set_faults */
    int64_t ops_since_faults;     /* ops issued since rig_sim_set_faults */
    int64_t collectives_since_faults; /* collectives issued since rig_sim_set_faults */
    struct rig_sim_stats stats;   /* memory fields are filled in on request */
    struct rig_sim_world *world;  /* the group opened together; shared, ref-counted */
    struct rig_sim_mpi *mpi;      /* a rank of a group across processes (world NULL): its
                                   * collectives' pool, owned (sim/comm_mpi.h) */
    int32_t rank;
    bool timing_only;
};

struct rig_sim_stream {
    int64_t ready_ns;                    /* end of the last work issued on the stream */
    struct rig_sim_recording *recording; /* ops captured so far; NULL unless capturing */
};

struct rig_sim_event {
    int64_t time_ns; /* the recorded stream's ready time */
};

static inline struct rig_sim_device *rig_sim_device_of(const struct rig_device *device)
{
    RIG_ASSERT(device != NULL && device->context != NULL);
    return (struct rig_sim_device *)device->context;
}

static inline struct rig_sim_stream *rig_sim_stream_of(const struct rig_stream *stream)
{
    RIG_ASSERT(stream != NULL && stream->context != NULL);
    return (struct rig_sim_stream *)stream->context;
}

/* Issues one validated op on `stream` (sim/exec.c): advances the clock, applies faults,
 * runs the math unless its buffers are phantom, meets the other ranks for a collective.
 * While the stream captures, records the op instead. */
enum rig_status rig_sim_exec_op(struct rig_stream *stream, const struct rig_op *op);
/* What a graph node's first replay found that the next ones would find again: its duration
 * when its cost reads no metadata (every op but attention and penalize, whose cost follows
 * the batch's lengths), and which of its tensors are phantom. A decode step replays hundreds
 * of nodes, and working these out again each time was most of a timing-only fleet run. The
 * same values as working them out again (same profile, op, buffers and launch kind). */
struct rig_sim_node_memo {
    int64_t ns;       /* 0: not known yet */
    bool missed;      /* the op table did not reach it (counted in stats.table_misses) */
    bool masked;      /* `phantom` is known: */
    uint32_t phantom; /* the node's phantom tensors (timing-only), as sim/exec.c masks them */
};
/* Issues one op: eagerly, or as a graph node (no host launch cost) with its remembered cost
 * `memo` (NULL: none). */
enum rig_status rig_sim_exec_launch(struct rig_stream *stream, const struct rig_op *op,
                                    enum rig_sim_launch launch, struct rig_sim_node_memo *memo);

#endif /* RIG_SIM_DEVICE_H */
