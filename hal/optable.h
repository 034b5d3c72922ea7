/* optable.h — op tables, the part both sides share: the key that names an op's shape, the
 * op's analytic work (FLOPs and bytes), a timed point, and the HDF5 file that holds the
 * points. `rig profile` (core/harness/bench/profile.c) writes tables; the simulator's
 * table-driven cost model (sim/optable.h) reads them and interpolates. Both sit above the
 * HAL, so the format lives here and neither includes the other.
 *
 * Keys, p[0..5] (unused: 0):
 *   gemm                M, N, K (rig_gemm_depth), bytes per output element, prologue (enum
 *                       rig_gemm_prologue), accumulate (0 or 1): the fused forms (hal/ops.h);
 *                       tables swept before them have p[4] = p[5] = 0
 *   attention_decode    requests, mean KV length (positions shared between requests' page-table
 *                       rows counted once), max KV length, Hq, Hk, head dim
 *                       (attention_decode_store: its attention's key)
 *   attention_prefill   requests, query tokens, mean KV length per request, Hq, Hk, head dim
 *   sample              rows, bytes moved, the rows' kind (enum rig_sample_rows)
 *   every other op      rows (the first dimension of its main tensor), bytes moved
 *
 * Work (docs/simulator.md gives every formula): FLOPs and bytes moved to and from device
 * memory, from the op's shapes; attention reads the per-request lengths (kv_len, cu_q) and the
 * sampler's key its rows' parameters (temperature, top_k, top_p, min_p) from their tensors,
 * which must be host-readable memory (METADATA buffers on the simulator, the sweep's staging
 * on a real device).
 *
 * File: dataset /points (one packed row per point: kind, p[6], flops, bytes, cold_ns,
 * cold_p10_ns, cold_p90_ns, warm_ns, host_ns, first_host_ns) and string attributes on the
 * root (format = "rig-optable", then the writer's: device, backend, git_commit, ...). The
 * host columns are optional when reading (tables written before them read 0: not measured).
 * Threads: key and work are pure functions; reading and writing use the HDF5 library, whose
 * calls the caller serialises (the simulator loads under its own lock).
 */
#ifndef RIG_HAL_OPTABLE_H
#define RIG_HAL_OPTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/host_model.h"
#include "hal/ops.h"
#include "hal/status.h"

#define RIG_OPTABLE_PARAMS     6
#define RIG_OPTABLE_POINTS_MAX (1 << 16)

struct rig_optable_key {
    int32_t kind; /* enum rig_op_kind */
    double p[RIG_OPTABLE_PARAMS];
};

/* One timed point of a sweep. */
struct rig_optable_point {
    struct rig_optable_key key;
    double flops, bytes; /* the op's analytic work (rig_optable_op_work) */
    double cold_ns;      /* median device time, operands evicted from L2 first */
    double cold_p10_ns, cold_p90_ns;
    double warm_ns;       /* median device time per issue, repeated in a graph */
    double host_ns;       /* median host time of one eager issue (the op call); 0: not measured */
    double first_host_ns; /* host time of the shape's first issue in the process (module
                             loading, a library's choice of kernel); 0: not measured */
};

/* The host time of the calls a step makes besides the table's ops, measured by the sweep on
 * the machine the table describes (core/harness/bench/profile.c): each the median and the
 * mean host time of one issue. The simulator takes them over its profile's keys of the same
 * names (sim/profile.h), the means where the table has them (a step's host time is a sum of
 * calls, so it pays their means, tails included), so a table carries its host with it: the
 * GPU machines lent for a sweep differ in host speed by up to 2 x (docs/simulator.md). 0: not
 * measured. Stored as string attributes of the file's root named by rig_optable_host_keys
 * (medians) and rig_optable_host_mean_keys (means).
 *
 * With them, the engine's own host time (hal/host_model.h) as `rig profile`'s calibration
 * fitted it on the same machine: the least-squares coefficients (means), which the simulator
 * takes over its profile's keys of the same names (rig_host_model_keys), and the
 * least-absolute-deviation ones (medians, "..._median_ns": rig_optable_host_median_key), kept
 * for reference. Each coefficient the file does not have reads 0 with its `given` flag false,
 * and leaves the profile's key as it is. */
