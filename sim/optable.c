/* optable.c — measured op tables, loaded (hal/optable.c reads the file) and interpolated;
 * see optable.h. */
#include "sim/optable.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RIG__TABLES_MAX 32

/* One row of the decode grid: the points of one head shape (Hq, Hk, D: key p[3..5]) and
 * request count, [uniform, uniform + uniform_count) and [ragged, ragged + ragged_count) of
 * the table's grid, each by ascending max KV length. A row has at least 2 uniform points;
 * ragged_count is 0 or at least 2. */
struct rig__grid_row {
    double heads_q, heads_kv, head_dim;
    int8_t kernel; /* rig__kernel_of its points */
    int64_t uniform, uniform_count, ragged, ragged_count;
};

struct rig_sim_optable {
    char name[256];
    struct rig_optable_point *points; /* (count) sorted by kind */
    double (*logp)[RIG_OPTABLE_PARAMS]; /* (count) log2(p + 1) of each point's key */
    int8_t *kernel;                     /* (count) rig__kernel_of each point */
    double *sharing;                    /* (count) rig__decode_sharing of each point */
    int64_t *pair; /* (count) attention_decode_store points: the decode point of the same key
                      (-1: none); -1 for every other kind */
    int64_t count;
    int64_t first[RIG_OP_COUNT + 1]; /* points of kind k: [first[k], first[k + 1]) */
    int64_t multiprocessors;         /* of the device the simulator plays: which decode kernel */
    double decode_flops_per_s; /* rig__decode_rate; 0: no register-path decode points */
    uint32_t sample_kinds;     /* bit k: the table has sample points of rows' kind k */
    uint32_t gemm_forms;       /* bit f: the table has GEMM points of form f (rig__form) */
    struct rig_optable_host host; /* the sweep's host times (0: not measured) */
    /* The decode sweep's grid (rig__grid_build): per head shape and request count, a row of
     * uniform points (mean KV length == max) and one of ragged points (mean below the max),
     * each by max KV length. */
    int64_t *grid;              /* (grid_count) point indices, row by row, uniform then ragged */
    double *grid_max;           /* (grid_count) each one's max KV length (key p[2]) */
    struct rig__grid_row *rows; /* (row_count) by head shape, then requests */
    double *row_requests;       /* (row_count) each row's requests (key p[0]) */
    int64_t grid_count, row_count;
};

static pthread_mutex_t rig__tables_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rig_sim_optable rig__tables[RIG__TABLES_MAX]; /* loaded, never freed */
static int32_t rig__table_count;

/* Decode attention, or decode attention with its store prologue (attention_decode_store):
 * the same key, the same kernels. */
static bool rig__decode_kind(int32_t kind)
{
    return kind == RIG_OP_ATTENTION_DECODE || kind == RIG_OP_ATTENTION_DECODE_STORE;
}

/* How much each key parameter counts in the distance, per kind (0: ignored). Decode matches
 * the max KV length too: the sweep has uniform and ragged batches (max about twice the
 * mean), and a ragged batch's split-KV blocks finish unevenly. A GEMM's fused form (p[4],
 * p[5]) is a category, not a size: it is held apart by RIG__FORM_APART instead. */
static const double *rig__weights(int32_t kind)
{
    static const double gemm[RIG_OPTABLE_PARAMS] = {1, 1, 1, 4, 0, 0};
    static const double decode[RIG_OPTABLE_PARAMS] = {1, 1, 1, 1, 1, 1};
    static const double prefill[RIG_OPTABLE_PARAMS] = {1, 1, 1, 1, 1, 1};
    static const double other[RIG_OPTABLE_PARAMS] = {0, 1, 0, 0, 0, 0};
    if (kind == RIG_OP_GEMM) return gemm;
    if (rig__decode_kind(kind)) return decode;
    if (kind == RIG_OP_ATTENTION_PREFILL) return prefill;
    return other;
}

/* The small-batch GEMM kernel's bounds (cuda/ops/gemv.cu, rig__gemv_pays in gemm.cu; every
 * fused GEMM of up to RIG__GEMV_ROWS rows runs on it, whatever K). */
#define RIG__GEMV_ROWS   16.0
#define RIG__GEMV_DEPTH  2048.0
#define RIG__GEMV_WIDE_N 33792.0
/* Added (in log2 units) to the distance between points that run different kernels
 * (rig__kernel_of: a GEMM's small-batch kernel or cuBLAS, decode attention's register path or
 * tensor cores): a factor of 16, so a point of the other kernel counts only when its own have
 * none near. */
#define RIG__KERNEL_APART 4.0
/* Added likewise between GEMM points of different fused forms (a prologue, accumulate: the
 * key's p[4] and p[5]): a fused GEMM's own form's points decide its time, and a plain one's
 * are never blended with the fused ones' (whose prologue and epilogue the plain ones lack). */
#define RIG__FORM_APART 4.0
#define RIG__GEMM_FORMS (2 * RIG_GEMM_PROLOGUES)

bool rig_sim_gemm_small_batch(double m, double n, double k, bool fused)
{
    if (m > RIG__GEMV_ROWS) return false;
    return fused || k >= RIG__GEMV_DEPTH || n >= RIG__GEMV_WIDE_N;
}

