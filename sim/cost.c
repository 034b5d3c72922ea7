/* cost.c — how rig's kernel runs each op, and the roofline, see cost.h. */
#include "sim/cost.h"

#include <math.h>

#include "hal/optable.h"
#include "sim/optable.h"

static double rig__bytes(const struct rig_tensor *t)
{
    return (double)rig_tensor_numel(t) * (double)rig_dtype_size(t->dtype);
}

static int32_t rig__i32(const struct rig_tensor *t, int64_t i)
{
    int64_t index[1] = {i};
    int32_t value;
    memcpy(&value, rig_tensor_at(t, index), sizeof value);
    return value;
}

/* Output tile edge of a GEMM and packed query rows per block of prefill attention (rig's
 * CUDA kernels; cuBLAS tiles are of this order): they give an op's thread-block count. */
#define RIG__GEMM_TILE    128.0
#define RIG__PREFILL_ROWS 128.0


/* The fused q/k norm + RoPE + store kernel moves its bytes at this fraction of the
 * element-wise class's rate (per-head reductions and the cos/sin table; 115 us for 151 MB at
 * an 8192-token chunk on the H100 at d1f63ce, docs/simulator.md "Calibration"). */
#define RIG__QK_FUSED_RATE 0.51

/* The eager launch term in a table's cold times: none. `rig profile` queues each cold issue
 * behind the fill that evicts L2, so the device processes its launch while the fill runs
 * (rig_sim_cost_eager_end_ns), as it does for every op of a step but the first. */
#define RIG__SWEEP_LAUNCH_NS 0.0

static int64_t rig__ceil_ns(double seconds)
{
    double ns = ceil(seconds * 1e9);
    RIG_ASSERT(ns >= 0 && ns < 9.0e18);
    return (int64_t)ns;
}

/* Prefill attention: a block per RIG__PREFILL_ROWS packed query rows of a request (GQA: a
 * block packs the group) per KV head. */
static double rig__prefill_blocks(const struct rig_op_attention_prefill *p)
{
    double tiles = 0;
    double group = (double)p->q.shape[1] / (double)p->k_cache.shape[1];
    for (int64_t r = 0; r < p->table_idx.shape[0]; r++) {
        double q_len = (double)(rig__i32(&p->cu_q, r + 1) - rig__i32(&p->cu_q, r));
        tiles += ceil(q_len * group / RIG__PREFILL_ROWS);
    }
    return tiles * (double)p->k_cache.shape[1];
}

/* A GEMM's class, blocks (none for the small-batch kernel) and reduction depth. */
static struct rig_sim_work rig__kernel_gemm(const struct rig_op_gemm *p)
{
    double m = (double)p->a.shape[0], k = (double)rig_gemm_depth(p), n = (double)p->b.shape[0];
    struct rig_sim_work work = {.op_class = RIG_SIM_OP_CLASS_GEMM};
    /* the small-batch kernel's grid spreads N over every multiprocessor: no occupancy term */
    bool fused = p->prologue != RIG_GEMM_PROLOGUE_NONE || p->accumulate;
    bool gemv = rig_sim_gemm_small_batch(m, n, k, fused);
    work.blocks = gemv ? 0.0 : ceil(m / RIG__GEMM_TILE) * ceil(n / RIG__GEMM_TILE);
    work.depth = k;
    return work;
}

/* How rig's kernel for `op` runs: its class, thread blocks, reduction depth, rate and
 * kernel count (the FLOPs and bytes are left 0). */
