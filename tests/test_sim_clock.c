/* test_sim_clock.c — the simulator's virtual clock and cost model.
 *
 * Checks, against values computed here from the H100 profile and the rules of sim/clock.h:
 * the same op sequence on two fresh devices gives identical timestamps; an eager kernel
 * starts at host + launch latency and ends after its modelled cost; the compute engine runs
 * kernels of two streams one at a time; events and cross-stream waits order a copy after a
 * kernel; stream and event synchronisation move the host; host work and wait_until move the
 * host exactly; a GEMM with twice the rows takes twice as long (beyond its fixed latency),
 * decode attention scales with the KV length, prefill attention of a short chunk pays the
 * occupancy term; the fused q/k norm + RoPE + K/V store moves one pass of bytes and costs
 * less than the four ops it replaces; graph replay charges the host once instead of per kernel;
 * timing-only mode gives the same timestamps as real mode. Large shapes run in timing-only mode
 * (phantom buffers, no math), so every test is fast.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hal/yaml_guard.h"
#include "sim/cost.h"
#include "sim/profile.h"
#include "sim/sim.h"
#include "tests/support/test_support.h"

static struct rig_sim_profile rig__h100(void)
{
    struct rig_sim_profile profile;
    char error[RIG_SIM_PROFILE_ERROR_MAX];
    assert_int_equal(
        rig_sim_profile_load("h100:analytic:pinned", &profile, error, sizeof error), RIG_OK);
    return profile;
}

/* A GEMM out[m, n] = a[m, k] b[n, k]^T over the start of three buffers. */
static struct rig_op rig__gemm_op(void *out, void *a, void *b, int64_t m, int64_t n, int64_t k)
{
    struct rig_op op = {.kind = RIG_OP_GEMM};
    op.u.gemm.out = rig_tensor_2d(out, RIG_DTYPE_BF16, m, n);
    op.u.gemm.a = rig_tensor_2d(a, RIG_DTYPE_BF16, m, k);
    op.u.gemm.b = rig_tensor_2d(b, RIG_DTYPE_BF16, n, k);
    op.u.gemm.bias = rig_tensor_none();
    return op;
}

struct rig__fixture {
    struct rig_device *device;
    struct rig_stream *stream;
    struct rig_buffer *big;  /* phantom in timing-only mode */
    struct rig_buffer *meta; /* always real */
    void *base;
};

static void rig__open(struct rig__fixture *f, bool timing_only)
{
    rig_test_open_sim(1, timing_only, &f->device);
    assert_int_equal(rig_hal_stream_create(f->device, &f->stream), RIG_OK);
    size_t big = timing_only ? (size_t)1 << 30 : (size_t)1 << 20;
    assert_int_equal(rig_hal_buffer_alloc(f->device, big, RIG_MEMORY_ACTIVATIONS, &f->big), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(f->device, 4096, RIG_MEMORY_METADATA, &f->meta), RIG_OK);
    f->base = rig_hal_buffer_ptr(f->big);
}

static void rig__close(struct rig__fixture *f)
{
    rig_hal_buffer_free(f->big);
    rig_hal_buffer_free(f->meta);
    rig_hal_stream_destroy(f->stream);
    rig_hal_close(f->device);
}

/* A fixed mixed sequence; writes the timestamps it sees into `out` (count returned). */
static int32_t rig__sequence(int64_t *out)
{
    struct rig__fixture f;
    rig__open(&f, true);
    struct rig_stream *second;
    struct rig_event *events[3];
    assert_int_equal(rig_hal_stream_create(f.device, &second), RIG_OK);
    for (int32_t i = 0; i < 3; i++)
        assert_int_equal(rig_hal_event_create(f.device, &events[i]), RIG_OK);
    char *b = f.base;
    int32_t host[64] = {0};
    int32_t n = 0;
    assert_int_equal(rig_hal_event_record(events[0], f.stream), RIG_OK);
    for (int32_t i = 0; i < 4; i++) {
        struct rig_op op = rig__gemm_op(b, b + (64 << 20), b + (128 << 20), 64 << i, 4096, 4096);
        assert_int_equal(rig_hal_op(f.stream, &op), RIG_OK);
        rig_hal_host_work_ns(f.device, 1500 * i);
        out[n++] = rig_hal_now_ns(f.device);
    }
    assert_int_equal(rig_hal_event_record(events[1], f.stream), RIG_OK);
    assert_int_equal(rig_hal_stream_wait_event(second, events[1]), RIG_OK);
    assert_int_equal(rig_hal_buffer_upload(second, f.meta, 0, host, sizeof host), RIG_OK);
    assert_int_equal(rig_hal_event_record(events[2], second), RIG_OK);
    assert_int_equal(rig_hal_event_synchronize(events[2]), RIG_OK);
    out[n++] = rig_hal_now_ns(f.device);
    assert_int_equal(rig_hal_event_elapsed_ns(events[0], events[2], &out[n]), RIG_OK);
    n++;
    for (int32_t i = 0; i < 3; i++)
        rig_hal_event_destroy(events[i]);
    rig_hal_stream_destroy(second);
    rig__close(&f);
    return n;
}

static void test_same_sequence_same_timestamps(void **state)
{
    (void)state;
    int64_t first[16], second[16];
    int32_t n1 = rig__sequence(first);
    int32_t n2 = rig__sequence(second);
    assert_int_equal(n1, n2);
    assert_memory_equal(first, second, (size_t)n1 * sizeof first[0]);
    for (int32_t i = 1; i < n1 - 1; i++)
        assert_true(first[i] > first[i - 1]);
    assert_true(first[n1 - 1] > 0);
}

