/* test_cuda_ops.c — every CUDA op against the simulator's reference kernel (sim/kernels.h),
 * ggml test-backend-ops style, plus graph replay and the backend's error paths.
 *
 * How: each case fills host inputs from a seeded RNG (fresh values per case), uploads them,
 * runs the op on the GPU through the HAL (rig_hal_op, so dispatch checks run too), runs the
 * same op on the host copies through rig_sim_op_run, and compares. Outputs that are copies
 * (embedding, gather, index ops, store_kv, copy) must match bit for bit; computed bf16/f32
 * outputs must have a normalised mean squared error sum((gpu-sim)^2)/sum(sim^2) under a
 * per-op bound (rig__tolerance: fp32 accumulation order and bf16 rounding of P in the
 * tensor-core attention are the only differences); sampled tokens must be equal. Output
 * buffers are poisoned (0xFF bytes: a NaN pattern) before each GPU run, so an element the
 * kernel forgot to write fails the comparison. Shapes sweep the odd cases: batch 1 and 257,
 * context 1 and 40960, cached prefix 0 and all-but-one, GQA ratios 1/2/4/8, head dims 64,
 * 128, 80 and 40 (the last takes the split-KV fallback in prefill), vocabularies that are
 * not a multiple of any tile, strided (row-padded) views. Prefill batches too big for the
 * simulator (an 8192-token chunk) are checked on sampled tokens, recomputed by the simulator
 * as one-token requests over the same cache (exact by the op's cached-prefix semantics).
 * Every prefill case runs three times, RIG_PREFILL_WGMMA=1, 2 and 0: at head dim 128 on a
 * Hopper GPU that is the wgmma kernel (blocks of 1 or 2 consumer warpgroups by size, then 2
 * always), then the mma.sync one (case names end in the path). Every decode case runs under
 * RIG_DECODE_TC=1 (the wgmma kernel on a Hopper GPU at head dims 64 and 128) and 0 (the
 * register path), and twice more each time, and must repeat its output bit for bit (the
 * split-KV merge's order is fixed). The sampling cases that take thread-block clusters run
 * again with the cluster size capped at 2 and at 1 (RIG_SAMPLE_CLUSTER_MAX), the path a device
 * too small for a cluster of 8 takes, after a check of the device's cluster-fit answers.
 *
 * Without a GPU (no driver, no device, or a build without the CUDA backend) the program
 * exits 77, which ctest counts as skipped: CI has the toolkit but no GPU.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hal/dummy.h"
#include "hal/hal_impl.h"
#include "sim/kernels.h"
#include "tests/support/test_support.h"
#include "hal/backends.h"
#ifdef RIG_HAVE_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/ops/gemm_plan.cuh"
#include "cuda/ops/sample.cuh"
#include "cuda/preload.h"
#endif

#ifdef RIG_HAVE_CUDA

#define RIG__PAIRS_MAX 24

/* A host array and its device twin of the same size. `host` feeds the simulator (and is
 * modified by it for in-place ops); `result` receives the GPU's bytes. */
struct rig__pair {
    void *host;
    void *result;
    struct rig_buffer *buffer;
    size_t bytes;
};

static struct rig_device *rig__device;
static struct rig_stream *rig__stream;
static struct rig__pair rig__pairs[RIG__PAIRS_MAX];
static int32_t rig__pair_count;
static struct rig_test_rng rig__rng;

static struct rig__pair *rig__pair_new(size_t bytes)
{
    assert_true(rig__pair_count < RIG__PAIRS_MAX);
    struct rig__pair *p = &rig__pairs[rig__pair_count++];
    p->bytes = bytes > 0 ? bytes : 4;
    p->host = calloc(1, p->bytes);
    p->result = calloc(1, p->bytes);
    assert_non_null(p->host);
    assert_non_null(p->result);
    assert_int_equal(
        rig_hal_buffer_alloc(rig__device, p->bytes, RIG_MEMORY_ACTIVATIONS, &p->buffer), RIG_OK);
    return p;
}

static void rig__pairs_free(void)
{
    for (int32_t i = 0; i < rig__pair_count; i++) {
        free(rig__pairs[i].host);
        free(rig__pairs[i].result);
        rig_hal_buffer_free(rig__pairs[i].buffer);
    }
    rig__pair_count = 0;
}

/* Device address standing for a host address inside one of the pairs. */
static void *rig__device_address(void *host)
{
    if (host == NULL) return NULL;
    for (int32_t i = 0; i < rig__pair_count; i++) {
        char *base = rig__pairs[i].host;
        if ((char *)host >= base && (char *)host < base + rig__pairs[i].bytes)
            return (char *)rig_hal_buffer_ptr(rig__pairs[i].buffer) + ((char *)host - base);
    }
    fail_msg("tensor data outside every test pair");
    return NULL;
}

static void rig__map(struct rig_tensor *t)
{
    t->data = rig__device_address(t->data);
}

/* The same op with every tensor pointing at the device twins. */
static struct rig_op rig__to_device(const struct rig_op *host)
{
    struct rig_op op = *host;
    const struct rig_tensor *list[RIG_OP_TENSORS_MAX];
    int32_t n = rig_op_tensors(&op, list);
    /* The pointers point into the local copy `op`, which is not const. */
    for (int32_t i = 0; i < n; i++)
        rig__map((struct rig_tensor *)list[i]);
    return op;
}

/* Uploads every pair, poisons the pairs in `outputs` on the device, runs the op on the GPU,
 * downloads every pair into `result`. */
static void rig__run_gpu(const struct rig_op *host_op, struct rig__pair **outputs,
                         int32_t output_count)
{
    for (int32_t i = 0; i < rig__pair_count; i++) {
        assert_int_equal(rig_hal_buffer_upload(rig__stream, rig__pairs[i].buffer, 0,
                                               rig__pairs[i].host, rig__pairs[i].bytes),
                         RIG_OK);
    }
    for (int32_t i = 0; i < output_count; i++) {
        assert_int_equal(rig_hal_buffer_fill(rig__stream, outputs[i]->buffer, 0, 0xffffffffu,
                                             outputs[i]->bytes / 4),
                         RIG_OK);
    }
    struct rig_op device_op = rig__to_device(host_op);
    enum rig_status status = rig_hal_op(rig__stream, &device_op);
    if (status != RIG_OK)
        fail_msg("rig_hal_op: %s (%s)", rig_status_name(status), rig_hal_stream_error(rig__stream));
    for (int32_t i = 0; i < rig__pair_count; i++) {
        assert_int_equal(rig_hal_buffer_download(rig__stream, rig__pairs[i].buffer, 0,
                                                 rig__pairs[i].result, rig__pairs[i].bytes),
                         RIG_OK);
    }
    assert_int_equal(rig_hal_stream_synchronize(rig__stream), RIG_OK);
}

/* rig__run_gpu, then the reference on the host copies. */
static void rig__run_both(const struct rig_op *host_op, struct rig__pair **outputs,
                          int32_t output_count)
{
    rig__run_gpu(host_op, outputs, output_count);
    assert_int_equal(rig_sim_op_run(host_op), RIG_OK);
}

static float *rig__widen(const void *data, enum rig_dtype dtype, size_t n)
{
    float *out = malloc(n * sizeof *out);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        out[i] = dtype == RIG_DTYPE_BF16 ? rig_bf16_to_f32(((const uint16_t *)data)[i])
                                         : ((const float *)data)[i];
    }
    return out;
}

/* GPU result of `p` against the simulator's, n elements of `dtype`, NMSE <= tolerance. */
static void rig__expect_close(const char *what, const struct rig__pair *p, enum rig_dtype dtype,
                              size_t n, double tolerance)
{
    float *gpu = rig__widen(p->result, dtype, n);
    float *ref = rig__widen(p->host, dtype, n);
    size_t nan_count = 0;
    for (size_t i = 0; i < n; i++)
        nan_count += isnan(gpu[i]) != isnan(ref[i]);
    double nmse = rig_test_nmse(gpu, ref, n);
    printf("    %-44s nmse %.3g (max |d| %.3g)\n", what, nmse, rig_test_max_abs_diff(gpu, ref, n));
    free(gpu);
    free(ref);
    if (nan_count != 0) fail_msg("%s: %zu elements NaN on one side only", what, nan_count);
    if (!(nmse <= tolerance)) fail_msg("%s: nmse %.3g above %.3g", what, nmse, tolerance);
}

/* As rig__expect_close over the first `cols` bf16 values of each of `rows` rows. */
static void rig__expect_close_rows(const char *what, const struct rig__pair *p, int64_t rows,
                                   int64_t cols, int64_t stride, double tolerance)
{
    struct rig__pair packed = {malloc((size_t)(rows * cols) * 2), malloc((size_t)(rows * cols) * 2),
                               NULL, (size_t)(rows * cols) * 2};
    assert_non_null(packed.host);
    assert_non_null(packed.result);
    for (int64_t r = 0; r < rows; r++) {
        memcpy((uint16_t *)packed.host + r * cols, (uint16_t *)p->host + r * stride,
               (size_t)cols * 2);
        memcpy((uint16_t *)packed.result + r * cols, (uint16_t *)p->result + r * stride,
               (size_t)cols * 2);
    }
    rig__expect_close(what, &packed, RIG_DTYPE_BF16, (size_t)(rows * cols), tolerance);
    free(packed.host);
    free(packed.result);
}

static void rig__expect_equal(const char *what, const struct rig__pair *p)
{
    if (memcmp(p->result, p->host, p->bytes) != 0) fail_msg("%s: GPU bytes differ", what);
}

static uint16_t *rig__bf16_random(struct rig__pair *p, size_t n, float lo, float hi)
{
    rig_test_fill_bf16(&rig__rng, p->host, n, lo, hi);
    return p->host;
}

static void rig__reset(uint64_t seed)
{
    rig__pairs_free();
    rig_test_rng_seed(&rig__rng, seed);
}

static struct rig_tensor rig__t2(struct rig__pair *p, enum rig_dtype dtype, int64_t rows,
                                 int64_t cols, int64_t stride)
{
    struct rig_tensor t = rig_tensor_2d(p->host, dtype, rows, cols);
    t.stride[0] = stride;
    return t;
}

/* --- elementwise and row ops ------------------------------------------------------------ */

/* Opening the device loaded every kernel of rig's own modules (cuda/preload.h), before any op
 * ran: none waits for a lazy load in a serving step. First in the list, so no earlier case's
 * launches could have loaded them instead. */
static void test_kernels_preloaded(void **state)
{
    (void)state;
    int64_t modules = 0, functions = 0, loaded = 0;
    enum rig_status status = rig_cuda_kernels_loaded(&modules, &functions, &loaded);
    if (status == RIG_E_UNSUPPORTED) skip(); /* a driver before CUDA 12.4 */
    assert_int_equal(status, RIG_OK);
    print_message("%lld modules, %lld functions, %lld loaded\n", (long long)modules,
                  (long long)functions, (long long)loaded);
    assert_true(modules >= 20);
    assert_true(functions > modules); /* each module: its anchor, and the kernels */
    assert_int_equal(loaded, functions);
}

static void test_embedding(void **state)
{
    (void)state;
    static const int64_t tokens[] = {1, 257};
    static const int64_t hidden[] = {64, 1000, 4096};
    for (size_t a = 0; a < RIG_ARRAY_LEN(tokens); a++) {
        for (size_t b = 0; b < RIG_ARRAY_LEN(hidden); b++) {
            rig__reset(100 + a * 10 + b);
            int64_t t = tokens[a], h = hidden[b], vocab = 1000, start = 500;
            struct rig__pair *out = rig__pair_new((size_t)(t * h * 2));
            struct rig__pair *table = rig__pair_new((size_t)(vocab * h * 2));
            struct rig__pair *ids = rig__pair_new((size_t)t * 4);
            rig__bf16_random(table, (size_t)(vocab * h), -1, 1);
            for (int64_t i = 0; i < t; i++)
                ((int32_t *)ids->host)[i] = (int32_t)rig_test_rng_int(&rig__rng, 0, 2 * vocab - 1);
            struct rig_op op = {.kind = RIG_OP_EMBEDDING};
            op.u.embedding.out = rig_tensor_2d(out->host, RIG_DTYPE_BF16, t, h);
            op.u.embedding.table = rig_tensor_2d(table->host, RIG_DTYPE_BF16, vocab, h);
            op.u.embedding.ids = rig_tensor_1d(ids->host, RIG_DTYPE_I32, t);
            op.u.embedding.vocab_start = start;
            rig__run_both(&op, &out, 1);
            rig__expect_equal("embedding", out);
        }
    }
}

static void rig__norm_case(int64_t t, int64_t h, int64_t pad, bool add, bool alias)
{
    int64_t stride = h + pad;
    struct rig__pair *out = rig__pair_new((size_t)(t * stride * 2));
    struct rig__pair *in = alias ? out : rig__pair_new((size_t)(t * stride * 2));
    struct rig__pair *residual = rig__pair_new((size_t)(t * stride * 2));
    struct rig__pair *weight = rig__pair_new((size_t)h * 2);
    rig__bf16_random(in, (size_t)(t * stride), -3, 3);
    rig__bf16_random(residual, (size_t)(t * stride), -3, 3);
    rig__bf16_random(weight, (size_t)h, 0.5f, 1.5f);
    struct rig_op op;
    memset(&op, 0, sizeof op);
    if (add) {
        op.kind = RIG_OP_ADD_RMS_NORM;
        op.u.add_rms_norm.out = rig__t2(out, RIG_DTYPE_BF16, t, h, stride);
        op.u.add_rms_norm.in = rig__t2(in, RIG_DTYPE_BF16, t, h, stride);
        op.u.add_rms_norm.residual = rig__t2(residual, RIG_DTYPE_BF16, t, h, stride);
        op.u.add_rms_norm.weight = rig_tensor_1d(weight->host, RIG_DTYPE_BF16, h);
        op.u.add_rms_norm.eps = 1e-6f;
    } else {
        op.kind = RIG_OP_RMS_NORM;
        op.u.rms_norm.out = rig__t2(out, RIG_DTYPE_BF16, t, h, stride);
        op.u.rms_norm.in = rig__t2(in, RIG_DTYPE_BF16, t, h, stride);
        op.u.rms_norm.weight = rig_tensor_1d(weight->host, RIG_DTYPE_BF16, h);
        op.u.rms_norm.eps = 1e-6f;
    }
    struct rig__pair *outputs[] = {out};
    rig__run_both(&op, alias ? NULL : outputs, alias ? 0 : 1);
    rig__expect_close_rows(add ? "add_rms_norm" : "rms_norm", out, t, h, stride, 1e-6);
    if (add) {
        /* residual = bf16(residual + in) is one rounding of an exact sum: bit for bit. */
        for (int64_t r = 0; r < t; r++) {
            if (memcmp((uint16_t *)residual->host + r * stride,
                       (uint16_t *)residual->result + r * stride, (size_t)h * 2) != 0)
                fail_msg("add_rms_norm: residual row %lld differs", (long long)r);
        }
    }
}

/* Rows on both sides of the norm kernels' early form (RIG_CUDA_NORM_EARLY_ROWS, 64: up to it
 * the weights are loaded before the PDL wait and a row is read once; cuda/ops/norm_row.cuh). */
static void test_rms_norm(void **state)
{
    (void)state;
    static const int64_t tokens[] = {1, 64, 65, 257};
    static const int64_t hidden[] = {64, 1000, 4096};
    for (size_t a = 0; a < RIG_ARRAY_LEN(tokens); a++) {
        for (size_t b = 0; b < RIG_ARRAY_LEN(hidden); b++) {
            for (int variant = 0; variant < 4; variant++) {
                rig__reset(200 + a * 100 + b * 10 + (uint64_t)variant);
                bool add = variant >= 2, alias = variant % 2 == 1;
                rig__norm_case(tokens[a], hidden[b], variant == 0 ? 8 : 0, add, alias && add);
            }
        }
    }
}

static void test_head_rms_norm(void **state)
{
    (void)state;
    static const int64_t dims[] = {64, 128};
    for (size_t a = 0; a < RIG_ARRAY_LEN(dims); a++) {
        for (int64_t t = 1; t <= 257; t += 256) {
            rig__reset(300 + a * 10 + (uint64_t)t);
            int64_t heads = 8, d = dims[a];
            struct rig__pair *x = rig__pair_new((size_t)(t * heads * d * 2));
            struct rig__pair *w = rig__pair_new((size_t)d * 2);
            rig__bf16_random(x, (size_t)(t * heads * d), -4, 4);
            rig__bf16_random(w, (size_t)d, 0.5f, 1.5f);
            struct rig_op op = {.kind = RIG_OP_HEAD_RMS_NORM};
            op.u.head_rms_norm.x = rig_tensor_3d(x->host, RIG_DTYPE_BF16, t, heads, d);
            op.u.head_rms_norm.weight = rig_tensor_1d(w->host, RIG_DTYPE_BF16, d);
            op.u.head_rms_norm.eps = 1e-6f;
            rig__run_both(&op, NULL, 0);
            rig__expect_close("head_rms_norm", x, RIG_DTYPE_BF16, (size_t)(t * heads * d), 1e-6);
        }
    }
}

static void test_rope(void **state)
{
    (void)state;
    static const int64_t dims[] = {64, 128};
    for (size_t a = 0; a < RIG_ARRAY_LEN(dims); a++) {
        for (int scaling = 0; scaling < 2; scaling++) {
            rig__reset(400 + a * 10 + (uint64_t)scaling);
            int64_t t = 257, hq = 8, hk = 2, d = dims[a], stride_t = (hq + 2 * hk) * d;
            /* q and k are slices of one fused qkv buffer, as the model uses them. */
            struct rig__pair *qkv = rig__pair_new((size_t)(t * stride_t * 2));
            struct rig__pair *pos = rig__pair_new((size_t)t * 4);
            rig__bf16_random(qkv, (size_t)(t * stride_t), -2, 2);
            for (int64_t i = 0; i < t; i++)
                ((int32_t *)pos->host)[i] = (int32_t)rig_test_rng_int(&rig__rng, 0, 40960);
            struct rig_op op = {.kind = RIG_OP_ROPE};
            op.u.rope.q = rig_tensor_3d(qkv->host, RIG_DTYPE_BF16, t, hq, d);
            op.u.rope.q.stride[0] = stride_t;
            op.u.rope.k = rig_tensor_3d((uint16_t *)qkv->host + hq * d, RIG_DTYPE_BF16, t, hk, d);
            op.u.rope.k.stride[0] = stride_t;
            op.u.rope.positions = rig_tensor_1d(pos->host, RIG_DTYPE_I32, t);
            op.u.rope.params.theta = 500000.0f;
            if (scaling) {
                op.u.rope.params.scaling = RIG_ROPE_SCALING_LLAMA3;
                op.u.rope.params.factor = 8.0f;
                op.u.rope.params.low_freq_factor = 1.0f;
                op.u.rope.params.high_freq_factor = 4.0f;
                op.u.rope.params.original_max_position = 8192;
            }
            rig__run_both(&op, NULL, 0);
            rig__expect_close("rope (q, k, v untouched)", qkv, RIG_DTYPE_BF16,
                              (size_t)(t * stride_t), 1e-6);
        }
    }
}

static void test_silu_mul(void **state)
{
    (void)state;
    static const int64_t inter[] = {64, 1000, 3072};
    for (size_t a = 0; a < RIG_ARRAY_LEN(inter); a++) {
        for (int64_t t = 1; t <= 257; t += 256) {
            rig__reset(500 + a * 10 + (uint64_t)t);
            int64_t n = inter[a];
            struct rig__pair *out = rig__pair_new((size_t)(t * n * 2));
            struct rig__pair *in = rig__pair_new((size_t)(t * 2 * n * 2));
            rig__bf16_random(in, (size_t)(t * 2 * n), -6, 6);
            struct rig_op op = {.kind = RIG_OP_SILU_MUL};
            op.u.silu_mul.out = rig_tensor_2d(out->host, RIG_DTYPE_BF16, t, n);
            op.u.silu_mul.in = rig_tensor_2d(in->host, RIG_DTYPE_BF16, t, 2 * n);
            rig__run_both(&op, &out, 1);
            rig__expect_close("silu_mul", out, RIG_DTYPE_BF16, (size_t)(t * n), 1e-6);
        }
    }
}

