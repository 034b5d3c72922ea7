/* hal.h — the hardware abstraction layer: what the engine may ask of a device.
 *
 * The scheduler, caches and model forward are written once against this interface; the simulator
 * backend (sim/) and the CUDA backend (cuda/) implement it (docs/architecture.md §5). Objects:
 *   device  one GPU (or one simulated GPU): one TP rank; owns everything created on it;
 *   buffer  device memory, allocated at engine start, never in the step loop;
 *   stream  an ordered queue of work; ops and copies are issued on a stream;
 *   event   a point in a stream: record, make another stream wait, wait on the host;
 *   graph   the ops issued on a stream between capture begin and end, replayed as one unit;
 *   comm    the TP group of several devices: all-reduce, all-gather.
 * The HAL also owns time: rig_hal_now_ns() is the wall clock on CUDA and a virtual clock on
 * the simulator, so no wall-clock value ever reaches a simulated result.
 *
 * Every call goes through one dispatch layer (hal.c) that checks handles, shapes and dtypes
 * and returns a status; on an error nothing was issued and no state changed. Ops are
 * asynchronous with respect to the host: results are visible to the host after an event or
 * stream synchronisation (the simulator happens to compute at issue time; do not rely on it).
 *
 * Threads: a device and all objects created on it are used by one thread at a time (the
 * rank's scheduler thread). Different devices may be driven from different threads; that is
 * how TP ranks run, and collective ops block until every rank of the comm has issued them.
 */
#ifndef RIG_HAL_H
#define RIG_HAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/host_model.h"
#include "hal/ops.h"
#include "hal/status.h"
#include "hal/tensor.h"

struct rig_device;
struct rig_buffer;
struct rig_stream;
struct rig_event;
struct rig_graph;
struct rig_comm;
struct rig_dummy_piece; /* hal/dummy.h */

#define RIG_DEVICES_MAX 8
#define RIG_DEVICE_NAME_MAX 64

/* What a buffer holds. Timing-only simulation backs only METADATA buffers with host memory;
 * the rest are phantom (addresses that are never dereferenced). */
enum rig_memory_use {
    RIG_MEMORY_WEIGHTS = 0,
    RIG_MEMORY_KV = 1,
    RIG_MEMORY_ACTIVATIONS = 2,
    RIG_MEMORY_METADATA = 3,
};

/* How devices are opened. Fields a backend does not use are ignored. */
struct rig_device_config {
    int32_t first_ordinal;   /* GPU index of rank 0 (CUDA) */
    bool timing_only;        /* simulator: skip the math, phantom buffers (docs/simulator.md) */
    const char *profile;     /* simulator: device profile name ("h100") or YAML path */
    uint64_t seed;           /* simulator: seed of timing-only tokens */
    int64_t collective_timeout_ms; /* a TP collective not done within this fails the group
                                      with an error naming rank and collective (simulator:
                                      virtual and wall clock; CUDA: the NCCL watchdog);
                                      <= 0: the backend's default (10 minutes) */
    /* Ranks across processes. group_size 0 (or `count`): the group is the `count` devices
     * opened together, ranks 0..count-1. group_size > count: this process opens the one rank
     * `group_rank` (count must be 1) of a group of group_size ranks, one per process, whose
     * collectives the backend runs between the processes (simulator: over MPI,
     * sim/comm_mpi.h: the caller has initialised MPI and the job's process p holds rank p);
     * a backend that cannot gives RIG_E_UNSUPPORTED. */
    int32_t group_rank;
    int32_t group_size;
    int64_t collective_bytes_max; /* across processes: a rank's largest collective input */
};