/* An eager GEMM on an idle device: exact start and end from the profile. */
static void test_eager_kernel_times(void **state)
{
    (void)state;
    struct rig_sim_profile p = rig__h100();
    struct rig__fixture f;
    rig__open(&f, true);
    struct rig_event *begin, *end;
    assert_int_equal(rig_hal_event_create(f.device, &begin), RIG_OK);
    assert_int_equal(rig_hal_event_create(f.device, &end), RIG_OK);
    char *b = f.base;
    struct rig_op op = rig__gemm_op(b, b + (64 << 20), b + (128 << 20), 512, 4096, 4096);
    int64_t cost = rig_sim_cost_op_ns(&p, &op, 1);
    /* compute bound: the GEMM latency, FLOPs at gemm_compute_efficiency x K / (K + k_half)
     * scaled by the occupancy of 4 x 32 output tiles, and the eager launch over a node */
    double occupancy = 1.0, full = (double)p.full_blocks[RIG_SIM_OP_CLASS_GEMM];
    if (full > 4 * 32) occupancy = pow(4 * 32 / full, p.occupancy_exponent[RIG_SIM_OP_CLASS_GEMM]);
    double flops = 2.0 * 512 * 4096 * 4096;
    double rate = p.peak_bf16_flops * p.gemm_compute_efficiency * occupancy * 4096.0 /
                  (4096.0 + (double)p.gemm_k_half);
    int64_t expected = p.latency_ns[RIG_SIM_OP_CLASS_GEMM] + p.min_kernel_ns - p.graph_node_ns +
                       (int64_t)(flops / rate * 1e9);
    assert_true(cost >= expected && cost <= expected + 1);
    assert_int_equal(rig_hal_now_ns(f.device), 0);
    assert_int_equal(rig_hal_event_record(begin, f.stream), RIG_OK);
    assert_int_equal(rig_hal_op(f.stream, &op), RIG_OK);
    assert_int_equal(rig_hal_now_ns(f.device), p.kernel_launch_host_ns);
    assert_int_equal(rig_hal_event_record(end, f.stream), RIG_OK);
    int64_t elapsed = 0;
    assert_int_equal(rig_hal_event_elapsed_ns(begin, end, &elapsed), RIG_OK);
    assert_int_equal(elapsed, p.kernel_launch_host_ns + p.kernel_launch_latency_ns + cost);
    assert_int_equal(rig_hal_stream_synchronize(f.stream), RIG_OK);
    assert_int_equal(rig_hal_now_ns(f.device), elapsed);
    rig_hal_event_destroy(begin);
    rig_hal_event_destroy(end);
    rig__close(&f);
}

/* Kernels of two streams share one compute engine: the second waits for the first, and its
 * launch, processed by the device meanwhile, adds nothing to its node time. */
static void test_compute_engine_serialises_streams(void **state)
{
    (void)state;
    struct rig_sim_profile p = rig__h100();
    struct rig__fixture f;
    rig__open(&f, true);
    struct rig_stream *other;
    struct rig_event *e0, *e1, *e2;
    assert_int_equal(rig_hal_stream_create(f.device, &other), RIG_OK);
    assert_int_equal(rig_hal_event_create(f.device, &e0), RIG_OK);
    assert_int_equal(rig_hal_event_create(f.device, &e1), RIG_OK);
    assert_int_equal(rig_hal_event_create(f.device, &e2), RIG_OK);
    char *b = f.base;
    struct rig_op op = rig__gemm_op(b, b + (64 << 20), b + (128 << 20), 1024, 4096, 4096);
    int64_t cost = rig_sim_cost_node_ns(&p, &op, 1);
    assert_true(cost > 10000); /* longer than an issue: the second launch waits in the queue */
    assert_int_equal(rig_hal_event_record(e0, f.stream), RIG_OK);
    assert_int_equal(rig_hal_op(f.stream, &op), RIG_OK);
    assert_int_equal(rig_hal_op(other, &op), RIG_OK);
    assert_int_equal(rig_hal_event_record(e1, f.stream), RIG_OK);
    assert_int_equal(rig_hal_event_record(e2, other), RIG_OK);
    int64_t first = 0, gap = 0;
    assert_int_equal(rig_hal_event_elapsed_ns(e0, e1, &first), RIG_OK);
    assert_int_equal(rig_hal_event_elapsed_ns(e1, e2, &gap), RIG_OK);
    /* the first, at an idle engine, is the isolated eager op: its launch processed in full */
    assert_int_equal(first, p.kernel_launch_host_ns + p.kernel_launch_latency_ns +
                                rig_sim_cost_op_ns(&p, &op, 1));
    assert_int_equal(rig_sim_cost_op_ns(&p, &op, 1), cost + 935);
    assert_int_equal(gap, cost);
    rig_hal_event_destroy(e0);
    rig_hal_event_destroy(e1);
    rig_hal_event_destroy(e2);
    rig_hal_stream_destroy(other);
    rig__close(&f);
}

/* An eager launch's device processing (min_kernel_ns − graph_node_ns: 935 ns on the h100
 * profile) runs from its arrival: paid in full at an idle engine, hidden behind work ahead,
 * in part when it arrives just before the engine frees; never below min_kernel_ns. */
static void test_eager_launch_hidden_behind_work(void **state)
{
    (void)state;
    struct rig_sim_profile p = rig__h100();
    assert_int_equal(p.min_kernel_ns - p.graph_node_ns, 935);
    assert_int_equal(rig_sim_cost_eager_end_ns(&p, 10000, 10000, 5000), 15935); /* idle */
    assert_int_equal(rig_sim_cost_eager_end_ns(&p, 10000, 20000, 5000), 25000); /* queued */
    assert_int_equal(rig_sim_cost_eager_end_ns(&p, 10000, 10500, 5000), 15935); /* in part */
    assert_int_equal(rig_sim_cost_eager_end_ns(&p, 0, 0, 0), 1740);             /* floor */
    assert_int_equal(rig_sim_cost_eager_end_ns(&p, 0, 5000, 805), 6740);    /* queued, short */
}

