/* comm_mpi.h — the simulator's TP collectives between processes, over OpenMPI (built with
 * RIG_MPI, into rig_sim_mpi).
 *
 * Process p of an MPI job holds TP rank p. A collective gathers every rank's arrival (its
 * op's kind, dtype and size, the earliest time its stream could start it, whether its
 * tensors are phantom, and — unless phantom — its data) on process 0, which fills a world's
 * arrivals with them and runs the same completion as the in-process world
 * (rig_sim_world_complete: sum ranks 0..n-1 in fp32 and round once, or copy slot r from
 * rank r; end = latest earliest start + the collective's cost from the profile; the
 * collective timeout on the virtual clock), then sends every process the status, the end time
 * and the result. So data and virtual times are bit for bit those of the single-process
 * simulator, whatever the processes' timing. (MPI_Allreduce is not used: its summation order
 * is the library's.)
 *
 * Failure (nothing hangs): a communicator that returns MPI errors (MPI_ERRORS_RETURN) and
 * non-blocking transfers polled against timeout_ms of wall-clock time; ranks that disagree
 * on the collective, a late rank (virtual clock) or a missing process (wall clock) fail the
 * collective with a message (rig_sim_mpi_failure) and the pool stays failed, as an aborted
 * NCCL communicator. The caller ends the MPI job (transfers in flight cannot be cancelled).
 *
 * Ownership: the pool owns its communicator (a duplicate of MPI_COMM_WORLD; MPI must be
 * initialized) and, on process 0, the receive buffers for the largest collective
 * (bytes_max per rank, allocated at create: nothing per collective).
 * Threads: one thread per process calls these functions.
 */
#ifndef RIG_SIM_COMM_MPI_H
#define RIG_SIM_COMM_MPI_H

#include <stdbool.h>
#include <stdint.h>

#include "hal/hal_impl.h"
#include "sim/profile.h"

struct rig_sim_mpi; /* opaque */

/* This process's end of a world of every process in the MPI job. `bytes_max`: the largest
 * collective input (an all-reduce's data, an all-gather's input) in bytes; `timeout_ms` (> 0)
 * bounds each collective on both clocks. RIG_E_STATE when MPI is not initialised,
 * RIG_E_INVALID for bad arguments or an MPI job larger than RIG_DEVICES_MAX,
 * RIG_E_NO_MEMORY, RIG_E_IO when MPI fails. */
enum rig_status rig_sim_mpi_create(int64_t bytes_max, int64_t timeout_ms, struct rig_sim_mpi **out);
int32_t rig_sim_mpi_rank(const struct rig_sim_mpi *pool);
int32_t rig_sim_mpi_size(const struct rig_sim_mpi *pool);
/* This process's rank runs `op` (an all-reduce or all-gather), whose stream could start it at
 * earliest_ns (see above). RIG_OK with *end_ns the time it ends on every rank; or the
 * failure (RIG_E_TIMEOUT, RIG_E_INVALID, RIG_E_IO) with *end_ns this rank's arrival + the
 * timeout. */
enum rig_status rig_sim_mpi_collective(struct rig_sim_mpi *pool,
                                       const struct rig_sim_profile *profile,
                                       const struct rig_op *op, int64_t earliest_ns, bool phantom,
                                       int64_t *end_ns);
/* This process's rank failed outside a collective (its step stopped short): fails the pool
 * with `reason`; a rank other than 0 also sends process 0 an aborted arrival for the
 * collective it would have joined next, so process 0 fails that collective at once, naming
 * the rank and the reason, instead of waiting out the timeout. No-op on a failed pool. */
void rig_sim_mpi_abort(struct rig_sim_mpi *pool, const char *reason);
/* Why the pool failed ("" while it has not). */
const char *rig_sim_mpi_failure(const struct rig_sim_mpi *pool);
/* Frees the pool (MPI stays initialized). A healthy pool first waits, within the collective
 * timeout, until every process has reached its destroy (NCCL's finalize is a collective too).
 * NULL: no-op. */
void rig_sim_mpi_destroy(struct rig_sim_mpi *pool);

#endif /* RIG_SIM_COMM_MPI_H */
