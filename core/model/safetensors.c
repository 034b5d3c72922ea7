/* safetensors.c — mmap, header validation, sharded index, bf16 conversion (safetensors.h).
 *
 * Opening is the only fallible step: it maps each file, parses and validates its header,
 * collects every tensor into one table sorted by name and checks the index against it. A
 * failure at any point releases what was taken (rig__st_free) and reports the first
 * problem, naming the file and the tensor.
 */
#include "core/model/safetensors.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct rig__st_file {
    char *name;           /* file name without directory */
    const uint8_t *map;   /* (size) bytes, read-only mapping */
    size_t size;
};

struct rig_safetensors {
    struct rig__st_file files[RIG_SAFETENSORS_FILES_MAX]; /* (file_count) */
    int32_t file_count;
    struct rig_safetensors_tensor *tensors;               /* (count), sorted by name */
    int32_t count;
    int32_t capacity;
};

struct rig__st_error {
    char *text;
    size_t len;
};

static enum rig_status rig__st_fail(struct rig__st_error *e, enum rig_status status,
                                    const char *format, ...)
{
    if (e->text == NULL || e->len == 0) return status;
    va_list ap;
    va_start(ap, format);
    vsnprintf(e->text, e->len, format, ap);
    va_end(ap);
    return status;
}

static void rig__st_free(struct rig_safetensors *st)
{
    for (int32_t i = 0; i < st->file_count; i++) {
        if (st->files[i].map != NULL) munmap((void *)st->files[i].map, st->files[i].size);
        free(st->files[i].name);
    }
    for (int32_t i = 0; i < st->count; i++) free((char *)st->tensors[i].name);
    free(st->tensors);
    free(st);
}

void rig_safetensors_close(struct rig_safetensors *st)
{
    if (st != NULL) rig__st_free(st);
}

static enum rig_status rig__st_map(const char *path, const char *name, struct rig__st_file *f,
                                   struct rig__st_error *e)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return rig__st_fail(e, RIG_E_IO, "%s: cannot open", path);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return rig__st_fail(e, RIG_E_IO, "%s: not a regular file", path);
    }
    if (st.st_size < 8) {
        close(fd);
        return rig__st_fail(e, RIG_E_PARSE, "%s: truncated (%lld bytes, no header)", path,
                            (long long)st.st_size);
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return rig__st_fail(e, RIG_E_IO, "%s: mmap failed", path);
    f->map = map;
    f->size = (size_t)st.st_size;
    f->name = malloc(strlen(name) + 1);
    if (f->name == NULL) return rig__st_fail(e, RIG_E_NO_MEMORY, "out of memory");
    memcpy(f->name, name, strlen(name) + 1);
    return RIG_OK;
}

static enum rig_dtype rig__st_dtype(const char *name)
{
    if (strcmp(name, "BF16") == 0) return RIG_DTYPE_BF16;
    if (strcmp(name, "F16") == 0) return RIG_DTYPE_F16;
    if (strcmp(name, "F32") == 0) return RIG_DTYPE_F32;
    return RIG_DTYPE_COUNT;
}

/* Byte size of one element of a header dtype, 0 when unknown. */
static size_t rig__st_dtype_bytes(const char *name)
{
    static const struct {
        const char *name;
        size_t bytes;
    } sizes[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},
                 {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}, {"F8_E4M3", 1},
                 {"F8_E5M2", 1}, {"U16", 2}, {"U32", 4}, {"U64", 8}};
    for (size_t i = 0; i < RIG_ARRAY_LEN(sizes); i++)
        if (strcmp(name, sizes[i].name) == 0) return sizes[i].bytes;
    return 0;
}

