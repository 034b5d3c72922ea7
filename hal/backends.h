/* backends.h — the backend registry's built-in list: every backend this build compiled in.
 *
 * rig_hal_open finds a backend by name ("sim", "cuda") among those registered
 * (hal/hal_impl.h, rig_hal_register); this registers the ones built: the simulator always,
 * CUDA when the toolkit was found at build time (RIG_HAVE_CUDA). It is the one place that
 * names the backends, so that neither the engine nor the CLI includes a backend. Built into
 * the `rig_all` library (CMakeLists.txt), above the backends it lists.
 * Threads: call before any rig_hal_open, from one thread.
 */
#ifndef RIG_BACKENDS_H
#define RIG_BACKENDS_H

/* Registers every backend compiled into this binary with the HAL. Idempotent. */
void rig_backends_register(void);

#endif /* RIG_BACKENDS_H */
