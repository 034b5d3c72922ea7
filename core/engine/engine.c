/* engine.c — creating and destroying the engine (devices, model ranks, buffers, graphs,
 * worker threads), submitting and aborting requests. The loop is core/engine/sched/scheduler.c. */
#include "core/engine/engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/engine_impl.h"
#include "hal/philox.h"
#include "hal/startup.h"

enum rig_status rig_policy_parse(const char *name, enum rig_policy *out)
{
    if (strcmp(name, "prefill_first") == 0) *out = RIG_POLICY_PREFILL_FIRST;
    else if (strcmp(name, "decode_first") == 0) *out = RIG_POLICY_DECODE_FIRST;
    else if (strcmp(name, "mixed") == 0) *out = RIG_POLICY_MIXED;
    else return RIG_E_NOT_FOUND;
    return RIG_OK;
}

const char *rig_policy_name(enum rig_policy policy)
{
    switch (policy) {
    case RIG_POLICY_PREFILL_FIRST: return "prefill_first";
    case RIG_POLICY_DECODE_FIRST: return "decode_first";
    case RIG_POLICY_MIXED: return "mixed";
    }
    return "?";
}

enum rig_status rig_decode_order_parse(const char *name, enum rig_decode_order *out)
{
    if (strcmp(name, "admission") == 0) *out = RIG_DECODE_ORDER_ADMISSION;
    else if (strcmp(name, "longest_first") == 0) *out = RIG_DECODE_ORDER_LONGEST_FIRST;
    else return RIG_E_NOT_FOUND;
    return RIG_OK;
}

const char *rig_decode_order_name(enum rig_decode_order order)
{
    switch (order) {
    case RIG_DECODE_ORDER_ADMISSION: return "admission";
    case RIG_DECODE_ORDER_LONGEST_FIRST: return "longest_first";
    }
    return "?";
}

void rig_engine_config_default(struct rig_engine_config *c)
{
    memset(c, 0, sizeof *c);
    c->backend = "sim";
    c->device.profile = "h100";
    c->tp_size = 1;
    c->num_pages = 1024;
    c->page_size = 1;
    c->max_running_req = 16;
    c->prefill_budget = 8192;
    c->max_requests = 256;
    c->cache_type = RIG_CACHE_RADIX;
    c->policy = RIG_POLICY_PREFILL_FIRST;
    c->decode_order = RIG_DECODE_ORDER_LONGEST_FIRST;
    const char *order = getenv("RIG_DECODE_ORDER"); /* a measuring switch; unknown: ignored */
    if (order != NULL) (void)rig_decode_order_parse(order, &c->decode_order);
    c->overlap = true;
    c->cuda_graphs = true;
    c->cuda_graph_max_bs = 32;
    c->check_invariants = RIG_VERIFY_ON;
    c->host_costs.given = false; /* the device's (the simulator profile's host_* keys) */
}

static void rig__error(char *error, size_t len, const char *fmt, ...)
{
    if (!error || len == 0) return;
    va_list args;
    va_start(args, fmt);
    vsnprintf(error, len, fmt, args);
    va_end(args);
}

/* Checks the limits and derives L, T_max and W_max. */
static enum rig_status rig__validate(struct rig_engine *e, char *error, size_t len)
{
    const struct rig_engine_config *c = &e->config;
    if (c->tp_size < 1 || c->tp_size > RIG_DEVICES_MAX || c->num_pages <= 0 ||
        c->page_size <= 0 || c->page_size > 64 || c->max_running_req <= 0 ||
        c->prefill_budget <= 0 || c->max_requests <= 0 || c->model.max_position <= 0) {
        rig__error(error, len, "engine: a limit is out of range (tp_size %d, num_pages %d, "
                   "page_size %d, max_running_req %d, prefill_budget %d, max_requests %d)",
                   c->tp_size, c->num_pages, c->page_size, c->max_running_req,
                   c->prefill_budget, c->max_requests);
        return RIG_E_INVALID;
    }
    int32_t L = c->max_seq_len > 0 ? c->max_seq_len : c->model.max_position;
    if (L > c->model.max_position) L = c->model.max_position;
    L -= L % c->page_size;
    if (L <= c->max_running_req + 1) {
        rig__error(error, len, "engine: max_seq_len %d must exceed max_running_req + 1 (%d)",
                   L, c->max_running_req + 1);
        return RIG_E_INVALID;
    }
    if ((int64_t)c->num_pages * c->page_size >= INT32_MAX) {
        rig__error(error, len, "engine: num_pages %d x page_size %d is %lld KV slots; at most "
                   "%d fit a slot index", c->num_pages, c->page_size,
                   (long long)c->num_pages * c->page_size, INT32_MAX - 1);
        return RIG_E_INVALID;
    }
    e->max_seq_len = L;
    e->tp_size = c->tp_size;
    e->tokens_max = c->prefill_budget > c->max_running_req ? c->prefill_budget
                                                           : c->max_running_req;
    e->dummy_slot = c->num_pages * c->page_size;
    e->top_logprobs_max = c->model.vocab_size < RIG_LOGPROBS_TOP_MAX ? c->model.vocab_size
                                                                     : RIG_LOGPROBS_TOP_MAX;
    /* Page-table writes per batch: rewrites from the last processed batch (≤ one prompt of
     * L plus a budget), one page per decode request, and admissions — the prefill manager
     * stops admitting before the rest is used, and the first admission (≤ L + a budget + a
     * page) always fits. */
    int32_t writes = 2 * (L + e->tokens_max) + (c->max_running_req + 1) * c->page_size + 64;
    rig__layout_init(&e->layout, c->max_running_req, e->tokens_max, writes);
    return RIG_OK;
}