/* Validates one header entry against the data region [0, data_bytes). */
static enum rig_status rig__st_entry(const char *file, const char *name, const json_t *entry,
                                     const uint8_t *data, size_t data_bytes,
                                     struct rig_safetensors_tensor *t, struct rig__st_error *e)
{
    const char *dtype = json_string_value(json_object_get(entry, "dtype"));
    const json_t *shape = json_object_get(entry, "shape");
    const json_t *offsets = json_object_get(entry, "data_offsets");
    if (!json_is_object(entry) || dtype == NULL || !json_is_array(shape) ||
        !json_is_array(offsets) || json_array_size(offsets) != 2)
        return rig__st_fail(e, RIG_E_PARSE, "%s: tensor '%s': needs dtype, shape, data_offsets",
                            file, name);
    size_t ndim = json_array_size(shape);
    if (ndim > RIG_TENSOR_DIMS_MAX)
        return rig__st_fail(e, RIG_E_PARSE, "%s: tensor '%s': %zu dims (at most %d)", file,
                            name, ndim, RIG_TENSOR_DIMS_MAX);
    t->ndim = ndim == 0 ? 1 : (int32_t)ndim;
    uint64_t numel = 1;
    for (int32_t d = 0; d < RIG_TENSOR_DIMS_MAX; d++) {
        t->shape[d] = 1;
        if ((size_t)d >= ndim) continue;
        const json_t *n = json_array_get(shape, (size_t)d);
        if (!json_is_integer(n) || json_integer_value(n) < 0 ||
            json_integer_value(n) > (1ll << 40))
            return rig__st_fail(e, RIG_E_PARSE, "%s: tensor '%s': bad shape", file, name);
        t->shape[d] = json_integer_value(n);
        /* Checked before multiplying: [2^40, 2^24] would wrap around to 0 elements. */
        if (t->shape[d] != 0 && numel > (1ull << 40) / (uint64_t)t->shape[d])
            return rig__st_fail(e, RIG_E_PARSE, "%s: tensor '%s': too large (more than 2^40 "
                                "elements)", file, name);
        numel *= (uint64_t)t->shape[d];
    }
    const json_t *b = json_array_get(offsets, 0), *f = json_array_get(offsets, 1);
    if (!json_is_integer(b) || !json_is_integer(f) || json_integer_value(b) < 0 ||
        json_integer_value(f) < json_integer_value(b) ||
        (uint64_t)json_integer_value(f) > data_bytes)
        return rig__st_fail(e, RIG_E_PARSE,
                            "%s: tensor '%s': data_offsets outside the %zu data bytes "
                            "(truncated or corrupt file)", file, name, data_bytes);
    t->bytes = (size_t)(json_integer_value(f) - json_integer_value(b));
    size_t element = rig__st_dtype_bytes(dtype);
    if (element == 0 || numel * element != t->bytes)
        return rig__st_fail(e, RIG_E_PARSE, "%s: tensor '%s': %zu bytes do not hold %s %llu",
                            file, name, t->bytes, dtype, (unsigned long long)numel);
    t->dtype = rig__st_dtype(dtype);
    snprintf(t->dtype_name, sizeof t->dtype_name, "%s", dtype);
    t->data = data + json_integer_value(b);
    return RIG_OK;
}

static enum rig_status rig__st_reserve(struct rig_safetensors *st, size_t more,
                                       struct rig__st_error *e)
{
    if ((size_t)st->count + more > RIG_SAFETENSORS_TENSORS_MAX)
        return rig__st_fail(e, RIG_E_CAPACITY, "more than %d tensors",
                            RIG_SAFETENSORS_TENSORS_MAX);
    if ((size_t)st->count + more <= (size_t)st->capacity) return RIG_OK;
    int32_t capacity = (int32_t)((size_t)st->count + more);
    struct rig_safetensors_tensor *grown = realloc(st->tensors, sizeof *grown * (size_t)capacity);
    if (grown == NULL) return rig__st_fail(e, RIG_E_NO_MEMORY, "out of memory");
    st->tensors = grown;
    st->capacity = capacity;
    return RIG_OK;
}

/* Parses the header of mapped file `index` and appends its tensors. */
static enum rig_status rig__st_header(struct rig_safetensors *st, int32_t index,
                                      struct rig__st_error *e)
{
    const struct rig__st_file *f = &st->files[index];
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | f->map[i];
    if (n > RIG_SAFETENSORS_HEADER_BYTES_MAX || n > f->size - 8)
        return rig__st_fail(e, RIG_E_PARSE, "%s: header length %llu exceeds the file (%zu "
                            "bytes) or 100 MB: truncated or not safetensors", f->name,
                            (unsigned long long)n, f->size);
    json_error_t je;
    json_t *root = json_loadb((const char *)f->map + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL || !json_is_object(root)) {
        json_decref(root);
        return rig__st_fail(e, RIG_E_PARSE, "%s: header is not a JSON object (%s)", f->name,
                            root == NULL ? je.text : "wrong type");
    }
    enum rig_status status = rig__st_reserve(st, json_object_size(root), e);
    const char *key;
    json_t *entry;
    json_object_foreach(root, key, entry) {
        if (status != RIG_OK) break;
        if (strcmp(key, "__metadata__") == 0) continue;
        struct rig_safetensors_tensor *t = &st->tensors[st->count];
        status = rig__st_entry(f->name, key, entry, f->map + 8 + n, f->size - 8 - (size_t)n, t,
                               e);
        if (status != RIG_OK) break;
        char *name = malloc(strlen(key) + 1);
        if (name == NULL) status = rig__st_fail(e, RIG_E_NO_MEMORY, "out of memory");
        if (name == NULL) break;
        memcpy(name, key, strlen(key) + 1);
        t->name = name;
        t->file = index;
        st->count++;
    }
    json_decref(root);
    return status;
}