struct rig_device_info {
    char name[RIG_DEVICE_NAME_MAX]; /* "NVIDIA H100 80GB HBM3", "sim:h100" */
    const char *backend;            /* "sim" | "cuda" */
    int32_t ordinal;                /* rank within the group (group_rank + index opened) */
    int32_t group_size;             /* ranks of the group, in this process and others */
    int64_t memory_bytes;           /* device memory */
    bool timing_only;
    bool virtual_clock;             /* true on the simulator */
    /* The simulator's model of the engine's own CPU time (its profile's host_* keys,
     * hal/host_model.h), which the engine charges through rig_hal_host_work_ns; zeros on real
     * hardware, where the work takes its own time. */
    struct rig_host_model host_model;
};

/* Opens `count` devices of `backend` ("sim" or "cuda") as one group (TP ranks 0..count-1).
 * On error returns a negative status, writes a reason to stderr and opens nothing. */
enum rig_status rig_hal_open(const char *backend, const struct rig_device_config *config,
                             int32_t count, struct rig_device **devices);
/* Closes a device; every object created on it must have been destroyed. NULL is a no-op. */
void rig_hal_close(struct rig_device *device);
const struct rig_device_info *rig_hal_device_info(const struct rig_device *device);
struct rig_issue_trace;
/* The device's issue trace (hal/issue_trace.h): NULL unless RIG_ISSUE_TRACE was set when it
 * was opened. Read-only; printed on stderr and freed by rig_hal_close. */
const struct rig_issue_trace *rig_hal_issue_trace(const struct rig_device *device);
/* Names of the backends compiled in, space separated ("sim cuda"). Can't fail. */
const char *rig_hal_backends(void);

/* --- buffers -------------------------------------------------------------------------- */
/* Allocates `bytes` (> 0) of device memory. Fails with RIG_E_DEVICE_MEMORY when the device
 * is full. Contents are undefined. */
enum rig_status rig_hal_buffer_alloc(struct rig_device *device, size_t bytes,
                                     enum rig_memory_use use, struct rig_buffer **out);
void rig_hal_buffer_free(struct rig_buffer *buffer);
/* Device address of the first byte; what tensors point into. Can't fail. */
void *rig_hal_buffer_ptr(const struct rig_buffer *buffer);
size_t rig_hal_buffer_size(const struct rig_buffer *buffer);
/* Copies between host and device memory on `stream`; the host memory must stay valid and
 * unchanged until the stream has passed the copy. Offsets and sizes are bounds-checked
 * against the buffer. From or to pinned host memory (rig_hal_host_alloc) a copy is
 * asynchronous; from or to any other (pageable) host memory it may block the host until the
 * copy is done (CUDA stages it through its own pinned buffer; the simulator costs it so), so
 * a step loop that overlaps host work with the device copies through pinned memory only. */
enum rig_status rig_hal_buffer_upload(struct rig_stream *stream, struct rig_buffer *buffer,
                                      size_t offset, const void *src, size_t bytes);
enum rig_status rig_hal_buffer_download(struct rig_stream *stream,
                                        const struct rig_buffer *buffer, size_t offset,
                                        void *dst, size_t bytes);
/* Allocates `bytes` (> 0) of zeroed pinned (page-locked) host memory for copies to and from
 * any device of `device`'s group: cudaHostAlloc on CUDA, aligned heap memory on the
 * simulator. Counts as an object of `device` until rig_hal_host_free. At most
 * RIG_HAL_PINNED_MAX live allocations in the process; RIG_E_CAPACITY beyond,
 * RIG_E_NO_MEMORY when the host has none. Start-up only: never in the step loop. */
#define RIG_HAL_PINNED_MAX 512 /* an engine pins 4 blocks; a fleet runs up to 64 engines */
enum rig_status rig_hal_host_alloc(struct rig_device *device, size_t bytes, void **out);
/* Frees what rig_hal_host_alloc(device, ...) returned. NULL is a no-op. */
void rig_hal_host_free(struct rig_device *device, void *host);
/* True when [host, host + bytes) lies inside one live rig_hal_host_alloc allocation (of any
 * device). Thread-safe. Can't fail. */
