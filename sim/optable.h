/* optable.h — the table-driven cost model: op times measured on a GPU (`rig profile
 * --backend cuda`, docs/simulator.md), interpolated for the op being simulated.
 *
 * A table is the list of points the profile sweep timed (hal/optable.h: each a key — the
 * op's kind and up to six shape parameters —, the op's analytic FLOPs and bytes and its
 * measured device time, cold in L2 (the operands evicted before each repeat; what a step
 * sees, where every op reads weights the previous op did not) and warm). The model predicts
 * an op from the points of the same kind nearest to it in log2 of the shape parameters: it
 * interpolates the ratio time / roofline (time: the geometric mean of the cold time, less
 * the launch term it includes — none for `rig profile`'s sweep —, and the warm time,
 * weighted) (roofline = max(FLOPs / peak, bytes / bandwidth), datasheet numbers) as a
 * weighted geometric mean over the nearest points (weights 1 / distance; an exact match is
 * returned as measured; along one axis between two points this is linear interpolation of
 * log ratio), then multiplies by the op's own roofline. So a model shape the sweep never saw
 * (another hidden size, another head count) is predicted from the measured efficiency of
 * similar shapes, and the prediction follows the op's own FLOPs and bytes. Decode attention
 * on the register path, whose math runs on the CUDA cores, is scaled instead by bytes /
 * bandwidth + FLOPs / the table's own best decode FLOP rate, so a head shape the sweep never
 * saw follows its FLOPs too; on the tensor-core kernel (Hopper, groups of 4 to 8 in big
 * batches) by its bytes alone (sim/optable.c). The sampler is predicted from the points of its
 * rows' kind (greedy, whole vocabulary, cut-off: hal/optable.h), or from whole-vocabulary
 * points in a table swept before the kinds were told apart; a fused GEMM (a prologue,
 * accumulate: hal/ops.h) from the points of its form, or from its plain shape's in a table
 * that has none of that form (rig_sim_optable_form_key). An op further than
 * RIG_SIM_OPTABLE_REACH from every point of its kind is left to the analytic model, and
 * counted (rig_sim_stats.table_misses).
 *
 * Tables are HDF5 files (hal/optable.h reads them; docs/simulator.md gives the layout),
 * loaded once per path and kept for the process (read-only after loading; loading is
 * serialised by a mutex, lookups are thread-safe). Built-in tables (sim/profiles/<name>.h5)
 * are embedded in the binary.
 * Determinism: a lookup is a pure function of the table and the key.
 */
#ifndef RIG_SIM_OPTABLE_H
#define RIG_SIM_OPTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/hal_impl.h"
#include "hal/optable.h"

#define RIG_SIM_OPTABLE_NEIGHBOURS 4
/* Farthest an op may lie from its nearest point, in log2 units (a factor of 2^1.5 in one
 * shape parameter), before the analytic model takes it. */
#define RIG_SIM_OPTABLE_REACH 1.5

struct rig_sim_optable; /* opaque, read-only once loaded */

/* Whether rig's CUDA backend runs an [M, K] x [N, K] GEMM with its small-batch kernel
 * (cuda/ops/gemm.cu rig__gemv_pays: M <= 16 and K >= 2048 or N >= 32 x 8 x 132 SMs; `fused`,
 * a GEMM of a fused form (hal/ops.h): M <= 16 whatever K and N, cuBLAS having no prologue)
 * rather than cuBLAS. The table never blends the two kernels' points (their efficiencies do
 * not carry over). Can't fail. */
bool rig_sim_gemm_small_batch(double m, double n, double k, bool fused);

/* Whether a GEMM key names a fused form (hal/optable.h: p[4] or p[5] not 0); false for every
 * other kind. */
bool rig_sim_gemm_fused(const struct rig_optable_key *key);

/* Whether that small-batch kernel asks HBM for its weights before its programmatic-dependent-
 * launch wait on a GPU of `multiprocessors` SMs, by its launch geometry (hal/optable.h, for one
 * 16-warp block an SM): the persistent form (rig_gemv_persistent) stages its first units
 * before the wait, and a per-tile grid of one wave (rig_gemv_one_wave) loads or prefetches its
 * first batch; a per-tile grid of several waves asks for nothing early. False for
 * multiprocessors 0. */
bool rig_sim_gemm_early_weights(double m, double n, double k, bool fused,
                                int64_t multiprocessors);