enum rig_optable_host_call {
    RIG_OPTABLE_HOST_UPLOAD = 0,    /* a few KB, pinned host to device, async */
    RIG_OPTABLE_HOST_DOWNLOAD,      /* a few KB, device to pinned host, async */
    RIG_OPTABLE_HOST_DEVICE_COPY,   /* a few KB, device to device */
    RIG_OPTABLE_HOST_EVENT_RECORD,  /* an event recorded on a stream */
    RIG_OPTABLE_HOST_STREAM_WAIT,   /* a stream made to wait for an event */
    RIG_OPTABLE_HOST_GRAPH_LAUNCH,  /* a captured graph of RIG_OPTABLE_HOST_GRAPH_NODES ops */
    RIG_OPTABLE_HOST_KERNEL_LAUNCH, /* an op the table has no point for (a small index gather) */
    RIG_OPTABLE_HOST_CALLS
};
#define RIG_OPTABLE_HOST_GRAPH_NODES 256 /* about a decode step's graph (258-366 nodes) */

struct rig_optable_host {
    double ns[RIG_OPTABLE_HOST_CALLS];      /* medians */
    double mean_ns[RIG_OPTABLE_HOST_CALLS]; /* means of the same issues */
    struct rig_host_model model;            /* the engine's host time, least squares */
    struct rig_host_model model_median;     /* the same, least absolute deviations */
    bool model_given[RIG_HOST_TERMS][RIG_HOST_FACTORS];        /* `model`'s attribute present */
    bool model_median_given[RIG_HOST_TERMS][RIG_HOST_FACTORS]; /* `model_median`'s */
};

/* The attribute names: "upload_host_ns", ..., the simulator profile's key names; the means'
 * "upload_host_mean_ns", ... */
extern const char *const rig_optable_host_keys[RIG_OPTABLE_HOST_CALLS];
extern const char *const rig_optable_host_mean_keys[RIG_OPTABLE_HOST_CALLS];

/* The attribute name of the host model's median coefficient (term, factor):
 * rig_host_model_keys' name with "_ns" replaced by "_median_ns" ("host_loop_median_ns",
 * "host_prepare_per_request_median_ns"). Writes at most `len` bytes. Can't fail. */
void rig_optable_host_median_key(enum rig_host_term term, enum rig_host_factor factor,
                                 char *out, size_t len);

/* What an op does, whatever runs it. */
struct rig_op_work {
    double flops; /* floating-point operations */
    double bytes; /* bytes read from and written to device memory */
};

/* The work of a validated, non-collective op. Can't fail. */
struct rig_op_work rig_optable_op_work(const struct rig_op *op);

/* The key of a validated, non-collective op. Can't fail. */
struct rig_optable_key rig_optable_op_key(const struct rig_op *op);

/* Both at once, the same values: decode attention's shared positions (a pass over its page
 * table's rows) are counted once for the two, which a cost model asking both for every decode
 * op of every step would otherwise pay twice. Can't fail. */
void rig_optable_op_describe(const struct rig_op *op, struct rig_optable_key *key,
                             struct rig_op_work *work);

/* The decode-attention kernel the CUDA backend runs on a Hopper GPU for a batch of `requests`
 * rows with heads_q / heads_kv query heads per KV head and head dim `head_dim` on a device of
 * `multiprocessors` SMs: true for the tensor-core kernel (cuda/ops/attention_prefill_wgmma.cu's
 * decode variant: one block a (request, KV head) item, K and V staged in shared memory), false
 * for the register path. Groups of 4 to 8 at head dims 64 and 128 with at least
 * multiprocessors / RIG_DECODE_TC_SM_DIVISOR items; multiprocessors 0 (a device not known to
 * have them): false. One rule for both backends: cuda/ops/attention_decode.cu dispatches by it
 * (on a compute capability 9.0 device with aligned tensors), the simulator's op table keeps
 * the two kernels' points apart by it (sim/optable.c). Measured on an H200:
 * docs/performance.md, "decode attention on tensor cores". A pure function. */
#define RIG_DECODE_TC_SM_DIVISOR 3
static inline bool rig_decode_tensor_cores(int64_t requests, int64_t heads_q, int64_t heads_kv,
                                           int64_t head_dim, int64_t multiprocessors)
{
    if (multiprocessors <= 0 || heads_kv <= 0 || heads_q % heads_kv != 0) return false;
    int64_t group = heads_q / heads_kv;
    return group >= 4 && group <= 8 && (head_dim == 64 || head_dim == 128) &&
           requests * heads_kv * RIG_DECODE_TC_SM_DIVISOR >= multiprocessors;
}

/* What the sampler does for a row, from its parameters (cuda/ops/sample.cu decides the same per
 * row on the device, rig__row_kind): GREEDY, the first maximum of the logits (temperature <= 0
 * or top-k 1); WHOLE, Gumbel-max over the whole vocabulary (Philox noise for every logit); CUT,
 * the cut-off search of top-k below the vocabulary, top-p below 1 or min-p above 0. A sample
 * op's key holds its rows' kind, MIXED when they differ. WHOLE is 0: what every table swept
 * before the kinds were told apart measured (temperature 1, no cut-off). A pure function. */
