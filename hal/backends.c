/* backends.c — registers the backends this binary was built with (see backends.h). */
#include "hal/backends.h"

#include "hal/hal_impl.h"
#include "sim/sim.h"
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