bool rig_sim_gemm_early_weights(double m, double n, double k, bool fused,
                                int64_t multiprocessors)
{
    if (multiprocessors <= 0 || !rig_sim_gemm_small_batch(m, n, k, fused)) return false;
    struct rig_gemv_geometry g = rig_gemv_geometry((int64_t)n, (int64_t)k, multiprocessors);
    /* one block of RIG_GEMV_WARPS_MAX warps an SM: the persistent form's residency */
    return rig_gemv_persistent((int64_t)m, &g, multiprocessors, RIG_GEMV_MULTI_ROWS) ||
           rig_gemv_one_wave(&g, multiprocessors);
}

bool rig_sim_decode_early(const struct rig_optable_key *key, int64_t multiprocessors)
{
    RIG_ASSERT(key != NULL);
    if (multiprocessors <= 0 || key->kind != RIG_OP_ATTENTION_DECODE) return false;
    const double *p = key->p;
    if (rig_decode_tensor_cores((int64_t)p[0], (int64_t)p[3], (int64_t)p[4], (int64_t)p[5],
                                multiprocessors))
        return false;
    return p[0] * p[4] <= (double)(RIG_SIM_DECODE_EARLY_PER_SM * multiprocessors);
}

/* A GEMM key's fused form, 0 .. RIG__GEMM_FORMS - 1 (0: plain); 0 for every other kind. */
static int32_t rig__form(const struct rig_optable_key *key)
{
    if (key->kind != RIG_OP_GEMM) return 0;
    int32_t prologue = (int32_t)key->p[4], accumulate = key->p[5] != 0 ? 1 : 0;
    RIG_ASSERT(prologue >= 0 && prologue < RIG_GEMM_PROLOGUES);
    return 2 * prologue + accumulate;
}

bool rig_sim_gemm_fused(const struct rig_optable_key *key)
{
    RIG_ASSERT(key != NULL);
    return rig__form(key) != 0;
}

static double rig__distance(const double *w, const double *a, const double *b)
{
    double sum = 0;
    for (int32_t i = 0; i < RIG_OPTABLE_PARAMS; i++) {
        double d = a[i] - b[i];
        sum += w[i] * d * d;
    }
    return sqrt(sum);
}

/* How far apart in the distance two decode keys are per log2 unit of their sharing
 * (rig__decode_sharing): as much as one of the key's parameters. */
#define RIG__SHARING_WEIGHT 1.0

/* log2 of the KV positions a decode op reads (every request's, from its FLOPs, 4 Hq D a
 * position) per distinct position (the key's mean KV length, rig__decode_distinct, times its
 * requests): 0 for a batch whose requests share nothing, about 1.4 for 16 requests that share
 * a 1,024-token prompt and read 512 of their own. The key alone does not tell the two apart
 * (16 requests of 1,536 positions that share 1,024 key as a ragged batch of mean 576 and max
 * 1,536), yet the shared batch does 2.7 times the FLOPs on the same bytes, so its time per
 * unit of work is another function; the distance holds them apart by this. 0 for every
 * other kind. Can't fail. */
static double rig__decode_sharing(const struct rig_optable_key *key, double flops)
{
    if (!rig__decode_kind(key->kind)) return 0;
    double distinct = key->p[0] * key->p[1], per_position = 4.0 * key->p[3] * key->p[5];
    if (!(distinct > 0) || !(per_position > 0) || !(flops > 0)) return 0;
    double read = flops / per_position;
    return read > distinct * (1 + 1e-9) ? log2(read / distinct) : 0; /* not a rounding's */
}

/* Predictions of recent keys, per thread: a step issues the same shapes layer after layer,
 * and a lookup scans every point of its kind. A pure function's memo: no effect on results. */
#define RIG__MEMO_SLOTS 4096
struct rig__memo {
    const struct rig_sim_optable *table;
    struct rig_optable_key key;
    double flops, bytes, peak, bandwidth, launch, warm_weight;
    double ns;      /* < 0: the table does not reach the key */
    double host_ns; /* 0: the nearest points have no host time */
};
static _Thread_local struct rig__memo rig__memo[RIG__MEMO_SLOTS];

static uint64_t rig__memo_slot(const struct rig_optable_key *key, double flops, double bytes)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)key->kind;
    double words[RIG_OPTABLE_PARAMS + 2];
    memcpy(words, key->p, sizeof key->p);
    words[RIG_OPTABLE_PARAMS] = flops;
    words[RIG_OPTABLE_PARAMS + 1] = bytes;
    for (int32_t i = 0; i < RIG_OPTABLE_PARAMS + 2; i++) {
        uint64_t bits;
        memcpy(&bits, &words[i], sizeof bits);
        h = (h ^ bits) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h % RIG__MEMO_SLOTS;
}

/* Which of rig's CUDA kernels (or a kernel's paths) runs an op with `key`, on the device the
 * table is used for: 1 for a GEMM on the small-batch kernel (rig_sim_gemm_small_batch) and for
 * decode attention on the tensor-core kernel (rig_decode_tensor_cores); for the sampler its
 * rows' kind (enum rig_sample_rows: greedy rows take the argmax, whole ones Philox noise a
 * logit, cut ones the cut-off search); 0 otherwise. The neighbour search holds points of
 * another kernel apart, and the work an op scales by depends on it. */
