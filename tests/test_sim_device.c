/* test_sim_device.c — the simulated device: memory, graphs, faults, timing-only, profiles.
 *
 * Checks: buffers round-trip through upload / download / fill / copy at offsets, and read
 * back zeros when fresh; the device memory limit gives RIG_E_DEVICE_MEMORY; a graph replay
 * gives exactly the bytes of the eager run and reads the buffers' current contents, and
 * every replay's nodes take exactly their node cost from the profile (the cost a node keeps
 * after its first replay is that cost); the
 * n-th allocation fails with RIG_E_DEVICE_MEMORY leaving the device unchanged, and a stalled
 * op delays its stream by exactly stall_ns; a Qwen3-32B-shaped model (64 layers, hidden
 * 5120, intermediate 25600, 64/8 heads of 128, vocab 151936) plus an 8 GiB KV pool is
 * allocated on each of 4 timing-only ranks with VmRSS staying under 1 GB, its ops run
 * without touching phantom memory, metadata ops run for real, and touching a phantom
 * buffer crashes (in a child process); a real 40 GB buffer costs only the pages touched;
 * profile errors name file:line:column and the key; the built-in profiles load. Pinned host
 * memory: zeroed, recognised by rig_hal_host_is_pinned over exactly its range, refused past
 * RIG_HAL_PINNED_MAX; a copy through it leaves the host free (only the API call's cost),
 * the same copy through pageable memory makes the host wait for its end; an event query is
 * false while the copy runs and true once the host has waited for it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/cost.h"
#include "sim/profile.h"
#include "sim/sim.h"
#include "tests/support/test_support.h"

static void test_buffer_round_trip(void **state)
{
    (void)state;
    struct rig_device *device;
    struct rig_stream *stream;
    struct rig_buffer *a, *b;
    rig_test_open_sim(1, false, &device);
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 1000, RIG_MEMORY_ACTIVATIONS, &a), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 1000, RIG_MEMORY_KV, &b), RIG_OK);
    assert_int_equal(rig_hal_buffer_size(a), 1000);
    assert_int_equal((uintptr_t)rig_hal_buffer_ptr(a) % 64, 0);
    uint8_t fresh[1000], pattern[300], back[1000];
    assert_int_equal(rig_hal_buffer_download(stream, a, 0, fresh, sizeof fresh), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    for (size_t i = 0; i < sizeof fresh; i++)
        assert_int_equal(fresh[i], 0);
    for (size_t i = 0; i < sizeof pattern; i++)
        pattern[i] = (uint8_t)(i * 7 + 1);
    assert_int_equal(rig_hal_buffer_upload(stream, a, 100, pattern, sizeof pattern), RIG_OK);
    assert_int_equal(rig_hal_buffer_fill(stream, a, 500, 0xdeadbeefu, 10), RIG_OK);
    assert_int_equal(rig_hal_buffer_copy(stream, b, 7, a, 100, 300), RIG_OK);
    assert_int_equal(rig_hal_buffer_download(stream, a, 0, back, sizeof back), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    assert_memory_equal(back + 100, pattern, sizeof pattern);
    for (int32_t i = 0; i < 10; i++) {
        uint32_t word;
        memcpy(&word, back + 500 + 4 * i, 4);
        assert_int_equal(word, 0xdeadbeefu);
    }
    assert_int_equal(back[99], 0);
    assert_int_equal(back[540], 0);
    assert_int_equal(rig_hal_buffer_download(stream, b, 0, back, sizeof back), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    assert_memory_equal(back + 7, pattern, sizeof pattern);
    assert_int_equal(back[6], 0);
    struct rig_sim_stats stats;
    assert_int_equal(rig_sim_get_stats(device, &stats), RIG_OK);
    assert_int_equal(stats.bytes_allocated, 2 * 1024); /* 256-byte granularity */
    assert_int_equal(stats.bytes_resident, 2 * 1024);
    rig_hal_buffer_free(a);
    rig_hal_buffer_free(b);
    assert_int_equal(rig_sim_get_stats(device, &stats), RIG_OK);
    assert_int_equal(stats.bytes_allocated, 0);
    rig_hal_stream_destroy(stream);
    rig_hal_close(device);
}

static void test_device_memory_limit(void **state)
{
    (void)state;
    struct rig_device *device;
    struct rig_buffer *big, *more;
    rig_test_open_sim(1, true, &device);
    int64_t total = rig_hal_device_info(device)->memory_bytes;
    assert_int_equal(total, 85017493504ll);
    size_t most = (size_t)total - 4096;
    assert_int_equal(rig_hal_buffer_alloc(device, most, RIG_MEMORY_KV, &big), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 8192, RIG_MEMORY_KV, &more), RIG_E_DEVICE_MEMORY);
    assert_int_equal(rig_hal_buffer_alloc(device, 8192, RIG_MEMORY_METADATA, &more),
                     RIG_E_DEVICE_MEMORY); /* real buffers count against the device too */
    assert_int_equal(rig_hal_buffer_alloc(device, 4096, RIG_MEMORY_KV, &more), RIG_OK);
    rig_hal_buffer_free(more);
    rig_hal_buffer_free(big);
    /* after freeing, the space is whole again (the free list coalesced) */
    assert_int_equal(rig_hal_buffer_alloc(device, (size_t)total, RIG_MEMORY_KV, &big), RIG_OK);
    rig_hal_buffer_free(big);
    rig_hal_close(device);
}

/* A small MLP: out = silu_mul(gemm(rms_norm(x), w)) on buffers laid out in one buffer. */
struct rig__mlp {
    struct rig_op ops[3];
    size_t out_offset, out_bytes, x_offset, x_bytes;
};