/* Slots of a key map for `entries` keys (as rig_keymap_init sizes it). */
static double rig__keymap_slots(double entries)
{
    double capacity = 16;
    while (capacity < 2 * entries) capacity *= 2;
    return capacity;
}

/* One table of rig__host_init that grows with a product of two limits. */
struct rig__host_term {
    const char *what;  /* the table and the product it grows with */
    const char *limit; /* the limit named in "at most N <limit> fit" */
    double bytes;
};

/* The bytes rig__host_init will allocate for limits `c` (with the derived L and T_max), in
 * double so that no limit overflows the sum, split into the three product terms (request
 * pool, row tables, KV cache tables) and the rest, which grows with one limit only. */
static double rig__host_bytes(const struct rig_engine_config *c, double L, double tokens_max,
                              struct rig__host_term terms[3])
{
    const struct rig__batch *b = NULL; /* for sizeof only */
    double rows = c->max_running_req, requests = c->max_requests;
    double pages = c->num_pages, slots = pages * c->page_size, nodes = pages + 1;
    double key_slot = sizeof(struct rig_keymap_slot);
    terms[0] = (struct rig__host_term){
        "the request pool (max_requests x max_seq_len)", "max_requests",
        requests * (L * (sizeof(int32_t) + sizeof(int64_t)) + sizeof(struct rig_request) +
                    sizeof(int32_t) + 2 * sizeof(void *) + sizeof(bool)) +
            rig__keymap_slots(requests) * key_slot};
    terms[1] = (struct rig__host_term){
        "the page table and token pool ((max_running_req + 1) x max_seq_len)",
        "max_running_req",
        (rows + 1) * (L * 2 * sizeof(int32_t) + sizeof(bool)) +
            rows * (sizeof(int32_t) + sizeof(uint64_t) + sizeof(struct rig_request *)) +
            RIG__SLOTS * rows *
                (sizeof *b->reqs + sizeof *b->produces + sizeof *b->logprob_out +
                 RIG_LOGPROBS_TOP_MAX * (sizeof *b->top_ids_out + sizeof *b->top_logprobs_out))};
    terms[2] = (struct rig__host_term){
        "the KV cache's tables (num_pages x page_size)", "num_pages",
        slots * (2 * sizeof(int32_t) + 1 + sizeof(int32_t)) +
            pages * (3 * sizeof(int32_t) + sizeof(bool)) +
            nodes * (sizeof(struct rig_radix_node) + 3 * sizeof(int32_t)) +
            rig__keymap_slots(nodes) * key_slot};
    double writes = 2 * (L + tokens_max) + (rows + 1) * c->page_size + 64;
    return terms[0].bytes + terms[1].bytes + terms[2].bytes +
           (writes + 3 * L) * sizeof(int32_t);
}

/* The limit of term `term` (0 max_requests, 1 max_running_req, 2 num_pages) in `c`. */
static int32_t *rig__host_limit(struct rig_engine_config *c, int32_t term)
{
    RIG_ASSERT(term >= 0 && term < 3);
    return term == 0 ? &c->max_requests : term == 1 ? &c->max_running_req : &c->num_pages;
}

/* The host tables against RIG_ENGINE_HOST_BYTES_MAX before any is allocated (num_pages
 * 100000000 took about 10 GB of host memory before failing): the total, its largest term and
 * the largest value of that term's limit that fits, the others as given (a bisection over
 * the same sum, so "at most N fit" is exact for it). */
