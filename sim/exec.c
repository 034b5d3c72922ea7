/* exec.c — issuing one op on a simulated stream: clock, faults, math, collectives.
 *
 * Ops run eagerly, at issue time, on host memory (the reference kernels of sim/kernels.h);
 * the clock says when they would have run on the device. In timing-only mode an op's math
 * runs only when every tensor it touches is real (METADATA) memory: the token-pool gathers
 * and scatters on metadata run for real; an op with any phantom tensor is skipped and its
 * outputs keep their contents — except SAMPLE with phantom logits and real tokens, seed and
 * position tensors, which draws its tokens from the counter-based RNG
 * (rig_sim_op_sample_timing_only), so timing-only runs still produce tokens.
 */
#include <stddef.h>
#include <string.h>

#include "sim/comm.h"
#include "sim/comm_mpi.h"
#include "sim/cost.h"
#include "sim/device.h"
#include "sim/graph.h"
#include "sim/kernels.h"

/* Phantom tensors of `op`, as a bit mask over rig__op_tensors' order. */
static uint32_t rig__phantom_mask(const struct rig_sim_device *device, const struct rig_op *op)
{
    if (!device->timing_only) return 0;
    const struct rig_tensor *list[RIG_OP_TENSORS_MAX];
    int32_t n = rig_op_tensors(op, list);
    uint32_t mask = 0;
    for (int32_t i = 0; i < n; i++) {
        if (rig_sim_memory_is_phantom(&device->memory, list[i]->data)) mask |= 1u << i;
    }
    return mask;
}

/* The math of a non-collective op, per the timing-only rules in the file comment. A graph
 * node's phantom tensors are remembered in `memo` (its buffers never change). */
static void rig__run_math(const struct rig_sim_device *device, const struct rig_op *op,
                          struct rig_sim_node_memo *memo)
{
    uint32_t phantom = memo != NULL && memo->masked ? memo->phantom
                                                    : rig__phantom_mask(device, op);
    if (memo != NULL) {
        memo->masked = true;
        memo->phantom = phantom;
    }
    if (phantom == 0) {
        enum rig_status status = rig_sim_op_run(op);
        RIG_ASSERT_MSG(status == RIG_OK, "a validated op failed in the reference kernels");
        return;
    }
    /* Bits in rig__tensor_offsets' SAMPLE order: tokens, logits, ..., seed, position. The
     * timing-only sampler reads only seed and position and writes tokens. */
    const uint32_t logits = 1u << 1, needed_real = 1u << 0 | 1u << 5 | 1u << 6;
    if (op->kind == RIG_OP_SAMPLE && (phantom & logits) && !(phantom & needed_real))
        rig_sim_op_sample_timing_only(&op->u.sample);
}

/* Whether `op`'s cost reads the batch's metadata: attention and penalize costs read kv_len /
 * cu_q, the sampler's its rows' parameters, which in timing-only mode must be real metadata
 * (checked here), and which change every step, so a graph node of theirs never keeps its cost
 * (struct rig_sim_node_memo). An op whose cost comes to read metadata is added here, for both
 * reasons. */
static bool rig__cost_reads_metadata(const struct rig_sim_device *device, const struct rig_op *op)
{
    const struct rig_sim_memory *memory = &device->memory;
    if (op->kind == RIG_OP_ATTENTION_PREFILL) {
        RIG_ASSERT_MSG(!rig_sim_memory_is_phantom(memory, op->u.attention_prefill.kv_len.data) &&
                           !rig_sim_memory_is_phantom(memory, op->u.attention_prefill.cu_q.data),
                       "attention_prefill: kv_len and cu_q must be METADATA buffers");
    }
    if (op->kind == RIG_OP_ATTENTION_DECODE) {
        RIG_ASSERT_MSG(!rig_sim_memory_is_phantom(memory, op->u.attention_decode.kv_len.data),
                       "attention_decode: kv_len must be a METADATA buffer");
    }
    if (op->kind == RIG_OP_ATTENTION_DECODE_STORE) {
        RIG_ASSERT_MSG(
            !rig_sim_memory_is_phantom(memory, op->u.attention_decode_store.attend.kv_len.data),
            "attention_decode_store: kv_len must be a METADATA buffer");
    }
    if (op->kind == RIG_OP_PENALIZE) {
        RIG_ASSERT_MSG(!rig_sim_memory_is_phantom(memory, op->u.penalize.kv_len.data),
                       "penalize: kv_len must be a METADATA buffer");
    }
    if (op->kind == RIG_OP_SAMPLE) { /* its rows' kind (hal/optable.h) */
        const struct rig_op_sample *p = &op->u.sample;
        RIG_ASSERT_MSG(
            !rig_sim_memory_is_phantom(memory, p->temperature.data) &&
                !rig_sim_memory_is_phantom(memory, p->top_k.data) &&
                !rig_sim_memory_is_phantom(memory, p->top_p.data) &&
                (p->min_p.data == NULL || !rig_sim_memory_is_phantom(memory, p->min_p.data)),
            "sample: temperature, top_k, top_p and min_p must be METADATA buffers");
    }
    return op->kind == RIG_OP_ATTENTION_PREFILL || op->kind == RIG_OP_ATTENTION_DECODE ||
           op->kind == RIG_OP_ATTENTION_DECODE_STORE || op->kind == RIG_OP_PENALIZE ||
           op->kind == RIG_OP_SAMPLE;
}

