/* test_sim_kernels.c — every simulator reference kernel (sim/kernels/) against a direct naive
 * formula written independently here, in double precision, on seeded random inputs.
 *
 * Tolerances are stated per test and come from where the kernel rounds to bf16 (a relative
 * step of 2^-8): a result rounded once or twice may differ from the exact value by about
 * 2^-8 of its magnitude. Where two kernel paths must agree exactly (chunked prefill vs. one
 * prefill, decode vs. the last prefill row, strided views vs. contiguous copies, permuted
 * sampling batches, TP shards summed) the test compares bits.
 *
 * Edge cases: GQA ratios 1/2/4/8, a cached prefix of 0 and of all but one token, prefill in
 * two chunks, embedding vocabulary shards, top-k = 1 / tiny top-p / temperature 0 equal to
 * greedy, sampling frequencies against the softmax, llama3 RoPE frequencies, RMSNorm eps,
 * GEMM bias and f32 output, copies through permuted views, and rig_sim_op_run's dispatch.
 * The fused qk_norm_rope_store must equal head_rms_norm, head_rms_norm, rope and store_kv
 * run in sequence bit for bit (with and without norms, GQA 1/2/7/8, D 64/128, T 1 and 300,
 * strided views of one qkv buffer, llama3 RoPE). Likewise the GEMM's fused forms (an RMS norm
 * or SiLU-mul prologue, accumulate into out, with and without bias where allowed) must equal
 * rms_norm / silu_mul, the plain GEMM and add_rms_norm's residual add bit for bit, at 1, 3, 8
 * and 16 rows, odd N and strided rows.
 * Invalid index values (a slot outside the cache, a table row or gather index out of range,
 * more queries than keys) are caller bugs: a forked child runs the kernel and must abort.
 */
#include "tests/support/test_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hal/philox.h"
#include "hal/rope.h"
#include "sim/kernels.h"

/* --- helpers ------------------------------------------------------------------------------ */

static void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count, size);
    assert_non_null(p);
    return p;
}

static uint16_t *random_bf16(struct rig_test_rng *rng, size_t n, float lo, float hi)
{
    uint16_t *p = xcalloc(n, sizeof *p);
    rig_test_fill_bf16(rng, p, n, lo, hi);
    return p;
}

static double bf(uint16_t h)
{
    return (double)rig_bf16_to_f32(h);
}

/* Fails with a message when |got - want| > abs_tol + rel_tol * |want|. */
static void check_close(double got, double want, double abs_tol, double rel_tol,
                        const char *what, long index)
{
    double limit = abs_tol + rel_tol * fabs(want);
    if (!(fabs(got - want) <= limit)) {
        fail_msg("%s[%ld]: got %.9g, want %.9g (|diff| %.3g > %.3g)", what, index, got, want,
                 fabs(got - want), limit);
    }
}

/* bf16 keeps 8 significant bits: one rounding to nearest moves a value by at most half a
 * step, 2^-8 of its magnitude. Two roundings in a row: twice that. */
#define BF16_ROUNDING (1.0 / 256.0)

/* --- embedding ---------------------------------------------------------------------------- */

static void test_embedding_full_and_shards(void **state)
{
    (void)state;
    enum { VOCAB = 37, HIDDEN = 24, TOKENS = 9 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 1);
    uint16_t *table = random_bf16(&rng, VOCAB * HIDDEN, -1.0f, 1.0f);
    int32_t ids[TOKENS] = {0, 36, 18, 19, 5, 18, 30, 1, 17};
    uint16_t full[TOKENS * HIDDEN], shard_out[2][TOKENS * HIDDEN];
    struct rig_op_embedding op = {
        .out = rig_tensor_2d(full, RIG_DTYPE_BF16, TOKENS, HIDDEN),
        .table = rig_tensor_2d(table, RIG_DTYPE_BF16, VOCAB, HIDDEN),
        .ids = rig_tensor_1d(ids, RIG_DTYPE_I32, TOKENS),
        .vocab_start = 0,
    };
    rig_sim_op_embedding(&op);
    for (int t = 0; t < TOKENS; t++) {
        assert_memory_equal(&full[t * HIDDEN], &table[ids[t] * HIDDEN], HIDDEN * 2);
    }
    /* Two TP shards of an odd vocabulary: rows [0, 19) and [19, 37). */
    int64_t split = 19;
    for (int s = 0; s < 2; s++) {
        int64_t start = s == 0 ? 0 : split, rows = s == 0 ? split : VOCAB - split;
        memset(shard_out[s], 0xff, sizeof shard_out[s]); /* every byte must be written */
        op.out = rig_tensor_2d(shard_out[s], RIG_DTYPE_BF16, TOKENS, HIDDEN);
        op.table = rig_tensor_2d(table + start * HIDDEN, RIG_DTYPE_BF16, rows, HIDDEN);
        op.vocab_start = start;
        rig_sim_op_embedding(&op);
    }
    for (int t = 0; t < TOKENS; t++) {
        int owner = ids[t] < split ? 0 : 1;
        for (int h = 0; h < HIDDEN; h++) {
            int i = t * HIDDEN + h;
            assert_int_equal(shard_out[1 - owner][i], 0); /* the other shard gives +0 */
            float sum = rig_bf16_to_f32(shard_out[0][i]) + rig_bf16_to_f32(shard_out[1][i]);
            assert_int_equal(rig_f32_to_bf16(sum), full[i]);
        }
    }
    free(table);
}

/* --- norms -------------------------------------------------------------------------------- */

/* Naive RMSNorm of n values in double: weight * x / sqrt(mean(x^2) + eps). */
static void naive_rms_norm(double *out, const uint16_t *x, const uint16_t *w, int n, double eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += bf(x[i]) * bf(x[i]);
    double inv = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) out[i] = bf(w[i]) * bf(x[i]) * inv;
}

static void test_rms_norm(void **state)
{
    (void)state;
    enum { T = 7, H = 96 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 2);
    uint16_t *in = random_bf16(&rng, T * H, -3.0f, 3.0f);
    uint16_t *w = random_bf16(&rng, H, 0.5f, 1.5f);
    uint16_t out[T * H];
    struct rig_op_rms_norm op = {
        .out = rig_tensor_2d(out, RIG_DTYPE_BF16, T, H),
        .in = rig_tensor_2d(in, RIG_DTYPE_BF16, T, H),
        .weight = rig_tensor_1d(w, RIG_DTYPE_BF16, H),
        .eps = 1e-6f,
    };
    rig_sim_op_rms_norm(&op);
    double ref[H];
    for (int t = 0; t < T; t++) {
        naive_rms_norm(ref, &in[t * H], w, H, 1e-6);
        /* two bf16 roundings: within 2 half-steps of the exact value */
        for (int h = 0; h < H; h++) {
            check_close(bf(out[t * H + h]), ref[h], 1e-6, 2 * BF16_ROUNDING, "rms", h);
        }
    }
    free(in);
    free(w);
}

/* eps matters when the mean square is comparable to it, and an all-zero row gives zeros. */
static void test_rms_norm_eps(void **state)
{
    (void)state;
    enum { H = 16 };
    uint16_t in[2 * H], w[H], out[2 * H];
    for (int h = 0; h < H; h++) {
        in[h] = rig_f32_to_bf16(1e-3f); /* mean square 1e-6 */
        in[H + h] = 0;
        w[h] = rig_f32_to_bf16(1.0f);
    }
    struct rig_op_rms_norm op = {
        .out = rig_tensor_2d(out, RIG_DTYPE_BF16, 2, H),
        .in = rig_tensor_2d(in, RIG_DTYPE_BF16, 2, H),
        .weight = rig_tensor_1d(w, RIG_DTYPE_BF16, H),
        .eps = 1e-6f,
    };
    rig_sim_op_rms_norm(&op);
    double x = bf(in[0]);
    check_close(bf(out[0]), x / sqrt(x * x + 1e-6), 0, 2 * BF16_ROUNDING, "eps 1e-6", 0);
    for (int h = 0; h < H; h++) assert_int_equal(out[H + h], 0); /* 0 * rsqrt(eps) = 0 */
    op.eps = 1e-2f;
    rig_sim_op_rms_norm(&op);
    check_close(bf(out[0]), x / sqrt(x * x + 1e-2), 0, 2 * BF16_ROUNDING, "eps 1e-2", 0);
    assert_true(bf(out[0]) < 0.02); /* eps dominates: ~0.01 instead of ~0.707 */
}

static void test_add_rms_norm_aliasing(void **state)
{
    (void)state;
    enum { T = 5, H = 64 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 3);
    uint16_t *in = random_bf16(&rng, T * H, -2.0f, 2.0f);
    uint16_t *residual = random_bf16(&rng, T * H, -2.0f, 2.0f);
    uint16_t *w = random_bf16(&rng, H, 0.5f, 1.5f);
    uint16_t residual_before[T * H], in_before[T * H];
    memcpy(residual_before, residual, sizeof residual_before);
    memcpy(in_before, in, sizeof in_before);
    struct rig_op_add_rms_norm op = {
        .out = rig_tensor_2d(in, RIG_DTYPE_BF16, T, H), /* out aliases in */
        .residual = rig_tensor_2d(residual, RIG_DTYPE_BF16, T, H),
        .in = rig_tensor_2d(in, RIG_DTYPE_BF16, T, H),
        .weight = rig_tensor_1d(w, RIG_DTYPE_BF16, H),
        .eps = 1e-5f,
    };
    rig_sim_op_add_rms_norm(&op);
    double ref[H];
    for (int t = 0; t < T; t++) {
        for (int h = 0; h < H; h++) {
            int i = t * H + h;
            /* the sum of two bf16 values rounded once to bf16 */
            check_close(bf(residual[i]), bf(residual_before[i]) + bf(in_before[i]), 1e-30,
                        BF16_ROUNDING, "residual", i);
        }
        naive_rms_norm(ref, &residual[t * H], w, H, 1e-5);
        for (int h = 0; h < H; h++) {
            check_close(bf(in[t * H + h]), ref[h], 1e-6, 2 * BF16_ROUNDING, "out", h);
        }
    }
    free(in);
    free(residual);
    free(w);
}

static void test_head_rms_norm(void **state)
{
    (void)state;
    enum { T = 3, HEADS = 4, D = 32, STRIDE_HEADS = 6 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 4);
    /* x is a [T, 4, D] view of a [T, 6, D] buffer: heads 4 and 5 must stay untouched. */
    uint16_t *buffer = random_bf16(&rng, T * STRIDE_HEADS * D, -4.0f, 4.0f);
    uint16_t *before = xcalloc(T * STRIDE_HEADS * D, 2);
    memcpy(before, buffer, T * STRIDE_HEADS * D * 2);
    uint16_t *w = random_bf16(&rng, D, 0.5f, 1.5f);
    struct rig_tensor full = rig_tensor_3d(buffer, RIG_DTYPE_BF16, T, STRIDE_HEADS, D);
    struct rig_op_head_rms_norm op = {
        .x = rig_tensor_slice(&full, 1, 0, HEADS),
        .weight = rig_tensor_1d(w, RIG_DTYPE_BF16, D),
        .eps = 1e-6f,
    };
    rig_sim_op_head_rms_norm(&op);
    double ref[D];
    for (int t = 0; t < T; t++) {
        for (int h = 0; h < STRIDE_HEADS; h++) {
            int base = (t * STRIDE_HEADS + h) * D;
            if (h >= HEADS) {
                assert_memory_equal(&buffer[base], &before[base], D * 2);
                continue;
            }
            naive_rms_norm(ref, &before[base], w, D, 1e-6);
            for (int d = 0; d < D; d++) {
                check_close(bf(buffer[base + d]), ref[d], 1e-6, 2 * BF16_ROUNDING, "head", d);
            }
        }
    }
    free(buffer);
    free(before);
    free(w);
}

/* --- gemm --------------------------------------------------------------------------------- */

/* One GEMM of M x N x K with a random bias, checked against a double-precision sum. fp32
 * accumulation error is bounded by K * 2^-24 * sum |a||b|; bf16 output adds half a step. */