bool rig_hal_host_is_pinned(const void *host, size_t bytes);
/* Fills `count` 32-bit words from `offset` (a multiple of 4) with `value`. */
enum rig_status rig_hal_buffer_fill(struct rig_stream *stream, struct rig_buffer *buffer,
                                    size_t offset, uint32_t value, size_t count);
/* Fills the bf16 block [piece->rows, piece->cols] at `offset` (a multiple of 2) with the
 * seeded dummy values of `piece` (hal/dummy.h): the same bytes on every backend, computed on
 * the device (no host staging), asynchronous like rig_hal_buffer_fill. An empty block issues
 * nothing. RIG_E_INVALID for a NULL piece, an odd offset or a block outside its tensor
 * (negative row0, col0, rows or cols, width < 1, col0 + cols > width, or an element index
 * past INT64_MAX); RIG_E_RANGE past the buffer; RIG_E_STATE while the stream captures. */
enum rig_status rig_hal_buffer_fill_dummy(struct rig_stream *stream, struct rig_buffer *buffer,
                                          size_t offset, const struct rig_dummy_piece *piece);
/* Device-to-device copy of `bytes` between buffers. */
enum rig_status rig_hal_buffer_copy(struct rig_stream *stream, struct rig_buffer *dst,
                                    size_t dst_offset, const struct rig_buffer *src,
                                    size_t src_offset, size_t bytes);

/* --- streams, events ------------------------------------------------------------------ */
enum rig_status rig_hal_stream_create(struct rig_device *device, struct rig_stream **out);
void rig_hal_stream_destroy(struct rig_stream *stream);
/* Blocks the host until all work issued on the stream is done. */
enum rig_status rig_hal_stream_synchronize(struct rig_stream *stream);

enum rig_status rig_hal_event_create(struct rig_device *device, struct rig_event **out);
void rig_hal_event_destroy(struct rig_event *event);
/* Marks the current end of `stream`. */
enum rig_status rig_hal_event_record(struct rig_event *event, struct rig_stream *stream);
/* Work issued on `stream` after this call starts only after `event` has completed. */
enum rig_status rig_hal_stream_wait_event(struct rig_stream *stream, struct rig_event *event);
/* Blocks the host until `event` has completed. */
enum rig_status rig_hal_event_synchronize(struct rig_event *event);
/* Whether all work before `event`'s record has completed, without blocking: *complete is
 * true also for a never-recorded event (as CUDA). The simulator compares the event's time with
 * the host's virtual clock. */
enum rig_status rig_hal_event_query(struct rig_event *event, bool *complete);
/* Device time from `start` to `end` (both recorded and completed), in nanoseconds. */
enum rig_status rig_hal_event_elapsed_ns(const struct rig_event *start,
                                         const struct rig_event *end, int64_t *ns);

/* --- graphs --------------------------------------------------------------------------- */
/* Between begin and end, ops issued on `stream` are recorded, not run. Copies and
 * synchronisation are not allowed while capturing (RIG_E_STATE). */
enum rig_status rig_hal_graph_capture_begin(struct rig_stream *stream);
enum rig_status rig_hal_graph_capture_end(struct rig_stream *stream, struct rig_graph **out);
/* Issues the recorded ops on `stream`, reading the current contents of their buffers. */
enum rig_status rig_hal_graph_launch(struct rig_graph *graph, struct rig_stream *stream);
void rig_hal_graph_destroy(struct rig_graph *graph);
/* Number of ops recorded in a graph. */
int32_t rig_hal_graph_op_count(const struct rig_graph *graph);

/* --- communication -------------------------------------------------------------------- */
/* Makes one comm per device over `devices` (opened together by one rig_hal_open); comms[i]
 * is rank i — or, for the one rank of a group across processes (hal.h, group_size), that
 * rank of the whole group. Must be called from one thread. */
enum rig_status rig_hal_comm_create(struct rig_device **devices, int32_t count,
                                    struct rig_comm **comms);
