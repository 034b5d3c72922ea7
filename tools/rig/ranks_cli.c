/* ranks_cli.c — --ranks and the multi-node flags of `rig run` / `rig generate` (ranks_cli.h). */
#include "tools/rig/ranks_cli.h"

#include <stdio.h>
#include <string.h>

#include "core/engine/ranks/mpi.h"
#include "tools/rig/args.h"

void rig_ranks_cli_init(struct rig_ranks_cli *r)
{
    *r = (struct rig_ranks_cli){.ranks = RIG_RANKS_THREADS, .nnodes = 1, .process_count = 1};
}

/* The value of option argv[*i]; NULL (with a message) when missing. */
static const char *rig__value(const char *command, int argc, char **argv, int *i)
{
    if (*i + 1 < argc) return argv[++*i];
    fprintf(stderr, "rig %s: %s needs a value\n", command, argv[*i]);
    return NULL;
}

int rig_ranks_cli_parse(const char *command, int argc, char **argv, int *i,
                        struct rig_ranks_cli *r)
{
    const char *arg = argv[*i], *v = NULL;
    char msg[128];
    bool nnodes = strcmp(arg, "--nnodes") == 0, node_rank = strcmp(arg, "--node-rank") == 0;
    if (strcmp(arg, "--ranks") != 0 && !nnodes && !node_rank &&
        strcmp(arg, "--dist-init-addr") != 0)
        return 0;
    if ((v = rig__value(command, argc, argv, i)) == NULL) return 2;
    if (strcmp(arg, "--ranks") == 0) {
        if (strcmp(v, "threads") != 0 && strcmp(v, "mpi") != 0) {
            fprintf(stderr, "rig %s: --ranks takes 'threads' or 'mpi', not '%s'\n", command, v);
            return 2;
        }
        r->ranks = v[0] == 'm' ? RIG_RANKS_MPI : RIG_RANKS_THREADS;
    } else if (nnodes || node_rank) {
        int32_t *out = nnodes ? &r->nnodes : &r->node_rank;
        if (rig_args_i32(v, nnodes ? 1 : 0, 4096, out, msg, sizeof msg) != RIG_OK) {
            fprintf(stderr, "rig %s: %s: %s\n", command, arg, msg);
            return 2;
        }
    } else {
        r->dist_init_addr = v;
    }
    return 1;
}

/* SGLang's multi-node launch asked for: refused, naming the mpirun command that does it. */
static int rig__multi_node(const char *command, const struct rig_ranks_cli *r, int32_t tp)
{
    fprintf(stderr,
            "rig %s: --nnodes %d --node-rank %d%s%s: rig forms a group across nodes with "
            "mpirun, not by processes started separately (OpenMPI's connect/accept between "
            "them needs an ompi-server started by mpirun itself). Start every node's process "
            "from one host:\n"
            "  mpirun -n %d --host HOST0:%d,HOST1:%d rig %s ... --ranks mpi\n"
            "(or --hostfile FILE; process p holds TP rank p; docs/engine.md, \"Ranks across "
            "processes\")\n",
            command, r->nnodes, r->node_rank, r->dist_init_addr ? " --dist-init-addr " : "",
            r->dist_init_addr ? r->dist_init_addr : "", tp,
            (tp + r->nnodes - 1) / r->nnodes, (tp + r->nnodes - 1) / r->nnodes, command);
    return 2;
}

int rig_ranks_cli_start(const char *command, struct rig_ranks_cli *r, int32_t tp)
{
    if (r->nnodes > 1 || r->node_rank > 0 || r->dist_init_addr != NULL)
        return rig__multi_node(command, r, tp);
    if (r->ranks != RIG_RANKS_MPI) return -1;
#ifdef RIG_HAVE_MPI
    char error[128];
    if (rig_ranks_mpi_init(&r->process_rank, &r->process_count, error, sizeof error) != RIG_OK) {
        fprintf(stderr, "rig %s: --ranks mpi: %s\n", command, error);
        return 1;
    }
    r->started = true;
    if (r->process_count == tp) return -1;
    if (r->process_rank == 0)
        fprintf(stderr, "rig %s: --ranks mpi with tensor parallelism %d needs %d processes "
                "(mpirun -n %d); this job has %d\n", command, tp, tp, tp, r->process_count);
    rig_ranks_cli_finish(r, false); /* every process sees the same size: none waits */
    return 2;
#else
    fprintf(stderr, "rig %s: --ranks mpi: this build has no OpenMPI (install openmpi-bin "
            "libopenmpi-dev and rebuild)\n", command);
    (void)tp;
    return 2;
#endif
}

bool rig_ranks_cli_leads(const struct rig_ranks_cli *r)
{
    return r->process_rank == 0;
}

void rig_ranks_cli_finish(struct rig_ranks_cli *r, bool failed)
{
#ifdef RIG_HAVE_MPI
    if (r->started) rig_ranks_mpi_finalize(failed);
#else
    (void)failed;
#endif
    r->started = false;
}