static void test_gather_and_index(void **state)
{
    (void)state;
    for (int f32 = 0; f32 < 2; f32++) {
        rig__reset(600 + (uint64_t)f32);
        enum rig_dtype dtype = f32 ? RIG_DTYPE_F32 : RIG_DTYPE_BF16;
        int64_t t = 257, h = 1000 + f32 * 3, r = 7, size = f32 ? 4 : 2;
        struct rig__pair *out = rig__pair_new((size_t)(r * h * size));
        struct rig__pair *in = rig__pair_new((size_t)(t * h * size));
        struct rig__pair *idx = rig__pair_new((size_t)r * 4);
        rig__bf16_random(in, (size_t)(t * h * size / 2), -1, 1);
        for (int64_t i = 0; i < r; i++)
            ((int32_t *)idx->host)[i] = (int32_t)rig_test_rng_int(&rig__rng, 0, t - 1);
        struct rig_op op = {.kind = RIG_OP_GATHER_ROWS};
        op.u.gather_rows.out = rig_tensor_2d(out->host, dtype, r, h);
        op.u.gather_rows.in = rig_tensor_2d(in->host, dtype, t, h);
        op.u.gather_rows.idx = rig_tensor_1d(idx->host, RIG_DTYPE_I32, r);
        rig__run_both(&op, &out, 1);
        rig__expect_equal("gather_rows", out);
    }
    rig__reset(610);
    int64_t n = 1000, m = 5000;
    struct rig__pair *values = rig__pair_new((size_t)n * 4);
    struct rig__pair *flat = rig__pair_new((size_t)m * 4);
    struct rig__pair *idx = rig__pair_new((size_t)n * 4);
    for (int64_t i = 0; i < m; i++)
        ((int32_t *)flat->host)[i] = (int32_t)(i * 7 + 3);
    for (int64_t i = 0; i < n; i++) {
        ((int32_t *)idx->host)[i] = (int32_t)((i * 4999) % m); /* distinct: 4999, m coprime */
        ((int32_t *)values->host)[i] = (int32_t)rig_test_rng_int(&rig__rng, -1000, 1000);
    }
    struct rig_op op = {.kind = RIG_OP_INDEX_SCATTER};
    op.u.index_scatter.dst = rig_tensor_1d(flat->host, RIG_DTYPE_I32, m);
    op.u.index_scatter.src = rig_tensor_1d(values->host, RIG_DTYPE_I32, n);
    op.u.index_scatter.idx = rig_tensor_1d(idx->host, RIG_DTYPE_I32, n);
    rig__run_both(&op, NULL, 0);
    rig__expect_equal("index_scatter", flat);
    op.kind = RIG_OP_INDEX_GATHER;
    memcpy(flat->host, flat->result, flat->bytes);
    op.u.index_gather.out = rig_tensor_1d(values->host, RIG_DTYPE_I32, n);
    op.u.index_gather.src = rig_tensor_1d(flat->host, RIG_DTYPE_I32, m);
    op.u.index_gather.idx = rig_tensor_1d(idx->host, RIG_DTYPE_I32, n);
    rig__run_both(&op, &values, 1);
    rig__expect_equal("index_gather", values);
}

static void test_copy(void **state)
{
    (void)state;
    static const enum rig_dtype pairs[][2] = {{RIG_DTYPE_BF16, RIG_DTYPE_F32},
                                              {RIG_DTYPE_F32, RIG_DTYPE_BF16},
                                              {RIG_DTYPE_I32, RIG_DTYPE_I32},
                                              {RIG_DTYPE_BF16, RIG_DTYPE_BF16}};
    for (size_t c = 0; c < RIG_ARRAY_LEN(pairs); c++) {
        rig__reset(700 + c);
        int64_t rows = 33, cols = 130;
        struct rig__pair *in = rig__pair_new((size_t)(rows * cols * 4));
        struct rig__pair *out = rig__pair_new((size_t)(rows * cols * 4));
        rig__bf16_random(in, (size_t)(rows * cols * 2), -100, 100);
        if (pairs[c][0] == RIG_DTYPE_F32) {
            for (int64_t i = 0; i < rows * cols; i++)
                ((float *)in->host)[i] = rig_test_rng_float(&rig__rng, -100, 100);
        }
        struct rig_op op = {.kind = RIG_OP_COPY};
        /* out = in^T through strides: in is read column-major. */
        op.u.copy.in = rig_tensor_2d(in->host, pairs[c][0], cols, rows);
        op.u.copy.in.stride[0] = 1;
        op.u.copy.in.stride[1] = cols;
        op.u.copy.out = rig_tensor_2d(out->host, pairs[c][1], cols, rows);
        rig__run_both(&op, &out, 1);
        struct rig__pair used = {out->host, out->result, NULL,
                                 (size_t)(rows * cols) * rig_dtype_size(pairs[c][1])};
        rig__expect_equal("copy", &used);
    }
}

/* --- seeded dummy weights ----------------------------------------------------------------- */

#define RIG__MATRIX_SCALE (0.02f * 1.7320508f) /* core/model/weights.c: std 0.02 */

struct rig__dummy_case {
    const char *name;
    float scale, offset;
    int64_t width, row0, rows, col0, cols;
    size_t at;       /* byte offset of the block in its buffer: 2 is not 8-aligned */
    bool fma_probe;  /* holds elements whose bf16 an FMA (one rounding) would change */
};

/* Elements of the block `values` (the simulator's) whose bf16 would differ had offset +
 * scale·u been one FMA: those that prove the kernel keeps the two roundings. */
static int64_t rig__fma_sensitive(const struct rig_dummy_piece *p, const uint16_t *values)
{
    int64_t count = 0;
    for (int64_t r = 0; r < p->rows; r++) {
        for (int64_t c = 0; c < p->cols; c++) {
            uint64_t index = (uint64_t)((p->row0 + r) * p->width + p->col0 + c);
            uint32_t word = rig_dummy_words(p->seed, p->tag, index / 4).v[index % 4];
            float u = 2.0f * rig_philox_u32_to_unit(word) - 1.0f;
            count += values[r * p->cols + c] != rig_f32_to_bf16(fmaf(p->scale, u, p->offset));
        }
    }
    return count;
}

/* Bytes of a block at `at` filled by rig_hal_buffer_fill_dummy on `device`, the rest of the
 * buffer (and 16 bytes past the block) poisoned with 0xFF first; *ns: the fill's device time. */
static uint8_t *rig__dummy_bytes(struct rig_device *device, const struct rig_dummy_piece *piece,
                                 size_t at, size_t bytes, int64_t *ns)
{
    struct rig_stream *stream;
    struct rig_buffer *buffer;
    struct rig_event *start, *end;
    uint8_t *back = malloc(bytes);
    assert_non_null(back);
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, bytes, RIG_MEMORY_WEIGHTS, &buffer), RIG_OK);
    assert_int_equal(rig_hal_event_create(device, &start), RIG_OK);
    assert_int_equal(rig_hal_event_create(device, &end), RIG_OK);
    assert_int_equal(rig_hal_buffer_fill(stream, buffer, 0, 0xffffffffu, bytes / 4), RIG_OK);
    assert_int_equal(rig_hal_event_record(start, stream), RIG_OK);
    assert_int_equal(rig_hal_buffer_fill_dummy(stream, buffer, at, piece), RIG_OK);
    assert_int_equal(rig_hal_event_record(end, stream), RIG_OK);
    assert_int_equal(rig_hal_buffer_download(stream, buffer, 0, back, bytes), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    assert_int_equal(rig_hal_event_elapsed_ns(start, end, ns), RIG_OK);
    rig_hal_event_destroy(start);
    rig_hal_event_destroy(end);
    rig_hal_buffer_free(buffer);
    rig_hal_stream_destroy(stream);
    return back;
}

/* rig_hal_buffer_fill_dummy on the GPU writes exactly the simulator's bytes (0 differing),
 * and nothing around the block: an embedding-sized block (Qwen3's 151936 x 1024, grid-stride
 * over more threads than one grid), a TP rank's vocabulary rows of the LM head, the columns
 * of a row-parallel o_proj, a norm weight, a bias block, a block whose rows end mid-group,
 * and blocks whose width and first column are not multiples of 4 at a destination that is
 * not 8-byte aligned (the kernel's scalar path), one of them with element indices past 2^34
 * (the counter's high word); two probes hold elements whose bf16 an FMA-contracted offset +
 * scale·u would change (10 of 16.8M at the norm weights' 1 ± 0.1, 67 of 1M at 1 ± 1.5), so
 * equal bytes prove the kernel rounds twice, as the host does. */
static void test_fill_dummy(void **state)
{
    (void)state;
    static const struct rig__dummy_case cases[] = {
        {"model.embed_tokens.weight", RIG__MATRIX_SCALE, 0, 1024, 0, 151936, 0, 1024, 0, false},
        {"lm_head.weight", RIG__MATRIX_SCALE, 0, 4096, 113952, 37984, 0, 4096, 256, false},
        {"model.layers.27.self_attn.o_proj.weight", RIG__MATRIX_SCALE, 0, 4096, 0, 4096, 2048,
         2048, 8, false},
        {"model.norm.weight", 0.1f, 1.0f, 1, 0, 4096, 0, 1, 0, false},
        {"model.layers.0.self_attn.q_proj.bias", 0.02f, 0, 1, 896, 896, 0, 1, 2, false},
        {"tail.weight", RIG__MATRIX_SCALE, 0, 1024, 3, 17, 4, 1018, 8, false},
        {"odd.weight", RIG__MATRIX_SCALE, 0, 1003, 5, 333, 7, 995, 2, false},
        {"odd.small", RIG__MATRIX_SCALE, 0, 3, 1, 7, 1, 2, 2, false},
        {"odd.huge", RIG__MATRIX_SCALE, 0, 1048573, 65539, 3, 1048501, 71, 2, false},
        {"probe.norm", 0.1f, 1.0f, 4096, 0, 4096, 0, 4096, 0, true},
        {"probe.wide", 1.5f, 1.0f, 1000, 1, 1000, 3, 997, 2, true},
    };
    struct rig_device *sim;
    rig_test_open_sim(1, false, &sim);
    for (size_t i = 0; i < RIG_ARRAY_LEN(cases); i++) {
        const struct rig__dummy_case *c = &cases[i];
        struct rig_dummy_piece piece = {.seed = 0x9e3779b97f4a7c15ull + i,
                                        .tag = rig_dummy_tag(c->name), .scale = c->scale,
                                        .offset = c->offset, .width = c->width,
                                        .row0 = c->row0, .col0 = c->col0, .rows = c->rows,
                                        .cols = c->cols};
        size_t block = (size_t)(c->rows * c->cols) * 2;
        size_t bytes = (c->at + block + 16 + 3) / 4 * 4;
        int64_t gpu_ns = 0, sim_ns = 0;
        uint8_t *gpu = rig__dummy_bytes(rig__device, &piece, c->at, bytes, &gpu_ns);
        uint8_t *ref = rig__dummy_bytes(sim, &piece, c->at, bytes, &sim_ns);
        size_t differing = 0, untouched = 0;
        for (size_t b = 0; b < bytes; b++) {
            differing += gpu[b] != ref[b];
            untouched += (b < c->at || b >= c->at + block) && gpu[b] == 0xff;
        }
        const uint16_t *values = (const uint16_t *)(ref + c->at);
        int64_t sensitive = c->offset != 0 ? rig__fma_sensitive(&piece, values) : 0;
        printf("    fill_dummy %-40s [%6lld, %4lld] at %3zu: %zu differing bytes (%lld "
               "FMA-sensitive), %.3f ms\n", c->name, (long long)c->rows, (long long)c->cols,
               c->at, differing, (long long)sensitive, gpu_ns / 1e6);
        free(gpu);
        free(ref);
        if (differing != 0) fail_msg("%s: %zu bytes differ from the simulator", c->name, differing);
        assert_int_equal(untouched, bytes - block);
        if (c->fma_probe) assert_true(sensitive > 0);
    }
    rig_hal_close(sim);
}

/* --- GEMM ---------------------------------------------------------------------------------- */

/* One GEMM case: out [m, n] (row stride n + out_pad) = a [m, k] (row stride k + a_pad) . b^T
 * (+ bias). Up to 16 rows with aligned a take the small-batch kernel (cuda/ops/gemv.cu), the
 * rest cuBLAS; both must match the simulator. */
struct rig__gemm_shape {
    int64_t m, n, k;
    bool bias, f32;
    int64_t a_pad, out_pad;
};

/* The first `cols` elements of each of `rows` rows of the pair (row stride `stride`) packed,
 * GPU and simulator side, and compared by NMSE. */
static void rig__expect_close_strided(const char *what, const struct rig__pair *p,
                                      enum rig_dtype dtype, int64_t rows, int64_t cols,
                                      int64_t stride, double tolerance)
{
    size_t size = rig_dtype_size(dtype), row_bytes = (size_t)cols * size;
    struct rig__pair packed = {malloc((size_t)rows * row_bytes), malloc((size_t)rows * row_bytes),
                               NULL, (size_t)rows * row_bytes};
    assert_non_null(packed.host);
    assert_non_null(packed.result);
    for (int64_t r = 0; r < rows; r++) {
        size_t from = (size_t)(r * stride) * size, to = (size_t)r * row_bytes;
        memcpy((char *)packed.host + to, (char *)p->host + from, row_bytes);
        memcpy((char *)packed.result + to, (char *)p->result + from, row_bytes);
    }
    rig__expect_close(what, &packed, dtype, (size_t)(rows * cols), tolerance);
    free(packed.host);
    free(packed.result);
}

/* Builds the case's op over fresh random pairs (a, b, out, bias); returns the out pair. */
static struct rig__pair *rig__gemm_build(const struct rig__gemm_shape *g, struct rig_op *op)
{
    int64_t lda = g->k + g->a_pad, ldo = g->n + g->out_pad;
    size_t out_size = g->f32 ? 4 : 2;
    struct rig__pair *a = rig__pair_new((size_t)(g->m * lda * 2));
    struct rig__pair *b = rig__pair_new((size_t)(g->n * g->k * 2));
    struct rig__pair *c = rig__pair_new((size_t)(g->m * ldo) * out_size);
    struct rig__pair *bias = rig__pair_new((size_t)g->n * 2);
    rig__bf16_random(a, (size_t)(g->m * lda), -1, 1);
    rig__bf16_random(b, (size_t)(g->n * g->k), -1, 1);
    rig__bf16_random(bias, (size_t)g->n, -1, 1);
    *op = (struct rig_op){.kind = RIG_OP_GEMM};
    op->u.gemm.out = rig__t2(c, g->f32 ? RIG_DTYPE_F32 : RIG_DTYPE_BF16, g->m, g->n, ldo);
    op->u.gemm.a = rig__t2(a, RIG_DTYPE_BF16, g->m, g->k, lda);
    op->u.gemm.b = rig_tensor_2d(b->host, RIG_DTYPE_BF16, g->n, g->k);
    op->u.gemm.bias = g->bias ? rig_tensor_1d(bias->host, RIG_DTYPE_BF16, g->n) : rig_tensor_none();
    return c;
}

static void rig__gemm_case(const struct rig__gemm_shape *g)
{
    struct rig_op op;
    struct rig__pair *c = rig__gemm_build(g, &op);
    rig__run_both(&op, &c, 1);
    char what[96];
    snprintf(what, sizeof what, "gemm %lldx%lldx%lld%s%s%s%s", (long long)g->m, (long long)g->n,
             (long long)g->k, g->bias ? " bias" : "", g->f32 ? " f32" : "",
             g->a_pad != 0 ? " a-strided" : "", g->out_pad != 0 ? " out-strided" : "");
    rig__expect_close_strided(what, c, g->f32 ? RIG_DTYPE_F32 : RIG_DTYPE_BF16, g->m, g->n,
                              g->n + g->out_pad, g->f32 ? 1e-9 : 1e-6);
}

/* General shapes through both paths: odd N (a partial 8-column tile), K not a multiple of 32,
 * strided a (pad 8 keeps the small-batch kernel, pad 1 misaligns rows: cuBLAS). */
static void test_gemm(void **state)
{
    (void)state;
    static const int64_t shapes[][3] = {
        {1, 64, 64}, {257, 1000, 1000}, {1, 1000, 4096}, {16, 151, 96}, {257, 64, 40},
        {3, 999, 1000}, {9, 17, 40}, {2, 1, 8}, {5, 33, 1001}};
    for (size_t s = 0; s < RIG_ARRAY_LEN(shapes); s++) {
        for (int variant = 0; variant < 4; variant++) {
            rig__reset(800 + s * 10 + (uint64_t)variant);
            struct rig__gemm_shape g = {shapes[s][0], shapes[s][1], shapes[s][2],
                                        variant % 2 == 1, variant >= 2, variant == 0 ? 8 : 0,
                                        variant == 3 ? 5 : 0};
            rig__gemm_case(&g);
        }
        rig__reset(890 + s);
        struct rig__gemm_shape misaligned = {shapes[s][0], shapes[s][1], shapes[s][2], true,
                                             false, 1, 0};
        rig__gemm_case(&misaligned);
    }
}

/* Qwen3-0.6B's decode GEMMs (qkv 1024->4096, o 2048->1024, gate_up 1024->6144, down
 * 3072->1024) at 1, 2, 3, 8, 16 rows (the small-batch kernel, both row groups) and 17
 * (cuBLAS), with and without bias; the LM head (f32 out) at a vocabulary of 999 columns and
 * the full 151936. */
static void test_gemm_decode_shapes(void **state)
{
    (void)state;
    static const int64_t layers[][2] = {{4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072}};
    static const int64_t rows[] = {1, 2, 3, 8, 16, 17};
    for (size_t l = 0; l < RIG_ARRAY_LEN(layers); l++) {
        for (size_t r = 0; r < RIG_ARRAY_LEN(rows); r++) {
            for (int bias = 0; bias < 2; bias++) {
                rig__reset(2200 + l * 100 + r * 10 + (uint64_t)bias);
                struct rig__gemm_shape g = {rows[r], layers[l][0], layers[l][1], bias == 1,
                                            false, r == 2 ? 8 : 0, 0};
                rig__gemm_case(&g);
            }
        }
    }
    for (size_t r = 0; r < RIG_ARRAY_LEN(rows); r++) {
        rig__reset(2700 + r);
        struct rig__gemm_shape g = {rows[r], 999, 1024, r % 2 == 1, true, 0, 0};
        rig__gemm_case(&g);
    }
    static const int64_t head_rows[] = {1, 16};
    for (size_t r = 0; r < RIG_ARRAY_LEN(head_rows); r++) {
        rig__reset(2800 + r);
        struct rig__gemm_shape g = {head_rows[r], 151936, 1024, false, true, 0, 0};
        rig__gemm_case(&g);
    }
}

/* The small-batch kernel's persistent form (cuda/ops/gemv.cu: more column tiles than the GPU
 * holds blocks, each block staging the weights of its next tiles in shared memory while it sums
 * the current one; RIG_GEMV_PERSISTENT=2 takes it for every shape it can run, up to 8 rows)
 * at Qwen3-8B's qkv, o, gate_up and down shapes, Qwen3-32B's qkv and two odd shapes: the
 * simulator's result, and bit for bit the per-tile kernel's (RIG_GEMV_PERSISTENT=0: same warps,
 * same K runs, same summation order). The down projection (K 12,288: 3 batches a warp's run),
 * Qwen3-32B's qkv (K 5,120: 8 steps, then 2) and the odd K 10,248 (321 steps, the last one
 * partial, the last warp's run one batch of 6 steps where the others have 3 batches) take the
 * form whose units are batches. */
static void test_gemm_persistent(void **state)
{
    (void)state;
    static const int64_t shapes[][2] = {{6144, 4096},  {4096, 4096},  {24576, 4096},
                                        {1500, 2048},  {4096, 12288}, {10240, 5120},
                                        {1500, 10248}};
    static const int64_t rows[] = {1, 3, 8};
    for (size_t l = 0; l < RIG_ARRAY_LEN(shapes); l++) {
        for (size_t r = 0; r < RIG_ARRAY_LEN(rows); r++) {
            rig__reset(3100 + l * 10 + r);
            struct rig__gemm_shape g = {rows[r], shapes[l][0], shapes[l][1], r == 1,
                                        l == 3 || l == 6, 0, 0};
            struct rig_op op;
            struct rig__pair *c = rig__gemm_build(&g, &op);
            assert_int_equal(setenv("RIG_GEMV_PERSISTENT", "2", 1), 0);
            rig__run_both(&op, &c, 1);
            char what[96];
            snprintf(what, sizeof what, "gemm %lldx%lldx%lld (persistent)", (long long)g.m,
                     (long long)g.n, (long long)g.k);
            rig__expect_close(what, c, g.f32 ? RIG_DTYPE_F32 : RIG_DTYPE_BF16,
                              (size_t)(g.m * g.n), g.f32 ? 1e-9 : 1e-6);
            void *persistent = malloc(c->bytes);
            assert_non_null(persistent);
            memcpy(persistent, c->result, c->bytes);
            assert_int_equal(setenv("RIG_GEMV_PERSISTENT", "0", 1), 0);
            rig__run_both(&op, &c, 1);
            if (memcmp(persistent, c->result, c->bytes) != 0)
                fail_msg("%s: differs from the per-tile kernel", what);
            free(persistent);
        }
    }
    assert_int_equal(unsetenv("RIG_GEMV_PERSISTENT"), 0);
}

