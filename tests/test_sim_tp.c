/* test_sim_tp.c — tensor parallelism on the simulator: collectives across rank threads.
 *
 * Each test opens 2 or 4 simulated ranks with rig_hal_open, links comms, and drives every
 * rank from its own thread, as the engine does. Checks: all-reduce gives exactly the
 * rank-order fp32 sum (values chosen so that another order gives another float), rounded
 * once for bf16; all-gather puts rank r's input in slot r of every output; a collective
 * recorded in a graph and replayed reduces again; three repeated runs give the same bytes
 * and the same timestamps; every rank leaves a collective at max over ranks of its earliest
 * start + the modelled cost, exactly; timing-only collectives keep the time model; comms
 * over devices not opened together are refused.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cost.h"
#include "sim/profile.h"
#include "sim/sim.h"
#include "tests/support/test_support.h"

#define RIG__N 1000 /* elements per rank */

enum rig__job { RIG__ALL_REDUCE_F32, RIG__ALL_REDUCE_BF16, RIG__ALL_GATHER, RIG__GRAPH };

struct rig__rank {
    int32_t rank, size;
    enum rig__job job;
    bool timing_only;
    struct rig_device *device;
    struct rig_comm *comm;
    float in_f32[RIG__N];      /* (N) this rank's contribution */
    uint16_t in_bf16[RIG__N];  /* (N) */
    float out_f32[4 * RIG__N]; /* (ranks, N) what came back */
    uint16_t out_bf16[RIG__N]; /* (N) */
    int64_t end_ns;            /* stream time after the collective */
    int64_t host_ns;           /* host time after synchronising */
    enum rig_status status;
};

/* Rank r's element i: large terms that cancel make the float sum order-dependent. */
static float rig__value(int32_t r, int32_t i)
{
    static const float big[4] = {1.0e8f, 1.0f, -1.0e8f, 3.0f};
    if (i % 3 == 0) return big[r];
    return (float)((i * 7 + r * 13) % 101) * 0.37f - 17.0f + (float)r * 0.001f;
}

/* cmocka's asserts must stay on the test's thread: rank threads record the first failure. */
#define RIG__TRY(k, expr)                                                                          \
    do {                                                                                           \
        enum rig_status rig__s = (expr);                                                           \
        if (rig__s != RIG_OK && (k)->status == RIG_OK) (k)->status = rig__s;                       \
    } while (0)

static void rig__issue(struct rig__rank *k, struct rig_stream *stream, struct rig_buffer *buf)
{
    void *data = rig_hal_buffer_ptr(buf);
    if (k->job == RIG__ALL_GATHER) {
        struct rig_op_all_gather p = {
            .out = rig_tensor_2d((char *)data + 4 * RIG__N, RIG_DTYPE_F32, k->size, RIG__N),
            .in = rig_tensor_1d(data, RIG_DTYPE_F32, RIG__N),
            .comm = k->comm};
        RIG__TRY(k, rig_hal_all_gather(stream, &p));
        return;
    }
    enum rig_dtype dtype = k->job == RIG__ALL_REDUCE_BF16 ? RIG_DTYPE_BF16 : RIG_DTYPE_F32;
    struct rig_op_all_reduce p = {rig_tensor_1d(data, dtype, RIG__N), k->comm};
    RIG__TRY(k, rig_hal_all_reduce(stream, &p));
}

static void rig__collective(struct rig__rank *k, struct rig_stream *stream, struct rig_buffer *buf)
{
    if (k->job != RIG__GRAPH) {
        rig__issue(k, stream, buf);
        return;
    }
    struct rig_graph *graph = NULL;
    RIG__TRY(k, rig_hal_graph_capture_begin(stream));
    rig__issue(k, stream, buf);
    RIG__TRY(k, rig_hal_graph_capture_end(stream, &graph));
    if (graph == NULL) return;
    RIG__TRY(k, rig_hal_graph_launch(graph, stream));
    RIG__TRY(k, rig_hal_graph_launch(graph, stream));
    rig_hal_graph_destroy(graph);
}

/* One rank: upload its values, spend rank-dependent host time, run the collective (twice
 * through a graph for RIG__GRAPH), download. */
