/* ranks_cli.h — where the TP ranks of `rig run` / `generate` / `serve` run, from the command line:
 * --ranks threads|mpi, and SGLang's multi-node flags --nnodes, --node-rank, --dist-init-addr.
 *
 * --ranks mpi: the command runs under `mpirun -n TP` (docs/engine.md, "Ranks across
 * processes"); process p holds TP rank p, process 0 schedules, prints and writes the results,
 * the others only run their rank's share. rig_ranks_cli_start starts MPI, rig_ranks_cli_finish
 * finalizes it.
 *
 * Multi-node: OpenMPI forms the job across hosts (mpirun --host / --hostfile). Processes
 * started separately cannot form it (OpenMPI 4.1's MPI_Comm_connect between two singletons
 * fails without an ompi-server, which needs mpirun itself), and rig has no socket protocol of
 * its own, so SGLang's flags are accepted for a single node (--nnodes 1 --node-rank 0) and
 * otherwise refused with the mpirun command that does it.
 * Threads: the command's thread.
 */
#ifndef RIG_RANKS_CLI_H
#define RIG_RANKS_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/engine.h"

struct rig_ranks_cli {
    enum rig_ranks_kind ranks;
    int32_t nnodes;             /* --nnodes (1 unless given) */
    int32_t node_rank;          /* --node-rank (0 unless given) */
    const char *dist_init_addr; /* --dist-init-addr HOST:PORT, or NULL */
    int32_t process_rank;       /* after rig_ranks_cli_start: this process in the MPI job */
    int32_t process_count;
    bool started;               /* MPI started here: finish finalizes it */
};

/* Threads, one node, no MPI. Can't fail. */
void rig_ranks_cli_init(struct rig_ranks_cli *ranks);
/* Takes argv[*i] when it is one of the flags above (and its value, moving *i): returns 1;
 * 0 when it is none of them; 2 for a bad value (a message naming `command` on stderr). */
int rig_ranks_cli_parse(const char *command, int argc, char **argv, int *i,
                        struct rig_ranks_cli *ranks);
/* After parsing, for a run of `tp` ranks: refuses a multi-node request (see above) and, for
 * --ranks mpi, starts MPI and checks that the job has tp processes. Returns -1 to go on, else
 * the exit status (2: usage, 1: MPI failed), with a message on stderr. */
int rig_ranks_cli_start(const char *command, struct rig_ranks_cli *ranks, int32_t tp);
/* True when this process prints and writes: process 0 of an MPI job, or any run of threads. */
bool rig_ranks_cli_leads(const struct rig_ranks_cli *ranks);
/* Finalizes MPI when rig_ranks_cli_start started it (after every engine is destroyed); when
 * the run `failed`, ends the whole MPI job instead, at once (rig_ranks_mpi_finalize). */
void rig_ranks_cli_finish(struct rig_ranks_cli *ranks, bool failed);

#endif /* RIG_RANKS_CLI_H */
