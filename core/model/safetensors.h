/* safetensors.h — a memory-mapped reader of Hugging Face safetensors checkpoints.
 *
 * Format (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length
 * N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": …},
 * then the tensor bytes; offsets are relative to the end of the header. A sharded
 * checkpoint adds model.safetensors.index.json whose "weight_map" names each tensor's file.
 *
 * Every file is mmapped read-only; nothing is copied until a tensor is read. Every header
 * is validated when it is opened (length bounded, JSON well formed, shapes positive, byte
 * ranges inside the file and equal to shape × dtype size, no tensor twice), so later
 * reads cannot go out of bounds: a truncated or corrupt file is refused at open with the
 * file's and the tensor's name. Tensors of dtypes other than BF16/F16/F32 are listed with
 * dtype RIG_DTYPE_COUNT; reading them is the caller's error to report (with the name).
 *
 * Ownership: the handle owns the mappings and the name strings; tensor descriptors and
 * their data pointers are valid until rig_safetensors_close. Threads: after open, reads are
 * pure, so any thread may read concurrently (the TP ranks load their shards in parallel).
 */
#ifndef RIG_SAFETENSORS_H
#define RIG_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "hal/status.h"
#include "hal/tensor.h"

#define RIG_SAFETENSORS_FILES_MAX 512
#define RIG_SAFETENSORS_TENSORS_MAX 65536
#define RIG_SAFETENSORS_HEADER_BYTES_MAX (100u << 20) /* the format's own limit: 100 MB */
#define RIG_SAFETENSORS_INDEX_BYTES_MAX (64u << 20)

struct rig_safetensors_tensor {
    const char *name;
    enum rig_dtype dtype;                /* BF16 | F16 | F32; RIG_DTYPE_COUNT: other */
    char dtype_name[8];                  /* as written in the header ("BF16", "I64") */
    int32_t ndim;                        /* 1 .. RIG_TENSOR_DIMS_MAX */
    int64_t shape[RIG_TENSOR_DIMS_MAX];  /* (ndim), unused entries 1 */
    const uint8_t *data;                 /* into the mapping; not necessarily aligned */
    size_t bytes;
    int32_t file;                        /* index into the checkpoint's files */
};

struct rig_safetensors;

/* Opens `path`: a .safetensors file, or a directory holding model.safetensors.index.json
 * (sharded) or model.safetensors. On error returns RIG_E_IO (cannot open/map),
 * RIG_E_PARSE (bad header or index), RIG_E_CAPACITY (a limit above) or RIG_E_NOT_FOUND
 * (no checkpoint in the directory, or an index entry missing from its file), writes a
 * message naming the file (and tensor) to `error`, and opens nothing. */
enum rig_status rig_safetensors_open(const char *path, struct rig_safetensors **out,
                                     char *error, size_t error_len);
/* Unmaps everything. NULL is a no-op. */
void rig_safetensors_close(struct rig_safetensors *st);

int32_t rig_safetensors_count(const struct rig_safetensors *st);
/* Tensors sorted by name; 0 <= index < count. */
const struct rig_safetensors_tensor *rig_safetensors_at(const struct rig_safetensors *st,
                                                        int32_t index);
/* The tensor called `name`, or NULL. O(log n). */
const struct rig_safetensors_tensor *rig_safetensors_find(const struct rig_safetensors *st,
                                                          const char *name);
/* File name (without directory) of file `index` of the checkpoint. */
const char *rig_safetensors_file_name(const struct rig_safetensors *st, int32_t index);

/* Converts a block of a 1-D or 2-D tensor of dtype BF16/F16/F32 to bf16 (round to nearest
 * even) into `out` [rows, cols] row-major. A 1-D tensor [n] is read as [n, 1]. The block
 * must lie inside the tensor (asserted: the caller checked the shape). Can't fail. */
void rig_safetensors_read_bf16(const struct rig_safetensors_tensor *t, int64_t row0,
                               int64_t rows, int64_t col0, int64_t cols, uint16_t *out);

#endif /* RIG_SAFETENSORS_H */
