/* test_model.c — the model module beyond the golden numerics (core/model/).
 *
 * On the simulator: seeded dummy weights give finite, varied logits that are the same on
 * every run and at TP=1 and TP=2, and different for another seed; sampling with
 * temperature/top-k gives the same tokens on every rank and run; a Qwen3-32B-shaped model
 * on two timing-only ranks creates and runs prefill and decode batches without touching
 * phantom memory; batches over the limits fail with RIG_E_CAPACITY; bad limits, a TP
 * degree the heads do not split over, a failed device allocation, a checkpoint missing a
 * tensor, with a tensor of the wrong shape, or truncated are refused with a message naming
 * the problem (and the tensor) while no device memory stays allocated; a checkpoint
 * rewritten with F32 matrices and F16 vectors gives the bf16 checkpoint's logits bit for
 * bit; and the real scheduler (core/engine/engine.h, overlap on, radix cache) reproduces the
 * golden greedy tokens at TP 1 and 2. A local-only forward (batch.h) issues the plain
 * forward's ops without one collective. The fused layer (batches of up to fuse_rows rows at
 * TP 1, one row by default: six ops a layer, not nine) gives the plain layer's logits and KV cache bit
 * for bit, on Qwen3 (q/k norm) and Qwen2 (qkv bias) shapes, in prefills of a few tokens and
 * decode batches of 1, 3 and 8; rig_model_set_fuse_rows and RIG_FUSE_ROWS (0 never, a
 * malformed value refused by rig_model_create) choose it.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "core/engine/driver.h"
#include "core/engine/engine.h"
#include "core/model/model_impl.h" /* the KV cache's buffer, compared bit for bit */
#include "core/model/safetensors.h"
#include "sim/sim.h"
#include "tests/test_model_harness.h"

static char rig__dir[256];

static int rig__setup(void **state)
{
    (void)state;
    snprintf(rig__dir, sizeof rig__dir, "/tmp/rig_test_model_XXXXXX");
    return mkdtemp(rig__dir) == NULL ? -1 : 0;
}

static int rig__teardown(void **state)
{
    (void)state;
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", rig__dir);
    return system(command) == 0 ? 0 : -1;
}

/* Prefill of two prompts on a fresh group; leaves logits [2, V] in `out`. */
static void prefill_two(const struct rig_model_config *config, uint64_t seed, int32_t tp,
                        float *out, int32_t *tokens)
{
    static const int32_t a[] = {1, 2, 3, 4, 5, 6, 7}, b[] = {100, 200, 300};
    struct group *grp = calloc(1, sizeof *grp);
    assert_non_null(grp);
    struct rig_weights_source source = {.path = NULL, .dummy_seed = seed};
    group_open(grp, config, &source, tp, false);
    batch_begin(&grp->host, RIG_BATCH_PREFILL, true);
    batch_add(&grp->host, 0, 0, 7, a, 0);
    batch_add(&grp->host, 1, 0, 3, b, 0);
    for (int r = 0; r < 2; r++) { /* sampled, not greedy: the sampler's path across ranks */
        grp->host.temperature[r] = 0.8f;
        grp->host.top_k[r] = 20;
        grp->host.top_p[r] = 0.9f;
    }
    group_forward(grp);
    memcpy(out, grp->logits, sizeof(float) * 2 * (size_t)config->vocab_size);
    memcpy(tokens, grp->tokens, sizeof(int32_t) * 2);
    group_close(grp);
    free(grp);
}

static void test_dummy_weights(void **state)
{
    (void)state;
    struct rig_model_config config;
    assert_int_equal(rig_model_config_preset("tiny", &config), RIG_OK);
    size_t n = 2 * (size_t)config.vocab_size;
    float *first = malloc(sizeof(float) * n), *again = malloc(sizeof(float) * n);
    assert_non_null(first);
    assert_non_null(again);
    int32_t tokens[2], tokens_again[2];
    prefill_two(&config, 5, 1, first, tokens);
    double sum = 0.0, sq = 0.0;
    for (size_t i = 0; i < n; i++) {
        assert_true(isfinite(first[i]));
        sum += first[i];
        sq += (double)first[i] * first[i];
    }
    double std = sqrt(sq / (double)n - (sum / (double)n) * (sum / (double)n));
    assert_true(std > 0.05 && std < 10.0); /* varied, not exploding */
    assert_true(rel_l2(first, first + config.vocab_size, config.vocab_size) > 0.1);
    for (int r = 0; r < 2; r++) assert_true(tokens[r] >= 0 && tokens[r] < config.vocab_size);

    prefill_two(&config, 5, 1, again, tokens_again); /* same seed: same bytes */
    assert_memory_equal(first, again, sizeof(float) * n);
    assert_memory_equal(tokens, tokens_again, sizeof tokens);
    prefill_two(&config, 5, 2, again, tokens_again); /* TP=2: the same model */
    double err = rel_l2(again, first, (int32_t)n);
    print_message("tiny dummy TP=2 vs TP=1: relative L2 %.3g\n", err);
    assert_true(err < 2e-2);
    prefill_two(&config, 6, 1, again, tokens_again); /* another seed: another model */
    assert_true(rel_l2(again, first, (int32_t)n) > 0.5);
    free(first);
    free(again);
}

