/* optable.c — op tables: an op's key and work, the HDF5 table format; see optable.h. */
#include "hal/optable.h"

#include <hdf5.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/embedded.h"

static double rig__numel(const struct rig_tensor *t)
{
    return (double)rig_tensor_numel(t);
}

static double rig__bytes(const struct rig_tensor *t)
{
    return rig__numel(t) * (double)rig_dtype_size(t->dtype);
}

static int32_t rig__i32(const struct rig_tensor *t, int64_t i)
{
    int64_t index[1] = {i};
    int32_t value;
    memcpy(&value, rig_tensor_at(t, index), sizeof value);
    return value;
}

/* --- work -------------------------------------------------------------------------------- */

/* Query-key pairs of a causal prefill: query row i of a request with q_len new tokens and
 * kv_len total attends to kv_len - q_len + i + 1 positions. KV bytes: each request reads
 * its kv_len positions of K and V once. */
static struct rig_op_work rig__work_prefill(const struct rig_op_attention_prefill *p)
{
    double pairs = 0, kv_positions = 0;
    int64_t requests = p->table_idx.shape[0];
    for (int64_t r = 0; r < requests; r++) {
        double q_len = (double)(rig__i32(&p->cu_q, r + 1) - rig__i32(&p->cu_q, r));
        double kv_len = (double)rig__i32(&p->kv_len, r);
        RIG_ASSERT(q_len >= 0 && kv_len >= q_len);
        pairs += q_len * (kv_len - q_len) + q_len * (q_len + 1) / 2;
        kv_positions += kv_len;
    }
    double heads_q = (double)p->q.shape[1], heads_kv = (double)p->k_cache.shape[1];
    double dim = (double)p->q.shape[2];
    struct rig_op_work work;
    work.flops = 4.0 * pairs * heads_q * dim; /* QK^T and PV, 2 FLOPs per MAC each */
    work.bytes =
        rig__bytes(&p->q) + rig__bytes(&p->out) + kv_positions * (2.0 * heads_kv * dim * 2.0 + 4.0);
    return work;
}

/* --- decode attention's shared positions --------------------------------------------------- */

/* Requests of a decode batch among which shared positions are looked for; a larger batch is
 * costed as if none were shared (every position read once per request). */
#define RIG__SHARED_REQUESTS_MAX 4096

static const int32_t *rig__decode_row(const struct rig_op_attention_decode *p, int64_t r,
                                      int64_t *len)
{
    const struct rig_tensor *table = &p->page_table;
    int64_t row = rig__i32(&p->table_idx, r);
    *len = rig__i32(&p->kv_len, r);
    RIG_ASSERT(row >= 0 && row < table->shape[0]);
    RIG_ASSERT(*len >= 0 && *len <= table->shape[1]);
    return (const int32_t *)table->data + row * table->stride[0];
}

/* How many leading positions two page-table rows of lengths na and nb hold in the same slots.
 * A slot holds one token of one path of the radix cache, so two rows that agree at a position
 * agree at every one before it: the common prefix is found by bisection (O(log L)). Rows
 * that break that rule (not an engine's) get some length within [0, min(na, nb)]. */
static int64_t rig__common(const int32_t *a, int64_t na, const int32_t *b, int64_t nb)
{
    int64_t lo = 0, hi = na < nb ? na : nb; /* a[i] == b[i] for i < lo; unknown from lo on */
    /* Rows that differ at their first slot share nothing: most pairs of a batch, so one probe
     * instead of a bisection over the rows (the Qwen3-8B offline run on the h200 profile,
     * timing only, decode rows longest first: 0.69 -> 0.43 s of CPU) */
    if (hi == 0 || a[0] != b[0]) return 0;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] == b[mid]) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

struct rig__shared_rows {
    const int32_t *row[RIG__SHARED_REQUESTS_MAX]; /* (R) each request's page-table row */
    int64_t len[RIG__SHARED_REQUESTS_MAX];        /* (R) its kv_len */
    int32_t order[RIG__SHARED_REQUESTS_MAX];      /* (R) requests by their rows, ascending */
    int32_t scratch[RIG__SHARED_REQUESTS_MAX];    /* (R) the merge's other half */
};
static _Thread_local struct rig__shared_rows rig__shared;