/* A copy on a second stream overlaps a kernel unless it waits on the kernel's event. */
static void test_cross_stream_wait_orders_copy(void **state)
{
    (void)state;
    struct rig_sim_profile p = rig__h100();
    static int32_t host[1024];
    int64_t copy_cost = rig_sim_cost_copy_ns(&p, RIG_COPY_HOST_TO_DEVICE, sizeof host);
    for (int32_t wait = 0; wait < 2; wait++) {
        struct rig__fixture f;
        rig__open(&f, true);
        struct rig_stream *copies;
        struct rig_event *kernel_done, *copy_done;
        assert_int_equal(rig_hal_stream_create(f.device, &copies), RIG_OK);
        assert_int_equal(rig_hal_event_create(f.device, &kernel_done), RIG_OK);
        assert_int_equal(rig_hal_event_create(f.device, &copy_done), RIG_OK);
        char *b = f.base;
        struct rig_op op = rig__gemm_op(b, b + (64 << 20), b + (128 << 20), 4096, 4096, 4096);
        assert_int_equal(rig_hal_op(f.stream, &op), RIG_OK);
        assert_int_equal(rig_hal_event_record(kernel_done, f.stream), RIG_OK);
        if (wait) assert_int_equal(rig_hal_stream_wait_event(copies, kernel_done), RIG_OK);
        assert_int_equal(rig_hal_buffer_upload(copies, f.meta, 0, host, sizeof host), RIG_OK);
        assert_int_equal(rig_hal_event_record(copy_done, copies), RIG_OK);
        int64_t delta = 0;
        assert_int_equal(rig_hal_event_elapsed_ns(kernel_done, copy_done, &delta), RIG_OK);
        if (wait)
            assert_int_equal(delta, copy_cost);
        else
            assert_true(delta < 0); /* the copy ran on the copy engine during the GEMM */
        rig_hal_event_destroy(kernel_done);
        rig_hal_event_destroy(copy_done);
        rig_hal_stream_destroy(copies);
        rig__close(&f);
    }
}

static void test_host_work_and_wait_until(void **state)
{
    (void)state;
    struct rig_device *device;
    rig_test_open_sim(1, false, &device);
    assert_int_equal(rig_hal_now_ns(device), 0);
    rig_hal_host_work_ns(device, 1234);
    assert_int_equal(rig_hal_now_ns(device), 1234);
    rig_hal_host_work_ns(device, 0);
    assert_int_equal(rig_hal_now_ns(device), 1234);
    rig_hal_host_wait_until_ns(device, 1000); /* in the past: no-op */
    assert_int_equal(rig_hal_now_ns(device), 1234);
    rig_hal_host_wait_until_ns(device, 5000000000ll);
    assert_int_equal(rig_hal_now_ns(device), 5000000000ll);
    const struct rig_device_info *info = rig_hal_device_info(device);
    assert_true(info->virtual_clock);
    assert_string_equal(info->name, "sim:h100");
    rig_hal_close(device);
}

static void test_gemm_cost_scales_with_rows(void **state)
{
    (void)state;
    struct rig_sim_profile p = rig__h100();
    char *b = (char *)(uintptr_t)4096; /* shapes only: the cost model never reads GEMM data */
    struct rig_op small = rig__gemm_op(b, b, b, 2048, 8192, 8192);
    struct rig_op large = rig__gemm_op(b, b, b, 4096, 8192, 8192);
    int64_t t1 = rig_sim_cost_op_ns(&p, &small, 1), t2 = rig_sim_cost_op_ns(&p, &large, 1);
    assert_true(t1 > 100000);
    /* both fill the GPU: the roofline part doubles, the fixed part does not */
    int64_t fixed = p.latency_ns[RIG_SIM_OP_CLASS_GEMM] + p.min_kernel_ns - p.graph_node_ns;
    assert_true(llabs((t2 - fixed) - 2 * (t1 - fixed)) <= 2);
    /* a tiny GEMM costs its fixed part (at least the minimum kernel time), a skinny one the
     * weight bytes */
    struct rig_op tiny = rig__gemm_op(b, b, b, 1, 64, 64);
    int64_t tiny_ns = rig_sim_cost_op_ns(&p, &tiny, 1);
    assert_true(tiny_ns >= p.min_kernel_ns && tiny_ns >= fixed && tiny_ns <= fixed + 100);
    /* up to 16 rows with K >= 2048 take the small-batch kernel (cuda/ops/gemv.cu), which
     * spreads N over the whole GPU: exactly the bandwidth bound, no occupancy term */
    struct rig_op skinny = rig__gemm_op(b, b, b, 1, 8192, 8192);
    double bytes = 2.0 * (8192.0 * 8192 + 8192 + 8192);
    int64_t memory_ns = fixed + (int64_t)(bytes / (p.hbm_bytes_per_s * p.efficiency[0]) * 1e9);
    int64_t skinny_ns = rig_sim_cost_op_ns(&p, &skinny, 1);
    assert_true(skinny_ns >= memory_ns && skinny_ns <= memory_ns + 1);
    assert_true(rig_sim_cost_work(&skinny).blocks == 0);
    /* 17 rows go to the tiled GEMM: 1 x 64 output tiles, slower than the bound while
     * that is fewer tiles than fill the GPU */
    struct rig_op rows17 = rig__gemm_op(b, b, b, 17, 8192, 8192);
    struct rig_sim_work work17 = rig_sim_cost_work(&rows17);
    assert_true(work17.blocks == 64);
    double bytes17 = 2.0 * (8192.0 * 8192 + 2 * 17 * 8192);
    int64_t memory17_ns = fixed + (int64_t)(bytes17 / (p.hbm_bytes_per_s * p.efficiency[0]) * 1e9);
    int64_t rows17_ns = rig_sim_cost_op_ns(&p, &rows17, 1);
    if (64 >= p.full_blocks[RIG_SIM_OP_CLASS_GEMM])
        assert_true(rows17_ns >= memory17_ns && rows17_ns <= memory17_ns + 1);
    else
        assert_true(rows17_ns > memory17_ns);
    /* K = 1024 and 4096 outputs at batch 1 (the qkv projection) stay on the tiled GEMM;
     * 151936 outputs (an LM head) take the small-batch kernel at any K */
    struct rig_op qkv = rig__gemm_op(b, b, b, 1, 4096, 1024);
    assert_true(rig_sim_cost_work(&qkv).blocks == 32);
    struct rig_op head = rig__gemm_op(b, b, b, 1, 151936, 1024);
    assert_true(rig_sim_cost_work(&head).blocks == 0);
}

