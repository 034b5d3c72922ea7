/* profile.h — a simulated device's profile: the numbers the cost model and the memory
 * allocator read (memory size, peak FLOP/s, bandwidths, launch overheads).
 *
 * Profiles are YAML files (sim/profiles/<name>.yaml), one flat mapping of the keys in
 * docs/simulator.md, every key required, unknown keys rejected. The built-in ones are
 * embedded in the binary (hal/embedded.h), so `profile: h100` needs no data directory; a
 * value containing '/' or ending in ".yaml" is read from that path instead.
 *
 * Errors name the file, the line and column (1-based) and the key, e.g.
 *   "bad.yaml:3:1: unknown key 'hbm_bandwith'".
 * A profile is a plain value: copy it freely. Thread safety: the functions are reentrant.
 */
#ifndef RIG_SIM_PROFILE_H
#define RIG_SIM_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "hal/host_model.h"
#include "hal/status.h"

#define RIG_SIM_PROFILE_NAME_MAX  64
#define RIG_SIM_PROFILE_ERROR_MAX 512
#define RIG_SIM_CURVE_POINTS      32

/* Cost classes: each op kind belongs to one, and each class has an achievable fraction of
 * peak compute and bandwidth (real kernels never reach the datasheet numbers). */
enum rig_sim_op_class {
    RIG_SIM_OP_CLASS_GEMM = 0,
    RIG_SIM_OP_CLASS_ATTENTION = 1,
    RIG_SIM_OP_CLASS_ELEMENTWISE = 2,
    RIG_SIM_OP_CLASS_COPY = 3,
    RIG_SIM_OP_CLASS_DECODE_ATTENTION = 4, /* bandwidth bound, unlike prefill attention */
    RIG_SIM_OP_CLASS_COUNT
};

struct rig_sim_optable;

/* One measured collective: its device time at `ranks` ranks and `bytes` bytes. */
struct rig_sim_curve_point {
    int32_t ranks;
    double bytes;
    double ns;
};

struct rig_sim_profile {
    char name[RIG_SIM_PROFILE_NAME_MAX];
    /* Optional key `op_table`: a measured op table (sim/optable.h) by built-in name or
     * path, "none" (the default) for the analytic model alone. Loading the profile as
     * "<name>:analytic" ignores it. */
    char op_table[RIG_SIM_PROFILE_NAME_MAX * 4];
    const struct rig_sim_optable *table; /* loaded op_table; NULL: analytic only */
    /* Optional key `pageable_host_copies` (default 0): 1 when the engine's host buffers are
     * pageable, as CUDA then copies them synchronously: an upload first waits for the
     * stream's earlier work, a download returns only once it has landed. */
    int64_t pageable_host_copies;
    /* Optional key `multiprocessors` (default 0: not known): the GPU's SM count, which decides
     * the decode-attention kernel the CUDA backend takes (rig_decode_tensor_cores,
     * hal/optable.h) and so how the op table scales decode points (sim/optable.h). */
    int64_t multiprocessors;
    /* Optional key `op_table_warm_weight` (default 0.5): how much an op table point's warm
     * time weighs in its node time, cold^(1 - w) warm^w (sim/optable.c). */
    double op_table_warm_weight;
    /* Optional key `op_table_warm_weight_early` (default: op_table_warm_weight): the same for
     * the small-batch GEMMs whose kernels ask for their weights before their programmatic-
     * dependent-launch wait (rig_sim_gemm_early_weights; needs `multiprocessors`), and decode
     * attention whose one-wave grid asks for its first keys there (rig_sim_decode_early): in
     * a step that stream overlaps the node before, as in the warm time's graph it overlaps the
     * copy before. */
    double op_table_warm_weight_early;
    /* Optional keys `host_<term>_ns`, `host_<term>_per_request_ns`, `_per_token_ns`,
     * `_per_new_ns`, `_per_finished_ns` for the terms schedule, prepare, process and loop
     * (hal/host_model.h; real numbers >= 0; default 0 but host_schedule_ns 20000,
     * host_prepare_per_request_ns 400 and host_process_per_request_ns 60, the H100 host's
     * values before the model had more terms, docs/simulator.md "Host time"): the engine's
     * own CPU time on the host the profile's GPU sits in (rig_device_info; the engine charges
     * it). An op table fitted by `rig profile`'s calibration sets them from its attributes of
     * the same names (rig_optable_host): the table's host is the one predicted. */
    struct rig_host_model host;
    /* Optional keys: the host time of a step's other calls, each kind measured by the issue
     * trace (hal/issue_trace.h) in the runs of a model: `upload_host_ns`, `download_host_ns`,
     * `device_copy_host_ns` (host to device, device to host, device to device; default
     * kernel_launch_host_ns, as before the keys), `event_record_host_ns` and
     * `stream_wait_host_ns` (default 0). An op table that carries host times measured by its
     * sweep (hal/optable.h, rig_optable_host) sets these, `graph_launch_host_ns` and
     * `kernel_launch_host_ns` from them instead: the table's host is the one predicted. */
    int64_t upload_host_ns;
    int64_t download_host_ns;
    int64_t device_copy_host_ns;
    int64_t event_record_host_ns;
    int64_t stream_wait_host_ns;
    int64_t memory_bytes;                      /* device memory */
    double peak_bf16_flops;                    /* dense bf16 tensor-core FLOP/s */
    double hbm_bytes_per_s;                    /* HBM bandwidth */
    double efficiency[RIG_SIM_OP_CLASS_COUNT]; /* (0, 1] achievable fraction */
    double gemm_compute_efficiency;            /* (0, 1] GEMM FLOP term; efficiency[GEMM]: bytes */
    int64_t gemm_k_half; /* GEMM FLOP term x K / (K + this): short reductions run slower */
    int64_t latency_ns[RIG_SIM_OP_CLASS_COUNT]; /* fixed time per op, added to its roofline */
    /* Occupancy (gemm, attention, decode attention; 0 for the others): an op with fewer
     * thread blocks than full_blocks runs at eff x (blocks / full_blocks)^exponent. */
    int64_t full_blocks[RIG_SIM_OP_CLASS_COUNT];       /* 0: no occupancy term */
    double occupancy_exponent[RIG_SIM_OP_CLASS_COUNT]; /* (0, 1] */
    int64_t kernel_launch_host_ns;                     /* host CPU time per kernel launch */
    int64_t kernel_launch_latency_ns;                  /* launch call to earliest start */
    int64_t graph_launch_host_ns;                      /* host CPU time per graph launch */
    int64_t graph_node_ns;                             /* shortest graph node, launch included */
    int64_t min_kernel_ns;                             /* shortest possible kernel */
    double h2d_bytes_per_s;                            /* host to device (PCIe) */
    int64_t h2d_latency_ns;
    double d2h_bytes_per_s; /* device to host (PCIe) */
    int64_t d2h_latency_ns;
    double all_reduce_bytes_per_s; /* NVLink bus bandwidth, ring */
    int64_t all_reduce_latency_ns;
    double all_gather_bytes_per_s; /* NVLink bus bandwidth, ring */
    int64_t all_gather_latency_ns;
    /* Optional key `all_reduce_graph_ns` (default: none): measured all-reduce times inside a
     * replayed graph (`rig bench collectives`, its graph column), as "RANKS:BYTES:NS" items
     * separated by spaces or commas, sorted by ranks, then by bytes (strictly rising). A TP
     * group whose rank count has two or more points takes its all-reduces from them
     * (rig_sim_cost_collective_ns: log-log between points, the smallest's time below them,
     * the last segment's bandwidth above); other groups keep the latency + bandwidth model. */
    struct rig_sim_curve_point all_reduce_curve[RIG_SIM_CURVE_POINTS];
    int32_t all_reduce_curve_count;
    /* The network between nodes (optional keys; defaults below). A TP group of more ranks
     * than gpus_per_node spans nodes: its collectives' rings cross the inter-node links, one
     * NIC per GPU (rail-optimised), so they run at min(NVLink, network) bandwidth and pay the
     * network's latency on top of NVLink's (sim/cost.c, rig_sim_cost_collective_ns). */
    int64_t gpus_per_node;
    double inter_node_bytes_per_s; /* per GPU, one direction */
    int64_t inter_node_latency_ns; /* per collective, added to the NVLink latency */
};