static int8_t rig__kernel_of(const struct rig_sim_optable *table,
                             const struct rig_optable_key *key)
{
    const double *p = key->p;
    if (key->kind == RIG_OP_GEMM)
        return rig_sim_gemm_small_batch(p[0], p[1], p[2], rig__form(key) != 0) ? 1 : 0;
    if (key->kind == RIG_OP_SAMPLE) return (int8_t)p[2];
    if (rig__decode_kind(key->kind))
        return rig_decode_tensor_cores((int64_t)p[0], (int64_t)p[3], (int64_t)p[4],
                                       (int64_t)p[5], table->multiprocessors)
                   ? 1
                   : 0;
    return 0;
}

/* Decode attention on the register path scores and weighs every key on the CUDA cores in
 * fp32 (a query vector against each key: no tensor-core tile), G = Hq / Hk query heads per key
 * read. Its compute is not bound by the tensor cores' peak but by what the kernel issues: the
 * CUDA planner's work unit (a block's step of keys, rig__decode_shape in
 * cuda/ops/attention_decode.cu) does the same FLOPs whatever D and G, so a shape with more
 * query heads per KV head, or a smaller head dim, takes more steps per byte. The rate is the
 * table's own: the most FLOP/s any register-path decode point reached (warm: the kernel's
 * steady state). Deterministic: a function of the points. */
static double rig__decode_rate(const struct rig_sim_optable *table)
{
    double best = 0;
    for (int64_t i = table->first[RIG_OP_ATTENTION_DECODE];
         i < table->first[RIG_OP_ATTENTION_DECODE + 1]; i++) {
        const struct rig_optable_point *p = &table->points[i];
        if (table->kernel[i] != 0) continue; /* the tensor-core kernel's */
        double ns = p->warm_ns > 0 ? p->warm_ns : p->cold_ns;
        double rate = p->flops / (ns * 1e-9);
        if (rate > best) best = rate;
    }
    return best;
}

/* The work an op's time is scaled by between table points: the roofline, max(FLOPs / peak,
 * bytes / bandwidth), datasheet numbers. Decode attention on the register path (with a
 * table rate) instead takes the sum of its bytes at the bandwidth and its FLOPs at the
 * table's decode rate: the kernel overlaps its loads with its math only in part, and the sum
 * is what keeps the ratio time / work alike across head groups in the table (a group of 2
 * and of 4 at the same KV bytes both take ~0.63 of the sum at 256 x 2048, where their ratios
 * to the max differ by 15 %). So a head shape the sweep never saw (Llama's D = 64, whose
 * FLOPs per byte are G = 4's) scales from its neighbours by both. Decode attention on the
 * tensor-core kernel takes its bytes alone: the m64 tile does the same math whatever G <= 8
 * (a group of 8 and of 4 over the same KV bytes took 300 and 296 us on an H200), and a
 * producer warpgroup streams K and V while the consumer computes. */
static double rig__work_s(const struct rig_sim_optable *table, int32_t kind, int8_t kernel,
                          double flops, double bytes, double peak, double bandwidth)
{
    double memory = bytes / bandwidth, s;
    if (rig__decode_kind(kind) && kernel != 0) {
        s = memory;
    } else if (rig__decode_kind(kind) && table->decode_flops_per_s > 0) {
        s = memory + flops / table->decode_flops_per_s;
    } else {
        double compute = flops / peak;
        s = compute > memory ? compute : memory;
    }
    return s > 1e-9 ? s : 1e-9;
}

/* A point's time as a node of a step: a weighted geometric mean of its cold time (less the
 * launch term its events include, `launch_ns`: 0 for the sweep, whose cold issues queue
 * behind their L2 flush) and its warm time, cold^(1 - w) warm^w. A
 * step's op reads its weights from HBM but its input, just written by the previous op, from
 * L2, and in a graph its prologue overlaps its predecessor (programmatic dependent launch):
 * neither extreme. w is the profile's op_table_warm_weight, chosen on the calibration model's
 * runs (docs/simulator.md). */
static double rig__node_ns(const struct rig_optable_point *p, double launch_ns, double warm_weight)
{
    double cold = p->cold_ns - launch_ns > 1 ? p->cold_ns - launch_ns : 1;
    if (!(p->warm_ns > 0)) return cold;
    return exp((1 - warm_weight) * log(cold) + warm_weight * log(p->warm_ns));
}

/* The RIG_SIM_OPTABLE_NEIGHBOURS points of the key's kind nearest to it (weighted distance
 * in log2 of the parameters; points of the other kernel, rig__kernel_of, RIG__KERNEL_APART
 * further, GEMM points of another fused form RIG__FORM_APART further), nearest first, into
 * best_i / best_d; returns how many. */
static int32_t rig__nearest(const struct rig_sim_optable *table, const struct rig_optable_key *key,
                            double flops, int8_t kernel, int64_t *best_i, double *best_d)
{
    enum { K = RIG_SIM_OPTABLE_NEIGHBOURS };
    const double *w = rig__weights(key->kind);
    double logp[RIG_OPTABLE_PARAMS];
    for (int32_t i = 0; i < RIG_OPTABLE_PARAMS; i++) logp[i] = log2(key->p[i] + 1.0);
    int32_t found = 0, form = rig__form(key);
    double sharing = rig__decode_sharing(key, flops);
    for (int64_t i = table->first[key->kind]; i < table->first[key->kind + 1]; i++) {
        double d = rig__distance(w, logp, table->logp[i]);
        if (sharing != table->sharing[i]) {
            double s = RIG__SHARING_WEIGHT * (sharing - table->sharing[i]);
            d = sqrt(d * d + s * s);
        }
        if (table->kernel[i] != kernel) d += RIG__KERNEL_APART;
        if (rig__form(&table->points[i].key) != form) d += RIG__FORM_APART;
        if (found == K && d >= best_d[K - 1]) continue;
        int32_t at = found < K ? found++ : K - 1; /* insertion into the sorted few */
        while (at > 0 && best_d[at - 1] > d) {
            best_d[at] = best_d[at - 1];
            best_i[at] = best_i[at - 1];
            at--;
        }
        best_d[at] = d;
        best_i[at] = i;
    }
    return found;
}

