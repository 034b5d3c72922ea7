/* test_results.c — run records (core/harness/results/results.c) and the HDF5 writer (h5.c).
 *
 * Checks: init sizes and "never" defaults; add_step and reserve_tokens stop at capacity
 * without changing anything; the invariant check finds broken records; the finish-reason and
 * phase names round-trip. HDF5: writing the same records twice gives byte-identical files
 * (no timestamps), and reading the file back with the HDF5 C API finds the layout
 * docs/results.md promises — root attributes, /requests and /steps rows with NaN for "never",
 * enum types, /step_requests, /tokens, /summary with units; an unwritable path is RIG_E_IO
 * with the path in the message.
 */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/harness/results/h5.h"
#include "core/harness/results/metrics.h"
#include "core/harness/results/results.h"
#include "tests/support/test_support.h"

static void test_records_capacity_and_check(void **state)
{
    (void)state;
    struct rig_results r;
    assert_int_equal(rig_results_init(&r, 2, 3, 1, 2), RIG_OK);
    assert_int_equal(r.requests[1].uid, 1);
    assert_int_equal(r.requests[1].first_token_ns, -1);
    assert_int_equal(r.requests[1].first_step, -1);
    assert_int_equal(rig_results_reserve_tokens(&r, 2), 0);
    assert_int_equal(rig_results_reserve_tokens(&r, 2), -1);
    assert_int_equal(r.token_count, 2);
    assert_int_equal(rig_results_reserve_tokens(&r, 1), 2);
    struct rig_results_step step = {.phase = RIG_STEP_PREFILL, .batch_size = 2, .tokens = 5};
    const int32_t uids[] = {1, 0, 1};
    assert_int_equal(rig_results_add_step(&r, &step, uids, 3), RIG_E_CAPACITY);
    assert_int_equal(r.step_count, 0);
    assert_int_equal(rig_results_add_step(&r, &step, uids, 2), RIG_OK);
    assert_int_equal(r.steps[0].request_offset, 0);
    assert_int_equal(r.steps[0].request_count, 2);
    assert_int_equal(rig_results_add_step(&r, &step, uids, 0), RIG_E_CAPACITY);
    char message[128];
    assert_int_equal(rig_results_check(&r, message, sizeof message), 0);
    r.requests[0].output_len = 2;
    r.token_time_ns[0] = 5;
    r.token_time_ns[1] = 4;
    assert_int_equal(rig_results_check(&r, message, sizeof message), 1);
    assert_non_null(strstr(message, "token times go backwards"));
    r.token_time_ns[1] = 6;
    r.requests[1].finish_reason = RIG_FINISH_LENGTH; /* finished with no output, no times */
    assert_int_equal(rig_results_check(&r, message, sizeof message), 1);
    r.step_uids[1] = 7;
    assert_int_equal(rig_results_check(&r, NULL, 0), 2);
    rig_results_free(&r);
    assert_null(r.requests);
    for (int32_t i = 0; i < RIG_FINISH_COUNT; i++)
        assert_int_equal(rig_finish_reason_parse(rig_finish_reason_name(i)), i);
    assert_int_equal(rig_finish_reason_parse("eos"), -1);
    assert_int_equal(rig_step_phase_parse("decode"), RIG_STEP_DECODE);
    assert_int_equal(rig_step_phase_parse("both"), -1);
    assert_string_equal(rig_step_phase_name(RIG_STEP_MIXED), "mixed");
}