static void check_gemm(int m_count, int n_count, int k_count, bool bias, bool f32_out)
{
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, (uint64_t)(m_count * 1000 + n_count * 10 + k_count));
    uint16_t *a = random_bf16(&rng, (size_t)m_count * k_count, -1.0f, 1.0f);
    uint16_t *b = random_bf16(&rng, (size_t)n_count * k_count, -1.0f, 1.0f);
    uint16_t *bias_data = random_bf16(&rng, (size_t)n_count, -1.0f, 1.0f);
    void *out = xcalloc((size_t)m_count * n_count, 4);
    enum rig_dtype out_dtype = f32_out ? RIG_DTYPE_F32 : RIG_DTYPE_BF16;
    struct rig_op_gemm op = {
        .out = rig_tensor_2d(out, out_dtype, m_count, n_count),
        .a = rig_tensor_2d(a, RIG_DTYPE_BF16, m_count, k_count),
        .b = rig_tensor_2d(b, RIG_DTYPE_BF16, n_count, k_count),
        .bias = bias ? rig_tensor_1d(bias_data, RIG_DTYPE_BF16, n_count) : rig_tensor_none(),
    };
    rig_sim_op_gemm(&op);
    for (int m = 0; m < m_count; m++) {
        for (int n = 0; n < n_count; n++) {
            double sum = bias ? bf(bias_data[n]) : 0.0, magnitude = fabs(sum);
            for (int k = 0; k < k_count; k++) {
                sum += bf(a[m * k_count + k]) * bf(b[n * k_count + k]);
                magnitude += fabs(bf(a[m * k_count + k]) * bf(b[n * k_count + k]));
            }
            double accumulate_tol = (k_count + 1) * ldexp(1.0, -24) * magnitude;
            int i = m * n_count + n;
            double got = f32_out ? (double)((float *)out)[i] : bf(((uint16_t *)out)[i]);
            check_close(got, sum, accumulate_tol + 1e-30, f32_out ? 0.0 : BF16_ROUNDING, "gemm", i);
        }
    }
    free(a);
    free(b);
    free(bias_data);
    free(out);
}

static void test_gemm(void **state)
{
    (void)state;
    check_gemm(5, 13, 37, false, false); /* N not a multiple of the 4-column block */
    check_gemm(5, 13, 37, true, false);
    check_gemm(3, 16, 64, true, true);
    check_gemm(1, 3, 1, false, true);
    check_gemm(8, 9, 300, false, true);
}

/* A strided a (rows of a wider buffer) gives the same bits as a contiguous copy. */
static void test_gemm_strided_a(void **state)
{
    (void)state;
    enum { M = 4, N = 6, K = 10, WIDE = 16 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 5);
    uint16_t *wide = random_bf16(&rng, M * WIDE, -1.0f, 1.0f);
    uint16_t *b = random_bf16(&rng, N * K, -1.0f, 1.0f);
    uint16_t packed[M * K];
    for (int m = 0; m < M; m++) memcpy(&packed[m * K], &wide[m * WIDE + 3], K * 2);
    uint16_t out_view[M * N], out_packed[M * N];
    struct rig_tensor wide_t = rig_tensor_2d(wide + 3, RIG_DTYPE_BF16, M, WIDE);
    struct rig_op_gemm op = {
        .out = rig_tensor_2d(out_view, RIG_DTYPE_BF16, M, N),
        .a = rig_tensor_slice(&wide_t, 1, 0, K),
        .b = rig_tensor_2d(b, RIG_DTYPE_BF16, N, K),
        .bias = rig_tensor_none(),
    };
    rig_sim_op_gemm(&op);
    op.out = rig_tensor_2d(out_packed, RIG_DTYPE_BF16, M, N);
    op.a = rig_tensor_2d(packed, RIG_DTYPE_BF16, M, K);
    rig_sim_op_gemm(&op);
    assert_memory_equal(out_view, out_packed, sizeof out_view);
    free(wide);
    free(b);
}

/* --- gemm's fused forms: the fused op equals the ops it replaces --------------------------- */

struct gemm_form {
    enum rig_gemm_prologue prologue;
    bool accumulate, bias;
};

/* A row-strided [rows, width] bf16 view of `data` with `pad` values after each row. */
static struct rig_tensor padded_rows(uint16_t *data, int64_t rows, int64_t width, int64_t pad)
{
    struct rig_tensor t = rig_tensor_2d(data, RIG_DTYPE_BF16, rows, width);
    t.stride[0] = width + pad;
    return t;
}

/* Runs `op` as the simulator issues it: checked, then through rig_sim_op_run. */
static void run_checked(const struct rig_op *op)
{
    char error[256];
    assert_int_equal(rig_hal_op_check(op, error, sizeof error), RIG_OK);
    assert_int_equal(rig_sim_op_run(op), RIG_OK);
}

/* One fused GEMM of M rows, N columns, depth K against the op sequence it stands for, rows
 * `pad` values longer than their tensors (strided views): run 0 is rms_norm or silu_mul into
 * the operand, the plain GEMM (into a scratch product with accumulate) and add_rms_norm adding
 * the product into out as its residual; run 1 the fused GEMM. The operand and out must match
 * bit for bit. */
static void check_gemm_form(const struct gemm_form *f, int64_t M, int64_t N, int64_t K, int64_t pad,
                            uint64_t seed)
{
    enum rig_dtype bf = RIG_DTYPE_BF16;
    bool silu = f->prologue == RIG_GEMM_PROLOGUE_SILU_MUL;
    bool norm = f->prologue == RIG_GEMM_PROLOGUE_RMS_NORM;
    size_t a_n = (size_t)(M * ((silu ? 2 * K : K) + pad)), x_n = (size_t)(M * (K + pad));
    size_t out_n = (size_t)(M * (N + pad));
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, seed);
    uint16_t *a = random_bf16(&rng, a_n, -4.0f, 4.0f);
    uint16_t *b = random_bf16(&rng, (size_t)(N * K), -1.0f, 1.0f);
    uint16_t *weights = random_bf16(&rng, (size_t)(K + N), 0.5f, 1.5f); /* norm, then bias */
    uint16_t *before = random_bf16(&rng, out_n, -8.0f, 8.0f);
    uint16_t *out[2], *operand[2], *product = xcalloc(out_n, 2), *normed = xcalloc(out_n, 2);
    for (int r = 0; r < 2; r++) {
        out[r] = xcalloc(out_n, 2), operand[r] = xcalloc(x_n, 2);
        memcpy(out[r], before, out_n * 2);
    }
    struct rig_tensor a_t = padded_rows(a, M, silu ? 2 * K : K, pad);
    struct rig_tensor b_t = rig_tensor_2d(b, bf, N, K), norm_t = rig_tensor_1d(weights, bf, K);
    struct rig_tensor bias_t = f->bias ? rig_tensor_1d(weights + K, bf, N) : rig_tensor_none();
    /* run 0: the ops in sequence */
    struct rig_tensor x0 = padded_rows(operand[0], M, K, pad),
                      out0 = padded_rows(out[0], M, N, pad);
    if (norm)
        run_checked(
            &(struct rig_op){.kind = RIG_OP_RMS_NORM, .u.rms_norm = {x0, a_t, norm_t, 1e-6f}});
    if (silu) run_checked(&(struct rig_op){.kind = RIG_OP_SILU_MUL, .u.silu_mul = {x0, a_t}});
    struct rig_tensor product_t = f->accumulate ? padded_rows(product, M, N, pad) : out0;
    struct rig_op_gemm plain = {
        .out = product_t, .a = norm || silu ? x0 : a_t, .b = b_t, .bias = bias_t};
    run_checked(&(struct rig_op){.kind = RIG_OP_GEMM, .u.gemm = plain});
    struct rig_op_add_rms_norm add = {padded_rows(normed, M, N, pad), out0, product_t,
                                      rig_tensor_1d(weights, bf, N), 1e-6f};
    if (f->accumulate)
        run_checked(&(struct rig_op){.kind = RIG_OP_ADD_RMS_NORM, .u.add_rms_norm = add});
    /* run 1: the fused GEMM */
    struct rig_op_gemm fused = {.out = padded_rows(out[1], M, N, pad),
                                .a = a_t,
                                .b = b_t,
                                .bias = bias_t,
                                .prologue = f->prologue,
                                .operand = norm || silu ? padded_rows(operand[1], M, K, pad)
                                                        : rig_tensor_none(),
                                .norm_weight = norm ? norm_t : rig_tensor_none(),
                                .eps = norm ? 1e-6f : 0.0f,
                                .accumulate = f->accumulate};
    run_checked(&(struct rig_op){.kind = RIG_OP_GEMM, .u.gemm = fused});
    assert_memory_equal(operand[1], operand[0], x_n * 2);
    assert_memory_equal(out[1], out[0], out_n * 2);
    /* not vacuous: out changed, the operand was written */
    assert_true(memcmp(out[1], before, (size_t)N * 2) != 0);
    bool written = false;
    for (size_t i = 0; i < x_n; i++)
        written |= operand[1][i] != 0;
    assert_true(written == (norm || silu));
    free(a), free(b), free(weights), free(before), free(product), free(normed);
    for (int r = 0; r < 2; r++)
        free(out[r]), free(operand[r]);
}

static void test_gemm_fused_forms_equal_composition(void **state)
{
    (void)state;
    const struct gemm_form forms[] = {
        {RIG_GEMM_PROLOGUE_RMS_NORM, false, false}, {RIG_GEMM_PROLOGUE_RMS_NORM, false, true},
        {RIG_GEMM_PROLOGUE_RMS_NORM, true, false},  {RIG_GEMM_PROLOGUE_SILU_MUL, false, false},
        {RIG_GEMM_PROLOGUE_SILU_MUL, false, true},  {RIG_GEMM_PROLOGUE_SILU_MUL, true, false},
        {RIG_GEMM_PROLOGUE_NONE, true, false},
    };
    const int64_t rows[] = {1, 3, 8, 16};
    uint64_t seed = 300;
    for (size_t i = 0; i < RIG_ARRAY_LEN(forms); i++) {
        for (size_t r = 0; r < RIG_ARRAY_LEN(rows); r++) {
            check_gemm_form(&forms[i], rows[r], 37, 96, 0, seed++); /* odd N: the 4-column tail */
            check_gemm_form(&forms[i], rows[r], 13, 50, 6, seed++); /* strided rows */
        }
    }
}

/* --- rope --------------------------------------------------------------------------------- */

static const struct rig_rope_params LLAMA3_ROPE = {
    .theta = 500000.0f,
    .scaling = RIG_ROPE_SCALING_LLAMA3,
    .factor = 8.0f,
    .low_freq_factor = 1.0f,
    .high_freq_factor = 4.0f,
    .original_max_position = 8192,
};

/* The llama3 rule of HF's _compute_llama3_parameters, in double. */
static double naive_llama3(double inv_freq)
{
    double factor = 8.0, low = 1.0, high = 4.0, original = 8192.0;
    double wavelen = 2.0 * 3.14159265358979323846 / inv_freq;
    if (wavelen < original / high) return inv_freq;
    if (wavelen > original / low) return inv_freq / factor;
    double smooth = (original / wavelen - low) / (high - low);
    return (1.0 - smooth) * inv_freq / factor + smooth * inv_freq;
}

static void test_rope_inv_freq(void **state)
{
    (void)state;
    enum { D = 128 };
    struct rig_rope_params plain = {.theta = 10000.0f, .scaling = RIG_ROPE_SCALING_NONE};
    int unchanged = 0, divided = 0, interpolated = 0;
    for (int i = 0; i < D / 2; i++) {
        double base = pow(10000.0, -2.0 * i / D);
        check_close(rig_rope_inv_freq(&plain, i, D), base, 0, 1e-6, "inv_freq", i);
        double raw = pow(500000.0, -2.0 * i / D);
        double want = naive_llama3(raw);
        check_close(rig_rope_inv_freq(&LLAMA3_ROPE, i, D), want, 0, 1e-5, "llama3", i);
        if (want == raw) {
            unchanged++;
        } else if (fabs(want - raw / 8.0) < 1e-12 * raw) {
            divided++;
        } else {
            interpolated++;
        }
    }
    /* Llama 3.1's parameters exercise all three bands of the rule. */
    assert_true(unchanged > 0 && divided > 0 && interpolated > 0);
    assert_true(rig_rope_inv_freq(&plain, 0, D) == 1.0f);
}

/* Rotates a [T, heads, D] array in double the naive way; positions per token. */
static void naive_rope(double *out, const uint16_t *x, const int32_t *positions, int tokens,
                       int heads, int dim, const struct rig_rope_params *params)
{
    int half = dim / 2;
    for (int t = 0; t < tokens; t++) {
        for (int h = 0; h < heads; h++) {
            const uint16_t *v = &x[(t * heads + h) * dim];
            double *o = &out[(t * heads + h) * dim];
            for (int i = 0; i < half; i++) {
                double inv = pow((double)params->theta, -2.0 * i / dim);
                if (params->scaling == RIG_ROPE_SCALING_LLAMA3) inv = naive_llama3(inv);
                double angle = positions[t] * inv;
                o[i] = bf(v[i]) * cos(angle) - bf(v[i + half]) * sin(angle);
                o[i + half] = bf(v[i + half]) * cos(angle) + bf(v[i]) * sin(angle);
            }
        }
    }
}