/* A fused GEMM (hal/ops.h: a prologue, accumulate) over fresh random pairs: a is [M, K] (RMS_NORM,
 * none) or [M, 2K] (SILU_MUL) with `a_pad` elements of row padding; out starts random (an
 * accumulate reads it). Returns the out pair; *operand the operand pair (NULL without a
 * prologue). */
static struct rig__pair *rig__gemm_fused_build(int64_t m, int64_t n, int64_t k, int prologue,
                                               bool accumulate, int64_t a_pad, struct rig_op *op,
                                               struct rig__pair **operand)
{
    int64_t width = prologue == RIG_GEMM_PROLOGUE_SILU_MUL ? 2 * k : k, lda = width + a_pad;
    struct rig__pair *a = rig__pair_new((size_t)(m * lda * 2));
    struct rig__pair *b = rig__pair_new((size_t)(n * k * 2));
    struct rig__pair *c = rig__pair_new((size_t)(m * n * 2));
    struct rig__pair *x = rig__pair_new((size_t)(m * k * 2));
    struct rig__pair *w = rig__pair_new((size_t)k * 2);
    /* sums of a few units, as a model's: at |out| ~ 50 one output a bf16 ulp off (0.25, from
     * the order of the fp32 sum) would alone make the NMSE of a 1,024-column row 1e-6 */
    rig__bf16_random(a, (size_t)(m * lda), -1.5f, 1.5f);
    rig__bf16_random(b, (size_t)(n * k), -0.5f, 0.5f);
    rig__bf16_random(c, (size_t)(m * n), -2, 2);
    rig__bf16_random(w, (size_t)k, 0.2f, 0.6f);
    *op = (struct rig_op){.kind = RIG_OP_GEMM};
    struct rig_op_gemm *g = &op->u.gemm;
    g->out = rig_tensor_2d(c->host, RIG_DTYPE_BF16, m, n);
    g->a = rig__t2(a, RIG_DTYPE_BF16, m, width, lda);
    g->b = rig_tensor_2d(b->host, RIG_DTYPE_BF16, n, k);
    g->bias = rig_tensor_none();
    g->prologue = (enum rig_gemm_prologue)prologue;
    g->accumulate = accumulate;
    g->operand = prologue != 0 ? rig_tensor_2d(x->host, RIG_DTYPE_BF16, m, k) : rig_tensor_none();
    if (prologue == RIG_GEMM_PROLOGUE_RMS_NORM) {
        g->norm_weight = rig_tensor_1d(w->host, RIG_DTYPE_BF16, k);
        g->eps = 1e-6f;
    }
    *operand = prologue != 0 ? x : NULL;
    return c;
}

/* Runs a fused case on both sides and compares the operand with the simulator's (as the
 * norm and SiLU ops are compared), then out with the simulator's product of the GPU's own
 * operand: one operand value a bf16 ulp off (the norm's sum of squares in another order)
 * moves every output of its row a little and turns a few percent of them over by an ulp
 * (call 2: 1 x 1024 x 2048, nmse 2.9e-6 against the simulator's operand). With accumulate, out
 * is an input too, so only the operand is poisoned before the GPU run. */
static void rig__gemm_fused_check(const char *label, const struct rig_op *op,
                                  struct rig__pair *c, struct rig__pair *x)
{
    const struct rig_op_gemm *g = &op->u.gemm;
    int64_t m = g->out.shape[0], n = g->out.shape[1], k = rig_gemm_depth(g);
    void *start = malloc(c->bytes);
    assert_non_null(start);
    memcpy(start, c->host, c->bytes);
    struct rig__pair *poisoned[2];
    int32_t count = 0;
    if (!g->accumulate) poisoned[count++] = c;
    if (x != NULL) poisoned[count++] = x;
    rig__run_both(op, poisoned, count);
    static const char *const names[RIG_GEMM_PROLOGUES] = {"", " norm", " silu"};
    char what[112];
    snprintf(what, sizeof what, "gemm %lldx%lldx%lld%s%s%s", (long long)m, (long long)n,
             (long long)k, names[g->prologue], g->accumulate ? " +=" : "", label);
    struct rig__pair product = {start, c->result, NULL, c->bytes};
    if (x != NULL) {
        char operand[128];
        snprintf(operand, sizeof operand, "%s operand", what);
        rig__expect_close(operand, x, RIG_DTYPE_BF16, (size_t)(m * k), 1e-6);
        struct rig_op plain = {.kind = RIG_OP_GEMM};
        plain.u.gemm.out = rig_tensor_2d(start, RIG_DTYPE_BF16, m, n);
        plain.u.gemm.a = rig_tensor_2d(x->result, RIG_DTYPE_BF16, m, k);
        plain.u.gemm.b = g->b;
        plain.u.gemm.accumulate = g->accumulate;
        assert_int_equal(rig_sim_op_run(&plain), RIG_OK);
    } else {
        memcpy(start, c->host, c->bytes);
    }
    rig__expect_close(what, &product, RIG_DTYPE_BF16, (size_t)(m * n), 1e-6);
    free(start);
}

/* The fused forms against the simulator (which computes them as the ops they stand for, bit
 * for bit): every prologue with and without accumulate at Qwen3-0.6B's decode shapes (the
 * per-tile small-batch kernel), K 1,000 (a partial last step), 1, 3, 8 and 16 rows (both row
 * groups), 17 rows (taken apart: the prologue's kernel, cuBLAS, the add) and misaligned rows
 * (taken apart at few rows); at Qwen3-8B's shapes under RIG_GEMV_PERSISTENT 0 and 2: the
 * prologue on the per-tile kernel with its rows in shared memory where they fit, taken apart
 * where they do not and where the persistent kernel runs, and accumulate alone on the
 * persistent kernel bit for bit the per-tile kernel's. */
static void test_gemm_fused(void **state)
{
    (void)state;
    static const int64_t shapes[][2] = {{4096, 1024}, {1024, 2048}, {6144, 1024},
                                        {1024, 3072}, {999, 1000}};
    static const int64_t rows[] = {1, 3, 8, 16, 17};
    for (size_t l = 0; l < RIG_ARRAY_LEN(shapes); l++) {
        for (size_t r = 0; r < RIG_ARRAY_LEN(rows); r++) {
            for (int form = 0; form < 2 * RIG_GEMM_PROLOGUES; form++) {
                if (form == 0) continue; /* plain: test_gemm_decode_shapes */
                rig__reset(4100 + l * 100 + r * 10 + (uint64_t)form);
                struct rig_op op;
                struct rig__pair *x;
                struct rig__pair *c = rig__gemm_fused_build(rows[r], shapes[l][0], shapes[l][1],
                                                            form / 2, form % 2 == 1, 0, &op, &x);
                rig__gemm_fused_check("", &op, c, x);
            }
        }
        rig__reset(4700 + l);
        struct rig_op op;
        struct rig__pair *x;
        struct rig__pair *c = rig__gemm_fused_build(3, shapes[l][0], shapes[l][1],
                                                    RIG_GEMM_PROLOGUE_RMS_NORM, true, 1, &op, &x);
        rig__gemm_fused_check(" misaligned", &op, c, x);
    }
    static const int64_t persistent[][3] = {{6144, 4096, RIG_GEMM_PROLOGUE_RMS_NORM},
                                            {4096, 4096, RIG_GEMM_PROLOGUE_NONE},
                                            {24576, 4096, RIG_GEMM_PROLOGUE_RMS_NORM},
                                            {4096, 12288, RIG_GEMM_PROLOGUE_SILU_MUL}};
    for (size_t l = 0; l < RIG_ARRAY_LEN(persistent); l++) {
        for (int64_t m = 1; m <= 8; m += 7) {
            rig__reset(4800 + l * 10 + (uint64_t)m);
            struct rig_op op;
            struct rig__pair *x;
            int prologue = (int)persistent[l][2];
            bool accumulate = prologue != RIG_GEMM_PROLOGUE_RMS_NORM;
            struct rig__pair *c = rig__gemm_fused_build(m, persistent[l][0], persistent[l][1],
                                                        prologue, accumulate, 0, &op, &x);
            void *start = malloc(c->bytes), *tiled = malloc(c->bytes);
            assert_non_null(start);
            assert_non_null(tiled);
            memcpy(start, c->host, c->bytes); /* out before the accumulate */
            assert_int_equal(setenv("RIG_GEMV_PERSISTENT", "0", 1), 0);
            rig__gemm_fused_check(" (per tile)", &op, c, x);
            memcpy(tiled, c->result, c->bytes);
            memcpy(c->host, start, c->bytes);
            assert_int_equal(setenv("RIG_GEMV_PERSISTENT", "2", 1), 0);
            rig__gemm_fused_check(" (persistent)", &op, c, x);
            /* accumulate alone rides on the persistent kernel, bit for bit the per-tile one's;
             * a prologue is taken apart there (its own kernel, then the GEMM) */
            if (prologue == RIG_GEMM_PROLOGUE_NONE && memcmp(tiled, c->result, c->bytes) != 0)
                fail_msg("fused persistent gemm %lldx%lld: differs from the per-tile kernel",
                         (long long)persistent[l][0], (long long)persistent[l][1]);
            free(start);
            free(tiled);
        }
    }
    assert_int_equal(unsetenv("RIG_GEMV_PERSISTENT"), 0);
}

/* The small-batch kernel's promises: the same bits on a second run, and a row's result does
 * not depend on how many rows share the batch (row 0 of 16 rows == the 1-row result, bit for
 * bit). */
static void test_gemm_small_batch(void **state)
{
    (void)state;
    rig__reset(2900);
    struct rig__gemm_shape g = {16, 1024, 2048, true, false, 0, 0};
    struct rig_op op16;
    struct rig__pair *c16 = rig__gemm_build(&g, &op16);
    struct rig_op op1 = op16;
    op1.u.gemm.a.shape[0] = 1;
    op1.u.gemm.out.shape[0] = 1;
    struct rig__pair *c1 = rig__pair_new(c16->bytes);
    op1.u.gemm.out.data = c1->host;
    rig__run_both(&op16, &c16, 1);
    rig__expect_close("gemm 16 rows", c16, RIG_DTYPE_BF16, (size_t)(16 * 1024), 1e-6);
    void *first = malloc(c16->bytes);
    assert_non_null(first);
    memcpy(first, c16->result, c16->bytes);
    rig__run_both(&op16, &c16, 1);
    assert_memory_equal(first, c16->result, c16->bytes);
    rig__run_both(&op1, &c1, 1);
    rig__expect_close("gemm 1 row", c1, RIG_DTYPE_BF16, 1024, 1e-6);
    assert_memory_equal(c1->result, c16->result, 1024 * 2); /* row 0 */
    free(first);
}

/* Both GEMM paths captured into one graph (biased bf16 out: the small-batch kernel at 8 rows,
 * cuBLAS plus the stream's fp32 scratch at 17): the replay gives the small-batch kernel's
 * eager bits exactly and cuBLAS's to rounding (it may pick another algorithm under
 * capture); both match the simulator. */
static void test_gemm_graph(void **state)
{
    (void)state;
    rig__reset(2950);
    struct rig__gemm_shape shapes[2] = {{8, 1024, 2048, true, false, 0, 0},
                                        {17, 512, 256, true, false, 0, 0}};
    struct rig_op ops[2], device_ops[2];
    struct rig__pair *outs[2];
    for (int i = 0; i < 2; i++)
        outs[i] = rig__gemm_build(&shapes[i], &ops[i]);
    struct rig_graph *graph = NULL;
    assert_int_equal(rig_hal_graph_capture_begin(rig__stream), RIG_OK);
    for (int i = 0; i < 2; i++) {
        device_ops[i] = rig__to_device(&ops[i]);
        assert_int_equal(rig_hal_op(rig__stream, &device_ops[i]), RIG_OK);
    }
    assert_int_equal(rig_hal_graph_capture_end(rig__stream, &graph), RIG_OK);
    assert_int_equal(rig_hal_graph_op_count(graph), 2);
    rig__run_both(&ops[0], outs, 2); /* eager small-batch GEMM, uploads, both references */
    assert_int_equal(rig_sim_op_run(&ops[1]), RIG_OK);
    assert_int_equal(rig_hal_op(rig__stream, &device_ops[1]), RIG_OK); /* eager cuBLAS */
    void *eager[2];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rig_hal_buffer_download(rig__stream, outs[i]->buffer, 0, outs[i]->result,
                                                 outs[i]->bytes),
                         RIG_OK);
        assert_int_equal(rig_hal_stream_synchronize(rig__stream), RIG_OK);
        eager[i] = malloc(outs[i]->bytes);
        assert_non_null(eager[i]);
        memcpy(eager[i], outs[i]->result, outs[i]->bytes);
        assert_int_equal(rig_hal_buffer_fill(rig__stream, outs[i]->buffer, 0, 0xffffffffu,
                                             outs[i]->bytes / 4),
                         RIG_OK);
    }
    assert_int_equal(rig_hal_graph_launch(graph, rig__stream), RIG_OK);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rig_hal_buffer_download(rig__stream, outs[i]->buffer, 0, outs[i]->result,
                                                 outs[i]->bytes),
                         RIG_OK);
    }
    assert_int_equal(rig_hal_stream_synchronize(rig__stream), RIG_OK);
    assert_memory_equal(eager[0], outs[0]->result, outs[0]->bytes);
    struct rig__pair cublas = {eager[1], outs[1]->result, NULL, outs[1]->bytes};
    rig__expect_close("graph cuBLAS GEMM vs eager", &cublas, RIG_DTYPE_BF16,
                      (size_t)(17 * 512), 1e-6);
    rig__expect_close("graph small-batch GEMM vs simulator", outs[0], RIG_DTYPE_BF16,
                      (size_t)(8 * 1024), 1e-6);
    rig__expect_close("graph cuBLAS GEMM vs simulator", outs[1], RIG_DTYPE_BF16,
                      (size_t)(17 * 512), 1e-6);
    free(eager[0]);
    free(eager[1]);
    rig_hal_graph_destroy(graph);
}

/* The GEMM plan table's size classes (cuda/ops/gemm_plan.cuh): every M up to 2^20 lands in
 * a class whose largest M is >= M, classes never go down as M grows, a class holds M values
 * of one octave within 1/4 of its largest above 16, and the powers of two are their own
 * class's largest. Then GEMMs at row counts inside classes, not at their largest (the plan
 * chosen for the largest runs them), against the simulator: odd M, strided a and out, bias,
 * f32 out, and Qwen3-0.6B's qkv at a prefill's token count. */
static void test_gemm_plans(void **state)
{
    (void)state;
    int32_t previous = -1;
    int64_t previous_largest = 0;
    for (int64_t m = 1; m <= RIG_CUDA_GEMM_PLAN_M_MAX; m++) {
        int64_t largest = 0;
        int32_t c = rig_cuda_gemm_plan_class(m, &largest);
        assert_true(largest >= m);
        assert_true(c == previous || c == previous + 1);
        if (c == previous) assert_true(largest == previous_largest);
        if (m > 16) assert_true(4 * (largest - m) < m);
        if ((m & (m - 1)) == 0) assert_true(largest == m);
        previous = c;
        previous_largest = largest;
    }
    assert_int_equal(previous, 5 + 16 * 4 - 1);
    static const int64_t shapes[][3] = {{17, 512, 256},  {19, 1000, 1000}, {35, 96, 200},
                                        {300, 512, 256}, {511, 64, 1024},  {777, 256, 512},
                                        {1030, 128, 96}, {333, 4096, 1024}};
    for (size_t s = 0; s < RIG_ARRAY_LEN(shapes); s++) {
        for (int variant = 0; variant < 4; variant++) {
            rig__reset(3000 + s * 10 + (uint64_t)variant);
            struct rig__gemm_shape g = {shapes[s][0], shapes[s][1], shapes[s][2],
                                        variant % 2 == 1, variant >= 2, variant == 1 ? 8 : 0,
                                        variant == 3 ? 5 : 0};
            rig__gemm_case(&g);
        }
    }
}

/* --- KV cache and attention ---------------------------------------------------------------- */

/* A paged KV world: caches [S, Hk, D], a page table whose rows hold distinct random slots. */
struct rig__kv_world {
    int64_t slots, heads_kv, dim, rows, cols;
    struct rig__pair *k_cache, *v_cache, *page_table;
};

static struct rig__kv_world rig__kv_world(int64_t heads_kv, int64_t dim, int64_t rows, int64_t cols)
{
    struct rig__kv_world w = {rows * cols + 7, heads_kv, dim, rows, cols, NULL, NULL, NULL};
    size_t cache_values = (size_t)(w.slots * heads_kv * dim);
    w.k_cache = rig__pair_new(cache_values * 2);
    w.v_cache = rig__pair_new(cache_values * 2);
    w.page_table = rig__pair_new((size_t)(rows * cols) * 4);
    rig__bf16_random(w.k_cache, cache_values, -1, 1);
    rig__bf16_random(w.v_cache, cache_values, -1, 1);
    int32_t *table = w.page_table->host;
    /* A random permutation of the slots, so positions scatter over the cache. */
    for (int64_t i = 0; i < rows * cols; i++)
        table[i] = (int32_t)i;
    for (int64_t i = rows * cols - 1; i > 0; i--) {
        int64_t j = rig_test_rng_int(&rig__rng, 0, i);
        int32_t swap = table[i];
        table[i] = table[j];
        table[j] = swap;
    }
    return w;
}

/* The decode attention op over world `w` for `requests` rows of q/out [requests, hq, D] and
 * metadata meta = table_idx [requests] then kv_len [requests], all host twins. */
static struct rig_op rig__decode_op(const struct rig__kv_world *w, struct rig__pair *q,
                                    struct rig__pair *out, struct rig__pair *meta,
                                    int64_t requests, int64_t hq, float scale)
{
    int64_t hk = w->heads_kv, d = w->dim;
    int32_t *table_idx = meta->host, *kv_len = table_idx + requests;
    struct rig_op op = {.kind = RIG_OP_ATTENTION_DECODE};
    struct rig_op_attention_decode *a = &op.u.attention_decode;
    a->out = rig_tensor_3d(out->host, RIG_DTYPE_BF16, requests, hq, d);
    a->q = rig_tensor_3d(q->host, RIG_DTYPE_BF16, requests, hq, d);
    a->k_cache = rig_tensor_3d(w->k_cache->host, RIG_DTYPE_BF16, w->slots, hk, d);
    a->v_cache = rig_tensor_3d(w->v_cache->host, RIG_DTYPE_BF16, w->slots, hk, d);
    a->page_table = rig_tensor_2d(w->page_table->host, RIG_DTYPE_I32, w->rows, w->cols);
    a->table_idx = rig_tensor_1d(table_idx, RIG_DTYPE_I32, requests);
    a->kv_len = rig_tensor_1d(kv_len, RIG_DTYPE_I32, requests);
    a->scale = scale;
    return op;
}

static void test_store_kv(void **state)
{
    (void)state;
    for (int64_t t = 1; t <= 257; t += 256) {
        rig__reset(900 + (uint64_t)t);
        int64_t hk = 2, d = 128, slots = 1024;
        struct rig__pair *kc = rig__pair_new((size_t)(slots * hk * d * 2));
        struct rig__pair *vc = rig__pair_new((size_t)(slots * hk * d * 2));
        struct rig__pair *k = rig__pair_new((size_t)(t * hk * d * 2));
        struct rig__pair *v = rig__pair_new((size_t)(t * hk * d * 2));
        struct rig__pair *loc = rig__pair_new((size_t)t * 4);
        rig__bf16_random(kc, (size_t)(slots * hk * d), -1, 1);
        rig__bf16_random(vc, (size_t)(slots * hk * d), -1, 1);
        rig__bf16_random(k, (size_t)(t * hk * d), -1, 1);
        rig__bf16_random(v, (size_t)(t * hk * d), -1, 1);
        for (int64_t i = 0; i < t; i++)
            ((int32_t *)loc->host)[i] = (int32_t)((i * 37 + 5) % slots);
        struct rig_op op = {.kind = RIG_OP_STORE_KV};
        op.u.store_kv.k_cache = rig_tensor_3d(kc->host, RIG_DTYPE_BF16, slots, hk, d);
        op.u.store_kv.v_cache = rig_tensor_3d(vc->host, RIG_DTYPE_BF16, slots, hk, d);
        op.u.store_kv.k = rig_tensor_3d(k->host, RIG_DTYPE_BF16, t, hk, d);
        op.u.store_kv.v = rig_tensor_3d(v->host, RIG_DTYPE_BF16, t, hk, d);
        op.u.store_kv.out_loc = rig_tensor_1d(loc->host, RIG_DTYPE_I32, t);
        rig__run_both(&op, NULL, 0);
        rig__expect_equal("store_kv k_cache", kc);
        rig__expect_equal("store_kv v_cache", vc);
    }
}

