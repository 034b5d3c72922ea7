/* cost.h — the analytic cost model: how long an op, a copy or a collective takes.
 *
 * Roofline per op (docs/simulator.md gives every formula):
 *   time = max(floor, flops / (peak_bf16_flops * eff), bytes / (hbm_bytes_per_s * eff))
 * with eff the profile's achievable fraction for the op's class (gemm, prefill attention,
 * decode attention, elementwise, copy) and floor min_kernel_ns (graph nodes: graph_node_ns).
 * FLOPs and bytes are the op's analytic work (hal/optable.h, shared with `rig profile`);
 * attention reads the per-request lengths (kv_len, cu_q) from their tensors, which are host
 * memory on the simulator (METADATA buffers, real even in timing-only mode). Copies over
 * PCIe cost latency + bytes / bandwidth; collectives use the ring formulas of nccl-tests'
 * "bus bandwidth". Results are integer nanoseconds, rounded up, a pure function of the
 * profile and the op (determinism). Thread safety: pure functions.
 */
#ifndef RIG_SIM_COST_H
#define RIG_SIM_COST_H

#include <stdbool.h>

#include "hal/hal_impl.h"
#include "sim/profile.h"

/* The work an op does (floating-point operations and bytes moved to/from device memory:
 * rig_optable_op_work) and how rig's kernel for it runs. */
struct rig_sim_work {
    double flops;
    double bytes;
    enum rig_sim_op_class op_class;
    double blocks;   /* thread blocks the op's kernel would launch (0: not modelled) */
    double depth;    /* GEMM: the reduction length K (0 for other ops) */
    double rate;     /* (0, 1]: the kernel's bandwidth relative to its class (0: 1) */
    int32_t kernels; /* kernels the op launches, each paying the class latency (0: 1) */
};

/* FLOPs, bytes, class and kernel shape of a validated, non-collective op. Attention ops read
 * kv_len and cu_q (which must be real memory). */
struct rig_sim_work rig_sim_cost_work(const struct rig_op *op);

/* Duration of a validated op launched eagerly at an idle device (the launch processing paid
 * in full; queued behind other work it is not: rig_sim_cost_eager_end_ns). Collectives: the
 * transfer part only, for `ranks` ranks (see rig_sim_cost_collective_ns); `ranks` is ignored
 * by the other ops. */
int64_t rig_sim_cost_op_ns(const struct rig_sim_profile *profile, const struct rig_op *op,
                           int32_t ranks);

/* The same for a node of a replayed graph: the floor is graph_node_ns, not min_kernel_ns
 * (a graph's nodes skip the per-kernel launch processing). */
int64_t rig_sim_cost_node_ns(const struct rig_sim_profile *profile, const struct rig_op *op,
                             int32_t ranks);

/* Either of the two (`eager` or a graph node); *table_missed (may be NULL) tells whether
 * the profile has an op table (sim/optable.h) that does not reach the op, which the
 * analytic model then costs. An op within the table is costed from it: its interpolated
 * measured time, at least graph_node_ns, plus the eager launch term when eager. */
int64_t rig_sim_cost_launch_ns(const struct rig_sim_profile *profile, const struct rig_op *op,
                               int32_t ranks, bool eager, bool *table_missed);

/* The end of an eagerly launched kernel whose launch reached the device at `arrival_ns`
 * (the host's issue plus kernel_launch_latency_ns), that may start at `start_ns` (>=
 * arrival: its stream and the compute engine are free) and runs `node_ns` as a graph node
 * would (rig_sim_cost_node_ns). The device processes an eager launch for min_kernel_ns −
 * graph_node_ns from its arrival, while the kernels ahead of it still run: behind a busy
 * engine that costs nothing, at an idle one all of it — the isolated eager op of
 * rig_sim_cost_op_ns. At least min_kernel_ns after the start (back-to-back empty kernels).
 * Can't fail. */
int64_t rig_sim_cost_eager_end_ns(const struct rig_sim_profile *profile, int64_t arrival_ns,
                                  int64_t start_ns, int64_t node_ns);

/* Host time of issuing `op` eagerly (the op call: checks, argument packing, the launch): the
 * op table's measured host time where the table reaches the op and has one, else
 * kernel_launch_host_ns. Collectives: kernel_launch_host_ns. */
int64_t rig_sim_cost_issue_host_ns(const struct rig_sim_profile *profile, const struct rig_op *op);

/* Ring collective over `ranks` ranks: all-reduce of `bytes` per rank costs
 * latency + 2 (n-1)/n bytes / bw; all-gather into `bytes` of output per rank costs
 * latency + (n-1)/n bytes / bw. An all-reduce within a node takes the profile's measured
 * curve instead where it has two or more points at `ranks` (profile.h, all_reduce_graph_ns). */
int64_t rig_sim_cost_collective_ns(const struct rig_sim_profile *profile, enum rig_op_kind kind,
                                   double bytes, int32_t ranks);

/* A copy of `bytes` of the given kind (H2D/D2H over PCIe, D2D through HBM). */
int64_t rig_sim_cost_copy_ns(const struct rig_sim_profile *profile, enum rig_copy_kind kind,
                             size_t bytes);

/* A fill kernel writing `bytes`. */
int64_t rig_sim_cost_fill_ns(const struct rig_sim_profile *profile, size_t bytes);

#endif /* RIG_SIM_COST_H */
