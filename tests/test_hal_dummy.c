/* test_hal_dummy.c — seeded dummy weights (hal/dummy.h) and their fill,
 * rig_hal_buffer_fill_dummy, on the simulator.
 *
 * Checks: for a matrix block of a column-split tensor (row-parallel TP rank 1 of 2), a
 * vocabulary row block (embedding, TP rank 2 of 4), a norm weight, a bias block, a block
 * whose width and first column are not multiples of 4, and one whose element indices pass
 * 2^34 (the Philox counter's high word) under a seed with both key words set, the bytes the
 * simulator's fill writes at an offset are exactly (a) those of the reference below — the
 * formula of docs/model.md written out per element, independent of hal/dummy.h but for
 * Philox itself (pinned by test_philox) — and (b) the FNV-1a-64 of the bytes that
 * core/model/weights.c generated on the host before generation moved to the device
 * (computed from its rig__dummy_block at c75069a), while the bytes around the block stay
 * untouched; the values lie in their kind's range and span it. Invalid arguments (a NULL
 * piece, an odd offset, a block outside its tensor, element indices past INT64_MAX, a block
 * past the buffer, a stream that captures) are refused with their status and write
 * nothing; an empty block is a no-op. A fill takes on the stream exactly the modelled time
 * of a 32-bit fill of the same bytes, and on a timing-only device it runs on phantom memory
 * without touching it. The host rounds offset + scale·u twice (a word whose value one FMA
 * rounding would change).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hal/dummy.h"
#include "hal/philox.h"
#include "tests/support/test_support.h"

#define RIG__HALF_RANGE (0.02f * 1.7320508f) /* weights.c's matrices: std 0.02 */

struct rig__case {
    const char *name;
    float scale, offset;
    int64_t width, row0, rows, col0, cols;
    uint64_t seed;
    uint64_t fnv_at_c75069a; /* FNV-1a-64 of the block's bytes from weights.c at c75069a */
};

static const struct rig__case RIG__CASES[] = {
    {"model.layers.0.mlp.down_proj.weight", RIG__HALF_RANGE, 0.0f, 3072, 0, 16, 1536, 1536, 1,
     0xcf66445363b365bfull},
    {"model.embed_tokens.weight", RIG__HALF_RANGE, 0.0f, 1024, 75968, 8, 0, 1024, 7,
     0x44c962cb8a10f47bull},
    {"model.layers.3.input_layernorm.weight", 0.1f, 1.0f, 1, 0, 1024, 0, 1, 1,
     0xf7fc1539af1a6b56ull},
    {"model.layers.1.self_attn.k_proj.bias", 0.02f, 0.0f, 1, 256, 128, 0, 1, 1,
     0xba7256f0cd749ab6ull},
    {"odd.weight", RIG__HALF_RANGE, 0.0f, 1001, 7, 5, 3, 997, 0x123456789abcdef0ull,
     0x3a67013cfec2fd7aull},
    {"huge.weight", RIG__HALF_RANGE, 0.0f, 1048576, 65539, 2, 1048570, 6, 42,
     0x3474c0b3c9cd02d7ull},
};

#define RIG__CASE_COUNT ((int)(sizeof RIG__CASES / sizeof RIG__CASES[0]))
#define RIG__GUARD 6 /* bytes before the block: not a multiple of 4 or 8 */

static struct rig_dummy_piece rig__piece_of(const struct rig__case *c)
{
    return (struct rig_dummy_piece){.seed = c->seed, .tag = rig_dummy_tag(c->name),
                                    .scale = c->scale, .offset = c->offset,
                                    .width = c->width, .row0 = c->row0, .col0 = c->col0,
                                    .rows = c->rows, .cols = c->cols};
}

/* FNV-1a of the name, as docs/model.md states it (32-bit offset basis and prime). */
static uint32_t rig__reference_tag(const char *name)
{
    uint32_t hash = 0x811c9dc5u;
    for (size_t i = 0; name[i] != '\0'; i++) {
        hash ^= (unsigned char)name[i];
        hash *= 0x01000193u;
    }
    return hash;
}

