/* clock.c — timeline arithmetic of the virtual clock, see clock.h. */
#include "sim/clock.h"

#include "hal/status.h"

static int64_t rig__max(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

int64_t rig_sim_clock_kernel_start(struct rig_sim_clock *clock,
                                   const struct rig_sim_profile *profile,
                                   int64_t launch_host_ns, int64_t stream_ready_ns)
{
    RIG_ASSERT(clock != NULL && profile != NULL);
    RIG_ASSERT(stream_ready_ns >= 0 && launch_host_ns >= 0);
    clock->host_ns += launch_host_ns;
    int64_t start = rig__max(stream_ready_ns, clock->host_ns + profile->kernel_launch_latency_ns);
    return rig__max(start, clock->compute_free_ns);
}

int64_t rig_sim_clock_kernel_run(struct rig_sim_clock *clock, int64_t start_ns, int64_t duration_ns)
{
    RIG_ASSERT(clock != NULL);
    RIG_ASSERT(duration_ns >= 0 && start_ns >= clock->compute_free_ns);
    clock->compute_free_ns = start_ns + duration_ns;
    return clock->compute_free_ns;
}

int64_t rig_sim_clock_copy(struct rig_sim_clock *clock, int64_t host_ns, int64_t stream_ready_ns,
                           int64_t duration_ns)
{
    RIG_ASSERT(clock != NULL);
    RIG_ASSERT(host_ns >= 0 && duration_ns >= 0 && stream_ready_ns >= 0);
    clock->host_ns += host_ns;
    int64_t start = rig__max(rig__max(stream_ready_ns, clock->host_ns), clock->copy_free_ns);
    clock->copy_free_ns = start + duration_ns;
    return clock->copy_free_ns;
}

void rig_sim_clock_host_work(struct rig_sim_clock *clock, int64_t ns)
{
    RIG_ASSERT(clock != NULL);
    RIG_ASSERT(ns >= 0);
    clock->host_ns += ns;
}

void rig_sim_clock_host_wait_until(struct rig_sim_clock *clock, int64_t t_ns)
{
    RIG_ASSERT(clock != NULL);
    clock->host_ns = rig__max(clock->host_ns, t_ns);
}