static struct rig_sim_work rig__kernel(const struct rig_op *op)
{
    struct rig_sim_work work = {.op_class = RIG_SIM_OP_CLASS_ELEMENTWISE};
    switch (op->kind) {
    case RIG_OP_GEMM: return rig__kernel_gemm(&op->u.gemm);
    case RIG_OP_ATTENTION_PREFILL:
        work.op_class = RIG_SIM_OP_CLASS_ATTENTION;
        work.blocks = rig__prefill_blocks(&op->u.attention_prefill);
        break;
    case RIG_OP_ATTENTION_DECODE:
        work.op_class = RIG_SIM_OP_CLASS_DECODE_ATTENTION;
        work.blocks = (double)op->u.attention_decode.table_idx.shape[0] *
                      (double)op->u.attention_decode.k_cache.shape[1];
        break;
    case RIG_OP_QK_NORM_ROPE_STORE: work.rate = RIG__QK_FUSED_RATE; break;
    case RIG_OP_SAMPLE: work.kernels = 2; break; /* chunks of a row, then a merge per row */
    case RIG_OP_EMBEDDING:
    case RIG_OP_STORE_KV:
    case RIG_OP_GATHER_ROWS:
    case RIG_OP_INDEX_GATHER:
    case RIG_OP_INDEX_SCATTER:
    case RIG_OP_COPY: work.op_class = RIG_SIM_OP_CLASS_COPY; break;
    case RIG_OP_ALL_REDUCE:
    case RIG_OP_ALL_GATHER:
    case RIG_OP_COUNT: RIG_UNREACHABLE();
    default: break;
    }
    return work;
}

/* rig_sim_cost_work and rig_optable_op_key of `op` at once (rig_optable_op_describe: a decode
 * op's page table is read once for both). */
static struct rig_sim_work rig__work_key(const struct rig_op *op, struct rig_optable_key *key)
{
    struct rig_sim_work work = rig__kernel(op);
    struct rig_op_work analytic;
    rig_optable_op_describe(op, key, &analytic);
    work.flops = analytic.flops;
    work.bytes = analytic.bytes;
    return work;
}

struct rig_sim_work rig_sim_cost_work(const struct rig_op *op)
{
    RIG_ASSERT(op != NULL);
    struct rig_sim_work work = rig__kernel(op);
    struct rig_op_work analytic = rig_optable_op_work(op);
    work.flops = analytic.flops;
    work.bytes = analytic.bytes;
    return work;
}

/* An op whose kernel launches fewer thread blocks than fill the GPU (profile full_blocks)
 * reaches a smaller fraction of peak: eff x (blocks / full)^exponent. Fitted to rig's
 * kernels on the H100 (docs/simulator.md, "Calibration"); the block counts follow their
 * tiling (RIG__GEMM_TILE, RIG__PREFILL_ROWS below). */
static double rig__occupancy(const struct rig_sim_profile *profile, const struct rig_sim_work *work)
{
    enum rig_sim_op_class c = work->op_class;
    if (c != RIG_SIM_OP_CLASS_GEMM && c != RIG_SIM_OP_CLASS_ATTENTION &&
        c != RIG_SIM_OP_CLASS_DECODE_ATTENTION)
        return 1.0;
    double full = (double)profile->full_blocks[c];
    if (full <= 0 || work->blocks <= 0 || work->blocks >= full) return 1.0;
    double blocks = work->blocks > 1 ? work->blocks : 1;
    return pow(blocks / full, profile->occupancy_exponent[c]);
}

/* The roofline time of `work`, never less than `floor_ns`. GEMMs use
 * gemm_compute_efficiency x K / (K + gemm_k_half) for FLOPs and efficiency[GEMM] for bytes;
 * both scale by the occupancy. */
static int64_t rig__roofline_ns(const struct rig_sim_profile *profile,
                                const struct rig_sim_work *work, int64_t floor_ns)
{
    double efficiency = profile->efficiency[work->op_class];
    RIG_ASSERT(efficiency > 0 && efficiency <= 1);
    double compute_efficiency = efficiency;
    if (work->op_class == RIG_SIM_OP_CLASS_GEMM) { /* a tile's prologue and epilogue over K */
        double k = work->depth > 1 ? work->depth : 1;
        compute_efficiency = profile->gemm_compute_efficiency * k / (k + profile->gemm_k_half);
    }
    double occupancy = rig__occupancy(profile, work);
    double rate = work->rate > 0 ? work->rate : 1.0;
    double compute_s = work->flops / (profile->peak_bf16_flops * compute_efficiency * occupancy);
    double memory_s = work->bytes / (profile->hbm_bytes_per_s * efficiency * occupancy * rate);
    int64_t ns = rig__ceil_ns(compute_s > memory_s ? compute_s : memory_s);
    return ns > floor_ns ? ns : floor_ns;
}