/* float to bf16, round to nearest even (no NaN can occur here). */
static uint16_t rig__reference_bf16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(rounded >> 16);
}

/* Element `index` of the full tensor: one Philox call per element, no caching. */
static uint16_t rig__reference_value(const struct rig__case *c, uint64_t index)
{
    uint64_t group = index / 4;
    struct rig_philox_out out = rig_philox4x32(c->seed, (uint32_t)group, (uint32_t)(group >> 32),
                                               0x57474854u, rig__reference_tag(c->name));
    uint32_t k = out.v[index % 4] >> 9; /* the top 23 bits */
    float unit = ((float)k + 0.5f) / 8388608.0f;
    float u = unit * 2.0f - 1.0f;
    float scaled = c->scale * u;
    return rig__reference_bf16(scaled + c->offset);
}

static uint64_t rig__fnv64(const uint16_t *values, size_t n)
{
    uint64_t hash = 14695981039346656037ull;
    const uint8_t *bytes = (const uint8_t *)values;
    for (size_t i = 0; i < 2 * n; i++) hash = (hash ^ bytes[i]) * 1099511628211ull;
    return hash;
}

/* Every value of the block inside its kind's range: offset ± scale, rounded to bf16 (a
 * monotonic rounding); a block of 100 or more spans most of it. */
static void rig__expect_in_range(const struct rig__case *c, const uint16_t *values, size_t n)
{
    float lo = rig_bf16_round(c->offset - c->scale), hi = rig_bf16_round(c->offset + c->scale);
    float min = INFINITY, max = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        float v = rig_bf16_to_f32(values[i]);
        assert_true(v >= lo && v <= hi);
        min = v < min ? v : min;
        max = v > max ? v : max;
    }
    if (n < 100) return;
    assert_true(min < c->offset - c->scale / 2);
    assert_true(max > c->offset + c->scale / 2);
}

static void test_fill_matches_reference(void **state)
{
    (void)state;
    struct rig_device *device;
    struct rig_stream *stream;
    rig_test_open_sim(1, false, &device);
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    for (int i = 0; i < RIG__CASE_COUNT; i++) {
        const struct rig__case *c = &RIG__CASES[i];
        struct rig_dummy_piece piece = rig__piece_of(c);
        assert_int_equal(piece.tag, rig__reference_tag(c->name));
        size_t n = (size_t)(c->rows * c->cols), bytes = RIG__GUARD + 2 * n + 10;
        struct rig_buffer *buffer;
        assert_int_equal(rig_hal_buffer_alloc(device, bytes, RIG_MEMORY_WEIGHTS, &buffer),
                         RIG_OK);
        uint8_t *back = malloc(bytes);
        uint16_t *expected = malloc(2 * n);
        assert_non_null(back);
        assert_non_null(expected);
        assert_int_equal(rig_hal_buffer_fill(stream, buffer, 0, 0xa5a5a5a5u, bytes / 4), RIG_OK);
        assert_int_equal(rig_hal_buffer_fill_dummy(stream, buffer, RIG__GUARD, &piece), RIG_OK);
        assert_int_equal(rig_hal_buffer_download(stream, buffer, 0, back, bytes), RIG_OK);
        assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
        for (int64_t r = 0; r < c->rows; r++)
            for (int64_t col = 0; col < c->cols; col++)
                expected[r * c->cols + col] = rig__reference_value(
                    c, (uint64_t)((c->row0 + r) * c->width + c->col0 + col));
        assert_memory_equal(back + RIG__GUARD, expected, 2 * n);
        assert_int_equal(rig__fnv64(expected, n), c->fnv_at_c75069a);
        for (size_t b = 0; b < RIG__GUARD; b++) assert_int_equal(back[b], 0xa5);
        for (size_t b = RIG__GUARD + 2 * n; b < bytes / 4 * 4; b++) assert_int_equal(back[b], 0xa5);
        rig__expect_in_range(c, expected, n);
        free(back);
        free(expected);
        rig_hal_buffer_free(buffer);
    }
    rig_hal_stream_destroy(stream);
    rig_hal_close(device);
}