static enum rig_status rig__check_host(const struct rig_engine *e, char *error, size_t len)
{
    struct rig__host_term terms[3];
    double budget = (double)RIG_ENGINE_HOST_BYTES_MAX;
    double total = rig__host_bytes(&e->config, e->max_seq_len, e->tokens_max, terms);
    if (total <= budget) return RIG_OK;
    int32_t big = 0;
    for (int32_t i = 1; i < 3; i++)
        if (terms[i].bytes > terms[big].bytes) big = i;
    struct rig_engine_config c = e->config;
    int32_t lo = 0, hi = *rig__host_limit(&c, big); /* lo fits (or is 0), hi does not */
    for (int32_t i = 0; i < 40 && hi - lo > 1; i++) {
        int32_t mid = lo + (hi - lo) / 2;
        *rig__host_limit(&c, big) = mid;
        struct rig__host_term scratch[3];
        if (rig__host_bytes(&c, e->max_seq_len, e->tokens_max, scratch) <= budget) lo = mid;
        else hi = mid;
    }
    rig__error(error, len, "engine: the host tables for these limits need %.2f GiB, above the "
               "host budget of %.0f GiB; the largest is %s at %.2f GiB: at most %d %s fit",
               total / 1073741824.0, budget / 1073741824.0, terms[big].what,
               terms[big].bytes / 1073741824.0, lo, terms[big].limit);
    return RIG_E_CAPACITY;
}

/* Host-side state: pool, cache, table, managers, batches, scratch. */
static enum rig_status rig__host_init(struct rig_engine *e)
{
    const struct rig_engine_config *c = &e->config;
    int32_t L = e->max_seq_len, rmax = c->max_running_req, writes = e->layout.writes_max;
    enum rig_status s = rig_request_pool_init(&e->pool, c->max_requests, L);
    if (s == RIG_OK) s = rig_cache_init(&e->cache, c->cache_type, c->num_pages, c->page_size);
    if (s == RIG_OK) e->cache.plant = c->debug_plant;
    if (s == RIG_OK) s = rig_table_init(&e->table, rmax, L, e->dummy_slot);
    if (s == RIG_OK) s = rig_prefill_init(&e->prefill, c->max_requests, L);
    if (s == RIG_OK) s = rig_decode_init(&e->decode, rmax);
    if (s != RIG_OK) return s;
    e->rewrites = malloc((size_t)writes * sizeof(int32_t));
    e->scratch_rewritten = malloc((size_t)L * sizeof(int32_t));
    e->scratch_uids = malloc((size_t)rmax * sizeof(uint64_t));
    e->releasing = malloc((size_t)c->max_requests * sizeof *e->releasing);
    e->check_page_owner = malloc((size_t)c->num_pages * sizeof(int32_t));
    e->check_refs = malloc((size_t)e->cache.tree.nodes_max * sizeof(int32_t));
    e->check_slots = malloc((size_t)L * sizeof(int32_t));
    e->check_running = malloc((size_t)c->max_requests * sizeof(bool));
    bool ok = e->rewrites && e->scratch_rewritten && e->scratch_uids && e->releasing &&
              e->check_page_owner && e->check_refs && e->check_slots && e->check_running;
    for (int32_t i = 0; i < RIG__SLOTS && ok; i++) {
        struct rig__batch *b = &e->batches[i];
        b->reqs = calloc((size_t)rmax, sizeof *b->reqs);
        b->produces = calloc((size_t)rmax, sizeof *b->produces);
        b->logprob_out = calloc((size_t)rmax, sizeof *b->logprob_out);
        b->top_ids_out = calloc((size_t)rmax * RIG_LOGPROBS_TOP_MAX, sizeof *b->top_ids_out);
        b->top_logprobs_out =
            calloc((size_t)rmax * RIG_LOGPROBS_TOP_MAX, sizeof *b->top_logprobs_out);
        ok = b->reqs && b->produces && b->logprob_out && b->top_ids_out && b->top_logprobs_out;
    }
    return ok ? RIG_OK : RIG_E_NO_MEMORY;
}

static void rig__host_free(struct rig_engine *e)
{
    rig_request_pool_free(&e->pool);
    rig_cache_free(&e->cache);
    rig_table_free(&e->table);
    rig_prefill_free(&e->prefill);
    rig_decode_free(&e->decode);
    free(e->rewrites);
    free(e->scratch_rewritten);
    free(e->scratch_uids);
    free(e->releasing);
    free(e->check_page_owner);
    free(e->check_refs);
    free(e->check_slots);
    free(e->check_running);
    for (int32_t i = 0; i < RIG__SLOTS; i++) {
        free(e->batches[i].reqs);
        free(e->batches[i].produces);
        free(e->batches[i].logprob_out);
        free(e->batches[i].top_ids_out);
        free(e->batches[i].top_logprobs_out);
    }
}

/* The per-slot host buffers every step copies through (staging up, tokens_out down) are
 * pinned: a copy from pageable memory blocks the host (hal.h), which would serialise the
 * overlap loop — the download of batch N+1's tokens would return only after its forward. */
static enum rig_status rig__slots_pinned(struct rig_engine *e)
{
    enum rig_status s = RIG_OK;
    size_t tokens_bytes = (size_t)e->layout.requests_max * sizeof(int32_t);
    for (int32_t i = 0; i < RIG__SLOTS && s == RIG_OK; i++) {
        void *staging = NULL, *tokens = NULL;
        s = rig_hal_host_alloc(e->devices[e->rank_first], e->layout.bytes, &staging);
        e->batches[i].staging = staging;
        if (s == RIG_OK) s = rig_hal_host_alloc(e->devices[e->rank_first], tokens_bytes, &tokens);
        e->batches[i].tokens_out = tokens;
    }
    return s;
}