static struct rig__mlp rig__mlp_make(char *base)
{
    enum { T = 5, H = 32, I = 24 };
    struct rig__mlp m = {.x_offset = 0, .x_bytes = T * H * 2};
    struct rig_tensor x = rig_tensor_2d(base, RIG_DTYPE_BF16, T, H);
    struct rig_tensor nw = rig_tensor_1d(base + 1024, RIG_DTYPE_BF16, H);
    struct rig_tensor xn = rig_tensor_2d(base + 2048, RIG_DTYPE_BF16, T, H);
    struct rig_tensor w = rig_tensor_2d(base + 4096, RIG_DTYPE_BF16, 2 * I, H);
    struct rig_tensor gu = rig_tensor_2d(base + 8192, RIG_DTYPE_BF16, T, 2 * I);
    struct rig_tensor out = rig_tensor_2d(base + 12288, RIG_DTYPE_BF16, T, I);
    m.ops[0] = (struct rig_op){.kind = RIG_OP_RMS_NORM};
    m.ops[0].u.rms_norm = (struct rig_op_rms_norm){xn, x, nw, 1e-6f};
    m.ops[1] = (struct rig_op){.kind = RIG_OP_GEMM};
    m.ops[1].u.gemm = (struct rig_op_gemm){.out = gu, .a = xn, .b = w, .bias = rig_tensor_none()};
    m.ops[2] = (struct rig_op){.kind = RIG_OP_SILU_MUL};
    m.ops[2].u.silu_mul = (struct rig_op_silu_mul){out, gu};
    m.out_offset = 12288;
    m.out_bytes = T * I * 2;
    return m;
}

static void rig__random_upload(struct rig_stream *stream, struct rig_buffer *buf, uint64_t seed)
{
    static uint16_t values[8192];
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, seed);
    rig_test_fill_bf16(&rng, values, 8192, -1.0f, 1.0f);
    assert_int_equal(rig_hal_buffer_upload(stream, buf, 0, values, sizeof values), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
}

static void rig__download(struct rig_stream *stream, struct rig_buffer *buf, size_t offset,
                          void *out, size_t bytes)
{
    assert_int_equal(rig_hal_buffer_download(stream, buf, offset, out, bytes), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
}

static void test_pinned_host_memory(void **state)
{
    (void)state;
    struct rig_device *device;
    rig_test_open_sim(1, false, &device);
    uint8_t *host = NULL;
    void *p = NULL;
    assert_int_equal(rig_hal_host_alloc(device, 0, &p), RIG_E_INVALID);
    assert_int_equal(rig_hal_host_alloc(device, 1000, &p), RIG_OK);
    host = p;
    for (int32_t i = 0; i < 1000; i++)
        assert_int_equal(host[i], 0);
    assert_true(rig_hal_host_is_pinned(host, 1000));
    assert_true(rig_hal_host_is_pinned(host + 999, 1));
    assert_false(rig_hal_host_is_pinned(host + 999, 2));
    assert_false(rig_hal_host_is_pinned(host + 1000, 1));
    uint8_t pageable[16];
    assert_false(rig_hal_host_is_pinned(pageable, sizeof pageable));
    void *more[RIG_HAL_PINNED_MAX];
    int32_t got = 0;
    while (got < RIG_HAL_PINNED_MAX && rig_hal_host_alloc(device, 64, &more[got]) == RIG_OK)
        got++;
    assert_true(got >= 1 && got < RIG_HAL_PINNED_MAX); /* the table is full: host holds one */
    void *refused = NULL;
    assert_int_equal(rig_hal_host_alloc(device, 64, &refused), RIG_E_CAPACITY);
    assert_null(refused);
    for (int32_t i = 0; i < got; i++)
        rig_hal_host_free(device, more[i]);
    rig_hal_host_free(device, host);
    assert_false(rig_hal_host_is_pinned(host, 1));
    rig_hal_host_free(device, NULL);
    rig_hal_close(device); /* asserts no live objects: every pinned block was counted back */
}

/* Host time after a 64 MiB download to `host`, and whether the event after it had completed
 * just after the call. */
static int64_t rig__download_host_ns(bool pinned, bool *complete_after)
{
    struct rig_device *device;
    struct rig_stream *stream;
    struct rig_buffer *buffer;
    struct rig_event *event;
    size_t bytes = (size_t)64 << 20;
    rig_test_open_sim(1, false, &device);
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    assert_int_equal(rig_hal_event_create(device, &event), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, bytes, RIG_MEMORY_ACTIVATIONS, &buffer), RIG_OK);
    void *host = NULL;
    if (pinned) assert_int_equal(rig_hal_host_alloc(device, bytes, &host), RIG_OK);
    else host = malloc(bytes);
    assert_non_null(host);
    bool complete = false;
    assert_int_equal(rig_hal_event_query(event, &complete), RIG_OK);
    assert_true(complete); /* never recorded */
    int64_t before = rig_hal_now_ns(device);
    assert_int_equal(rig_hal_buffer_download(stream, buffer, 0, host, bytes), RIG_OK);
    int64_t after = rig_hal_now_ns(device) - before;
    assert_int_equal(rig_hal_event_record(event, stream), RIG_OK);
    assert_int_equal(rig_hal_event_query(event, complete_after), RIG_OK);
    assert_int_equal(rig_hal_event_synchronize(event), RIG_OK);
    assert_int_equal(rig_hal_event_query(event, &complete), RIG_OK);
    assert_true(complete);
    if (pinned) rig_hal_host_free(device, host);
    else free(host);
    rig_hal_buffer_free(buffer);
    rig_hal_event_destroy(event);
    rig_hal_stream_destroy(stream);
    rig_hal_close(device);
    return after;
}

static void test_pageable_copy_blocks_host(void **state)
{
    (void)state;
    struct rig_sim_profile p;
    char error[RIG_SIM_PROFILE_ERROR_MAX];
    assert_int_equal(rig_sim_profile_load("h100", &p, error, sizeof error), RIG_OK);
    int64_t copy = rig_sim_cost_copy_ns(&p, RIG_COPY_DEVICE_TO_HOST, (size_t)64 << 20);
    bool pinned_done = true, pageable_done = false;
    assert_int_equal(rig__download_host_ns(true, &pinned_done), p.kernel_launch_host_ns);
    assert_false(pinned_done);
    assert_int_equal(rig__download_host_ns(false, &pageable_done), p.kernel_launch_host_ns + copy);
    assert_true(pageable_done);
}