/* Sampling is two kernels (chunks of the row over many blocks, then a merge per row): at
 * batch 1 its time is two element-wise latencies plus one pass over the logits. */
static void test_sample_two_kernels(void **state)
{
    (void)state;
    struct rig_sim_profile p = rig__h100();
    char *b = (char *)(uintptr_t)4096;
    struct rig_op op = {.kind = RIG_OP_SAMPLE};
    struct rig_op_sample *s = &op.u.sample;
    s->logits = rig_tensor_2d(b, RIG_DTYPE_F32, 1, 151936);
    s->tokens = rig_tensor_1d(b, RIG_DTYPE_I32, 1);
    struct rig_sim_work work = rig_sim_cost_work(&op);
    assert_int_equal(work.kernels, 2);
    assert_true(work.bytes == 151936.0 * 4 + 32);
    enum rig_sim_op_class c = RIG_SIM_OP_CLASS_ELEMENTWISE;
    int64_t want = 2 * p.latency_ns[c] +
                   (int64_t)ceil(work.bytes / (p.hbm_bytes_per_s * p.efficiency[c]) * 1e9);
    int64_t got = rig_sim_cost_node_ns(&p, &op, 1);
    assert_true(got >= want - 1 && got <= want + 1);
}

/* The fused q/k norm + RoPE + K/V store of a Qwen3-0.6B layer: its work is the bytes of one
 * pass (read q, k, v; write q, k back and k, v into the cache) in the element-wise class at
 * the fused kernel's fraction of the class's bandwidth, and at batch 1 one graph node of it
 * costs less than the four ops it replaces (one fixed latency instead of four); at 8192
 * tokens it is bandwidth bound. */
static void test_fused_qk_norm_rope_store_cost(void **state)
{
    (void)state;
    struct rig_sim_profile p = rig__h100();
    char *b = (char *)(uintptr_t)4096; /* shapes only: the cost model reads no tensor data */
    for (int64_t tokens = 1; tokens <= 8192; tokens *= 8192) {
        struct rig_tensor q = rig_tensor_3d(b, RIG_DTYPE_BF16, tokens, 16, 128);
        struct rig_tensor k = rig_tensor_3d(b, RIG_DTYPE_BF16, tokens, 8, 128);
        struct rig_tensor cache = rig_tensor_3d(b, RIG_DTYPE_BF16, 65536, 8, 128);
        struct rig_tensor w = rig_tensor_1d(b, RIG_DTYPE_BF16, 128);
        struct rig_tensor meta = rig_tensor_1d(b, RIG_DTYPE_I32, tokens);
        struct rig_rope_params rope = {.theta = 1000000.0f};
        struct rig_op ops[5] = {
            {.kind = RIG_OP_QK_NORM_ROPE_STORE,
             .u.qk_norm_rope_store = {q, k, k, cache, cache, w, w, meta, meta, 1e-6f, rope}},
            {.kind = RIG_OP_HEAD_RMS_NORM, .u.head_rms_norm = {q, w, 1e-6f}},
            {.kind = RIG_OP_HEAD_RMS_NORM, .u.head_rms_norm = {k, w, 1e-6f}},
            {.kind = RIG_OP_ROPE, .u.rope = {q, k, meta, rope}},
            {.kind = RIG_OP_STORE_KV, .u.store_kv = {cache, cache, k, k, meta}},
        };
        struct rig_sim_work work = rig_sim_cost_work(&ops[0]);
        double qk = (double)tokens * 24 * 128 * 2, kv = (double)tokens * 8 * 128 * 2;
        assert_int_equal(work.op_class, RIG_SIM_OP_CLASS_ELEMENTWISE);
        assert_true(work.bytes == 2 * qk + kv + 2 * kv + 8.0 * (double)tokens + 2 * 256);
        assert_true(work.flops == 10.0 * (double)tokens * 24 * 128);
        int64_t fused_ns = rig_sim_cost_node_ns(&p, &ops[0], 1), parts_ns = 0;
        for (int i = 1; i < 5; i++)
            parts_ns += rig_sim_cost_node_ns(&p, &ops[i], 1);
        /* the fused kernel runs at a fixed fraction of its class's bandwidth */
        assert_true(work.rate > 0 && work.rate <= 1);
        double eff = p.hbm_bytes_per_s * p.efficiency[RIG_SIM_OP_CLASS_ELEMENTWISE] * work.rate;
        int64_t want =
            p.latency_ns[RIG_SIM_OP_CLASS_ELEMENTWISE] + (int64_t)ceil(work.bytes / eff * 1e9);
        if (want < p.graph_node_ns) want = p.graph_node_ns;
        assert_true(llabs(fused_ns - want) <= 1);
        if (tokens == 1) assert_true(parts_ns - fused_ns >= 2 * p.graph_node_ns);
        if (tokens == 8192) assert_true(fused_ns > 100000); /* bandwidth bound */
    }
    /* without q/k norm: no weight bytes, RoPE's FLOPs only */
    struct rig_tensor x = rig_tensor_3d(b, RIG_DTYPE_BF16, 4, 2, 64);
    struct rig_tensor ids = rig_tensor_1d(b, RIG_DTYPE_I32, 4), none = rig_tensor_none();
    struct rig_op op = {.kind = RIG_OP_QK_NORM_ROPE_STORE};
    struct rig_rope_params rope = {.theta = 10000.0f};
    op.u.qk_norm_rope_store =
        (struct rig_op_qk_norm_rope_store){x, x, x, x, x, none, none, ids, ids, 0.0f, rope};
    struct rig_sim_work work = rig_sim_cost_work(&op);
    assert_true(work.flops == 6.0 * 2 * 4 * 2 * 64);
    assert_true(work.bytes == 7.0 * 4 * 2 * 64 * 2 + 32); /* 2|q| + 3|k| + 2|v| + metadata */
}