/* Weighted geometric mean of the values (weights 1 / distance; an exact match alone counts);
 * values <= 0 are skipped; 0 when none is left. */
static double rig__blend(const double *values, const double *best_d, int32_t found)
{
    double log_sum = 0, weight_sum = 0;
    for (int32_t n = 0; n < found; n++) {
        if (values[n] <= 0) continue;
        if (best_d[n] < 1e-9) return values[n]; /* measured here */
        double w = 1.0 / best_d[n];
        log_sum += w * log(values[n]);
        weight_sum += w;
    }
    return weight_sum > 0 ? exp(log_sum / weight_sum) : 0;
}

/* --- Decode attention between the sweep's grid points (docs/simulator.md, "Decode attention
 * between grid points") ----------------------------------------------------------------- */

/* A decode key whose sharing (rig__decode_sharing) is below this reads its own positions: a
 * batch's padding rows all read one dummy slot, about 1e-4 of sharing; a shared prompt is
 * 0.1 and more (the sweep's shared points 0.58 and more). Such keys take the grid; shared
 * ones the nearest-point blend, which holds shared and unshared points apart. */
#define RIG__GRID_SHARING_MAX 0.05

/* The index of the first point of the segment of x[0 .. n) (ascending, n >= 2) that serves
 * `at`: the two points around it, or the end segment past either end. Can't fail. */
static int64_t rig__segment(const double *x, int64_t n, double at)
{
    RIG_ASSERT(n >= 2);
    int64_t i = 0;
    while (i < n - 2 && x[i + 1] <= at)
        i++;
    return i;
}

/* y at `at` on the segment (x0, y0) .. (x1, y1), x0 < x1: linear between them (exactly y0
 * or y1 at its ends). Past an end the segment's line goes on, held between that end's value
 * (flat: a fixed latency) and the value scaled by at / x there (proportional: a constant
 * time per unit, what a bandwidth-bound kernel tends to); a time neither falls below zero
 * nor grows faster than its work. Can't fail. */
static double rig__along(double x0, double y0, double x1, double y1, double at)
{
    RIG_ASSERT(x0 < x1 && x0 > 0);
    if (at == x0) return y0;
    if (at == x1) return y1;
    double line = y0 + (y1 - y0) * (at - x0) / (x1 - x0);
    if (at > x0 && at < x1) return line;
    double end = at < x0 ? y0 : y1, scaled = end * at / (at < x0 ? x0 : x1);
    double low = fmin(end, scaled), high = fmax(end, scaled);
    return fmin(fmax(line, low), high);
}

/* The node time (rig__node_ns) at `max` on the polyline of the grid's part [first, first +
 * count) (a row's uniform or ragged points, count >= 2): rig__along over the two points around
 * it; *at (may be NULL) gets the first of them. */
static double rig__part_ns(const struct rig_sim_optable *table, int64_t first, int64_t count,
                           double max, double launch_ns, double warm_weight, int64_t *at)
{
    int64_t g = first + rig__segment(&table->grid_max[first], count, max);
    const struct rig_optable_point *a = &table->points[table->grid[g]];
    const struct rig_optable_point *b = &table->points[table->grid[g + 1]];
    if (at != NULL) *at = g;
    return rig__along(table->grid_max[g], rig__node_ns(a, launch_ns, warm_weight),
                      table->grid_max[g + 1], rig__node_ns(b, launch_ns, warm_weight), max);
}

/* The mean KV length of the row's ragged batch at `max`: the ragged points' means, linear in
 * the max between two of them (exactly a point's own at its max), held at the ends' mean /
 * max ratio past them. */
static double rig__ragged_mean(const struct rig_sim_optable *table, int64_t g, double max)
{
    const double *a = table->points[table->grid[g]].key.p;
    const double *b = table->points[table->grid[g + 1]].key.p;
    if (max == a[2]) return a[1];
    if (max == b[2]) return b[1];
    double w = (max - a[2]) / (b[2] - a[2]);
    w = w < 0 ? 0 : w > 1 ? 1 : w;
    return max * ((1 - w) * a[1] / a[2] + w * b[1] / b[2]);
}

/* A row's node time at the key's mean and max KV length: the uniform points' polyline at the
 * max (rig__along between the two around it), and for a ragged key (mean below the max) the
 * ragged points' at the same max, then linear in the mean between the ragged batch's mean
 * and the uniform one's (the max): at one max, a batch's time is a fixed part (its longest
 * request's blocks) plus a part that follows every request's positions. A batch more ragged
 * than the sweep's (padding rows of one position) goes on along that line, held as
 * rig__along holds it. False when the key is ragged and the row has no ragged points. */