/* Rows x and y in lexicographic order of their slots (a prefix first); <0, 0 or >0. */
static int rig__row_order(const struct rig__shared_rows *s, int32_t x, int32_t y)
{
    int64_t c = rig__common(s->row[x], s->len[x], s->row[y], s->len[y]);
    if (c < s->len[x] && c < s->len[y]) return s->row[x][c] < s->row[y][c] ? -1 : 1;
    return s->len[x] < s->len[y] ? -1 : s->len[x] > s->len[y] ? 1 : 0;
}

/* Sorts s->order[0, n) by rig__row_order: a bottom-up merge sort, no recursion. */
static void rig__sort_rows(struct rig__shared_rows *s, int32_t n)
{
    int32_t *from = s->order, *to = s->scratch;
    for (int32_t width = 1; width < n; width *= 2) {
        for (int32_t lo = 0; lo < n; lo += 2 * width) {
            int32_t mid = lo + width < n ? lo + width : n;
            int32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                to[k++] = rig__row_order(s, from[i], from[j]) <= 0 ? from[i++] : from[j++];
            while (i < mid) to[k++] = from[i++];
            while (j < hi) to[k++] = from[j++];
        }
        int32_t *swap = from;
        from = to;
        to = swap;
    }
    if (from != s->order) memcpy(s->order, from, (size_t)n * sizeof *from);
}

/* The KV positions a decode batch holds, each counted once where requests share it: the
 * requests' rows as paths of a trie (their common prefixes: a radix cache's shared prompt,
 * the padding rows' one dummy position), whose size is the sum of the lengths less each row's
 * common prefix with the next in lexicographic order. On a GPU the kernel still reads a
 * shared position once per request, but after the first from L2 (docs/simulator.md, "Decode
 * batches that share a prefix"). In [max kv_len, sum of kv_len]. Can't fail. */
static double rig__decode_distinct(const struct rig_op_attention_decode *p)
{
    int64_t requests = p->table_idx.shape[0];
    double sum = 0;
    for (int64_t r = 0; r < requests; r++) sum += rig__i32(&p->kv_len, r);
    if (requests < 2 || requests > RIG__SHARED_REQUESTS_MAX || p->page_table.data == NULL)
        return sum;
    RIG_ASSERT(p->page_table.ndim == 2 && p->page_table.stride[1] == 1);
    struct rig__shared_rows *s = &rig__shared;
    for (int32_t r = 0; r < (int32_t)requests; r++) {
        s->row[r] = rig__decode_row(p, r, &s->len[r]);
        s->order[r] = r;
    }
    rig__sort_rows(s, (int32_t)requests);
    double shared = 0;
    for (int32_t i = 0; i + 1 < (int32_t)requests; i++) {
        int32_t x = s->order[i], y = s->order[i + 1];
        shared += (double)rig__common(s->row[x], s->len[x], s->row[y], s->len[y]);
    }
    RIG_ASSERT(shared >= 0 && shared <= sum);
    return sum - shared;
}

/* One query row per request. KV bytes: K and V of each of the `distinct` positions once
 * (rig__decode_distinct), its page-table entry once per request that reads it. FLOPs: every
 * request's positions. */
static struct rig_op_work rig__work_decode(const struct rig_op_attention_decode *p,
                                           double distinct)
{
    double kv_positions = 0;
    for (int64_t r = 0; r < p->table_idx.shape[0]; r++) {
        int32_t kv_len = rig__i32(&p->kv_len, r);
        RIG_ASSERT(kv_len >= 0);
        kv_positions += kv_len;
    }
    double heads_q = (double)p->q.shape[1], heads_kv = (double)p->k_cache.shape[1];
    double dim = (double)p->q.shape[2];
    struct rig_op_work work;
    work.flops = 4.0 * kv_positions * heads_q * dim;
    work.bytes = rig__bytes(&p->q) + rig__bytes(&p->out) + distinct * 2.0 * heads_kv * dim * 2.0 +
                 kv_positions * 4.0;
    return work;
}

/* The product's 2 M N K FLOPs and its operands' bytes; a fused form's prologue reads `a` (as
 * the product would) and its norm weight and writes the operand, with the FLOPs of the op it
 * replaces (rms_norm's 4, silu_mul's 6 an operand element); accumulate reads out too and adds
 * once an element. */
