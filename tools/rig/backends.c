/* backends.c — registers the backends this binary was built with: the simulator always,
 * CUDA when the toolkit was found at build time (RIG_HAVE_CUDA); and the backend hooks a
 * scenario may ask for (the simulator's fault plan). */
#include <stdio.h>
#include <string.h>

#include "hal/hal_impl.h"
#include "sim/sim.h"
#include "tools/rig/commands.h"
#ifdef RIG_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

void rig_backends_register(void)
{
    rig_hal_register(rig_sim_backend());
#ifdef RIG_HAVE_CUDA
    rig_hal_register(rig_cuda_backend());
#endif
}

enum rig_status rig_backends_apply_fault(const struct rig_scenario_fault *fault,
                                         struct rig_engine *engine, char *error,
                                         size_t error_len)
{
    enum rig_sim_collective_fault kind = RIG_SIM_COLLECTIVE_NONE;
    if (fault->kind[0] == '\0' || strcmp(fault->kind, "none") == 0) return RIG_OK;
    enum rig_status status = rig_sim_collective_fault_parse(fault->kind, &kind);
    RIG_ASSERT(status == RIG_OK); /* the scenario parser took only these names */
    const struct rig_engine_config *config = rig_engine_get_config(engine);
    if (fault->rank >= config->tp_size) {
        snprintf(error, error_len, "sim.fault.rank %d: the engine has %d rank(s)", fault->rank,
                 config->tp_size);
        return RIG_E_INVALID;
    }
    struct rig_sim_faults plan = {.fail_alloc_at = -1,
                                  .stall_op_at = -1,
                                  .collective_fault = kind,
                                  .collective_at = fault->collective,
                                  .collective_delay_ns = fault->delay_ns};
    status = rig_sim_set_faults(rig_engine_device(engine, fault->rank), &plan);
    if (status != RIG_OK)
        snprintf(error, error_len, "sim.fault: the %s backend injects no faults",
                 config->backend);
    return status;
}