/* The fused q/k norm + RoPE + K/V store on q, k, v views of one qkv buffer (rows `pad` values
 * longer than the heads: pad 0 takes the 16-byte path, pad 3 the scalar one). q and k must be
 * close to the simulator's (norm reductions and sincosf differ by fp32 rounding), v and every
 * slot not written bit-equal, k_cache close. Caches are not poisoned (their untouched slots
 * are compared too): a slot the kernel forgot holds its old random values and fails. */
static void rig__fused_case(int64_t hq, int64_t hk, int64_t d, int64_t t, bool norm, bool llama3,
                            int64_t pad)
{
    int64_t width = (hq + 2 * hk) * d + pad, slots = 2 * t + 5;
    struct rig__pair *qkv = rig__pair_new((size_t)(t * width * 2));
    struct rig__pair *kc = rig__pair_new((size_t)(slots * hk * d * 2));
    struct rig__pair *vc = rig__pair_new((size_t)(slots * hk * d * 2));
    struct rig__pair *w = rig__pair_new((size_t)(2 * d * 2));
    struct rig__pair *pos = rig__pair_new((size_t)t * 4);
    struct rig__pair *loc = rig__pair_new((size_t)t * 4);
    rig__bf16_random(qkv, (size_t)(t * width), -3, 3);
    rig__bf16_random(kc, (size_t)(slots * hk * d), -1, 1);
    rig__bf16_random(vc, (size_t)(slots * hk * d), -1, 1);
    rig__bf16_random(w, (size_t)(2 * d), 0.5f, 1.5f);
    for (int64_t i = 0; i < t; i++) {
        ((int32_t *)pos->host)[i] = (int32_t)rig_test_rng_int(&rig__rng, 0, 40960);
        ((int32_t *)loc->host)[i] = (int32_t)((i * 7 + 3) % slots); /* distinct */
    }
    struct rig_op op = {.kind = RIG_OP_QK_NORM_ROPE_STORE};
    struct rig_op_qk_norm_rope_store *p = &op.u.qk_norm_rope_store;
    uint16_t *base = qkv->host;
    p->q = rig_tensor_3d(base, RIG_DTYPE_BF16, t, hq, d);
    p->k = rig_tensor_3d(base + hq * d, RIG_DTYPE_BF16, t, hk, d);
    p->v = rig_tensor_3d(base + (hq + hk) * d, RIG_DTYPE_BF16, t, hk, d);
    p->q.stride[0] = p->k.stride[0] = p->v.stride[0] = width;
    p->k_cache = rig_tensor_3d(kc->host, RIG_DTYPE_BF16, slots, hk, d);
    p->v_cache = rig_tensor_3d(vc->host, RIG_DTYPE_BF16, slots, hk, d);
    p->q_norm = norm ? rig_tensor_1d(w->host, RIG_DTYPE_BF16, d) : rig_tensor_none();
    p->k_norm =
        norm ? rig_tensor_1d((uint16_t *)w->host + d, RIG_DTYPE_BF16, d) : rig_tensor_none();
    p->positions = rig_tensor_1d(pos->host, RIG_DTYPE_I32, t);
    p->out_loc = rig_tensor_1d(loc->host, RIG_DTYPE_I32, t);
    p->eps = 1e-6f;
    p->params.theta = llama3 ? 500000.0f : 1000000.0f;
    if (llama3) {
        p->params.scaling = RIG_ROPE_SCALING_LLAMA3;
        p->params.factor = 8.0f;
        p->params.low_freq_factor = 1.0f;
        p->params.high_freq_factor = 4.0f;
        p->params.original_max_position = 8192;
    }
    printf("  qk_norm_rope_store Hq %lld Hk %lld D %lld T %lld norm %d llama3 %d pad %lld\n",
           (long long)hq, (long long)hk, (long long)d, (long long)t, norm, llama3, (long long)pad);
    rig__run_both(&op, NULL, 0);
    rig__expect_close("q, k in place (v and padding kept)", qkv, RIG_DTYPE_BF16,
                      (size_t)(t * width), 1e-6);
    for (int64_t i = 0; i < t; i++) { /* v and the padding: copies, untouched */
        size_t at = (size_t)(i * width + (hq + hk) * d);
        if (memcmp((uint16_t *)qkv->result + at, (uint16_t *)qkv->host + at,
                   (size_t)(hk * d + pad) * 2) != 0)
            fail_msg("qk_norm_rope_store: v of token %lld changed", (long long)i);
    }
    rig__expect_close("k_cache", kc, RIG_DTYPE_BF16, (size_t)(slots * hk * d), 1e-6);
    rig__expect_equal("v_cache", vc);
}

static void test_qk_norm_rope_store(void **state)
{
    (void)state;
    for (int variant = 0; variant < 16; variant++) {
        rig__reset(1500 + (uint64_t)variant);
        bool d128 = variant % 2 == 0, norm = (variant / 2) % 2 == 0;
        int64_t t = (variant / 4) % 2 == 0 ? 1 : 300;
        bool llama3 = variant >= 8;
        int64_t pad = variant % 3 == 0 ? 3 : 0;
        if (d128)
            rig__fused_case(16, 8, 128, t, norm, llama3, pad); /* Qwen3-0.6B's heads */
        else
            rig__fused_case(8, 1, 64, t, norm, llama3, pad); /* GQA 8, D 64 */
    }
    /* D 256 (8-byte vectors) and D 512 (16-byte vectors): the other vector widths */
    rig__reset(1520);
    rig__fused_case(4, 2, 256, 37, true, false, 0);
    rig__reset(1521);
    rig__fused_case(2, 1, 512, 5, true, true, 0);
    /* The token kernel (from 32 tokens) at its block sizes: Qwen3-32B's 64 / 8 heads (640
     * threads), 128 / 8 heads, whose 1,152 threads take two blocks a token (blockIdx.y), and
     * D 512 (32 lanes a head) */
    rig__reset(1522);
    rig__fused_case(64, 8, 128, 40, true, false, 0);
    rig__reset(1523);
    rig__fused_case(128, 8, 128, 33, true, false, 0);
    rig__reset(1524);
    rig__fused_case(2, 1, 512, 34, true, true, 0);
}

/* A prefill batch on host twins: request r has q_len[r] new tokens after cached[r] cached
 * ones, page-table rows out of order. `misalign` shifts q by one element: the kernels must
 * not assume 16-byte alignment (the tensor-core paths then fall back to the WMMA kernel). */
struct rig__prefill_batch {
    struct rig_op op;
    struct rig__pair *out; /* [tokens, hq, d] */
    int64_t tokens;
};

static struct rig__prefill_batch rig__prefill_batch(int64_t requests, const int64_t *q_len,
                                                    const int64_t *cached, int64_t hq, int64_t hk,
                                                    int64_t d, bool misalign)
{
    int64_t cols = 0, tokens = 0;
    for (int64_t r = 0; r < requests; r++) {
        tokens += q_len[r];
        if (q_len[r] + cached[r] > cols) cols = q_len[r] + cached[r];
    }
    struct rig__kv_world w = rig__kv_world(hk, d, requests + 1, cols);
    struct rig__pair *q = rig__pair_new((size_t)(tokens * hq * d * 2 + 2));
    struct rig__pair *out = rig__pair_new((size_t)(tokens * hq * d * 2));
    struct rig__pair *meta = rig__pair_new((size_t)(3 * requests + 1) * 4);
    rig__bf16_random(q, (size_t)(tokens * hq * d + 1), -2, 2);
    int32_t *table_idx = meta->host, *kv_len = table_idx + requests, *cu_q = kv_len + requests;
    cu_q[0] = 0;
    for (int64_t r = 0; r < requests; r++) {
        table_idx[r] = (int32_t)(requests - r); /* rows out of order; row 0 unused */
        kv_len[r] = (int32_t)(q_len[r] + cached[r]);
        cu_q[r + 1] = cu_q[r] + (int32_t)q_len[r];
    }
    struct rig__prefill_batch b = {{.kind = RIG_OP_ATTENTION_PREFILL}, out, tokens};
    struct rig_op_attention_prefill *a = &b.op.u.attention_prefill;
    a->out = rig_tensor_3d(out->host, RIG_DTYPE_BF16, tokens, hq, d);
    a->q = rig_tensor_3d((uint16_t *)q->host + (misalign ? 1 : 0), RIG_DTYPE_BF16, tokens, hq, d);
    a->k_cache = rig_tensor_3d(w.k_cache->host, RIG_DTYPE_BF16, w.slots, hk, d);
    a->v_cache = rig_tensor_3d(w.v_cache->host, RIG_DTYPE_BF16, w.slots, hk, d);
    a->page_table = rig_tensor_2d(w.page_table->host, RIG_DTYPE_I32, w.rows, w.cols);
    a->table_idx = rig_tensor_1d(table_idx, RIG_DTYPE_I32, requests);
    a->kv_len = rig_tensor_1d(kv_len, RIG_DTYPE_I32, requests);
    a->cu_q = rig_tensor_1d(cu_q, RIG_DTYPE_I32, requests + 1);
    a->scale = 1.0f / sqrtf((float)d);
    return b;
}

/* The whole batch on the GPU against the whole batch in the simulator. */
static void rig__prefill_case(const char *what, int64_t requests, const int64_t *q_len,
                              const int64_t *cached, int64_t hq, int64_t hk, int64_t d,
                              bool misalign)
{
    struct rig__prefill_batch b = rig__prefill_batch(requests, q_len, cached, hq, hk, d, misalign);
    rig__run_both(&b.op, &b.out, 1);
    rig__expect_close(what, b.out, RIG_DTYPE_BF16, (size_t)(b.tokens * hq * d), 2e-5);
}

#define RIG__SAMPLES_MAX 64

/* Which tokens a sampled case checks: per request its first and last, those on each side of
 * the 64- and 128-row tile edges near the start and the middle, and 8 drawn at random.
 * Returns the count; token[i] is the batch token, offset[i] its index in its request. */
static int64_t rig__prefill_samples(int64_t requests, const int64_t *q_len, int64_t *token,
                                    int64_t *request, int64_t *offset)
{
    int64_t n = 0, q_begin = 0;
    for (int64_t r = 0; r < requests; r++) {
        int64_t half = q_len[r] / 2, last = q_len[r] - 1;
        int64_t picks[17] = {0, 31, 32, 63, 64, 127, 128, half, half + 1, last - 1, last};
        for (int32_t i = 11; i < 17; i++)
            picks[i] = q_len[r] > 0 ? rig_test_rng_int(&rig__rng, 0, q_len[r] - 1) : 0;
        for (int32_t i = 0; i < 17; i++) {
            if (picks[i] < 0 || picks[i] >= q_len[r]) continue;
            assert_true(n < RIG__SAMPLES_MAX);
            token[n] = q_begin + picks[i];
            request[n] = r;
            offset[n] = picks[i];
            n++;
        }
        q_begin += q_len[r];
    }
    return n;
}

/* For batches too big for the simulator to redo whole (an 8192-token chunk is ~10^11 flops
 * on one core): the whole batch runs on the GPU (every output must be written: no NaN left
 * of the poison), and the simulator recomputes sampled tokens as a batch of one-token
 * requests over the same page-table rows with kv_len = position + 1, which by the op's
 * cached-prefix semantics is exactly that token's attention in the big batch. */
static void rig__prefill_sampled_case(const char *what, int64_t requests, const int64_t *q_len,
                                      const int64_t *cached, int64_t hq, int64_t hk, int64_t d)
{
    struct rig__prefill_batch b = rig__prefill_batch(requests, q_len, cached, hq, hk, d, false);
    rig__run_gpu(&b.op, &b.out, 1);
    const struct rig_op_attention_prefill *a = &b.op.u.attention_prefill;
    size_t row = (size_t)(hq * d), nan_count = 0;
    for (size_t i = 0; i < (size_t)b.tokens * row; i++)
        nan_count += isnan(rig_bf16_to_f32(((const uint16_t *)b.out->result)[i]));
    if (nan_count != 0) fail_msg("%s: %zu outputs NaN (unwritten?)", what, nan_count);
    int64_t token[RIG__SAMPLES_MAX], request[RIG__SAMPLES_MAX], offset[RIG__SAMPLES_MAX];
    int64_t n = rig__prefill_samples(requests, q_len, token, request, offset);
    uint16_t *q = malloc((size_t)n * row * 2), *out = malloc((size_t)n * row * 2);
    struct rig__pair gpu = {out, malloc((size_t)n * row * 2), NULL, (size_t)n * row * 2};
    int32_t *meta = malloc((size_t)(3 * n + 1) * 4);
    assert_true(q != NULL && out != NULL && gpu.result != NULL && meta != NULL);
    int32_t *table_idx = meta, *kv_len = meta + n, *cu_q = meta + 2 * n;
    for (int64_t i = 0; i <= n; i++)
        cu_q[i] = (int32_t)i;
    for (int64_t i = 0; i < n; i++) {
        memcpy(q + (size_t)i * row, (const uint16_t *)a->q.data + (size_t)token[i] * row, row * 2);
        memcpy((uint16_t *)gpu.result + (size_t)i * row,
               (const uint16_t *)b.out->result + (size_t)token[i] * row, row * 2);
        table_idx[i] = ((const int32_t *)a->table_idx.data)[request[i]];
        kv_len[i] = (int32_t)(cached[request[i]] + offset[i] + 1);
    }
    struct rig_op ref = b.op;
    struct rig_op_attention_prefill *r = &ref.u.attention_prefill;
    r->out = rig_tensor_3d(out, RIG_DTYPE_BF16, n, hq, d);
    r->q = rig_tensor_3d(q, RIG_DTYPE_BF16, n, hq, d);
    r->table_idx = rig_tensor_1d(table_idx, RIG_DTYPE_I32, n);
    r->kv_len = rig_tensor_1d(kv_len, RIG_DTYPE_I32, n);
    r->cu_q = rig_tensor_1d(cu_q, RIG_DTYPE_I32, n + 1);
    assert_int_equal(rig_sim_op_run(&ref), RIG_OK);
    rig__expect_close(what, &gpu, RIG_DTYPE_BF16, (size_t)n * row, 2e-5);
    free(q);
    free(out);
    free(gpu.result);
    free(meta);
}

/* "what [path]" in `name`; returns name. */
static const char *rig__path_name(char *name, size_t size, const char *what, const char *path)
{
    snprintf(name, size, "%s [%s]", what, path);
    return name;
}

/* Long prefills at `hq` query heads and head dim `d`, at every GQA ratio, sampled: one 8192-token
 * chunk (seed `seed` + g) and three requests with cached prefixes (seed `seed` + 10 + g). `tag`
 * goes into the case names after the ratio. */
static void rig__prefill_long_cases(const char *path, int64_t hq, int64_t d, const char *tag,
                                    uint64_t seed)
{
    static const int64_t ratios[] = {1, 2, 4, 8};
    int64_t chunk[] = {8192}, fresh[] = {0};
    int64_t three_q[] = {1500, 777, 2100}, three_cached[] = {4000, 0, 333};
    char what[120];
    for (size_t g = 0; g < RIG_ARRAY_LEN(ratios); g++) {
        rig__reset(seed + g);
        snprintf(what, sizeof what, "prefill 8192 chunk GQA %lld%s (sampled) [%s]",
                 (long long)ratios[g], tag, path);
        rig__prefill_sampled_case(what, 1, chunk, fresh, hq, hq / ratios[g], d);
        rig__reset(seed + 10 + g);
        snprintf(what, sizeof what, "prefill 3 requests with prefixes GQA %lld%s (sampled) [%s]",
                 (long long)ratios[g], tag, path);
        rig__prefill_sampled_case(what, 3, three_q, three_cached, hq, hq / ratios[g], d);
    }
}

/* Every prefill case, on the kernel path RIG_PREFILL_WGMMA selects (`path` names it in the
 * case names): head dim 128 takes the wgmma kernel on a Hopper GPU unless it is "0". */
static void rig__attention_prefill_cases(const char *path)
{
    static const int64_t ratios[] = {1, 2, 4, 8};
    char what[120];
    for (size_t g = 0; g < RIG_ARRAY_LEN(ratios); g++) {
        rig__reset(1000 + g);
        int64_t q_len[] = {100, 1, 37, 64}, cached[] = {0, 999, 300, 1};
        snprintf(what, sizeof what, "prefill mixed GQA %lld D128 [%s]", (long long)ratios[g], path);
        rig__prefill_case(what, 4, q_len, cached, 8, 8 / ratios[g], 128, false);
        rig__reset(1010 + g);
        snprintf(what, sizeof what, "prefill mixed GQA %lld D128 (WMMA path)",
                 (long long)ratios[g]);
        rig__prefill_case(what, 4, q_len, cached, 8, 8 / ratios[g], 128, true);
    }
    /* Lengths off every row-tile multiple (64 and 128 packed rows) in one batch, cached
     * prefixes 0 / 1 / 777 (777 puts the causal diagonal mid key tile), and a request with
     * no new tokens (it owns no row tile). */
    static const int64_t odd_q[] = {1, 63, 65, 127, 129, 1000, 0};
    static const int64_t odd_cached[] = {777, 0, 1, 777, 0, 1, 5};
    for (size_t g = 0; g < RIG_ARRAY_LEN(ratios); g++) {
        rig__reset(1020 + g);
        snprintf(what, sizeof what, "prefill odd lengths GQA %lld D128 [%s]", (long long)ratios[g],
                 path);
        rig__prefill_case(what, 7, odd_q, odd_cached, 8, 8 / ratios[g], 128, false);
    }
    /* The same at head dim 64 (the wgmma kernel's m64n64 P V and one swizzle atom a row). */
    for (size_t g = 0; g < RIG_ARRAY_LEN(ratios); g++) {
        rig__reset(1030 + g);
        int64_t q_len[] = {100, 1, 37, 64}, cached[] = {0, 999, 300, 1};
        snprintf(what, sizeof what, "prefill mixed GQA %lld D64 [%s]", (long long)ratios[g], path);
        rig__prefill_case(what, 4, q_len, cached, 8, 8 / ratios[g], 64, false);
        rig__reset(1040 + g);
        snprintf(what, sizeof what, "prefill odd lengths GQA %lld D64 [%s]", (long long)ratios[g],
                 path);
        rig__prefill_case(what, 7, odd_q, odd_cached, 8, 8 / ratios[g], 64, false);
    }
    static const int64_t dims[] = {64, 80, 40, 256};
    for (size_t i = 0; i < RIG_ARRAY_LEN(dims); i++) {
        rig__reset(1100 + i);
        int64_t q_len[] = {130, 5}, cached[] = {17, 0};
        snprintf(what, sizeof what, "prefill D%lld GQA 4", (long long)dims[i]);
        rig__prefill_case(what, 2, q_len, cached, 8, 2, dims[i], false);
    }
    rig__reset(1110);
    rig__prefill_case(rig__path_name(what, sizeof what, "prefill odd lengths GQA 2 D64", path), 7,
                      odd_q, odd_cached, 4, 2, 64, false);
    rig__reset(1111);
    rig__prefill_case(rig__path_name(what, sizeof what, "prefill odd lengths GQA 2 D256", path), 7,
                      odd_q, odd_cached, 4, 2, 256, false);
    /* Key counts at the edges of the K/V pipeline (BN 64): exactly 1, 2 and 3 whole key
     * tiles, and 2 tiles with one key in the second: the first tile's separate K and V
     * groups, the last tile's empty groups, and slots reused from the K copy for the V copy. */
    rig__reset(1120);
    static const int64_t edge_q[] = {64, 64, 1, 65}, edge_cached[] = {0, 64, 191, 0};
    rig__prefill_case(rig__path_name(what, sizeof what, "prefill key-tile edges GQA 2 D128", path),
                      4, edge_q, edge_cached, 16, 8, 128, false);
    rig__reset(1121);
    rig__prefill_case(rig__path_name(what, sizeof what, "prefill key-tile edges GQA 2 D64", path),
                      4, edge_q, edge_cached, 4, 2, 64, false);
    rig__reset(1200);
    int64_t one[] = {1}, none[] = {0};
    rig__prefill_case(rig__path_name(what, sizeof what, "prefill context 1", path), 1, one, none, 4,
                      1, 128, false);
    rig__reset(1201);
    int64_t last[] = {1}, all_but_one[] = {4095};
    rig__prefill_case(rig__path_name(what, sizeof what, "prefill cached all-but-one (4096)", path),
                      1, last, all_but_one, 16, 2, 128, false);
    rig__reset(1202);
    int64_t long_q[] = {8}, long_cached[] = {40952};
    rig__prefill_case(
        rig__path_name(what, sizeof what, "prefill 8 after 40952 cached (context 40960)", path), 1,
        long_q, long_cached, 8, 1, 128, false);
    /* Serving sizes at Qwen3-0.6B heads (16 / 8, D 128), sampled against the simulator. */
    rig__reset(1300);
    int64_t chunk[] = {8192}, fresh[] = {0};
    rig__prefill_sampled_case(
        rig__path_name(what, sizeof what, "prefill 8192 chunk 16/8 heads (sampled)", path), 1,
        chunk, fresh, 16, 8, 128);
    rig__reset(1301);
    int64_t second[] = {2048}, prefix[] = {2048};
    rig__prefill_sampled_case(
        rig__path_name(what, sizeof what, "prefill 2048 after 2048 cached (sampled)", path), 1,
        second, prefix, 16, 8, 128);
    rig__reset(1302);
    int64_t pair_q[] = {2500, 700}, pair_cached[] = {123, 3000};
    rig__prefill_sampled_case(
        rig__path_name(what, sizeof what, "prefill 2500+700 GQA 4 (sampled)", path), 2, pair_q,
        pair_cached, 16, 4, 128);
    /* Lone short chunks (the wgmma kernel's one-warpgroup blocks) and long ones at every GQA
     * ratio, several requests with cached prefixes. */
    rig__reset(1303);
    int64_t lone[] = {512};
    snprintf(what, sizeof what, "prefill lone 512 chunk 16/8 heads [%s]", path);
    rig__prefill_case(what, 1, lone, fresh, 16, 8, 128, false);
    rig__reset(1304);
    int64_t lone_900[] = {900}, lone_cached[] = {100};
    snprintf(what, sizeof what, "prefill lone 900 after 100 GQA 8 (sampled) [%s]", path);
    rig__prefill_sampled_case(what, 1, lone_900, lone_cached, 16, 2, 128);
    rig__prefill_long_cases(path, 16, 128, "", 1310);
    /* Head dim 64 at Llama-3.2-1B's heads (32 / 8): a lone 512 chunk compared whole, the 8192
     * chunk and three requests with prefixes at every GQA ratio, sampled. */
    rig__reset(1330);
    snprintf(what, sizeof what, "prefill lone 512 chunk 32/8 heads D64 [%s]", path);
    rig__prefill_case(what, 1, lone, fresh, 32, 8, 64, false);
    rig__prefill_long_cases(path, 32, 64, " D64", 1340);
}