/* The fault plan's stall for this op (0 when it is not the chosen one). */
static int64_t rig__stall_ns(struct rig_sim_device *device)
{
    int64_t index = device->ops_since_faults++;
    if (device->faults.stall_op_at < 0 || index != device->faults.stall_op_at) return 0;
    return device->faults.stall_ns;
}

/* The fault plan at this collective: moves `start` (LATE, STALL) or fails (FAIL). */
static enum rig_status rig__collective_fault(struct rig_sim_device *device, int64_t *start)
{
    int64_t index = device->collectives_since_faults++;
    const struct rig_sim_faults *f = &device->faults;
    if (f->collective_fault == RIG_HAL_COLLECTIVE_NONE || index != f->collective_at)
        return RIG_OK;
    if (f->collective_fault == RIG_HAL_COLLECTIVE_LATE) *start += f->collective_delay_ns;
    if (f->collective_fault == RIG_HAL_COLLECTIVE_STALL) *start = RIG_SIM_NEVER;
    return f->collective_fault == RIG_HAL_COLLECTIVE_FAIL ? RIG_E_FAULT : RIG_OK;
}

static enum rig_status rig__collective(struct rig_sim_device *device, const struct rig_op *op,
                                       int64_t start, int64_t *end)
{
    const struct rig_tensor *list[RIG_OP_TENSORS_MAX];
    int32_t n = rig_op_tensors(op, list);
    bool phantom = false;
    for (int32_t i = 0; i < n; i++)
        phantom = phantom || rig_sim_memory_is_phantom(&device->memory, list[i]->data);
    enum rig_status status = rig__collective_fault(device, &start);
    if (status != RIG_OK) return status;
#ifdef RIG_HAVE_MPI
    if (device->mpi != NULL)
        return rig_sim_mpi_collective(device->mpi, &device->profile, op, start, phantom, end);
#endif
    RIG_ASSERT_MSG(device->world->size > 1, "single-rank collectives are done by dispatch");
    return rig_sim_world_collective(device->world, &device->profile, device->rank, op, start,
                                    phantom, end);
}

/* The op's duration as a graph node from the profile, or the node's remembered one (an
 * eager launch adds its launch processing: rig_sim_cost_eager_end_ns). */
static int64_t rig__duration_ns(struct rig_sim_device *device, const struct rig_op *op,
                                bool reads_metadata, struct rig_sim_node_memo *memo)
{
    if (memo != NULL && memo->ns > 0) { /* kept: its cost reads no metadata */
        device->stats.table_misses += memo->missed;
        return memo->ns;
    }
    bool remember = memo != NULL && !reads_metadata;
    bool missed = false;
    int64_t ns = rig_sim_cost_launch_ns(&device->profile, op, 1, false, &missed);
    device->stats.table_misses += missed;
    if (remember && ns > 0) {
        memo->ns = ns;
        memo->missed = missed;
    }
    return ns;
}

enum rig_status rig_sim_exec_launch(struct rig_stream *stream, const struct rig_op *op,
                                    enum rig_sim_launch launch, struct rig_sim_node_memo *memo)
{
    struct rig_sim_device *device = rig_sim_device_of(stream->device);
    struct rig_sim_stream *sim_stream = rig_sim_stream_of(stream);
    RIG_ASSERT(op != NULL);
    bool collective = op->kind == RIG_OP_ALL_REDUCE || op->kind == RIG_OP_ALL_GATHER;
    bool reads_metadata = !collective && rig__cost_reads_metadata(device, op); /* checks first */
    /* A graph node's launch was paid for by the graph launch (sim/graph.c). */
    int64_t host_ns = launch == RIG_SIM_LAUNCH_EAGER
                          ? rig_sim_cost_issue_host_ns(&device->profile, op)
                          : 0;
    int64_t start =
        rig_sim_clock_kernel_start(&device->clock, &device->profile, host_ns, sim_stream->ready_ns);
    int64_t arrival = device->clock.host_ns + device->profile.kernel_launch_latency_ns;
    int64_t stall = rig__stall_ns(device);
    int64_t end;
    if (collective) {
        /* A failed collective leaves the clock alone: the group is dead, the run over. */
        start += stall;
        enum rig_status status = rig__collective(device, op, start, &end);
        if (status != RIG_OK) return status;
    } else {
        int64_t node = rig__duration_ns(device, op, reads_metadata, memo);
        end = launch == RIG_SIM_LAUNCH_EAGER
                  ? rig_sim_cost_eager_end_ns(&device->profile, arrival, start, node)
                  : start + node;
        start += stall;
        end += stall;
        rig__run_math(device, op, memo);
    }
    RIG_ASSERT(end >= start);
    rig_sim_clock_kernel_run(&device->clock, start, end - start);
    sim_stream->ready_ns = end;
    device->stats.ops_issued++;
    device->stats.device_busy_ns += end - start;
    device->stats.op_count[op->kind]++;
    device->stats.op_ns[op->kind] += end - start;
    return RIG_OK;
}

enum rig_status rig_sim_exec_op(struct rig_stream *stream, const struct rig_op *op)
{
    RIG_ASSERT(stream != NULL && op != NULL);
    if (stream->capturing) return rig_sim_graph_record(stream, op);
    return rig_sim_exec_launch(stream, op, RIG_SIM_LAUNCH_EAGER, NULL);
}