static void rig__slots_pinned_free(struct rig_engine *e)
{
    for (int32_t i = 0; i < RIG__SLOTS; i++) {
        rig_hal_host_free(e->devices[e->rank_first], e->batches[i].staging);
        rig_hal_host_free(e->devices[e->rank_first], e->batches[i].tokens_out);
        e->batches[i].staging = NULL;
        e->batches[i].tokens_out = NULL;
    }
}

static enum rig_status rig__rank_objects(struct rig_engine *e, struct rig__rank *rank)
{
    struct rig_device *d = rank->device;
    size_t cells = (size_t)e->table.rows * (size_t)e->max_seq_len;
    enum rig_status s = rig_hal_stream_create(d, &rank->compute);
    if (s == RIG_OK) s = rig_hal_stream_create(d, &rank->meta);
    for (int32_t i = 0; i < RIG__SLOTS && s == RIG_OK; i++) {
        s = rig_hal_event_create(d, &rank->uploaded[i]);
        if (s == RIG_OK) s = rig_hal_event_create(d, &rank->start[i]);
        if (s == RIG_OK) s = rig_hal_event_create(d, &rank->end[i]);
        if (s == RIG_OK) s = rig_hal_event_create(d, &rank->done[i]);
        if (s == RIG_OK)
            s = rig_hal_buffer_alloc(d, e->layout.bytes, RIG_MEMORY_METADATA,
                                     &rank->meta_slot[i]);
    }
    if (s == RIG_OK) s = rig_hal_event_create(d, &rank->origin);
    if (s == RIG_OK)
        s = rig_hal_buffer_alloc(d, e->layout.bytes, RIG_MEMORY_METADATA, &rank->meta_static);
    if (s == RIG_OK)
        s = rig_hal_buffer_alloc(d, cells * 4, RIG_MEMORY_METADATA, &rank->page_table);
    if (s == RIG_OK)
        s = rig_hal_buffer_alloc(d, cells * 4, RIG_MEMORY_METADATA, &rank->token_pool);
    if (s == RIG_OK)
        s = rig_hal_buffer_alloc(d, 4 * (size_t)e->tokens_max, RIG_MEMORY_METADATA,
                                 &rank->input_ids);
    if (s == RIG_OK)
        s = rig_hal_buffer_alloc(d, 8 * (size_t)e->layout.requests_max, RIG_MEMORY_METADATA,
                                 &rank->out_tokens); /* tokens, then `checked` */
    if (s == RIG_OK)
        s = rig_hal_buffer_alloc(d, 4 * (size_t)e->layout.requests_max *
                                        (1 + 2 * RIG_LOGPROBS_TOP_MAX),
                                 RIG_MEMORY_METADATA, &rank->out_logprobs);
    return s;
}

static void rig__rank_free(struct rig__rank *rank)
{
    for (int32_t g = 0; g < rank->graph_count; g++)
    {
        if (rank->graphs[g].graph) rig_hal_graph_destroy(rank->graphs[g].graph);
        if (rank->graphs[g].extended) rig_hal_graph_destroy(rank->graphs[g].extended);
    }
    if (rank->model) rig_model_destroy(rank->model);
    struct rig_buffer *buffers[] = {rank->meta_slot[0], rank->meta_slot[1], rank->meta_static,
                                    rank->page_table, rank->token_pool, rank->input_ids,
                                    rank->out_tokens, rank->out_logprobs};
    for (size_t i = 0; i < RIG_ARRAY_LEN(buffers); i++)
        if (buffers[i]) rig_hal_buffer_free(buffers[i]);
    for (int32_t i = 0; i < RIG__SLOTS; i++) {
        struct rig_event *events[] = {rank->uploaded[i], rank->start[i], rank->end[i],
                                      rank->done[i]};
        for (size_t k = 0; k < RIG_ARRAY_LEN(events); k++)
            if (events[k]) rig_hal_event_destroy(events[k]);
    }
    if (rank->origin) rig_hal_event_destroy(rank->origin);
    if (rank->meta) rig_hal_stream_destroy(rank->meta);
    if (rank->compute) rig_hal_stream_destroy(rank->compute);
    if (rank->comm) rig_hal_comm_destroy(rank->comm);
}