static void test_attention_prefill(void **state)
{
    (void)state;
    assert_int_equal(setenv("RIG_PREFILL_WGMMA", "1", 1), 0); /* whatever the default */
    rig__attention_prefill_cases("wgmma where it runs");
    assert_int_equal(setenv("RIG_PREFILL_WGMMA", "2", 1), 0); /* short batches too */
    rig__attention_prefill_cases("wgmma, 2 consumer warpgroups");
    assert_int_equal(setenv("RIG_PREFILL_WGMMA", "0", 1), 0);
    rig__attention_prefill_cases("mma.sync");
    assert_int_equal(unsetenv("RIG_PREFILL_WGMMA"), 0);
}

/* One decode batch: `requests` rows whose key counts are drawn from [len_min, len_max] (row 0
 * gets len_max, row 1 a single key when len_min is 1), reading `table_rows` page-table rows
 * (requests may share one, which keeps the cache small) `cols` wide (at least len_max: a wider
 * table makes the kernel choose splits for keys that are not there). The caches start
 * `cache_offset` values into their buffers (4: not 16-byte aligned, the staged path). */
struct rig__decode_shape {
    int64_t requests, table_rows, len_min, len_max, cols, hq, hk, d, cache_offset;
};

/* Runs `op` (already run by rig__run_gpu, its inputs still on the device) twice more and
 * fails unless `out` comes out bit for bit as the first time: the split-KV merge's order is
 * fixed by the launch shape, never by which block finishes last. */
static void rig__expect_repeatable(const char *what, const struct rig_op *op,
                                   const struct rig__pair *out)
{
    struct rig_op device_op = rig__to_device(op);
    void *again = malloc(out->bytes);
    assert_non_null(again);
    for (int run = 0; run < 2; run++) {
        assert_int_equal(rig_hal_op(rig__stream, &device_op), RIG_OK);
        assert_int_equal(rig_hal_buffer_download(rig__stream, out->buffer, 0, again, out->bytes),
                         RIG_OK);
        assert_int_equal(rig_hal_stream_synchronize(rig__stream), RIG_OK);
        if (memcmp(again, out->result, out->bytes) != 0)
            fail_msg("%s: run %d differs from the first", what, run + 2);
    }
    free(again);
}

static void rig__decode_case(const char *what, struct rig__decode_shape c)
{
    int64_t requests = c.requests, hq = c.hq, hk = c.hk, d = c.d;
    assert_true(c.len_min >= 1 && c.len_min <= c.len_max && c.len_max <= c.cols);
    assert_true(c.table_rows >= 1 && c.table_rows <= requests);
    struct rig__kv_world w = rig__kv_world(hk, d, c.table_rows, c.cols);
    struct rig__pair *q = rig__pair_new((size_t)(requests * hq * d * 2));
    struct rig__pair *out = rig__pair_new((size_t)(requests * hq * d * 2));
    struct rig__pair *meta = rig__pair_new((size_t)(2 * requests) * 4);
    rig__bf16_random(q, (size_t)(requests * hq * d), -2, 2);
    int32_t *table_idx = meta->host, *kv_len = table_idx + requests;
    for (int64_t r = 0; r < requests; r++) {
        table_idx[r] = (int32_t)((r * 5 + 3) % c.table_rows);
        kv_len[r] = r == 0 ? (int32_t)c.len_max
                           : (int32_t)rig_test_rng_int(&rig__rng, c.len_min, c.len_max);
    }
    if (requests > 2 && c.len_min == 1) kv_len[1] = 1;
    struct rig_op op = {.kind = RIG_OP_ATTENTION_DECODE};
    struct rig_op_attention_decode *a = &op.u.attention_decode;
    a->out = rig_tensor_3d(out->host, RIG_DTYPE_BF16, requests, hq, d);
    a->q = rig_tensor_3d(q->host, RIG_DTYPE_BF16, requests, hq, d);
    /* An offset cache loses its last slot; the table's slots stop 7 short of the end. */
    int64_t slots = w.slots - (c.cache_offset > 0 ? 1 : 0);
    a->k_cache =
        rig_tensor_3d((uint16_t *)w.k_cache->host + c.cache_offset, RIG_DTYPE_BF16, slots, hk, d);
    a->v_cache =
        rig_tensor_3d((uint16_t *)w.v_cache->host + c.cache_offset, RIG_DTYPE_BF16, slots, hk, d);
    a->page_table = rig_tensor_2d(w.page_table->host, RIG_DTYPE_I32, w.rows, w.cols);
    a->table_idx = rig_tensor_1d(table_idx, RIG_DTYPE_I32, requests);
    a->kv_len = rig_tensor_1d(kv_len, RIG_DTYPE_I32, requests);
    a->scale = 1.0f / sqrtf((float)d);
    rig__run_both(&op, &out, 1);
    rig__expect_close(what, out, RIG_DTYPE_BF16, (size_t)(requests * hq * d), 1e-6);
    rig__expect_repeatable(what, &op, out);
    /* the register path's splits merged in a cluster (wherever it can) and through the arrival
     * count: the same bits (attention_decode.cu, rig__decode_merge_cluster) */
    assert_int_equal(setenv("RIG_DECODE_CLUSTER", "1", 1), 0);
    rig__expect_repeatable(what, &op, out);
    assert_int_equal(setenv("RIG_DECODE_CLUSTER", "0", 1), 0);
    rig__expect_repeatable(what, &op, out);
    assert_int_equal(unsetenv("RIG_DECODE_CLUSTER"), 0);
    if (d == 64) { /* the tensor-core kernel's one-block form, where it runs: the same bits */
        assert_int_equal(setenv("RIG_DECODE_TC_TWO", "0", 1), 0);
        rig__expect_repeatable(what, &op, out);
        assert_int_equal(unsetenv("RIG_DECODE_TC_TWO"), 0);
    }
}

/* Decode against the simulator, on the kernel path RIG_DECODE_TC selects (`path` names it in
 * the case names): the register path (D 64/128/256, GQA 1/2/4/8) or, at D 64 and 128 on a
 * Hopper GPU, the tensor-core one (at D 64 also bit for bit against its one-block form,
 * RIG_DECODE_TC_TWO=0), at the shapes the performance work targets (256 x 1024 and
 * 1 x 512 / 2048 with Qwen3-0.6B's 16/8 heads), mixed lengths, single requests that split, a
 * table much wider than the keys (empty splits), and the staged fallback (odd head dims, GQA
 * 16, caches not 16-byte aligned). */
static void rig__attention_decode_cases(const char *path)
{
    static const int64_t ratios[] = {1, 2, 4, 8};
    char what[128];
    for (size_t g = 0; g < RIG_ARRAY_LEN(ratios); g++) {
        rig__reset(1300 + g);
        snprintf(what, sizeof what, "decode 257 requests GQA %lld [%s]", (long long)ratios[g], path);
        rig__decode_case(
            what, (struct rig__decode_shape){257, 257, 1, 600, 600, 8, 8 / ratios[g], 128, 0});
        rig__reset(1310 + g);
        snprintf(what, sizeof what, "decode 1 request GQA %lld (splits) [%s]", (long long)ratios[g],
                 path);
        rig__decode_case(
            what, (struct rig__decode_shape){1, 1, 1, 3000, 3000, 16, 16 / ratios[g], 128, 0});
        static const int64_t dims[] = {64, 256};
        for (size_t i = 0; i < RIG_ARRAY_LEN(dims); i++) {
            rig__reset(1330 + g * 10 + i);
            snprintf(what, sizeof what, "decode 33 requests GQA %lld D%lld [%s]",
                     (long long)ratios[g], (long long)dims[i], path);
            rig__decode_case(what, (struct rig__decode_shape){33, 33, 1, 700, 700, 8, 8 / ratios[g],
                                                              dims[i], 0});
        }
    }
    static const struct {
        const char *what;
        uint64_t seed;
        struct rig__decode_shape shape;
    } cases[] = {
        {"decode context 1", 1320, {1, 1, 1, 1, 1, 4, 4, 64, 0}},
        {"decode context 40960", 1321, {1, 1, 1, 40960, 40960, 8, 1, 128, 0}},
        {"decode D40", 1322, {3, 3, 1, 100, 100, 4, 2, 40, 0}},
        {"decode D80", 1323, {5, 5, 1, 300, 300, 8, 2, 80, 0}},
        {"decode GQA 16 (staged path)", 1324, {4, 4, 1, 500, 500, 16, 1, 128, 0}},
        {"decode 256 x 1024, 16/8 heads", 1325, {256, 16, 1024, 1024, 1024, 16, 8, 128, 0}},
        {"decode 256 x 1024, 32/8 heads D64", 1333, {256, 16, 1024, 1024, 1024, 32, 8, 64, 0}},
        {"decode 1 x 512, 16/8 heads", 1326, {1, 1, 512, 512, 512, 16, 8, 128, 0}},
        {"decode 1 x 2048, 16/8 heads", 1327, {1, 1, 2048, 2048, 2048, 16, 8, 128, 0}},
        {"decode 8 x 512, 16/8 heads", 1331, {8, 8, 512, 512, 512, 16, 8, 128, 0}},
        {"decode 2 x 5000, 32/8 heads", 1332, {2, 2, 5000, 5000, 5000, 32, 8, 128, 0}},
        {"decode 96 mixed 1 .. 2000, 16/8 heads", 1328, {96, 16, 1, 2000, 2000, 16, 8, 128, 0}},
        {"decode caches 8 bytes off (staged path)", 1390, {7, 7, 1, 300, 300, 16, 8, 128, 4}},
        {"decode 3 x <= 100 in a 4096-wide table", 1329, {3, 3, 1, 100, 4096, 16, 8, 128, 0}},
    };
    for (size_t c = 0; c < RIG_ARRAY_LEN(cases); c++) {
        rig__reset(cases[c].seed);
        snprintf(what, sizeof what, "%s [%s]", cases[c].what, path);
        rig__decode_case(what, cases[c].shape);
    }
}

static void test_attention_decode(void **state)
{
    (void)state;
    assert_int_equal(setenv("RIG_DECODE_TC", "1", 1), 0); /* every shape it runs */
    rig__attention_decode_cases("tensor cores where they run");
    assert_int_equal(setenv("RIG_DECODE_TC", "0", 1), 0);
    rig__attention_decode_cases("register path");
    assert_int_equal(unsetenv("RIG_DECODE_TC"), 0);
}

/* attention_decode_store (q/k norm + RoPE + the K/V store, then decode attention, as one op)
 * against the simulator's composition of the two ops: each request its own page-table row,
 * token r its newest position (out_loc[r] the row's slot at kv_len[r] - 1, positions[r] =
 * kv_len[r] - 1), q, k, v views of one qkv buffer as the model has them. The output and both
 * caches are compared (q and k are scratch: hal/ops.h); untouched cache slots must keep their
 * values (within the tolerance's reach: every other slot equal). With RIG_DECODE_TC=0 and
 * RIG_DECODE_STORE_FUSED=1 the store runs in the register path's prologue at every shape, and
 * the op is run twice more for the same bits (its inputs unchanged); then with the defaults
 * (the prologue in the narrow layout from 64 rows, else qk_norm_rope_store's kernel first) and
 * RIG_DECODE_TC=1 (the tensor-core kernel wherever it runs, after the store's kernel). */
struct rig__store_case {
    int64_t requests, len_min, len_max, hq, hk, d;
    bool norm, llama3;
};

static void rig__decode_store_case(const char *what, struct rig__store_case c, bool register_path)
{
    int64_t R = c.requests, hq = c.hq, hk = c.hk, d = c.d, width = (hq + 2 * hk) * d;
    struct rig__kv_world w = rig__kv_world(hk, d, R, c.len_max);
    struct rig__pair *qkv = rig__pair_new((size_t)(R * width * 2));
    struct rig__pair *out = rig__pair_new((size_t)(R * hq * d * 2));
    struct rig__pair *meta = rig__pair_new((size_t)(4 * R) * 4);
    struct rig__pair *norms = rig__pair_new((size_t)(2 * d * 2));
    rig__bf16_random(qkv, (size_t)(R * width), -3, 3);
    rig__bf16_random(norms, (size_t)(2 * d), 0.5f, 1.5f);
    int32_t *table_idx = meta->host, *kv_len = table_idx + R, *pos = kv_len + R, *loc = pos + R;
    const int32_t *table = w.page_table->host;
    for (int64_t r = 0; r < R; r++) {
        table_idx[r] = (int32_t)r;
        kv_len[r] = r == 0 ? (int32_t)c.len_max
                           : (int32_t)rig_test_rng_int(&rig__rng, c.len_min, c.len_max);
        pos[r] = kv_len[r] - 1;
        loc[r] = table[r * w.cols + kv_len[r] - 1];
    }
    struct rig_op op = {.kind = RIG_OP_ATTENTION_DECODE_STORE};
    struct rig_op_qk_norm_rope_store *p = &op.u.attention_decode_store.store;
    uint16_t *base = qkv->host;
    p->q = rig_tensor_3d(base, RIG_DTYPE_BF16, R, hq, d);
    p->k = rig_tensor_3d(base + hq * d, RIG_DTYPE_BF16, R, hk, d);
    p->v = rig_tensor_3d(base + (hq + hk) * d, RIG_DTYPE_BF16, R, hk, d);
    p->q.stride[0] = p->k.stride[0] = p->v.stride[0] = width;
    p->k_cache = rig_tensor_3d(w.k_cache->host, RIG_DTYPE_BF16, w.slots, hk, d);
    p->v_cache = rig_tensor_3d(w.v_cache->host, RIG_DTYPE_BF16, w.slots, hk, d);
    uint16_t *weights = norms->host;
    p->q_norm = c.norm ? rig_tensor_1d(weights, RIG_DTYPE_BF16, d) : rig_tensor_none();
    p->k_norm = c.norm ? rig_tensor_1d(weights + d, RIG_DTYPE_BF16, d) : rig_tensor_none();
    p->positions = rig_tensor_1d(pos, RIG_DTYPE_I32, R);
    p->out_loc = rig_tensor_1d(loc, RIG_DTYPE_I32, R);
    p->eps = 1e-6f;
    p->params.theta = c.llama3 ? 500000.0f : 1000000.0f;
    if (c.llama3) {
        p->params.scaling = RIG_ROPE_SCALING_LLAMA3;
        p->params.factor = 32.0f;
        p->params.low_freq_factor = 1.0f;
        p->params.high_freq_factor = 4.0f;
        p->params.original_max_position = 8192;
    }
    struct rig_op_attention_decode *a = &op.u.attention_decode_store.attend;
    a->out = rig_tensor_3d(out->host, RIG_DTYPE_BF16, R, hq, d);
    a->q = p->q;
    a->k_cache = p->k_cache;
    a->v_cache = p->v_cache;
    a->page_table = rig_tensor_2d(w.page_table->host, RIG_DTYPE_I32, w.rows, w.cols);
    a->table_idx = rig_tensor_1d(table_idx, RIG_DTYPE_I32, R);
    a->kv_len = rig_tensor_1d(kv_len, RIG_DTYPE_I32, R);
    a->scale = 1.0f / sqrtf((float)d);
    assert_int_equal(rig_hal_op_check(&op, NULL, 0), RIG_OK);
    printf("  %s\n", what);
    rig__run_both(&op, &out, 1);
    size_t cache_values = (size_t)(w.slots * hk * d);
    rig__expect_close(what, out, RIG_DTYPE_BF16, (size_t)(R * hq * d), 1e-6);
    rig__expect_close("k_cache (the newest keys normed, rotated)", w.k_cache, RIG_DTYPE_BF16,
                      cache_values, 1e-6);
    rig__expect_equal("v_cache", w.v_cache);
    if (register_path) rig__expect_repeatable(what, &op, out);
}

static void test_attention_decode_store(void **state)
{
    (void)state;
    static const struct rig__store_case cases[] = {
        {1, 512, 512, 16, 8, 128, true, false},    /* Qwen3-0.6B, batch 1 */
        {1, 3000, 3000, 16, 8, 128, true, false},  /* a row of many splits */
        {8, 1, 600, 16, 8, 128, true, false},      /* mixed lengths, one of 1 */
        {1, 2048, 2048, 32, 8, 128, true, false},  /* Qwen3-8B: the wide layout */
        {64, 1, 700, 32, 8, 128, true, false},     /* big enough for tensor cores */
        {1, 512, 512, 32, 8, 64, false, true},     /* Llama-3.2-1B: no norm, llama3 RoPE */
        {96, 1, 500, 32, 8, 64, false, true},
        {5, 1, 900, 8, 8, 128, true, false},       /* GQA 1 */
        {3, 1, 400, 64, 8, 128, true, false},      /* GQA 8 */
        {4, 1, 300, 16, 8, 256, true, false},      /* D 256 */
        {256, 1, 300, 16, 8, 128, true, false},    /* a full batch */
    };
    char what[160];
    for (int tc = 0; tc <= 1; tc++) {
        assert_int_equal(setenv("RIG_DECODE_TC", tc ? "1" : "0", 1), 0);
        if (tc == 0) assert_int_equal(setenv("RIG_DECODE_STORE_FUSED", "1", 1), 0);
        else assert_int_equal(unsetenv("RIG_DECODE_STORE_FUSED"), 0);
        for (size_t i = 0; i < RIG_ARRAY_LEN(cases); i++) {
            rig__reset(1700 + i);
            const struct rig__store_case *c = &cases[i];
            snprintf(what, sizeof what,
                     "decode+store %lld x %lld..%lld, %lld/%lld heads D%lld norm %d [%s]",
                     (long long)c->requests, (long long)c->len_min, (long long)c->len_max,
                     (long long)c->hq, (long long)c->hk, (long long)c->d, c->norm,
                     tc ? "defaults, tensor cores where they run" : "prologue everywhere");
            rig__decode_store_case(what, *c, tc == 0);
        }
    }
    assert_int_equal(unsetenv("RIG_DECODE_TC"), 0);
}

/* One decode op captured into a graph once (batch `requests`, a 4096-wide table: the most
 * splits) and replayed at kv_len 512, 37, 4096, 1, 2000, 64: every replay runs a different
 * number of active splits per row, so a split-merge arrival counter left non-zero by one
 * launch would make the next one merge too early or never (poisoned output). Each replay
 * must equal the eager run bit for bit and match the simulator. */
