/* test_decode_plan.c — the decode kernels' host-side plans: decode attention's split count for
 * whole waves (rig_cuda_decode_waves, cuda/ops/attention_decode.cu) and the skinny GEMM's cut
 * (rig_cuda_skinny_plan, cuda/ops/gemm_skinny.cu). Host arithmetic of the CUDA backend, which needs
 * no GPU, only a build with the CUDA backend (it skips without one); so the name avoids
 * test_*cuda*, the GPU tests a bundle carries. The cases are the shapes docs/performance.md
 * measured on the H100 (132 SMs; 5 blocks of the D 128, G 2 kernel fit an SM by registers, 4 with
 * the padded shared memory). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#ifdef RIG_HAVE_CUDA
#include "cuda/ops/attention_decode.cuh"
#include "cuda/ops/gemm_skinny.cuh"

enum { RIG__SMS = 132 };

/* 256 x 1024, 8 KV heads: 2,048 blocks. At 5 a SM (660 resident), one split fills its 4 waves
 * to 78 %, two their 7 to 89 %, three their 10 to 93 %: 3. At 4 a SM (528), one split fills
 * its 4 waves to 97 %: 1, which is why the planner pads shared memory there. */
static void test_decode_waves_large_batch(void **state)
{
    (void)state;
    assert_int_equal(rig_cuda_decode_waves(2048, 5 * RIG__SMS, 32), 3);
    assert_int_equal(rig_cuda_decode_waves(2048, 4 * RIG__SMS, 32), 1);
    /* a limit below the answer: the fullest waves within it (2 splits: 89 % against 78 %) */
    assert_int_equal(rig_cuda_decode_waves(2048, 5 * RIG__SMS, 2), 2);
}

/* Batch 1 and 8 never fill a wave: the most splits the limit allows (context 512 with 32-key
 * steps: 16), and a wave's worth exactly is one. */
static void test_decode_waves_small_batch(void **state)
{
    (void)state;
    assert_int_equal(rig_cuda_decode_waves(8, 5 * RIG__SMS, 16), 16);
    assert_int_equal(rig_cuda_decode_waves(64, 5 * RIG__SMS, 16), 10); /* 640: 97 % */
    assert_int_equal(rig_cuda_decode_waves(660, 660, 8), 1);
    assert_int_equal(rig_cuda_decode_waves(8, 660, 0), 1); /* no room to split */
}

/* One plan's fields in order: tiles, splits, steps, steps a split, warps, steps a warp. */
static void rig__expect_skinny(int64_t n, int64_t k, size_t scratch, const int64_t want[6])
{
    struct rig_cuda_skinny_plan plan;
    assert_true(rig_cuda_skinny_plan(n, k, RIG__SMS, scratch, 16384, &plan));
    int64_t got[6] = {plan.tiles,           plan.splits, plan.steps,
                      plan.steps_per_split, plan.warps,  plan.steps_per_warp};
    for (int i = 0; i < 6; i++) {
        if (got[i] != want[i])
            fail_msg("skinny %lld x %lld: field %d is %lld, want %lld", (long long)n, (long long)k,
                     i, (long long)got[i], (long long)want[i]);
    }
}

/* Qwen3-0.6B's decode GEMMs (the comments of gemm_skinny.cu): wide ones unsplit with 8 warps
 * of 4 steps, the 1024-column ones split 4 ways to fill the 132 SMs (128 blocks, 97 %); the
 * LM head unsplit; Llama-3.2-1B's down (2048 x 8192) split twice, 8 warps of 16 steps. */
static void test_skinny_plan(void **state)
{
    (void)state;
    size_t scratch = (size_t)64 << 20;
    rig__expect_skinny(4096, 1024, scratch, (const int64_t[6]){128, 1, 32, 32, 8, 4});
    rig__expect_skinny(1024, 2048, scratch, (const int64_t[6]){32, 4, 64, 16, 4, 4});
    rig__expect_skinny(6144, 1024, scratch, (const int64_t[6]){192, 1, 32, 32, 8, 4});
    rig__expect_skinny(1024, 3072, scratch, (const int64_t[6]){32, 4, 96, 24, 6, 4});
    rig__expect_skinny(151936, 1024, scratch, (const int64_t[6]){4748, 1, 32, 32, 8, 4});
    rig__expect_skinny(2048, 8192, scratch, (const int64_t[6]){64, 2, 256, 128, 8, 16});
    /* no room for partial sums (8 KiB a tile and split): unsplit */
    rig__expect_skinny(1024, 2048, 32 * 8192, (const int64_t[6]){32, 1, 64, 64, 8, 8});
    /* a short K: no split below 4 steps; K 40 is two steps, the second half past K */
    rig__expect_skinny(64, 40, scratch, (const int64_t[6]){2, 1, 2, 2, 1, 2});
    struct rig_cuda_skinny_plan plan;
    assert_false(rig_cuda_skinny_plan(0, 64, RIG__SMS, scratch, 16384, &plan));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_waves_large_batch),
        cmocka_unit_test(test_decode_waves_small_batch),
        cmocka_unit_test(test_skinny_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
    printf("test_decode_plan: built without the CUDA backend; skipped\n");
    return 77;
}
#endif
