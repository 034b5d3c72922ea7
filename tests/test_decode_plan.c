/* test_decode_plan.c — decode attention's split count for whole waves (rig_cuda_decode_waves,
 * cuda/ops/attention_decode.cu): host-side planning of the CUDA backend, which needs no GPU,
 * only a build with the CUDA backend (it skips without one); so the name avoids test_*cuda*,
 * the GPU tests a bundle carries. The cases are the shapes
 * docs/performance.md measured on the H100 (132 SMs; 5 blocks of the D 128, G 2 kernel fit an
 * SM by registers, 4 with the padded shared memory). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#ifdef RIG_HAVE_CUDA
#include "cuda/ops/attention_decode.cuh"

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

/* One split from 80 % of a wave up (RIG_DECODE_ONE_SPLIT's default; measured on an H200,
 * Qwen3-0.6B's 8 KV heads at 4 blocks a SM: 528 resident). 56 rows (448 blocks, 85 %) take one
 * split, 48 (384, 73 %) keep the wave rule's count; 0 never, 100 from a full wave. */
static void test_decode_one_split(void **state)
{
    (void)state;
    assert_true(rig_cuda_decode_one_split(56 * 8, 4 * RIG__SMS, 80));
    assert_false(rig_cuda_decode_one_split(48 * 8, 4 * RIG__SMS, 80));
    assert_true(rig_cuda_decode_one_split(256 * 8, 4 * RIG__SMS, 80));
    assert_false(rig_cuda_decode_one_split(256 * 8, 4 * RIG__SMS, 0));
    assert_false(rig_cuda_decode_one_split(65 * 8, 4 * RIG__SMS, 100)); /* 520 < 528 */
    assert_true(rig_cuda_decode_one_split(66 * 8, 4 * RIG__SMS, 100));
}

/* A row's share of keys at batch 1 (Qwen3-0.6B's shape: 32-key steps, 60 splits planned for 8
 * KV heads on 132 SMs). Without the cap a 1,664-key row ran 52 one-step splits (21.8 us warm
 * on an H200) where 13 four-step ones took 11.5; the cap holds a row of up to 16 x 16 steps to
 * 16 splits, and a longer one splits by 16-step shares up to the planned count. */
static void test_decode_share_cap(void **state)
{
    (void)state;
    /* without the cap (0): ceil(keys / splits) in whole steps, at least split_steps */
    assert_int_equal(rig_cuda_decode_share(1664, 60, 32, 1, 0), 32);   /* 52 splits */
    assert_int_equal(rig_cuda_decode_share(2048, 60, 32, 1, 0), 64);   /* 32 splits */
    assert_int_equal(rig_cuda_decode_share(1664, 60, 32, 4, 0), 128);  /* 13 splits */
    /* the cap: at most 16 splits up to 16 x 16 steps */
    assert_int_equal(rig_cuda_decode_share(512, 60, 32, 1, 16), 32);   /* 16 splits, as before */
    assert_int_equal(rig_cuda_decode_share(1664, 60, 32, 1, 16), 128); /* 13 splits of 4 steps */
    assert_int_equal(rig_cuda_decode_share(2048, 60, 32, 1, 16), 128); /* 16 of 4 */
    assert_int_equal(rig_cuda_decode_share(8192, 60, 32, 1, 16), 512); /* 16 of 16 */
    /* longer: 16-step shares, as many splits as that takes, within the planned 60 */
    assert_int_equal(rig_cuda_decode_share(16384, 60, 32, 1, 16), 512);  /* 32 splits */
    assert_int_equal(rig_cuda_decode_share(65536, 60, 32, 1, 16), 1120); /* 59 splits of 35 */
    /* a planned count below the cap wins (a big batch's few splits): the cap only lowers */
    assert_int_equal(rig_cuda_decode_share(2048, 8, 32, 1, 16), 256);
    assert_int_equal(rig_cuda_decode_share(0, 60, 32, 1, 16), 32); /* an empty row: one step */
}

/* The grid the register path launches under the cap: the most splits a row of the table's
 * width runs (a table 2,048 keys wide at batch 1: 16, not the planned 60), never above the
 * plan, the plan itself without a cap; and for every row length up to the width (and beyond
 * it) the share is the one the planned count gives, so the same splits do the same work. */
static void test_decode_grid_splits(void **state)
{
    (void)state;
    assert_int_equal(rig_cuda_decode_grid_splits(60, 2048, 32, 16), 16);
    assert_int_equal(rig_cuda_decode_grid_splits(64, 8192, 32, 16), 16);   /* 256 steps */
    assert_int_equal(rig_cuda_decode_grid_splits(64, 8224, 32, 16), 17);   /* 257 steps */
    assert_int_equal(rig_cuda_decode_grid_splits(64, 40960, 32, 16), 64);  /* 80 > 64 */
    assert_int_equal(rig_cuda_decode_grid_splits(10, 2048, 32, 16), 10);   /* never more */
    assert_int_equal(rig_cuda_decode_grid_splits(60, 2048, 64, 0), 60);    /* no cap */
    assert_int_equal(rig_cuda_decode_grid_splits(60, 0, 32, 16), 16);
    static const struct {
        int32_t planned;
        int64_t cols, keys_per_step;
        int32_t split_steps, cap;
    } cases[] = {
        {60, 2048, 32, 1, 16}, {64, 4096, 32, 1, 16}, {64, 12000, 32, 1, 16},
        {41, 2048, 32, 1, 16}, {64, 40960, 32, 1, 16}, {64, 16384, 16, 2, 16},
        {20, 3000, 32, 1, 8},  {64, 65536, 32, 1, 16}, {3, 1024, 32, 1, 16},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int32_t grid = rig_cuda_decode_grid_splits(cases[c].planned, cases[c].cols,
                                                   cases[c].keys_per_step, cases[c].cap);
        assert_true(grid >= 1 && grid <= cases[c].planned);
        for (int64_t keys = 0; keys <= cases[c].cols + 100; keys++) {
            int64_t planned = rig_cuda_decode_share(keys, cases[c].planned, cases[c].keys_per_step,
                                                    cases[c].split_steps, cases[c].cap);
            int64_t trimmed = rig_cuda_decode_share(keys, grid, cases[c].keys_per_step,
                                                    cases[c].split_steps, cases[c].cap);
            int64_t active = keys > trimmed ? (keys + trimmed - 1) / trimmed : 1;
            assert_true(active <= grid); /* every key has a block */
            if (keys <= cases[c].cols && planned != trimmed)
                fail_msg("case %zu: %lld keys: share %lld planned, %lld trimmed", c,
                         (long long)keys, (long long)planned, (long long)trimmed);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_waves_large_batch),
        cmocka_unit_test(test_decode_waves_small_batch),
        cmocka_unit_test(test_decode_one_split),
        cmocka_unit_test(test_decode_share_cap),
        cmocka_unit_test(test_decode_grid_splits),
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
