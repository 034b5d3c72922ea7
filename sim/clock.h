/* clock.h — the virtual clock of one simulated device: a host timeline and two engines.
 *
 * All times are integer nanoseconds since the device was opened; nothing here reads the
 * wall clock. A device has one host timeline (what the rank's CPU thread has spent), one
 * compute engine (kernels from every stream run one at a time, in issue order) and one copy
 * engine (host<->device and device<->device copies). Each stream carries its own "ready"
 * time: the end of the last work issued on it.
 *
 * Issue rules (docs/simulator.md):
 *   eager kernel:  host += kernel_launch_host_ns;
 *                  start = max(stream ready, host + kernel_launch_latency_ns, compute free)
 *   graph node:    start = max(stream ready, host + kernel_launch_latency_ns, compute free)
 *                  (the graph launch charged the host once)
 *   copy:          host += kernel_launch_host_ns; start = max(stream ready, host, copy free);
 *                  from or to pageable host memory the host then waits for its end
 *   then end = start + duration, and the stream and the engine are ready at `end`. Durations
 *   come from sim/cost.h; a graph node's floor is graph_node_ns instead of min_kernel_ns.
 * Invariants: every timeline only moves forward.
 * Threads: a clock belongs to one device, used by one thread at a time.
 */
#ifndef RIG_SIM_CLOCK_H
#define RIG_SIM_CLOCK_H

#include <stdint.h>

#include "sim/profile.h"

struct rig_sim_clock {
    int64_t host_ns;         /* the host thread's virtual time */
    int64_t compute_free_ns; /* the compute engine is idle from here on */
    int64_t copy_free_ns;    /* the copy engine is idle from here on */
};

enum rig_sim_launch {
    RIG_SIM_LAUNCH_EAGER = 0,      /* one kernel launch from the host */
    RIG_SIM_LAUNCH_GRAPH_NODE = 1, /* a node of a graph being replayed */
};

/* The earliest start of a kernel on a stream ready at `stream_ready_ns`, after the host
 * was charged `launch_host_ns` (an eager launch's host cost; 0 for a graph node, whose
 * launch the graph launch paid). Can't fail. */
int64_t rig_sim_clock_kernel_start(struct rig_sim_clock *clock,
                                   const struct rig_sim_profile *profile,
                                   int64_t launch_host_ns, int64_t stream_ready_ns);
/* Occupies the compute engine from `start_ns` for `duration_ns`; returns the end. */
int64_t rig_sim_clock_kernel_run(struct rig_sim_clock *clock, int64_t start_ns,
                                 int64_t duration_ns);
/* Issues a copy of `duration_ns` on the copy engine after `host_ns` of the host's time (the
 * call's); returns its end. */
int64_t rig_sim_clock_copy(struct rig_sim_clock *clock, int64_t host_ns, int64_t stream_ready_ns,
                           int64_t duration_ns);
/* Host CPU work of `ns` (>= 0). */
void rig_sim_clock_host_work(struct rig_sim_clock *clock, int64_t ns);
/* The host waits until `t_ns` (no-op when already past): synchronisation, idling. */
void rig_sim_clock_host_wait_until(struct rig_sim_clock *clock, int64_t t_ns);

#endif /* RIG_SIM_CLOCK_H */