static void test_graph_replay_equals_eager(void **state)
{
    (void)state;
    struct rig_device *device;
    struct rig_stream *stream;
    struct rig_buffer *buf;
    struct rig_graph *graph;
    rig_test_open_sim(1, false, &device);
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 16384, RIG_MEMORY_ACTIVATIONS, &buf), RIG_OK);
    struct rig__mlp m = rig__mlp_make(rig_hal_buffer_ptr(buf));
    uint8_t eager[2][240], replay[240];
    for (int32_t input = 0; input < 2; input++) { /* eager results for two inputs */
        rig__random_upload(stream, buf, 10 + (uint64_t)input);
        for (int32_t i = 0; i < 3; i++)
            assert_int_equal(rig_hal_op(stream, &m.ops[i]), RIG_OK);
        rig__download(stream, buf, m.out_offset, eager[input], m.out_bytes);
    }
    assert_memory_not_equal(eager[0], eager[1], m.out_bytes);
    rig__random_upload(stream, buf, 10); /* also clears the output region */
    assert_int_equal(rig_hal_graph_capture_begin(stream), RIG_OK);
    for (int32_t i = 0; i < 3; i++)
        assert_int_equal(rig_hal_op(stream, &m.ops[i]), RIG_OK);
    assert_int_equal(rig_hal_graph_capture_end(stream, &graph), RIG_OK);
    assert_int_equal(rig_hal_graph_op_count(graph), 3);
    rig__download(stream, buf, m.out_offset, replay, m.out_bytes);
    assert_memory_not_equal(replay, eager[0], m.out_bytes); /* capture ran nothing */
    struct rig_sim_profile profile;
    char error[RIG_SIM_PROFILE_ERROR_MAX];
    assert_int_equal(rig_sim_profile_load("h100:analytic:pinned", &profile, error, sizeof error),
                     RIG_OK);
    int64_t nodes_ns = 0;
    for (int32_t i = 0; i < 3; i++) nodes_ns += rig_sim_cost_node_ns(&profile, &m.ops[i], 1);
    for (int32_t replays = 0; replays < 3; replays++) {
        int32_t input = replays % 2;
        struct rig_sim_stats before, after;
        rig__random_upload(stream, buf, 10 + (uint64_t)input);
        assert_int_equal(rig_sim_get_stats(device, &before), RIG_OK);
        assert_int_equal(rig_hal_graph_launch(graph, stream), RIG_OK);
        assert_int_equal(rig_sim_get_stats(device, &after), RIG_OK);
        assert_int_equal(after.device_busy_ns - before.device_busy_ns, nodes_ns);
        assert_int_equal(after.ops_issued - before.ops_issued, 3);
        rig__download(stream, buf, m.out_offset, replay, m.out_bytes);
        assert_memory_equal(replay, eager[input], m.out_bytes);
    }
    rig_hal_graph_destroy(graph);
    rig_hal_buffer_free(buf);
    rig_hal_stream_destroy(stream);
    rig_hal_close(device);
}

static void test_fault_fail_nth_alloc(void **state)
{
    (void)state;
    struct rig_device *device;
    struct rig_buffer *buffers[4], *failed = NULL;
    rig_test_open_sim(1, false, &device);
    struct rig_sim_faults faults = {.fail_alloc_at = 2, .stall_op_at = -1};
    assert_int_equal(rig_sim_set_faults(device, &faults), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 100, RIG_MEMORY_WEIGHTS, &buffers[0]), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 100, RIG_MEMORY_WEIGHTS, &buffers[1]), RIG_OK);
    struct rig_sim_stats before, after;
    assert_int_equal(rig_sim_get_stats(device, &before), RIG_OK);
    int32_t live = device->live_objects;
    assert_int_equal(rig_hal_buffer_alloc(device, 100, RIG_MEMORY_WEIGHTS, &failed),
                     RIG_E_DEVICE_MEMORY);
    assert_null(failed);
    assert_int_equal(device->live_objects, live);
    assert_int_equal(rig_sim_get_stats(device, &after), RIG_OK);
    assert_memory_equal(&before, &after, sizeof before);
    /* the fault fires once; later allocations succeed */
    assert_int_equal(rig_hal_buffer_alloc(device, 100, RIG_MEMORY_WEIGHTS, &buffers[2]), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 100, RIG_MEMORY_WEIGHTS, &buffers[3]), RIG_OK);
    for (int32_t i = 0; i < 4; i++)
        rig_hal_buffer_free(buffers[i]);
    /* a plan with index 0 fails the very next allocation */
    faults.fail_alloc_at = 0;
    assert_int_equal(rig_sim_set_faults(device, &faults), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 100, RIG_MEMORY_KV, &failed),
                     RIG_E_DEVICE_MEMORY);
    faults.stall_ns = -1;
    assert_int_equal(rig_sim_set_faults(device, &faults), RIG_E_INVALID);
    assert_int_equal(rig_sim_set_faults(NULL, &faults), RIG_E_HANDLE);
    rig_hal_close(device);
}

/* rig_sim_set_open_faults: a plan devices start with, so engine start-up can be hit. */
static void test_fault_plan_at_open(void **state)
{
    (void)state;
    struct rig_device *devices[2];
    struct rig_buffer *buffer = NULL;
    struct rig_sim_faults faults = {.fail_alloc_at = 1, .stall_op_at = -1};
    rig_sim_set_open_faults(&faults);
    rig_test_open_sim(2, false, devices);
    rig_sim_set_open_faults(NULL);
    for (int32_t r = 0; r < 2; r++) { /* every device of the group has the plan */
        assert_int_equal(rig_hal_buffer_alloc(devices[r], 64, RIG_MEMORY_KV, &buffer), RIG_OK);
        rig_hal_buffer_free(buffer);
        assert_int_equal(rig_hal_buffer_alloc(devices[r], 64, RIG_MEMORY_KV, &buffer),
                         RIG_E_DEVICE_MEMORY);
        rig_hal_close(devices[r]);
    }
    rig_test_open_sim(1, false, devices); /* cleared: later devices start without faults */
    struct rig_buffer *second = NULL;
    assert_int_equal(rig_hal_buffer_alloc(devices[0], 64, RIG_MEMORY_KV, &buffer), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(devices[0], 64, RIG_MEMORY_KV, &second), RIG_OK);
    rig_hal_buffer_free(buffer);
    rig_hal_buffer_free(second);
    rig_hal_close(devices[0]);
}

