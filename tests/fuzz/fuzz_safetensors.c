/* fuzz_safetensors.c — libFuzzer harness for the safetensors header reader
 * (rig_safetensors_open, core/model/safetensors.c).
 *
 * The input is written to a file (the reader mmaps) and opened. On success every tensor the
 * reader lists must lie inside the file with bytes == product(shape) × dtype size, and reading
 * each supported one through rig_safetensors_read_bf16 must stay in bounds (ASan). Corpus:
 * tests/fuzz/corpus/safetensors/, small hand-made checkpoints (valid, truncated, overlapping).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/safetensors.h"
#include "hal/status.h"
#include "tests/fuzz/fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t rig__dtype_size(enum rig_dtype dtype)
{
    return dtype == RIG_DTYPE_F32 ? 4 : 2;
}

static void rig__check_tensor(const struct rig_safetensors_tensor *t)
{
    RIG_ASSERT(t->ndim >= 1 && t->ndim <= RIG_TENSOR_DIMS_MAX);
    if (t->dtype == RIG_DTYPE_COUNT) return;
    size_t elements = 1;
    for (int32_t d = 0; d < t->ndim; d++) elements *= (size_t)t->shape[d];
    RIG_ASSERT(t->bytes == elements * rig__dtype_size(t->dtype));
    if (t->ndim > 2 || elements == 0 || elements > (1u << 16)) return;
    int64_t rows = t->shape[0];
    int64_t cols = t->ndim == 2 ? t->shape[1] : 1;
    uint16_t *out = malloc(elements * sizeof *out);
    RIG_ASSERT(out != NULL);
    rig_safetensors_read_bf16(t, 0, rows, 0, cols, out);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = rig_fuzz_file("model.safetensors", data, size);
    struct rig_safetensors *st = NULL;
    char error[512];
    enum rig_status status = rig_safetensors_open(path, &st, error, sizeof error);
    if (status != RIG_OK) {
        RIG_ASSERT(st == NULL);
        RIG_ASSERT(error[0] != '\0');
        return 0;
    }
    int32_t count = rig_safetensors_count(st);
    for (int32_t i = 0; i < count; i++) {
        const struct rig_safetensors_tensor *t = rig_safetensors_at(st, i);
        /* The mapping's base is private; at least no tensor may claim more than the file. */
        RIG_ASSERT(size >= 8 && t->bytes <= size - 8);
        RIG_ASSERT(rig_safetensors_find(st, t->name) == t);
        if (i > 0) RIG_ASSERT(strcmp(rig_safetensors_at(st, i - 1)->name, t->name) < 0);
        rig__check_tensor(t);
    }
    rig_safetensors_close(st);
    return 0;
}