static struct rig_op_work rig__work_gemm(const struct rig_op_gemm *p)
{
    double m = (double)p->a.shape[0], k = (double)rig_gemm_depth(p), n = (double)p->b.shape[0];
    struct rig_op_work work;
    work.flops = 2.0 * m * n * k;
    work.bytes = rig__bytes(&p->a) + rig__bytes(&p->b) + rig__bytes(&p->out);
    if (p->bias.data != NULL) work.bytes += rig__bytes(&p->bias);
    if (p->prologue != RIG_GEMM_PROLOGUE_NONE) {
        bool norm = p->prologue == RIG_GEMM_PROLOGUE_RMS_NORM;
        work.bytes += rig__bytes(&p->operand) + (norm ? rig__bytes(&p->norm_weight) : 0.0);
        work.flops += (norm ? 4.0 : 6.0) * m * k;
    }
    if (p->accumulate) {
        work.bytes += rig__bytes(&p->out);
        work.flops += m * n;
    }
    return work;
}

/* One pass over the layer's new q, k, v: reads q, k, v (and the norm weights, positions,
 * out_loc), writes q and k back and k, v into the cache. FLOPs: the norm's 4 and RoPE's 6
 * per q/k element. */
static struct rig_op_work rig__work_qk_norm_rope_store(const struct rig_op_qk_norm_rope_store *p)
{
    struct rig_op_work work;
    double qk = rig__bytes(&p->q) + rig__bytes(&p->k), v = rig__bytes(&p->v);
    work.bytes = 2.0 * qk + rig__bytes(&p->k) + 2.0 * v + rig__bytes(&p->positions) +
                 rig__bytes(&p->out_loc);
    double norm_flops = 0.0;
    if (p->q_norm.data != NULL) {
        work.bytes += rig__bytes(&p->q_norm) + rig__bytes(&p->k_norm);
        norm_flops = 4.0;
    }
    work.flops = (norm_flops + 6.0) * (rig__numel(&p->q) + rig__numel(&p->k));
    return work;
}

/* Decode attention's op, alone or with its store (attention_decode_store). */
static const struct rig_op_attention_decode *rig__decode_of(const struct rig_op *op)
{
    RIG_ASSERT(op->kind == RIG_OP_ATTENTION_DECODE || op->kind == RIG_OP_ATTENTION_DECODE_STORE);
    return op->kind == RIG_OP_ATTENTION_DECODE ? &op->u.attention_decode
                                               : &op->u.attention_decode_store.attend;
}

/* A decode op's work with its `distinct` positions; the fused op's is both ops' (q is read by
 * both). */
static struct rig_op_work rig__work_decode_op(const struct rig_op *op, double distinct)
{
    struct rig_op_work work = rig__work_decode(rig__decode_of(op), distinct);
    if (op->kind == RIG_OP_ATTENTION_DECODE_STORE) {
        struct rig_op_work store =
            rig__work_qk_norm_rope_store(&op->u.attention_decode_store.store);
        work.flops += store.flops;
        work.bytes += store.bytes;
    }
    return work;
}

/* Penalties: three passes over each row's history (clear, count, apply), each position
 * reading its id and touching its counts entry, each applying one a logit: about 32 bytes a
 * history position. Reads kv_len, which must be real memory (METADATA) in timing-only mode. */
static struct rig_op_work rig__work_penalize(const struct rig_op_penalize *p)
{
    double positions = 0.0;
    for (int64_t r = 0; r < p->kv_len.shape[0]; r++)
        positions += rig__i32(&p->kv_len, r);
    return (struct rig_op_work){.flops = 4.0 * positions, .bytes = 32.0 * positions};
}