/* Five long GEMMs (device bound); returns the stream's end time. */
static int64_t rig__gemm_run(int64_t stall_at, int64_t stall_ns)
{
    struct rig_device *device;
    struct rig_stream *stream;
    struct rig_buffer *buf;
    rig_test_open_sim(1, true, &device);
    struct rig_sim_faults faults = {
        .fail_alloc_at = -1, .stall_op_at = stall_at, .stall_ns = stall_ns};
    assert_int_equal(rig_sim_set_faults(device, &faults), RIG_OK);
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 1 << 28, RIG_MEMORY_ACTIVATIONS, &buf), RIG_OK);
    char *b = rig_hal_buffer_ptr(buf);
    struct rig_op op = {.kind = RIG_OP_GEMM};
    op.u.gemm = (struct rig_op_gemm){
        .out = rig_tensor_2d(b, RIG_DTYPE_BF16, 2048, 4096),
        .a = rig_tensor_2d(b + (32 << 20), RIG_DTYPE_BF16, 2048, 4096),
        .b = rig_tensor_2d(b + (64 << 20), RIG_DTYPE_BF16, 4096, 4096), .bias = rig_tensor_none()};
    for (int32_t i = 0; i < 5; i++)
        assert_int_equal(rig_hal_op(stream, &op), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    int64_t end = rig_hal_now_ns(device);
    rig_hal_buffer_free(buf);
    rig_hal_stream_destroy(stream);
    rig_hal_close(device);
    return end;
}

static void test_fault_stall(void **state)
{
    (void)state;
    int64_t clean = rig__gemm_run(-1, 0);
    assert_int_equal(rig__gemm_run(1, 12345), clean + 12345);
    assert_int_equal(rig__gemm_run(4, 777), clean + 777);
    assert_int_equal(rig__gemm_run(5, 777), clean); /* no sixth op */
}

/* VmRSS of this process in bytes, from /proc/self/status. */
static int64_t rig__vm_rss(void)
{
    FILE *file = fopen("/proc/self/status", "r");
    assert_non_null(file);
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, file) != NULL) {
        if (sscanf(line, "VmRSS: %lld kB", &kb) == 1) break;
    }
    fclose(file);
    assert_true(kb > 0);
    return (int64_t)kb * 1024;
}

/* Qwen3-32B on TP=4: per rank, per layer q/k/v/o, gate+up, down, two norms and q/k norms;
 * embedding and LM head sharded by vocabulary; an 8 GiB KV pool split over the layers. */
enum {
    Q_LAYERS = 64,
    Q_HIDDEN = 5120,
    Q_INTER = 25600,
    Q_HEADS = 64,
    Q_KV_HEADS = 8,
    Q_HEAD_DIM = 128,
    Q_VOCAB = 151936,
    Q_TP = 4,
    Q_BUFFERS_PER_LAYER = 10,
};
#define Q_KV_POOL_BYTES ((size_t)8 << 30)

struct rig__qwen_rank {
    struct rig_buffer *layer[Q_LAYERS][Q_BUFFERS_PER_LAYER];
    struct rig_buffer *embed, *lm_head, *meta;
    int64_t weight_bytes, kv_bytes;
};

static struct rig_buffer *rig__alloc(struct rig_device *device, size_t bytes,
                                     enum rig_memory_use use, int64_t *sum)
{
    struct rig_buffer *buffer = NULL;
    assert_int_equal(rig_hal_buffer_alloc(device, bytes, use, &buffer), RIG_OK);
    *sum += (int64_t)bytes;
    return buffer;
}

static void rig__qwen_alloc(struct rig_device *device, struct rig__qwen_rank *q)
{
    const size_t h = Q_HIDDEN, bf16 = 2;
    const size_t q_rows = Q_HEADS / Q_TP * Q_HEAD_DIM, kv_rows = Q_KV_HEADS / Q_TP * Q_HEAD_DIM;
    const size_t sizes[Q_BUFFERS_PER_LAYER - 2] = {q_rows * h * bf16,
                                                   kv_rows * h * bf16,
                                                   kv_rows * h * bf16,
                                                   h * q_rows * bf16,
                                                   2 * Q_INTER / Q_TP * h * bf16,
                                                   h * Q_INTER / Q_TP * bf16,
                                                   2 * h * bf16,
                                                   2 * Q_HEAD_DIM * bf16};
    size_t kv_per_layer = Q_KV_POOL_BYTES / Q_LAYERS / 2;
    for (int32_t l = 0; l < Q_LAYERS; l++) {
        for (int32_t i = 0; i < Q_BUFFERS_PER_LAYER - 2; i++)
            q->layer[l][i] = rig__alloc(device, sizes[i], RIG_MEMORY_WEIGHTS, &q->weight_bytes);
        for (int32_t i = Q_BUFFERS_PER_LAYER - 2; i < Q_BUFFERS_PER_LAYER; i++)
            q->layer[l][i] = rig__alloc(device, kv_per_layer, RIG_MEMORY_KV, &q->kv_bytes);
    }
    size_t vocab_shard = Q_VOCAB / Q_TP * h * bf16;
    q->embed = rig__alloc(device, vocab_shard, RIG_MEMORY_WEIGHTS, &q->weight_bytes);
    q->lm_head = rig__alloc(device, vocab_shard, RIG_MEMORY_WEIGHTS, &q->weight_bytes);
    int64_t unused = 0;
    q->meta = rig__alloc(device, 1 << 20, RIG_MEMORY_METADATA, &unused);
}

static void rig__qwen_free(struct rig__qwen_rank *q)
{
    for (int32_t l = 0; l < Q_LAYERS; l++)
        for (int32_t i = 0; i < Q_BUFFERS_PER_LAYER; i++)
            rig_hal_buffer_free(q->layer[l][i]);
    rig_hal_buffer_free(q->embed);
    rig_hal_buffer_free(q->lm_head);
    rig_hal_buffer_free(q->meta);
}

