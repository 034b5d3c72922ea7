/* optable.c — measured op tables: keys, HDF5 reading and writing, interpolation; see
 * optable.h. */
#include "sim/optable.h"

#include <hdf5.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/embedded.h"
#include "sim/cost.h"

#define RIG__TABLES_MAX 8

struct rig_sim_optable {
    char name[256];
    struct rig_sim_optable_point *points; /* (count) sorted by kind */
    double (*logp)[RIG_SIM_OPTABLE_PARAMS]; /* (count) log2(p + 1) of each point's key */
    int64_t count;
    int64_t first[RIG_OP_COUNT + 1]; /* points of kind k: [first[k], first[k + 1]) */
};

static pthread_mutex_t rig__tables_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rig_sim_optable rig__tables[RIG__TABLES_MAX]; /* loaded, never freed */
static int32_t rig__table_count;

static int32_t rig__i32(const struct rig_tensor *t, int64_t i)
{
    int32_t value;
    int64_t index[1] = {i};
    memcpy(&value, rig_tensor_at(t, index), sizeof value);
    return value;
}

static struct rig_sim_op_key rig__attention_key(const struct rig_tensor *q,
                                                const struct rig_tensor *k_cache,
                                                const struct rig_tensor *kv_len,
                                                const struct rig_tensor *cu_q, int64_t requests)
{
    struct rig_sim_op_key key = {0};
    double sum = 0, most = 0;
    for (int64_t r = 0; r < requests; r++) {
        double len = rig__i32(kv_len, r);
        sum += len;
        most = len > most ? len : most;
    }
    key.p[0] = (double)requests;
    key.p[1] = requests > 0 ? sum / (double)requests : 0;
    key.p[2] = most;
    if (cu_q != NULL) { /* prefill: query tokens, then the mean KV length */
        key.p[1] = (double)(rig__i32(cu_q, requests) - rig__i32(cu_q, 0));
        key.p[2] = requests > 0 ? sum / (double)requests : 0;
    }
    key.p[3] = (double)q->shape[1];
    key.p[4] = (double)k_cache->shape[1];
    key.p[5] = (double)q->shape[2];
    return key;
}

struct rig_sim_op_key rig_sim_optable_key(const struct rig_op *op)
{
    RIG_ASSERT(op != NULL && op->kind != RIG_OP_ALL_REDUCE && op->kind != RIG_OP_ALL_GATHER);
    struct rig_sim_op_key key = {0};
    switch (op->kind) {
    case RIG_OP_GEMM: {
        const struct rig_op_gemm *g = &op->u.gemm;
        key.p[0] = (double)g->a.shape[0];
        key.p[1] = (double)g->b.shape[0];
        key.p[2] = (double)g->a.shape[1];
        key.p[3] = (double)rig_dtype_size(g->out.dtype);
        break;
    }
    case RIG_OP_ATTENTION_DECODE: {
        const struct rig_op_attention_decode *a = &op->u.attention_decode;
        key = rig__attention_key(&a->q, &a->k_cache, &a->kv_len, NULL, a->table_idx.shape[0]);
        break;
    }
    case RIG_OP_ATTENTION_PREFILL: {
        const struct rig_op_attention_prefill *a = &op->u.attention_prefill;
        key = rig__attention_key(&a->q, &a->k_cache, &a->kv_len, &a->cu_q, a->table_idx.shape[0]);
        break;
    }
    default: {
        struct rig_sim_work work = rig_sim_cost_work(op);
        /* every op's first tensor is its output (ops.h): its rows are the op's rows */
        const struct rig_tensor *first = (const struct rig_tensor *)&op->u;
        key.p[0] = first->ndim > 0 ? (double)first->shape[0] : 1.0;
        key.p[1] = work.bytes;
        break;
    }
    }
    key.kind = (int32_t)op->kind;
    return key;
}

/* How much each key parameter counts in the distance, per kind (0: ignored). The max KV
 * length of decode is kept in the table but not matched on: the sweep's batches are uniform. */