/* An all-reduce of `bytes` at `ranks` from the profile's measured curve (profile.h,
 * all_reduce_graph_ns): linear in log(time) over log(bytes) between the two points around it,
 * the smallest point's time below the curve (latency-bound there), and above it the last point
 * plus the extra bytes at the last segment's bandwidth. False when the curve has fewer than two
 * points for this rank count. */
static bool rig__curve_ns(const struct rig_sim_profile *profile, double bytes, int32_t ranks,
                          int64_t *ns)
{
    const struct rig_sim_curve_point *c = profile->all_reduce_curve;
    int32_t first = 0, n = 0;
    while (first < profile->all_reduce_curve_count && c[first].ranks != ranks)
        first++;
    while (first + n < profile->all_reduce_curve_count && c[first + n].ranks == ranks)
        n++;
    if (n < 2) return false;
    c += first;
    double t;
    if (bytes <= c[0].bytes) {
        t = c[0].ns;
    } else if (bytes >= c[n - 1].bytes) {
        double per_byte = (c[n - 1].ns - c[n - 2].ns) / (c[n - 1].bytes - c[n - 2].bytes);
        t = c[n - 1].ns + (per_byte > 0 ? per_byte : 0) * (bytes - c[n - 1].bytes);
    } else {
        int32_t i = 0;
        while (bytes > c[i + 1].bytes)
            i++;
        double f = log(bytes / c[i].bytes) / log(c[i + 1].bytes / c[i].bytes);
        t = exp(log(c[i].ns) + f * log(c[i + 1].ns / c[i].ns));
    }
    *ns = (int64_t)llround(t);
    return true;
}

int64_t rig_sim_cost_collective_ns(const struct rig_sim_profile *profile, enum rig_op_kind kind,
                                   double bytes, int32_t ranks)
{
    RIG_ASSERT(ranks >= 1 && bytes >= 0);
    RIG_ASSERT(kind == RIG_OP_ALL_REDUCE || kind == RIG_OP_ALL_GATHER);
    double share = (double)(ranks - 1) / (double)ranks;
    bool reduce = kind == RIG_OP_ALL_REDUCE;
    int64_t measured = 0;
    if (reduce && ranks <= profile->gpus_per_node &&
        rig__curve_ns(profile, bytes, ranks, &measured))
        return measured;
    double rate = reduce ? profile->all_reduce_bytes_per_s : profile->all_gather_bytes_per_s;
    int64_t latency = reduce ? profile->all_reduce_latency_ns : profile->all_gather_latency_ns;
    if (ranks > profile->gpus_per_node) { /* the ring crosses nodes (profile.h) */
        if (profile->inter_node_bytes_per_s < rate) rate = profile->inter_node_bytes_per_s;
        latency += profile->inter_node_latency_ns;
    }
    return latency + rig__ceil_ns((reduce ? 2.0 : 1.0) * share * bytes / rate);
}

/* The warm time's weight in the node time of an op the table costs by `key` (sim/optable.c):
 * the profile's op_table_warm_weight_early for a small-batch GEMM whose kernel asks for its
 * weights before its programmatic-dependent-launch wait (rig_sim_gemm_early_weights) and for
 * decode attention whose one-wave grid asks for its first keys there (rig_sim_decode_early),
 * op_table_warm_weight for the rest. By the key the table costs, not the op: a fused GEMM
 * costed from its plain shape's points (rig_sim_optable_form_key) takes their kernel's. A GEMM
 * with a prologue on the persistent form at fewer than 16 warps a block
 * (rig_gemv_prologue_persistent: Qwen3-0.6B's qkv and gate_up at batch 1) stages its weights
 * before the wait too, but takes op_table_warm_weight, as measured: with the early weight its
 * calibration run's batch-1 steps went from +2.5 % (mean) to -2.1 %, their median / p90
 * |error| from 2.7 / 7.4 % to 5.6 / 10.6 % and the decode p90 from 3.7 to 6.9 % (the operand
 * is made after the wait, a block-wide pass that a graph of warm copies does not pay alike;
 * eleventh session, docs/simulator.md). */