/* Decode graph sizes, largest first: the largest, then 1, 2, 4, 8, 16, 24, ... below it. */
static void rig__graph_sizes(struct rig_engine *e)
{
    int32_t largest = e->config.cuda_graph_max_bs < e->config.max_running_req
                          ? e->config.cuda_graph_max_bs
                          : e->config.max_running_req;
    int32_t sizes[RIG__GRAPHS_MAX], n = 0;
    if (e->config.cuda_graphs && largest > 0) {
        sizes[n++] = largest;
        int32_t ladder[RIG__GRAPHS_MAX], m = 0;
        for (int32_t bs = 1; bs < largest && m < RIG__GRAPHS_MAX - 1; bs = bs < 8 ? bs * 2 : bs + 8)
            ladder[m++] = bs;
        for (int32_t i = m - 1; i >= 0; i--) sizes[n++] = ladder[i];
    }
    for (int32_t r = e->rank_first; r < e->rank_first + e->rank_count; r++) {
        e->ranks[r].graph_count = n;
        for (int32_t g = 0; g < n; g++) e->ranks[r].graphs[g].batch_size = sizes[g];
    }
}

static enum rig_status rig__devices_open(struct rig_engine *e, char *error, size_t len)
{
    const struct rig_engine_config *c = &e->config;
    struct rig_device_config device = c->device;
    if (c->ranks == RIG_RANKS_MPI) { /* this process's rank of the group */
        struct rig_model_limits limits = {e->tokens_max, e->layout.requests_max, 1};
        device.group_rank = e->rank_first;
        device.group_size = e->tp_size;
        device.collective_bytes_max =
            rig_model_collective_bytes_max(&c->model, &limits, e->tp_size);
    }
    enum rig_status s =
        rig_hal_open(c->backend, &device, e->rank_count, e->devices + e->rank_first);
    if (s != RIG_OK)
        rig__error(error, len, "engine: cannot open %d %s device(s) (rank %d of %d): %s",
                   e->rank_count, c->backend, e->rank_first, e->tp_size, rig_status_message(s));
    return s;
}

/* The host costs the configuration leaves to the device (not given): the simulator profile's
 * model of this engine's CPU time, zero on real hardware (where it is not charged anyway). */
static void rig__host_costs_resolve(struct rig_engine *e)
{
    const struct rig_device_info *info = rig_hal_device_info(e->devices[e->rank_first]);
    struct rig_host_costs *h = &e->config.host_costs;
    if (!h->given) h->model = info->host_model;
    h->given = true;
}

/* The KV cache and the weights against a rank's device memory, before anything sized by
 * the pool is allocated (a pool far too large for the device failed only after gigabytes of
 * host tables): the product of the limits, with how many pages would fit. */
static enum rig_status rig__check_fit(const struct rig_engine *e, char *error, size_t len)
{
    const struct rig_engine_config *c = &e->config;
    double memory = (double)rig_hal_device_info(e->devices[e->rank_first])->memory_bytes;
    double weights = (double)rig_model_weight_bytes(&c->model, e->tp_size);
    double per_slot = (double)rig_model_kv_bytes_per_slot(&c->model, e->tp_size);
    double slots = (double)c->num_pages * c->page_size + 1; /* + the padding slot */
    if (weights + per_slot * slots <= memory) return RIG_OK;
    double fit = (memory - weights) / per_slot - 1;
    rig__error(error, len, "engine: num_pages %d x page_size %d needs %.2f GiB of KV cache per "
               "rank besides %.2f GiB of weights; the device has %.2f GiB: at most %.0f pages "
               "fit (less what activations take)", c->num_pages, c->page_size,
               per_slot * slots / 1073741824.0, weights / 1073741824.0, memory / 1073741824.0,
               fit > 0 ? fit / c->page_size : 0.0);
    return RIG_E_DEVICE_MEMORY;
}

static enum rig_status rig__devices_init(struct rig_engine *e, char *error, size_t len)
{
    const struct rig_engine_config *c = &e->config;
    enum rig_status s;
    if ((s = rig__slots_pinned(e)) != RIG_OK) {
        rig__error(error, len, "engine: pinned host buffers: %s", rig_status_message(s));
        return s;
    }
    rig_startup_mark("pinned host buffers");
    struct rig_comm *comms[RIG_DEVICES_MAX] = {0};
    int32_t first = e->rank_first, end = e->rank_first + e->rank_count;
    if (e->tp_size > 1 &&
        (s = rig_hal_comm_create(e->devices + first, e->rank_count, comms + first)) != RIG_OK) {
        rig__error(error, len, "engine: cannot create the TP group: %s", rig_status_message(s));
        return s;
    }
    struct rig_model_limits limits = {e->tokens_max, e->layout.requests_max,
                                      e->dummy_slot + 1};
    /* Every rank takes its comm first: when rank 0 fails below, destroy must still find
     * the comms of the ranks not reached (found by the swarm: a failing start-up allocation
     * with TP 2 closed a device with a live comm). */
    for (int32_t r = first; r < end; r++) {
        e->ranks[r].index = r;
        e->ranks[r].engine = e;
        e->ranks[r].device = e->devices[r];
        e->ranks[r].comm = comms[r];
    }
    for (int32_t r = first; r < end; r++) {
        struct rig__rank *rank = &e->ranks[r];
        if ((s = rig__rank_objects(e, rank)) != RIG_OK) {
            rig__error(error, len, "engine: rank %d buffers: %s", r, rig_status_message(s));
            return s;
        }
        rig_startup_mark("streams, events, tables (rank %d)", r);
        s = rig_model_create(&c->model, &c->weights, &limits, rank->device, rank->compute,
                             rank->comm, &rank->model, error, len);
        if (s != RIG_OK) return s;
        if ((s = rig__rank_init_tables(rank)) != RIG_OK) return s;
    }
    return RIG_OK;
}