/* Every fill of `piece` at `offset` is refused with `status`, and the buffer stays zero. */
static void rig__expect_refused(struct rig_stream *stream, struct rig_buffer *buffer,
                                size_t offset, const struct rig_dummy_piece *piece,
                                enum rig_status status)
{
    uint8_t back[256];
    assert_int_equal(rig_hal_buffer_fill_dummy(stream, buffer, offset, piece), status);
    assert_int_equal(rig_hal_buffer_download(stream, buffer, 0, back, sizeof back), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    for (size_t i = 0; i < sizeof back; i++) assert_int_equal(back[i], 0);
}

static void test_fill_refuses_bad_arguments(void **state)
{
    (void)state;
    struct rig_device *device;
    struct rig_stream *stream;
    struct rig_buffer *buffer;
    rig_test_open_sim(1, false, &device);
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    assert_int_equal(rig_hal_buffer_alloc(device, 256, RIG_MEMORY_WEIGHTS, &buffer), RIG_OK);
    const struct rig_dummy_piece good = {.seed = 1, .tag = rig_dummy_tag("w"), .scale = 0.5f,
                                         .width = 16, .row0 = 2, .rows = 4, .col0 = 4,
                                         .cols = 12}; /* 96 bytes */
    struct rig_dummy_piece p;
    rig__expect_refused(stream, buffer, 0, NULL, RIG_E_INVALID);
    rig__expect_refused(stream, buffer, 1, &good, RIG_E_INVALID);
    p = good, p.cols = 13;
    rig__expect_refused(stream, buffer, 0, &p, RIG_E_INVALID); /* col0 + cols > width */
    p = good, p.width = 0, p.col0 = 0, p.cols = 0;
    rig__expect_refused(stream, buffer, 0, &p, RIG_E_INVALID);
    p = good, p.rows = -1;
    rig__expect_refused(stream, buffer, 0, &p, RIG_E_INVALID);
    p = good, p.row0 = -1;
    rig__expect_refused(stream, buffer, 0, &p, RIG_E_INVALID);
    p = good, p.col0 = -4;
    rig__expect_refused(stream, buffer, 0, &p, RIG_E_INVALID);
    p = good, p.row0 = INT64_MAX / 16 - 3; /* the last row's elements pass INT64_MAX */
    rig__expect_refused(stream, buffer, 0, &p, RIG_E_INVALID);
    p.row0 = INT64_MAX / 16 - 4; /* they do not */
    rig__expect_refused(stream, buffer, 256, &p, RIG_E_RANGE);
    rig__expect_refused(stream, buffer, 162, &good, RIG_E_RANGE); /* 2 bytes past the end */
    p = good, p.width = INT64_MAX / 4, p.row0 = 0, p.rows = 3, p.col0 = 0, p.cols = p.width;
    rig__expect_refused(stream, buffer, 0, &p, RIG_E_RANGE); /* far past the buffer */
    p = good, p.rows = 0;
    rig__expect_refused(stream, buffer, 0, &p, RIG_OK); /* empty: nothing written */
    rig__expect_refused(stream, buffer, 256, &p, RIG_OK);
    assert_int_equal(rig_hal_buffer_fill_dummy(NULL, buffer, 0, &good), RIG_E_HANDLE);
    assert_int_equal(rig_hal_buffer_fill_dummy(stream, NULL, 0, &good), RIG_E_HANDLE);
    struct rig_graph *graph = NULL;
    assert_int_equal(rig_hal_graph_capture_begin(stream), RIG_OK);
    assert_int_equal(rig_hal_buffer_fill_dummy(stream, buffer, 0, &good), RIG_E_STATE);
    assert_int_equal(rig_hal_graph_capture_end(stream, &graph), RIG_OK);
    assert_int_equal(rig_hal_graph_op_count(graph), 0);
    rig_hal_graph_destroy(graph);
    /* A block ending at the buffer's last byte is filled, and nothing before it. */
    uint8_t back[256];
    assert_int_equal(rig_hal_buffer_fill_dummy(stream, buffer, 160, &good), RIG_OK);
    assert_int_equal(rig_hal_buffer_download(stream, buffer, 0, back, sizeof back), RIG_OK);
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    for (size_t i = 0; i < 160; i++) assert_int_equal(back[i], 0);
    uint16_t expected[48];
    rig_dummy_fill_host(&good, expected);
    assert_memory_equal(back + 160, expected, sizeof expected);
    rig_hal_buffer_free(buffer);
    rig_hal_stream_destroy(stream);
    rig_hal_close(device);
}

/* Elapsed stream time of `fill_dummy` (true) or a 32-bit fill of the same bytes (false),
 * issued with the host caught up with the stream. */
static int64_t rig__fill_ns(struct rig_device *device, struct rig_stream *stream,
                            struct rig_buffer *buffer, const struct rig_dummy_piece *piece,
                            bool fill_dummy)
{
    struct rig_event *start, *end;
    int64_t ns = -1;
    assert_int_equal(rig_hal_stream_synchronize(stream), RIG_OK);
    assert_int_equal(rig_hal_event_create(device, &start), RIG_OK);
    assert_int_equal(rig_hal_event_create(device, &end), RIG_OK);
    assert_int_equal(rig_hal_event_record(start, stream), RIG_OK);
    size_t bytes = (size_t)(piece->rows * piece->cols) * 2;
    if (fill_dummy)
        assert_int_equal(rig_hal_buffer_fill_dummy(stream, buffer, 0, piece), RIG_OK);
    else
        assert_int_equal(rig_hal_buffer_fill(stream, buffer, 0, 7, bytes / 4), RIG_OK);
    assert_int_equal(rig_hal_event_record(end, stream), RIG_OK);
    assert_int_equal(rig_hal_event_synchronize(end), RIG_OK);
    assert_int_equal(rig_hal_event_elapsed_ns(start, end, &ns), RIG_OK);
    rig_hal_event_destroy(start);
    rig_hal_event_destroy(end);
    return ns;
}

static void test_fill_time_and_phantom(void **state)
{
    (void)state;
    const struct rig_dummy_piece piece = {.seed = 3, .tag = rig_dummy_tag("lm_head.weight"),
                                          .scale = RIG__HALF_RANGE, .width = 4096,
                                          .rows = 1024, .cols = 4096}; /* 8 MiB */
    size_t bytes = (size_t)(piece.rows * piece.cols) * 2;
    for (int timing_only = 0; timing_only < 2; timing_only++) {
        struct rig_device *device;
        struct rig_stream *stream;
        struct rig_buffer *buffer;
        rig_test_open_sim(1, timing_only != 0, &device);
        assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
        assert_int_equal(rig_hal_buffer_alloc(device, bytes, RIG_MEMORY_WEIGHTS, &buffer),
                         RIG_OK);
        int64_t dummy_ns = rig__fill_ns(device, stream, buffer, &piece, true);
        int64_t fill_ns = rig__fill_ns(device, stream, buffer, &piece, false);
        assert_true(dummy_ns > 0);
        assert_int_equal(dummy_ns, fill_ns);
        rig_hal_buffer_free(buffer);
        rig_hal_stream_destroy(stream);
        rig_hal_close(device);
    }
}

/* The host rounds offset + scale·u twice, as the device must: word 0x85000400 at the norm
 * weights' 1 ± 0.1 is one of the 7 in 2^23 whose bf16 a single (FMA) rounding changes. */
static void test_two_roundings(void **state)
{
    (void)state;
    const uint32_t word = 0x85000400u;
    float u = ((float)(word >> 9) + 0.5f) / 8388608.0f * 2.0f - 1.0f;
    float scaled = 0.1f * u;
    uint16_t twice = rig__reference_bf16(1.0f + scaled);
    assert_int_equal(rig_dummy_from_word(word, 0.1f, 1.0f), twice);
    assert_int_not_equal(rig__reference_bf16(fmaf(0.1f, u, 1.0f)), twice);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_matches_reference),
        cmocka_unit_test(test_fill_refuses_bad_arguments),
        cmocka_unit_test(test_fill_time_and_phantom),
        cmocka_unit_test(test_two_roundings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