static int rig__st_compare(const void *a, const void *b)
{
    const struct rig_safetensors_tensor *x = a, *y = b;
    return strcmp(x->name, y->name);
}

/* Maps and parses one more file of the checkpoint (`dir`/`name`). */
static enum rig_status rig__st_add_file(struct rig_safetensors *st, const char *dir,
                                        const char *name, struct rig__st_error *e)
{
    if (st->file_count >= RIG_SAFETENSORS_FILES_MAX)
        return rig__st_fail(e, RIG_E_CAPACITY, "more than %d files", RIG_SAFETENSORS_FILES_MAX);
    if (strchr(name, '/') != NULL || strcmp(name, "..") == 0)
        return rig__st_fail(e, RIG_E_PARSE, "file name '%s' must not contain a directory", name);
    char path[4096];
    int used = snprintf(path, sizeof path, "%s%s%s", dir, dir[0] ? "/" : "", name);
    if (used < 0 || (size_t)used >= sizeof path)
        return rig__st_fail(e, RIG_E_INVALID, "path too long");
    int32_t index = st->file_count++;
    enum rig_status status = rig__st_map(path, name, &st->files[index], e);
    if (status != RIG_OK) return status;
    return rig__st_header(st, index, e);
}

static int32_t rig__st_file_index(const struct rig_safetensors *st, const char *name)
{
    for (int32_t i = 0; i < st->file_count; i++)
        if (strcmp(st->files[i].name, name) == 0) return i;
    return -1;
}

/* Refuses a tensor present twice (in two shards): which copy wins would be arbitrary. */
static enum rig_status rig__st_unique(const struct rig_safetensors *st, struct rig__st_error *e)
{
    for (int32_t i = 1; i < st->count; i++) {
        if (strcmp(st->tensors[i - 1].name, st->tensors[i].name) == 0)
            return rig__st_fail(e, RIG_E_PARSE, "tensor '%s' appears in %s and %s",
                                st->tensors[i].name, st->files[st->tensors[i - 1].file].name,
                                st->files[st->tensors[i].file].name);
    }
    return RIG_OK;
}

/* Reads the index's weight_map, maps each file it names once, then checks every entry. */
static enum rig_status rig__st_index(struct rig_safetensors *st, const char *dir,
                                     const char *index_path, struct rig__st_error *e)
{
    json_error_t je;
    json_t *root = json_load_file(index_path, JSON_REJECT_DUPLICATES, &je);
    const json_t *map = json_object_get(root, "weight_map");
    if (root == NULL || !json_is_object(map) || json_object_size(map) == 0) {
        json_decref(root);
        return rig__st_fail(e, RIG_E_PARSE, "%s: %s", index_path,
                            root == NULL ? je.text : "no \"weight_map\" object");
    }
    enum rig_status status = RIG_OK;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)map, key, value) {
        const char *file = json_string_value(value);
        if (file == NULL) {
            status = rig__st_fail(e, RIG_E_PARSE, "%s: weight_map['%s'] is not a string",
                                  index_path, key);
            break;
        }
        if (rig__st_file_index(st, file) >= 0) continue;
        status = rig__st_add_file(st, dir, file, e);
        if (status != RIG_OK) break;
    }
    if (status == RIG_OK) {
        /* An empty checkpoint has no tensor array: qsort(NULL, 0) is undefined. */
        if (st->count > 0)
            qsort(st->tensors, (size_t)st->count, sizeof *st->tensors, rig__st_compare);
        status = rig__st_unique(st, e);
    }
    json_object_foreach((json_t *)map, key, value) {
        if (status != RIG_OK) break;
        const struct rig_safetensors_tensor *t = rig_safetensors_find(st, key);
        const char *file = json_string_value(value);
        if (t == NULL || strcmp(st->files[t->file].name, file) != 0)
            status = rig__st_fail(e, RIG_E_NOT_FOUND, "%s: tensor '%s' is not in %s",
                                  index_path, key, file);
    }
    json_decref(root);
    return status;
}