static void rig__decode_graph_case(const char *what, int64_t requests, int64_t hq, int64_t hk)
{
    static const int32_t lengths[] = {512, 37, 4096, 1, 2000, 64};
    int64_t d = 128, cols = 4096;
    struct rig__kv_world w = rig__kv_world(hk, d, requests, cols);
    struct rig__pair *q = rig__pair_new((size_t)(requests * hq * d * 2));
    struct rig__pair *out = rig__pair_new((size_t)(requests * hq * d * 2));
    struct rig__pair *meta = rig__pair_new((size_t)(2 * requests) * 4);
    int32_t *table_idx = meta->host, *kv_len = table_idx + requests;
    struct rig_op op = rig__decode_op(&w, q, out, meta, requests, hq, 1.0f / sqrtf((float)d));
    struct rig_op device_op = rig__to_device(&op);
    struct rig_graph *graph = NULL;
    assert_int_equal(rig_hal_graph_capture_begin(rig__stream), RIG_OK);
    assert_int_equal(rig_hal_op(rig__stream, &device_op), RIG_OK);
    assert_int_equal(rig_hal_graph_capture_end(rig__stream, &graph), RIG_OK);
    void *replayed = malloc(out->bytes);
    assert_non_null(replayed);
    char line[96];
    for (size_t round = 0; round < RIG_ARRAY_LEN(lengths); round++) {
        rig__bf16_random(q, (size_t)(requests * hq * d), -2, 2);
        for (int64_t r = 0; r < requests; r++) {
            table_idx[r] = (int32_t)(requests - 1 - r);
            /* Row 0 at the round's length, the others at lengths derived from it. */
            kv_len[r] = (int32_t)((lengths[round] + 977 * r - 1) % cols + 1);
        }
        rig__run_both(&op, &out, 1); /* eager on the GPU, then the reference */
        assert_int_equal(
            rig_hal_buffer_fill(rig__stream, out->buffer, 0, 0xffffffffu, out->bytes / 4), RIG_OK);
        assert_int_equal(rig_hal_graph_launch(graph, rig__stream), RIG_OK);
        assert_int_equal(rig_hal_buffer_download(rig__stream, out->buffer, 0, replayed, out->bytes),
                         RIG_OK);
        assert_int_equal(rig_hal_stream_synchronize(rig__stream), RIG_OK);
        assert_memory_equal(replayed, out->result, out->bytes);
        snprintf(line, sizeof line, "%s, kv_len %d", what, lengths[round]);
        rig__expect_close(line, out, RIG_DTYPE_BF16, (size_t)(requests * hq * d), 1e-6);
    }
    free(replayed);
    rig_hal_graph_destroy(graph);
}

/* The decode graph replayed at changing kv_len, on both decode paths (RIG_DECODE_TC 0 and 1):
 * batch 1 (Qwen3's 16/8 heads and a GQA-8 group), 3 rows of different lengths, and 24 rows of
 * Qwen3-8B's 32/8 heads. */
static void test_attention_decode_graph(void **state)
{
    (void)state;
    static const char *const paths[] = {"0", "1"};
    static const struct {
        uint64_t seed;
        int64_t requests, hq, hk;
    } cases[] = {{1395, 1, 16, 8}, {1396, 1, 32, 4}, {1397, 3, 16, 8}, {1398, 24, 32, 8}};
    char what[80];
    for (size_t p = 0; p < RIG_ARRAY_LEN(paths); p++) {
        assert_int_equal(setenv("RIG_DECODE_TC", paths[p], 1), 0);
        for (size_t c = 0; c < RIG_ARRAY_LEN(cases); c++) {
            rig__reset(cases[c].seed);
            snprintf(what, sizeof what, "decode graph %lld x %lld/%lld [RIG_DECODE_TC=%s]",
                     (long long)cases[c].requests, (long long)cases[c].hq,
                     (long long)cases[c].hk, paths[p]);
            rig__decode_graph_case(what, cases[c].requests, cases[c].hq, cases[c].hk);
        }
    }
    assert_int_equal(unsetenv("RIG_DECODE_TC"), 0);
}

/* --- sampling ------------------------------------------------------------------------------ */

/* One sample case: rows of logits uniform in [-8, 8] (`stride` floats apart, >= vocab: a
 * padded stride takes the kernels' scalar path), row r of kind (first_kind + r) % 6:
 * 0 greedy, 1 temperature only, 2 top-k, 3 top-p (every other one peaked: the nucleus in a
 * few hundred tokens), 4 top-k 40 + top-p, 5 tiny top-p (greedy over z). Row 1 has a tie at
 * the top. With `min_p`, two rows in three also get a min_p in [0.001, 0.5] on top of their
 * kind. With `masked`, logits [vocab / 8, 5 vocab / 8) of every row are -Inf (a grammar's
 * mask: whole chunks of pass 1 see no finite logit). Tokens must equal the simulator's. */
static void rig__sample_case_full(int64_t rows, int64_t vocab, int64_t stride, int first_kind,
                                  uint64_t seed, bool min_p, bool masked)
{
    rig__reset(seed);
    struct rig__pair *logits = rig__pair_new((size_t)(rows * stride) * 4);
    struct rig__pair *tokens = rig__pair_new((size_t)rows * 4);
    struct rig__pair *params = rig__pair_new((size_t)rows * 4 * 7);
    float *l = logits->host;
    for (int64_t i = 0; i < rows * stride; i++)
        l[i] = rig_test_rng_float(&rig__rng, -8, 8);
    if (rows > 1 && vocab > 5) l[stride + 3] = l[stride + 5] = 30.0f; /* a tie at the top */
    float *temperature = params->host, *top_p = temperature + rows;
    int32_t *top_k = (int32_t *)(top_p + rows), *position = top_k + rows;
    uint64_t *seeds = (uint64_t *)(position + rows);
    for (int64_t r = 0; r < rows; r++) {
        int kind = (int)((r + first_kind) % 6);
        temperature[r] = kind == 0 ? 0.0f : rig_test_rng_float(&rig__rng, 0.3f, 1.5f);
        top_k[r] = kind == 2 ? (int32_t)rig_test_rng_int(&rig__rng, 1, 50) : (kind == 4 ? 40 : 0);
        top_p[r] = kind == 3 || kind == 4 ? rig_test_rng_float(&rig__rng, 0.05f, 0.95f) : 1.0f;
        if (kind == 5) top_p[r] = 1e-6f; /* tiny top-p: greedy over z */
        if (kind == 3 && (r + first_kind) % 12 == 9) { /* a peaked row */
            for (int64_t j = 0; j < vocab && j < 300; j++)
                l[r * stride + (j * 7919) % vocab] += 12.0f;
        }
        seeds[r] = rig_test_rng_next(&rig__rng);
        position[r] = (int32_t)rig_test_rng_int(&rig__rng, 0, 5000);
        for (int64_t j = vocab / 8; masked && j < 5 * vocab / 8; j++)
            l[r * stride + j] = -INFINITY;
    }
    struct rig_op op = {.kind = RIG_OP_SAMPLE};
    struct rig_op_sample *s = &op.u.sample;
    s->tokens = rig_tensor_1d(tokens->host, RIG_DTYPE_I32, rows);
    s->logits = rig_tensor_2d(l, RIG_DTYPE_F32, rows, vocab);
    s->logits.stride[0] = stride;
    s->temperature = rig_tensor_1d(temperature, RIG_DTYPE_F32, rows);
    s->top_k = rig_tensor_1d(top_k, RIG_DTYPE_I32, rows);
    s->top_p = rig_tensor_1d(top_p, RIG_DTYPE_F32, rows);
    s->seed = rig_tensor_1d(seeds, RIG_DTYPE_I64, rows);
    s->position = rig_tensor_1d(position, RIG_DTYPE_I32, rows);
    float *min_ps = (float *)(seeds + rows);
    for (int64_t r = 0; r < rows; r++)
        min_ps[r] = r % 3 == 0 ? 0.0f : rig_test_rng_float(&rig__rng, 0.001f, 0.5f);
    if (min_p) s->min_p = rig_tensor_1d(min_ps, RIG_DTYPE_F32, rows);
    rig__run_both(&op, &tokens, 1);
    int32_t *gpu = tokens->result, *ref = tokens->host;
    int64_t differ = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (gpu[r] != ref[r]) {
            printf("    row %lld: gpu %d sim %d (T %.3f k %d p %.3g)\n", (long long)r, gpu[r],
                   ref[r], temperature[r], top_k[r], top_p[r]);
            differ++;
        }
    }
    printf("    sample %lld x %lld (stride %lld, kinds from %d%s%s): %lld rows differ\n",
           (long long)rows, (long long)vocab, (long long)stride, first_kind,
           min_p ? ", min_p" : "", masked ? ", masked" : "", (long long)differ);
    assert_int_equal(differ, 0);
}

static void rig__sample_case_min_p(int64_t rows, int64_t vocab, int64_t stride, int first_kind,
                                   uint64_t seed, bool min_p)
{
    rig__sample_case_full(rows, vocab, stride, first_kind, seed, min_p, false);
}

static void rig__sample_case(int64_t rows, int64_t vocab, int64_t stride, int first_kind,
                             uint64_t seed)
{
    rig__sample_case_min_p(rows, vocab, stride, first_kind, seed, false);
}

static void test_sample(void **state)
{
    (void)state;
    rig__sample_case(257, 1000, 1000, 0, 1400);
    rig__sample_case(1, 7, 7, 0, 1401);
    rig__sample_case(24, 151936, 151936, 0, 1402);
    /* Batch 1 over Qwen3's vocabulary, each kind alone: the many-chunk pass 1. */
    for (int kind = 0; kind < 6; kind++)
        rig__sample_case(1, 151936, 151936, kind, 1410 + (uint64_t)kind);
    rig__sample_case(256, 151936, 151936, 0, 1403); /* a full decode batch, mixed kinds */
    rig__sample_case(3, 1000, 1000, 1, 1404);       /* vocab under one chunk */
    rig__sample_case(6, 1000, 1003, 0, 1405);       /* padded rows: the scalar pass 1 */
    rig__sample_case(1, 7, 7, 1, 1406);             /* tiny, sampled */
    rig__sample_case(6, 5000, 5001, 0, 1407);       /* padded rows, several chunks */
    /* Masked rows, every kind; top-p alone (the whole row's mass from pass 1's chunks, some of
     * them -Inf only) at batch 1 and with min_p. */
    rig__sample_case_full(6, 151936, 151936, 0, 1408, false, true);
    rig__sample_case_full(1, 151936, 151936, 3, 1409, false, true);
    rig__sample_case_full(3, 151936, 151936, 3, 1439, true, true);
}

/* min_p on every path: each kind alone over Qwen3's vocabulary (temperature only with
 * min_p takes the whole-row cut; top-p the candidate list), mixed batches, a small vocab. */
static void test_sample_min_p(void **state)
{
    (void)state;
    for (int kind = 0; kind < 6; kind++)
        rig__sample_case_min_p(3, 151936, 151936, kind, 1420 + (uint64_t)kind, true);
    rig__sample_case_min_p(64, 151936, 151936, 0, 1427, true);
    rig__sample_case_min_p(257, 1000, 1000, 0, 1428, true);
    rig__sample_case_min_p(6, 5000, 5001, 0, 1429, true);
}

/* The sampler's cluster-fit guard (cuda/ops/sample.cu, rig__cluster_size). First the device's
 * answers, as the guard was told them: a cluster of one block is a plain launch and always
 * fits, so 0 there would mean the query itself is asked wrongly, and every batch would fall
 * back to one block without a word; a whole Hopper GPU (100 multiprocessors or more, no MIG
 * slice) holds a cluster of 8 (pass 2 has launched such clusters there). Then the sampling
 * cases that take clusters (batches of 1 to 24 rows) again with the size capped at 2 and at 1
 * (RIG_SAMPLE_CLUSTER_MAX, read at every launch): the fallback path on a full GPU, and 0 rows
 * may differ from the simulator at any size. */
static void test_sample_cluster_cap(void **state)
{
    (void)state;
    int ordinal = 0, sm_count = 0, major = 0;
    assert_int_equal(cudaGetDevice(&ordinal), cudaSuccess);
    assert_int_equal(
        cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, ordinal), cudaSuccess);
    assert_int_equal(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal), cudaSuccess);
    printf("    clusters held at once: size 1 %d, 2 %d, 4 %d, 8 %d (%d SMs); batch 1 takes %d\n",
           rig_cuda_sample_cluster_fit(1), rig_cuda_sample_cluster_fit(2),
           rig_cuda_sample_cluster_fit(4), rig_cuda_sample_cluster_fit(8), sm_count,
           rig_cuda_sample_cluster(1, sm_count));
    assert_true(rig_cuda_sample_cluster_fit(1) > 0);
    if (major == 9 && sm_count >= 100) assert_true(rig_cuda_sample_cluster_fit(8) > 0);
    const char *caps[2] = {"2", "1"};
    for (int c = 0; c < 2; c++) {
        assert_int_equal(setenv("RIG_SAMPLE_CLUSTER_MAX", caps[c], 1), 0);
        int32_t cap = (int32_t)atoi(caps[c]);
        for (int64_t rows = 1; rows <= 64; rows *= 2)
            assert_true(rig_cuda_sample_cluster(rows, sm_count) <= cap);
        printf("  cluster size at most %s:\n", caps[c]);
        for (int kind = 0; kind < 6; kind++)
            rig__sample_case(1, 151936, 151936, kind, 1430 + (uint64_t)kind);
        for (int kind = 0; kind < 6; kind++)
            rig__sample_case_min_p(3, 151936, 151936, kind, 1440 + (uint64_t)kind, true);
        rig__sample_case(24, 151936, 151936, 0, 1436);
        rig__sample_case(6, 5000, 5001, 0, 1437); /* padded rows, several chunks */
        rig__sample_case(1, 7, 7, 1, 1438);       /* tiny, sampled */
        rig__sample_case_full(6, 151936, 151936, 0, 1408, false, true); /* masked */
    }
    assert_int_equal(unsetenv("RIG_SAMPLE_CLUSTER_MAX"), 0);
}

/* Penalties: rows of `vocab` logits, histories from a pool of `pool_rows` x `max_len` ids
 * (ids from a range of `distinct`, so they repeat), random lengths (0 and max_len among
 * them), generated counts (negative and past the length among them) and penalties. The
 * logits must equal the simulator's bit for bit. */
static void rig__penalize_case(int64_t rows, int64_t vocab, int64_t pool_rows, int64_t max_len,
                               int64_t distinct, uint64_t seed)
{
    rig__reset(seed);
    struct rig__pair *logits = rig__pair_new((size_t)(rows * vocab) * 4);
    struct rig__pair *counts = rig__pair_new((size_t)(rows * vocab) * 4);
    struct rig__pair *pool = rig__pair_new((size_t)(pool_rows * max_len) * 4);
    struct rig__pair *meta = rig__pair_new((size_t)rows * 4 * 6);
    float *l = logits->host;
    for (int64_t i = 0; i < rows * vocab; i++) l[i] = rig_test_rng_float(&rig__rng, -8, 8);
    int32_t *ids = pool->host;
    for (int64_t i = 0; i < pool_rows * max_len; i++)
        ids[i] = (int32_t)rig_test_rng_int(&rig__rng, 0, distinct - 1);
    int32_t *table_idx = meta->host, *kv_len = table_idx + rows, *out_len = kv_len + rows;
    float *repetition = (float *)(out_len + rows), *frequency = repetition + rows;
    float *presence = frequency + rows;
    for (int64_t r = 0; r < rows; r++) {
        table_idx[r] = (int32_t)rig_test_rng_int(&rig__rng, 0, pool_rows - 1);
        kv_len[r] = r % 5 == 0 ? (int32_t)(r % 10 == 0 ? 0 : max_len)
                               : (int32_t)rig_test_rng_int(&rig__rng, 1, max_len);
        out_len[r] = (int32_t)rig_test_rng_int(&rig__rng, -2, kv_len[r] + 2);
        repetition[r] = r % 4 == 0 ? 1.0f : rig_test_rng_float(&rig__rng, 0.1f, 2.0f);
        frequency[r] = r % 4 == 1 ? 0.0f : rig_test_rng_float(&rig__rng, -2.0f, 2.0f);
        presence[r] = r % 4 == 2 ? 0.0f : rig_test_rng_float(&rig__rng, -2.0f, 2.0f);
    }
    struct rig_op op = {.kind = RIG_OP_PENALIZE};
    struct rig_op_penalize *p = &op.u.penalize;
    p->logits = rig_tensor_2d(l, RIG_DTYPE_F32, rows, vocab);
    p->counts = rig_tensor_2d(counts->host, RIG_DTYPE_I32, rows, vocab);
    p->token_pool = rig_tensor_2d(ids, RIG_DTYPE_I32, pool_rows, max_len);
    p->table_idx = rig_tensor_1d(table_idx, RIG_DTYPE_I32, rows);
    p->kv_len = rig_tensor_1d(kv_len, RIG_DTYPE_I32, rows);
    p->out_len = rig_tensor_1d(out_len, RIG_DTYPE_I32, rows);
    p->repetition = rig_tensor_1d(repetition, RIG_DTYPE_F32, rows);
    p->frequency = rig_tensor_1d(frequency, RIG_DTYPE_F32, rows);
    p->presence = rig_tensor_1d(presence, RIG_DTYPE_F32, rows);
    /* In place: the logits are an input, so they are not poisoned; the entries the op must
     * not touch are checked by the same comparison. counts is scratch: not compared. */
    rig__run_both(&op, NULL, 0);
    rig__expect_equal("penalize logits", logits);
    printf("    penalize %lld x %lld, histories up to %lld of %lld ids: equal\n", (long long)rows,
           (long long)vocab, (long long)max_len, (long long)distinct);
}

static void test_penalize(void **state)
{
    (void)state;
    rig__penalize_case(7, 1000, 9, 64, 20, 1430);
    rig__penalize_case(64, 151936, 65, 4096, 500, 1431);   /* a decode batch, long histories */
    rig__penalize_case(3, 151936, 4, 40960, 151936, 1432); /* full context, few repeats */
    rig__penalize_case(1, 5, 1, 3000, 5, 1433); /* every id repeated hundreds of times */
}

/* Logprobs: rows of logits in [-8, 8] (a tie at the top of row 1), temperatures 0, random
 * and 2, random tokens, `top` alternatives (0: absent). Top ids equal the simulator's; the
 * logprobs within 1e-5 (the float64 sum runs in another order). */
static void rig__logprobs_case(int64_t rows, int64_t vocab, int64_t top, uint64_t seed)
{
    rig__reset(seed);
    struct rig__pair *logits = rig__pair_new((size_t)(rows * vocab) * 4);
    struct rig__pair *meta = rig__pair_new((size_t)rows * 4 * 2);
    struct rig__pair *logprob = rig__pair_new((size_t)rows * 4);
    struct rig__pair *ids = rig__pair_new((size_t)(rows * top) * 4);
    struct rig__pair *values = rig__pair_new((size_t)(rows * top) * 4);
    float *l = logits->host;
    for (int64_t i = 0; i < rows * vocab; i++) l[i] = rig_test_rng_float(&rig__rng, -8, 8);
    if (rows > 1 && vocab > 5) l[vocab + 3] = l[vocab + 5] = 30.0f;
    float *temperature = meta->host;
    int32_t *token = (int32_t *)(temperature + rows);
    for (int64_t r = 0; r < rows; r++) {
        float random = rig_test_rng_float(&rig__rng, 0.3f, 1.5f);
        temperature[r] = r % 3 == 0 ? 0.0f : (r % 3 == 1 ? 2.0f : random);
        token[r] = (int32_t)rig_test_rng_int(&rig__rng, 0, vocab - 1);
    }
    struct rig_op op = {.kind = RIG_OP_LOGPROBS};
    struct rig_op_logprobs *p = &op.u.logprobs;
    p->logprob = rig_tensor_1d(logprob->host, RIG_DTYPE_F32, rows);
    if (top > 0) {
        p->top_ids = rig_tensor_2d(ids->host, RIG_DTYPE_I32, rows, top);
        p->top_logprobs = rig_tensor_2d(values->host, RIG_DTYPE_F32, rows, top);
    }
    p->logits = rig_tensor_2d(l, RIG_DTYPE_F32, rows, vocab);
    p->temperature = rig_tensor_1d(temperature, RIG_DTYPE_F32, rows);
    p->tokens = rig_tensor_1d(token, RIG_DTYPE_I32, rows);
    struct rig__pair *outputs[3] = {logprob, ids, values};
    rig__run_both(&op, outputs, top > 0 ? 3 : 1);
    if (top > 0) rig__expect_equal("logprobs top ids", ids);
    double diff = rig_test_max_abs_diff(logprob->result, logprob->host, (size_t)rows);
    if (top > 0)
        diff = fmax(diff, rig_test_max_abs_diff(values->result, values->host,
                                                (size_t)(rows * top)));
    printf("    logprobs %lld x %lld, top %lld: max |d| %.3g\n", (long long)rows, (long long)vocab,
           (long long)top, diff);
    assert_true(diff <= 1e-5);
}