/* RoPE on q and k views of one fused [T, Hq + 2 Hk, D] buffer; v must stay untouched. */
static void check_rope(const struct rig_rope_params *params)
{
    enum { T = 6, HQ = 4, HK = 2, D = 64, W = HQ + 2 * HK };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 6);
    uint16_t *qkv = random_bf16(&rng, T * W * D, -1.0f, 1.0f);
    uint16_t *before = xcalloc(T * W * D, 2);
    memcpy(before, qkv, T * W * D * 2);
    int32_t positions[T] = {0, 1, 7, 100, 2047, 5000};
    struct rig_tensor fused = rig_tensor_3d(qkv, RIG_DTYPE_BF16, T, W, D);
    struct rig_op_rope op = {
        .q = rig_tensor_slice(&fused, 1, 0, HQ),
        .k = rig_tensor_slice(&fused, 1, HQ, HK),
        .positions = rig_tensor_1d(positions, RIG_DTYPE_I32, T),
        .params = *params,
    };
    rig_sim_op_rope(&op);
    /* naive_rope wants packed heads: treat each token's W heads as one [T, W, D] array */
    double *ref = xcalloc(T * W * D, sizeof *ref);
    naive_rope(ref, before, positions, T, W, D, params);
    for (int t = 0; t < T; t++) {
        for (int h = 0; h < W; h++) {
            for (int d = 0; d < D; d++) {
                int i = (t * W + h) * D + d;
                if (h >= HQ + HK) {
                    assert_int_equal(qkv[i], before[i]);
                } else {
                    /* fp32 angle error at position 5000 is ~5e-4 rad, plus one bf16 store */
                    check_close(bf(qkv[i]), ref[i], 3e-3, BF16_ROUNDING, "rope", i);
                }
            }
        }
    }
    /* position 0 is the identity */
    assert_memory_equal(qkv, before, (HQ + HK) * D * 2);
    free(qkv);
    free(before);
    free(ref);
}

static void test_rope(void **state)
{
    (void)state;
    struct rig_rope_params plain = {.theta = 1000000.0f, .scaling = RIG_ROPE_SCALING_NONE};
    check_rope(&plain);
    check_rope(&LLAMA3_ROPE);
}

/* --- qk_norm_rope_store: the fused op equals the three ops it replaces ------------------- */

struct fused_shape {
    int heads_q, heads_kv, dim, tokens;
    bool norm;
    const struct rig_rope_params *rope;
};

/* One qkv buffer [T, Hq + 2 Hk, D] with rows `pad` values longer than the heads (the model's
 * q/k/v are views with row stride qkv_width), caches of S slots, T distinct random slots. */
static void check_fused(const struct fused_shape *c, int pad, uint64_t seed)
{
    int T = c->tokens, D = c->dim, heads = c->heads_q + 2 * c->heads_kv, S = 2 * T + 3;
    size_t row = (size_t)heads * D + (size_t)pad, qkv_n = (size_t)T * row;
    size_t cache_n = (size_t)S * c->heads_kv * D;
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, seed);
    uint16_t *qkv[2] = {random_bf16(&rng, qkv_n, -3.0f, 3.0f), xcalloc(qkv_n, 2)};
    uint16_t *kc[2] = {random_bf16(&rng, cache_n, -1.0f, 1.0f), xcalloc(cache_n, 2)};
    uint16_t *vc[2] = {random_bf16(&rng, cache_n, -1.0f, 1.0f), xcalloc(cache_n, 2)};
    uint16_t *before = xcalloc(qkv_n, 2);
    uint16_t *weights = random_bf16(&rng, 2 * (size_t)D, 0.5f, 1.5f);
    memcpy(before, qkv[0], qkv_n * 2);
    memcpy(qkv[1], qkv[0], qkv_n * 2);
    memcpy(kc[1], kc[0], cache_n * 2);
    memcpy(vc[1], vc[0], cache_n * 2);
    int32_t *positions = xcalloc((size_t)T, 4), *out_loc = xcalloc((size_t)T, 4);
    for (int t = 0; t < T; t++) {
        positions[t] = (int32_t)rig_test_rng_int(&rng, 0, 40960);
        out_loc[t] = (int32_t)((t * 7 + 3) % S); /* distinct: 7 does not divide S */
    }
    struct rig_tensor views[2][3]; /* [run][q, k, v] */
    for (int r = 0; r < 2; r++) {
        for (int j = 0; j < 3; j++) {
            int first = j == 0 ? 0 : c->heads_q + (j - 1) * c->heads_kv;
            int count = j == 0 ? c->heads_q : c->heads_kv;
            views[r][j] = rig_tensor_3d(qkv[r] + (size_t)first * D, RIG_DTYPE_BF16, T, count, D);
            views[r][j].stride[0] = (int64_t)row;
        }
    }
    struct rig_tensor q_norm = rig_tensor_1d(weights, RIG_DTYPE_BF16, D);
    struct rig_tensor k_norm = rig_tensor_1d(weights + D, RIG_DTYPE_BF16, D);
    struct rig_tensor pos_t = rig_tensor_1d(positions, RIG_DTYPE_I32, T);
    struct rig_tensor loc_t = rig_tensor_1d(out_loc, RIG_DTYPE_I32, T);
    struct rig_tensor caches[2][2];
    for (int r = 0; r < 2; r++) {
        caches[r][0] = rig_tensor_3d(kc[r], RIG_DTYPE_BF16, S, c->heads_kv, D);
        caches[r][1] = rig_tensor_3d(vc[r], RIG_DTYPE_BF16, S, c->heads_kv, D);
    }
    /* run 0: the three ops, through rig_sim_op_run as the simulator issues them */
    struct rig_op ops[4] = {
        {.kind = RIG_OP_HEAD_RMS_NORM, .u.head_rms_norm = {views[0][0], q_norm, 1e-6f}},
        {.kind = RIG_OP_HEAD_RMS_NORM, .u.head_rms_norm = {views[0][1], k_norm, 1e-6f}},
        {.kind = RIG_OP_ROPE, .u.rope = {views[0][0], views[0][1], pos_t, *c->rope}},
        {.kind = RIG_OP_STORE_KV,
         .u.store_kv = {caches[0][0], caches[0][1], views[0][1], views[0][2], loc_t}},
    };
    for (int i = c->norm ? 0 : 2; i < 4; i++) {
        assert_int_equal(rig_hal_op_check(&ops[i], NULL, 0), RIG_OK);
        assert_int_equal(rig_sim_op_run(&ops[i]), RIG_OK);
    }
    /* run 1: the fused op */
    struct rig_op fused = {.kind = RIG_OP_QK_NORM_ROPE_STORE};
    struct rig_op_qk_norm_rope_store *p = &fused.u.qk_norm_rope_store;
    p->q = views[1][0];
    p->k = views[1][1];
    p->v = views[1][2];
    p->k_cache = caches[1][0];
    p->v_cache = caches[1][1];
    p->q_norm = c->norm ? q_norm : rig_tensor_none();
    p->k_norm = c->norm ? k_norm : rig_tensor_none();
    p->positions = pos_t;
    p->out_loc = loc_t;
    p->eps = 1e-6f;
    p->params = *c->rope;
    assert_int_equal(rig_hal_op_check(&fused, NULL, 0), RIG_OK);
    assert_int_equal(rig_sim_op_run(&fused), RIG_OK);
    assert_memory_equal(qkv[1], qkv[0], qkv_n * 2);
    assert_memory_equal(kc[1], kc[0], cache_n * 2);
    assert_memory_equal(vc[1], vc[0], cache_n * 2);
    /* not vacuous: q and k changed, v and the row padding did not, the slots hold k and v */
    assert_true(memcmp(qkv[1], before, (size_t)c->heads_q * D * 2) != 0);
    for (int t = 0; t < T; t++) {
        size_t v_at = (size_t)t * row + (size_t)(c->heads_q + c->heads_kv) * D;
        assert_memory_equal(qkv[1] + v_at, before + v_at, ((size_t)c->heads_kv * D + pad) * 2);
        size_t k_at = v_at - (size_t)c->heads_kv * D;
        size_t slot_at = (size_t)out_loc[t] * c->heads_kv * D;
        assert_memory_equal(kc[1] + slot_at, qkv[1] + k_at, (size_t)c->heads_kv * D * 2);
        assert_memory_equal(vc[1] + slot_at, before + v_at, (size_t)c->heads_kv * D * 2);
    }
    for (int r = 0; r < 2; r++) {
        free(qkv[r]);
        free(kc[r]);
        free(vc[r]);
    }
    free(before);
    free(weights);
    free(positions);
    free(out_loc);
}

static void test_qk_norm_rope_store_equals_composition(void **state)
{
    (void)state;
    static const struct rig_rope_params qwen = {.theta = 1000000.0f};
    const struct fused_shape shapes[] = {
        {16, 8, 128, 1, true, &qwen},           /* Qwen3-0.6B decode at batch 1 */
        {16, 8, 128, 300, true, &qwen},         /* a prefill chunk */
        {32, 4, 128, 300, false, &LLAMA3_ROPE}, /* Llama-style: GQA 8, no q/k norm, llama3 */
        {8, 1, 64, 1, true, &LLAMA3_ROPE},      /* GQA 8, D 64 */
        {4, 4, 64, 300, false, &qwen},          /* MHA, D 64 */
        {14, 2, 64, 300, true, &LLAMA3_ROPE},   /* GQA 7 */
    };
    for (size_t i = 0; i < RIG_ARRAY_LEN(shapes); i++) {
        check_fused(&shapes[i], 0, 100 + i);
        check_fused(&shapes[i], 24, 200 + i);
    }
}

/* --- store_kv and attention --------------------------------------------------------------- */

static void test_store_kv_strided(void **state)
{
    (void)state;
    enum { T = 5, HQ = 4, HK = 2, D = 8, W = HQ + 2 * HK, S = 12 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 7);
    uint16_t *qkv = random_bf16(&rng, T * W * D, -1.0f, 1.0f);
    uint16_t *k_cache = random_bf16(&rng, S * HK * D, -1.0f, 1.0f);
    uint16_t *v_cache = random_bf16(&rng, S * HK * D, -1.0f, 1.0f);
    uint16_t *k_before = xcalloc(S * HK * D, 2), *v_before = xcalloc(S * HK * D, 2);
    memcpy(k_before, k_cache, S * HK * D * 2);
    memcpy(v_before, v_cache, S * HK * D * 2);
    int32_t out_loc[T] = {11, 0, 6, 3, 7};
    struct rig_tensor fused = rig_tensor_3d(qkv, RIG_DTYPE_BF16, T, W, D);
    struct rig_op_store_kv op = {
        .k_cache = rig_tensor_3d(k_cache, RIG_DTYPE_BF16, S, HK, D),
        .v_cache = rig_tensor_3d(v_cache, RIG_DTYPE_BF16, S, HK, D),
        .k = rig_tensor_slice(&fused, 1, HQ, HK),
        .v = rig_tensor_slice(&fused, 1, HQ + HK, HK),
        .out_loc = rig_tensor_1d(out_loc, RIG_DTYPE_I32, T),
    };
    rig_sim_op_store_kv(&op);
    for (int s = 0; s < S; s++) {
        int t = -1;
        for (int j = 0; j < T; j++) t = out_loc[j] == s ? j : t;
        const uint16_t *k_want = t < 0 ? &k_before[s * HK * D] : &qkv[(t * W + HQ) * D];
        const uint16_t *v_want = t < 0 ? &v_before[s * HK * D] : &qkv[(t * W + HQ + HK) * D];
        assert_memory_equal(&k_cache[s * HK * D], k_want, HK * D * 2);
        assert_memory_equal(&v_cache[s * HK * D], v_want, HK * D * 2);
    }
    free(qkv);
    free(k_cache);
    free(v_cache);
    free(k_before);
    free(v_before);
}

/* Naive attention of one query head over keys 0..keys-1 of a slot list, in double. */
static void naive_attend(double *out, const uint16_t *q, const uint16_t *k_cache,
                         const uint16_t *v_cache, const int32_t *slots, int keys, int head_kv,
                         int heads_kv, int dim, double scale)
{
    double *scores = xcalloc((size_t)keys, sizeof *scores);
    double max_score = -INFINITY, total = 0.0;
    for (int j = 0; j < keys; j++) {
        const uint16_t *k = &k_cache[((size_t)slots[j] * heads_kv + head_kv) * dim];
        double dot = 0.0;
        for (int d = 0; d < dim; d++) dot += bf(q[d]) * bf(k[d]);
        scores[j] = dot * scale;
        max_score = fmax(max_score, scores[j]);
    }
    for (int d = 0; d < dim; d++) out[d] = 0.0;
    for (int j = 0; j < keys; j++) {
        double w = exp(scores[j] - max_score);
        total += w;
        const uint16_t *v = &v_cache[((size_t)slots[j] * heads_kv + head_kv) * dim];
        for (int d = 0; d < dim; d++) out[d] += w * bf(v[d]);
    }
    for (int d = 0; d < dim; d++) out[d] /= total;
    free(scores);
}