static const double *rig__weights(int32_t kind)
{
    static const double gemm[RIG_SIM_OPTABLE_PARAMS] = {1, 1, 1, 4, 0, 0};
    static const double decode[RIG_SIM_OPTABLE_PARAMS] = {1, 1, 0, 1, 1, 1};
    static const double prefill[RIG_SIM_OPTABLE_PARAMS] = {1, 1, 1, 1, 1, 1};
    static const double other[RIG_SIM_OPTABLE_PARAMS] = {0, 1, 0, 0, 0, 0};
    if (kind == RIG_OP_GEMM) return gemm;
    if (kind == RIG_OP_ATTENTION_DECODE) return decode;
    if (kind == RIG_OP_ATTENTION_PREFILL) return prefill;
    return other;
}

static double rig__distance(const double *w, const double *a, const double *b)
{
    double sum = 0;
    for (int32_t i = 0; i < RIG_SIM_OPTABLE_PARAMS; i++) {
        double d = a[i] - b[i];
        sum += w[i] * d * d;
    }
    return sqrt(sum);
}

/* Predictions of recent keys, per thread: a step issues the same shapes layer after layer,
 * and a lookup scans every point of its kind. A pure function's memo: no effect on results. */
#define RIG__MEMO_SLOTS 4096
struct rig__memo {
    const struct rig_sim_optable *table;
    struct rig_sim_op_key key;
    double flops, bytes, peak, bandwidth, launch;
    double ns; /* < 0: the table does not reach the key */
};
static _Thread_local struct rig__memo rig__memo[RIG__MEMO_SLOTS];

static uint64_t rig__memo_slot(const struct rig_sim_op_key *key, double flops, double bytes)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)key->kind;
    double words[RIG_SIM_OPTABLE_PARAMS + 2];
    memcpy(words, key->p, sizeof key->p);
    words[RIG_SIM_OPTABLE_PARAMS] = flops;
    words[RIG_SIM_OPTABLE_PARAMS + 1] = bytes;
    for (int32_t i = 0; i < RIG_SIM_OPTABLE_PARAMS + 2; i++) {
        uint64_t bits;
        memcpy(&bits, &words[i], sizeof bits);
        h = (h ^ bits) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h % RIG__MEMO_SLOTS;
}

static double rig__roofline_s(double flops, double bytes, double peak, double bandwidth)
{
    double compute = flops / peak, memory = bytes / bandwidth;
    double s = compute > memory ? compute : memory;
    return s > 1e-9 ? s : 1e-9;
}

/* A point's time as a node of a step: the geometric mean of its cold time (less the eager
 * launch term the sweep's events include) and its warm time. A step's op reads its weights
 * from HBM but its input, just written by the previous op, from L2: neither extreme. (Chosen
 * on the calibration model: on Qwen3-0.6B's H100 runs, decode median |error| 5-6 % against
 * 17-49 % cold only and 4-24 % warm only, docs/simulator.md.) */
static double rig__node_ns(const struct rig_sim_optable_point *p, double launch_ns)
{
    double cold = p->cold_ns - launch_ns > 1 ? p->cold_ns - launch_ns : 1;
    return p->warm_ns > 0 ? sqrt(cold * p->warm_ns) : cold;
}