/* Qwen3-32B shapes on two timing-only ranks: phantom weights, KV and activations. */
static void test_timing_only_large(void **state)
{
    (void)state;
    struct rig_model_config config;
    assert_int_equal(rig_model_config_preset("qwen3-32b", &config), RIG_OK);
    struct group *grp = calloc(1, sizeof *grp);
    assert_non_null(grp);
    struct rig_weights_source source = {.path = NULL, .dummy_seed = 1};
    group_open(grp, &config, &source, 2, true);
    struct rig_sim_stats stats;
    assert_int_equal(rig_sim_get_stats(grp->devices[1], &stats), RIG_OK);
    assert_true(stats.bytes_allocated >= (int64_t)rig_model_weight_bytes(&config, 2));
    assert_true(stats.bytes_resident < (int64_t)64 << 20); /* only METADATA is real */
    int32_t prompt[100];
    for (int i = 0; i < 100; i++) prompt[i] = 1000 + 37 * i;
    batch_begin(&grp->host, RIG_BATCH_PREFILL, true);
    batch_add(&grp->host, 0, 0, 100, prompt, 0);
    batch_add(&grp->host, 1, 0, 50, prompt, 0);
    group_forward(grp);
    for (int s = 1; s < 4; s++) {
        int32_t next[2] = {grp->tokens[0], grp->tokens[1]};
        for (int r = 0; r < 2; r++) assert_true(next[r] >= 0 && next[r] < config.vocab_size);
        batch_begin(&grp->host, RIG_BATCH_DECODE, true);
        batch_add(&grp->host, 0, 99 + s, 1, &next[0], s);
        batch_add(&grp->host, 1, 49 + s, 1, &next[1], s);
        group_forward(grp);
    }
    assert_int_equal(rig_sim_get_stats(grp->devices[0], &stats), RIG_OK);
    assert_true(stats.ops_issued > 4 * 64 * 10); /* every layer's ops, four times */
    group_close(grp);
    free(grp);
}

/* Counts a forward's ops by kind (rig_model_forward_ops' sink). */
struct op_count {
    int32_t collectives, others;
    char names[1024]; /* the non-collective ops' names, in order, ';'-separated */
};

static enum rig_status count_op(void *ctx, int32_t layer, const char *name,
                                const struct rig_op *op)
{
    (void)layer;
    struct op_count *c = ctx;
    if (op->kind == RIG_OP_ALL_REDUCE || op->kind == RIG_OP_ALL_GATHER) {
        c->collectives++;
    } else {
        c->others++;
        if (c->others <= 40) { /* the first layers suffice to compare the sequence */
            size_t used = strlen(c->names);
            snprintf(c->names + used, sizeof c->names - used, "%s;", name);
        }
    }
    return RIG_OK;
}

/* A local-only forward (the engine's start-up warm forward on a GPU, batch.h) issues every op
 * of the plain forward but not one collective (nor the copies out of the gathered logits): at
 * TP 2 the plain one has the embedding's all-reduce, two a layer and the logits' all-gather. */