/* Memory-bound ops: bytes read + written, a few FLOPs per element (never the bound). */
static struct rig_op_work rig__work_elementwise(const struct rig_op *op)
{
    struct rig_op_work work = {0};
    switch (op->kind) {
    case RIG_OP_EMBEDDING:
        work.bytes = 2.0 * rig__bytes(&op->u.embedding.out) + rig__bytes(&op->u.embedding.ids);
        break;
    case RIG_OP_RMS_NORM:
        work.bytes = rig__bytes(&op->u.rms_norm.in) + rig__bytes(&op->u.rms_norm.out) +
                     rig__bytes(&op->u.rms_norm.weight);
        work.flops = 4.0 * rig__numel(&op->u.rms_norm.in);
        break;
    case RIG_OP_ADD_RMS_NORM: /* reads in and residual, writes residual and out */
        work.bytes =
            4.0 * rig__bytes(&op->u.add_rms_norm.out) + rig__bytes(&op->u.add_rms_norm.weight);
        work.flops = 5.0 * rig__numel(&op->u.add_rms_norm.out);
        break;
    case RIG_OP_HEAD_RMS_NORM:
        work.bytes = 2.0 * rig__bytes(&op->u.head_rms_norm.x);
        work.flops = 4.0 * rig__numel(&op->u.head_rms_norm.x);
        break;
    case RIG_OP_ROPE:
        work.bytes = 2.0 * (rig__bytes(&op->u.rope.q) + rig__bytes(&op->u.rope.k)) +
                     rig__bytes(&op->u.rope.positions);
        work.flops = 6.0 * (rig__numel(&op->u.rope.q) + rig__numel(&op->u.rope.k));
        break;
    case RIG_OP_QK_NORM_ROPE_STORE:
        work = rig__work_qk_norm_rope_store(&op->u.qk_norm_rope_store);
        break;
    case RIG_OP_SILU_MUL:
        work.bytes = rig__bytes(&op->u.silu_mul.in) + rig__bytes(&op->u.silu_mul.out);
        work.flops = 6.0 * rig__numel(&op->u.silu_mul.out);
        break;
    case RIG_OP_PENALIZE: work = rig__work_penalize(&op->u.penalize); break;
    case RIG_OP_LOGPROBS: /* three passes over the logits: maximum, sum, top N */
        work.bytes = 3.0 * rig__bytes(&op->u.logprobs.logits);
        work.flops = 8.0 * rig__numel(&op->u.logprobs.logits);
        break;
    case RIG_OP_SAMPLE: /* one pass over the logits (top-k/top-p work stays on-chip) */
        work.bytes = rig__bytes(&op->u.sample.logits) + 32.0 * rig__numel(&op->u.sample.tokens);
        work.flops = 4.0 * rig__numel(&op->u.sample.logits);
        break;
    default: RIG_UNREACHABLE();
    }
    return work;
}

/* Data movement: bytes read + written. */
static struct rig_op_work rig__work_copy(const struct rig_op *op)
{
    struct rig_op_work work = {0};
    switch (op->kind) {
    case RIG_OP_STORE_KV: /* reads k, v; writes them into the cache; reads out_loc */
        work.bytes = 2.0 * (rig__bytes(&op->u.store_kv.k) + rig__bytes(&op->u.store_kv.v)) +
                     rig__bytes(&op->u.store_kv.out_loc);
        break;
    case RIG_OP_GATHER_ROWS:
        work.bytes = 2.0 * rig__bytes(&op->u.gather_rows.out) + rig__bytes(&op->u.gather_rows.idx);
        break;
    case RIG_OP_INDEX_GATHER: work.bytes = 3.0 * rig__bytes(&op->u.index_gather.out); break;
    case RIG_OP_INDEX_SCATTER: work.bytes = 3.0 * rig__bytes(&op->u.index_scatter.src); break;
    case RIG_OP_COPY: work.bytes = rig__bytes(&op->u.copy.in) + rig__bytes(&op->u.copy.out); break;
    default: RIG_UNREACHABLE();
    }
    return work;
}

struct rig_op_work rig_optable_op_work(const struct rig_op *op)
{
    RIG_ASSERT(op != NULL);
    switch (op->kind) {
    case RIG_OP_GEMM: return rig__work_gemm(&op->u.gemm);
    case RIG_OP_ATTENTION_PREFILL: return rig__work_prefill(&op->u.attention_prefill);
    case RIG_OP_ATTENTION_DECODE:
    case RIG_OP_ATTENTION_DECODE_STORE: {
        const struct rig_op_attention_decode *a = rig__decode_of(op);
        return rig__work_decode_op(op, rig__decode_distinct(a));
    }
    case RIG_OP_STORE_KV:
    case RIG_OP_GATHER_ROWS:
    case RIG_OP_INDEX_GATHER:
    case RIG_OP_INDEX_SCATTER:
    case RIG_OP_COPY: return rig__work_copy(op);
    case RIG_OP_ALL_REDUCE:
    case RIG_OP_ALL_GATHER:
    case RIG_OP_COUNT: RIG_UNREACHABLE();
    default: return rig__work_elementwise(op);
    }
}

/* --- key --------------------------------------------------------------------------------- */