/* A paged KV cache: every position of every page-table row maps to its own slot, the slots
 * scattered by a seeded permutation so that nothing works by accident of layout. */
struct kv_world {
    int heads_q, heads_kv, dim, slots, rows, row_len;
    uint16_t *k_cache;  /* (slots, heads_kv, dim) */
    uint16_t *v_cache;  /* (slots, heads_kv, dim) */
    int32_t *page_table; /* (rows, row_len) */
};

static void kv_world_init(struct kv_world *w, struct rig_test_rng *rng, int heads_q, int heads_kv,
                          int dim, int rows, int row_len)
{
    *w = (struct kv_world){.heads_q = heads_q, .heads_kv = heads_kv, .dim = dim, .rows = rows,
                           .row_len = row_len, .slots = rows * row_len + 3};
    size_t cache_n = (size_t)w->slots * heads_kv * dim;
    w->k_cache = random_bf16(rng, cache_n, -1.0f, 1.0f);
    w->v_cache = random_bf16(rng, cache_n, -1.0f, 1.0f);
    int32_t *permutation = xcalloc((size_t)w->slots, sizeof *permutation);
    for (int s = 0; s < w->slots; s++) permutation[s] = s;
    for (int s = w->slots - 1; s > 0; s--) { /* Fisher-Yates */
        int j = (int)rig_test_rng_int(rng, 0, s);
        int32_t tmp = permutation[s];
        permutation[s] = permutation[j];
        permutation[j] = tmp;
    }
    w->page_table = xcalloc((size_t)rows * row_len, sizeof *w->page_table);
    memcpy(w->page_table, permutation, (size_t)rows * row_len * sizeof *w->page_table);
    free(permutation);
}

static void kv_world_free(struct kv_world *w)
{
    free(w->k_cache);
    free(w->v_cache);
    free(w->page_table);
}

static struct rig_tensor kv_world_k(const struct kv_world *w)
{
    return rig_tensor_3d(w->k_cache, RIG_DTYPE_BF16, w->slots, w->heads_kv, w->dim);
}

static struct rig_tensor kv_world_v(const struct kv_world *w)
{
    return rig_tensor_3d(w->v_cache, RIG_DTYPE_BF16, w->slots, w->heads_kv, w->dim);
}

static struct rig_tensor kv_world_table(const struct kv_world *w)
{
    return rig_tensor_2d(w->page_table, RIG_DTYPE_I32, w->rows, w->row_len);
}

#define MAX_REQUESTS 4

/* A prefill op over `requests` requests; request r uses table row rows - 1 - r. The caller
 * owns q / out ([T, Hq, D]) and the metadata arrays. */
struct prefill_case {
    int requests;
    int32_t kv_len[MAX_REQUESTS];
    int32_t q_len[MAX_REQUESTS];
    int32_t cu_q[MAX_REQUESTS + 1];
    int32_t table_idx[MAX_REQUESTS];
};

static struct rig_op_attention_prefill prefill_op(const struct kv_world *w,
                                                  struct prefill_case *c, uint16_t *out,
                                                  uint16_t *q)
{
    c->cu_q[0] = 0;
    for (int r = 0; r < c->requests; r++) {
        c->cu_q[r + 1] = c->cu_q[r] + c->q_len[r];
        c->table_idx[r] = w->rows - 1 - r;
    }
    int tokens = c->cu_q[c->requests];
    struct rig_op_attention_prefill op = {
        .out = rig_tensor_3d(out, RIG_DTYPE_BF16, tokens, w->heads_q, w->dim),
        .q = rig_tensor_3d(q, RIG_DTYPE_BF16, tokens, w->heads_q, w->dim),
        .k_cache = kv_world_k(w),
        .v_cache = kv_world_v(w),
        .page_table = kv_world_table(w),
        .table_idx = rig_tensor_1d(c->table_idx, RIG_DTYPE_I32, c->requests),
        .cu_q = rig_tensor_1d(c->cu_q, RIG_DTYPE_I32, c->requests + 1),
        .kv_len = rig_tensor_1d(c->kv_len, RIG_DTYPE_I32, c->requests),
        .scale = 1.0f / sqrtf((float)w->dim),
    };
    return op;
}

/* Prefill against naive attention for one GQA ratio: a fresh prompt (cached prefix 0), a
 * prompt with all but one token cached, a partly cached one, and a one-token prompt. */
static void check_prefill(int heads_q, int heads_kv)
{
    enum { D = 32, ROW_LEN = 16 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, (uint64_t)(100 + heads_q * 10 + heads_kv));
    struct kv_world w;
    kv_world_init(&w, &rng, heads_q, heads_kv, D, MAX_REQUESTS + 1, ROW_LEN);
    struct prefill_case c = {.requests = 4, .kv_len = {9, 12, 7, 1}, .q_len = {9, 1, 4, 1}};
    int tokens = 15;
    uint16_t *q = random_bf16(&rng, (size_t)tokens * heads_q * D, -1.0f, 1.0f);
    uint16_t *out = xcalloc((size_t)tokens * heads_q * D, 2);
    struct rig_op_attention_prefill op = prefill_op(&w, &c, out, q);
    assert_int_equal(c.cu_q[4], tokens);
    rig_sim_op_attention_prefill(&op);
    double ref[D];
    for (int r = 0; r < c.requests; r++) {
        const int32_t *slots = &w.page_table[c.table_idx[r] * ROW_LEN];
        for (int i = 0; i < c.q_len[r]; i++) {
            int t = c.cu_q[r] + i;
            int keys = c.kv_len[r] - c.q_len[r] + i + 1;
            for (int h = 0; h < heads_q; h++) {
                size_t base = ((size_t)t * heads_q + h) * D;
                naive_attend(ref, &q[base], w.k_cache, w.v_cache, slots, keys,
                             h / (heads_q / heads_kv), heads_kv, D, 1.0 / sqrt(D));
                for (int d = 0; d < D; d++) {
                    check_close(bf(out[base + d]), ref[d], 1e-4, BF16_ROUNDING, "prefill", d);
                }
            }
        }
    }
    free(q);
    free(out);
    kv_world_free(&w);
}

static void test_attention_prefill_gqa(void **state)
{
    (void)state;
    check_prefill(2, 2); /* MHA */
    check_prefill(4, 2);
    check_prefill(8, 2);
    check_prefill(16, 2);
    check_prefill(8, 1); /* MQA */
}

/* Copies heads [first, first + count) of a fused [N, W, D] buffer into a packed array. */
static uint16_t *pack_heads(const uint16_t *fused, int tokens, int width, int first, int count,
                            int dim)
{
    uint16_t *packed = xcalloc((size_t)tokens * count * dim, 2);
    for (int t = 0; t < tokens; t++) {
        memcpy(&packed[(size_t)t * count * dim], &fused[((size_t)t * width + first) * dim],
               (size_t)count * dim * 2);
    }
    return packed;
}

static void store(struct kv_world *w, struct rig_tensor k, struct rig_tensor v,
                  const int32_t *slots, int count)
{
    struct rig_op_store_kv op = {
        .k_cache = kv_world_k(w),
        .v_cache = kv_world_v(w),
        .k = k,
        .v = v,
        .out_loc = rig_tensor_1d((void *)slots, RIG_DTYPE_I32, count),
    };
    rig_sim_op_store_kv(&op);
}

/* One prompt of N tokens, GQA 4:1. Path A: q/k/v are strided views of the fused qkv buffer,
 * K/V stored and attended in two chunks (6 then 5 tokens). Path B: packed copies, stored and
 * prefilled at once. Every output bit must agree, and decode of the last token over the
 * whole row must equal the last prefill row. */
static void test_attention_chunks_views_decode(void **state)
{
    (void)state;
    enum { N = 11, FIRST = 6, HQ = 8, HK = 2, D = 16, W = HQ + 2 * HK, ROW = 1 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 8);
    struct kv_world a, b;
    kv_world_init(&a, &rng, HQ, HK, D, 2, 16);
    rig_test_rng_seed(&rng, 8);
    kv_world_init(&b, &rng, HQ, HK, D, 2, 16); /* the same cache contents and slots */
    uint16_t *qkv = random_bf16(&rng, N * W * D, -1.0f, 1.0f);
    struct rig_tensor fused = rig_tensor_3d(qkv, RIG_DTYPE_BF16, N, W, D);
    struct rig_tensor q_view = rig_tensor_slice(&fused, 1, 0, HQ);
    struct rig_tensor k_view = rig_tensor_slice(&fused, 1, HQ, HK);
    struct rig_tensor v_view = rig_tensor_slice(&fused, 1, HQ + HK, HK);
    const int32_t *slots = &a.page_table[ROW * a.row_len];
    uint16_t out_a[N * HQ * D], out_b[N * HQ * D], out_decode[HQ * D];
    int32_t table_idx[1] = {ROW}, kv_len[1], cu_q[2] = {0, 0};
    struct rig_op_attention_prefill op = {
        .k_cache = kv_world_k(&a), .v_cache = kv_world_v(&a), .page_table = kv_world_table(&a),
        .table_idx = rig_tensor_1d(table_idx, RIG_DTYPE_I32, 1),
        .cu_q = rig_tensor_1d(cu_q, RIG_DTYPE_I32, 2),
        .kv_len = rig_tensor_1d(kv_len, RIG_DTYPE_I32, 1), .scale = 0.25f,
    };
    struct rig_tensor out_a_t = rig_tensor_3d(out_a, RIG_DTYPE_BF16, N, HQ, D);
    for (int chunk = 0; chunk < 2; chunk++) {
        int begin = chunk == 0 ? 0 : FIRST, count = chunk == 0 ? FIRST : N - FIRST;
        store(&a, rig_tensor_slice(&k_view, 0, begin, count),
              rig_tensor_slice(&v_view, 0, begin, count), &slots[begin], count);
        kv_len[0] = begin + count;
        cu_q[1] = count;
        op.q = rig_tensor_slice(&q_view, 0, begin, count);
        op.out = rig_tensor_slice(&out_a_t, 0, begin, count);
        rig_sim_op_attention_prefill(&op);
    }
    uint16_t *q_packed = pack_heads(qkv, N, W, 0, HQ, D);
    uint16_t *k_packed = pack_heads(qkv, N, W, HQ, HK, D);
    uint16_t *v_packed = pack_heads(qkv, N, W, HQ + HK, HK, D);
    store(&b, rig_tensor_3d(k_packed, RIG_DTYPE_BF16, N, HK, D),
          rig_tensor_3d(v_packed, RIG_DTYPE_BF16, N, HK, D), slots, N);
    assert_memory_equal(a.k_cache, b.k_cache, (size_t)a.slots * HK * D * 2);
    assert_memory_equal(a.v_cache, b.v_cache, (size_t)a.slots * HK * D * 2);
    kv_len[0] = N;
    cu_q[1] = N;
    op.k_cache = kv_world_k(&b);
    op.v_cache = kv_world_v(&b);
    op.q = rig_tensor_3d(q_packed, RIG_DTYPE_BF16, N, HQ, D);
    op.out = rig_tensor_3d(out_b, RIG_DTYPE_BF16, N, HQ, D);
    rig_sim_op_attention_prefill(&op);
    assert_memory_equal(out_a, out_b, sizeof out_a);
    struct rig_op_attention_decode decode = {
        .out = rig_tensor_3d(out_decode, RIG_DTYPE_BF16, 1, HQ, D),
        .q = rig_tensor_slice(&q_view, 0, N - 1, 1), /* a strided view again */
        .k_cache = kv_world_k(&a), .v_cache = kv_world_v(&a), .page_table = kv_world_table(&a),
        .table_idx = rig_tensor_1d(table_idx, RIG_DTYPE_I32, 1),
        .kv_len = rig_tensor_1d(kv_len, RIG_DTYPE_I32, 1), .scale = 0.25f,
    };
    rig_sim_op_attention_decode(&decode);
    assert_memory_equal(out_decode, &out_b[(N - 1) * HQ * D], sizeof out_decode);
    free(qkv);
    free(q_packed);
    free(k_packed);
    free(v_packed);
    kv_world_free(&a);
    kv_world_free(&b);
}