/* Decode attention reads the KV lengths from (real) metadata: time grows with them. */
static void test_attention_cost_scales_with_kv_len(void **state)
{
    (void)state;
    struct rig_sim_profile p = rig__h100();
    static int32_t meta[2][64];
    int64_t times[2];
    char *b = (char *)(uintptr_t)4096;
    /* each request a row of its own slots (none shared: every position read from HBM) */
    int32_t *table = malloc(sizeof *table * 64 * 32768);
    assert_non_null(table);
    for (int32_t r = 0; r < 64; r++) {
        meta[0][r] = r;
        for (int32_t i = 0; i < 32768; i++) table[r * 32768 + i] = r * 32768 + i;
    }
    for (int32_t i = 0; i < 2; i++) {
        for (int32_t r = 0; r < 64; r++)
            meta[1][r] = (i + 1) * 16384;
        struct rig_op op = {.kind = RIG_OP_ATTENTION_DECODE};
        struct rig_op_attention_decode *a = &op.u.attention_decode;
        a->out = rig_tensor_3d(b, RIG_DTYPE_BF16, 64, 32, 128);
        a->q = a->out;
        a->k_cache = rig_tensor_3d(b, RIG_DTYPE_BF16, 1 << 20, 8, 128);
        a->v_cache = a->k_cache;
        a->page_table = rig_tensor_2d(table, RIG_DTYPE_I32, 64, 32768);
        a->table_idx = rig_tensor_1d(meta[0], RIG_DTYPE_I32, 64);
        a->kv_len = rig_tensor_1d(meta[1], RIG_DTYPE_I32, 64);
        a->scale = 0.088f;
        assert_int_equal(rig_hal_op_check(&op, NULL, 0), RIG_OK);
        times[i] = rig_sim_cost_op_ns(&p, &op, 1);
    }
    free(table);
    /* bandwidth bound: KV bytes (K and V, 8 heads of 128 bf16, a 4-byte slot index) + q + out
     * at the decode-attention fraction of HBM bandwidth */
    double bytes = 64.0 * 16384 * (4.0 * 8 * 128 + 4) + 2 * (64.0 * 32 * 128 * 2);
    enum rig_sim_op_class c = RIG_SIM_OP_CLASS_DECODE_ATTENTION;
    double eff = p.efficiency[c];
    if (p.full_blocks[c] > 64 * 8) /* 64 requests x 8 KV heads: occupancy term */
        eff *= pow(64.0 * 8 / (double)p.full_blocks[c], p.occupancy_exponent[c]);
    int64_t fixed = p.latency_ns[c] + p.min_kernel_ns - p.graph_node_ns;
    int64_t expected = fixed + (int64_t)(bytes / (p.hbm_bytes_per_s * eff) * 1e9);
    assert_true(times[0] >= expected - 1 && times[0] <= expected + 1);
    double ratio = (double)(times[1] - fixed) / (double)(times[0] - fixed);
    assert_true(ratio > 1.99 && ratio < 2.01);
}

/* Prefill attention of one causal chunk of T tokens (16 query heads, 8 KV heads, D 128): a
 * graph node costs the class latency plus the FLOPs at attention_efficiency, slowed by the
 * occupancy term while the chunk has fewer blocks (T / 128 packed row tiles x 2 query heads
 * per KV head x 8 KV heads) than attention_full_blocks. */
static int64_t rig__prefill_ns(const struct rig_sim_profile *p, int32_t tokens)
{
    static int32_t meta[3][2];
    char *b = (char *)(uintptr_t)4096;
    meta[0][0] = 0;                      /* table_idx */
    meta[1][0] = 0, meta[1][1] = tokens; /* cu_q */
    meta[2][0] = tokens;                 /* kv_len */
    struct rig_op op = {.kind = RIG_OP_ATTENTION_PREFILL};
    struct rig_op_attention_prefill *a = &op.u.attention_prefill;
    a->out = rig_tensor_3d(b, RIG_DTYPE_BF16, tokens, 16, 128);
    a->q = a->out;
    a->k_cache = rig_tensor_3d(b, RIG_DTYPE_BF16, 1 << 20, 8, 128);
    a->v_cache = a->k_cache;
    a->page_table = rig_tensor_2d(b, RIG_DTYPE_I32, 1, 32768);
    a->table_idx = rig_tensor_1d(meta[0], RIG_DTYPE_I32, 1);
    a->cu_q = rig_tensor_1d(meta[1], RIG_DTYPE_I32, 2);
    a->kv_len = rig_tensor_1d(meta[2], RIG_DTYPE_I32, 1);
    a->scale = 0.088f;
    assert_int_equal(rig_hal_op_check(&op, NULL, 0), RIG_OK);
    return rig_sim_cost_node_ns(p, &op, 1);
}