static struct rig_optable_key rig__attention_key(const struct rig_tensor *q,
                                                 const struct rig_tensor *k_cache,
                                                 const struct rig_tensor *kv_len,
                                                 const struct rig_tensor *cu_q, int64_t requests)
{
    struct rig_optable_key key = {0};
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

static float rig__f32(const struct rig_tensor *t, int64_t i)
{
    int64_t index[1] = {i};
    float value;
    memcpy(&value, rig_tensor_at(t, index), sizeof value);
    return value;
}

void rig_optable_sample_rows(const struct rig_op_sample *p, int64_t rows[RIG_SAMPLE_KINDS])
{
    RIG_ASSERT(p != NULL && rows != NULL);
    for (int32_t k = 0; k < RIG_SAMPLE_KINDS; k++)
        rows[k] = 0;
    int64_t vocab = p->logits.shape[1];
    for (int64_t r = 0; r < p->tokens.shape[0]; r++) {
        float min_p = p->min_p.data != NULL ? rig__f32(&p->min_p, r) : 0.0f;
        rows[rig_sample_row_kind(rig__f32(&p->temperature, r), rig__i32(&p->top_k, r),
                                 rig__f32(&p->top_p, r), min_p, vocab)]++;
    }
}

/* A sample op's rows' kind: theirs when they share one (WHOLE when there are none), else
 * MIXED. */
static double rig__sample_kind(const struct rig_op_sample *p)
{
    int64_t rows[RIG_SAMPLE_KINDS];
    rig_optable_sample_rows(p, rows);
    int32_t kinds = 0, kind = RIG_SAMPLE_WHOLE;
    for (int32_t k = 0; k < RIG_SAMPLE_KINDS; k++) {
        if (rows[k] > 0) kinds++, kind = k;
    }
    return (double)(kinds > 1 ? RIG_SAMPLE_MIXED : kind);
}

/* A decode op's key with its `distinct` positions (its kind set by the caller). */
static struct rig_optable_key rig__decode_key(const struct rig_op_attention_decode *a,
                                              double distinct)
{
    struct rig_optable_key key =
        rig__attention_key(&a->q, &a->k_cache, &a->kv_len, NULL, a->table_idx.shape[0]);
    /* the mean of what the batch reads from memory: shared positions once */
    if (key.p[0] > 0) key.p[1] = distinct / key.p[0];
    return key;
}

struct rig_optable_key rig_optable_op_key(const struct rig_op *op)
{
    RIG_ASSERT(op != NULL && op->kind != RIG_OP_ALL_REDUCE && op->kind != RIG_OP_ALL_GATHER);
    struct rig_optable_key key = {0};
    switch (op->kind) {
    case RIG_OP_GEMM: {
        const struct rig_op_gemm *g = &op->u.gemm;
        key.p[0] = (double)g->a.shape[0];
        key.p[1] = (double)g->b.shape[0];
        key.p[2] = (double)rig_gemm_depth(g);
        key.p[3] = (double)rig_dtype_size(g->out.dtype);
        key.p[4] = (double)g->prologue;
        key.p[5] = g->accumulate ? 1.0 : 0.0;
        break;
    }
    case RIG_OP_ATTENTION_DECODE:
    case RIG_OP_ATTENTION_DECODE_STORE: /* the fused op: its attention's key */
        key = rig__decode_key(rig__decode_of(op), rig__decode_distinct(rig__decode_of(op)));
        break;
    case RIG_OP_ATTENTION_PREFILL: {
        const struct rig_op_attention_prefill *a = &op->u.attention_prefill;
        key = rig__attention_key(&a->q, &a->k_cache, &a->kv_len, &a->cu_q, a->table_idx.shape[0]);
        break;
    }
    default: {
        struct rig_op_work work = rig_optable_op_work(op);
        /* every op's first tensor is its output (ops.h): its rows are the op's rows */
        const struct rig_tensor *first = (const struct rig_tensor *)&op->u;
        key.p[0] = first->ndim > 0 ? (double)first->shape[0] : 1.0;
        key.p[1] = work.bytes;
        if (op->kind == RIG_OP_SAMPLE) key.p[2] = rig__sample_kind(&op->u.sample);
        break;
    }
    }
    key.kind = (int32_t)op->kind;
    return key;
}

void rig_optable_op_describe(const struct rig_op *op, struct rig_optable_key *key,
                             struct rig_op_work *work)
{
    RIG_ASSERT(op != NULL && key != NULL && work != NULL);
    if (op->kind != RIG_OP_ATTENTION_DECODE && op->kind != RIG_OP_ATTENTION_DECODE_STORE) {
        *work = rig_optable_op_work(op);
        *key = rig_optable_op_key(op);
        return;
    }
    double distinct = rig__decode_distinct(rig__decode_of(op)); /* read once for both */
    *work = rig__work_decode_op(op, distinct);
    *key = rig__decode_key(rig__decode_of(op), distinct);
    key->kind = (int32_t)op->kind;
}

bool rig_optable_key_equal(const struct rig_optable_key *a, const struct rig_optable_key *b)
{
    RIG_ASSERT(a != NULL && b != NULL);
    return a->kind == b->kind && memcmp(a->p, b->p, sizeof a->p) == 0;
}

/* --- HDF5 -------------------------------------------------------------------------------- */

/* The /points row type in memory; the file stores it packed. `host` false leaves out
 * host_ns and first_host_ns (reading a table written before those columns existed). */
static hid_t rig__point_type(bool host)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct rig_optable_point));
    hid_t params = H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, (hsize_t[]){RIG_OPTABLE_PARAMS});