static double rig__warm_weight(const struct rig_sim_profile *profile,
                               const struct rig_optable_key *key)
{
    const double *p = key->p;
    if (rig_sim_decode_early(key, profile->multiprocessors))
        return profile->op_table_warm_weight_early;
    if (key->kind == RIG_OP_GEMM &&
        rig_sim_gemm_early_weights(p[0], p[1], p[2], rig_sim_gemm_fused(key),
                                   profile->multiprocessors))
        return profile->op_table_warm_weight_early;
    return profile->op_table_warm_weight;
}

/* The table's node time of `op` with key `op_key` (false: the table does not reach it). A
 * sampler batch of several rows' kinds is the row-weighted mean of the kinds' times at its
 * whole size: its first pass runs every row's chunks side by side, each row's work its kind's. */
static bool rig__table_ns(const struct rig_sim_profile *profile, const struct rig_op *op,
                          const struct rig_optable_key *op_key, const struct rig_sim_work *work,
                          double *ns)
{
    struct rig_optable_key key = rig_sim_optable_form_key(profile->table, op_key);
    double weight = rig__warm_weight(profile, &key);
    if (op->kind != RIG_OP_SAMPLE || key.p[2] != RIG_SAMPLE_MIXED)
        return rig_sim_optable_predict(profile->table, &key, work->flops, work->bytes,
                                       profile->peak_bf16_flops, profile->hbm_bytes_per_s,
                                       RIG__SWEEP_LAUNCH_NS, weight, ns, NULL);
    int64_t rows[RIG_SAMPLE_KINDS], total = 0;
    rig_optable_sample_rows(&op->u.sample, rows);
    for (int32_t k = 0; k < RIG_SAMPLE_KINDS; k++)
        total += rows[k];
    double sum = 0;
    for (int32_t k = 0; k < RIG_SAMPLE_KINDS; k++) {
        if (rows[k] == 0) continue;
        key.p[2] = k;
        double kind_ns = 0;
        if (!rig_sim_optable_predict(profile->table, &key, work->flops, work->bytes,
                                     profile->peak_bf16_flops, profile->hbm_bytes_per_s,
                                     RIG__SWEEP_LAUNCH_NS, weight, &kind_ns, NULL))
            return false;
        sum += (double)rows[k] / (double)total * kind_ns;
    }
    *ns = sum;
    return true;
}

/* A kernel of rig's with `work` (rig_sim_cost_work of `op`) and, with a table, `key`
 * (rig_optable_op_key of `op`; NULL: computed here): the table's node time where it reaches
 * the op, else its class's fixed latency (per kernel the op launches) plus the roofline; at
 * least the shortest graph node. A decode key reads the batch's page table, so a caller that
 * has it passes it. */
static int64_t rig__kernel_ns(const struct rig_sim_profile *profile, const struct rig_op *op,
                              const struct rig_sim_work *work, const struct rig_optable_key *key,
                              bool *missed)
{
    if (profile->table != NULL) { /* measured: the op table, where it reaches the op */
        struct rig_optable_key own = key != NULL ? *key : rig_optable_op_key(op);
        double measured = 0;
        if (rig__table_ns(profile, op, &own, work, &measured)) {
            int64_t ns = rig__ceil_ns(measured * 1e-9);
            return ns > profile->graph_node_ns ? ns : profile->graph_node_ns;
        }
        if (missed != NULL) *missed = true;
    }
    int64_t kernels = work->kernels > 1 ? work->kernels : 1;
    int64_t ns =
        kernels * profile->latency_ns[work->op_class] + rig__roofline_ns(profile, work, 0);
    return ns > profile->graph_node_ns ? ns : profile->graph_node_ns;
}

/* attention_decode_store's two ops, as ops of their own kinds. */
static void rig__decode_store_parts(const struct rig_op *op, struct rig_op *attend,
                                    struct rig_op *store)
{
    RIG_ASSERT(op->kind == RIG_OP_ATTENTION_DECODE_STORE);
    *attend = (struct rig_op){.kind = RIG_OP_ATTENTION_DECODE,
                              .u.attention_decode = op->u.attention_decode_store.attend};
    *store = (struct rig_op){.kind = RIG_OP_QK_NORM_ROPE_STORE,
                             .u.qk_norm_rope_store = op->u.attention_decode_store.store};
}