static void test_logprobs(void **state)
{
    (void)state;
    rig__logprobs_case(5, 1000, 20, 1440);
    rig__logprobs_case(64, 151936, 20, 1441);
    rig__logprobs_case(3, 151936, 0, 1442);
    rig__logprobs_case(2, 20, 20, 1443); /* N = V */
    rig__logprobs_case(257, 1000, 5, 1444);
}

/* --- graphs, errors, devices ------------------------------------------------------------- */

/* Decode attention (split-KV, combine) and a biased GEMM (cuBLAS, scratch) captured once,
 * replayed on new inputs: attention bit for bit equal to eager runs and close to the
 * simulator; the GEMM equal to the eager GEMM to rounding. */
static void test_graph_replay(void **state)
{
    (void)state;
    rig__reset(1500);
    int64_t requests = 8, max_len = 500, hq = 8, hk = 2, d = 128;
    struct rig__kv_world w = rig__kv_world(hk, d, requests, max_len);
    struct rig__pair *q = rig__pair_new((size_t)(requests * hq * d * 2));
    struct rig__pair *out = rig__pair_new((size_t)(requests * hq * d * 2));
    struct rig__pair *meta = rig__pair_new((size_t)(2 * requests) * 4);
    int32_t *table_idx = meta->host, *kv_len = table_idx + requests;
    struct rig_op op = rig__decode_op(&w, q, out, meta, requests, hq, 0.088f);
    /* A biased GEMM after it: cuBLAS and the fp32 scratch under capture. */
    int64_t gm = requests, gn = 512, gk = 256;
    struct rig__pair *ga = rig__pair_new((size_t)(gm * gk * 2));
    struct rig__pair *gb = rig__pair_new((size_t)(gn * gk * 2));
    struct rig__pair *gbias = rig__pair_new((size_t)gn * 2);
    struct rig__pair *gc = rig__pair_new((size_t)(gm * gn * 2));
    rig__bf16_random(gb, (size_t)(gn * gk), -1, 1);
    rig__bf16_random(gbias, (size_t)gn, -1, 1);
    struct rig_op gemm = {.kind = RIG_OP_GEMM};
    gemm.u.gemm.out = rig_tensor_2d(gc->host, RIG_DTYPE_BF16, gm, gn);
    gemm.u.gemm.a = rig_tensor_2d(ga->host, RIG_DTYPE_BF16, gm, gk);
    gemm.u.gemm.b = rig_tensor_2d(gb->host, RIG_DTYPE_BF16, gn, gk);
    gemm.u.gemm.bias = rig_tensor_1d(gbias->host, RIG_DTYPE_BF16, gn);
    struct rig_op device_op = rig__to_device(&op);
    struct rig_op gemm_device = rig__to_device(&gemm);
    struct rig_graph *graph = NULL;
    assert_int_equal(rig_hal_graph_capture_begin(rig__stream), RIG_OK);
    assert_int_equal(rig_hal_buffer_upload(rig__stream, q->buffer, 0, q->host, 4), RIG_E_STATE);
    assert_int_equal(rig_hal_op(rig__stream, &device_op), RIG_OK);
    assert_int_equal(rig_hal_op(rig__stream, &gemm_device), RIG_OK);
    assert_int_equal(rig_hal_graph_capture_end(rig__stream, &graph), RIG_OK);
    assert_int_equal(rig_hal_graph_op_count(graph), 2);
    void *replayed = malloc(out->bytes);
    void *replayed_gemm = malloc(gc->bytes);
    assert_non_null(replayed);
    assert_non_null(replayed_gemm);
    for (int round = 0; round < 3; round++) {
        rig__bf16_random(q, (size_t)(requests * hq * d), -2, 2);
        for (int64_t r = 0; r < requests; r++) {
            table_idx[r] = (int32_t)r;
            kv_len[r] = (int32_t)rig_test_rng_int(&rig__rng, 1, max_len);
        }
        rig__bf16_random(ga, (size_t)(gm * gk), -1, 1);
        rig__run_both(&op, &out, 1); /* eager on the GPU, then the reference */
        assert_int_equal(rig_hal_op(rig__stream, &gemm_device), RIG_OK); /* eager GEMM */
        assert_int_equal(rig_hal_buffer_download(rig__stream, gc->buffer, 0, gc->result, gc->bytes),
                         RIG_OK);
        assert_int_equal(
            rig_hal_buffer_fill(rig__stream, out->buffer, 0, 0xffffffffu, out->bytes / 4), RIG_OK);
        assert_int_equal(
            rig_hal_buffer_fill(rig__stream, gc->buffer, 0, 0xffffffffu, gc->bytes / 4), RIG_OK);
        assert_int_equal(rig_hal_graph_launch(graph, rig__stream), RIG_OK);
        assert_int_equal(rig_hal_buffer_download(rig__stream, out->buffer, 0, replayed, out->bytes),
                         RIG_OK);
        assert_int_equal(
            rig_hal_buffer_download(rig__stream, gc->buffer, 0, replayed_gemm, gc->bytes), RIG_OK);
        assert_int_equal(rig_hal_stream_synchronize(rig__stream), RIG_OK);
        assert_memory_equal(replayed, out->result, out->bytes);
        /* cuBLAS may pick another algorithm under capture: equal to rounding, not bits. */
        struct rig__pair gemm_replay = {gc->result, replayed_gemm, NULL, gc->bytes};
        rig__expect_close("graph GEMM vs eager GEMM", &gemm_replay, RIG_DTYPE_BF16,
                          (size_t)(gm * gn), 1e-6);
        rig__expect_close("graph round vs simulator", out, RIG_DTYPE_BF16,
                          (size_t)(requests * hq * d), 2e-5);
    }
    free(replayed);
    free(replayed_gemm);
    rig_hal_graph_destroy(graph);
}

/* --- TP collectives over NCCL (needs two GPUs; passes vacuously on one) ------------------ */

#define RIG__TP_ELEMENTS 4099 /* not a multiple of anything NCCL tiles by */

struct rig__rank {
    struct rig_device *device;
    struct rig_stream *stream;
    struct rig_comm *comm;
    struct rig_buffer *data;     /* (RIG__TP_ELEMENTS) f32, all-reduced in place */
    struct rig_buffer *gathered; /* (ranks * RIG__TP_ELEMENTS) f32 */
    float host[RIG__TP_ELEMENTS];
    enum rig_status status;
};

/* One rank's thread: all-reduce then all-gather, as the scheduler thread of a TP rank would. */
static void *rig__rank_main(void *arg)
{
    struct rig__rank *rank = arg;
    int32_t ranks = rig_hal_comm_size(rank->comm);
    struct rig_op reduce = {.kind = RIG_OP_ALL_REDUCE};
    reduce.u.all_reduce.data =
        rig_tensor_1d(rig_hal_buffer_ptr(rank->data), RIG_DTYPE_F32, RIG__TP_ELEMENTS);
    reduce.u.all_reduce.comm = rank->comm;
    struct rig_op gather = {.kind = RIG_OP_ALL_GATHER};
    gather.u.all_gather.in = reduce.u.all_reduce.data;
    gather.u.all_gather.out =
        rig_tensor_2d(rig_hal_buffer_ptr(rank->gathered), RIG_DTYPE_F32, ranks, RIG__TP_ELEMENTS);
    gather.u.all_gather.comm = rank->comm;
    rank->status =
        rig_hal_buffer_upload(rank->stream, rank->data, 0, rank->host, sizeof rank->host);
    if (rank->status == RIG_OK) rank->status = rig_hal_op(rank->stream, &reduce);
    if (rank->status == RIG_OK) rank->status = rig_hal_op(rank->stream, &gather);
    if (rank->status == RIG_OK) rank->status = rig_hal_stream_synchronize(rank->stream);
    return NULL;
}

static void test_tp_collectives(void **state)
{
    (void)state;
    int32_t ranks = rig_cuda_device_count() >= 2 ? 2 : 0;
    if (ranks == 0) {
        printf("    one GPU: TP collectives not exercised\n");
        return;
    }
    struct rig_device *devices[2];
    struct rig_comm *comms[2];
    struct rig_device_config config = {.first_ordinal = 0};
    assert_int_equal(rig_hal_open("cuda", &config, ranks, devices), RIG_OK);
    assert_int_equal(rig_hal_comm_create(devices, ranks, comms), RIG_OK);
    static struct rig__rank rank[2];
    pthread_t threads[2];
    for (int32_t i = 0; i < ranks; i++) {
        rank[i].device = devices[i];
        rank[i].comm = comms[i];
        assert_int_equal(rig_hal_stream_create(devices[i], &rank[i].stream), RIG_OK);
        assert_int_equal(rig_hal_buffer_alloc(devices[i], sizeof rank[i].host,
                                              RIG_MEMORY_ACTIVATIONS, &rank[i].data),
                         RIG_OK);
        assert_int_equal(rig_hal_buffer_alloc(devices[i], 2 * sizeof rank[i].host,
                                              RIG_MEMORY_ACTIVATIONS, &rank[i].gathered),
                         RIG_OK);
        for (int32_t e = 0; e < RIG__TP_ELEMENTS; e++)
            rank[i].host[e] = (float)((e % 97) * (i + 1)); /* exact in f32 when summed */
    }
    for (int32_t i = 0; i < ranks; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, rig__rank_main, &rank[i]), 0);
    for (int32_t i = 0; i < ranks; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    for (int32_t i = 0; i < ranks; i++) {
        assert_int_equal(rank[i].status, RIG_OK);
        static float gathered[2 * RIG__TP_ELEMENTS];
        assert_int_equal(
            rig_hal_buffer_download(rank[i].stream, rank[i].gathered, 0, gathered, sizeof gathered),
            RIG_OK);
        assert_int_equal(rig_hal_stream_synchronize(rank[i].stream), RIG_OK);
        for (int32_t e = 0; e < 2 * RIG__TP_ELEMENTS; e++) {
            float expected = (float)((e % RIG__TP_ELEMENTS) % 97 * 3); /* 1x + 2x */
            if (gathered[e] != expected)
                fail_msg("rank %d element %d: %g, expected %g", i, e, gathered[e], expected);
        }
    }
    for (int32_t i = 0; i < ranks; i++) {
        rig_hal_buffer_free(rank[i].data);
        rig_hal_buffer_free(rank[i].gathered);
        rig_hal_stream_destroy(rank[i].stream);
        rig_hal_comm_destroy(comms[i]);
        rig_hal_close(devices[i]);
    }
    printf("    all_reduce + all_gather over 2 GPUs: exact\n");
}

static void test_errors_and_events(void **state)
{
    (void)state;
    rig__reset(1600);
    struct rig_buffer *huge = NULL;
    assert_int_equal(rig_hal_buffer_alloc(rig__device, (size_t)1 << 50, RIG_MEMORY_KV, &huge),
                     RIG_E_DEVICE_MEMORY);
    assert_null(huge);
    struct rig__pair *p = rig__pair_new(4096);
    assert_int_equal(rig_hal_buffer_fill(rig__stream, p->buffer, 0, 0x12345678u, 1024), RIG_OK);
    assert_int_equal(rig_hal_buffer_download(rig__stream, p->buffer, 0, p->result, 4096), RIG_OK);
    struct rig_event *start = NULL, *end = NULL;
    assert_int_equal(rig_hal_event_create(rig__device, &start), RIG_OK);
    assert_int_equal(rig_hal_event_create(rig__device, &end), RIG_OK);
    assert_int_equal(rig_hal_event_record(start, rig__stream), RIG_OK);
    assert_int_equal(rig_hal_event_record(end, rig__stream), RIG_OK);
    assert_int_equal(rig_hal_event_synchronize(end), RIG_OK);
    int64_t ns = -1;
    assert_int_equal(rig_hal_event_elapsed_ns(start, end, &ns), RIG_OK);
    assert_true(ns >= 0);
    for (int i = 0; i < 1024; i++)
        assert_int_equal(((uint32_t *)p->result)[i], 0x12345678u);
    rig_hal_event_destroy(start);
    rig_hal_event_destroy(end);
    int64_t t0 = rig_hal_now_ns(rig__device);
    rig_hal_host_wait_until_ns(rig__device, t0 + 2000000);
    assert_true(rig_hal_now_ns(rig__device) - t0 >= 2000000);
    const struct rig_device_info *info = rig_hal_device_info(rig__device);
    assert_string_equal(info->backend, "cuda");
    assert_true(info->memory_bytes > 0);
    assert_false(info->virtual_clock);
    struct rig_device *too_many[RIG_DEVICES_MAX];
    struct rig_device_config config = {.first_ordinal = rig_cuda_device_count()};
    assert_int_equal(rig_hal_open("cuda", &config, 1, too_many), RIG_E_NOT_FOUND);
}

/* --- timing (no reference: sizes the simulator would take minutes over) ----------------- */

/* The median of n timings (sorted in place: insertion sort). */
static double rig__median(double *times, int n)
{
    for (int i = 1; i < n; i++) {
        for (int j = i; j > 0 && times[j] < times[j - 1]; j--) {
            double swap = times[j];
            times[j] = times[j - 1];
            times[j - 1] = swap;
        }
    }
    return times[n / 2];
}

/* Device times of `reps` runs of issue(ctx) on the test stream after 2 warm-ups, in ms,
 * sorted ascending. */
static void rig__time_all(void (*issue)(const void *ctx), const void *ctx, int reps,
                          double *times)
{
    struct rig_event *start = NULL, *end = NULL;
    assert_int_equal(rig_hal_event_create(rig__device, &start), RIG_OK);
    assert_int_equal(rig_hal_event_create(rig__device, &end), RIG_OK);
    for (int i = -2; i < reps; i++) {
        assert_int_equal(rig_hal_event_record(start, rig__stream), RIG_OK);
        issue(ctx);
        assert_int_equal(rig_hal_event_record(end, rig__stream), RIG_OK);
        assert_int_equal(rig_hal_event_synchronize(end), RIG_OK);
        int64_t ns = 0;
        assert_int_equal(rig_hal_event_elapsed_ns(start, end, &ns), RIG_OK);
        if (i >= 0) times[i] = (double)ns * 1e-6;
    }
    rig_hal_event_destroy(start);
    rig_hal_event_destroy(end);
    (void)rig__median(times, reps); /* sorts them */
}

static void rig__issue_op(const void *op)
{
    assert_int_equal(rig_hal_op(rig__stream, (const struct rig_op *)op), RIG_OK);
}

/* Device times of `reps` (<= 32) runs of `op` after 2 warm-ups, in ms, sorted ascending. */
static void rig__time_op_all(const struct rig_op *op, int reps, double *times)
{
    assert_true(reps >= 1 && reps <= 32);
    rig__time_all(rig__issue_op, op, reps, times);
}

/* Median device time of `reps` (<= 32) runs of `op` on the stream, after 2 warm-ups, in ms. */
static double rig__time_op(const struct rig_op *op, int reps)
{
    double times[32];
    rig__time_op_all(op, reps, times);
    return times[reps / 2];
}

/* A device buffer of random bf16 values in [-1, 1). */
static struct rig__pair *rig__random_device_bf16(size_t n)
{
    struct rig__pair *p = rig__pair_new(n * 2);
    rig__bf16_random(p, n, -1, 1);
    assert_int_equal(rig_hal_buffer_upload(rig__stream, p->buffer, 0, p->host, p->bytes), RIG_OK);
    return p;
}

/* A device buffer of n bf16 values alternating 1.0 and 2^-7 (a fill: big K/V caches would
 * take seconds to randomise on the host; attention's work does not depend on the values). */
static struct rig__pair *rig__filled_device_bf16(size_t n)
{
    struct rig__pair *p = rig__pair_new(n * 2);
    assert_int_equal(rig_hal_buffer_fill(rig__stream, p->buffer, 0, 0x3c003f80u, p->bytes / 4),
                     RIG_OK);
    return p;
}

static void rig__time_prefill(int64_t q_len, int64_t cached)
{
    rig__reset(1700 + (uint64_t)q_len);
    int64_t hq = 32, hk = 8, d = 128, kv = q_len + cached;
    struct rig__pair *q = rig__random_device_bf16((size_t)(q_len * hq * d));
    struct rig__pair *out = rig__pair_new((size_t)(q_len * hq * d * 2));
    struct rig__pair *kc = rig__random_device_bf16((size_t)(kv * hk * d));
    struct rig__pair *vc = rig__random_device_bf16((size_t)(kv * hk * d));
    struct rig__pair *meta = rig__pair_new((size_t)(kv + 4) * 4);
    int32_t *m = meta->host; /* page table row [kv], table_idx, kv_len, cu_q[2] */
    for (int64_t i = 0; i < kv; i++)
        m[i] = (int32_t)((i * 7919) % kv);
    m[kv] = 0, m[kv + 1] = (int32_t)kv, m[kv + 2] = 0, m[kv + 3] = (int32_t)q_len;
    assert_int_equal(rig_hal_buffer_upload(rig__stream, meta->buffer, 0, m, meta->bytes), RIG_OK);
    struct rig_op op = {.kind = RIG_OP_ATTENTION_PREFILL};
    struct rig_op_attention_prefill *a = &op.u.attention_prefill;
    a->out = rig_tensor_3d(out->host, RIG_DTYPE_BF16, q_len, hq, d);
    a->q = rig_tensor_3d(q->host, RIG_DTYPE_BF16, q_len, hq, d);
    a->k_cache = rig_tensor_3d(kc->host, RIG_DTYPE_BF16, kv, hk, d);
    a->v_cache = rig_tensor_3d(vc->host, RIG_DTYPE_BF16, kv, hk, d);
    a->page_table = rig_tensor_2d(m, RIG_DTYPE_I32, 1, kv);
    a->table_idx = rig_tensor_1d(m + kv, RIG_DTYPE_I32, 1);
    a->kv_len = rig_tensor_1d(m + kv + 1, RIG_DTYPE_I32, 1);
    a->cu_q = rig_tensor_1d(m + kv + 2, RIG_DTYPE_I32, 2);
    a->scale = 0.088f;
    struct rig_op device_op = rig__to_device(&op);
    double ms = rig__time_op(&device_op, 5);
    /* causal: each query attends to cached + its own prefix; 4 flops per (q, k, d) */
    double pairs = (double)q_len * (double)cached + (double)q_len * (double)(q_len + 1) / 2;
    printf("    prefill %5lld new after %5lld cached, 32/8 heads, D128: %8.3f ms %6.1f TFLOP/s\n",
           (long long)q_len, (long long)cached, ms, 4.0 * pairs * hq * d / (ms * 1e9));
}

/* Median device time of `layers` copies of `op` captured in one graph and replayed, per copy:
 * what a model's decode step pays per layer (launch gaps inside a graph included). */
static double rig__time_op_graph(const struct rig_op *op, int layers)
{
    struct rig_graph *graph = NULL;
    assert_int_equal(rig_hal_graph_capture_begin(rig__stream), RIG_OK);
    for (int i = 0; i < layers; i++)
        assert_int_equal(rig_hal_op(rig__stream, op), RIG_OK);
    assert_int_equal(rig_hal_graph_capture_end(rig__stream, &graph), RIG_OK);
    struct rig_event *start = NULL, *end = NULL;
    assert_int_equal(rig_hal_event_create(rig__device, &start), RIG_OK);
    assert_int_equal(rig_hal_event_create(rig__device, &end), RIG_OK);
    double times[5];
    for (int i = -2; i < 5; i++) {
        assert_int_equal(rig_hal_event_record(start, rig__stream), RIG_OK);
        assert_int_equal(rig_hal_graph_launch(graph, rig__stream), RIG_OK);
        assert_int_equal(rig_hal_event_record(end, rig__stream), RIG_OK);
        assert_int_equal(rig_hal_event_synchronize(end), RIG_OK);
        int64_t ns = 0;
        assert_int_equal(rig_hal_event_elapsed_ns(start, end, &ns), RIG_OK);
        if (i >= 0) times[i] = (double)ns * 1e-6 / layers;
    }
    rig_hal_event_destroy(start);
    rig_hal_event_destroy(end);
    rig_hal_graph_destroy(graph);
    return rig__median(times, 5);
}

/* Decode at `requests` x `context` with hq/hk heads, D 128: eager, or (graph) per op of 28
 * captured in one graph (Qwen3-0.6B's layer count). */
/* A decode attention op on device data for timing, after rig__reset(seed): `requests` rows of
 * `context` keys, hq/hk heads, D 128, every row full; the page table maps slot i of the
 * flattened rows to (i * 7919) % slots when `scattered`, else to i. */