/* Captures decode graphs on every rank; a backend without graphs runs eagerly. */
static enum rig_status rig__graphs_init(struct rig_engine *e, char *error, size_t len)
{
    rig__graph_sizes(e);
    /* A following process captures when process 0's capture job reaches it. */
    if (!rig_engine_leads(e) || e->ranks[0].graph_count == 0) return RIG_OK;
    struct rig__batch *b = &e->batches[0];
    rig__stage_padding(e, b, 0, e->ranks[0].graphs[0].batch_size, 0);
    enum rig_status s = rig__ranks_run(e, RIG_RANK_JOB_CAPTURE, 0);
    if (s == RIG_E_UNSUPPORTED) {
        for (int32_t r = e->rank_first; r < e->rank_first + e->rank_count; r++)
            e->ranks[r].graph_count = 0;
        return RIG_OK;
    }
    if (s != RIG_OK)
        rig__error(error, len, "engine: decode graph capture failed: %s (%s)",
                   rig_status_message(s), rig_engine_error(e));
    return s;
}

enum rig_status rig_engine_create(const struct rig_engine_config *config,
                                  const struct rig_engine_observer *observer,
                                  struct rig_engine **out, char *error, size_t error_len)
{
    struct rig_engine *e = calloc(1, sizeof *e);
    if (!e) return RIG_E_NO_MEMORY;
    e->config = *config;
    if (observer) e->observer = *observer;
    e->processed_end_ns = -1;
    enum rig_status s = rig__validate(e, error, error_len);
    if (s == RIG_OK) s = rig__ranks_join(e, error, error_len);
    if (s == RIG_OK) s = rig__devices_open(e, error, error_len);
    if (s == RIG_OK) rig__host_costs_resolve(e);
    if (s == RIG_OK) s = rig__check_fit(e, error, error_len);
    if (s == RIG_OK) s = rig__check_host(e, error, error_len);
    if (s == RIG_OK && (s = rig__host_init(e)) != RIG_OK)
        rig__error(error, error_len, "engine: out of host memory for the limits given");
    if (s == RIG_OK) rig_startup_mark("devices open, host state");
    if (s == RIG_OK) s = rig__devices_init(e, error, error_len);
    if (s == RIG_OK) rig_startup_mark("ranks' models and caches");
    if (s == RIG_OK && (s = rig__ranks_start(e)) != RIG_OK)
        rig__error(error, error_len, "engine: cannot start rank threads");
    if (s == RIG_OK) s = rig__graphs_init(e, error, error_len);
    if (s == RIG_OK) rig_startup_mark("engine ready");
    if (s != RIG_OK) {
        rig_engine_destroy(e);
        return s;
    }
    *out = e;
    return RIG_OK;
}

void rig_engine_destroy(struct rig_engine *e)
{
    if (!e) return;
    int32_t first = e->rank_first, end = e->rank_first + e->rank_count;
    rig__ranks_report(e);
    rig__ranks_release(e); /* the followers' exit job, before any comm is finalized */
    for (int32_t r = first; r < end; r++) {
        if (e->ranks[r].compute) rig_hal_stream_synchronize(e->ranks[r].compute);
        rig__rank_free(&e->ranks[r]);
    }
    if (e->devices[first]) rig__slots_pinned_free(e);
    for (int32_t r = first; r < end; r++)
        if (e->devices[r]) rig_hal_close(e->devices[r]);
    rig__ranks_stop(e); /* across processes: after the devices' pools (an MPI_Abort on failure) */
    rig__host_free(e);
    free(e);
}

/* Why a request can never run, or NULL when it can. */
static const char *rig__reject_reason(const struct rig_engine *e, const struct rig_submit *s,
                                      int32_t max_tokens, char *buf, size_t len)
{
    int32_t L = e->max_seq_len, ps = e->cache.page_size;
    int64_t slots = (int64_t)e->cache.num_pages * ps;
    if (s->prompt_len >= L) {
        snprintf(buf, len, "prompt of %d tokens leaves no room under the context limit of %d",
                 s->prompt_len, L);
        return buf;
    }
    if ((int64_t)s->prompt_len + max_tokens > L) {
        snprintf(buf, len, "prompt (%d tokens) + max_tokens (%d) exceeds the context limit "
                 "of %d", s->prompt_len, max_tokens, L);
        return buf;
    }
    int64_t need = ((int64_t)s->prompt_len + max_tokens + ps - 1) / ps * ps;
    if (need > slots) {
        snprintf(buf, len, "needs %lld KV slots; the whole cache holds %lld", (long long)need,
                 (long long)slots);
        return buf;
    }
    return NULL;
}