/* On rank 0: a q_proj GEMM on phantom weights (no math), a token-pool gather on metadata
 * (real), and sampling from phantom logits (tokens from the RNG, in range). */
static void rig__qwen_ops(struct rig_device *device, struct rig__qwen_rank *q)
{
    struct rig_stream *stream;
    struct rig_buffer *acts;
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 1 << 28, RIG_MEMORY_ACTIVATIONS, &acts), RIG_OK);
    char *a = rig_hal_buffer_ptr(acts), *m = rig_hal_buffer_ptr(q->meta);
    struct rig_op gemm = {.kind = RIG_OP_GEMM};
    gemm.u.gemm =
        (struct rig_op_gemm){.out = rig_tensor_2d(a, RIG_DTYPE_BF16, 256,
                                                  Q_HEADS / Q_TP * Q_HEAD_DIM),
                             .a = rig_tensor_2d(a + (16 << 20), RIG_DTYPE_BF16, 256, Q_HIDDEN),
                             .b = rig_tensor_2d(rig_hal_buffer_ptr(q->layer[0][0]),
                                                RIG_DTYPE_BF16, Q_HEADS / Q_TP * Q_HEAD_DIM,
                                                Q_HIDDEN),
                             .bias = rig_tensor_none()};
    assert_int_equal(rig_hal_op(stream, &gemm), RIG_OK);
    int32_t pool[8] = {10, 11, 12, 13, 14, 15, 16, 17}, idx[3] = {7, 0, 3}, got[3];
    assert_int_equal(rig_hal_buffer_upload(stream, q->meta, 0, pool, sizeof pool), RIG_OK);
    assert_int_equal(rig_hal_buffer_upload(stream, q->meta, 64, idx, sizeof idx), RIG_OK);
    struct rig_op_index_gather load = {rig_tensor_1d(m + 128, RIG_DTYPE_I32, 3),
                                       rig_tensor_1d(m, RIG_DTYPE_I32, 8),
                                       rig_tensor_1d(m + 64, RIG_DTYPE_I32, 3)};
    assert_int_equal(rig_hal_index_gather(stream, &load), RIG_OK);
    int64_t seeds[4] = {1, 2, 3, 4};
    int32_t positions[4] = {0, 0, 1, 1}, tokens[4] = {-1, -1, -1, -1};
    assert_int_equal(rig_hal_buffer_upload(stream, q->meta, 256, seeds, sizeof seeds), RIG_OK);
    assert_int_equal(rig_hal_buffer_upload(stream, q->meta, 320, positions, sizeof positions),
                     RIG_OK);
    struct rig_op_sample sample = {
        rig_tensor_1d(m + 384, RIG_DTYPE_I32, 4),
        rig_tensor_2d(a, RIG_DTYPE_F32, 4, Q_VOCAB / 4),
        rig_tensor_1d(m + 448, RIG_DTYPE_F32, 4) /* the cost reads it: greedy rows */,
        rig_tensor_1d(m + 512, RIG_DTYPE_I32, 4),
        rig_tensor_1d(m + 576, RIG_DTYPE_F32, 4),
        rig_tensor_1d(m + 256, RIG_DTYPE_I64, 4),
        rig_tensor_1d(m + 320, RIG_DTYPE_I32, 4), rig_tensor_none(), rig_tensor_none()};
    assert_int_equal(rig_hal_sample(stream, &sample), RIG_OK);
    assert_int_equal(rig_hal_buffer_download(stream, q->meta, 128, got, sizeof got), RIG_OK);
    assert_int_equal(rig_hal_buffer_download(stream, q->meta, 384, tokens, sizeof tokens), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    assert_int_equal(got[0], 17);
    assert_int_equal(got[1], 10);
    assert_int_equal(got[2], 13);
    for (int32_t r = 0; r < 4; r++)
        assert_true(tokens[r] >= 0 && tokens[r] < Q_VOCAB / 4);
    uint8_t untouched[16] = {1, 2, 3};
    assert_int_equal(rig_hal_buffer_download(stream, acts, 0, untouched, 16), RIG_OK);
    assert_int_equal(untouched[0], 1); /* a download from phantom memory moves nothing */
    rig_hal_buffer_free(acts);
    rig_hal_stream_destroy(stream);
}

static void test_timing_only_qwen3_32b_on_4_ranks(void **state)
{
    (void)state;
    static struct rig__qwen_rank ranks[Q_TP];
    struct rig_device *devices[Q_TP];
    rig_test_open_sim(Q_TP, true, devices);
    for (int32_t r = 0; r < Q_TP; r++) {
        memset(&ranks[r], 0, sizeof ranks[r]);
        rig__qwen_alloc(devices[r], &ranks[r]);
        assert_true(ranks[r].weight_bytes > 15000000000ll && ranks[r].weight_bytes < 17000000000ll);
        assert_int_equal(ranks[r].kv_bytes, (int64_t)Q_KV_POOL_BYTES);
        struct rig_sim_stats stats;
        assert_int_equal(rig_sim_get_stats(devices[r], &stats), RIG_OK);
        assert_true(stats.bytes_allocated >= ranks[r].weight_bytes + ranks[r].kv_bytes);
        assert_true(stats.bytes_allocated < ranks[r].weight_bytes + ranks[r].kv_bytes + (2 << 20));
        assert_int_equal(stats.bytes_resident, 1 << 20); /* the metadata buffer only */
    }
    rig__qwen_ops(devices[0], &ranks[0]);
    int64_t rss = rig__vm_rss();
    print_message("VmRSS with 4 x %.1f GB allocated: %.1f MB\n",
                  (double)(ranks[0].weight_bytes + ranks[0].kv_bytes) / 1e9, (double)rss / 1e6);
    assert_true(rss < 1000000000ll);
    for (int32_t r = 0; r < Q_TP; r++) {
        rig__qwen_free(&ranks[r]);
        rig_hal_close(devices[r]);
    }
}