static void test_prefill_attention_occupancy(void **state)
{
    (void)state;
    struct rig_sim_profile p = rig__h100();
    enum rig_sim_op_class c = RIG_SIM_OP_CLASS_ATTENTION;
    int32_t sizes[2] = {512, 8192};
    for (int32_t i = 0; i < 2; i++) {
        double t = sizes[i], blocks = t * 2 / 128 * 8, occupancy = 1.0;
        if (blocks < (double)p.full_blocks[c])
            occupancy = pow(blocks / (double)p.full_blocks[c], p.occupancy_exponent[c]);
        double flops = 4.0 * 16 * 128 * t * (t + 1) / 2;
        double bytes = 2 * (t * 16 * 128 * 2) + t * (4.0 * 8 * 128 + 4); /* q, out; K, V */
        double compute_s = flops / (p.peak_bf16_flops * p.efficiency[c] * occupancy);
        double memory_s = bytes / (p.hbm_bytes_per_s * p.efficiency[c] * occupancy);
        double s = compute_s > memory_s ? compute_s : memory_s;
        int64_t expected = p.latency_ns[c] + (int64_t)ceil(s * 1e9);
        int64_t got = rig__prefill_ns(&p, sizes[i]);
        assert_true(got >= expected - 1 && got <= expected + 1);
    }
    /* the h100 profile has the term: the short chunk runs at a lower FLOP rate */
    assert_true(p.full_blocks[c] > 512 * 2 / 128 * 8);
    double short_rate = 512.0 * 513 / (double)rig__prefill_ns(&p, 512);
    double long_rate = 8192.0 * 8193 / (double)rig__prefill_ns(&p, 8192);
    assert_true(short_rate < 0.8 * long_rate);
}

/* 20 small kernels: eagerly the host pays 20 launches, as a graph it pays one. */
static void test_graph_replay_cheaper_on_host(void **state)
{
    (void)state;
    struct rig_sim_profile p = rig__h100();
    struct rig__fixture f;
    rig__open(&f, false);
    char *b = f.base;
    struct rig_op op = {.kind = RIG_OP_RMS_NORM};
    op.u.rms_norm.out = rig_tensor_2d(b, RIG_DTYPE_BF16, 4, 64);
    op.u.rms_norm.in = rig_tensor_2d(b + 4096, RIG_DTYPE_BF16, 4, 64);
    op.u.rms_norm.weight = rig_tensor_1d(b + 8192, RIG_DTYPE_BF16, 64);
    op.u.rms_norm.eps = 1e-6f;
    int64_t t0 = rig_hal_now_ns(f.device);
    for (int32_t i = 0; i < 20; i++)
        assert_int_equal(rig_hal_op(f.stream, &op), RIG_OK);
    int64_t eager_host = rig_hal_now_ns(f.device) - t0;
    assert_int_equal(eager_host, 20 * p.kernel_launch_host_ns);
    assert_int_equal(rig_hal_graph_capture_begin(f.stream), RIG_OK);
    for (int32_t i = 0; i < 20; i++)
        assert_int_equal(rig_hal_op(f.stream, &op), RIG_OK);
    struct rig_graph *graph;
    assert_int_equal(rig_hal_graph_capture_end(f.stream, &graph), RIG_OK);
    assert_int_equal(rig_hal_graph_op_count(graph), 20);
    assert_int_equal(rig_hal_now_ns(f.device), t0 + eager_host); /* capture takes no time */
    assert_int_equal(rig_hal_stream_synchronize(f.stream), RIG_OK);
    int64_t t1 = rig_hal_now_ns(f.device);
    assert_int_equal(rig_hal_graph_launch(graph, f.stream), RIG_OK);
    assert_int_equal(rig_hal_now_ns(f.device) - t1, p.graph_launch_host_ns);
    assert_true(p.graph_launch_host_ns < eager_host);
    /* device side: the first node after the launch latency, then back to back, each node at
     * least graph_node_ns (here: tiny kernels, so exactly that) */
    assert_int_equal(rig_hal_stream_synchronize(f.stream), RIG_OK);
    int64_t device_ns = rig_hal_now_ns(f.device) - (t1 + p.graph_launch_host_ns);
    int64_t node = rig_sim_cost_node_ns(&p, &op, 1);
    int64_t tiny = p.latency_ns[RIG_SIM_OP_CLASS_ELEMENTWISE] + 1; /* + ~0 bytes */
    assert_int_equal(node, tiny > p.graph_node_ns ? tiny : p.graph_node_ns);
    assert_int_equal(rig_sim_cost_op_ns(&p, &op, 1), node + p.min_kernel_ns - p.graph_node_ns);
    assert_int_equal(device_ns, p.kernel_launch_latency_ns + 20 * node);
    struct rig_sim_stats stats;
    assert_int_equal(rig_sim_get_stats(f.device, &stats), RIG_OK);
    assert_int_equal(stats.ops_issued, 40);
    assert_int_equal(stats.graph_launches, 1);
    assert_int_equal(stats.op_count[RIG_OP_RMS_NORM], 40);
    int64_t eager = rig_sim_cost_op_ns(&p, &op, 1);
    assert_int_equal(stats.op_ns[RIG_OP_RMS_NORM], 20 * (eager + node));
    assert_int_equal(stats.device_busy_ns, stats.op_ns[RIG_OP_RMS_NORM]);
    assert_int_equal(stats.op_count[RIG_OP_GEMM], 0);
    rig_hal_graph_destroy(graph);
    rig__close(&f);
}

/* The clock never depends on the mode: the same small sequence (real math in one, phantom
 * buffers in the other) gives the same timestamps, so timing-only runs predict real ones. */