/* Decode of several requests of different lengths against naive attention, per GQA ratio. */
static void check_decode(int heads_q, int heads_kv)
{
    enum { D = 64, R = 3, ROW_LEN = 20 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, (uint64_t)(200 + heads_q * 10 + heads_kv));
    struct kv_world w;
    kv_world_init(&w, &rng, heads_q, heads_kv, D, 4, ROW_LEN);
    int32_t kv_len[R] = {1, 20, 13}, table_idx[R] = {2, 0, 3};
    uint16_t *q = random_bf16(&rng, (size_t)R * heads_q * D, -2.0f, 2.0f);
    uint16_t *out = xcalloc((size_t)R * heads_q * D, 2);
    struct rig_op_attention_decode op = {
        .out = rig_tensor_3d(out, RIG_DTYPE_BF16, R, heads_q, D),
        .q = rig_tensor_3d(q, RIG_DTYPE_BF16, R, heads_q, D),
        .k_cache = kv_world_k(&w), .v_cache = kv_world_v(&w), .page_table = kv_world_table(&w),
        .table_idx = rig_tensor_1d(table_idx, RIG_DTYPE_I32, R),
        .kv_len = rig_tensor_1d(kv_len, RIG_DTYPE_I32, R), .scale = 0.125f,
    };
    rig_sim_op_attention_decode(&op);
    double ref[D];
    for (int r = 0; r < R; r++) {
        for (int h = 0; h < heads_q; h++) {
            size_t base = ((size_t)r * heads_q + h) * D;
            naive_attend(ref, &q[base], w.k_cache, w.v_cache, &w.page_table[table_idx[r] * ROW_LEN],
                         kv_len[r], h / (heads_q / heads_kv), heads_kv, D, 0.125);
            for (int d = 0; d < D; d++) {
                check_close(bf(out[base + d]), ref[d], 1e-4, BF16_ROUNDING, "decode", d);
            }
        }
    }
    /* one key: the output is that key's V row exactly */
    const uint16_t *v0 = &w.v_cache[(size_t)w.page_table[2 * ROW_LEN] * heads_kv * D];
    assert_memory_equal(out, v0, D * 2);
    free(q);
    free(out);
    kv_world_free(&w);
}

static void test_attention_decode_gqa(void **state)
{
    (void)state;
    check_decode(4, 4);
    check_decode(4, 2);
    check_decode(8, 2);
    check_decode(16, 2);
}

/* --- silu_mul, gathers -------------------------------------------------------------------- */

static void test_silu_mul(void **state)
{
    (void)state;
    enum { T = 4, I = 40 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 9);
    uint16_t *in = random_bf16(&rng, T * 2 * I, -8.0f, 8.0f);
    uint16_t out[T * I];
    struct rig_op_silu_mul op = {
        .out = rig_tensor_2d(out, RIG_DTYPE_BF16, T, I),
        .in = rig_tensor_2d(in, RIG_DTYPE_BF16, T, 2 * I),
    };
    rig_sim_op_silu_mul(&op);
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < I; i++) {
            double g = bf(in[t * 2 * I + i]), up = bf(in[t * 2 * I + I + i]);
            double want = g / (1.0 + exp(-g)) * up;
            check_close(bf(out[t * I + i]), want, 1e-30, 2 * BF16_ROUNDING, "silu_mul", t * I + i);
        }
    }
    free(in);
}

static void test_gather_rows(void **state)
{
    (void)state;
    enum { T = 6, H = 5, R = 3 };
    float in_f32[T * H], out_f32[R * H];
    uint16_t in_bf16[T * H], out_bf16[R * H];
    for (int i = 0; i < T * H; i++) {
        in_f32[i] = (float)i * 0.5f;
        in_bf16[i] = rig_f32_to_bf16((float)i);
    }
    int32_t idx[R] = {5, 0, 5};
    struct rig_op_gather_rows op = {
        .out = rig_tensor_2d(out_f32, RIG_DTYPE_F32, R, H),
        .in = rig_tensor_2d(in_f32, RIG_DTYPE_F32, T, H),
        .idx = rig_tensor_1d(idx, RIG_DTYPE_I32, R),
    };
    rig_sim_op_gather_rows(&op);
    op.out = rig_tensor_2d(out_bf16, RIG_DTYPE_BF16, R, H);
    op.in = rig_tensor_2d(in_bf16, RIG_DTYPE_BF16, T, H);
    rig_sim_op_gather_rows(&op);
    for (int r = 0; r < R; r++) {
        for (int h = 0; h < H; h++) {
            assert_true(out_f32[r * H + h] == (float)(idx[r] * H + h) * 0.5f);
            assert_int_equal(out_bf16[r * H + h], in_bf16[idx[r] * H + h]);
        }
    }
}

static void test_index_gather_scatter(void **state)
{
    (void)state;
    enum { M = 12, N = 5 };
    int32_t pool[M], out[N], values[N] = {100, 101, 102, 103, 104};
    int32_t idx[N] = {11, 0, 4, 7, 3};
    for (int m = 0; m < M; m++) pool[m] = -m;
    struct rig_op_index_gather gather = {
        .out = rig_tensor_1d(out, RIG_DTYPE_I32, N),
        .src = rig_tensor_1d(pool, RIG_DTYPE_I32, M),
        .idx = rig_tensor_1d(idx, RIG_DTYPE_I32, N),
    };
    rig_sim_op_index_gather(&gather);
    for (int n = 0; n < N; n++) assert_int_equal(out[n], -idx[n]);
    struct rig_op_index_scatter scatter = {
        .dst = rig_tensor_1d(pool, RIG_DTYPE_I32, M),
        .src = rig_tensor_1d(values, RIG_DTYPE_I32, N),
        .idx = rig_tensor_1d(idx, RIG_DTYPE_I32, N),
    };
    rig_sim_op_index_scatter(&scatter);
    for (int m = 0; m < M; m++) {
        int32_t want = -m;
        for (int n = 0; n < N; n++) want = idx[n] == m ? values[n] : want;
        assert_int_equal(pool[m], want);
    }
}

/* --- sampling ----------------------------------------------------------------------------- */

#define SAMPLE_ROWS_MAX 64

/* Parameters and outputs of one sample op over `rows` rows of one logits array. */
struct sample_batch {
    int rows, vocab;
    float *logits; /* (rows, vocab) */
    int32_t tokens[SAMPLE_ROWS_MAX];
    float temperature[SAMPLE_ROWS_MAX];
    int32_t top_k[SAMPLE_ROWS_MAX];
    float top_p[SAMPLE_ROWS_MAX];
    int64_t seed[SAMPLE_ROWS_MAX];
    int32_t position[SAMPLE_ROWS_MAX];
    bool has_min_p; /* false: the op's min_p tensor is absent */
    float min_p[SAMPLE_ROWS_MAX];
};

static struct rig_op_sample sample_op(struct sample_batch *b)
{
    struct rig_op_sample op = {
        .tokens = rig_tensor_1d(b->tokens, RIG_DTYPE_I32, b->rows),
        .logits = rig_tensor_2d(b->logits, RIG_DTYPE_F32, b->rows, b->vocab),
        .temperature = rig_tensor_1d(b->temperature, RIG_DTYPE_F32, b->rows),
        .top_k = rig_tensor_1d(b->top_k, RIG_DTYPE_I32, b->rows),
        .top_p = rig_tensor_1d(b->top_p, RIG_DTYPE_F32, b->rows),
        .seed = rig_tensor_1d(b->seed, RIG_DTYPE_I64, b->rows),
        .position = rig_tensor_1d(b->position, RIG_DTYPE_I32, b->rows),
        .min_p = b->has_min_p ? rig_tensor_1d(b->min_p, RIG_DTYPE_F32, b->rows)
                              : rig_tensor_none(),
    };
    return op;
}

static void run_sample(struct sample_batch *b)
{
    struct rig_op_sample op = sample_op(b);
    rig_sim_op_sample(&op);
}

static int naive_first_max(const float *logits, int vocab)
{
    int best = 0;
    for (int i = 1; i < vocab; i++) best = logits[i] > logits[best] ? i : best;
    return best;
}

/* Greedy in all its spellings: temperature 0 or negative, top_k 1, a tiny top_p. Ties go to
 * the first maximum. */
static void test_sample_greedy_forms(void **state)
{
    (void)state;
    enum { R = 8, V = 50 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 10);
    struct sample_batch b = {.rows = R, .vocab = V, .logits = xcalloc(R * V, sizeof(float))};
    for (int i = 0; i < R * V; i++) b.logits[i] = rig_test_rng_float(&rng, -3.0f, 3.0f);
    b.logits[0 * V + 7] = b.logits[0 * V + 31] = 10.0f; /* a tie: 7 wins */
    for (int r = 0; r < R; r++) {
        b.seed[r] = (int64_t)rig_test_rng_next(&rng);
        b.position[r] = r * 3;
        b.top_k[r] = 0;
        b.top_p[r] = 1.0f;
        b.temperature[r] = 1.0f;
    }
    b.temperature[0] = 0.0f;
    b.temperature[1] = -1.0f;
    b.top_k[2] = 1;
    b.top_k[3] = 1;
    b.temperature[3] = 5.0f;
    b.top_p[4] = 1e-6f;
    b.top_p[5] = 0.0f;
    b.top_p[6] = 1e-6f;
    b.top_k[6] = 10;
    b.temperature[7] = 0.0f;
    b.top_k[7] = 5;
    run_sample(&b);
    assert_int_equal(b.tokens[0], 7);
    for (int r = 0; r < R; r++) assert_int_equal(b.tokens[r], naive_first_max(&b.logits[r * V], V));
    free(b.logits);
}

/* Fills row r's parameters from a small menu so a batch mixes every sampling path. */
static void mixed_row(struct sample_batch *b, int r, struct rig_test_rng *rng)
{
    static const float temperatures[] = {0.0f, 0.7f, 1.0f, 1.3f};
    static const int32_t top_ks[] = {0, 1, 5, 40, 0};
    static const float top_ps[] = {1.0f, 0.9f, 0.5f, 1.0f, 0.2f, 1.0f};
    b->temperature[r] = temperatures[r % 4];
    b->top_k[r] = top_ks[r % 5];
    b->top_p[r] = top_ps[r % 6];
    b->seed[r] = (int64_t)rig_test_rng_next(rng);
    b->position[r] = (int32_t)rig_test_rng_int(rng, 0, 4000);
}

/* The same rows in another order give the same tokens: sampling noise depends on (seed,
 * position, index) only. Re-running gives the same bytes; changing the seeds changes some. */
static void test_sample_batch_order(void **state)
{
    (void)state;
    enum { R = 30, V = 700 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 11);
    struct sample_batch a = {.rows = R, .vocab = V, .logits = xcalloc(R * V, sizeof(float))};
    struct sample_batch b = {.rows = R, .vocab = V, .logits = xcalloc(R * V, sizeof(float))};
    for (int i = 0; i < R * V; i++) a.logits[i] = rig_test_rng_float(&rng, -2.0f, 2.0f);
    for (int r = 0; r < R; r++) mixed_row(&a, r, &rng);
    int order[R];
    for (int r = 0; r < R; r++) order[r] = (r * 7 + 3) % R; /* 7 is coprime with 30 */
    for (int r = 0; r < R; r++) {
        int s = order[r];
        memcpy(&b.logits[r * V], &a.logits[s * V], V * sizeof(float));
        b.temperature[r] = a.temperature[s];
        b.top_k[r] = a.top_k[s];
        b.top_p[r] = a.top_p[s];
        b.seed[r] = a.seed[s];
        b.position[r] = a.position[s];
    }
    run_sample(&a);
    run_sample(&b);
    for (int r = 0; r < R; r++) assert_int_equal(b.tokens[r], a.tokens[order[r]]);
    int32_t first[R];
    memcpy(first, a.tokens, sizeof first);
    run_sample(&a);
    assert_memory_equal(first, a.tokens, sizeof first);
    int changed = 0;
    for (int r = 0; r < R; r++) a.seed[r] ^= 0x5555;
    run_sample(&a);
    for (int r = 0; r < R; r++) {
        assert_true(a.tokens[r] >= 0 && a.tokens[r] < V);
        changed += a.tokens[r] != first[r];
    }
    assert_true(changed > 0);
    free(a.logits);
    free(b.logits);
}

/* Draws `draws` tokens (one row per position, one seed) and returns the counts per token;
 * min_p < 0 leaves the op's min_p tensor absent. */
static void sample_counts_min_p(const float *logits, int vocab, float temperature,
                                int32_t top_k, float top_p, float min_p, int draws,
                                int64_t *counts)
{
    struct sample_batch b = {.rows = SAMPLE_ROWS_MAX, .vocab = vocab, .has_min_p = min_p >= 0};
    b.logits = xcalloc((size_t)SAMPLE_ROWS_MAX * vocab, sizeof(float));
    for (int r = 0; r < SAMPLE_ROWS_MAX; r++) {
        memcpy(&b.logits[r * vocab], logits, (size_t)vocab * sizeof(float));
        b.temperature[r] = temperature;
        b.top_k[r] = top_k;
        b.top_p[r] = top_p;
        b.seed[r] = 12345;
        b.min_p[r] = min_p;
    }
    for (int v = 0; v < vocab; v++) counts[v] = 0;
    for (int done = 0; done < draws; done += SAMPLE_ROWS_MAX) {
        for (int r = 0; r < SAMPLE_ROWS_MAX; r++) b.position[r] = done + r;
        run_sample(&b);
        for (int r = 0; r < SAMPLE_ROWS_MAX; r++) counts[b.tokens[r]]++;
    }
    free(b.logits);
}