_Static_assert(RIG_TOP_LOGPROBS_MAX <= RIG_LOGPROBS_TOP_MAX,
               "the logprobs op must give every alternative a request may ask for");

/* The first sampling extension out of its range, written to `buf`, or NULL when all are in
 * range. Comparisons are written so that NaN fails them. A vocabulary of fewer than 20
 * tokens (test models) also bounds logprobs. */
static const char *rig__sampling_invalid(const struct rig_sampling_params *p, int32_t vocab,
                                         char *buf, size_t len)
{
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        snprintf(buf, len, "min_p %g is outside [0, 1]", (double)p->min_p);
    else if (!(p->presence_penalty >= -2.0f && p->presence_penalty <= 2.0f))
        snprintf(buf, len, "presence_penalty %g is outside [-2, 2]", (double)p->presence_penalty);
    else if (!(p->frequency_penalty >= -2.0f && p->frequency_penalty <= 2.0f))
        snprintf(buf, len, "frequency_penalty %g is outside [-2, 2]",
                 (double)p->frequency_penalty);
    else if (!(p->repetition_penalty > 0.0f && p->repetition_penalty <= 2.0f))
        snprintf(buf, len, "repetition_penalty %g is outside (0, 2]",
                 (double)p->repetition_penalty);
    else if (p->logprobs < -1 || p->logprobs > RIG_TOP_LOGPROBS_MAX)
        snprintf(buf, len, "logprobs %d is outside [-1, %d]", p->logprobs, RIG_TOP_LOGPROBS_MAX);
    else if (p->logprobs > vocab)
        snprintf(buf, len, "logprobs %d is more than the vocabulary's %d tokens", p->logprobs,
                 vocab);
    else
        return NULL;
    return buf;
}

static void rig__report_end(struct rig_engine *e, const struct rig_submit *s,
                            enum rig_request_end reason, const char *why, int64_t now)
{
    e->ended++;
    if (reason == RIG_END_ABORT) e->stats.aborted++;
    else e->stats.rejected++;
    if (!e->observer.on_finish) return;
    struct rig_request_result res = {s->uid, reason, why, s->prompt_len, 0, 0,
                                     NULL, NULL, s->arrival_ns >= 0 ? s->arrival_ns : now,
                                     -1, -1, now, -1, -1};
    e->observer.on_finish(e->observer.ctx, &res);
}

enum rig_status rig_engine_submit(struct rig_engine *e, const struct rig_submit *s,
                                  char *reason, size_t reason_len)
{
    char why[200];
    if (!s->prompt || s->prompt_len <= 0 || s->sampling.max_tokens < 0) {
        rig__error(reason, reason_len, "request %llu: empty prompt or negative max_tokens",
                   (unsigned long long)s->uid);
        return RIG_E_INVALID;
    }
    if (rig__sampling_invalid(&s->sampling, e->config.model.vocab_size, why, sizeof why)) {
        rig__error(reason, reason_len, "request %llu: %s", (unsigned long long)s->uid, why);
        return RIG_E_INVALID;
    }
    for (int32_t i = 0; i < s->prompt_len; i++) {
        if (s->prompt[i] < 0 || s->prompt[i] >= e->config.model.vocab_size) {
            rig__error(reason, reason_len, "request %llu: token %d at %d is outside the "
                       "vocabulary", (unsigned long long)s->uid, s->prompt[i], i);
            return RIG_E_INVALID;
        }
    }
    if (rig_request_pool_find(&e->pool, s->uid)) {
        rig__error(reason, reason_len, "request %llu: uid already in use",
                   (unsigned long long)s->uid);
        return RIG_E_INVALID;
    }
    int64_t now = rig_engine_now_ns(e);
    int32_t max_tokens = s->sampling.max_tokens > 0 ? s->sampling.max_tokens
                                                    : e->max_seq_len - s->prompt_len;
    const char *reject = rig__reject_reason(e, s, max_tokens, why, sizeof why);
    if (reject) {
        rig__error(reason, reason_len, "request %llu rejected: %s", (unsigned long long)s->uid,
                   reject);
        e->stats.submitted++;
        rig__report_end(e, s, RIG_END_REJECTED, reject, now);
        return RIG_E_RANGE;
    }
    struct rig_request *r;
    enum rig_status status = rig_request_pool_add(&e->pool, s->uid, s->prompt, s->prompt_len, &r);
    if (status == RIG_OK && (status = rig_prefill_push(&e->prefill, r)) != RIG_OK)
        rig_request_pool_remove(&e->pool, r);
    if (status != RIG_OK) {
        rig__error(reason, reason_len, "engine full: %d requests queued or running",
                   e->config.max_requests);
        return RIG_E_CAPACITY;
    }
    r->sampling = s->sampling;
    r->sample_seed = s->sampling.has_seed ? s->sampling.seed : rig_mix64(e->config.seed, s->uid);
    r->max_device_len = s->prompt_len + max_tokens;
    r->arrival_ns = s->arrival_ns >= 0 ? s->arrival_ns : now;
    e->stats.submitted++;
    rig__host_loop_add(e, RIG_HOST_NEW); /* between steps: the LOOP term's */
    return RIG_OK;
}