/* Two requests (a finished in 3 tokens, b rejected), two steps. */
static void build(struct rig_results *r)
{
    assert_int_equal(rig_results_init(r, 2, 3, 2, 3), RIG_OK);
    snprintf(r->meta.scenario, sizeof r->meta.scenario, "unit");
    snprintf(r->meta.backend, sizeof r->meta.backend, "sim");
    snprintf(r->meta.device, sizeof r->meta.device, "sim:h100");
    snprintf(r->meta.model, sizeof r->meta.model, "tiny");
    r->meta.seed = 42;
    r->meta.tp_size = 1;
    r->pages_total = 64;
    struct rig_results_request *a = &r->requests[0];
    snprintf(a->id, sizeof a->id, "a");
    a->arrival_ns = 0;
    a->first_scheduled_ns = 10;
    a->first_token_ns = 1000;
    a->finish_ns = 3000;
    a->input_len = 16;
    a->output_len = 3;
    a->finish_reason = RIG_FINISH_LENGTH;
    a->first_step = 0;
    a->finish_step = 1;
    a->token_offset = rig_results_reserve_tokens(r, 3);
    const int64_t times[] = {1000, 2000, 3000};
    const int32_t ids[] = {7, 8, 9};
    memcpy(r->token_time_ns, times, sizeof times);
    memcpy(r->token_ids, ids, sizeof ids);
    snprintf(r->requests[1].id, sizeof r->requests[1].id, "b");
    r->requests[1].arrival_ns = 500;
    r->requests[1].finish_reason = RIG_FINISH_REJECTED;
    const int32_t uids[] = {0};
    struct rig_results_step s = {.phase = RIG_STEP_PREFILL, .batch_size = 1, .tokens = 16,
                                 .padded_size = 1, .start_ns = 10, .end_ns = 900,
                                 .pages_free = 48};
    assert_int_equal(rig_results_add_step(r, &s, uids, 1), RIG_OK);
    s.phase = RIG_STEP_DECODE;
    s.tokens = 1;
    s.graph_used = 1;
    assert_int_equal(rig_results_add_step(r, &s, uids, 1), RIG_OK);
}

static unsigned char *read_all(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)*size);
    assert_int_equal(fread(data, 1, (size_t)*size, f), (size_t)*size);
    fclose(f);
    return data;
}

static void test_h5_byte_identical(void **state)
{
    (void)state;
    char p1[64], p2[64], error[256];
    snprintf(p1, sizeof p1, "/tmp/rig_test_results_%d_1.h5", (int)getpid());
    snprintf(p2, sizeof p2, "/tmp/rig_test_results_%d_2.h5", (int)getpid());
    struct rig_results r;
    build(&r);
    struct rig_metrics m;
    assert_int_equal(rig_metrics_compute(&r, &m), RIG_OK);
    assert_int_equal(rig_results_write_h5(&r, &m, p1, error, sizeof error), RIG_OK);
    sleep(1); /* a timestamp anywhere would now differ */
    assert_int_equal(rig_results_write_h5(&r, &m, p2, error, sizeof error), RIG_OK);
    long n1, n2;
    unsigned char *d1 = read_all(p1, &n1), *d2 = read_all(p2, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(d1, d2, (size_t)n1);
    free(d1);
    free(d2);
    unlink(p1);
    unlink(p2);
    rig_results_free(&r);
}

static void read_attr_string(hid_t object, const char *name, char *out, size_t len)
{
    hid_t attr = H5Aopen(object, name, H5P_DEFAULT);
    assert_true(attr >= 0);
    hid_t type = H5Aget_type(attr);
    char *value = NULL;
    assert_true(H5Tis_variable_str(type) > 0);
    assert_true(H5Aread(attr, type, &value) >= 0);
    snprintf(out, len, "%s", value);
    H5free_memory(value);
    H5Tclose(type);
    H5Aclose(attr);
}

struct row {
    char id[48];
    double first_scheduled, ttft;
    int32_t reason;
};

static void check_requests(hid_t file)
{
    hid_t set = H5Dopen2(file, "requests", H5P_DEFAULT);
    assert_true(set >= 0);
    hid_t space = H5Dget_space(set);
    hsize_t dims[1];
    H5Sget_simple_extent_dims(space, dims, NULL);
    assert_int_equal(dims[0], 2);
    hid_t id_type = H5Tcopy(H5T_C_S1);
    H5Tset_size(id_type, 48);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct row));
    H5Tinsert(t, "id", HOFFSET(struct row, id), id_type);
    H5Tinsert(t, "first_scheduled", HOFFSET(struct row, first_scheduled), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "ttft", HOFFSET(struct row, ttft), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "finish_reason", HOFFSET(struct row, reason), H5T_NATIVE_INT32);
    struct row rows[2];
    assert_true(H5Dread(set, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0);
    assert_string_equal(rows[0].id, "a");
    assert_true(fabs(rows[0].ttft - 1e-6) < 1e-15);
    assert_int_equal(rows[0].reason, RIG_FINISH_LENGTH);
    assert_string_equal(rows[1].id, "b");
    assert_true(isnan(rows[1].first_scheduled)); /* never scheduled */
    assert_int_equal(rows[1].reason, RIG_FINISH_REJECTED);
    hid_t file_type = H5Dget_type(set);
    int index = H5Tget_member_index(file_type, "finish_reason");
    assert_true(index >= 0);
    assert_int_equal(H5Tget_member_class(file_type, (unsigned)index), H5T_ENUM);
    hid_t enum_type = H5Tget_member_type(file_type, (unsigned)index);
    char name[16];
    int32_t value = RIG_FINISH_REJECTED;
    assert_true(H5Tenum_nameof(enum_type, &value, name, sizeof name) >= 0);
    assert_string_equal(name, "rejected");
    H5Tclose(enum_type);
    H5Tclose(file_type);
    H5Tclose(t);
    H5Tclose(id_type);
    H5Sclose(space);
    H5Dclose(set);
}