void rig_hal_comm_destroy(struct rig_comm *comm);
/* Fails the whole group: every rank's pending and later collectives return an error instead
 * of waiting (NCCL: ncclCommAbort). For a rank whose job failed, so the others never wait
 * for it. `reason` names what happened. Any thread; (optional) a no-op where the backend
 * cannot abort. */
void rig_hal_comm_abort(struct rig_comm *comm, const char *reason);
/* Why the group failed, naming the rank and the collective; "" while it has not. */
const char *rig_hal_comm_error(const struct rig_comm *comm);
int32_t rig_hal_comm_rank(const struct rig_comm *comm);
int32_t rig_hal_comm_size(const struct rig_comm *comm);

/* --- ops ------------------------------------------------------------------------------ */
/* Checks `op` (shapes, dtypes, handles) and issues it on `stream`. When the check fails
 * (RIG_E_SHAPE, RIG_E_DTYPE, RIG_E_INVALID, ...) nothing was issued and the stream's error
 * slot names the op and the argument (rig_hal_stream_error). The ops are the hot path: the
 * slot lives in the stream, so no call carries a message buffer. */
enum rig_status rig_hal_op(struct rig_stream *stream, const struct rig_op *op);
/* Why the last op issued on `stream` failed its check; "" when it passed or none was issued.
 * Read by the thread that issues on the stream, or after synchronising with it (a joined
 * rank thread). Valid until the next op on the stream. Can't fail. */
const char *rig_hal_stream_error(const struct rig_stream *stream);
/* Checks `op` without issuing it; on failure writes the message naming the op and the
 * argument to `error` (`error_len` bytes; NULL or 0 for none), "" on success. */
enum rig_status rig_hal_op_check(const struct rig_op *op, char *error, size_t error_len);

/* Typed shorthands for rig_hal_op, one per op kind. */
enum rig_status rig_hal_embedding(struct rig_stream *s, const struct rig_op_embedding *p);
enum rig_status rig_hal_rms_norm(struct rig_stream *s, const struct rig_op_rms_norm *p);
enum rig_status rig_hal_add_rms_norm(struct rig_stream *s, const struct rig_op_add_rms_norm *p);
enum rig_status rig_hal_gemm(struct rig_stream *s, const struct rig_op_gemm *p);
enum rig_status rig_hal_head_rms_norm(struct rig_stream *s,
                                      const struct rig_op_head_rms_norm *p);
enum rig_status rig_hal_rope(struct rig_stream *s, const struct rig_op_rope *p);
enum rig_status rig_hal_store_kv(struct rig_stream *s, const struct rig_op_store_kv *p);
enum rig_status rig_hal_qk_norm_rope_store(struct rig_stream *s,
                                           const struct rig_op_qk_norm_rope_store *p);
enum rig_status rig_hal_attention_prefill(struct rig_stream *s,
                                          const struct rig_op_attention_prefill *p);
enum rig_status rig_hal_attention_decode(struct rig_stream *s,
                                         const struct rig_op_attention_decode *p);
enum rig_status rig_hal_silu_mul(struct rig_stream *s, const struct rig_op_silu_mul *p);
enum rig_status rig_hal_gather_rows(struct rig_stream *s, const struct rig_op_gather_rows *p);
enum rig_status rig_hal_index_gather(struct rig_stream *s,
                                     const struct rig_op_index_gather *p);
enum rig_status rig_hal_index_scatter(struct rig_stream *s,
                                      const struct rig_op_index_scatter *p);
enum rig_status rig_hal_sample(struct rig_stream *s, const struct rig_op_sample *p);
enum rig_status rig_hal_copy(struct rig_stream *s, const struct rig_op_copy *p);
enum rig_status rig_hal_all_reduce(struct rig_stream *s, const struct rig_op_all_reduce *p);
enum rig_status rig_hal_all_gather(struct rig_stream *s, const struct rig_op_all_gather *p);
enum rig_status rig_hal_penalize(struct rig_stream *s, const struct rig_op_penalize *p);
enum rig_status rig_hal_logprobs(struct rig_stream *s, const struct rig_op_logprobs *p);
enum rig_status rig_hal_attention_decode_store(struct rig_stream *s,
                                               const struct rig_op_attention_decode_store *p);