static bool rig__predict(const struct rig_sim_optable *table, const struct rig_sim_op_key *key,
                         double flops, double bytes, double peak_flops, double hbm_bytes_per_s,
                         double launch_ns, double *ns)
{
    enum { K = RIG_SIM_OPTABLE_NEIGHBOURS };
    const double *w = rig__weights(key->kind);
    double logp[RIG_SIM_OPTABLE_PARAMS];
    for (int32_t i = 0; i < RIG_SIM_OPTABLE_PARAMS; i++) logp[i] = log2(key->p[i] + 1.0);
    double best_d[K];
    int64_t best_i[K];
    int32_t found = 0;
    for (int64_t i = table->first[key->kind]; i < table->first[key->kind + 1]; i++) {
        double d = rig__distance(w, logp, table->logp[i]);
        if (found == K && d >= best_d[K - 1]) continue;
        int32_t at = found < K ? found++ : K - 1; /* insertion into the sorted few */
        while (at > 0 && best_d[at - 1] > d) {
            best_d[at] = best_d[at - 1];
            best_i[at] = best_i[at - 1];
            at--;
        }
        best_d[at] = d;
        best_i[at] = i;
    }
    if (found == 0 || best_d[0] > RIG_SIM_OPTABLE_REACH) return false;
    double roofline = rig__roofline_s(flops, bytes, peak_flops, hbm_bytes_per_s);
    double log_sum = 0, weight_sum = 0;
    for (int32_t n = 0; n < found; n++) {
        const struct rig_sim_optable_point *p = &table->points[best_i[n]];
        double ratio = rig__node_ns(p, launch_ns) * 1e-9 /
                       rig__roofline_s(p->flops, p->bytes, peak_flops, hbm_bytes_per_s);
        if (best_d[n] < 1e-9) { /* measured here: as measured, scaled by the op's work */
            log_sum = log(ratio);
            weight_sum = 1;
            break;
        }
        double w = 1.0 / best_d[n];
        log_sum += w * log(ratio);
        weight_sum += w;
    }
    *ns = roofline * exp(log_sum / weight_sum) * 1e9;
    return true;
}

bool rig_sim_optable_predict(const struct rig_sim_optable *table,
                             const struct rig_sim_op_key *key, double flops, double bytes,
                             double peak_flops, double hbm_bytes_per_s, double launch_ns,
                             double *ns)
{
    RIG_ASSERT(table != NULL && key != NULL && ns != NULL);
    RIG_ASSERT(key->kind >= 0 && key->kind < RIG_OP_COUNT);
    struct rig__memo *m = &rig__memo[rig__memo_slot(key, flops, bytes)];
    bool hit = m->table == table && memcmp(&m->key, key, sizeof *key) == 0 &&
               m->flops == flops && m->bytes == bytes && m->peak == peak_flops &&
               m->bandwidth == hbm_bytes_per_s && m->launch == launch_ns;
    if (!hit) {
        double value = -1;
        if (!rig__predict(table, key, flops, bytes, peak_flops, hbm_bytes_per_s, launch_ns,
                          &value))
            value = -1;
        *m = (struct rig__memo){table,           *key,      flops, bytes, peak_flops,
                                hbm_bytes_per_s, launch_ns, value};
    }
    if (m->ns < 0) return false;
    *ns = m->ns;
    return true;
}

int64_t rig_sim_optable_count(const struct rig_sim_optable *table)
{
    RIG_ASSERT(table != NULL);
    return table->count;
}

const struct rig_sim_optable_point *rig_sim_optable_point(const struct rig_sim_optable *table,
                                                          int64_t index)
{
    RIG_ASSERT(table != NULL && index >= 0 && index < table->count);
    return &table->points[index];
}

/* --- HDF5 ------------------------------------------------------------------------------- */

/* The /points row type in memory; the file stores it packed. */
static hid_t rig__point_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct rig_sim_optable_point));
    hid_t params = H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, (hsize_t[]){RIG_SIM_OPTABLE_PARAMS});
#define RIG__FIELD(name, member, type)                                                             \
    H5Tinsert(t, name, HOFFSET(struct rig_sim_optable_point, member), type)
    RIG__FIELD("kind", key.kind, H5T_NATIVE_INT32);
    RIG__FIELD("p", key.p, params);
    RIG__FIELD("flops", flops, H5T_NATIVE_DOUBLE);
    RIG__FIELD("bytes", bytes, H5T_NATIVE_DOUBLE);
    RIG__FIELD("cold_ns", cold_ns, H5T_NATIVE_DOUBLE);
    RIG__FIELD("cold_p10_ns", cold_p10_ns, H5T_NATIVE_DOUBLE);
    RIG__FIELD("cold_p90_ns", cold_p90_ns, H5T_NATIVE_DOUBLE);
    RIG__FIELD("warm_ns", warm_ns, H5T_NATIVE_DOUBLE);