/* Whether a decode-attention key (hal/optable.h: requests, mean and max KV, Hq, Hk, D) runs
 * on the register path with a grid of one wave, whose blocks ask L2 for their first step's K
 * and V before the programmatic-dependent-launch wait (cuda/ops/attention_decode.cu,
 * rig__decode_prefetch), as the small-batch GEMMs above ask for their weights: not the
 * tensor-core kernel (rig_decode_tensor_cores), and at most RIG_SIM_DECODE_EARLY_PER_SM
 * (request, KV head) items an SM, so that even one split a row fits one wave of 4 blocks an SM
 * (groups of 2 to 8 at D 64 and 128 hold 4 at 128 registers, cuda/ops/attention_decode.cu). The
 * CUDA planner may split a row so that a grid of more items than about half a wave takes two;
 * the rule does not follow it there. False for any other kind and for multiprocessors 0. */
#define RIG_SIM_DECODE_EARLY_PER_SM 4
bool rig_sim_decode_early(const struct rig_optable_key *key, int64_t multiprocessors);

/* The table at `name_or_path`: a built-in name ("h100" finds the embedded h100.h5) or a
 * path to an .h5 file, for a device of `multiprocessors` SMs (>= 0; which decode-attention
 * kernel a point and a key ran on, rig_decode_tensor_cores: the two kernels' points are
 * never blended, and each scales by its own work; 0: the register path everywhere). Loaded
 * once per process, name and SM count; later calls return the same table. RIG_E_NOT_FOUND / RIG_E_IO / RIG_E_PARSE (rig_optable_read), RIG_E_RANGE (name
 * too long), RIG_E_CAPACITY or RIG_E_NO_MEMORY with a message in `error`. */
enum rig_status rig_sim_optable_get(const char *name_or_path, int64_t multiprocessors,
                                    const struct rig_sim_optable **out, char *error,
                                    size_t error_len);

/* Points of a table (for tests and `rig profile` reports). */
int64_t rig_sim_optable_count(const struct rig_sim_optable *table);
/* Whether the table has points of op kind `kind`. */
bool rig_sim_optable_has_kind(const struct rig_sim_optable *table, enum rig_op_kind kind);
/* The host times measured with the table (hal/optable.h; 0: not measured). */
const struct rig_optable_host *rig_sim_optable_host(const struct rig_sim_optable *table);
const struct rig_optable_point *rig_sim_optable_point(const struct rig_sim_optable *table,
                                                      int64_t index);

/* The key `table` costs an op of `key` by: a fused GEMM's own where the table has GEMM points
 * of its form; else, in a table swept before the fused forms (or without that one), its plain
 * shape's (p[4] = p[5] = 0), whose time scaled by the fused op's own work is what it costs
 * then. Every other key as it is. rig_sim_optable_predict applies it; a caller that picks
 * its warm weight by the kernel (sim/cost.c) asks first. Can't fail. */
struct rig_optable_key rig_sim_optable_form_key(const struct rig_sim_optable *table,
                                                const struct rig_optable_key *key);

/* The predicted device time, as a graph node, of an op with `key`, `flops` and `bytes` on a
 * device of `peak_flops` FLOP/s and `hbm_bytes_per_s` whose eager launches cost `launch_ns`
 * more than a node, a point's node time weighing its warm time by `warm_weight` in [0, 1]
 * (cold^(1 - w) warm^w): true and *ns when the table reaches it; false (nothing written) when it
 * has no point of that kind within RIG_SIM_OPTABLE_REACH. *host_ns (may be NULL) gets the
 * host time of an eager issue, the nearest points' measured host times blended the same
 * way (not scaled by the work); 0 when those points have none (tables before host_ns). A
 * sample key names one rows' kind, never RIG_SAMPLE_MIXED (sim/cost.c blends the kinds). */
bool rig_sim_optable_predict(const struct rig_sim_optable *table,
                             const struct rig_optable_key *key, double flops, double bytes,
                             double peak_flops, double hbm_bytes_per_s, double launch_ns,
                             double warm_weight, double *ns, double *host_ns);

/* attention_decode_store (hal/ops.h) over its attention's node time: what the fused op's
 * points measured above the decode-attention points of the same key (the sweep times both at
 * each shape: core/harness/bench/profile.c), at the points of the fused kind nearest to `key`
 * (a key of that kind; `flops` the fused op's), blended by 1 / distance (an exact match alone
 * counts), each node time weighing its warm time by `warm_weight`. True and *extra_ns when
 * such points are within RIG_SIM_OPTABLE_REACH; false for a table swept before the fused op
 * (sim/cost.c prices the store as its own node then). May be negative (the store's work hides
 * in the attention's). Deterministic. */
bool rig_sim_optable_store_extra(const struct rig_sim_optable *table,
                                 const struct rig_optable_key *key, double flops,
                                 double warm_weight, double *extra_ns);

#endif /* RIG_SIM_OPTABLE_H */