enum rig_sample_rows {
    RIG_SAMPLE_WHOLE = 0,
    RIG_SAMPLE_GREEDY = 1,
    RIG_SAMPLE_CUT = 2,
    RIG_SAMPLE_MIXED = 3,
};
#define RIG_SAMPLE_KINDS 3 /* WHOLE, GREEDY, CUT: what a row can be */

static inline enum rig_sample_rows rig_sample_row_kind(float temperature, int32_t top_k,
                                                       float top_p, float min_p, int64_t vocab)
{
    if (!(temperature > 0.0f) || top_k == 1) return RIG_SAMPLE_GREEDY;
    bool top_k_cuts = top_k > 0 && top_k < vocab;
    return top_k_cuts || top_p < 1.0f || min_p > 0.0f ? RIG_SAMPLE_CUT : RIG_SAMPLE_WHOLE;
}

/* How many of a validated sample op's rows are of each kind (rows[k] for k < RIG_SAMPLE_KINDS),
 * from its parameter tensors (host-readable). Can't fail. */
void rig_optable_sample_rows(const struct rig_op_sample *p, int64_t rows[RIG_SAMPLE_KINDS]);

/* The CUDA backend's small-batch GEMM (cuda/ops/gemv.cu): K in steps of RIG_GEMV_STEP, a warp's
 * loads in batches of RIG_GEMV_UNROLL steps, RIG_GEMV_COLUMNS output columns a block, at most
 * RIG_GEMV_WARPS_MAX warps a block, about RIG_GEMV_WARPS_PER_SM warps an SM aimed for. One
 * geometry for both backends: gemv.cu launches by it, and the simulator asks it which of those
 * kernels ask for their weights before their PDL wait (sim/optable.c). Pure functions. */
#define RIG_GEMV_STEP         32
#define RIG_GEMV_UNROLL       8
#define RIG_GEMV_COLUMNS      8
#define RIG_GEMV_WARPS_MAX    16
#define RIG_GEMV_WARPS_PER_SM 16
/* Rows of the persistent form where a warp's K run is several batches (gemv.cu says why). */
#define RIG_GEMV_MULTI_ROWS 2

struct rig_gemv_geometry {
    int64_t blocks;         /* column tiles, one block each in the per-tile kernel */
    int64_t steps;          /* ceil(K / RIG_GEMV_STEP) */
    int64_t warps;          /* a block's, 1 .. RIG_GEMV_WARPS_MAX */
    int64_t steps_per_warp; /* a warp's K run (the last may be shorter); 0 when K is */
};

/* The geometry of an [M, K] x [N, K] product: enough warps that each warp's run fits one batch,
 * and enough for the occupancy target, at most RIG_GEMV_WARPS_MAX, never more than there are
 * steps; then as few warps as that run length needs. multiprocessors 0 counts as 1. */
static inline struct rig_gemv_geometry rig_gemv_geometry(int64_t columns, int64_t depth,
                                                         int64_t multiprocessors)
{
    struct rig_gemv_geometry g;
    g.blocks = (columns + RIG_GEMV_COLUMNS - 1) / RIG_GEMV_COLUMNS;
    g.steps = (depth + RIG_GEMV_STEP - 1) / RIG_GEMV_STEP;
    int64_t sms = multiprocessors > 0 ? multiprocessors : 1;
    int64_t for_depth = (g.steps + RIG_GEMV_UNROLL - 1) / RIG_GEMV_UNROLL;
    int64_t for_occupancy =
        g.blocks > 0 ? (sms * RIG_GEMV_WARPS_PER_SM + g.blocks - 1) / g.blocks : 1;
    int64_t warps = for_depth > for_occupancy ? for_depth : for_occupancy;
    if (warps > RIG_GEMV_WARPS_MAX) warps = RIG_GEMV_WARPS_MAX;
    if (warps > g.steps) warps = g.steps;
    g.warps = warps < 1 ? 1 : warps;
    g.steps_per_warp = (g.steps + g.warps - 1) / g.warps;
    if (g.steps_per_warp > 0) g.warps = (g.steps + g.steps_per_warp - 1) / g.steps_per_warp;
    return g;
}

/* Whether a warp's K run is one batch (the persistent form keeps its activations in
 * registers). */
static inline bool rig_gemv_one_batch(const struct rig_gemv_geometry *g)
{
    return g->steps_per_warp <= RIG_GEMV_UNROLL;
}

/* Whether the persistent form runs for `rows` rows, `resident` of its blocks fitting the GPU
 * at once, where a warp's K run is several batches up to `multi_rows` rows: at most 8 rows,
 * RIG_GEMV_WARPS_MAX-warp blocks, more tiles than resident blocks (with several batches a run,
 * at least two tiles a block). */