static void *rig__rank_main(void *arg)
{
    struct rig__rank *k = arg;
    struct rig_stream *stream;
    struct rig_buffer *buf;
    struct rig_event *done;
    RIG_ASSERT(rig_hal_stream_create(k->device, &stream) == RIG_OK);
    RIG_ASSERT(rig_hal_event_create(k->device, &done) == RIG_OK);
    RIG_ASSERT(rig_hal_buffer_alloc(k->device, 5 * 4 * RIG__N, RIG_MEMORY_ACTIVATIONS, &buf) ==
               RIG_OK);
    bool bf16 = k->job == RIG__ALL_REDUCE_BF16;
    const void *in = bf16 ? (const void *)k->in_bf16 : (const void *)k->in_f32;
    size_t in_bytes = (bf16 ? 2 : 4) * RIG__N;
    /* Pinned, so the upload is asynchronous and the host times below are its API call's. */
    void *pinned = NULL;
    RIG_ASSERT(rig_hal_host_alloc(k->device, in_bytes, &pinned) == RIG_OK);
    memcpy(pinned, in, in_bytes);
    RIG__TRY(k, rig_hal_buffer_upload(stream, buf, 0, pinned, in_bytes));
    rig_hal_host_work_ns(k->device, 100000 * (int64_t)k->rank);
    rig__collective(k, stream, buf);
    RIG__TRY(k, rig_hal_event_record(done, stream));
    RIG__TRY(k, rig_hal_event_synchronize(done));
    k->end_ns = rig_hal_now_ns(k->device);
    void *out = bf16 ? (void *)k->out_bf16 : (void *)k->out_f32;
    size_t out_offset = k->job == RIG__ALL_GATHER ? 4 * RIG__N : 0;
    size_t out_bytes = k->job == RIG__ALL_GATHER ? (size_t)(4 * RIG__N * k->size) : in_bytes;
    RIG__TRY(k, rig_hal_buffer_download(stream, buf, out_offset, out, out_bytes));
    RIG__TRY(k, rig_hal_stream_synchronize(stream));
    k->host_ns = rig_hal_now_ns(k->device);
    rig_hal_host_free(k->device, pinned);
    rig_hal_buffer_free(buf);
    rig_hal_event_destroy(done);
    rig_hal_stream_destroy(stream);
    return NULL;
}

/* Opens `size` ranks, runs `job` on a thread per rank, closes. */
static void rig__run(int32_t size, enum rig__job job, bool timing_only, struct rig__rank *ranks)
{
    struct rig_device *devices[4];
    struct rig_comm *comms[4];
    pthread_t threads[4];
    rig_test_open_sim(size, timing_only, devices);
    assert_int_equal(rig_hal_comm_create(devices, size, comms), RIG_OK);
    for (int32_t r = 0; r < size; r++) {
        struct rig__rank *k = &ranks[r];
        memset(k, 0, sizeof *k);
        *k = (struct rig__rank){.rank = r,
                                .size = size,
                                .job = job,
                                .timing_only = timing_only,
                                .device = devices[r],
                                .comm = comms[r]};
        assert_int_equal(rig_hal_comm_rank(comms[r]), r);
        assert_int_equal(rig_hal_comm_size(comms[r]), size);
        for (int32_t i = 0; i < RIG__N; i++) {
            k->in_f32[i] = rig__value(r, i);
            k->in_bf16[i] = rig_f32_to_bf16(rig__value(r, i));
        }
    }
    for (int32_t r = 0; r < size; r++)
        assert_int_equal(pthread_create(&threads[r], NULL, rig__rank_main, &ranks[r]), 0);
    for (int32_t r = 0; r < size; r++)
        assert_int_equal(pthread_join(threads[r], NULL), 0);
    for (int32_t r = 0; r < size; r++) {
        assert_int_equal(ranks[r].status, RIG_OK);
        rig_hal_comm_destroy(comms[r]);
        rig_hal_close(devices[r]);
    }
}

static void rig__check_all_reduce(int32_t size, bool bf16, int32_t times)
{
    static struct rig__rank ranks[4];
    rig__run(size, bf16 ? RIG__ALL_REDUCE_BF16 : (times == 2 ? RIG__GRAPH : RIG__ALL_REDUCE_F32),
             false, ranks);
    for (int32_t i = 0; i < RIG__N; i++) {
        float expected = 0.0f;
        for (int32_t t = 0; t < times; t++) { /* the graph runs it twice: sum of sums */
            float sum = 0.0f;
            for (int32_t r = 0; r < size; r++)
                sum += t == 0 ? (bf16 ? rig_bf16_to_f32(ranks[r].in_bf16[i]) : ranks[r].in_f32[i])
                              : expected;
            expected = sum;
        }
        for (int32_t r = 0; r < size; r++) {
            if (bf16)
                assert_int_equal(ranks[r].out_bf16[i], rig_f32_to_bf16(expected));
            else
                assert_memory_equal(&ranks[r].out_f32[i], &expected, sizeof expected);
        }
    }
}

static void test_all_reduce_rank_order(void **state)
{
    (void)state;
    /* 1e8 + 1 - 1e8 + 3 in rank order is 3; any other grouping of the big terms differs */
    float ordered = ((1.0e8f + 1.0f) + -1.0e8f) + 3.0f;
    float reordered = ((1.0e8f + -1.0e8f) + 1.0f) + 3.0f;
    assert_true(ordered != reordered);
    rig__check_all_reduce(2, false, 1);
    rig__check_all_reduce(4, false, 1);
    rig__check_all_reduce(2, true, 1);
    rig__check_all_reduce(4, true, 1);
}