/* Defaults of the network keys: an HGX H100 node of 8 GPUs, each with a 400 Gb/s
 * InfiniBand NDR NIC (ConnectX-7): 50e9 B/s per GPU; ~10 us more per collective than within
 * the node (NCCL's small-message all-reduce across two nodes, an estimate). */
#define RIG_SIM_GPUS_PER_NODE 8
#define RIG_SIM_INTER_NODE_BYTES_PER_S 50e9
#define RIG_SIM_INTER_NODE_LATENCY_NS 10000

/* Defaults of the host keys: the engine's CPU time measured on the H100's host (/steps
 * host_process; the device gap between decode steps, 100-170 us + 0.2-0.8 us a request,
 * docs/simulator.md "Host time"), the values the engine used before they were the profile's. */
#define RIG_SIM_HOST_SCHEDULE_NS             20000
#define RIG_SIM_HOST_PREPARE_PER_REQUEST_NS  400
#define RIG_SIM_HOST_PROCESS_PER_REQUEST_NS  60

/* Parses `text` (`size` bytes, YAML) into `out`; `file` is the name used in messages.
 * Returns RIG_OK, or RIG_E_PARSE / RIG_E_RANGE with "file:line:col: ..." in `error`
 * (error_size bytes, always NUL-terminated); `out` is left unchanged on error. */
enum rig_status rig_sim_profile_parse(const char *file, const char *text, size_t size,
                                      struct rig_sim_profile *out, char *error, size_t error_size);

/* Loads a profile by built-in name ("h100") or by path (contains '/' or ends in ".yaml").
 * NULL or "" means "h100". Modifiers after the name: ":analytic" ("h100:analytic") loads the
 * profile without its op table, ":pinned" with pinned host buffers (pageable_host_copies 0);
 * "h100:analytic:pinned" is the model before measured tables and host copies.
 * RIG_E_NOT_FOUND for an unknown name, RIG_E_IO for an unreadable file, else as
 * rig_sim_profile_parse or as rig_sim_optable_get for the profile's op table. */
enum rig_status rig_sim_profile_load(const char *name_or_path, struct rig_sim_profile *out,
                                     char *error, size_t error_size);

#endif /* RIG_SIM_PROFILE_H */