static void test_local_only_forward(void **state)
{
    (void)state;
    struct rig_model_config config;
    assert_int_equal(rig_model_config_preset("qwen3-0.6b", &config), RIG_OK);
    struct group *grp = calloc(1, sizeof *grp);
    assert_non_null(grp);
    struct rig_weights_source source = {.path = NULL, .dummy_seed = 1};
    group_open(grp, &config, &source, 2, true);
    struct op_count plain = {0}, local = {0};
    struct rig_forward_batch batch = {.phase = RIG_BATCH_DECODE, .num_requests = 2,
                                      .num_tokens = 2, .padded_requests = 2,
                                      .padded_tokens = 2, .sample = true};
    struct rig_model_op_sink sink = {&plain, count_op};
    assert_int_equal(rig_model_forward_ops(grp->ranks[0].model, &batch, &sink), RIG_OK);
    batch.local_only = true;
    sink.ctx = &local;
    assert_int_equal(rig_model_forward_ops(grp->ranks[0].model, &batch, &sink), RIG_OK);
    assert_int_equal(plain.collectives, 1 + 2 * config.num_layers + 1);
    assert_int_equal(local.collectives, 0);
    /* the same ops otherwise, in the same order, but the two copies that place each rank's
     * gathered logits columns */
    assert_int_equal(local.others, plain.others - 2);
    assert_string_equal(local.names, plain.names);
    /* and the flag does not stick: the next plain forward has its collectives again */
    struct op_count again = {0};
    batch.local_only = false;
    sink.ctx = &again;
    assert_int_equal(rig_model_forward_ops(grp->ranks[0].model, &batch, &sink), RIG_OK);
    assert_int_equal(again.collectives, plain.collectives);
    group_close(grp);
    free(grp);
}

/* The ops a TP 1 forward of T decode rows issues on `model` (their count; names as count_op
 * keeps them). */
static struct op_count decode_ops(struct rig_model *model, int32_t T)
{
    struct op_count c = {0};
    struct rig_forward_batch batch = {.phase = RIG_BATCH_DECODE, .num_requests = T,
                                      .num_tokens = T, .padded_requests = T,
                                      .padded_tokens = T, .sample = true};
    struct rig_model_op_sink sink = {&c, count_op};
    assert_int_equal(rig_model_forward_ops(model, &batch, &sink), RIG_OK);
    return c;
}

/* Runs the batch on both groups (fused, plain) and checks their logits, tokens and KV caches
 * are the same bits. */
static void forward_both(struct group *g[2])
{
    for (int i = 0; i < 2; i++) group_forward(g[i]);
    size_t requests = (size_t)g[0]->host.requests;
    assert_memory_equal(g[0]->logits, g[1]->logits, requests * 1024 * sizeof(float));
    assert_memory_equal(g[0]->tokens, g[1]->tokens, requests * sizeof(int32_t));
    struct rig_buffer *kv[2] = {g[0]->ranks[0].model->kv_buffer, g[1]->ranks[0].model->kv_buffer};
    assert_int_equal(rig_hal_buffer_size(kv[0]), rig_hal_buffer_size(kv[1]));
    assert_memory_equal(rig_hal_buffer_ptr(kv[0]), rig_hal_buffer_ptr(kv[1]),
                        rig_hal_buffer_size(kv[0]));
}

/* Prefills of a few tokens (5: fused; 12: plain on both), then decode batches of 1, 3 and 8
 * requests on a model fused up to 8 rows and one never fused: the same bits after every
 * forward. */
static void check_fused_same_bits(const struct rig_model_config *config)
{
    struct group *g[2] = {calloc(1, sizeof *g[0]), calloc(1, sizeof *g[1])};
    struct rig_weights_source source = {.path = NULL, .dummy_seed = 3};
    for (int i = 0; i < 2; i++) {
        assert_non_null(g[i]);
        group_open(g[i], config, &source, 1, false);
    }
    rig_model_set_fuse_rows(g[0]->ranks[0].model, 8);
    rig_model_set_fuse_rows(g[1]->ranks[0].model, 0);
    int32_t layers = config->num_layers;
    /* a decode layer's q/k norm + RoPE + store and attention are one op */
    assert_int_equal(decode_ops(g[0]->ranks[0].model, 8).others, 5 * layers + 5);
    assert_int_equal(decode_ops(g[0]->ranks[0].model, 9).others, 8 * layers + 5);
    assert_int_equal(decode_ops(g[1]->ranks[0].model, 1).others, 8 * layers + 5);
    static const int32_t prompt[] = {5, 17, 300, 42, 9, 1000, 77, 8};
    int32_t length[8] = {0}, next[8];
    for (int i = 0; i < 2; i++) { /* 3 + 2 tokens; 6 x 2 tokens */
        batch_begin(&g[i]->host, RIG_BATCH_PREFILL, true);
        for (int32_t r = 0; r < 2; r++) batch_add(&g[i]->host, r, 0, 3 - r, prompt + r, 0);
    }
    forward_both(g);
    for (int i = 0; i < 2; i++) {
        batch_begin(&g[i]->host, RIG_BATCH_PREFILL, true);
        for (int32_t r = 2; r < 8; r++) batch_add(&g[i]->host, r, 0, 2, prompt + r - 2, 0);
    }
    memcpy(next, g[0]->tokens, 2 * sizeof(int32_t)); /* rows 0 and 1, from the first prefill */
    forward_both(g);
    memcpy(next + 2, g[0]->tokens, 6 * sizeof(int32_t));
    for (int32_t r = 0; r < 8; r++) length[r] = r < 2 ? 3 - r : 2;
    static const int32_t batches[] = {1, 3, 8, 8};
    for (size_t step = 0; step < RIG_ARRAY_LEN(batches); step++) {
        for (int i = 0; i < 2; i++) {
            batch_begin(&g[i]->host, RIG_BATCH_DECODE, true);
            for (int32_t r = 0; r < batches[step]; r++)
                batch_add(&g[i]->host, r, length[r], 1, &next[r], (int32_t)step + 1);
        }
        forward_both(g);
        for (int32_t r = 0; r < batches[step]; r++) next[r] = g[0]->tokens[r], length[r]++;
    }
    for (int i = 0; i < 2; i++) {
        group_close(g[i]);
        free(g[i]);
    }
}