static bool rig__row_ns(const struct rig_sim_optable *table, const struct rig__grid_row *row,
                        double mean, double max, double launch_ns, double warm_weight, double *ns)
{
    int64_t g;
    double uniform =
        rig__part_ns(table, row->uniform, row->uniform_count, max, launch_ns, warm_weight, NULL);
    if (mean >= max) {
        *ns = uniform;
        return true;
    }
    if (row->ragged_count < 2) return false;
    double ragged =
        rig__part_ns(table, row->ragged, row->ragged_count, max, launch_ns, warm_weight, &g);
    *ns = rig__along(rig__ragged_mean(table, g, max), ragged, max, uniform, mean);
    return true;
}

/* The decode-attention node time of `key` from the grid rows of its head shape and kernel:
 * each row's (rig__row_ns) at the key's lengths, then linear in the request count between the
 * two rows around it (past the first or last row as rig__along holds it). Reproduces a grid
 * point exactly, and between points lies between them. False (the nearest-point blend costs
 * the key then) for another kind, a shared batch (RIG__GRID_SHARING_MAX), a head shape or
 * kernel with fewer than two rows, or a ragged key on a row without ragged points. */
static bool rig__grid_ns(const struct rig_sim_optable *table, const struct rig_optable_key *key,
                         double flops, int8_t kernel, double launch_ns, double warm_weight,
                         double *ns)
{
    const double *p = key->p;
    if (key->kind != RIG_OP_ATTENTION_DECODE || !(p[0] >= 1) || !(p[1] > 0) || !(p[2] >= p[1]))
        return false;
    if (rig__decode_sharing(key, flops) >= RIG__GRID_SHARING_MAX) return false;
    int64_t first = 0, count = 0;
    for (int64_t r = 0; r < table->row_count; r++) {
        const struct rig__grid_row *row = &table->rows[r];
        if (row->heads_q != p[3] || row->heads_kv != p[4] || row->head_dim != p[5] ||
            row->kernel != kernel)
            continue;
        if (count == 0) first = r;
        RIG_ASSERT_MSG(r == first + count, "a shape's rows of a kernel are contiguous");
        count++;
    }
    if (count < 2) return false;
    int64_t r = first + rig__segment(&table->row_requests[first], count, p[0]);
    double lower = 0, upper = 0; /* a row the key is on alone when it is on one */
    bool on_upper = p[0] == table->row_requests[r + 1];
    if (!on_upper &&
        !rig__row_ns(table, &table->rows[r], p[1], p[2], launch_ns, warm_weight, &lower))
        return false;
    if (p[0] != table->row_requests[r] &&
        !rig__row_ns(table, &table->rows[r + 1], p[1], p[2], launch_ns, warm_weight, &upper))
        return false;
    *ns = rig__along(table->row_requests[r], lower, table->row_requests[r + 1], upper, p[0]);
    return true;
}

/* The prediction: time / roofline of the nearest points, blended, times the op's own
 * roofline; decode attention on its sweep's grid instead from the grid (rig__grid_ns); the
 * host time of an eager issue, blended as measured. */
static bool rig__predict(const struct rig_sim_optable *table, const struct rig_optable_key *key,
                         double flops, double bytes, double peak_flops, double hbm_bytes_per_s,
                         double launch_ns, double warm_weight, double *ns, double *host_ns)
{
    enum { K = RIG_SIM_OPTABLE_NEIGHBOURS };
    double best_d[K], ratio[K], host[K];
    int64_t best_i[K];
    int8_t kernel = rig__kernel_of(table, key);
    int32_t found = rig__nearest(table, key, flops, kernel, best_i, best_d);
    if (found == 0 || best_d[0] > RIG_SIM_OPTABLE_REACH) return false;
    for (int32_t n = 0; n < found; n++) {
        const struct rig_optable_point *p = &table->points[best_i[n]];
        ratio[n] = rig__node_ns(p, launch_ns, warm_weight) * 1e-9 /
                   rig__work_s(table, key->kind, table->kernel[best_i[n]], p->flops, p->bytes,
                               peak_flops, hbm_bytes_per_s);
        host[n] = p->host_ns;
    }
    *ns = rig__work_s(table, key->kind, kernel, flops, bytes, peak_flops, hbm_bytes_per_s) *
          rig__blend(ratio, best_d, found) * 1e9;
    *host_ns = rig__blend(host, best_d, found);
    double grid_ns;
    if (rig__grid_ns(table, key, flops, kernel, launch_ns, warm_weight, &grid_ns)) *ns = grid_ns;
    return true;
}

struct rig_optable_key rig_sim_optable_form_key(const struct rig_sim_optable *table,
                                                const struct rig_optable_key *key)
{
    RIG_ASSERT(table != NULL && key != NULL);
    struct rig_optable_key costed = *key;
    if (key->kind == RIG_OP_GEMM && !(table->gemm_forms & 1u << rig__form(key)))
        costed.p[4] = costed.p[5] = 0;
    return costed;
}