#define RIG__FIELD(name, member, type)                                                             \
    H5Tinsert(t, name, HOFFSET(struct rig_optable_point, member), type)
    RIG__FIELD("kind", key.kind, H5T_NATIVE_INT32);
    RIG__FIELD("p", key.p, params);
    RIG__FIELD("flops", flops, H5T_NATIVE_DOUBLE);
    RIG__FIELD("bytes", bytes, H5T_NATIVE_DOUBLE);
    RIG__FIELD("cold_ns", cold_ns, H5T_NATIVE_DOUBLE);
    RIG__FIELD("cold_p10_ns", cold_p10_ns, H5T_NATIVE_DOUBLE);
    RIG__FIELD("cold_p90_ns", cold_p90_ns, H5T_NATIVE_DOUBLE);
    RIG__FIELD("warm_ns", warm_ns, H5T_NATIVE_DOUBLE);
    if (host) RIG__FIELD("host_ns", host_ns, H5T_NATIVE_DOUBLE);
    if (host) RIG__FIELD("first_host_ns", first_host_ns, H5T_NATIVE_DOUBLE);
#undef RIG__FIELD
    H5Tclose(params);
    return t;
}

static bool rig__point_valid(const struct rig_optable_point *p)
{
    bool ok = p->key.kind >= 0 && p->key.kind < RIG_OP_COUNT && p->cold_ns > 0 &&
              isfinite(p->cold_ns) && p->flops >= 0 && p->bytes >= 0 && p->host_ns >= 0 &&
              isfinite(p->host_ns) && p->first_host_ns >= 0 && isfinite(p->first_host_ns);
    for (int32_t k = 0; ok && k < RIG_OPTABLE_PARAMS; k++)
        ok = isfinite(p->key.p[k]) && p->key.p[k] >= 0;
    if (ok && p->key.kind == RIG_OP_GEMM) /* a fused form: a known prologue, accumulate 0 or 1 */
        ok = p->key.p[4] == floor(p->key.p[4]) && p->key.p[4] < RIG_GEMM_PROLOGUES &&
             (p->key.p[5] == 0 || p->key.p[5] == 1);
    return ok;
}

/* Reads /points of an open file: a malloc'd array of *count valid points, or NULL when
 * missing or malformed. */