#undef RIG__FIELD
    H5Tclose(params);
    return t;
}

static int rig__point_order(const void *a, const void *b)
{
    const struct rig_sim_optable_point *x = a, *y = b;
    return (x->key.kind > y->key.kind) - (x->key.kind < y->key.kind);
}

/* Reads /points of an open file into `table`. False when missing or malformed. */
static bool rig__read_points(hid_t file, struct rig_sim_optable *table)
{
    if (H5Lexists(file, "points", H5P_DEFAULT) <= 0) return false;
    hid_t set = H5Dopen2(file, "points", H5P_DEFAULT);
    hid_t space = set >= 0 ? H5Dget_space(set) : -1;
    hssize_t count = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    bool ok = count > 0 && count <= RIG_SIM_OPTABLE_POINTS_MAX;
    hid_t type = rig__point_type();
    table->points = ok ? calloc((size_t)count, sizeof *table->points) : NULL;
    ok = ok && table->points != NULL &&
         H5Dread(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, table->points) >= 0;
    H5Tclose(type);
    if (space >= 0) H5Sclose(space);
    if (set >= 0) H5Dclose(set);
    for (hssize_t i = 0; ok && i < count; i++) {
        const struct rig_sim_optable_point *p = &table->points[i];
        ok = p->key.kind >= 0 && p->key.kind < RIG_OP_COUNT && p->cold_ns > 0 &&
             isfinite(p->cold_ns) && p->flops >= 0 && p->bytes >= 0;
        for (int32_t k = 0; ok && k < RIG_SIM_OPTABLE_PARAMS; k++)
            ok = isfinite(p->key.p[k]) && p->key.p[k] >= 0;
    }
    table->logp = ok ? calloc((size_t)count, sizeof *table->logp) : NULL;
    if (!ok || table->logp == NULL) return false;
    table->count = (int64_t)count;
    qsort(table->points, (size_t)count, sizeof *table->points, rig__point_order);
    for (hssize_t i = 0; i < count; i++)
        for (int32_t k = 0; k < RIG_SIM_OPTABLE_PARAMS; k++)
            table->logp[i][k] = log2(table->points[i].key.p[k] + 1.0);
    int64_t at = 0;
    for (int32_t k = 0; k <= RIG_OP_COUNT; k++) {
        while (at < table->count && table->points[at].key.kind < k) at++;
        table->first[k] = at;
    }
    return true;
}