bool rig_sim_optable_predict(const struct rig_sim_optable *table,
                             const struct rig_optable_key *key, double flops, double bytes,
                             double peak_flops, double hbm_bytes_per_s, double launch_ns,
                             double warm_weight, double *ns, double *host_ns)
{
    RIG_ASSERT(table != NULL && key != NULL && ns != NULL);
    RIG_ASSERT(key->kind >= 0 && key->kind < RIG_OP_COUNT);
    RIG_ASSERT(warm_weight >= 0 && warm_weight <= 1);
    struct rig_optable_key form_key = rig_sim_optable_form_key(table, key);
    key = &form_key;
    struct rig_optable_key sample_key;
    if (key->kind == RIG_OP_SAMPLE) { /* a table swept before the rows' kinds has whole rows */
        RIG_ASSERT_MSG(key->p[2] >= 0 && key->p[2] < RIG_SAMPLE_KINDS,
                       "a mixed sample batch is costed kind by kind (sim/cost.c)");
        sample_key = *key;
        if (!(table->sample_kinds & 1u << (int32_t)key->p[2])) sample_key.p[2] = RIG_SAMPLE_WHOLE;
        key = &sample_key;
    }
    struct rig__memo *m = &rig__memo[rig__memo_slot(key, flops, bytes)];
    bool hit = m->table == table && rig_optable_key_equal(&m->key, key) &&
               m->flops == flops && m->bytes == bytes && m->peak == peak_flops &&
               m->bandwidth == hbm_bytes_per_s && m->launch == launch_ns &&
               m->warm_weight == warm_weight;
    if (!hit) {
        double value = -1, host = 0;
        if (!rig__predict(table, key, flops, bytes, peak_flops, hbm_bytes_per_s, launch_ns,
                          warm_weight, &value, &host))
            value = -1, host = 0;
        *m = (struct rig__memo){table,     *key,        flops, bytes, peak_flops, hbm_bytes_per_s,
                                launch_ns, warm_weight, value, host};
    }
    if (m->ns < 0) return false;
    *ns = m->ns;
    if (host_ns != NULL) *host_ns = m->host_ns;
    return true;
}

int64_t rig_sim_optable_count(const struct rig_sim_optable *table)
{
    RIG_ASSERT(table != NULL);
    return table->count;
}

bool rig_sim_optable_has_kind(const struct rig_sim_optable *table, enum rig_op_kind kind)
{
    RIG_ASSERT(table != NULL && kind >= 0 && kind < RIG_OP_COUNT);
    return table->first[kind] < table->first[kind + 1];
}

const struct rig_optable_host *rig_sim_optable_host(const struct rig_sim_optable *table)
{
    RIG_ASSERT(table != NULL);
    return &table->host;
}

const struct rig_optable_point *rig_sim_optable_point(const struct rig_sim_optable *table,
                                                          int64_t index)
{
    RIG_ASSERT(table != NULL && index >= 0 && index < table->count);
    return &table->points[index];
}

static int rig__point_order(const void *a, const void *b)
{
    const struct rig_optable_point *x = a, *y = b;
    return (x->key.kind > y->key.kind) - (x->key.kind < y->key.kind);
}

/* A decode point's place in the grid's order: head shape, requests, uniform before ragged,
 * max KV length, then its index (a total order: the same table, the same grid). */
struct rig__grid_entry {
    double order[6]; /* Hq, Hk, D, requests, ragged (0 or 1), max KV length */
    int64_t index;
};