static void sample_counts(const float *logits, int vocab, float temperature, int32_t top_k,
                          float top_p, int draws, int64_t *counts)
{
    sample_counts_min_p(logits, vocab, temperature, top_k, top_p, -1.0f, draws, counts);
}

/* Empirical frequencies within 5 standard deviations (+ 1e-3) of the expected
 * probabilities; tokens with probability 0 never drawn. */
static void check_frequencies(const int64_t *counts, const double *p, int vocab, int draws)
{
    for (int v = 0; v < vocab; v++) {
        double freq = (double)counts[v] / draws;
        if (p[v] == 0.0) {
            assert_int_equal(counts[v], 0);
            continue;
        }
        double sigma = sqrt(p[v] * (1.0 - p[v]) / draws);
        check_close(freq, p[v], 5.0 * sigma + 1e-3, 0.0, "frequency", v);
    }
}

static void test_sample_distribution(void **state)
{
    (void)state;
    enum { V = 6, DRAWS = 64 * 250 };
    const float logits[V] = {1.0f, 0.5f, 0.0f, -0.5f, 2.0f, 0.25f};
    double p[V], total = 0.0;
    int64_t counts[V];
    for (int v = 0; v < V; v++) total += p[v] = exp(logits[v] / 0.8);
    for (int v = 0; v < V; v++) p[v] /= total;
    sample_counts(logits, V, 0.8f, 0, 1.0f, DRAWS, counts);
    check_frequencies(counts, p, V, DRAWS);
    /* top_k = 3 keeps tokens 4, 0, 1 and renormalises */
    double kept = p[4] + p[0] + p[1];
    double p_top_k[V] = {p[0] / kept, p[1] / kept, 0, 0, p[4] / kept, 0};
    sample_counts(logits, V, 0.8f, 3, 1.0f, DRAWS, counts);
    check_frequencies(counts, p_top_k, V, DRAWS);
}

/* Known probabilities 0.05, 0.5, 0.15, 0.3 (logits are their logs, temperature 1). */
static void test_sample_top_p(void **state)
{
    (void)state;
    enum { V = 4, DRAWS = 64 * 200 };
    const float logits[V] = {logf(0.05f), logf(0.5f), logf(0.15f), logf(0.3f)};
    int64_t counts[V];
    /* sorted: 0.5, 0.3, 0.15, 0.05; top_p 0.75 needs 0.5 + 0.3 */
    const double two[V] = {0, 0.625, 0, 0.375};
    sample_counts(logits, V, 1.0f, 0, 0.75f, DRAWS, counts);
    check_frequencies(counts, two, V, DRAWS);
    /* top_p 0.95 needs three: 0.5 + 0.3 + 0.15 */
    const double three[V] = {0, 0.5 / 0.95, 0.15 / 0.95, 0.3 / 0.95};
    sample_counts(logits, V, 1.0f, 0, 0.95f, DRAWS, counts);
    check_frequencies(counts, three, V, DRAWS);
    /* top-p mass is taken over the top-k set: top_k 3 renormalises to 0.526, 0.316, 0.158;
     * top_p 0.6 then needs the first two */
    sample_counts(logits, V, 1.0f, 3, 0.6f, DRAWS, counts);
    check_frequencies(counts, two, V, DRAWS);
}

static void test_sample_timing_only(void **state)
{
    (void)state;
    enum { R = 5, V = 151936 };
    struct sample_batch b = {.rows = R, .vocab = V, .logits = (float *)(uintptr_t)0x10};
    for (int r = 0; r < R; r++) {
        b.seed[r] = (int64_t)(0x9E3779B97F4A7C15ull * (uint64_t)(r + 1));
        b.position[r] = r * 11;
    }
    struct rig_op_sample op = sample_op(&b);
    rig_sim_op_sample_timing_only(&op); /* the phantom logits are never read */
    for (int r = 0; r < R; r++) {
        struct rig_philox_out bits = rig_philox4x32((uint64_t)b.seed[r], (uint32_t)b.position[r],
                                                    0, RIG_PHILOX_STREAM_TIMING, 0);
        assert_int_equal(b.tokens[r], (int32_t)(bits.v[0] % V));
    }
}

/* --- more sampling and numerics ----------------------------------------------------------- */

/* Masked (-inf) logits are never drawn, on the unsorted and the sorted path; ties at the
 * top-k boundary keep the lower indices. */
static void test_sample_masked_and_ties(void **state)
{
    (void)state;
    enum { V = 8, DRAWS = 64 * 100 };
    const float masked[V] = {-INFINITY, 0.5f, -INFINITY, 0.0f, -INFINITY, -INFINITY, 1.0f,
                             -INFINITY};
    double p[V] = {0}, total = exp(0.5) + 1.0 + exp(1.0);
    p[1] = exp(0.5) / total;
    p[3] = 1.0 / total;
    p[6] = exp(1.0) / total;
    int64_t counts[V];
    sample_counts(masked, V, 1.0f, 0, 1.0f, DRAWS, counts);
    check_frequencies(counts, p, V, DRAWS);
    sample_counts(masked, V, 1.0f, 6, 0.99f, DRAWS, counts); /* sorted path, all kept */
    check_frequencies(counts, p, V, DRAWS);
    /* indices 1, 2, 3 tie at the top; top_k 2 keeps 1 and 2, evenly */
    const float tied[V] = {1.0f, 3.0f, 3.0f, 3.0f, 0.0f, 2.9f, -1.0f, 3.0f};
    const double halves[V] = {0, 0.5, 0.5, 0, 0, 0, 0, 0};
    sample_counts(tied, V, 0.7f, 2, 1.0f, DRAWS, counts);
    check_frequencies(counts, halves, V, DRAWS);
}

/* Rows that are no distribution — a NaN, a +Inf, every logit -Inf — are not sampled: token
 * 0 and -1 in `checked`, greedy or not; a masked row (-Inf and finite) samples as usual. */
static void test_sample_invalid_rows(void **state)
{
    (void)state;
    enum { R = 8, V = 6 };
    struct sample_batch b = {.rows = R, .vocab = V, .logits = xcalloc(R * V, sizeof(float))};
    int32_t checked[R];
    for (int r = 0; r < R; r++) {
        float *row = b.logits + r * V;
        for (int v = 0; v < V; v++) row[v] = (float)v * 0.25f;
        int kind = r % 4;
        if (kind == 0) row[3] = NAN;
        if (kind == 1) row[1] = INFINITY;
        for (int v = 0; v < V; v++) row[v] = kind == 2 ? -INFINITY : row[v];
        if (kind == 3) row[5] = -INFINITY; /* masked: the maximum is now index 4 */
        b.temperature[r] = r < 4 ? 0.0f : 0.8f;
        b.top_k[r] = r == 6 ? 3 : 0;
        b.top_p[r] = 1.0f;
        b.seed[r] = 99 + r;
        b.position[r] = r;
    }
    struct rig_op_sample op = sample_op(&b);
    op.checked = rig_tensor_1d(checked, RIG_DTYPE_I32, R);
    rig_sim_op_sample(&op);
    for (int r = 0; r < R; r++) {
        bool valid = r % 4 == 3;
        assert_int_equal(checked[r], valid ? b.tokens[r] : -1);
        if (!valid) assert_int_equal(b.tokens[r], 0);
    }
    assert_int_equal(b.tokens[3], 4);
    assert_true(b.tokens[7] >= 0 && b.tokens[7] < 5);
    free(b.logits);
}

/* Exact results where the math is exact: a constant row normalises to 1.0 (out = weight to
 * the bit), attention over one repeated key returns the mean of V, and huge scores do not
 * overflow (the softmax becomes one-hot on the largest). */
static void test_exact_cases(void **state)
{
    (void)state;
    enum { H = 32, D = 8 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 13);
    uint16_t in[H], w[H], out[H];
    for (int h = 0; h < H; h++) in[h] = rig_f32_to_bf16(-2.0f);
    rig_test_fill_bf16(&rng, w, H, -2.0f, 2.0f);
    struct rig_op_rms_norm norm = {
        .out = rig_tensor_2d(out, RIG_DTYPE_BF16, 1, H),
        .in = rig_tensor_2d(in, RIG_DTYPE_BF16, 1, H),
        .weight = rig_tensor_1d(w, RIG_DTYPE_BF16, H),
        .eps = 1e-6f,
    };
    rig_sim_op_rms_norm(&norm);
    for (int h = 0; h < H; h++) assert_int_equal(out[h], w[h] ^ 0x8000u); /* -1 * w */
    /* three keys: identical K -> uniform weights; V rows 0, 1, 2 (times 0.25) -> mean 0.25 */
    uint16_t k_cache[3 * D], v_cache[3 * D], q[D], attn[D];
    int32_t table[3] = {2, 0, 1}, table_idx[1] = {0}, kv_len[1] = {3};
    for (int d = 0; d < D; d++) {
        q[d] = rig_f32_to_bf16(0.5f);
        for (int s = 0; s < 3; s++) {
            k_cache[s * D + d] = rig_f32_to_bf16(0.75f);
            v_cache[s * D + d] = rig_f32_to_bf16(0.25f * (float)s);
        }
    }
    struct rig_op_attention_decode decode = {
        .out = rig_tensor_3d(attn, RIG_DTYPE_BF16, 1, 1, D),
        .q = rig_tensor_3d(q, RIG_DTYPE_BF16, 1, 1, D),
        .k_cache = rig_tensor_3d(k_cache, RIG_DTYPE_BF16, 3, 1, D),
        .v_cache = rig_tensor_3d(v_cache, RIG_DTYPE_BF16, 3, 1, D),
        .page_table = rig_tensor_2d(table, RIG_DTYPE_I32, 1, 3),
        .table_idx = rig_tensor_1d(table_idx, RIG_DTYPE_I32, 1),
        .kv_len = rig_tensor_1d(kv_len, RIG_DTYPE_I32, 1),
        .scale = 0.3f,
    };
    rig_sim_op_attention_decode(&decode);
    for (int d = 0; d < D; d++) assert_true(rig_bf16_to_f32(attn[d]) == 0.25f);
    /* slot 1 (position 2) gets a key of +100s: scores ~1e4 apart, softmax one-hot */
    for (int d = 0; d < D; d++) k_cache[1 * D + d] = rig_f32_to_bf16(100.0f);
    for (int d = 0; d < D; d++) q[d] = rig_f32_to_bf16(100.0f);
    decode.scale = 1.0f;
    rig_sim_op_attention_decode(&decode);
    for (int d = 0; d < D; d++) assert_int_equal(attn[d], v_cache[1 * D + d]);
}

/* --- sampling extensions: min_p, penalize, logprobs --------------------------------------- */

/* Index of the rank-th largest z = logits / t in a row (ties to the lower index). */
static int ranked(const float *logits, int vocab, float t, int rank)
{
    int taken[64];
    assert_true(rank < 64);
    for (int k = 0; k <= rank; k++) {
        int best = -1;
        for (int i = 0; i < vocab; i++) {
            bool used = false;
            for (int j = 0; j < k; j++) used |= taken[j] == i;
            if (used) continue;
            if (best < 0 || logits[i] / t > logits[best] / t) best = i;
        }
        taken[k] = best;
    }
    return taken[rank];
}

/* min_p keeps the tokens with p >= min_p * p_max: a min_p that falls between the k-th and the
 * (k+1)-th ratio keeps the same set as top_k = k, so with the same noise the same token comes
 * out. Also: min_p 0 (present) equals absent, min_p 1 is the argmax, greedy rows ignore
 * min_p, and the frequencies over a known distribution. */