static void test_fused_layers_same_bits(void **state)
{
    (void)state;
    struct rig_model_config config;
    assert_int_equal(rig_model_config_preset("tiny", &config), RIG_OK);
    check_fused_same_bits(&config); /* Qwen3: q/k norm, no bias */
    config.arch = RIG_ARCH_QWEN2;
    config.qk_norm = false;
    config.qkv_bias = true; /* the bias after the RMS_NORM prologue's product */
    check_fused_same_bits(&config);
}

/* RIG_FUSE_ROWS, read when a model is created: unset (the default, RIG_MODEL_FUSE_ROWS 1) fuses
 * one row, 0 never fuses, 8 fuses 8 rows, 16 fuses 16, a value that is not a row count is
 * refused with a message; rig_model_set_fuse_rows overrides it. */
static void test_fuse_rows_switch(void **state)
{
    (void)state;
    struct rig_model_config config;
    assert_int_equal(rig_model_config_preset("tiny", &config), RIG_OK);
    struct rig_device *device;
    rig_test_open_sim(1, false, &device);
    struct rig_stream *stream;
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    struct rig_weights_source source = {.path = NULL, .dummy_seed = 1};
    struct rig_model_limits limits = {.max_tokens = 32, .max_requests = 32, .kv_slots = 64};
    struct rig_model *model = NULL;
    char error[256];
    int32_t plain = 8 * config.num_layers + 5, fused = 5 * config.num_layers + 5; /* decode */
    const struct {
        const char *value;
        int32_t at_1, at_8, at_16;
    } cases[] = {{NULL, fused, plain, plain},
                 {"0", plain, plain, plain},
                 {"8", fused, fused, plain},
                 {"16", fused, fused, fused}};
    for (size_t i = 0; i < RIG_ARRAY_LEN(cases); i++) {
        if (cases[i].value != NULL) setenv("RIG_FUSE_ROWS", cases[i].value, 1);
        assert_int_equal(rig_model_create(&config, &source, &limits, device, stream, NULL, &model,
                                          error, sizeof error), RIG_OK);
        assert_int_equal(decode_ops(model, 1).others, cases[i].at_1);
        assert_int_equal(decode_ops(model, 8).others, cases[i].at_8);
        assert_int_equal(decode_ops(model, 16).others, cases[i].at_16);
        rig_model_set_fuse_rows(model, 32);
        assert_int_equal(decode_ops(model, 32).others, fused);
        rig_model_destroy(model);
        unsetenv("RIG_FUSE_ROWS");
    }
    static const char *const bad[] = {"", "8x", "-1", "65537"};
    for (size_t i = 0; i < RIG_ARRAY_LEN(bad); i++) {
        setenv("RIG_FUSE_ROWS", bad[i], 1);
        model = NULL;
        assert_int_equal(rig_model_create(&config, &source, &limits, device, stream, NULL, &model,
                                          error, sizeof error), RIG_E_INVALID);
        assert_null(model);
        assert_non_null(strstr(error, "RIG_FUSE_ROWS"));
        unsetenv("RIG_FUSE_ROWS");
    }
    rig_hal_stream_destroy(stream);
    rig_hal_close(device);
}