static void test_timing_only_same_times(void **state)
{
    (void)state;
    int64_t times[2][3];
    for (int32_t mode = 0; mode < 2; mode++) {
        struct rig__fixture f;
        rig__open(&f, mode == 1);
        char *b = f.base;
        static uint16_t host[4096];
        assert_int_equal(rig_hal_buffer_upload(f.stream, f.big, 0, host, sizeof host), RIG_OK);
        struct rig_op gemm = rig__gemm_op(b, b + 65536, b + 131072, 16, 64, 128);
        struct rig_op norm = {.kind = RIG_OP_RMS_NORM};
        norm.u.rms_norm = (struct rig_op_rms_norm){rig_tensor_2d(b, RIG_DTYPE_BF16, 16, 64),
                                                   rig_tensor_2d(b, RIG_DTYPE_BF16, 16, 64),
                                                   rig_tensor_1d(b + 8192, RIG_DTYPE_BF16, 64),
                                                   1e-6f};
        assert_int_equal(rig_hal_op(f.stream, &gemm), RIG_OK);
        times[mode][0] = rig_hal_now_ns(f.device);
        assert_int_equal(rig_hal_op(f.stream, &norm), RIG_OK);
        assert_int_equal(rig_hal_buffer_fill(f.stream, f.big, 0, 0, 1024), RIG_OK);
        times[mode][1] = rig_hal_now_ns(f.device);
        assert_int_equal(rig_hal_buffer_download(f.stream, f.big, 0, host, sizeof host), RIG_OK);
        assert_int_equal(rig_hal_stream_synchronize(f.stream), RIG_OK);
        times[mode][2] = rig_hal_now_ns(f.device);
        rig__close(&f);
    }
    assert_memory_equal(times[0], times[1], sizeof times[0]);
    assert_true(times[0][2] > times[0][1]);
}

/* Collectives of a TP group larger than a node cross the network: 400 Gb/s per GPU and 10 us
 * more latency by default (sim/profile.h); within a node, NVLink alone. A profile may say
 * otherwise (gpus_per_node, inter_node_bytes_per_s, inter_node_latency_ns). */
static void test_collectives_cross_nodes(void **state)
{
    (void)state;
    struct rig_sim_profile p;
    char error[RIG_SIM_PROFILE_ERROR_MAX];
    assert_int_equal(rig_sim_profile_load("h100", &p, error, sizeof error), RIG_OK);
    assert_int_equal(p.gpus_per_node, 8);
    assert_true(p.inter_node_bytes_per_s == 50e9);
    assert_int_equal(p.inter_node_latency_ns, 10000);
    double bytes = 64.0 * 1024 * 1024; /* 64 MiB: bandwidth-bound */
    int64_t in_node = rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, bytes, 8);
    int64_t two_nodes = rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, bytes, 16);
    assert_int_equal(in_node, p.all_reduce_latency_ns +
                                  (int64_t)ceil(2.0 * 7 / 8 * bytes / p.all_reduce_bytes_per_s * 1e9));
    assert_int_equal(two_nodes, p.all_reduce_latency_ns + 10000 +
                                    (int64_t)ceil(2.0 * 15 / 16 * bytes / 50e9 * 1e9));
    print_message("all-reduce of 64 MiB: TP 8 in a node %.1f us, TP 16 over two nodes %.1f us\n",
                  (double)in_node * 1e-3, (double)two_nodes * 1e-3);
    assert_true(two_nodes > 2 * in_node);
    int64_t gather = rig_sim_cost_collective_ns(&p, RIG_OP_ALL_GATHER, bytes, 16);
    assert_int_equal(gather, p.all_gather_latency_ns + 10000 +
                                 (int64_t)ceil(15.0 / 16 * bytes / 50e9 * 1e9));
    p.gpus_per_node = 4; /* e.g. a 4-GPU node: TP 8 spans two */
    assert_true(rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, bytes, 8) > in_node * 2);
    assert_int_equal(rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, bytes, 4),
                     p.all_reduce_latency_ns +
                         (int64_t)ceil(2.0 * 3 / 4 * bytes / p.all_reduce_bytes_per_s * 1e9));
    const char *text = "name: x\ninter_node_latency_ns: 5\n";
    struct rig_sim_profile q;
    assert_int_equal(rig_sim_profile_parse("x.yaml", text, strlen(text), &q, error,
                                           sizeof error), RIG_E_PARSE); /* other keys missing */
}

/* A profile's measured all-reduce curve (all_reduce_graph_ns): exact at its points, linear in
 * log-log between them, the smallest point's time below, the last segment's bandwidth above;
 * rank counts it has no points for, and TP groups across nodes, keep the formula. Malformed
 * curves fail with the key and the point named. */