static void test_sample_min_p(void **state)
{
    (void)state;
    enum { R = 40, V = 300 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 21);
    struct sample_batch a = {.rows = R, .vocab = V, .logits = xcalloc(R * V, sizeof(float))};
    struct sample_batch b = {.rows = R, .vocab = V, .logits = a.logits, .has_min_p = true};
    for (int i = 0; i < R * V; i++) a.logits[i] = rig_test_rng_float(&rng, -4.0f, 4.0f);
    for (int r = 0; r < R; r++) {
        a.temperature[r] = b.temperature[r] = r % 3 == 0 ? 0.6f : 1.1f;
        a.top_p[r] = b.top_p[r] = 1.0f;
        a.seed[r] = b.seed[r] = (int64_t)rig_test_rng_next(&rng);
        a.position[r] = b.position[r] = (int32_t)rig_test_rng_int(&rng, 0, 5000);
        int k = (int)rig_test_rng_int(&rng, 1, 30);
        const float *row = &a.logits[r * V];
        float t = a.temperature[r];
        double z_max = row[ranked(row, V, t, 0)] / t;
        double in = exp((double)(row[ranked(row, V, t, k - 1)] / t) - z_max);
        double out = exp((double)(row[ranked(row, V, t, k)] / t) - z_max);
        float between = (float)((in + out) / 2.0);
        assert_true((double)between <= in && (double)between > out);
        a.top_k[r] = k;
        b.top_k[r] = 0;
        b.min_p[r] = between;
    }
    run_sample(&a);
    run_sample(&b);
    assert_memory_equal(a.tokens, b.tokens, sizeof a.tokens);
    /* present and 0 = absent; min_p 1 = argmax; greedy rows ignore min_p */
    for (int r = 0; r < R; r++) {
        a.top_k[r] = b.top_k[r] = 0;
        b.min_p[r] = 0.0f;
    }
    run_sample(&a);
    run_sample(&b);
    assert_memory_equal(a.tokens, b.tokens, sizeof a.tokens);
    for (int r = 0; r < R; r++) {
        b.min_p[r] = 1.0f;
        b.temperature[r] = r % 2 ? 0.0f : 0.9f;
    }
    run_sample(&b);
    for (int r = 0; r < R; r++)
        assert_int_equal(b.tokens[r], naive_first_max(&a.logits[r * V], V));
    free(a.logits);
    /* probabilities 0.05, 0.5, 0.15, 0.3: min_p 0.35 keeps 0.5 and 0.3 (0.15 / 0.5 < 0.35);
     * after top_p 0.95 (three kept) min_p 0.25 keeps those three. */
    enum { V4 = 4, DRAWS = 64 * 200 };
    const float logits[V4] = {logf(0.05f), logf(0.5f), logf(0.15f), logf(0.3f)};
    int64_t counts[V4];
    const double two[V4] = {0, 0.625, 0, 0.375};
    sample_counts_min_p(logits, V4, 1.0f, 0, 1.0f, 0.35f, DRAWS, counts);
    check_frequencies(counts, two, V4, DRAWS);
    const double three[V4] = {0, 0.5 / 0.95, 0.15 / 0.95, 0.3 / 0.95};
    sample_counts_min_p(logits, V4, 1.0f, 0, 0.95f, 0.25f, DRAWS, counts);
    check_frequencies(counts, three, V4, DRAWS);
    sample_counts_min_p(logits, V4, 1.0f, 2, 1.0f, 0.01f, DRAWS, counts); /* top_k decides */
    check_frequencies(counts, two, V4, DRAWS);
}

/* The penalised logit of one id under the contract, written out again. */
static float naive_penalised(float logit, int count, float repetition, float frequency,
                             float presence)
{
    float x = logit > 0.0f ? logit / repetition : logit * repetition;
    x = fmaf(-(float)count, frequency, x);
    return count > 0 ? x - presence : x;
}

enum { P_R = 7, P_V = 40, P_ROWS = 9, P_L = 48 };

struct penalize_case {
    float logits[P_R * P_V], want[P_R * P_V];
    int32_t counts[P_R * P_V];
    int32_t pool[P_ROWS * P_L];
    int32_t table_idx[P_R], kv_len[P_R], out_len[P_R];
    float repetition[P_R], frequency[P_R], presence[P_R];
};

static void run_penalize(struct penalize_case *c)
{
    struct rig_op_penalize op = {
        .logits = rig_tensor_2d(c->logits, RIG_DTYPE_F32, P_R, P_V),
        .counts = rig_tensor_2d(c->counts, RIG_DTYPE_I32, P_R, P_V),
        .token_pool = rig_tensor_2d(c->pool, RIG_DTYPE_I32, P_ROWS, P_L),
        .table_idx = rig_tensor_1d(c->table_idx, RIG_DTYPE_I32, P_R),
        .kv_len = rig_tensor_1d(c->kv_len, RIG_DTYPE_I32, P_R),
        .out_len = rig_tensor_1d(c->out_len, RIG_DTYPE_I32, P_R),
        .repetition = rig_tensor_1d(c->repetition, RIG_DTYPE_F32, P_R),
        .frequency = rig_tensor_1d(c->frequency, RIG_DTYPE_F32, P_R),
        .presence = rig_tensor_1d(c->presence, RIG_DTYPE_F32, P_R),
    };
    rig_sim_op_penalize(&op);
}

/* Expected logits by brute force: for every id of the vocabulary, is it in the history, and
 * how often among the generated tokens. */
static void naive_penalize(struct penalize_case *c)
{
    for (int r = 0; r < P_R; r++) {
        int len = c->kv_len[r];
        int n = c->out_len[r] < 0 ? 0 : (c->out_len[r] > len ? len : c->out_len[r]);
        const int32_t *h = &c->pool[c->table_idx[r] * P_L];
        for (int v = 0; v < P_V; v++) {
            bool seen = false;
            int count = 0;
            for (int i = 0; i < len; i++) {
                seen |= h[i] == v;
                count += i >= len - n && h[i] == v;
            }
            float x = c->logits[r * P_V + v];
            c->want[r * P_V + v] = seen ? naive_penalised(x, count, c->repetition[r],
                                                          c->frequency[r], c->presence[r])
                                        : x;
        }
    }
}

/* Random histories full of repeats (ids from a small range), every parameter combination,
 * histories of length 0 and L, out_len negative and past the history, scratch full of
 * garbage: the op equals the brute force bit for bit. Plus one case worked by hand. */
static void test_penalize(void **state)
{
    (void)state;
    static struct penalize_case c;
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 22);
    static const float reps[] = {1.0f, 1.3f, 0.7f, 2.0f};
    static const float freqs[] = {0.0f, 0.5f, -0.7f, 2.0f, 0.3f};
    static const float pres[] = {0.0f, 1.5f, -1.0f};
    static const int32_t lens[] = {0, 1, 10, P_L, 30, 17, 48};
    static const int32_t outs[] = {0, 1, 5, 20, -3, 100, 16};
    for (int round = 0; round < 12; round++) {
        for (int i = 0; i < P_ROWS * P_L; i++) c.pool[i] = (int32_t)rig_test_rng_int(&rng, 0, 12);
        for (int i = 0; i < P_R * P_V; i++) {
            c.logits[i] = rig_test_rng_float(&rng, -3.0f, 3.0f);
            c.counts[i] = (int32_t)rig_test_rng_next(&rng);
        }
        for (int r = 0; r < P_R; r++) {
            c.table_idx[r] = (int32_t)rig_test_rng_int(&rng, 0, P_ROWS - 1);
            c.kv_len[r] = lens[(r + round) % 7];
            c.out_len[r] = outs[(r + 2 * round) % 7];
            c.repetition[r] = reps[(r + round) % 4];
            c.frequency[r] = freqs[(r + round) % 5];
            c.presence[r] = pres[(r + round) % 3];
        }
        naive_penalize(&c);
        run_penalize(&c);
        assert_memory_equal(c.logits, c.want, sizeof c.logits);
    }
    /* logits 2, -2, 1, 0.5; prompt 0 1, generated 2 2 0; repetition 2, frequency 0.5,
     * presence 1: id 0 -> 2/2 - 0.5 - 1, id 1 -> -2*2, id 2 -> 1/2 - 1 - 1, id 3 unchanged */
    memset(&c, 0, sizeof c);
    const float row[4] = {2.0f, -2.0f, 1.0f, 0.5f}, want[4] = {-0.5f, -4.0f, -1.5f, 0.5f};
    memcpy(c.logits, row, sizeof row);
    const int32_t history[5] = {0, 1, 2, 2, 0};
    memcpy(c.pool, history, sizeof history);
    c.kv_len[0] = 5;
    c.out_len[0] = 3;
    c.repetition[0] = 2.0f;
    c.frequency[0] = 0.5f;
    c.presence[0] = 1.0f;
    for (int r = 1; r < P_R; r++) c.repetition[r] = 1.0f;
    run_penalize(&c);
    for (int v = 0; v < 4; v++) assert_true(c.logits[v] == want[v]);
}

enum { L_R = 6, L_V = 300, L_N = 20 };

struct logprobs_case {
    float logits[L_R * L_V];
    float temperature[L_R];
    int32_t tokens[L_R];
    float logprob[L_R];
    int32_t top_ids[L_R * L_N];
    float top_logprobs[L_R * L_N];
};

static void run_logprobs(struct logprobs_case *c, int rows, int vocab, int top)
{
    struct rig_op_logprobs op = {
        .logprob = rig_tensor_1d(c->logprob, RIG_DTYPE_F32, rows),
        .top_ids = top > 0 ? rig_tensor_2d(c->top_ids, RIG_DTYPE_I32, rows, top)
                           : rig_tensor_none(),
        .top_logprobs = top > 0 ? rig_tensor_2d(c->top_logprobs, RIG_DTYPE_F32, rows, top)
                                : rig_tensor_none(),
        .logits = rig_tensor_2d(c->logits, RIG_DTYPE_F32, rows, vocab),
        .temperature = rig_tensor_1d(c->temperature, RIG_DTYPE_F32, rows),
        .tokens = rig_tensor_1d(c->tokens, RIG_DTYPE_I32, rows),
    };
    rig_sim_op_logprobs(&op);
}

/* log_softmax(logits / t)[i] by the textbook formula in long double. */
static double naive_logprob(const float *row, int vocab, float t, int i)
{
    long double total = 0.0L;
    for (int j = 0; j < vocab; j++) total += expl((long double)(row[j] / t));
    return (double)(logl(expl((long double)(row[i] / t)) / total));
}

/* Against the textbook log-softmax and a brute-force ranking: temperatures 0 (as 1), 0.5 and
 * 2, ties (lower id first), a row of 300; greedy tokens' logprob is the top one; N = V on a
 * small vocabulary sums to 1; no alternatives (top tensors absent). */
static void test_logprobs(void **state)
{
    (void)state;
    static struct logprobs_case c;
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 23);
    for (int i = 0; i < L_R * L_V; i++) c.logits[i] = rig_test_rng_float(&rng, -5.0f, 5.0f);
    static const float temps[L_R] = {0.0f, 0.5f, 1.0f, 2.0f, -1.0f, 0.8f};
    for (int r = 0; r < L_R; r++) {
        c.temperature[r] = temps[r];
        c.tokens[r] = (int32_t)rig_test_rng_int(&rng, 0, L_V - 1);
    }
    c.logits[5 * L_V + 10] = c.logits[5 * L_V + 3] = c.logits[5 * L_V + 250] = 9.0f; /* ties */
    c.tokens[0] = naive_first_max(&c.logits[0], L_V);
    run_logprobs(&c, L_R, L_V, L_N);
    for (int r = 0; r < L_R; r++) {
        const float *row = &c.logits[r * L_V];
        float t = temps[r] > 0 ? temps[r] : 1.0f;
        check_close(c.logprob[r], naive_logprob(row, L_V, t, c.tokens[r]), 2e-6, 1e-6,
                    "logprob", r);
        for (int k = 0; k < L_N; k++) {
            int want = ranked(row, L_V, t, k);
            assert_int_equal(c.top_ids[r * L_N + k], want);
            check_close(c.top_logprobs[r * L_N + k], naive_logprob(row, L_V, t, want), 2e-6,
                        1e-6, "top_logprobs", r * L_N + k);
            if (k > 0) assert_true(c.top_logprobs[r * L_N + k] <= c.top_logprobs[r * L_N + k - 1]);
        }
    }
    assert_int_equal(c.top_ids[5 * L_N + 0], 3);
    assert_int_equal(c.top_ids[5 * L_N + 1], 10);
    assert_int_equal(c.top_ids[5 * L_N + 2], 250);
    assert_true(c.logprob[0] == c.top_logprobs[0]); /* greedy: the most likely, to the bit */
    float again = c.logprob[2];
    run_logprobs(&c, L_R, L_V, 0);
    assert_true(c.logprob[2] == again);
    /* N = V = 20: every token; the probabilities sum to 1 */
    c.tokens[0] = c.tokens[1] = 7;
    run_logprobs(&c, 2, L_N, L_N);
    for (int r = 0; r < 2; r++) {
        double total = 0.0;
        for (int k = 0; k < L_N; k++) total += exp((double)c.top_logprobs[r * L_N + k]);
        check_close(total, 1.0, 1e-5, 0.0, "sum of probabilities", r);
    }
}

/* --- invalid index values abort ----------------------------------------------------------- */

enum bad_case {
    BAD_STORE_SLOT,
    BAD_FUSED_SLOT,
    BAD_DECODE_ROW,
    BAD_DECODE_KV_LEN,
    BAD_DECODE_EMPTY,
    BAD_PREFILL_QUERIES,
    BAD_EMBEDDING_ID,
    BAD_GATHER_ROW,
    BAD_INDEX_GATHER,
    BAD_INDEX_SCATTER,
    BAD_ROPE_POSITION,
    BAD_CASE_COUNT
};

/* Runs one kernel on a small valid setup; with `corrupt`, one index value made bad first.
 * Returns only if the kernel did not abort. */