enum rig_status rig_engine_abort(struct rig_engine *e, uint64_t uid)
{
    struct rig_request *r = rig_request_pool_find(&e->pool, uid);
    if (!r || !rig_request_live(r)) return RIG_E_NOT_FOUND;
    if (r->state == RIG_REQUEST_PENDING || r->state == RIG_REQUEST_CHUNKED)
        rig_prefill_remove(&e->prefill, r);
    rig_decode_remove(&e->decode, r);
    rig__request_end(e, r, RIG_END_ABORT, NULL);
    return RIG_OK;
}

/* The message of an op whose check failed on a rank's stream (naming the op and the
 * argument); "" when none did. Between jobs only: no rank thread issues then. Ranks in
 * another process have no streams here. */
static const char *rig__op_error(const struct rig_engine *e)
{
    for (int32_t r = e->rank_first; r < e->rank_first + e->rank_count; r++) {
        const struct rig_stream *streams[2] = {e->ranks[r].compute, e->ranks[r].meta};
        for (int32_t i = 0; i < 2; i++) {
            const char *message = streams[i] != NULL ? rig_hal_stream_error(streams[i]) : "";
            if (message[0] != '\0') return message;
        }
    }
    return "";
}

const char *rig_engine_error(const struct rig_engine *e)
{
    RIG_ASSERT(e != NULL);
    if (e->error[0] != '\0') return e->error;
    const char *op = rig__op_error(e);
    if (op[0] != '\0') return op;
    const struct rig_comm *comm = e->ranks[e->rank_first].comm;
    const char *group = e->tp_size > 1 && comm != NULL ? rig_hal_comm_error(comm) : "";
    return group[0] != '\0' ? group : rig__ranks_error(e);
}

int32_t rig_engine_abort_all(struct rig_engine *e)
{
    int32_t aborted = 0;
    for (int32_t i = 0; i < e->pool.requests_max; i++) {
        const struct rig_request *r = &e->pool.requests[i];
        if (r->state == RIG_REQUEST_FREE || !rig_request_live(r)) continue;
        enum rig_status status = rig_engine_abort(e, r->uid);
        RIG_ASSERT(status == RIG_OK);
        aborted++;
    }
    return aborted;
}

void rig_engine_end_unsubmitted(struct rig_engine *e, const struct rig_submit *s,
                                enum rig_request_end reason, const char *message)
{
    RIG_ASSERT(reason == RIG_END_REJECTED || reason == RIG_END_ABORT);
    e->stats.submitted++;
    rig__report_end(e, s, reason, message, rig_engine_now_ns(e));
}

enum rig_status rig_engine_flush_cache(struct rig_engine *e)
{
    if (!rig_engine_idle(e)) return RIG_E_STATE;
    rig_cache_flush(&e->cache);
    return RIG_OK;
}

void rig_engine_stats(const struct rig_engine *e, struct rig_engine_stats *out)
{
    *out = e->stats;
    out->pending = e->prefill.count;
    out->running = e->decode.count;
    out->kv = rig_cache_sizes(&e->cache);
}

int64_t rig_engine_now_ns(const struct rig_engine *e)
{
    return rig_hal_now_ns(e->devices[e->rank_first]);
}

void rig_engine_wait_until_ns(struct rig_engine *e, int64_t t_ns)
{
    if (t_ns > rig_engine_now_ns(e)) e->loop_idle = true; /* not the loop's work */
    rig__host_wait_until(e, t_ns);
}

const struct rig_request *rig_engine_find(const struct rig_engine *e, uint64_t uid)
{
    return rig_request_pool_find(&e->pool, uid);
}

const struct rig_cache *rig_engine_cache(const struct rig_engine *e)
{
    return &e->cache;
}

struct rig_device *rig_engine_device(const struct rig_engine *e, int32_t rank)
{
    RIG_ASSERT(rank >= 0 && rank < e->tp_size);
    return e->devices[rank]; /* NULL for a rank in another process */
}

const struct rig_engine_config *rig_engine_get_config(const struct rig_engine *e)
{
    return &e->config;
}

struct rig_model *rig_engine_model(struct rig_engine *e, int32_t rank)
{
    RIG_ASSERT(e != NULL && rank >= 0 && rank < e->tp_size);
    return e->ranks[rank].model; /* NULL for a rank in another process */
}
