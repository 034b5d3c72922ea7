/* mpi.h — ranks across processes: process p of an MPI job runs TP rank p (built with RIG_MPI).
 *
 * The multi-process counterpart of ranks.h's in-process threads, over OpenMPI. Process 0 runs
 * the scheduler; rig_ranks_mpi_run broadcasts each job — the descriptor (struct
 * rig_batch_desc, sent as its bytes) and then its metadata block — to processes 1..N-1, runs
 * rank 0's executor itself, and gathers every process's status of the job, so it returns, as
 * rig_ranks_run does, once every rank has issued the batch with the first failing rank's
 * status — except that a failure of rank 0's own share fails the pool at once (the others
 * may wait in a collective rank 0 left, so no status of theirs is coming). Processes 1..N-1
 * sit in rig_ranks_mpi_follow: receive a job, check it (a descriptor from the wire is input:
 * a bad job kind or a metadata size above the capacity is refused, not asserted), run their
 * rank's executor, report the status; until the exit job that process 0 sends
 * (rig_ranks_mpi_release, or rig_ranks_mpi_destroy when not sent before).
 *
 * Failure (nothing hangs): the pool's communicator (a duplicate of MPI_COMM_WORLD) returns
 * MPI errors instead of aborting (MPI_ERRORS_RETURN), and every transfer is non-blocking and
 * polled against a wall-clock bound, timeout_ms: a process that does not take part in time
 * (stalled) gives RIG_E_TIMEOUT and a message naming the job and what was waited for, and
 * one that has not joined the pool within timeout_ms of another's create ends the job
 * (MPI_Abort, saying so on stderr: the collective duplication in flight cannot be cancelled); an MPI error gives RIG_E_IO with MPI's text. A failed pool stays failed: every
 * later call returns the same status, and rig_ranks_mpi_destroy ends the whole MPI job
 * (MPI_Abort), since transfers in flight cannot be cancelled. A process killed outright is
 * reported by mpirun, which ends the job's other processes.
 *
 * MPI: rig_ranks_mpi_create initializes MPI (threads: MPI_THREAD_SERIALIZED — `rig serve`
 * calls MPI from its engine thread, not the one that started MPI) unless the caller
 * has; rig_ranks_mpi_destroy finalizes it only when create initialized it.
 * Ownership: the pool owns its communicator and its receive buffer (metadata_max bytes,
 * allocated at create: nothing is allocated per job). Threads: one thread per process calls
 * every function here (the executor runs on it).
 */
#ifndef RIG_RANKS_MPI_H
#define RIG_RANKS_MPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine/ranks/ranks.h"

#define RIG_RANKS_MPI_ERROR_MAX 256

struct rig_ranks_mpi; /* opaque */

/* Process-wide, once, before any pool or engine with ranks across processes: initialises
 * MPI (threads: MPI_THREAD_SERIALIZED) unless it is, and gives this process's rank in the job
 * and the job's size. RIG_E_IO (message in `error`) when MPI fails to start. */
enum rig_status rig_ranks_mpi_init(int32_t *rank, int32_t *size, char *error, size_t error_len);
/* Finalises MPI when rig_ranks_mpi_init initialised it; every pool must be destroyed. With
 * `failed`, ends the whole MPI job instead (MPI_Abort): the other processes may be waiting
 * for this one, and finalising would wait for them. */
void rig_ranks_mpi_finalize(bool failed);

/* Joins the MPI job as one rank of a pool of `size` ranks, which must be the job's size
 * (RIG_E_INVALID otherwise, or for size outside 1..RIG_DEVICES_MAX, metadata_max < 0 or
 * timeout_ms <= 0). `metadata_max`: the largest metadata block a job carries. On failure
 * `error` says why and *out is NULL. */
enum rig_status rig_ranks_mpi_create(int32_t size, int64_t metadata_max, int64_t timeout_ms,
                                     rig_rank_execute_fn execute, void *ctx, char *error,
                                     size_t error_len, struct rig_ranks_mpi **out);
/* This process's rank: 0 runs the scheduler and rig_ranks_mpi_run, the others
 * rig_ranks_mpi_follow. */
int32_t rig_ranks_mpi_rank(const struct rig_ranks_mpi *ranks);
/* Process 0: runs `desc` over `metadata` on every rank (see above). */
enum rig_status rig_ranks_mpi_run(struct rig_ranks_mpi *ranks, const struct rig_batch_desc *desc,
                                  const uint8_t *metadata);
/* Processes 1..: runs jobs until the exit job (RIG_OK) or a failure (its status). A job whose
 * executor fails is reported to process 0 and the loop goes on: process 0 decides. The
 * wait for the next job is bounded by timeout_ms only when `bounded`, since a server's
 * scheduler may idle for long. */
enum rig_status rig_ranks_mpi_follow(struct rig_ranks_mpi *ranks, bool bounded);
/* Why the pool failed ("" while it has not). */
const char *rig_ranks_mpi_error(const struct rig_ranks_mpi *ranks);
/* Process 0 of a healthy pool sends the exit job (once; later calls and other processes:
 * no-op), so that processes 1.. leave rig_ranks_mpi_follow and tear their ranks down. The
 * engine calls it before any rank frees its device state: NCCL's comm finalize is a
 * collective of every process, which the followers reach only after their exit job (on
 * GPUs, a process 0 that finalized first waited for them until the timeout). NULL: no-op. */
void rig_ranks_mpi_release(struct rig_ranks_mpi *ranks);
/* Sends the exit job if rig_ranks_mpi_release has not; then frees the pool and finalizes
 * MPI when create initialized it. A failed pool ends the MPI job (MPI_Abort) instead. NULL:
 * no-op. */
void rig_ranks_mpi_destroy(struct rig_ranks_mpi *ranks);

#endif /* RIG_RANKS_MPI_H */