/* Opens an .h5 file, or an image of one in memory (embedded tables). */
static hid_t rig__open(const char *path, const struct rig_embedded_file *image)
{
    if (image == NULL)
        return H5Fis_hdf5(path) > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(fapl, 1 << 16, 0);
    H5Pset_file_image(fapl, (void *)image->text, image->size); /* HDF5 copies it */
    hid_t file = H5Fopen(image->name, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    return file;
}

static enum rig_status rig__load(const char *name, struct rig_sim_optable *table, char *error,
                                 size_t error_len)
{
    bool path = strchr(name, '/') != NULL || strstr(name, ".h5") != NULL;
    char file_name[96];
    snprintf(file_name, sizeof file_name, "%s.h5", name);
    const struct rig_embedded_file *image = path ? NULL : rig_embedded_find(file_name);
    if (!path && image == NULL) {
        snprintf(error, error_len, "no built-in op table '%s' (or give a path to an .h5 file)",
                 name);
        return RIG_E_NOT_FOUND;
    }
    H5E_auto2_t saved_func;
    void *saved_data;
    H5Eget_auto2(H5E_DEFAULT, &saved_func, &saved_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t file = rig__open(name, image);
    enum rig_status status = file < 0 ? RIG_E_IO : RIG_OK;
    if (status == RIG_OK && !rig__read_points(file, table)) status = RIG_E_PARSE;
    if (file >= 0) H5Fclose(file);
    H5Eset_auto2(H5E_DEFAULT, saved_func, saved_data);
    if (status != RIG_OK) {
        free(table->points);
        free(table->logp);
        memset(table, 0, sizeof *table);
        snprintf(error, error_len, "%s: %s", name,
                 status == RIG_E_IO ? "cannot open the op table"
                                    : "not an op table (/points missing or malformed)");
    }
    return status;
}

enum rig_status rig_sim_optable_get(const char *name_or_path, const struct rig_sim_optable **out,
                                    char *error, size_t error_len)
{
    RIG_ASSERT(name_or_path != NULL && out != NULL && error != NULL);
    if (strlen(name_or_path) >= sizeof rig__tables[0].name) {
        snprintf(error, error_len, "op table name too long");
        return RIG_E_RANGE;
    }
    pthread_mutex_lock(&rig__tables_lock);
    enum rig_status status = RIG_OK;
    int32_t i = 0;
    while (i < rig__table_count && strcmp(rig__tables[i].name, name_or_path) != 0) i++;
    if (i == rig__table_count) {
        if (i == RIG__TABLES_MAX) {
            snprintf(error, error_len, "more than %d op tables in one process", RIG__TABLES_MAX);
            status = RIG_E_CAPACITY;
        } else {
            status = rig__load(name_or_path, &rig__tables[i], error, error_len);
            if (status == RIG_OK) {
                snprintf(rig__tables[i].name, sizeof rig__tables[i].name, "%s", name_or_path);
                rig__table_count++;
            }
        }
    }
    if (status == RIG_OK) *out = &rig__tables[i];
    pthread_mutex_unlock(&rig__tables_lock);
    return status;
}

static void rig__write_attr(hid_t object, const char *name, const char *value, bool *ok)
{
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    H5Tset_cset(type, H5T_CSET_UTF8);
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, type, &value) < 0) *ok = false;
    if (attr >= 0) H5Aclose(attr);
    H5Sclose(space);
    H5Tclose(type);
}

enum rig_status rig_sim_optable_write(const char *path, const struct rig_sim_optable_point *points,
                                      int64_t count, const char *const (*attrs)[2],
                                      int32_t attr_count, char *error, size_t error_len)
{
    RIG_ASSERT(path != NULL && (points != NULL || count == 0) && count >= 0);
    H5E_auto2_t saved_func;
    void *saved_data;
    H5Eget_auto2(H5E_DEFAULT, &saved_func, &saved_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE), fapl = H5Pcreate(H5P_FILE_ACCESS);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(fcpl, 0); /* no timestamps: the same points give the same bytes */
    H5Pset_obj_track_times(dcpl, 0);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_EARLIEST, H5F_LIBVER_V18);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
    bool ok = file >= 0;
    hid_t type = rig__point_type(), packed = H5Tcopy(type);
    H5Tpack(packed);
    hid_t space = H5Screate_simple(1, (hsize_t[]){(hsize_t)count}, NULL);
    hid_t set = ok ? H5Dcreate2(file, "points", packed, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)
                   : -1;
    ok = ok && set >= 0 &&
         (count == 0 || H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, points) >= 0);
    if (ok) rig__write_attr(file, "format", "rig-optable", &ok);
    for (int32_t i = 0; ok && i < attr_count; i++)
        rig__write_attr(file, attrs[i][0], attrs[i][1], &ok);
    if (set >= 0) H5Dclose(set);
    H5Sclose(space);
    H5Tclose(packed);
    H5Tclose(type);
    if (file >= 0 && H5Fclose(file) < 0) ok = false;
    H5Pclose(fcpl), H5Pclose(fapl), H5Pclose(dcpl);
    H5Eset_auto2(H5E_DEFAULT, saved_func, saved_data);
    if (ok) return RIG_OK;
    remove(path);
    snprintf(error, error_len, "%s: cannot write the op table", path);
    return RIG_E_IO;
}
