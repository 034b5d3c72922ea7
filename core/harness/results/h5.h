/* h5.h — writing a run's records to one self-describing HDF5 file (docs/results.md).
 *
 * Layout: root attributes (rig version, git commit, backend, device, model, scenario, seed,
 * engine settings, clock, time units); /requests and /steps as compound datasets, one row
 * per request / per step, with HDF5 enum types for finish reasons and phases; /step_requests
 * (the uids each step ran, rows of /steps point into it); /tokens/time and /tokens/token_id
 * (every output token, rows of /requests point into them); /summary with one scalar dataset
 * per metric, each with a `units` attribute. Times are float64 seconds; "never" is NaN.
 *
 * Determinism: the same records give the same bytes — object timestamps are off on every
 * object (root included), file-creation properties are fixed, nothing reads a clock, and
 * every byte handed to HDF5 is initialised (structs are zeroed before they are filled).
 *
 * Threads: HDF5 (serial build) is not thread-safe; call from one thread at a time.
 */
#ifndef RIG_RESULTS_H5_H
#define RIG_RESULTS_H5_H

#include <stddef.h>

#include "core/harness/results/metrics.h"
#include "core/harness/results/results.h"

#define RIG_RESULTS_FORMAT_VERSION 1

/* Writes `results` and `metrics` to `path`, replacing any file there. The file is built in
 * memory and then stored: a regular file atomically (a temporary file beside it renamed over
 * it), a device or pipe (/dev/full) in place. On error returns RIG_E_IO with a message
 * naming the file and the object or the system's reason in `error`; nothing partial is left
 * at the path (a file that was there stays), nothing leaks, and HDF5 holds no open file. */
enum rig_status rig_results_write_h5(const struct rig_results *results,
                                     const struct rig_metrics *metrics, const char *path,
                                     char *error, size_t error_len);

#endif /* RIG_RESULTS_H5_H */