static enum rig_status rig__st_open_path(struct rig_safetensors *st, const char *path,
                                         struct rig__st_error *e)
{
    struct stat info;
    if (stat(path, &info) != 0) return rig__st_fail(e, RIG_E_IO, "%s: cannot open", path);
    if (!S_ISDIR(info.st_mode)) {
        const char *slash = strrchr(path, '/');
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", slash != NULL ? (int)(slash - path) : 0, path);
        return rig__st_add_file(st, dir, slash != NULL ? slash + 1 : path, e);
    }
    char index[4096];
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", path);
    if (stat(index, &info) == 0) return rig__st_index(st, path, index, e);
    snprintf(index, sizeof index, "%s/model.safetensors", path);
    if (stat(index, &info) == 0) return rig__st_add_file(st, path, "model.safetensors", e);
    return rig__st_fail(e, RIG_E_NOT_FOUND,
                        "%s: neither model.safetensors.index.json nor model.safetensors", path);
}

enum rig_status rig_safetensors_open(const char *path, struct rig_safetensors **out,
                                     char *error, size_t error_len)
{
    RIG_ASSERT(path != NULL && out != NULL);
    struct rig__st_error e = {error, error_len};
    if (error != NULL && error_len > 0) error[0] = '\0';
    struct rig_safetensors *st = calloc(1, sizeof *st);
    if (st == NULL) return rig__st_fail(&e, RIG_E_NO_MEMORY, "out of memory");
    enum rig_status status = rig__st_open_path(st, path, &e);
    if (status == RIG_OK) {
        /* An empty checkpoint has no tensor array: qsort(NULL, 0) is undefined. */
        if (st->count > 0)
            qsort(st->tensors, (size_t)st->count, sizeof *st->tensors, rig__st_compare);
        status = rig__st_unique(st, &e);
    }
    if (status != RIG_OK) {
        rig__st_free(st);
        return status;
    }
    *out = st;
    return RIG_OK;
}

int32_t rig_safetensors_count(const struct rig_safetensors *st)
{
    RIG_ASSERT(st != NULL);
    return st->count;
}

const struct rig_safetensors_tensor *rig_safetensors_at(const struct rig_safetensors *st,
                                                        int32_t index)
{
    RIG_ASSERT(st != NULL && index >= 0 && index < st->count);
    return &st->tensors[index];
}

const struct rig_safetensors_tensor *rig_safetensors_find(const struct rig_safetensors *st,
                                                          const char *name)
{
    RIG_ASSERT(st != NULL && name != NULL);
    struct rig_safetensors_tensor key = {.name = name};
    if (st->count == 0) return NULL; /* a header of no tensors ("{}"): no array to search */
    return bsearch(&key, st->tensors, (size_t)st->count, sizeof key, rig__st_compare);
}

const char *rig_safetensors_file_name(const struct rig_safetensors *st, int32_t index)
{
    RIG_ASSERT(st != NULL && index >= 0 && index < st->file_count);
    return st->files[index].name;
}

void rig_safetensors_read_bf16(const struct rig_safetensors_tensor *t, int64_t row0,
                               int64_t rows, int64_t col0, int64_t cols, uint16_t *out)
{
    RIG_ASSERT(t != NULL && out != NULL && (t->ndim == 1 || t->ndim == 2));
    int64_t t_rows = t->shape[0], t_cols = t->ndim == 2 ? t->shape[1] : 1;
    RIG_ASSERT(row0 >= 0 && rows >= 0 && row0 + rows <= t_rows);
    RIG_ASSERT(col0 >= 0 && cols >= 0 && col0 + cols <= t_cols);
    size_t element = rig_dtype_size(t->dtype);
    RIG_ASSERT(t->dtype == RIG_DTYPE_BF16 || t->dtype == RIG_DTYPE_F16 ||
               t->dtype == RIG_DTYPE_F32);
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *src = t->data + ((size_t)(row0 + r) * (size_t)t_cols + (size_t)col0) *
                                           element;
        uint16_t *dst = out + (size_t)r * (size_t)cols;
        if (t->dtype == RIG_DTYPE_BF16) {
            memcpy(dst, src, (size_t)cols * 2); /* safetensors is little-endian, as we are */
            continue;
        }
        for (int64_t c = 0; c < cols; c++) {
            if (t->dtype == RIG_DTYPE_F16) {
                uint16_t h;
                memcpy(&h, src + (size_t)c * 2, 2);
                dst[c] = rig_f32_to_bf16(rig_f16_to_f32(h));
            } else {
                float f;
                memcpy(&f, src + (size_t)c * 4, 4);
                dst[c] = rig_f32_to_bf16(f);
            }
        }
    }
}
