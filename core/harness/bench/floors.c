/* floors.c — the hardware's own limits, measured in the same process as the benchmarks
 * that are divided by them: device-to-device copy bandwidth and bf16 GEMM FLOP/s.
 *
 * Copy: rig_hal_buffer_copy of one large buffer into another; bandwidth counts the bytes
 * read plus the bytes written (as nvbandwidth and the H100 profile do). GEMM: a square
 * M = N = K bf16 GEMM with fp32 accumulation and bf16 output (rig_hal_gemm, cuBLAS on
 * CUDA) on random data — constant data draws less power and would flatter the clock.
 * Each is the median of the options' repeats after two warm-up runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/bench/bench_impl.h"

#define RIG__COPY_BYTES       ((size_t)1 << 30)
#define RIG__COPY_BYTES_QUICK ((size_t)64 << 20)
#define RIG__GEMM_SIZE        8192
#define RIG__GEMM_SIZE_QUICK  1024

struct rig__copy {
    struct rig_buffer *src, *dst;
    size_t bytes;
};

static enum rig_status rig__copy_once(void *ctx, struct rig_stream *stream)
{
    struct rig__copy *c = ctx;
    return rig_hal_buffer_copy(stream, c->dst, 0, c->src, 0, c->bytes);
}

static enum rig_status rig__gemm_once(void *ctx, struct rig_stream *stream)
{
    return rig_hal_gemm(stream, ctx);
}

/* Fills a bf16 buffer with uniform values in [-1, 1) from a fixed LCG (random data for the
 * GEMM; the phantom buffers of timing-only simulation are left alone). */
static enum rig_status rig__random_bf16(struct rig__bench_dev *dev, struct rig_buffer *buffer,
                                        size_t count, uint64_t seed)
{
    if (dev->timing_only) return RIG_OK;
    uint16_t *host = malloc(count * sizeof *host);
    if (host == NULL) return RIG_E_NO_MEMORY;
    uint64_t s = seed;
    for (size_t i = 0; i < count; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        host[i] = rig_f32_to_bf16((float)(s >> 40) * (2.0f / 16777216.0f) - 1.0f);
    }
    enum rig_status status =
        rig_hal_buffer_upload(dev->stream, buffer, 0, host, count * sizeof *host);
    if (status == RIG_OK) status = rig_hal_stream_synchronize(dev->stream);
    free(host);
    return status;
}

static enum rig_status rig__measure_copy(struct rig__bench_dev *dev,
                                         const struct rig_bench_options *o,
                                         struct rig_bench_floors *f)
{
    struct rig__copy c = {.bytes = o->quick ? RIG__COPY_BYTES_QUICK : RIG__COPY_BYTES};
    enum rig_status status =
        rig_hal_buffer_alloc(dev->device, c.bytes, RIG_MEMORY_ACTIVATIONS, &c.src);
    if (status == RIG_OK)
        status = rig_hal_buffer_alloc(dev->device, c.bytes, RIG_MEMORY_ACTIVATIONS, &c.dst);
    if (status == RIG_OK && !dev->timing_only)
        status = rig_hal_buffer_fill(dev->stream, c.src, 0, 0x3f803f80u, c.bytes / 4);
    if (status == RIG_OK)
        status = rig__bench_time(dev, 2, o->repeats, rig__copy_once, &c, &f->copy_ns);
    rig_hal_buffer_free(c.dst);
    rig_hal_buffer_free(c.src);
    f->copy_bytes = (int64_t)c.bytes;
    if (status == RIG_OK) f->bandwidth = 2.0 * (double)c.bytes / (f->copy_ns * 1e-9);
    return status;
}

static enum rig_status rig__measure_gemm(struct rig__bench_dev *dev,
                                         const struct rig_bench_options *o,
                                         struct rig_bench_floors *f)
{
    int64_t n = o->quick ? RIG__GEMM_SIZE_QUICK : RIG__GEMM_SIZE;
    size_t bytes = (size_t)(n * n) * sizeof(uint16_t);
    struct rig_buffer *buffers[3] = {NULL, NULL, NULL}; /* a, b, out: each [n, n] bf16 */
    enum rig_status status = RIG_OK;
    for (int32_t i = 0; i < 3 && status == RIG_OK; i++)
        status = rig_hal_buffer_alloc(dev->device, bytes, RIG_MEMORY_ACTIVATIONS, &buffers[i]);
    if (status == RIG_OK) status = rig__random_bf16(dev, buffers[0], (size_t)(n * n), 1);
    if (status == RIG_OK) status = rig__random_bf16(dev, buffers[1], (size_t)(n * n), 2);
    if (status == RIG_OK) {
        struct rig_op_gemm gemm = {
            .out = rig_tensor_2d(rig_hal_buffer_ptr(buffers[2]), RIG_DTYPE_BF16, n, n),
            .a = rig_tensor_2d(rig_hal_buffer_ptr(buffers[0]), RIG_DTYPE_BF16, n, n),
            .b = rig_tensor_2d(rig_hal_buffer_ptr(buffers[1]), RIG_DTYPE_BF16, n, n),
            .bias = rig_tensor_none()};
        status = rig__bench_time(dev, 2, o->repeats, rig__gemm_once, &gemm, &f->gemm_ns);
    }
    for (int32_t i = 0; i < 3; i++)
        rig_hal_buffer_free(buffers[i]);
    f->gemm_size = (int32_t)n;
    if (status == RIG_OK) f->gemm_flops = 2.0 * (double)n * n * n / (f->gemm_ns * 1e-9);
    return status;
}

enum rig_status rig_bench_floors(const struct rig_bench_options *options,
                                 struct rig_bench_report *report, char *error, size_t error_len)
{
    struct rig__bench_dev dev;
    enum rig_status status = rig__bench_open(options, &dev, error, error_len);
    if (status < 0) return status;
    rig__bench_identify(&dev, options, report);
    rig__bench_progress(options, "floors", 0, 2);
    status = rig__measure_copy(&dev, options, &report->floors);
    if (status < 0) rig__bench_fail(&dev, status, "copy bandwidth", error, error_len);
    rig__bench_progress(options, "floors", 1, 2);
    if (status == RIG_OK) {
        status = rig__measure_gemm(&dev, options, &report->floors);
        if (status < 0) rig__bench_fail(&dev, status, "GEMM rate", error, error_len);
    }
    rig__bench_progress(options, "floors", 2, 2);
    report->have_floors = status == RIG_OK;
    rig__bench_close(&dev);
    return status;
}