static void test_limits_and_capacity(void **state)
{
    (void)state;
    struct rig_model_config config;
    assert_int_equal(rig_model_config_preset("tiny", &config), RIG_OK);
    struct rig_device *devices[3];
    rig_test_open_sim(3, false, devices);
    struct rig_stream *stream;
    assert_int_equal(rig_hal_stream_create(devices[0], &stream), RIG_OK);
    struct rig_weights_source source = {.path = NULL, .dummy_seed = 1};
    struct rig_model_limits bad = {.max_tokens = 4, .max_requests = 8, .kv_slots = 16};
    struct rig_model *model = NULL;
    char error[256];
    assert_int_equal(rig_model_create(&config, &source, &bad, devices[0], stream, NULL, &model,
                                      error, sizeof error), RIG_E_INVALID);
    assert_non_null(strstr(error, "max_requests (8) <= max_tokens (4)"));
    assert_null(model);

    /* TP 3: four heads do not split. */
    struct rig_comm *comms[3];
    assert_int_equal(rig_hal_comm_create(devices, 3, comms), RIG_OK);
    struct rig_model_limits limits = {.max_tokens = 8, .max_requests = 2, .kv_slots = 16};
    assert_int_equal(rig_model_create(&config, &source, &limits, devices[0], stream, comms[0],
                                      &model, error, sizeof error), RIG_E_INVALID);
    assert_non_null(strstr(error, "4 attention heads do not split over TP 3"));
    for (int i = 0; i < 3; i++) rig_hal_comm_destroy(comms[i]);

    /* A failed device allocation (the KV cache, the second one) leaves nothing behind. */
    struct rig_sim_stats before, after;
    assert_int_equal(rig_sim_get_stats(devices[0], &before), RIG_OK);
    struct rig_sim_faults faults = {.fail_alloc_at = 1, .stall_op_at = -1};
    assert_int_equal(rig_sim_set_faults(devices[0], &faults), RIG_OK);
    assert_int_equal(rig_model_create(&config, &source, &limits, devices[0], stream, NULL,
                                      &model, error, sizeof error), RIG_E_DEVICE_MEMORY);
    assert_non_null(strstr(error, "KV cache"));
    assert_int_equal(rig_sim_get_stats(devices[0], &after), RIG_OK);
    assert_int_equal(after.bytes_allocated, before.bytes_allocated);

    /* A batch over the limits is refused before anything is issued. */
    assert_int_equal(rig_model_create(&config, &source, &limits, devices[0], stream, NULL,
                                      &model, error, sizeof error), RIG_OK);
    struct rig_forward_batch batch = {.phase = RIG_BATCH_PREFILL, .num_requests = 1,
                                      .num_tokens = 9, .padded_requests = 1,
                                      .padded_tokens = 9, .sample = true};
    assert_int_equal(rig_model_forward(model, stream, &batch), RIG_E_CAPACITY);
    batch.num_tokens = batch.padded_tokens = 3;
    batch.num_requests = batch.padded_requests = 3;
    assert_int_equal(rig_model_forward(model, stream, &batch), RIG_E_CAPACITY);
    assert_int_equal(rig_model_get_config(model)->vocab_size, config.vocab_size);
    assert_ptr_equal(rig_model_device(model), devices[0]);
    float logits[4];
    assert_int_equal(rig_model_download_logits(model, stream, 3, logits), RIG_E_RANGE);
    rig_model_destroy(model);
    rig_model_destroy(NULL);
    rig_hal_stream_destroy(stream);
    for (int i = 0; i < 3; i++) rig_hal_close(devices[i]);
}