static void check_steps_tokens_summary(hid_t file)
{
    double duration[2];
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(double));
    H5Tinsert(t, "duration", 0, H5T_NATIVE_DOUBLE);
    hid_t set = H5Dopen2(file, "steps", H5P_DEFAULT);
    assert_true(H5Dread(set, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, duration) >= 0);
    assert_true(fabs(duration[1] - 890e-9) < 1e-15);
    H5Dclose(set);
    H5Tclose(t);
    int32_t uids[2];
    set = H5Dopen2(file, "step_requests", H5P_DEFAULT);
    assert_true(H5Dread(set, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, uids) >= 0);
    assert_int_equal(uids[0], 0);
    assert_int_equal(uids[1], 0);
    H5Dclose(set);
    double times[3];
    set = H5Dopen2(file, "tokens/time", H5P_DEFAULT);
    assert_true(H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, times) >= 0);
    assert_true(fabs(times[2] - 3e-6) < 1e-15);
    char units[16];
    read_attr_string(set, "units", units, sizeof units);
    assert_string_equal(units, "s");
    H5Dclose(set);
    double ttft_p99 = -1;
    set = H5Dopen2(file, "summary/ttft_p99", H5P_DEFAULT);
    assert_true(H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &ttft_p99) >= 0);
    assert_true(fabs(ttft_p99 - 1e-6) < 1e-15);
    read_attr_string(set, "units", units, sizeof units);
    assert_string_equal(units, "s");
    H5Dclose(set);
}

static void test_h5_layout(void **state)
{
    (void)state;
    char path[64], error[256], text[64];
    snprintf(path, sizeof path, "/tmp/rig_test_results_%d_3.h5", (int)getpid());
    struct rig_results r;
    build(&r);
    struct rig_metrics m;
    assert_int_equal(rig_metrics_compute(&r, &m), RIG_OK);
    assert_int_equal(rig_results_write_h5(&r, &m, path, error, sizeof error), RIG_OK);
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(file >= 0);
    read_attr_string(file, "scenario", text, sizeof text);
    assert_string_equal(text, "unit");
    read_attr_string(file, "clock", text, sizeof text);
    assert_string_equal(text, "virtual");
    read_attr_string(file, "format", text, sizeof text);
    assert_string_equal(text, "rig-results");
    uint64_t seed = 0;
    hid_t attr = H5Aopen(file, "seed", H5P_DEFAULT);
    assert_true(H5Aread(attr, H5T_NATIVE_UINT64, &seed) >= 0);
    H5Aclose(attr);
    assert_int_equal(seed, 42);
    check_requests(file);
    check_steps_tokens_summary(file);
    H5Fclose(file);
    unlink(path);
    assert_int_equal(rig_results_write_h5(&r, &m, "/nonexistent/dir/x.h5", error, sizeof error),
                     RIG_E_IO);
    assert_non_null(strstr(error, "/nonexistent/dir/x.h5: cannot write"));
    rig_results_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_capacity_and_check),
        cmocka_unit_test(test_h5_byte_identical),
        cmocka_unit_test(test_h5_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