/* attention_decode_store: its attention's node time (every decode rule of the table applies)
 * plus what the table's fused points measured above attention alone
 * (rig_sim_optable_store_extra), at least the shortest node; with a table swept before the
 * fused op, or without one, the two ops as nodes of their own (what the fused op replaced). */
static int64_t rig__decode_store_ns(const struct rig_sim_profile *profile, const struct rig_op *op,
                                    bool *missed)
{
    struct rig_op attend, store;
    rig__decode_store_parts(op, &attend, &store);
    struct rig_sim_work store_work = rig_sim_cost_work(&store);
    if (profile->table == NULL) {
        struct rig_sim_work attend_work = rig_sim_cost_work(&attend);
        return rig__kernel_ns(profile, &attend, &attend_work, NULL, missed) +
               rig__kernel_ns(profile, &store, &store_work, NULL, missed);
    }
    /* the fused op's key is its attention's (hal/optable.c), its FLOPs the two ops' */
    struct rig_optable_key attend_key, key;
    struct rig_sim_work attend_work = rig__work_key(&attend, &attend_key);
    key = attend_key;
    key.kind = RIG_OP_ATTENTION_DECODE_STORE;
    int64_t ns = rig__kernel_ns(profile, &attend, &attend_work, &attend_key, missed);
    double extra = 0;
    if (rig_sim_optable_store_extra(profile->table, &key, attend_work.flops + store_work.flops,
                                    rig__warm_weight(profile, &attend_key), &extra)) {
        ns += (int64_t)llround(extra);
        return ns > profile->graph_node_ns ? ns : profile->graph_node_ns;
    }
    return ns + rig__kernel_ns(profile, &store, &store_work, NULL, missed);
}

/* An op's node time: collectives by the transfer formula, attention_decode_store by
 * rig__decode_store_ns, every other op as a kernel of rig's (rig__kernel_ns). */
static int64_t rig__op_ns(const struct rig_sim_profile *profile, const struct rig_op *op,
                          int32_t ranks, bool *missed)
{
    RIG_ASSERT(profile != NULL && op != NULL);
    if (op->kind == RIG_OP_ALL_REDUCE)
        return rig_sim_cost_collective_ns(profile, op->kind, rig__bytes(&op->u.all_reduce.data),
                                          ranks);
    if (op->kind == RIG_OP_ALL_GATHER)
        return rig_sim_cost_collective_ns(profile, op->kind, rig__bytes(&op->u.all_gather.out),
                                          ranks);
    if (op->kind == RIG_OP_ATTENTION_DECODE_STORE) return rig__decode_store_ns(profile, op, missed);
    if (profile->table == NULL) {
        struct rig_sim_work work = rig_sim_cost_work(op);
        return rig__kernel_ns(profile, op, &work, NULL, missed);
    }
    struct rig_optable_key key;
    struct rig_sim_work work = rig__work_key(op, &key);
    return rig__kernel_ns(profile, op, &work, &key, missed);
}

/* Eagerly launched at an idle device, a kernel also pays the per-launch processing a graph
 * node skips: the measured difference of the two shortest kernels, min_kernel_ns -
 * graph_node_ns (behind busy work it is hidden: rig_sim_cost_eager_end_ns). */
int64_t rig_sim_cost_op_ns(const struct rig_sim_profile *profile, const struct rig_op *op,
                           int32_t ranks)
{
    return rig_sim_cost_launch_ns(profile, op, ranks, true, NULL);
}

int64_t rig_sim_cost_launch_ns(const struct rig_sim_profile *profile, const struct rig_op *op,
                               int32_t ranks, bool eager, bool *table_missed)
{
    if (table_missed != NULL) *table_missed = false;
    int64_t ns = rig__op_ns(profile, op, ranks, table_missed);
    if (!eager) return ns;
    if (op->kind == RIG_OP_ALL_REDUCE || op->kind == RIG_OP_ALL_GATHER) return ns;
    int64_t launch = profile->min_kernel_ns - profile->graph_node_ns;
    ns += launch > 0 ? launch : 0;
    return ns > profile->min_kernel_ns ? ns : profile->min_kernel_ns;
}