/* Writes `text` with `from` replaced by `to` (once) into `dir`/config.json. */
static void write_config(const char *dir, const char *source_dir, const char *from,
                         const char *to)
{
    char path[1100], text[8192];
    snprintf(path, sizeof path, "%s/config.json", source_dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *at = strstr(text, from);
    assert_non_null(at);
    snprintf(path, sizeof path, "%s/config.json", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    fclose(f);
}

static void link_file(const char *dir, const char *source_dir, const char *name)
{
    char from[1100], to[1100];
    snprintf(from, sizeof from, "%s/%s", source_dir, name);
    snprintf(to, sizeof to, "%s/%s", dir, name);
    assert_int_equal(symlink(from, to), 0);
}

/* Creating from `dir` must fail with `status` and an error containing `needle`. */
static void expect_create_fails(const char *dir, enum rig_status status, const char *needle)
{
    struct rig_model_config config;
    char error[512];
    assert_int_equal(rig_model_config_load(dir, &config, error, sizeof error), RIG_OK);
    struct rig_device *device;
    rig_test_open_sim(1, false, &device);
    struct rig_stream *stream;
    assert_int_equal(rig_hal_stream_create(device, &stream), RIG_OK);
    struct rig_model_limits limits = {.max_tokens = 8, .max_requests = 2, .kv_slots = 16};
    struct rig_weights_source source = {.path = dir};
    struct rig_model *model = NULL;
    struct rig_sim_stats stats;
    assert_int_equal(rig_model_create(&config, &source, &limits, device, stream, NULL, &model,
                                      error, sizeof error), status);
    if (strstr(error, needle) == NULL) fail_msg("'%s' lacks '%s'", error, needle);
    assert_null(model);
    assert_int_equal(rig_sim_get_stats(device, &stats), RIG_OK);
    assert_int_equal(stats.bytes_allocated, 0);
    rig_hal_stream_destroy(stream);
    rig_hal_close(device);
}

/* A value to plant in a rewritten checkpoint: element `element` of tensor `name`. */
struct poison {
    const char *name; /* NULL: none */
    size_t element;
    float value;
};

/* Rewrites the golden Qwen2 checkpoint with matrices as F32 and 1-D tensors as F16 (both
 * hold every bf16 value of these tensors exactly) into `dir`/model.safetensors, with
 * `poison` planted. */
static void write_wide_checkpoint(const char *dir, const char *source_dir,
                                  struct poison poison)
{
    struct rig_safetensors *st = NULL;
    char error[256], path[1100];
    assert_int_equal(rig_safetensors_open(source_dir, &st, error, sizeof error), RIG_OK);
    json_t *header = json_object();
    size_t offset = 0;
    int32_t count = rig_safetensors_count(st);
    for (int32_t i = 0; i < count; i++) {
        const struct rig_safetensors_tensor *t = rig_safetensors_at(st, i);
        size_t numel = t->bytes / 2, width = t->ndim == 1 ? 2 : 4;
        json_t *shape = json_array();
        for (int32_t d = 0; d < t->ndim; d++)
            json_array_append_new(shape, json_integer(t->shape[d]));
        json_object_set_new(header, t->name,
                            json_pack("{s:s, s:o, s:[I, I]}", "dtype",
                                      width == 2 ? "F16" : "F32", "shape", shape,
                                      "data_offsets", (json_int_t)offset,
                                      (json_int_t)(offset + numel * width)));
        offset += numel * width;
    }
    char *text = json_dumps(header, JSON_COMPACT);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t length = strlen(text);
    fwrite(&length, 8, 1, f); /* little-endian, as this machine */
    fwrite(text, 1, length, f);
    for (int32_t i = 0; i < count; i++) {
        const struct rig_safetensors_tensor *t = rig_safetensors_at(st, i);
        for (size_t k = 0; k < t->bytes / 2; k++) {
            uint16_t bf;
            memcpy(&bf, t->data + 2 * k, 2);
            float x = rig_bf16_to_f32(bf);
            if (poison.name != NULL && strcmp(t->name, poison.name) == 0 && k == poison.element)
                x = poison.value;
            uint16_t half = rig_f32_to_f16(x);
            assert_true(t->ndim != 1 || rig_f16_to_f32(half) == x || isnan(x));
            if (t->ndim == 1) fwrite(&half, 2, 1, f);
            else fwrite(&x, 4, 1, f);
        }
    }
    fclose(f);
    free(text);
    json_decref(header);
    rig_safetensors_close(st);
}

/* F32 and F16 checkpoints load to the same bf16 weights: the same logits, bit for bit. */
static void test_wide_dtypes(void **state)
{
    (void)state;
    const char *qwen2 = RIG_TEST_DATA_DIR "/golden/qwen2";
    char dir[512];
    snprintf(dir, sizeof dir, "%s/wide", rig__dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_config(dir, qwen2, "\"vocab_size\"", "\"vocab_size\"");
    write_wide_checkpoint(dir, qwen2, (struct poison){NULL, 0, 0.0f});
    struct rig_safetensors *st = NULL;
    char error[256];
    assert_int_equal(rig_safetensors_open(dir, &st, error, sizeof error), RIG_OK);
    assert_int_equal(rig_safetensors_find(st, "model.embed_tokens.weight")->dtype, RIG_DTYPE_F32);
    assert_int_equal(rig_safetensors_find(st, "model.norm.weight")->dtype, RIG_DTYPE_F16);
    rig_safetensors_close(st);
    struct golden g;
    golden_load(&g, "qwen2");
    float *logits[2];
    for (int which = 0; which < 2; which++) {
        struct group *grp = calloc(1, sizeof *grp);
        assert_non_null(grp);
        struct rig_weights_source source = {.path = which == 0 ? g.dir : dir};
        group_open(grp, &g.config, &source, 1, false);
        batch_begin(&grp->host, RIG_BATCH_PREFILL, true);
        for (int p = 0; p < PROMPTS; p++)
            batch_add(&grp->host, p, 0, g.prompt_len[p], g.prompts[p], 0);
        group_forward(grp);
        logits[which] = malloc(sizeof(float) * PROMPTS * (size_t)g.vocab);
        assert_non_null(logits[which]);
        memcpy(logits[which], grp->logits, sizeof(float) * PROMPTS * (size_t)g.vocab);
        group_close(grp);
        free(grp);
    }
    assert_memory_equal(logits[0], logits[1], sizeof(float) * PROMPTS * (size_t)g.vocab);
    free(logits[0]);
    free(logits[1]);
    free(g.logits);
}

static void test_checkpoint_errors(void **state)
{
    (void)state;
    const char *llama = RIG_TEST_DATA_DIR "/golden/llama";
    const char *qwen2 = RIG_TEST_DATA_DIR "/golden/qwen2";
    char dir[512];
    /* Llama weights read as Qwen2, which has q/k/v biases: the first bias is missing. */
    snprintf(dir, sizeof dir, "%s/as_qwen2", rig__dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_config(dir, llama, "LlamaForCausalLM", "Qwen2ForCausalLM");
    link_file(dir, llama, "model.safetensors.index.json");
    link_file(dir, llama, "model-00001-of-00002.safetensors");
    link_file(dir, llama, "model-00002-of-00002.safetensors");
    expect_create_fails(dir, RIG_E_NOT_FOUND,
                        "missing tensor 'model.layers.0.self_attn.q_proj.bias'");
    /* A config whose MLP width disagrees with the checkpoint. */
    snprintf(dir, sizeof dir, "%s/narrow", rig__dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_config(dir, qwen2, "\"intermediate_size\": 128", "\"intermediate_size\": 64");
    link_file(dir, qwen2, "model.safetensors");
    expect_create_fails(dir, RIG_E_SHAPE, "'model.layers.0.mlp.gate_proj.weight' has shape "
                                          "[128, 64]");
    /* A truncated checkpoint. */
    snprintf(dir, sizeof dir, "%s/truncated", rig__dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_config(dir, qwen2, "\"vocab_size\"", "\"vocab_size\"");
    char path[1024], command[2600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snprintf(command, sizeof command, "head -c 200000 '%s/model.safetensors' > '%s'", qwen2,
             path);
    assert_int_equal(system(command), 0);
    expect_create_fails(dir, RIG_E_PARSE, "truncated or corrupt");
}

/* Runs one prompt through an engine on the checkpoint in `dir` (skipping the load-time
 * scan): the first step must fail, naming the step and the request, never assert. */
static void expect_step_fails(const char *dir, const struct rig_model_config *model,
                              bool overlap)
{
    struct rig_engine_config config;
    rig_engine_config_default(&config);
    config.model = *model;
    config.weights.path = dir;
    config.weights.skip_weight_check = true;
    config.overlap = overlap;
    struct rig_engine *engine = NULL;
    char error[512];
    if (rig_engine_create(&config, NULL, &engine, error, sizeof error) != RIG_OK)
        fail_msg("engine: %s", error);
    int32_t prompt[4] = {5, 6, 7, 8};
    struct rig_submit r = {.uid = 7, .prompt = prompt, .prompt_len = 4, .arrival_ns = -1};
    r.sampling = rig_sampling_default();
    r.sampling.max_tokens = 4;
    assert_int_equal(rig_engine_submit(engine, &r, error, sizeof error), RIG_OK);
    assert_int_equal(rig_driver_run(engine, NULL, NULL, error, sizeof error), RIG_E_RANGE);
    const char *want = "engine step failed: value out of range: step 0: request 7: the logits "
                       "are not finite (NaN or Inf)";
    if (strstr(error, want) == NULL) fail_msg("'%s' lacks '%s'", error, want);
    rig_engine_destroy(engine);
}

/* Non-finite weights: the load fails naming the tensor and the element; with the scan
 * skipped, the first step fails naming the step and the request (on the simulator, where
 * attention used to assert first). */
static void test_nonfinite_weights(void **state)
{
    (void)state;
    const char *qwen2 = RIG_TEST_DATA_DIR "/golden/qwen2";
    const struct poison cases[] = {
        {"model.layers.1.mlp.down_proj.weight", 1234, NAN},
        {"model.layers.0.self_attn.q_proj.weight", 7, -INFINITY},
        {"model.norm.weight", 63, INFINITY},
    };
    const char *wants[] = {"model.layers.1.mlp.down_proj.weight: element 1234 is NaN",
                           "model.layers.0.self_attn.q_proj.weight: element 7 is -Inf",
                           "model.norm.weight: element 63 is +Inf"};
    for (size_t i = 0; i < RIG_ARRAY_LEN(cases); i++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/nonfinite%zu", rig__dir, i);
        assert_int_equal(mkdir(dir, 0700), 0);
        write_config(dir, qwen2, "\"vocab_size\"", "\"vocab_size\"");
        write_wide_checkpoint(dir, qwen2, cases[i]);
        expect_create_fails(dir, RIG_E_RANGE, wants[i]);
        struct rig_model_config config;
        char error[512];
        assert_int_equal(rig_model_config_load(dir, &config, error, sizeof error), RIG_OK);
        expect_step_fails(dir, &config, true);
        expect_step_fails(dir, &config, false);
    }
}

struct engine_outputs {
    int32_t tokens[PROMPTS][STEPS];
    int32_t count[PROMPTS];
    int32_t finished;
};

static void on_finish(void *ctx, const struct rig_request_result *result)
{
    struct engine_outputs *out = ctx;
    int64_t p = (int64_t)result->uid - 1;
    assert_true(p >= 0 && p < PROMPTS);
    assert_int_equal(result->reason, RIG_END_LENGTH);
    assert_int_equal(result->output_len, STEPS);
    memcpy(out->tokens[p], result->output_ids, sizeof(int32_t) * STEPS);
    out->count[p] = result->output_len;
    out->finished++;
}

/* The prompts through the engine (greedy, 32 tokens each): the tokens equal the reference's
 * up to the first step where the reference's two candidates are within `tie` (absolute,
 * reference logits): a near-tie, after which the contexts differ. */
static int engine_greedy(const struct golden *g, int32_t tp, float tie)
{
    struct rig_engine_config config;
    rig_engine_config_default(&config);
    config.model = g->config;
    config.weights.path = g->dir;
    config.tp_size = tp;
    struct engine_outputs out = {0};
    struct rig_engine_observer observer = {.ctx = &out, .on_finish = on_finish};
    struct rig_engine *engine = NULL;
    char error[512];
    if (rig_engine_create(&config, &observer, &engine, error, sizeof error) != RIG_OK)
        fail_msg("engine: %s", error);
    for (int p = 0; p < PROMPTS; p++) {
        struct rig_submit r = {.uid = (uint64_t)p + 1, .prompt = g->prompts[p],
                               .prompt_len = g->prompt_len[p], .arrival_ns = -1};
        r.sampling = rig_sampling_default();
        r.sampling.max_tokens = STEPS;
        r.sampling.ignore_eos = true;
        assert_int_equal(rig_engine_submit(engine, &r, error, sizeof error), RIG_OK);
    }
    if (rig_driver_run(engine, NULL, NULL, error, sizeof error) != RIG_OK)
        fail_msg("driver: %s", error);
    rig_engine_destroy(engine);
    assert_int_equal(out.finished, PROMPTS);
    int matched = 0;
    for (int p = 0; p < PROMPTS; p++) {
        for (int s = 0; s < STEPS; s++) {
            int32_t mine = out.tokens[p][s], theirs = g->greedy[p][s];
            if (mine == theirs) {
                matched++;
                continue;
            }
            const float *ref = golden_row(g, p, s);
            if (ref[theirs] - ref[mine] > tie)
                fail_msg("engine TP=%d: %s prompt %d step %d: %d instead of %d (gap %.4g)", tp,
                         g->config.name, p, s, mine, theirs, ref[theirs] - ref[mine]);
            break;
        }
    }
    return matched;
}

static void test_engine_golden(void **state)
{
    (void)state;
    static const char *names[] = {"qwen3", "llama", "qwen2"};
    for (size_t i = 0; i < RIG_ARRAY_LEN(names); i++) {
        struct golden g;
        golden_load(&g, names[i]);
        for (int32_t tp = 1; tp <= 2; tp++) {
            int matched = engine_greedy(&g, tp, 0.01f);
            print_message("engine %s TP=%d: %d of %d greedy tokens equal the reference's\n",
                          names[i], tp, matched, PROMPTS * STEPS);
        }
        free(g.logits);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dummy_weights),
        cmocka_unit_test(test_timing_only_large),
        cmocka_unit_test(test_local_only_forward),
        cmocka_unit_test(test_limits_and_capacity),
        cmocka_unit_test(test_fused_layers_same_bits),
        cmocka_unit_test(test_fuse_rows_switch),
        cmocka_unit_test(test_checkpoint_errors),
        cmocka_unit_test(test_wide_dtypes),
        cmocka_unit_test(test_nonfinite_weights),
        cmocka_unit_test(test_engine_golden),
    };
    return cmocka_run_group_tests(tests, rig__setup, rig__teardown);
}