static void test_all_reduce_in_graph(void **state)
{
    (void)state;
    rig__check_all_reduce(2, false, 2);
    rig__check_all_reduce(4, false, 2);
}

static void test_all_gather(void **state)
{
    (void)state;
    static struct rig__rank ranks[4];
    for (int32_t size = 2; size <= 4; size += 2) {
        rig__run(size, RIG__ALL_GATHER, false, ranks);
        for (int32_t q = 0; q < size; q++)
            for (int32_t r = 0; r < size; r++)
                assert_memory_equal(&ranks[q].out_f32[r * RIG__N], ranks[r].in_f32,
                                    sizeof ranks[r].in_f32);
    }
}

/* Every rank leaves at max_r(earliest_r) + cost; rank r arrived after r * 100 us of host
 * work, so the last rank sets the time. */
static void test_collective_timestamps(void **state)
{
    (void)state;
    struct rig_sim_profile p;
    char error[RIG_SIM_PROFILE_ERROR_MAX];
    assert_int_equal(rig_sim_profile_load("h100", &p, error, sizeof error), RIG_OK);
    static struct rig__rank ranks[4];
    for (int32_t size = 2; size <= 4; size += 2) {
        rig__run(size, RIG__ALL_REDUCE_F32, false, ranks);
        int64_t upload_host = p.kernel_launch_host_ns; /* the upload's API call */
        int64_t host = upload_host + 100000 * (size - 1) + p.kernel_launch_host_ns;
        int64_t earliest = host + p.kernel_launch_latency_ns;
        int64_t end =
            earliest + rig_sim_cost_collective_ns(&p, RIG_OP_ALL_REDUCE, 4.0 * RIG__N, size);
        for (int32_t r = 0; r < size; r++)
            assert_int_equal(ranks[r].end_ns, end);
    }
}

static void test_repeated_runs_identical(void **state)
{
    (void)state;
    static struct rig__rank first[4], again[4];
    for (int32_t size = 2; size <= 4; size += 2) {
        for (enum rig__job job = RIG__ALL_REDUCE_F32; job <= RIG__GRAPH; job++) {
            rig__run(size, job, false, first);
            for (int32_t repeat = 0; repeat < 2; repeat++) {
                rig__run(size, job, false, again);
                for (int32_t r = 0; r < size; r++) {
                    assert_memory_equal(first[r].out_f32, again[r].out_f32,
                                        sizeof first[r].out_f32);
                    assert_memory_equal(first[r].out_bf16, again[r].out_bf16,
                                        sizeof first[r].out_bf16);
                    assert_int_equal(first[r].end_ns, again[r].end_ns);
                    assert_int_equal(first[r].host_ns, again[r].host_ns);
                }
            }
        }
    }
}

/* Timing-only: phantom buffers, no data, the same times as the real run. */
static void test_timing_only_collectives(void **state)
{
    (void)state;
    static struct rig__rank real[4], phantom[4];
    rig__run(4, RIG__ALL_REDUCE_F32, false, real);
    rig__run(4, RIG__ALL_REDUCE_F32, true, phantom);
    for (int32_t r = 0; r < 4; r++) {
        assert_int_equal(phantom[r].end_ns, real[r].end_ns);
        for (int32_t i = 0; i < RIG__N; i++)
            assert_true(phantom[r].out_f32[i] == 0.0f);
    }
}

static void test_comm_needs_one_group(void **state)
{
    (void)state;
    struct rig_device *a[2], *b[2], *mixed[2];
    struct rig_comm *comms[2];
    rig_test_open_sim(2, false, a);
    rig_test_open_sim(2, false, b);
    mixed[0] = a[0];
    mixed[1] = b[1];
    assert_int_equal(rig_hal_comm_create(mixed, 2, comms), RIG_E_INVALID);
    mixed[1] = b[0]; /* ordinal 0 in the second slot */
    assert_int_equal(rig_hal_comm_create(mixed, 2, comms), RIG_E_INVALID);
    assert_int_equal(a[0]->live_objects, 0);
    /* a comm of one rank over one device of a group is fine: dispatch does its collectives */
    assert_int_equal(rig_hal_comm_create(a, 1, comms), RIG_OK);
    rig_hal_comm_destroy(comms[0]);
    for (int32_t i = 0; i < 2; i++) {
        rig_hal_close(a[i]);
        rig_hal_close(b[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_reduce_rank_order),
        cmocka_unit_test(test_all_reduce_in_graph),
        cmocka_unit_test(test_all_gather),
        cmocka_unit_test(test_collective_timestamps),
        cmocka_unit_test(test_repeated_runs_identical),
        cmocka_unit_test(test_timing_only_collectives),
        cmocka_unit_test(test_comm_needs_one_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