int64_t rig_sim_cost_eager_end_ns(const struct rig_sim_profile *profile, int64_t arrival_ns,
                                  int64_t start_ns, int64_t node_ns)
{
    RIG_ASSERT(profile != NULL);
    RIG_ASSERT(node_ns >= 0 && start_ns >= arrival_ns);
    int64_t launch = profile->min_kernel_ns - profile->graph_node_ns;
    int64_t processed = arrival_ns + (launch > 0 ? launch : 0);
    int64_t end = (processed > start_ns ? processed : start_ns) + node_ns;
    int64_t floor = start_ns + profile->min_kernel_ns;
    return end > floor ? end : floor;
}

int64_t rig_sim_cost_issue_host_ns(const struct rig_sim_profile *profile, const struct rig_op *op)
{
    RIG_ASSERT(profile != NULL && op != NULL);
    if (profile->table == NULL || op->kind == RIG_OP_ALL_REDUCE || op->kind == RIG_OP_ALL_GATHER)
        return profile->kernel_launch_host_ns;
    bool fused = op->kind == RIG_OP_ATTENTION_DECODE_STORE;
    if (fused && !rig_sim_optable_has_kind(profile->table, RIG_OP_ATTENTION_DECODE_STORE)) {
        struct rig_op attend, store; /* a table without the fused op: its two issues */
        rig__decode_store_parts(op, &attend, &store);
        return rig_sim_cost_issue_host_ns(profile, &attend) +
               rig_sim_cost_issue_host_ns(profile, &store);
    }
    struct rig_sim_work work = rig_sim_cost_work(op);
    struct rig_optable_key key = rig_optable_op_key(op);
    if (op->kind == RIG_OP_SAMPLE && key.p[2] == RIG_SAMPLE_MIXED) /* the issue is one call */
        key.p[2] = RIG_SAMPLE_WHOLE;
    double measured = 0, host = 0;
    if (!rig_sim_optable_predict(profile->table, &key, work.flops, work.bytes,
                                 profile->peak_bf16_flops, profile->hbm_bytes_per_s,
                                 RIG__SWEEP_LAUNCH_NS, profile->op_table_warm_weight,
                                 &measured, &host) ||
        host <= 0)
        return profile->kernel_launch_host_ns;
    RIG_ASSERT(host < 9.0e18);
    return (int64_t)llround(host);
}

int64_t rig_sim_cost_node_ns(const struct rig_sim_profile *profile, const struct rig_op *op,
                             int32_t ranks)
{
    return rig_sim_cost_launch_ns(profile, op, ranks, false, NULL);
}

int64_t rig_sim_cost_copy_ns(const struct rig_sim_profile *profile, enum rig_copy_kind kind,
                             size_t bytes)
{
    RIG_ASSERT(profile != NULL);
    switch (kind) {
    case RIG_COPY_HOST_TO_DEVICE:
        return profile->h2d_latency_ns + rig__ceil_ns((double)bytes / profile->h2d_bytes_per_s);
    case RIG_COPY_DEVICE_TO_HOST:
        return profile->d2h_latency_ns + rig__ceil_ns((double)bytes / profile->d2h_bytes_per_s);
    case RIG_COPY_DEVICE_TO_DEVICE: {
        struct rig_sim_work work = {.bytes = 2.0 * (double)bytes,
                                    .op_class = RIG_SIM_OP_CLASS_COPY};
        return rig__roofline_ns(profile, &work, profile->min_kernel_ns);
    }
    }
    RIG_UNREACHABLE();
}

int64_t rig_sim_cost_fill_ns(const struct rig_sim_profile *profile, size_t bytes)
{
    RIG_ASSERT(profile != NULL);
    struct rig_sim_work work = {.bytes = (double)bytes, .op_class = RIG_SIM_OP_CLASS_COPY};
    return rig__roofline_ns(profile, &work, profile->min_kernel_ns);
}