/* A real (not timing-only) 40 GB buffer, as a KV pool sized from device memory would be:
 * pages arrive only when touched, so it is cheap, zero-filled and fully usable. */
static void test_large_real_buffer_is_lazy(void **state)
{
    (void)state;
    struct rig_device *device;
    struct rig_stream *stream;
    struct rig_buffer *pool;
    rig_test_open_sim(1, false, &device);
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    size_t bytes = (size_t)40 << 30, far = bytes - 4096;
    assert_int_equal(rig_hal_buffer_alloc(device, bytes, RIG_MEMORY_KV, &pool), RIG_OK);
    assert_int_equal((uintptr_t)rig_hal_buffer_ptr(pool) % 64, 0);
    uint32_t in[4] = {1, 2, 3, 4}, out[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    assert_int_equal(rig_hal_buffer_upload(stream, pool, far, in, sizeof in), RIG_OK);
    assert_int_equal(rig_hal_buffer_download(stream, pool, far, out, sizeof out), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    assert_memory_equal(out, in, sizeof in);
    for (int32_t i = 4; i < 8; i++) assert_int_equal(out[i], 0);
    assert_true(rig__vm_rss() < 500000000ll);
    rig_hal_buffer_free(pool);
    rig_hal_stream_destroy(stream);
    rig_hal_close(device);
}

/* Writing into a phantom buffer must crash, not silently succeed (checked in a child). */
static void test_phantom_access_crashes(void **state)
{
    (void)state;
    struct rig_device *device;
    struct rig_buffer *buffer;
    rig_test_open_sim(1, true, &device);
    assert_int_equal(rig_hal_buffer_alloc(device, 4096, RIG_MEMORY_KV, &buffer), RIG_OK);
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) { /* cmocka catches SIGSEGV to report it; the child wants it to kill */
        signal(SIGSEGV, SIG_DFL);
        volatile char *p = rig_hal_buffer_ptr(buffer);
        p[0] = 1;
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    /* killed by SIGSEGV, or (under ASan, whose handler reports it) a failing exit */
    assert_true(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0));
    rig_hal_buffer_free(buffer);
    rig_hal_close(device);
}

/* A complete, valid profile; tests splice one line in or out. */
static const char *const rig__profile_lines[] = {
    "name: test\n",
    "memory_bytes: 1000000000\n",
    "peak_bf16_flops: 1.0e15\n",
    "hbm_bytes_per_s: 3.0e12\n",
    "gemm_efficiency: 0.7\n",
    "attention_efficiency: 0.5\n",
    "elementwise_efficiency: 0.8\n",
    "copy_efficiency: 0.8\n",
    "kernel_launch_host_ns: 3000\n",
    "kernel_launch_latency_ns: 4000\n",
    "graph_launch_host_ns: 6000\n",
    "graph_node_ns: 800\n",
    "min_kernel_ns: 2000\n",
    "h2d_bytes_per_s: 5.0e10\n",
    "h2d_latency_ns: 8000\n",
    "d2h_bytes_per_s: 5.0e10\n",
    "d2h_latency_ns: 8000\n",
    "all_reduce_bytes_per_s: 4.0e11\n",
    "all_reduce_latency_ns: 12000\n",
    "all_gather_bytes_per_s: 3.5e11\n",
    "all_gather_latency_ns: 10000\n", "decode_attention_efficiency: 0.75\n",
    "gemm_compute_efficiency: 0.7\n",
    "gemm_latency_ns: 0\n",
    "attention_latency_ns: 0\n",
    "decode_attention_latency_ns: 0\n",
    "elementwise_latency_ns: 0\n",
    "copy_latency_ns: 0\n",
    "gemm_full_blocks: 0\n",
    "gemm_occupancy_exponent: 1\n",
    "attention_full_blocks: 0\n",
    "attention_occupancy_exponent: 1\n",
    "decode_attention_full_blocks: 0\n",
    "gemm_k_half: 0\n",
    "decode_attention_occupancy_exponent: 1\n",
};

/* The profile with line `skip` left out (-1: none) and `extra` inserted before line `at`. */
static void rig__profile_text(char *out, size_t size, int32_t skip, int32_t at, const char *extra)
{
    out[0] = '\0';
    for (int32_t i = 0; i <= (int32_t)RIG_ARRAY_LEN(rig__profile_lines); i++) {
        if (i == at) strncat(out, extra, size - strlen(out) - 1);
        if (i == (int32_t)RIG_ARRAY_LEN(rig__profile_lines)) break;
        if (i != skip) strncat(out, rig__profile_lines[i], size - strlen(out) - 1);
    }
}

static enum rig_status rig__parse(const char *text, char *error)
{
    struct rig_sim_profile profile;
    memset(&profile, 0x5a, sizeof profile);
    struct rig_sim_profile before = profile;
    enum rig_status status = rig_sim_profile_parse("t.yaml", text, strlen(text), &profile, error,
                                                   RIG_SIM_PROFILE_ERROR_MAX);
    if (status != RIG_OK) assert_memory_equal(&profile, &before, sizeof profile);
    return status;
}

/* The base profile text parsed, nothing added: every optional key at its default. */
static void rig__parse_defaults(struct rig_sim_profile *profile)
{
    char text[4096], error[RIG_SIM_PROFILE_ERROR_MAX];
    rig__profile_text(text, sizeof text, -1, -1, "");
    assert_int_equal(rig_sim_profile_parse("t.yaml", text, strlen(text), profile, error,
                                           sizeof error),
                     RIG_OK);
}

/* The base profile text with `extra` after its first line, written to a new temporary file
 * named in `path` (a "/tmp/rig_profile_XXXXXX" template); the caller unlinks it. */
static void rig__write_profile(char *path, const char *extra)
{
    char text[4096];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    rig__profile_text(text, sizeof text, -1, 1, extra);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void test_profile_errors(void **state)
{
    (void)state;
    char text[4096], error[RIG_SIM_PROFILE_ERROR_MAX];
    rig__profile_text(text, sizeof text, -1, -1, "");
    assert_int_equal(rig__parse(text, error), RIG_OK);
    rig__profile_text(text, sizeof text, -1, 3, "hbm_bandwith: 1\n");
    assert_int_equal(rig__parse(text, error), RIG_E_PARSE);
    assert_string_equal(error, "t.yaml:4:1: unknown key 'hbm_bandwith'");
    rig__profile_text(text, sizeof text, 3, 3, "hbm_bytes_per_s: fast\n");
    assert_int_equal(rig__parse(text, error), RIG_E_PARSE);
    assert_string_equal(error, "t.yaml:4:18: key 'hbm_bytes_per_s': 'fast' is not a number");
    rig__profile_text(text, sizeof text, 4, 4, "gemm_efficiency: 1.5\n");
    assert_int_equal(rig__parse(text, error), RIG_E_RANGE);
    assert_string_equal(error, "t.yaml:5:18: key 'gemm_efficiency': 1.5 must be in (0, 1]");
    rig__profile_text(text, sizeof text, 29, 29, "gemm_occupancy_exponent: 0\n");
    assert_int_equal(rig__parse(text, error), RIG_E_RANGE);
    assert_string_equal(error,
                        "t.yaml:30:26: key 'gemm_occupancy_exponent': 0 must be in (0, 1]");
    rig__profile_text(text, sizeof text, 8, 8, "kernel_launch_host_ns: 2.5\n");
    assert_int_equal(rig__parse(text, error), RIG_E_RANGE);
    assert_non_null(strstr(error, "t.yaml:9:24: key 'kernel_launch_host_ns'"));
    rig__profile_text(text, sizeof text, 11, -1, "");
    assert_int_equal(rig__parse(text, error), RIG_E_PARSE);
    assert_string_equal(error, "t.yaml:1:1: missing key 'graph_node_ns'");
    rig__profile_text(text, sizeof text, -1, 2, "name: again\n");
    assert_int_equal(rig__parse(text, error), RIG_E_PARSE);
    assert_string_equal(error, "t.yaml:3:1: duplicate key");
    rig__profile_text(text, sizeof text, -1, 5, "graph_node_ns: [1, 2\n");
    assert_int_equal(rig__parse(text, error), RIG_E_PARSE);
    /* a YAML syntax error, where the parser noticed it: the sequence swallowed two lines */
    assert_string_equal(error, "t.yaml:8:23: missing comma in flow sequence");
    assert_int_equal(rig__parse("- just\n- a list\n", error), RIG_E_PARSE);
    assert_string_equal(error, "t.yaml:1:1: a profile is a mapping");
    rig__profile_text(text, sizeof text, 3, 3, "hbm_bytes_per_s: {a: 1}\n");
    assert_int_equal(rig__parse(text, error), RIG_E_PARSE);
    assert_string_equal(error, "t.yaml:4:1: key 'hbm_bytes_per_s': value must be a scalar");
}

static void test_profile_load(void **state)
{
    (void)state;
    struct rig_sim_profile profile;
    char error[RIG_SIM_PROFILE_ERROR_MAX];
    assert_int_equal(rig_sim_profile_load(NULL, &profile, error, sizeof error), RIG_OK);
    assert_string_equal(profile.name, "h100");
    assert_int_equal(profile.memory_bytes, 85017493504ll);
    assert_true(profile.peak_bf16_flops == 989.4e12);
    assert_true(profile.hbm_bytes_per_s == 3.35e12);
    assert_int_equal(rig_sim_profile_load("h200", &profile, error, sizeof error), RIG_OK);
    assert_string_equal(profile.name, "h200");
    assert_int_equal(profile.memory_bytes, 150109880320ll);
    assert_true(profile.hbm_bytes_per_s == 4.8e12);
    assert_int_equal(rig_sim_profile_load("b200", &profile, error, sizeof error), RIG_E_NOT_FOUND);
    assert_non_null(strstr(error, "'b200'"));
    assert_int_equal(rig_sim_profile_load("/nonexistent/x.yaml", &profile, error, sizeof error),
                     RIG_E_IO);
    assert_non_null(strstr(error, "/nonexistent/x.yaml"));
    char path[] = "/tmp/rig_profile_XXXXXX";
    rig__write_profile(path, "colour: blue\n");
    assert_int_equal(rig_sim_profile_load(path, &profile, error, sizeof error), RIG_E_PARSE);
    char expected[128];
    snprintf(expected, sizeof expected, "%s:2:1: unknown key 'colour'", path);
    assert_string_equal(error, expected);
    /* opening devices with that profile fails and opens nothing */
    struct rig_device *devices[2] = {NULL, NULL};
    struct rig_device_config config = {.profile = path};
    assert_int_equal(rig_hal_open("sim", &config, 2, devices), RIG_E_PARSE);
    assert_null(devices[0]);
    unlink(path);
}

/* The host model's keys (hal/host_model.h): optional, the H100 host's values by default and 0
 * for the later terms, real numbers >= 0, and what an opened device reports to the engine
 * (rig_device_info) for its own CPU time. */
static void test_profile_host_model(void **state)
{
    (void)state;
    char text[4096], error[RIG_SIM_PROFILE_ERROR_MAX];
    struct rig_sim_profile profile;
    rig__parse_defaults(&profile);
    const struct rig_host_model *m = &profile.host;
    assert_float_equal(m->ns[RIG_HOST_SCHEDULE][RIG_HOST_BASE], RIG_SIM_HOST_SCHEDULE_NS, 0);
    assert_float_equal(m->ns[RIG_HOST_PREPARE][RIG_HOST_REQUESTS],
                       RIG_SIM_HOST_PREPARE_PER_REQUEST_NS, 0);
    assert_float_equal(m->ns[RIG_HOST_PROCESS][RIG_HOST_REQUESTS],
                       RIG_SIM_HOST_PROCESS_PER_REQUEST_NS, 0);
    assert_float_equal(m->ns[RIG_HOST_LOOP][RIG_HOST_BASE], 0, 0);
    assert_float_equal(m->ns[RIG_HOST_PREPARE][RIG_HOST_TOKENS], 0, 0);
    char path[] = "/tmp/rig_profile_XXXXXX";
    rig__write_profile(path, "host_schedule_ns: 5000\nhost_prepare_per_request_ns: 150.5\n"
                             "host_process_per_request_ns: 0\nhost_loop_ns: 7000\n"
                             "host_loop_per_finished_ns: 2.5e4\nhost_prepare_per_token_ns: 16\n");
    struct rig_device *device = NULL;
    struct rig_device_config config = {.profile = path};
    assert_int_equal(rig_hal_open("sim", &config, 1, &device), RIG_OK);
    const struct rig_host_model *info = &rig_hal_device_info(device)->host_model;
    assert_float_equal(info->ns[RIG_HOST_SCHEDULE][RIG_HOST_BASE], 5000, 0);
    assert_float_equal(info->ns[RIG_HOST_PREPARE][RIG_HOST_REQUESTS], 150.5, 0);
    assert_float_equal(info->ns[RIG_HOST_PREPARE][RIG_HOST_TOKENS], 16, 0);
    assert_float_equal(info->ns[RIG_HOST_PROCESS][RIG_HOST_REQUESTS], 0, 0);
    assert_float_equal(info->ns[RIG_HOST_LOOP][RIG_HOST_BASE], 7000, 0);
    assert_float_equal(info->ns[RIG_HOST_LOOP][RIG_HOST_FINISHED], 25000, 0);
    /* 7000 + 2 x 25,000 + 0.5 rounds to the nearest ns */
    const int64_t counts[RIG_HOST_FACTORS] = {1, 0, 0, 0, 2};
    assert_int_equal(rig_host_model_ns(info, RIG_HOST_LOOP, counts), 57000);
    const int64_t batch[RIG_HOST_FACTORS] = {1, 3, 10, 0, 0};
    assert_int_equal(rig_host_model_ns(info, RIG_HOST_PREPARE, batch), 612); /* 611.5 */
    rig_hal_close(device);
    unlink(path);
    rig__profile_text(text, sizeof text, -1, 1, "host_schedule_ns: -1\n");
    assert_int_equal(rig__parse(text, error), RIG_E_RANGE);
    assert_non_null(strstr(error, "t.yaml:2:19: key 'host_schedule_ns'"));
    rig__profile_text(text, sizeof text, -1, 1, "host_loop_per_token_ns: fast\n");
    assert_int_equal(rig__parse(text, error), RIG_E_PARSE);
    assert_non_null(strstr(error, "key 'host_loop_per_token_ns': 'fast' is not a number"));
}

/* Host time of a step's other calls, per kind: copies take a launch's by default and their
 * own key when given; event records and stream waits nothing by default, theirs when given.
 * Measured on the device's clock (pinned host memory: no wait for the copy itself). */
static void test_profile_call_host_times(void **state)
{
    (void)state;
    struct rig_sim_profile profile;
    rig__parse_defaults(&profile);
    assert_int_equal(profile.upload_host_ns, profile.kernel_launch_host_ns);
    assert_int_equal(profile.download_host_ns, profile.kernel_launch_host_ns);
    assert_int_equal(profile.device_copy_host_ns, profile.kernel_launch_host_ns);
    assert_int_equal(profile.event_record_host_ns, 0);
    assert_int_equal(profile.stream_wait_host_ns, 0);
    char path[] = "/tmp/rig_profile_XXXXXX";
    rig__write_profile(path, "upload_host_ns: 2100\ndownload_host_ns: 2000\n"
                             "device_copy_host_ns: 4600\nevent_record_host_ns: 1150\n"
                             "stream_wait_host_ns: 500\n");
    struct rig_device *device = NULL;
    struct rig_device_config config = {.profile = path, .timing_only = true};
    assert_int_equal(rig_hal_open("sim", &config, 1, &device), RIG_OK);
    struct rig_stream *stream;
    struct rig_buffer *a, *b;
    struct rig_event *event;
    void *host;
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 4096, RIG_MEMORY_METADATA, &a), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 4096, RIG_MEMORY_METADATA, &b), RIG_OK);
    assert_int_equal(rig_hal_event_create(device, &event), RIG_OK);
    assert_int_equal(rig_hal_host_alloc(device, 4096, &host), RIG_OK);
    const int64_t expect[5] = {2100, 2000, 4600, 1150, 500};
    for (int32_t call = 0; call < 5; call++) {
        int64_t before = rig_hal_now_ns(device);
        if (call == 0) assert_int_equal(rig_hal_buffer_upload(stream, a, 0, host, 64), RIG_OK);
        if (call == 1) assert_int_equal(rig_hal_buffer_download(stream, a, 0, host, 64), RIG_OK);
        if (call == 2) assert_int_equal(rig_hal_buffer_copy(stream, b, 0, a, 0, 64), RIG_OK);
        if (call == 3) assert_int_equal(rig_hal_event_record(event, stream), RIG_OK);
        if (call == 4) assert_int_equal(rig_hal_stream_wait_event(stream, event), RIG_OK);
        assert_int_equal(rig_hal_now_ns(device) - before, expect[call]);
    }
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    rig_hal_host_free(device, host);
    rig_hal_event_destroy(event);
    rig_hal_buffer_free(a);
    rig_hal_buffer_free(b);
    rig_hal_stream_destroy(stream);
    rig_hal_close(device);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffer_round_trip),
        cmocka_unit_test(test_pinned_host_memory),
        cmocka_unit_test(test_pageable_copy_blocks_host),
        cmocka_unit_test(test_device_memory_limit),
        cmocka_unit_test(test_graph_replay_equals_eager),
        cmocka_unit_test(test_fault_fail_nth_alloc),
        cmocka_unit_test(test_fault_stall),
        cmocka_unit_test(test_fault_plan_at_open),
        cmocka_unit_test(test_timing_only_qwen3_32b_on_4_ranks),
        cmocka_unit_test(test_large_real_buffer_is_lazy),
        cmocka_unit_test(test_phantom_access_crashes),
        cmocka_unit_test(test_profile_errors),
        cmocka_unit_test(test_profile_load),
        cmocka_unit_test(test_profile_host_model),
        cmocka_unit_test(test_profile_call_host_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