/* --- time ----------------------------------------------------------------------------- */
/* The host clock of `device` in nanoseconds: wall clock (CLOCK_MONOTONIC) on CUDA, the
 * virtual host timeline on the simulator. Monotonic. */
int64_t rig_hal_now_ns(struct rig_device *device);
/* Accounts `ns` of modelled host CPU work (scheduling, result processing) on the virtual
 * host timeline; a no-op on real hardware, where the work takes its own time. */
void rig_hal_host_work_ns(struct rig_device *device, int64_t ns);
/* Idles the host until `t_ns` on its clock (no-op if already past): the simulator jumps, a
 * real backend (whose clock is CLOCK_MONOTONIC) waits by rig_hal_wall_wait_until_ns, on time
 * (a replayed arrival's TTFT counts from `t_ns`). For waiting on the next request arrival. */
void rig_hal_host_wait_until_ns(struct rig_device *device, int64_t t_ns);
/* The wait of a real backend: until CLOCK_MONOTONIC reads `t_ns` (no-op if already past),
 * sleeping with a 1 ns timer slack (set on the calling thread) to within 100 us of it and
 * spinning the rest. Never returns early. */
void rig_hal_wall_wait_until_ns(int64_t t_ns);

/* --- faults --------------------------------------------------------------------------- */
/* Deterministic fault injection, for tests and the swarm (core/harness/swarm/), which asks
 * for faults through the HAL and never includes a backend. Counters start when set. */
/* Faults a rank can inject into a collective (the TP group's all-reduce / all-gather). */
enum rig_hal_collective_fault {
    RIG_HAL_COLLECTIVE_NONE = 0,
    RIG_HAL_COLLECTIVE_LATE = 1,  /* the rank arrives collective_delay_ns late */
    RIG_HAL_COLLECTIVE_STALL = 2, /* the rank never arrives (a hung GPU) */
    RIG_HAL_COLLECTIVE_FAIL = 3,  /* the rank's op fails (RIG_E_FAULT) before it arrives: the
                                     others wait until the group is aborted or times out */
};
struct rig_hal_faults {
    int64_t fail_alloc_at; /* the n-th buffer allocation from now (0 = next) fails with
                              RIG_E_DEVICE_MEMORY; -1 = never */
    int64_t stall_op_at;   /* the n-th op issued from now stalls its stream; -1 = never */
    int64_t stall_ns;      /* how long that stall lasts on the device's clock */
    enum rig_hal_collective_fault collective_fault; /* what happens at collective_at */
    int64_t collective_at;       /* the n-th collective issued from now (0 = next) */
    int64_t collective_delay_ns; /* LATE: how late, on the device's clock */
};
/* "none" / "late" / "stall" / "fail"; RIG_E_NOT_FOUND for another name. */
enum rig_status rig_hal_collective_fault_parse(const char *name,
                                               enum rig_hal_collective_fault *out);
const char *rig_hal_collective_fault_name(enum rig_hal_collective_fault fault);
/* Sets (replaces) the fault plan of `device`. RIG_E_UNSUPPORTED when its backend injects no
 * faults (only the simulator does), RIG_E_INVALID for a negative stall. */
enum rig_status rig_hal_set_faults(struct rig_device *device, const struct rig_hal_faults *faults);
/* The fault plan every device of `backend` opened after this call starts with (NULL clears
 * it), so a fault can hit the allocations made while an engine starts. RIG_E_NOT_FOUND for a
 * backend not registered, RIG_E_UNSUPPORTED for one without faults. Process-wide and not
 * thread-safe: call it between runs. */
enum rig_status rig_hal_set_open_faults(const char *backend, const struct rig_hal_faults *faults);

#endif /* RIG_HAL_H */