static int rig__grid_order(const void *a, const void *b)
{
    const struct rig__grid_entry *x = a, *y = b;
    for (int32_t k = 0; k < 6; k++)
        if (x->order[k] != y->order[k]) return x->order[k] < y->order[k] ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Whether decode point i can be a grid point: positive lengths, max >= mean, no shared
 * positions (its sharing exactly 0: the sweep's uniform and ragged batches). */
static bool rig__grid_eligible(const struct rig_sim_optable *table, int64_t i)
{
    const double *p = table->points[i].key.p;
    return table->sharing[i] == 0 && p[0] >= 1 && p[1] > 0 && p[2] >= p[1];
}

/* Appends the entries of [from, to) (one row's, sorted) of one part, uniform (0) or ragged
 * (1), to the table's grid, a max KV length already taken left out; returns how many. Can't
 * fail (the grid's arrays hold every decode point). */
static int64_t rig__grid_part_add(struct rig_sim_optable *table, const struct rig__grid_entry *e,
                                  int64_t from, int64_t to, double ragged)
{
    int64_t start = table->grid_count;
    for (int64_t j = from; j < to; j++) {
        if (e[j].order[4] != ragged) continue;
        if (table->grid_count > start && table->grid_max[table->grid_count - 1] == e[j].order[5])
            continue;
        table->grid[table->grid_count] = e[j].index;
        table->grid_max[table->grid_count++] = e[j].order[5];
    }
    return table->grid_count - start;
}

/* Appends the entries [from, to) of one head shape and request count to the grid as a row; a
 * row of fewer than 2 uniform points is left out, and its ragged part emptied when it has
 * fewer than 2 (rig__grid_ns interpolates between two). Can't fail. */
static void rig__grid_row_add(struct rig_sim_optable *table, const struct rig__grid_entry *e,
                              int64_t from, int64_t to)
{
    struct rig__grid_row row = {.heads_q = e[from].order[0],
                                .heads_kv = e[from].order[1],
                                .head_dim = e[from].order[2],
                                .kernel = table->kernel[e[from].index]};
    row.uniform = table->grid_count;
    row.uniform_count = rig__grid_part_add(table, e, from, to, 0);
    if (row.uniform_count < 2) {
        table->grid_count = row.uniform;
        return;
    }
    row.ragged = table->grid_count;
    row.ragged_count = rig__grid_part_add(table, e, from, to, 1);
    if (row.ragged_count < 2) {
        table->grid_count = row.ragged;
        row.ragged_count = 0;
    }
    table->row_requests[table->row_count] = e[from].order[3];
    table->rows[table->row_count++] = row;
}

/* Whether two sorted entries are of one row: the same head shape and request count. */
static bool rig__grid_same_row(const struct rig__grid_entry *a, const struct rig__grid_entry *b)
{
    for (int32_t k = 0; k < 4; k++)
        if (a->order[k] != b->order[k]) return false;
    return true;
}

/* The decode grid of a loaded table (rig__grid_ns): its eligible decode points sorted into
 * rows. RIG_E_NO_MEMORY when an array cannot be had (the table's grid stays empty then). */
static enum rig_status rig__grid_build(struct rig_sim_optable *table)
{
    int64_t first = table->first[RIG_OP_ATTENTION_DECODE];
    int64_t n = table->first[RIG_OP_ATTENTION_DECODE + 1] - first;
    struct rig__grid_entry *e = calloc((size_t)(n > 0 ? n : 1), sizeof *e);
    table->grid = calloc((size_t)(n > 0 ? n : 1), sizeof *table->grid);
    table->grid_max = calloc((size_t)(n > 0 ? n : 1), sizeof *table->grid_max);
    table->rows = calloc((size_t)(n > 0 ? n : 1), sizeof *table->rows);
    table->row_requests = calloc((size_t)(n > 0 ? n : 1), sizeof *table->row_requests);
    if (e == NULL || table->grid == NULL || table->grid_max == NULL || table->rows == NULL ||
        table->row_requests == NULL) {
        free(e);
        return RIG_E_NO_MEMORY;
    }
    int64_t m = 0;
    for (int64_t i = first; i < first + n; i++) {
        if (!rig__grid_eligible(table, i)) continue;
        const double *p = table->points[i].key.p;
        e[m++] = (struct rig__grid_entry){{p[3], p[4], p[5], p[0], p[1] < p[2] ? 1 : 0, p[2]}, i};
    }
    qsort(e, (size_t)m, sizeof *e, rig__grid_order);
    for (int64_t from = 0, to = 0; from < m; from = to) {
        while (to < m && rig__grid_same_row(&e[to], &e[from]))
            to++;
        rig__grid_row_add(table, e, from, to);
    }
    free(e);
    return RIG_OK;
}

/* Each attention_decode_store point's decode point of the same key (table->pair). */
static void rig__pairs_find(struct rig_sim_optable *table)
{
    for (int64_t i = 0; i < table->count; i++)
        table->pair[i] = -1;
    for (int64_t i = table->first[RIG_OP_ATTENTION_DECODE_STORE];
         i < table->first[RIG_OP_ATTENTION_DECODE_STORE + 1]; i++)
        for (int64_t j = table->first[RIG_OP_ATTENTION_DECODE];
             j < table->first[RIG_OP_ATTENTION_DECODE + 1] && table->pair[i] < 0; j++)
            if (memcmp(table->points[i].key.p, table->points[j].key.p,
                       sizeof table->points[i].key.p) == 0)
                table->pair[i] = j;
}

/* rig_sim_optable_store_extra's recent answers, per thread (a step asks the same keys layer
 * after layer, and each answer scans every fused point): a pure function's memo, as
 * rig__memo is for predictions. */
#define RIG__EXTRA_MEMO_SLOTS 1024
struct rig__extra_memo {
    const struct rig_sim_optable *table;
    struct rig_optable_key key;
    double flops, warm_weight;
    bool reached;
    double extra_ns;
};
static _Thread_local struct rig__extra_memo rig__extra_memo[RIG__EXTRA_MEMO_SLOTS];

static bool rig__store_extra(const struct rig_sim_optable *table,
                             const struct rig_optable_key *key, double flops, double warm_weight,
                             double *extra_ns)
{
    enum { K = RIG_SIM_OPTABLE_NEIGHBOURS };
    double best_d[K];
    int64_t best_i[K];
    int32_t found = rig__nearest(table, key, flops, rig__kernel_of(table, key), best_i, best_d);
    if (found == 0 || best_d[0] > RIG_SIM_OPTABLE_REACH) return false;
    double sum = 0, weight_sum = 0;
    for (int32_t n = 0; n < found; n++) {
        int64_t j = table->pair[best_i[n]];
        if (j < 0) continue;
        /* the sweep's cold times carry no launch term (sim/cost.c) */
        double extra = rig__node_ns(&table->points[best_i[n]], 0.0, warm_weight) -
                       rig__node_ns(&table->points[j], 0.0, warm_weight);
        if (best_d[n] < 1e-9) { /* measured here */
            *extra_ns = extra;
            return true;
        }
        sum += extra / best_d[n];
        weight_sum += 1.0 / best_d[n];
    }
    if (!(weight_sum > 0)) return false;
    *extra_ns = sum / weight_sum;
    return true;
}

bool rig_sim_optable_store_extra(const struct rig_sim_optable *table,
                                 const struct rig_optable_key *key, double flops,
                                 double warm_weight, double *extra_ns)
{
    RIG_ASSERT(table != NULL && key != NULL && extra_ns != NULL);
    RIG_ASSERT(key->kind == RIG_OP_ATTENTION_DECODE_STORE);
    if (!rig_sim_optable_has_kind(table, RIG_OP_ATTENTION_DECODE_STORE)) return false;
    struct rig__extra_memo *m =
        &rig__extra_memo[rig__memo_slot(key, flops, warm_weight) % RIG__EXTRA_MEMO_SLOTS];
    if (m->table != table || !rig_optable_key_equal(&m->key, key) || m->flops != flops ||
        m->warm_weight != warm_weight) {
        double extra = 0;
        bool reached = rig__store_extra(table, key, flops, warm_weight, &extra);
        *m = (struct rig__extra_memo){table, *key, flops, warm_weight, reached, extra};
    }
    if (m->reached) *extra_ns = m->extra_ns;
    return m->reached;
}

/* Frees what rig__load allocated for `table` and zeroes it. */
static void rig__unload(struct rig_sim_optable *table)
{
    free(table->points);
    free(table->logp);
    free(table->kernel);
    free(table->sharing);
    free(table->pair);
    free(table->grid);
    free(table->grid_max);
    free(table->rows);
    free(table->row_requests);
    memset(table, 0, sizeof *table);
}

/* Reads the table `name` into `table`, sorted by kind and indexed, for a device of
 * `multiprocessors` SMs. Failures as rig_sim_optable_get; `table` stays zeroed then. */
static enum rig_status rig__load(const char *name, int64_t multiprocessors,
                                 struct rig_sim_optable *table, char *error, size_t error_len)
{
    enum rig_status status = rig_optable_read(name, &table->points, &table->count, error,
                                              error_len);
    if (status != RIG_OK) return status;
    status = rig_optable_read_host(name, &table->host, error, error_len);
    if (status != RIG_OK) {
        rig__unload(table);
        return status;
    }
    table->logp = calloc((size_t)table->count, sizeof *table->logp);
    table->kernel = calloc((size_t)table->count, sizeof *table->kernel);
    table->sharing = calloc((size_t)table->count, sizeof *table->sharing);
    table->pair = calloc((size_t)table->count, sizeof *table->pair);
    if (table->logp == NULL || table->kernel == NULL || table->sharing == NULL ||
        table->pair == NULL) {
        rig__unload(table);
        snprintf(error, error_len, "%s: no memory for the op table", name);
        return RIG_E_NO_MEMORY;
    }
    qsort(table->points, (size_t)table->count, sizeof *table->points, rig__point_order);
    for (int64_t i = 0; i < table->count; i++)
        for (int32_t k = 0; k < RIG_OPTABLE_PARAMS; k++)
            table->logp[i][k] = log2(table->points[i].key.p[k] + 1.0);
    int64_t at = 0;
    for (int32_t k = 0; k <= RIG_OP_COUNT; k++) {
        while (at < table->count && table->points[at].key.kind < k) at++;
        table->first[k] = at;
    }
    table->multiprocessors = multiprocessors;
    for (int64_t i = 0; i < table->count; i++) {
        const struct rig_optable_key *key = &table->points[i].key;
        table->kernel[i] = rig__kernel_of(table, key);
        table->sharing[i] = rig__decode_sharing(key, table->points[i].flops);
        if (key->kind == RIG_OP_SAMPLE && key->p[2] >= 0 && key->p[2] < RIG_SAMPLE_KINDS)
            table->sample_kinds |= 1u << (int32_t)key->p[2];
        if (key->kind == RIG_OP_GEMM) table->gemm_forms |= 1u << rig__form(key);
    }
    rig__pairs_find(table);
    table->decode_flops_per_s = rig__decode_rate(table);
    if (rig__grid_build(table) != RIG_OK) {
        rig__unload(table);
        snprintf(error, error_len, "%s: no memory for the op table's decode grid", name);
        return RIG_E_NO_MEMORY;
    }
    return RIG_OK;
}

enum rig_status rig_sim_optable_get(const char *name_or_path, int64_t multiprocessors,
                                    const struct rig_sim_optable **out, char *error,
                                    size_t error_len)
{
    RIG_ASSERT(name_or_path != NULL && out != NULL && error != NULL);
    if (strlen(name_or_path) >= sizeof rig__tables[0].name) {
        snprintf(error, error_len, "op table name too long");
        return RIG_E_RANGE;
    }
    pthread_mutex_lock(&rig__tables_lock);
    enum rig_status status = RIG_OK;
    int32_t i = 0;
    while (i < rig__table_count && (strcmp(rig__tables[i].name, name_or_path) != 0 ||
                                    rig__tables[i].multiprocessors != multiprocessors))
        i++;
    if (i == rig__table_count) {
        if (i == RIG__TABLES_MAX) {
            snprintf(error, error_len, "more than %d op tables in one process", RIG__TABLES_MAX);
            status = RIG_E_CAPACITY;
        } else {
            status = rig__load(name_or_path, multiprocessors, &rig__tables[i], error, error_len);
            if (status == RIG_OK) {
                snprintf(rig__tables[i].name, sizeof rig__tables[i].name, "%s", name_or_path);
                rig__table_count++;
            }
        }
    }
    if (status == RIG_OK) *out = &rig__tables[i];
    pthread_mutex_unlock(&rig__tables_lock);
    return status;
}