static inline bool rig_gemv_persistent(int64_t rows, const struct rig_gemv_geometry *g,
                                       int64_t resident, int64_t multi_rows)
{
    if (rows > 8 || g->warps != RIG_GEMV_WARPS_MAX || resident <= 0) return false;
    if (rig_gemv_one_batch(g)) return g->blocks > resident;
    return rows <= multi_rows && g->blocks > 2 * resident;
}

/* The persistent form's weight pipeline and its dynamic shared memory with a prologue (a
 * multiprocessor's 227 KB less the kernel's static 17,472 bytes); the operand rows of a
 * prologue lie after the stages, each row K + 8 values apart (gemv.cu says why). */
#define RIG_GEMV_STAGES              3
#define RIG_GEMV_SLOT_BYTES          (RIG_GEMV_UNROLL * 32 * 16) /* a warp's batch: 4 KB */
#define RIG_GEMV_PROLOGUE_SHARED_MAX (232448 - 17472)
#define RIG_GEMV_STAGED_STRIDE(depth) ((int64_t)(depth) + 8)

/* Whether a GEMM with a prologue (an RMS norm or SiLU . mul made into its left operand) runs on
 * the persistent form at `rows` rows of depth `depth`: at most 8 rows, a warp's K run one batch,
 * and the weight stages with the operand rows within the shared memory above. Any warp count,
 * unlike the plain rule (rig_gemv_persistent): the operand is made once a block there, where
 * the per-tile kernel would make it again every wave. Elsewhere gemm.cu runs the prologue as its
 * own kernel before the plain GEMM. */
static inline bool rig_gemv_prologue_persistent(int64_t rows, int64_t depth,
                                                const struct rig_gemv_geometry *g)
{
    if (rows > 8 || !rig_gemv_one_batch(g)) return false;
    int64_t bytes = RIG_GEMV_STAGES * g->warps * (int64_t)RIG_GEMV_SLOT_BYTES +
                    rows * RIG_GEMV_STAGED_STRIDE(depth) * 2;
    return bytes <= RIG_GEMV_PROLOGUE_SHARED_MAX;
}

/* Whether the per-tile kernel's grid is one wave at RIG_GEMV_WARPS_PER_SM warps an SM (it
 * then asks for its first batch of weights before its PDL wait). */
static inline bool rig_gemv_one_wave(const struct rig_gemv_geometry *g, int64_t multiprocessors)
{
    int64_t sms = multiprocessors > 0 ? multiprocessors : 1;
    return g->blocks * g->warps <= sms * RIG_GEMV_WARPS_PER_SM;
}

/* Whether two keys name the same shape: kind and parameters bit for bit (never memcmp of the
 * structs, whose padding after `kind` is not part of the value). Can't fail. */
bool rig_optable_key_equal(const struct rig_optable_key *a, const struct rig_optable_key *b);

/* Reads table `name`'s host times and host model (the same names and paths as
 * rig_optable_read) into *host; a value absent from the file reads 0 (a coefficient's given
 * flag false). RIG_E_PARSE, naming the file and the attribute, when one is present but not a
 * finite number >= 0; *host is zeroed then. */
enum rig_status rig_optable_read_host(const char *name, struct rig_optable_host *host, char *error,
                                      size_t error_len);

/* Reads the table at `name_or_path`: a built-in name ("h100" finds the embedded h100.h5) or
 * a path to an .h5 file (a name with a '/' or ".h5" in it). On success *points (malloc'd,
 * the caller frees; in file order) holds *count > 0 valid points (kind in range, key
 * parameters finite and >= 0, a GEMM's fused form a known one, cold time finite and > 0,
 * work >= 0, host times finite and >= 0; a file without the host columns reads them as 0).
 * RIG_E_NOT_FOUND (no
 * such built-in), RIG_E_IO (cannot open) or RIG_E_PARSE (/points missing or malformed) with
 * a message in `error`; nothing is returned then. */
enum rig_status rig_optable_read(const char *name_or_path, struct rig_optable_point **points,
                                 int64_t *count, char *error, size_t error_len);

/* Writes `count` points to an HDF5 table at `path` with the given root attributes (pairs of
 * name, value strings; `attr_count` pairs). Deterministic bytes. RIG_E_IO with a message
 * (and no file left behind). */
enum rig_status rig_optable_write(const char *path, const struct rig_optable_point *points,
                                  int64_t count, const char *const (*attrs)[2], int32_t attr_count,
                                  char *error, size_t error_len);

#endif /* RIG_HAL_OPTABLE_H */