static void run_bad_case(enum bad_case which, bool corrupt)
{
    enum { S = 4, L = 4, D = 4 };
    uint16_t cache_k[S * D] = {0}, cache_v[S * D] = {0}, x[2 * D] = {0}, out[2 * D];
    int32_t table[2 * L] = {0, 1, 2, 3, 3, 2, 1, 0}, idx[2] = {1, 0}, len[2] = {2, 2};
    int32_t cu_q[3] = {0, 1, 2}, flat[4] = {0};
    struct rig_tensor k = rig_tensor_3d(x, RIG_DTYPE_BF16, 2, 1, D);
    struct rig_tensor kc = rig_tensor_3d(cache_k, RIG_DTYPE_BF16, S, 1, D);
    struct rig_tensor vc = rig_tensor_3d(cache_v, RIG_DTYPE_BF16, S, 1, D);
    struct rig_tensor pt = rig_tensor_2d(table, RIG_DTYPE_I32, 2, L);
    struct rig_tensor idx_t = rig_tensor_1d(idx, RIG_DTYPE_I32, 2);
    struct rig_tensor len_t = rig_tensor_1d(len, RIG_DTYPE_I32, 2);
    struct rig_tensor out3 = rig_tensor_3d(out, RIG_DTYPE_BF16, 2, 1, D);
    struct rig_op_attention_decode decode = {out3, k, kc, vc, pt, idx_t, len_t, 1.0f};
    switch (which) {
    case BAD_STORE_SLOT:
        if (corrupt) idx[1] = S;
        rig_sim_op_store_kv(&(struct rig_op_store_kv){kc, vc, k, k, idx_t});
        break;
    case BAD_FUSED_SLOT: {
        if (corrupt) idx[0] = -1;
        struct rig_op_qk_norm_rope_store fused = {.q = k,
                                                  .k = k,
                                                  .v = k,
                                                  .k_cache = kc,
                                                  .v_cache = vc,
                                                  .q_norm = rig_tensor_none(),
                                                  .k_norm = rig_tensor_none(),
                                                  .positions = len_t,
                                                  .out_loc = idx_t,
                                                  .eps = 1e-6f,
                                                  .params = {.theta = 10000.0f}};
        rig_sim_op_qk_norm_rope_store(&fused);
        break;
    }
    case BAD_DECODE_ROW:
        if (corrupt) idx[0] = 2;
        rig_sim_op_attention_decode(&decode);
        break;
    case BAD_DECODE_KV_LEN:
        if (corrupt) len[1] = L + 1;
        rig_sim_op_attention_decode(&decode);
        break;
    case BAD_DECODE_EMPTY:
        if (corrupt) len[0] = 0;
        rig_sim_op_attention_decode(&decode);
        break;
    case BAD_PREFILL_QUERIES:
        if (corrupt) len[0] = 0; /* one query row, no keys */
        rig_sim_op_attention_prefill(&(struct rig_op_attention_prefill){
            out3, k, kc, vc, pt, idx_t, rig_tensor_1d(cu_q, RIG_DTYPE_I32, 3), len_t, 1.0f});
        break;
    case BAD_EMBEDDING_ID:
        if (corrupt) idx[0] = -1;
        rig_sim_op_embedding(&(struct rig_op_embedding){
            rig_tensor_2d(out, RIG_DTYPE_BF16, 2, D), rig_tensor_2d(x, RIG_DTYPE_BF16, 2, D),
            idx_t, 0});
        break;
    case BAD_GATHER_ROW:
        if (corrupt) idx[1] = 2;
        rig_sim_op_gather_rows(&(struct rig_op_gather_rows){
            rig_tensor_2d(out, RIG_DTYPE_BF16, 2, D), rig_tensor_2d(x, RIG_DTYPE_BF16, 2, D),
            idx_t});
        break;
    case BAD_INDEX_GATHER:
        if (corrupt) idx[0] = -1;
        rig_sim_op_index_gather(&(struct rig_op_index_gather){
            rig_tensor_1d(len, RIG_DTYPE_I32, 2), rig_tensor_1d(flat, RIG_DTYPE_I32, 4), idx_t});
        break;
    case BAD_INDEX_SCATTER:
        if (corrupt) idx[0] = 4;
        rig_sim_op_index_scatter(&(struct rig_op_index_scatter){
            rig_tensor_1d(flat, RIG_DTYPE_I32, 4), rig_tensor_1d(len, RIG_DTYPE_I32, 2), idx_t});
        break;
    case BAD_ROPE_POSITION:
        if (corrupt) idx[1] = -3;
        rig_sim_op_rope(&(struct rig_op_rope){k, k, idx_t, {.theta = 10000.0f}});
        break;
    case BAD_CASE_COUNT: break;
    }
}

static void test_bad_indices_abort(void **state)
{
    (void)state;
    for (int which = 0; which < BAD_CASE_COUNT; which++) {
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            FILE *quiet = freopen("/dev/null", "w", stderr); /* the expected assertion text */
            (void)quiet;
            run_bad_case((enum bad_case)which, true);
            _exit(0); /* not aborted: the parent reports it */
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) {
            fail_msg("bad case %d did not abort (status %d)", which, status);
        }
    }
    /* each setup is valid but for the corrupted value: uncorrupted, it runs here */
    for (int which = 0; which < BAD_CASE_COUNT; which++) {
        run_bad_case((enum bad_case)which, false);
    }
}

/* --- copy --------------------------------------------------------------------------------- */

/* A transposed (permuted) f32 view copied into a contiguous bf16 tensor, and back. */
static void test_copy_permuted(void **state)
{
    (void)state;
    enum { A = 2, B = 3, C = 4 };
    float in[A * B * C], back[C * B * A];
    uint16_t out[C * B * A];
    for (int i = 0; i < A * B * C; i++) in[i] = 1.0f + (float)i / 256.0f; /* some are ties */
    /* view[c, b, a] = in[a, b, c] */
    struct rig_tensor view = rig_tensor_3d(in, RIG_DTYPE_F32, C, B, A);
    view.stride[0] = 1;
    view.stride[1] = C;
    view.stride[2] = B * C;
    struct rig_op_copy op = {.out = rig_tensor_3d(out, RIG_DTYPE_BF16, C, B, A), .in = view};
    rig_sim_op_copy(&op);
    for (int a = 0; a < A; a++) {
        for (int b = 0; b < B; b++) {
            for (int c = 0; c < C; c++) {
                float x = in[(a * B + b) * C + c];
                uint16_t got = out[(c * B + b) * A + a];
                /* nearest bf16 (8 significant bits), ties to even, written out by hand */
                double scaled = ldexp((double)x, 7); /* x in [1, 2): units of 2^-7 */
                double lower = floor(scaled), rest = scaled - lower;
                double units = rest > 0.5 || (rest == 0.5 && fmod(lower, 2.0) != 0) ? lower + 1
                                                                                       : lower;
                assert_true(bf(got) == ldexp(units, -7));
            }
        }
    }
    assert_int_equal(out[0], 0x3f80);
    /* and back: bf16 -> f32 through the inverse permutation is exact */
    op.in = rig_tensor_3d(out, RIG_DTYPE_BF16, C, B, A);
    op.out = view;
    op.out.data = back;
    rig_sim_op_copy(&op);
    for (int i = 0; i < A * B * C; i++) assert_true(back[i] == rig_bf16_round(in[i]));
}

/* Same-dtype copies are bit-exact for every dtype, through 4-D and strided 1-D views. */
static void test_copy_raw(void **state)
{
    (void)state;
    int32_t src[2 * 3 * 2 * 5], dst[2 * 3 * 2 * 5];
    for (int i = 0; i < 60; i++) src[i] = i * 1000 - 7;
    struct rig_tensor in = rig_tensor_make(src, RIG_DTYPE_I32, 4, (int64_t[]){2, 3, 2, 5});
    struct rig_tensor out = rig_tensor_make(dst, RIG_DTYPE_I32, 4, (int64_t[]){2, 3, 2, 5});
    struct rig_op_copy op = {.out = out, .in = in};
    memset(dst, 0, sizeof dst);
    rig_sim_op_copy(&op);
    assert_memory_equal(src, dst, sizeof src);
    /* every second element into the first 30 */
    memset(dst, 0, sizeof dst);
    op.in = rig_tensor_1d(src, RIG_DTYPE_I32, 30);
    op.in.stride[0] = 2;
    op.out = rig_tensor_1d(dst, RIG_DTYPE_I32, 30);
    rig_sim_op_copy(&op);
    for (int i = 0; i < 30; i++) assert_int_equal(dst[i], src[2 * i]);
    assert_int_equal(dst[30], 0);
    int64_t wide_in[3] = {INT64_MIN, -1, INT64_MAX}, wide_out[3];
    op.in = rig_tensor_1d(wide_in, RIG_DTYPE_I64, 3);
    op.out = rig_tensor_1d(wide_out, RIG_DTYPE_I64, 3);
    rig_sim_op_copy(&op);
    assert_memory_equal(wide_in, wide_out, sizeof wide_in);
}

/* --- rig_sim_op_run ----------------------------------------------------------------------- */

static void test_op_run_dispatch(void **state)
{
    (void)state;
    enum { T = 3, H = 8 };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 12);
    uint16_t *x = random_bf16(&rng, T * H, -1.0f, 1.0f), *w = random_bf16(&rng, H, 0.5f, 1.5f);
    uint16_t direct[T * H], via_run[T * H];
    struct rig_op op = {.kind = RIG_OP_RMS_NORM};
    op.u.rms_norm = (struct rig_op_rms_norm){
        .out = rig_tensor_2d(direct, RIG_DTYPE_BF16, T, H),
        .in = rig_tensor_2d(x, RIG_DTYPE_BF16, T, H),
        .weight = rig_tensor_1d(w, RIG_DTYPE_BF16, H),
        .eps = 1e-6f,
    };
    rig_sim_op_rms_norm(&op.u.rms_norm);
    op.u.rms_norm.out.data = via_run;
    assert_int_equal(rig_sim_op_run(&op), RIG_OK);
    assert_memory_equal(direct, via_run, sizeof direct);
    struct rig_op gemm = {.kind = RIG_OP_GEMM};
    gemm.u.gemm = (struct rig_op_gemm){
        .out = rig_tensor_2d(via_run, RIG_DTYPE_BF16, T, H),
        .a = rig_tensor_2d(x, RIG_DTYPE_BF16, T, H),
        .b = rig_tensor_2d(x, RIG_DTYPE_BF16, T, H),
        .bias = rig_tensor_none(),
    };
    gemm.u.gemm.out.shape[1] = T; /* [T, T] = x x^T */
    gemm.u.gemm.out.stride[0] = T;
    assert_int_equal(rig_sim_op_run(&gemm), RIG_OK);
    double dot = 0.0;
    for (int h = 0; h < H; h++) dot += bf(x[H + h]) * bf(x[2 * H + h]);
    check_close(bf(via_run[1 * T + 2]), dot, 1e-6, BF16_ROUNDING, "x x^T", 0);
    struct rig_op collective = {.kind = RIG_OP_ALL_REDUCE};
    assert_int_equal(rig_sim_op_run(&collective), RIG_E_UNSUPPORTED);
    collective.kind = RIG_OP_ALL_GATHER;
    assert_int_equal(rig_sim_op_run(&collective), RIG_E_UNSUPPORTED);
    free(x);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedding_full_and_shards),
        cmocka_unit_test(test_rms_norm),
        cmocka_unit_test(test_rms_norm_eps),
        cmocka_unit_test(test_add_rms_norm_aliasing),
        cmocka_unit_test(test_head_rms_norm),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_gemm_strided_a),
        cmocka_unit_test(test_gemm_fused_forms_equal_composition),
        cmocka_unit_test(test_rope_inv_freq),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_qk_norm_rope_store_equals_composition),
        cmocka_unit_test(test_store_kv_strided),
        cmocka_unit_test(test_attention_prefill_gqa),
        cmocka_unit_test(test_attention_chunks_views_decode),
        cmocka_unit_test(test_attention_decode_gqa),
        cmocka_unit_test(test_silu_mul),
        cmocka_unit_test(test_gather_rows),
        cmocka_unit_test(test_index_gather_scatter),
        cmocka_unit_test(test_sample_greedy_forms),
        cmocka_unit_test(test_sample_batch_order),
        cmocka_unit_test(test_sample_distribution),
        cmocka_unit_test(test_sample_top_p),
        cmocka_unit_test(test_sample_timing_only),
        cmocka_unit_test(test_sample_masked_and_ties),
        cmocka_unit_test(test_sample_invalid_rows),
        cmocka_unit_test(test_sample_min_p),
        cmocka_unit_test(test_penalize),
        cmocka_unit_test(test_logprobs),
        cmocka_unit_test(test_exact_cases),
        cmocka_unit_test(test_bad_indices_abort),
        cmocka_unit_test(test_copy_permuted),
        cmocka_unit_test(test_copy_raw),
        cmocka_unit_test(test_op_run_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
