/* test_safetensors.c — the safetensors reader (core/model/safetensors.c).
 *
 * Writes small checkpoints into a temporary directory byte by byte (header length, JSON
 * header, data) and checks: BF16/F16/F32 tensors read back as the expected bf16 values,
 * blocks (rows × columns) read the right elements, the committed golden checkpoints (one
 * single-file, one sharded with an index) open with the expected tensors; and that every
 * kind of damage — truncated data, a header longer than the file, broken JSON, missing
 * fields, byte counts that disagree with the shape, an index naming a missing file or a
 * tensor its file lacks, a tensor in two shards — is refused with the file's and the
 * tensor's name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/model/safetensors.h"
#include "tests/support/test_support.h"

static char rig__dir[256];

static void rig__path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", rig__dir, name);
}

/* Writes a safetensors file: header text (padded with spaces to a multiple of 8), then
 * `data_bytes` of data; `header_len_override` != 0 replaces the length field. */
static void rig__write(const char *name, const char *header, const void *data,
                       size_t data_bytes, uint64_t header_len_override)
{
    char path[512];
    rig__path(path, sizeof path, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    size_t n = strlen(header);
    size_t padded = (n + 7) / 8 * 8;
    uint64_t len = header_len_override != 0 ? header_len_override : padded;
    uint8_t bytes[8];
    for (int i = 0; i < 8; i++) bytes[i] = (uint8_t)(len >> (8 * i));
    assert_int_equal(fwrite(bytes, 1, 8, f), 8);
    assert_int_equal(fwrite(header, 1, n, f), n);
    for (size_t i = n; i < padded; i++) fputc(' ', f);
    if (data_bytes > 0) assert_int_equal(fwrite(data, 1, data_bytes, f), data_bytes);
    fclose(f);
}

static void rig__write_text(const char *name, const char *text)
{
    char path[512];
    rig__path(path, sizeof path, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int rig__setup(void **state)
{
    (void)state;
    snprintf(rig__dir, sizeof rig__dir, "/tmp/rig_test_safetensors_XXXXXX");
    return mkdtemp(rig__dir) == NULL ? -1 : 0;
}

static int rig__teardown(void **state)
{
    (void)state;
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", rig__dir);
    return system(command) == 0 ? 0 : -1;
}

/* A bf16 [2, 3], an f16 [3], an f32 [2, 2], an I64 [1]: data laid out back to back. */
static void rig__write_mixed(const char *name)
{
    uint8_t data[12 + 6 + 16 + 8];
    uint16_t bf[6];
    for (int i = 0; i < 6; i++) bf[i] = rig_f32_to_bf16((float)i - 2.5f);
    uint16_t f16[3] = {rig_f32_to_f16(0.5f), rig_f32_to_f16(-3.0f), rig_f32_to_f16(1024.0f)};
    float f32[4] = {1.0f, 1.00390625f + 1e-4f, -7.25f, 3.14159265f};
    int64_t i64 = 42;
    memcpy(data, bf, 12);
    memcpy(data + 12, f16, 6);
    memcpy(data + 18, f32, 16);
    memcpy(data + 34, &i64, 8);
    rig__write(name,
               "{\"__metadata__\": {\"format\": \"pt\"},"
               " \"a.bf16\": {\"dtype\": \"BF16\", \"shape\": [2, 3], \"data_offsets\": [0, 12]},"
               " \"b.f16\": {\"dtype\": \"F16\", \"shape\": [3], \"data_offsets\": [12, 18]},"
               " \"c.f32\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [18, 34]},"
               " \"d.i64\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [34, 42]}}",
               data, sizeof data, 0);
}

static void test_read_dtypes(void **state)
{
    (void)state;
    rig__write_mixed("mixed.safetensors");
    char path[512], error[256];
    rig__path(path, sizeof path, "mixed.safetensors");
    struct rig_safetensors *st = NULL;
    assert_int_equal(rig_safetensors_open(path, &st, error, sizeof error), RIG_OK);
    assert_int_equal(rig_safetensors_count(st), 4);
    assert_string_equal(rig_safetensors_at(st, 0)->name, "a.bf16"); /* sorted */
    assert_string_equal(rig_safetensors_file_name(st, 0), "mixed.safetensors");

    const struct rig_safetensors_tensor *a = rig_safetensors_find(st, "a.bf16");
    assert_non_null(a);
    assert_int_equal(a->dtype, RIG_DTYPE_BF16);
    assert_int_equal(a->ndim, 2);
    assert_int_equal(a->shape[1], 3);
    uint16_t out[6];
    rig_safetensors_read_bf16(a, 0, 2, 1, 2, out); /* columns 1..2 of both rows */
    assert_float_equal(rig_bf16_to_f32(out[0]), -1.5f, 0.0f);
    assert_float_equal(rig_bf16_to_f32(out[1]), -0.5f, 0.0f);
    assert_float_equal(rig_bf16_to_f32(out[2]), 1.5f, 0.0f);
    assert_float_equal(rig_bf16_to_f32(out[3]), 2.5f, 0.0f);

    const struct rig_safetensors_tensor *b = rig_safetensors_find(st, "b.f16");
    rig_safetensors_read_bf16(b, 1, 2, 0, 1, out); /* 1-D read as [n, 1] */
    assert_float_equal(rig_bf16_to_f32(out[0]), -3.0f, 0.0f);
    assert_float_equal(rig_bf16_to_f32(out[1]), 1024.0f, 0.0f);

    const struct rig_safetensors_tensor *c = rig_safetensors_find(st, "c.f32");
    rig_safetensors_read_bf16(c, 0, 2, 0, 2, out);
    assert_int_equal(out[0], 0x3f80);
    assert_int_equal(out[1], 0x3f81); /* 1.0039... rounds up to the next bf16 */
    assert_float_equal(rig_bf16_to_f32(out[2]), -7.25f, 0.0f);
    assert_int_equal(out[3], rig_f32_to_bf16(3.14159265f));

    const struct rig_safetensors_tensor *d = rig_safetensors_find(st, "d.i64");
    assert_int_equal(d->dtype, RIG_DTYPE_COUNT);
    assert_string_equal(d->dtype_name, "I64");
    assert_null(rig_safetensors_find(st, "missing"));
    rig_safetensors_close(st);
    rig_safetensors_close(NULL);
}

static void test_golden_checkpoints(void **state)
{
    (void)state;
    struct rig_safetensors *st = NULL;
    char error[256];
    assert_int_equal(rig_safetensors_open(RIG_TEST_DATA_DIR "/golden/llama", &st, error,
                                          sizeof error), RIG_OK);
    assert_int_equal(rig_safetensors_count(st), 21); /* 2 layers × 9 + embed, norm, head */
    const struct rig_safetensors_tensor *t = rig_safetensors_find(st, "model.embed_tokens.weight");
    assert_non_null(t);
    assert_int_equal(t->shape[0], 1001);
    assert_int_equal(t->shape[1], 128);
    const struct rig_safetensors_tensor *head = rig_safetensors_find(st, "lm_head.weight");
    assert_non_null(head);
    assert_int_equal(head->dtype, RIG_DTYPE_BF16);
    assert_int_not_equal(head->file, t->file); /* two shards: embed and head apart */
    rig_safetensors_close(st);

    assert_int_equal(rig_safetensors_open(RIG_TEST_DATA_DIR "/golden/qwen3", &st, error,
                                          sizeof error), RIG_OK);
    assert_non_null(rig_safetensors_find(st, "model.layers.1.self_attn.q_norm.weight"));
    assert_null(rig_safetensors_find(st, "lm_head.weight")); /* tied */
    rig_safetensors_close(st);
}

/* Expects open to fail with `status` and a message containing both needles. */
static void rig__expect_fail(const char *name, enum rig_status status, const char *needle1,
                             const char *needle2)
{
    char path[512], error[256] = "";
    rig__path(path, sizeof path, name);
    struct rig_safetensors *st = (struct rig_safetensors *)0x1;
    assert_int_equal(rig_safetensors_open(path, &st, error, sizeof error), status);
    assert_ptr_equal(st, (struct rig_safetensors *)0x1); /* untouched */
    if (strstr(error, needle1) == NULL || (needle2 != NULL && strstr(error, needle2) == NULL))
        fail_msg("'%s' lacks '%s' / '%s'", error, needle1, needle2 ? needle2 : "");
}

static void test_damaged_files(void **state)
{
    (void)state;
    uint8_t data[16] = {0};
    const char *one =
        "{\"w\": {\"dtype\": \"BF16\", \"shape\": [2, 4], \"data_offsets\": [0, 16]}}";
    rig__write("truncated.safetensors", one, data, 10, 0);
    rig__expect_fail("truncated.safetensors", RIG_E_PARSE, "'w'", "truncated");
    rig__write("long_header.safetensors", one, data, 16, 1u << 20);
    rig__expect_fail("long_header.safetensors", RIG_E_PARSE, "long_header", "header length");
    rig__write("huge_header.safetensors", one, data, 16, 1ull << 40);
    rig__expect_fail("huge_header.safetensors", RIG_E_PARSE, "huge_header", "100 MB");
    rig__write("not_json.safetensors", "{\"w\": [", data, 16, 0);
    rig__expect_fail("not_json.safetensors", RIG_E_PARSE, "not_json", "JSON");
    rig__write("no_dtype.safetensors", "{\"w\": {\"shape\": [2], \"data_offsets\": [0, 4]}}",
               data, 16, 0);
    rig__expect_fail("no_dtype.safetensors", RIG_E_PARSE, "'w'", "dtype");
    rig__write("mismatch.safetensors",
               "{\"w\": {\"dtype\": \"F32\", \"shape\": [2, 4], \"data_offsets\": [0, 16]}}",
               data, 16, 0);
    rig__expect_fail("mismatch.safetensors", RIG_E_PARSE, "'w'", "do not hold");
    rig__write("dims.safetensors",
               "{\"w\": {\"dtype\": \"U8\", \"shape\": [1,1,1,1,16], \"data_offsets\": [0, 16]}}",
               data, 16, 0);
    rig__expect_fail("dims.safetensors", RIG_E_PARSE, "'w'", "dims");
    rig__write("negative.safetensors",
               "{\"w\": {\"dtype\": \"U8\", \"shape\": [-16], \"data_offsets\": [0, 16]}}",
               data, 16, 0);
    rig__expect_fail("negative.safetensors", RIG_E_PARSE, "'w'", "shape");
    /* Issue 15: the element count must not wrap (2^40 * 2^24 = 2^64 = 0 elements). */
    rig__write("wraps.safetensors",
               "{\"w\": {\"dtype\": \"U8\", \"shape\": [1099511627776, 16777216], "
               "\"data_offsets\": [0, 0]}}", data, 16, 0);
    rig__expect_fail("wraps.safetensors", RIG_E_PARSE, "'w'", "too large");
    /* A header of no tensors opens; finding a name in it searches no NULL array (UBSan). */
    rig__write("empty.safetensors", "{}", data, 0, 0);
    char path[512], error[256];
    rig__path(path, sizeof path, "empty.safetensors");
    struct rig_safetensors *st = NULL;
    assert_int_equal(rig_safetensors_open(path, &st, error, sizeof error), RIG_OK);
    assert_int_equal(rig_safetensors_count(st), 0);
    assert_null(rig_safetensors_find(st, "w"));
    rig_safetensors_close(st);
    rig__write_text("tiny.safetensors", "abc");
    rig__expect_fail("tiny.safetensors", RIG_E_PARSE, "tiny", "truncated");
    rig__expect_fail("absent.safetensors", RIG_E_IO, "absent", NULL);
}

static void test_sharded_index(void **state)
{
    (void)state;
    char sub[512], error[256];
    rig__path(sub, sizeof sub, "sharded");
    assert_int_equal(mkdir(sub, 0700), 0);
    uint16_t data[4] = {0x3f80, 0x4000, 0x4040, 0x4080}; /* 1, 2, 3, 4 */
    rig__write("sharded/a.safetensors",
               "{\"x\": {\"dtype\": \"BF16\", \"shape\": [2], \"data_offsets\": [0, 4]}}", data,
               4, 0);
    rig__write("sharded/b.safetensors",
               "{\"y\": {\"dtype\": \"BF16\", \"shape\": [2], \"data_offsets\": [0, 4]}}",
               data + 2, 4, 0);
    rig__write_text("sharded/model.safetensors.index.json",
                    "{\"metadata\": {}, \"weight_map\": {\"x\": \"a.safetensors\","
                    " \"y\": \"b.safetensors\"}}");
    struct rig_safetensors *st = NULL;
    assert_int_equal(rig_safetensors_open(sub, &st, error, sizeof error), RIG_OK);
    assert_int_equal(rig_safetensors_count(st), 2);
    uint16_t out[2];
    rig_safetensors_read_bf16(rig_safetensors_find(st, "y"), 0, 2, 0, 1, out);
    assert_int_equal(out[0], 0x4040);
    assert_string_equal(rig_safetensors_file_name(st, rig_safetensors_find(st, "y")->file),
                        "b.safetensors");
    rig_safetensors_close(st);

    /* The index names a tensor its file lacks. */
    rig__write_text("sharded/model.safetensors.index.json",
                    "{\"weight_map\": {\"x\": \"a.safetensors\", \"z\": \"b.safetensors\"}}");
    rig__expect_fail("sharded", RIG_E_NOT_FOUND, "'z'", "b.safetensors");
    /* The index names a file that does not exist. */
    rig__write_text("sharded/model.safetensors.index.json",
                    "{\"weight_map\": {\"x\": \"a.safetensors\", \"y\": \"c.safetensors\"}}");
    rig__expect_fail("sharded", RIG_E_IO, "c.safetensors", NULL);
    /* A file name that would leave the directory. */
    rig__write_text("sharded/model.safetensors.index.json",
                    "{\"weight_map\": {\"x\": \"../mixed.safetensors\"}}");
    rig__expect_fail("sharded", RIG_E_PARSE, "directory", NULL);
    /* The same tensor in two shards. */
    rig__write("sharded/b.safetensors",
               "{\"x\": {\"dtype\": \"BF16\", \"shape\": [2], \"data_offsets\": [0, 4]}}",
               data + 2, 4, 0);
    rig__write_text("sharded/model.safetensors.index.json",
                    "{\"weight_map\": {\"x\": \"a.safetensors\", \"y\": \"b.safetensors\"}}");
    rig__expect_fail("sharded", RIG_E_PARSE, "'x'", "appears in");
    rig__write_text("sharded/model.safetensors.index.json", "{\"weight_map\": 3}");
    rig__expect_fail("sharded", RIG_E_PARSE, "weight_map", NULL);

    char empty[512];
    rig__path(empty, sizeof empty, "empty");
    assert_int_equal(mkdir(empty, 0700), 0);
    rig__expect_fail("empty", RIG_E_NOT_FOUND, "model.safetensors", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_dtypes),
        cmocka_unit_test(test_golden_checkpoints),
        cmocka_unit_test(test_damaged_files),
        cmocka_unit_test(test_sharded_index),
    };
    return cmocka_run_group_tests(tests, rig__setup, rig__teardown);
}