static struct rig_op rig__decode_timing_op(int64_t requests, int64_t context, int64_t hq,
                                           int64_t hk, uint64_t seed, bool scattered)
{
    rig__reset(seed);
    int64_t d = 128, slots = requests * context;
    struct rig__pair *q = rig__random_device_bf16((size_t)(requests * hq * d));
    struct rig__pair *out = rig__pair_new((size_t)(requests * hq * d * 2));
    struct rig__pair *kc = rig__filled_device_bf16((size_t)(slots * hk * d));
    struct rig__pair *vc = rig__filled_device_bf16((size_t)(slots * hk * d));
    struct rig__pair *meta = rig__pair_new((size_t)(slots + 2 * requests) * 4);
    int32_t *m = meta->host;
    for (int64_t i = 0; i < slots; i++)
        m[i] = (int32_t)(scattered ? (i * 7919) % slots : i);
    for (int64_t r = 0; r < requests; r++) {
        m[slots + r] = (int32_t)r;
        m[slots + requests + r] = (int32_t)context;
    }
    assert_int_equal(rig_hal_buffer_upload(rig__stream, meta->buffer, 0, m, meta->bytes), RIG_OK);
    struct rig_op op = {.kind = RIG_OP_ATTENTION_DECODE};
    struct rig_op_attention_decode *a = &op.u.attention_decode;
    a->out = rig_tensor_3d(out->host, RIG_DTYPE_BF16, requests, hq, d);
    a->q = rig_tensor_3d(q->host, RIG_DTYPE_BF16, requests, hq, d);
    a->k_cache = rig_tensor_3d(kc->host, RIG_DTYPE_BF16, slots, hk, d);
    a->v_cache = rig_tensor_3d(vc->host, RIG_DTYPE_BF16, slots, hk, d);
    a->page_table = rig_tensor_2d(m, RIG_DTYPE_I32, requests, context);
    a->table_idx = rig_tensor_1d(m + slots, RIG_DTYPE_I32, requests);
    a->kv_len = rig_tensor_1d(m + slots + requests, RIG_DTYPE_I32, requests);
    a->scale = 0.088f;
    return rig__to_device(&op);
}

static void rig__time_decode_heads(int64_t requests, int64_t context, int64_t hq, int64_t hk,
                                   bool graph)
{
    int64_t d = 128, slots = requests * context;
    struct rig_op device_op =
        rig__decode_timing_op(requests, context, hq, hk, 1800 + (uint64_t)requests, true);
    double ms = graph ? rig__time_op_graph(&device_op, 28) : rig__time_op(&device_op, 5);
    double bytes = 2.0 * (double)slots * (double)(hk * d * 2);
    printf("    decode %4lld x %5lld, %lld/%lld heads, D128%s: %8.4f ms %6.0f GB/s of K/V\n",
           (long long)requests, (long long)context, (long long)hq, (long long)hk,
           graph ? " (graph, per op)" : "", ms, bytes / (ms * 1e6));
}

static void rig__time_decode(int64_t requests, int64_t context)
{
    rig__time_decode_heads(requests, context, 32, 8, false);
}

struct rig__copy {
    struct rig_buffer *src, *dst;
    size_t bytes;
};

static void rig__issue_copy(const void *ctx)
{
    const struct rig__copy *c = ctx;
    assert_int_equal(rig_hal_buffer_copy(rig__stream, c->dst, 0, c->src, 0, c->bytes), RIG_OK);
}

/* Device-to-device copy bandwidth, bytes read plus written per second, over the median of 10
 * copies of 1 GiB (as `rig bench`'s floor, core/harness/bench/floors.c). */
static double rig__copy_bandwidth(void)
{
    size_t bytes = (size_t)1 << 30;
    struct rig_buffer *src = NULL, *dst = NULL;
    assert_int_equal(rig_hal_buffer_alloc(rig__device, bytes, RIG_MEMORY_ACTIVATIONS, &src),
                     RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(rig__device, bytes, RIG_MEMORY_ACTIVATIONS, &dst),
                     RIG_OK);
    assert_int_equal(rig_hal_buffer_fill(rig__stream, src, 0, 0x3f803f80u, bytes / 4), RIG_OK);
    struct rig__copy copy = {src, dst, bytes};
    double times[10];
    rig__time_all(rig__issue_copy, &copy, 10, times);
    rig_hal_buffer_free(dst);
    rig_hal_buffer_free(src);
    return 2.0 * (double)bytes / (rig__median(times, 10) * 1e-3);
}

/* Decode attention at `requests` x `context` with Qwen3-0.6B's heads (16/8, D 128), request
 * r's keys in slots r * context ... (as `rig bench attention` lays them out): 20 runs, their
 * median, fastest and slowest, and each as a fraction of `bandwidth` (the K/V bytes read over
 * the copy bandwidth, divided by the time). */
static void rig__time_decode_spread(int64_t requests, int64_t context, double bandwidth)
{
    int64_t hk = 8, d = 128, slots = requests * context;
    struct rig_op device_op =
        rig__decode_timing_op(requests, context, 16, hk, 1850 + (uint64_t)requests, false);
    double times[20];
    rig__time_op_all(&device_op, 20, times);
    double floor_ms = 2.0 * (double)slots * (double)(hk * d * 2) / bandwidth * 1e3;
    printf("    decode %3lld x %4lld, 16/8 heads, D128: median %7.1f us (%5.1f .. %5.1f), "
           "%4.1f %% of copy bandwidth (%4.1f .. %4.1f)\n",
           (long long)requests, (long long)context, times[10] * 1e3, times[0] * 1e3,
           times[19] * 1e3, 100.0 * floor_ms / times[10], 100.0 * floor_ms / times[19],
           100.0 * floor_ms / times[0]);
}

/* The decode attention targets (issue 18): 256 x 1024 and 64 x 8192 as fractions of the copy
 * bandwidth measured in the same process, with their spread over 20 runs; batch 1 x 512,
 * 1 x 2048 and 8 x 512 per op of a 28-layer graph; 1 x 32768 alone. Asserts only that they
 * run. */
static void test_attention_decode_timing(void **state)
{
    (void)state;
    double bandwidth = rig__copy_bandwidth();
    printf("    copy bandwidth (read + written): %.3f TB/s\n", bandwidth * 1e-12);
    for (int round = 0; round < 2; round++) {
        rig__time_decode_spread(256, 1024, bandwidth);
        rig__time_decode_spread(64, 8192, bandwidth);
    }
    rig__time_decode_heads(1, 512, 16, 8, true);
    rig__time_decode_heads(1, 2048, 16, 8, true);
    rig__time_decode_heads(8, 512, 16, 8, true);
    rig__time_decode_heads(1, 32768, 16, 8, false);
    rig__reset(2110);
}

static void rig__time_gemm(int64_t m, int64_t n, int64_t k)
{
    rig__reset(1900 + (uint64_t)m);
    struct rig__pair *a = rig__random_device_bf16((size_t)(m * k));
    struct rig__pair *b = rig__random_device_bf16((size_t)(n * k));
    struct rig__pair *c = rig__pair_new((size_t)(m * n * 2));
    struct rig_op op = {.kind = RIG_OP_GEMM};
    op.u.gemm.out = rig_tensor_2d(c->host, RIG_DTYPE_BF16, m, n);
    op.u.gemm.a = rig_tensor_2d(a->host, RIG_DTYPE_BF16, m, k);
    op.u.gemm.b = rig_tensor_2d(b->host, RIG_DTYPE_BF16, n, k);
    struct rig_op device_op = rig__to_device(&op);
    double ms = rig__time_op(&device_op, 5);
    printf("    gemm %5lld x %5lld x %5lld bf16: %8.3f ms %6.1f TFLOP/s\n", (long long)m,
           (long long)n, (long long)k, ms, 2.0 * (double)m * (double)n * (double)k / (ms * 1e9));
}

/* Small-batch GEMM at decode sizes, as a decode step sees it: one issue inside a graph of
 * RIG__GEMV_ISSUES issues (launch overhead of a graph node included, host launch time not),
 * each issue reading its own copy of the weight until 128 MB are in use, so the weight comes
 * from HBM, not from the 50 MB L2. Prints the time, the weight bytes per second and the time
 * those bytes take at 3.0 TB/s. */
#define RIG__GEMV_ISSUES 20

static void rig__time_gemv(int64_t m, int64_t n, int64_t k, bool f32)
{
    rig__reset(2100 + (uint64_t)m);
    size_t weight = (size_t)(n * k);
    size_t window = (size_t)128 << 20;
    int64_t copies = (int64_t)((window + weight * 2 - 1) / (weight * 2));
    if (copies > RIG__GEMV_ISSUES) copies = RIG__GEMV_ISSUES;
    struct rig__pair *a = rig__random_device_bf16((size_t)(m * k));
    struct rig__pair *b = rig__filled_device_bf16(weight * (size_t)copies);
    struct rig__pair *c = rig__pair_new((size_t)(m * n) * (f32 ? 4 : 2));
    struct rig_graph *graph = NULL;
    assert_int_equal(rig_hal_graph_capture_begin(rig__stream), RIG_OK);
    for (int i = 0; i < RIG__GEMV_ISSUES; i++) {
        struct rig_op op = {.kind = RIG_OP_GEMM};
        op.u.gemm.out = rig_tensor_2d(c->host, f32 ? RIG_DTYPE_F32 : RIG_DTYPE_BF16, m, n);
        op.u.gemm.a = rig_tensor_2d(a->host, RIG_DTYPE_BF16, m, k);
        op.u.gemm.b = rig_tensor_2d((uint16_t *)b->host + (size_t)(i % copies) * weight,
                                    RIG_DTYPE_BF16, n, k);
        struct rig_op device_op = rig__to_device(&op);
        assert_int_equal(rig_hal_op(rig__stream, &device_op), RIG_OK);
    }
    assert_int_equal(rig_hal_graph_capture_end(rig__stream, &graph), RIG_OK);
    struct rig_event *start = NULL, *end = NULL;
    assert_int_equal(rig_hal_event_create(rig__device, &start), RIG_OK);
    assert_int_equal(rig_hal_event_create(rig__device, &end), RIG_OK);
    double best_ms = 1e30;
    for (int rep = 0; rep < 7; rep++) { /* the first two warm up */
        assert_int_equal(rig_hal_event_record(start, rig__stream), RIG_OK);
        assert_int_equal(rig_hal_graph_launch(graph, rig__stream), RIG_OK);
        assert_int_equal(rig_hal_event_record(end, rig__stream), RIG_OK);
        assert_int_equal(rig_hal_event_synchronize(end), RIG_OK);
        int64_t ns = 0;
        assert_int_equal(rig_hal_event_elapsed_ns(start, end, &ns), RIG_OK);
        double ms = (double)ns * 1e-6 / RIG__GEMV_ISSUES;
        if (rep >= 2 && ms < best_ms) best_ms = ms;
    }
    double bytes = (double)weight * 2.0;
    printf("    gemm %2lld x %6lld x %4lld %s: %7.2f us %6.0f GB/s of weight"
           " (3.0 TB/s: %6.2f us)\n",
           (long long)m, (long long)n, (long long)k, f32 ? "f32 " : "bf16", best_ms * 1e3,
           bytes / (best_ms * 1e6), bytes / 3.0e12 * 1e6);
    rig_hal_event_destroy(start);
    rig_hal_event_destroy(end);
    rig_hal_graph_destroy(graph);
}

/* Qwen3-0.6B's decode GEMMs at 1, 8 and 16 rows (the small-batch kernel) and 17 (cuBLAS, for
 * comparison), and its LM head. Asserts only that they run. */
static void test_gemm_decode_timing(void **state)
{
    (void)state;
    static const int64_t layers[][2] = {{4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072}};
    static const int64_t rows[] = {1, 8, 16, 17};
    for (size_t r = 0; r < RIG_ARRAY_LEN(rows); r++) {
        for (size_t l = 0; l < RIG_ARRAY_LEN(layers); l++)
            rig__time_gemv(rows[r], layers[l][0], layers[l][1], false);
        rig__time_gemv(rows[r], 151936, 1024, true);
    }
    rig__reset(2150);
}

static int64_t rig__host_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int rig__compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Host time of issuing one GEMM (rig_hal_op returns once it is enqueued; the stream is
 * drained between calls) for Qwen3-0.6B's prefill GEMMs at 24 token counts in [300, 900]
 * that no earlier case used: first at each count, then again at the same counts. Prints the
 * median and the largest of each round; a count new to cublasGemmEx costs its heuristic
 * search (RIG_CUDA_GEMM_PLANS=0 shows that path), a plan (the default) does not. Asserts only
 * that every call runs. */
static void test_gemm_first_use_timing(void **state)
{
    (void)state;
    static const int64_t layers[][2] = {{4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072}};
    enum { COUNTS = 24, ROUNDS = 2 };
    rig__reset(3100);
    struct rig__pair *a = rig__random_device_bf16((size_t)(900 * 3072));
    struct rig__pair *b = rig__random_device_bf16((size_t)(6144 * 1024));
    struct rig__pair *c = rig__pair_new((size_t)(900 * 6144) * 2);
    const char *plans = getenv("RIG_CUDA_GEMM_PLANS");
    printf("    GEMM plans %s (RIG_CUDA_GEMM_PLANS=%s)\n",
           plans != NULL && strcmp(plans, "0") == 0 ? "off: cublasGemmEx" : "on",
           plans != NULL ? plans : "unset");
    struct rig_op fresh = {.kind = RIG_OP_GEMM}; /* a shape no case used: a new family */
    fresh.u.gemm.out = rig_tensor_2d(c->host, RIG_DTYPE_BF16, 64, 2560);
    fresh.u.gemm.a = rig_tensor_2d(a->host, RIG_DTYPE_BF16, 64, 1536);
    fresh.u.gemm.b = rig_tensor_2d(b->host, RIG_DTYPE_BF16, 2560, 1536);
    struct rig_op fresh_device = rig__to_device(&fresh);
    int64_t t0 = rig__host_ns();
    assert_int_equal(rig_hal_op(rig__stream, &fresh_device), RIG_OK);
    printf("    a GEMM shape new to the process: host issue %.1f us\n",
           (double)(rig__host_ns() - t0) * 1e-3);
    assert_int_equal(rig_hal_stream_synchronize(rig__stream), RIG_OK);
    for (int round = 0; round < ROUNDS; round++) {
        int64_t ns[COUNTS * 4];
        for (int32_t i = 0; i < COUNTS; i++) {
            int64_t m = 301 + 25 * i; /* odd: no earlier case met them */
            for (int l = 0; l < 4; l++) {
                struct rig_op op = {.kind = RIG_OP_GEMM};
                op.u.gemm.out = rig_tensor_2d(c->host, RIG_DTYPE_BF16, m, layers[l][0]);
                op.u.gemm.a = rig_tensor_2d(a->host, RIG_DTYPE_BF16, m, layers[l][1]);
                op.u.gemm.b = rig_tensor_2d(b->host, RIG_DTYPE_BF16, layers[l][0], layers[l][1]);
                struct rig_op device_op = rig__to_device(&op);
                int64_t t0 = rig__host_ns();
                assert_int_equal(rig_hal_op(rig__stream, &device_op), RIG_OK);
                ns[i * 4 + l] = rig__host_ns() - t0;
                assert_int_equal(rig_hal_stream_synchronize(rig__stream), RIG_OK);
            }
        }
        qsort(ns, COUNTS * 4, sizeof ns[0], rig__compare_i64);
        printf("    round %d (%s counts): host issue per GEMM median %.1f us, max %.1f us\n",
               round, round == 0 ? "new" : "seen", (double)ns[COUNTS * 2] * 1e-3,
               (double)ns[COUNTS * 4 - 1] * 1e-3);
    }
    rig__reset(3101);
}

static void rig__time_sample(int64_t rows, int64_t vocab, int32_t top_k, float top_p)
{
    rig__reset(2000);
    struct rig__pair *logits = rig__pair_new((size_t)(rows * vocab) * 4);
    struct rig__pair *params = rig__pair_new((size_t)rows * 4 * 6);
    float *l = logits->host;
    for (int64_t i = 0; i < rows * vocab; i++)
        l[i] = rig_test_rng_float(&rig__rng, -8, 8);
    float *temperature = params->host, *p = temperature + rows;
    int32_t *k = (int32_t *)(p + rows), *position = k + rows;
    for (int64_t r = 0; r < rows; r++) {
        temperature[r] = 0.8f;
        p[r] = top_p;
        k[r] = top_k;
        position[r] = (int32_t)r;
    }
    assert_int_equal(rig_hal_buffer_upload(rig__stream, logits->buffer, 0, l, logits->bytes),
                     RIG_OK);
    assert_int_equal(
        rig_hal_buffer_upload(rig__stream, params->buffer, 0, params->host, params->bytes), RIG_OK);
    struct rig_op op = {.kind = RIG_OP_SAMPLE};
    struct rig_op_sample *s = &op.u.sample;
    s->tokens = rig_tensor_1d(position, RIG_DTYPE_I32, rows); /* overwritten: fine for timing */
    s->logits = rig_tensor_2d(l, RIG_DTYPE_F32, rows, vocab);
    s->temperature = rig_tensor_1d(temperature, RIG_DTYPE_F32, rows);
    s->top_k = rig_tensor_1d(k, RIG_DTYPE_I32, rows);
    s->top_p = rig_tensor_1d(p, RIG_DTYPE_F32, rows);
    s->seed = rig_tensor_1d(position + rows, RIG_DTYPE_I64, rows);
    s->position = rig_tensor_1d(position, RIG_DTYPE_I32, rows);
    struct rig_op device_op = rig__to_device(&op);
    double ms = rig__time_op(&device_op, 5);
    printf("    sample %4lld x %6lld top_k %3d top_p %.2f: %8.3f ms\n", (long long)rows,
           (long long)vocab, top_k, top_p, ms);
}

/* Prints device times of the heavy ops at serving sizes; asserts only that they run. */
static void test_timing(void **state)
{
    (void)state;
    rig__time_gemm(8192, 4096, 4096);
    rig__time_gemm(64, 4096, 4096);
    rig__time_prefill(4096, 0);
    rig__time_prefill(512, 7680);
    rig__time_decode(64, 4096);
    rig__time_decode(256, 1024);
    rig__time_decode(1, 32768);
    rig__time_decode_heads(1, 512, 16, 8, true);
    rig__time_decode_heads(256, 512, 16, 8, true);
    rig__time_decode_heads(256, 1024, 16, 8, false);
    rig__time_decode_heads(1, 512, 32, 4, true);
    rig__time_sample(64, 151936, 0, 1.0f);
    rig__time_sample(64, 151936, 50, 0.9f);
    rig__time_sample(64, 151936, 0, 0.9f); /* flat logits: the nucleus is large (slow path) */
    rig__reset(2100);
}

static int rig__setup(void **state)
{
    (void)state;
    struct rig_device_config config = {.first_ordinal = 0};
    if (rig_hal_open("cuda", &config, 1, &rig__device) != RIG_OK) return -1;
    if (rig_hal_stream_create(rig__device, &rig__stream) != RIG_OK) return -1;
    printf("    device: %s\n", rig_hal_device_info(rig__device)->name);
    return 0;
}

static int rig__teardown(void **state)
{
    (void)state;
    rig__pairs_free();
    rig_hal_stream_destroy(rig__stream);
    rig_hal_close(rig__device);
    return 0;
}

int main(void)
{
    rig_backends_register();
    if (rig_cuda_device_count() == 0) {
        printf("test_cuda_ops: no GPU; skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels_preloaded),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_rms_norm),
        cmocka_unit_test(test_head_rms_norm),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_silu_mul),
        cmocka_unit_test(test_gather_and_index),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_fill_dummy),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_gemm_decode_shapes),
        cmocka_unit_test(test_gemm_small_batch),
        cmocka_unit_test(test_gemm_persistent),
        cmocka_unit_test(test_gemm_fused),
        cmocka_unit_test(test_gemm_graph),
        cmocka_unit_test(test_gemm_plans),
        cmocka_unit_test(test_store_kv),
        cmocka_unit_test(test_qk_norm_rope_store),
        cmocka_unit_test(test_attention_prefill),
        cmocka_unit_test(test_attention_decode),
        cmocka_unit_test(test_attention_decode_graph),
        cmocka_unit_test(test_attention_decode_store),
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_sample_min_p),
        cmocka_unit_test(test_sample_cluster_cap),
        cmocka_unit_test(test_penalize),
        cmocka_unit_test(test_logprobs),
        cmocka_unit_test(test_graph_replay),
        cmocka_unit_test(test_errors_and_events),
        cmocka_unit_test(test_tp_collectives),
        cmocka_unit_test(test_timing),
        cmocka_unit_test(test_attention_decode_timing),
        cmocka_unit_test(test_gemm_decode_timing),
        cmocka_unit_test(test_gemm_first_use_timing),
    };
    const char *filter = getenv("RIG_TEST_FILTER"); /* one case by name (a measuring run) */
    if (filter != NULL && filter[0] != '\0') cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, rig__setup, rig__teardown);
}

#else /* no CUDA backend in this build */

int main(void)
{
    printf("test_cuda_ops: built without the CUDA backend; skipped\n");
    return 77;
}

#endif