static void test_all_reduce_curve(void **state)
{
    (void)state;
    struct rig_sim_profile p;
    char error[RIG_SIM_PROFILE_ERROR_MAX];
    assert_int_equal(rig_sim_profile_load("h100", &p, error, sizeof error), RIG_OK);
    assert_int_equal(p.all_reduce_curve_count, 0); /* the key is optional */
    int64_t formula = rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, 8192, 4);
    p.all_reduce_curve_count = 3;
    p.all_reduce_curve[0] = (struct rig_sim_curve_point){4, 8192, 10000};
    p.all_reduce_curve[1] = (struct rig_sim_curve_point){4, 8192 * 16, 40000};
    p.all_reduce_curve[2] = (struct rig_sim_curve_point){4, 8192 * 64, 100000};
    assert_int_equal(rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, 8192, 4), 10000);
    assert_int_equal(rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, 8192 * 16, 4), 40000);
    assert_int_equal(rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, 1024, 4), 10000);
    /* 4x the bytes of the first point is half way in log(bytes): sqrt(10000 * 40000) */
    assert_int_equal(rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, 8192 * 4, 4), 20000);
    /* past the last point: 60 us per 48 x 8 KiB, so 8 KiB x 64 more cost 80 us more */
    assert_int_equal(rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, 8192 * 128, 4), 180000);
    assert_int_equal(rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, 8192, 2),
                     p.all_reduce_latency_ns +
                         (int64_t)ceil(2.0 * 1 / 2 * 8192 / p.all_reduce_bytes_per_s * 1e9));
    assert_true(rig_sim_cost_collective_ns(&p, RIG_OP_ALL_GATHER, 8192, 4) !=
                10000); /* all-gathers keep the formula */
    p.gpus_per_node = 2; /* TP 4 across two nodes: the curve (one node's) does not apply */
    assert_true(rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, 8192, 4) > formula);

    /* h200.yaml carries TP 2 and TP 4 curves, measured (docs/simulator.md). */
    assert_int_equal(rig_sim_profile_load("h200", &p, error, sizeof error), RIG_OK);
    assert_int_equal(p.all_reduce_curve_count, 14);
    assert_int_equal(rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, 8192, 4), 9440);

    static const struct {
        const char *curve, *message;
    } bad[] = {
        {"4:8192", "point 1 is not RANKS:BYTES:NS"},
        {"4:8192:10 x", "point 2 is not RANKS:BYTES:NS"},
        {"1:8192:10", "point 1 needs ranks 2..1024"},
        {"4:8192:-1", "point 1 needs ranks 2..1024"},
        {"4:8192:10 4:8192:20", "point 2 is out of order"},
        {"4:8192:10 2:65536:20", "point 2 is out of order"},
    };
    char text[4096];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int n = snprintf(text, sizeof text, "all_reduce_graph_ns: \"%s\"\n", bad[i].curve);
        struct rig_sim_profile q;
        enum rig_status status =
            rig_sim_profile_parse("c.yaml", text, (size_t)n, &q, error, sizeof error);
        assert_true(status == RIG_E_PARSE || status == RIG_E_RANGE);
        print_message("%s -> %s\n", bad[i].curve, error);
        assert_non_null(strstr(error, "c.yaml:1:"));
        assert_non_null(strstr(error, "all_reduce_graph_ns"));
        assert_non_null(strstr(error, bad[i].message));
    }
    /* line breaks separate points too (a block scalar): the curve parses, the other keys are
     * then missing */
    const char *block = "all_reduce_graph_ns: |\n  4:8192:10\n  4:65536:20\n";
    struct rig_sim_profile r;
    assert_int_equal(rig_sim_profile_parse("c.yaml", block, strlen(block), &r, error,
                                           sizeof error),
                     RIG_E_PARSE);
    assert_non_null(strstr(error, "missing key"));
    /* more points than fit */
    size_t used = (size_t)snprintf(text, sizeof text, "all_reduce_graph_ns: \"");
    for (int i = 0; i <= RIG_SIM_CURVE_POINTS; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "4:%d:10 ", 1000 + i);
    used += (size_t)snprintf(text + used, sizeof text - used, "\"\n");
    struct rig_sim_profile q;
    assert_int_equal(rig_sim_profile_parse("c.yaml", text, used, &q, error, sizeof error),
                     RIG_E_RANGE);
    assert_non_null(strstr(error, "more than 32 points"));
}

/* Debian 12's libfyaml crashed (a NULL write) on "? n:\t:", found by fuzz_sim_profile: a
 * profile with an explicit key is refused before libfyaml sees it, with its position. */
static void test_profile_refuses_explicit_keys(void **state)
{
    (void)state;
    struct rig_sim_profile q;
    char error[RIG_SIM_PROFILE_ERROR_MAX];
    const char *crash = "? n:\t:";
    assert_int_equal(rig_sim_profile_parse("k.yaml", crash, strlen(crash), &q, error,
                                           sizeof error),
                     RIG_E_PARSE);
    assert_string_equal(error, "k.yaml:1:1: an explicit ('? ') mapping key: a profile takes "
                               "plain keys");
    const char *nested = "name: x\n  - ? [n]:  \t:\n";
    assert_int_equal(rig_sim_profile_parse("k.yaml", nested, strlen(nested), &q, error,
                                           sizeof error),
                     RIG_E_PARSE);
    assert_non_null(strstr(error, "k.yaml:2:5: an explicit"));
    /* The guard itself: line breaks of every kind, a byte order mark, tabs before the '?';
     * a '?' that is not a block-context key indicator passes. */
    static const struct {
        const char *text;
        int64_t at;
    } cases[] = {
        {"? n:\t:", 0},          {"\r? f\t:\t:", 1},   {"a: 1\r\n? k", 6},
        {"\xEF\xBB\xBF? n", 3},  {"\t? n:\t:", 1},     {"x: 1\xC2\x85? y", 6},
        {"- - ? a", 4},          {"?", 0},                {"a: ?x\n", -1},
        {"a: '? x'\n", -1},      {"?x: 1\n", -1},        {"# ? c\nname: x\n", -1},
        {"a: [?, b]\n", -1},     {"", -1},
        /* an explicit value opening a key (libfyaml crashed on both; fuzz_scenario) */
        {": ? n:\t:", 2},        {"x:\n  : ? n:\t:\n", 7}, {"- : ? k", 4},
        {"a: 1\n:x\n", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(rig_yaml_explicit_key_at(cases[i].text, strlen(cases[i].text)),
                         cases[i].at);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_sequence_same_timestamps),
        cmocka_unit_test(test_eager_kernel_times),
        cmocka_unit_test(test_compute_engine_serialises_streams),
        cmocka_unit_test(test_eager_launch_hidden_behind_work),
        cmocka_unit_test(test_cross_stream_wait_orders_copy),
        cmocka_unit_test(test_host_work_and_wait_until),
        cmocka_unit_test(test_gemm_cost_scales_with_rows),
        cmocka_unit_test(test_fused_qk_norm_rope_store_cost),
        cmocka_unit_test(test_sample_two_kernels),
        cmocka_unit_test(test_attention_cost_scales_with_kv_len),
        cmocka_unit_test(test_prefill_attention_occupancy),
        cmocka_unit_test(test_graph_replay_cheaper_on_host),
        cmocka_unit_test(test_timing_only_same_times),
        cmocka_unit_test(test_collectives_cross_nodes),
        cmocka_unit_test(test_all_reduce_curve),
        cmocka_unit_test(test_profile_refuses_explicit_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
