/* sim.h — the CPU simulator backend: reference kernels, a virtual clock, a cost model.
 *
 * The simulator implements the HAL (hal/hal_impl.h) on the host (docs/simulator.md):
 *  - compute: plain C reference kernels (sim/kernels.h), fp32 math, bf16 rounding where the
 *    GPU stores bf16 — the oracle the CUDA kernels are tested against;
 *  - time: a virtual clock in integer nanoseconds; each op advances its stream by the cost
 *    model's estimate from a device profile (sim/profiles/<name>.yaml, embedded); events
 *    carry timestamps; host work advances a host timeline; no wall-clock value is ever read;
 *  - timing-only mode: buffers other than METADATA are phantom (reserved address space, no
 *    backing memory), ops skip the math, sampled tokens come from the counter-based RNG;
 *  - graphs: capture records ops, replay re-issues them at the graph-replay cost;
 *  - TP: the ranks of one rig_hal_open share a world; collectives meet at a barrier and sum
 *    in rank order, so results never depend on thread timing;
 *  - faults: deterministic hooks (rig_sim_faults) for tests.
 * Determinism: the same calls in the same order give the same bytes and timestamps.
 */
#ifndef RIG_SIM_H
#define RIG_SIM_H

#include "hal/hal_impl.h"

/* The simulator's backend table, for rig_hal_register. Can't fail. */
const struct rig_backend_iface *rig_sim_backend(void);

/* Deterministic fault injection on one simulated device. Counters start when set; a zeroed
 * struct with the two -1s below injects nothing. */
struct rig_sim_faults {
    int64_t fail_alloc_at;   /* the n-th buffer allocation from now (0 = next) fails with
                                RIG_E_DEVICE_MEMORY; -1 = never */
    int64_t stall_op_at;     /* the n-th op issued from now stalls its stream; -1 = never */
    int64_t stall_ns;        /* how long that stall lasts on the virtual clock */
    enum rig_hal_collective_fault collective_fault; /* what happens at collective_at */
    int64_t collective_at;   /* the n-th collective issued from now (0 = next) */
    int64_t collective_delay_ns; /* LATE: how late, on the virtual clock */
};


/* Sets (replaces) the fault plan of a simulator device. RIG_E_HANDLE if `device` is not a
 * simulator device. */
enum rig_status rig_sim_set_faults(struct rig_device *device, const struct rig_sim_faults *faults);

/* Test hook: the fault plan every simulator device opened after this call starts with (until
 * called again; NULL clears it), so a fault can hit the allocations an engine makes while
 * it starts (core/harness/swarm/). Process-wide and not thread-safe: call it between runs. */
void rig_sim_set_open_faults(const struct rig_sim_faults *faults);

/* Statistics of a simulator device, for tests and reports. */
struct rig_sim_stats {
    int64_t ops_issued;         /* ops run eagerly or by graph replay */
    int64_t graph_launches;
    int64_t bytes_allocated;    /* device bytes currently allocated (phantom included) */
    int64_t bytes_resident;     /* host bytes actually backing buffers */
    int64_t device_busy_ns;     /* sum of op durations on the compute timeline */
    int64_t op_count[RIG_OP_COUNT]; /* (op kinds) ops issued per kind */
    int64_t op_ns[RIG_OP_COUNT];    /* (op kinds) device time per kind, a breakdown of busy */
    int64_t table_misses;       /* ops the profile's op table did not reach (analytic cost) */
};
enum rig_status rig_sim_get_stats(struct rig_device *device, struct rig_sim_stats *out);

#endif /* RIG_SIM_H */