static struct rig_optable_point *rig__read_points(hid_t file, int64_t *count)
{
    if (H5Lexists(file, "points", H5P_DEFAULT) <= 0) return NULL;
    hid_t set = H5Dopen2(file, "points", H5P_DEFAULT);
    hid_t space = set >= 0 ? H5Dget_space(set) : -1;
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    bool ok = n > 0 && n <= RIG_OPTABLE_POINTS_MAX;
    hid_t file_type = set >= 0 ? H5Dget_type(set) : -1;
    bool host = file_type >= 0 && H5Tget_class(file_type) == H5T_COMPOUND &&
                H5Tget_member_index(file_type, "host_ns") >= 0 &&
                H5Tget_member_index(file_type, "first_host_ns") >= 0;
    if (file_type >= 0) H5Tclose(file_type);
    hid_t type = rig__point_type(host);
    struct rig_optable_point *points = ok ? calloc((size_t)n, sizeof *points) : NULL;
    ok = ok && points != NULL && H5Dread(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, points) >= 0;
    H5Tclose(type);
    if (space >= 0) H5Sclose(space);
    if (set >= 0) H5Dclose(set);
    for (hssize_t i = 0; ok && i < n; i++)
        ok = rig__point_valid(&points[i]);
    if (!ok) {
        free(points);
        return NULL;
    }
    *count = (int64_t)n;
    return points;
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

/* HDF5's error printing, off while a table is read (a malformed file is our error to report). */
struct rig__quiet {
    H5E_auto2_t func;
    void *data;
};

/* Opens the table `name` names: a path (a '/' or ".h5" in it) or a built-in table's embedded
 * image. RIG_E_NOT_FOUND with a message when it names no built-in table (HDF5 untouched);
 * otherwise HDF5's error printing is off (the caller restores *quiet) and *file is the open
 * file, or < 0 with RIG_E_IO. */
static enum rig_status rig__open_table(const char *name, struct rig__quiet *quiet, hid_t *file,
                                       char *error, size_t error_len)
{
    const struct rig_embedded_file *image = NULL;
    if (strchr(name, '/') == NULL && strstr(name, ".h5") == NULL) {
        char file_name[96];
        snprintf(file_name, sizeof file_name, "%s.h5", name);
        image = rig_embedded_find(file_name);
        if (image == NULL) {
            snprintf(error, error_len,
                     "no built-in op table '%s' (or give a path to an .h5 file)", name);
            return RIG_E_NOT_FOUND;
        }
    }
    H5Eget_auto2(H5E_DEFAULT, &quiet->func, &quiet->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *file = rig__open(name, image);
    return *file < 0 ? RIG_E_IO : RIG_OK;
}

enum rig_status rig_optable_read(const char *name, struct rig_optable_point **points,
                                 int64_t *count, char *error, size_t error_len)
{
    RIG_ASSERT(name != NULL && points != NULL && count != NULL && error != NULL);
    struct rig__quiet quiet;
    hid_t file = -1;
    enum rig_status status = rig__open_table(name, &quiet, &file, error, error_len);
    if (status == RIG_E_NOT_FOUND) return status;
    struct rig_optable_point *read = status == RIG_OK ? rig__read_points(file, count) : NULL;
    if (status == RIG_OK && read == NULL) status = RIG_E_PARSE;
    if (status == RIG_OK) *points = read;
    if (file >= 0) H5Fclose(file);
    H5Eset_auto2(H5E_DEFAULT, quiet.func, quiet.data);
    if (status != RIG_OK)
        snprintf(error, error_len, "%s: %s", name,
                 status == RIG_E_IO ? "cannot open the op table"
                                    : "not an op table (/points missing or malformed)");
    return status;
}

const char *const rig_optable_host_keys[RIG_OPTABLE_HOST_CALLS] = {
    [RIG_OPTABLE_HOST_UPLOAD] = "upload_host_ns",
    [RIG_OPTABLE_HOST_DOWNLOAD] = "download_host_ns",
    [RIG_OPTABLE_HOST_DEVICE_COPY] = "device_copy_host_ns",
    [RIG_OPTABLE_HOST_EVENT_RECORD] = "event_record_host_ns",
    [RIG_OPTABLE_HOST_STREAM_WAIT] = "stream_wait_host_ns",
    [RIG_OPTABLE_HOST_GRAPH_LAUNCH] = "graph_launch_host_ns",
    [RIG_OPTABLE_HOST_KERNEL_LAUNCH] = "kernel_launch_host_ns",
};

const char *const rig_optable_host_mean_keys[RIG_OPTABLE_HOST_CALLS] = {
    [RIG_OPTABLE_HOST_UPLOAD] = "upload_host_mean_ns",
    [RIG_OPTABLE_HOST_DOWNLOAD] = "download_host_mean_ns",
    [RIG_OPTABLE_HOST_DEVICE_COPY] = "device_copy_host_mean_ns",
    [RIG_OPTABLE_HOST_EVENT_RECORD] = "event_record_host_mean_ns",
    [RIG_OPTABLE_HOST_STREAM_WAIT] = "stream_wait_host_mean_ns",
    [RIG_OPTABLE_HOST_GRAPH_LAUNCH] = "graph_launch_host_mean_ns",
    [RIG_OPTABLE_HOST_KERNEL_LAUNCH] = "kernel_launch_host_mean_ns",
};

void rig_optable_host_median_key(enum rig_host_term term, enum rig_host_factor factor,
                                 char *out, size_t len)
{
    RIG_ASSERT(term >= 0 && term < RIG_HOST_TERMS && factor >= 0 && factor < RIG_HOST_FACTORS);
    RIG_ASSERT(out != NULL && len > 0);
    const char *key = rig_host_model_keys[term][factor];
    size_t stem = strlen(key) - 3; /* every key ends in "_ns" */
    RIG_ASSERT(strcmp(key + stem, "_ns") == 0);
    snprintf(out, len, "%.*s_median_ns", (int)stem, key);
}

/* A string attribute of the root into `out` (NUL-terminated, cut to out_len); false when
 * absent or not a string. */
static bool rig__read_attr(hid_t file, const char *name, char *out, size_t out_len)
{
    if (H5Aexists(file, name) <= 0) return false;
    hid_t attr = H5Aopen(file, name, H5P_DEFAULT);
    hid_t type = attr >= 0 ? H5Aget_type(attr) : -1;
    bool ok = type >= 0 && H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0;
    char *value = NULL;
    hid_t memory = H5Tcopy(H5T_C_S1);
    H5Tset_size(memory, H5T_VARIABLE);
    H5Tset_cset(memory, H5T_CSET_UTF8); /* as written: HDF5 converts no character set */
    ok = ok && H5Aread(attr, memory, &value) >= 0 && value != NULL;
    if (ok) snprintf(out, out_len, "%s", value);
    if (value != NULL) H5free_memory(value);
    H5Tclose(memory);
    if (type >= 0) H5Tclose(type);
    if (attr >= 0) H5Aclose(attr);
    return ok;
}

/* Attribute `attr` of the open table as a number >= 0 into *value: false (and *value
 * untouched) when absent; RIG_E_PARSE with a message naming file and attribute when present
 * but malformed. */
static enum rig_status rig__read_number(hid_t file, const char *name, const char *attr,
                                        double *value, bool *present, char *error,
                                        size_t error_len)
{
    char text[64], *end = NULL;
    *present = rig__read_attr(file, attr, text, sizeof text);
    if (!*present) return RIG_OK;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(v) || v < 0) {
        snprintf(error, error_len, "%s: attribute %s: '%s' is not a host time in ns (a "
                 "finite number >= 0)", name, attr, text);
        return RIG_E_PARSE;
    }
    *value = v;
    return RIG_OK;
}

/* The host model's coefficients, least squares and least absolute deviations. */
static enum rig_status rig__read_host_model(hid_t file, const char *name,
                                            struct rig_optable_host *host, char *error,
                                            size_t error_len)
{
    enum rig_status status = RIG_OK;
    for (int32_t t = 0; t < RIG_HOST_TERMS; t++) {
        for (int32_t f = 0; f < RIG_HOST_FACTORS && status == RIG_OK; f++) {
            char median[96];
            rig_optable_host_median_key(t, f, median, sizeof median);
            status = rig__read_number(file, name, rig_host_model_keys[t][f], &host->model.ns[t][f],
                                      &host->model_given[t][f], error, error_len);
            if (status == RIG_OK)
                status = rig__read_number(file, name, median, &host->model_median.ns[t][f],
                                          &host->model_median_given[t][f], error, error_len);
        }
    }
    return status;
}

enum rig_status rig_optable_read_host(const char *name, struct rig_optable_host *host, char *error,
                                      size_t error_len)
{
    RIG_ASSERT(name != NULL && host != NULL && error != NULL);
    memset(host, 0, sizeof *host);
    struct rig__quiet quiet;
    hid_t file = -1;
    enum rig_status status = rig__open_table(name, &quiet, &file, error, error_len);
    if (status == RIG_E_NOT_FOUND) return status;
    if (status != RIG_OK) snprintf(error, error_len, "%s: cannot open the op table", name);
    for (int32_t k = 0; k < RIG_OPTABLE_HOST_CALLS && status == RIG_OK; k++) {
        bool present = false;
        status = rig__read_number(file, name, rig_optable_host_keys[k], &host->ns[k], &present,
                                  error, error_len);
        if (status == RIG_OK)
            status = rig__read_number(file, name, rig_optable_host_mean_keys[k],
                                      &host->mean_ns[k], &present, error, error_len);
    }
    if (status == RIG_OK) status = rig__read_host_model(file, name, host, error, error_len);
    if (file >= 0) H5Fclose(file);
    H5Eset_auto2(H5E_DEFAULT, quiet.func, quiet.data);
    if (status != RIG_OK) memset(host, 0, sizeof *host);
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

enum rig_status rig_optable_write(const char *path, const struct rig_optable_point *points,
                                  int64_t count, const char *const (*attrs)[2], int32_t attr_count,
                                  char *error, size_t error_len)
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
    hid_t type = rig__point_type(true), packed = H5Tcopy(type);
    H5Tpack(packed);
    hid_t space = H5Screate_simple(1, (hsize_t[]){(hsize_t)count}, NULL);
    hid_t set = ok ? H5Dcreate2(file, "points", packed, space, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
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
