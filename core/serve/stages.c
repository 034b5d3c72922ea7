/* stages.c — the tokenizer workers, the engine observer and the detokenizer thread (the
 * pipeline of serve_impl.h). The engine thread itself is in server.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/serve/serve_impl.h"

#define RIG__SLOT_MASK ((uint64_t)RIG__SLOTS_MAX - 1)

/* ---- tokenizer stage ------------------------------------------------------------------- */

bool rig__tokenize_post(struct rig_serve *server, struct rig__call *call)
{
    pthread_mutex_lock(&server->tokenize_lock);
    bool room = server->tokenize_count < server->slot_count && !server->tokenize_stop;
    if (room) {
        call->queue_next = NULL;
        if (server->tokenize_tail != NULL) server->tokenize_tail->queue_next = call;
        else server->tokenize_head = call;
        server->tokenize_tail = call;
        server->tokenize_count++;
        rig__call_ref(call);
        pthread_cond_signal(&server->tokenize_wake);
    }
    pthread_mutex_unlock(&server->tokenize_lock);
    return room;
}

static struct rig__call *rig__tokenize_take(struct rig_serve *server)
{
    pthread_mutex_lock(&server->tokenize_lock);
    while (server->tokenize_head == NULL && !server->tokenize_stop)
        pthread_cond_wait(&server->tokenize_wake, &server->tokenize_lock);
    struct rig__call *call = server->tokenize_head;
    if (call != NULL) {
        server->tokenize_head = call->queue_next;
        if (server->tokenize_head == NULL) server->tokenize_tail = NULL;
        server->tokenize_count--;
    }
    pthread_mutex_unlock(&server->tokenize_lock);
    return call;
}

/* The prompt's ids: the chat template rendered and encoded, text encoded, or ids copied. */
static enum rig_status rig__prompt_ids(struct rig_serve *server, struct rig_tokenizer_work *work,
                                       const struct rig_serve_params *p, int32_t index,
                                       struct rig_tokenizer_ids *ids, struct rig_serve_error *e)
{
    ids->count = 0;
    enum rig_status st = RIG_OK;
    char message[512] = "";
    if (p->api == RIG_SERVE_API_CHAT) {
        struct rig_tokenizer_text text = {0};
        st = rig_tokenizer_chat_render(server->tokenizer, server->chat_template, p->messages,
                                       p->message_count, &p->chat, &text, message, sizeof message);
        if (st == RIG_OK)
            st = rig_tokenizer_encode(server->tokenizer, work, text.data, text.len, false, ids,
                                      message, sizeof message);
        rig_tokenizer_text_free(&text);
    } else if (p->prompts[index].text != NULL) {
        st = rig_tokenizer_encode(server->tokenizer, work, p->prompts[index].text,
                                  p->prompts[index].text_len, true, ids, message, sizeof message);
    } else {
        const json_t *list = p->prompts[index].ids;
        size_t count = json_array_size(list);
        ids->ids = malloc(sizeof(int32_t) * count);
        ids->capacity = ids->ids != NULL ? count : 0;
        for (size_t i = 0; i < count && ids->ids != NULL; i++)
            ids->ids[ids->count++] = (int32_t)json_integer_value(json_array_get(list, i));
        if (ids->ids == NULL) st = RIG_E_NO_MEMORY;
        if (ids->ids == NULL) snprintf(message, sizeof message, "out of memory");
    }
    if (st == RIG_OK) return RIG_OK;
    const char *param = p->api == RIG_SERVE_API_CHAT ? "messages" : "prompt";
    return rig_serve_error_set(e, st == RIG_E_NO_MEMORY ? 500 : 400,
                               st == RIG_E_NO_MEMORY ? "server_error" : "invalid_request_error",
                               NULL, param, "%s", message);
}

/* max_tokens of one prompt: the request's, or what the context leaves; 400 when the prompt
 * and max_tokens do not fit the context or the KV pool. */
static enum rig_status rig__fit(const struct rig_serve *server, const struct rig_serve_params *p,
                                int32_t prompt_len, int32_t *max_tokens,
                                struct rig_serve_error *e)
{
    int64_t context = server->context_len;
    int64_t limit = server->kv_tokens < context ? server->kv_tokens : context;
    int64_t want = p->sampling.max_tokens >= 0 ? p->sampling.max_tokens : limit - prompt_len;
    const char *param = p->api == RIG_SERVE_API_CHAT ? "messages" : "prompt";
    if (prompt_len >= limit || prompt_len + want > limit)
        return rig_serve_error_set(
            e, 400, "invalid_request_error", "context_length_exceeded", param,
            "This model's maximum context length is %lld tokens. However, you requested %lld "
            "tokens (%d in the messages, %lld in the completion). Please reduce the length of "
            "the messages or completion.", (long long)limit, (long long)prompt_len + want,
            prompt_len, (long long)want);
    *max_tokens = (int32_t)want;
    return RIG_OK;
}

static struct rig_sampling_params rig__sampling(const struct rig_serve_sampling *s,
                                                int32_t max_tokens, int32_t choice)
{
    struct rig_sampling_params p = rig_sampling_default();
    p.temperature = s->temperature;
    p.top_k = s->top_k;
    p.top_p = s->top_p;
    p.min_p = s->min_p;
    p.presence_penalty = s->presence_penalty;
    p.frequency_penalty = s->frequency_penalty;
    p.repetition_penalty = s->repetition_penalty;
    p.logprobs = s->logprobs ? s->top_logprobs : -1;
    p.max_tokens = max_tokens;
    p.ignore_eos = s->ignore_eos;
    p.has_seed = s->has_seed;
    p.seed = s->seed + (uint64_t)choice; /* choices of one seeded request differ, repeatably */
    memcpy(p.stop_token_ids, s->stop_token_ids, sizeof p.stop_token_ids);
    p.stop_token_count = s->stop_token_count;
    return p;
}

/* Takes `count` free slots for the call's choices; false when the engine is full. */
static bool rig__reserve(struct rig_serve *server, struct rig__call *call)
{
    pthread_mutex_lock(&server->slots_lock);
    bool room = server->slot_count - server->slots_in_use >= call->choice_count;
    for (int32_t i = 0; room && i < call->choice_count; i++) {
        int32_t index = server->slot_free;
        RIG_ASSERT(index >= 0);
        struct rig__slot *slot = &server->slots[index];
        server->slot_free = slot->free_next;
        server->slots_in_use++;
        server->generation++;
        slot->uid = (server->generation << RIG__SLOT_BITS) | (uint64_t)index;
        slot->call = call;
        slot->choice = i;
        call->choices[i].slot = index;
    }
    pthread_mutex_unlock(&server->slots_lock);
    return room;
}

/* Sizes slot `choice` for max_tokens and resets its engine-side state. */
static bool rig__slot_prepare(struct rig_serve *server, struct rig__call *call, int32_t choice,
                              int32_t max_tokens)
{
    struct rig__slot *slot = &server->slots[call->choices[choice].slot];
    slot->capacity = max_tokens;
    slot->tokens = malloc(sizeof(int32_t) * (size_t)(max_tokens > 0 ? max_tokens : 1));
    slot->logprobs = call->params.sampling.logprobs
                         ? calloc((size_t)(max_tokens > 0 ? max_tokens : 1),
                                  sizeof *slot->logprobs)
                         : NULL;
    atomic_store(&slot->produced, 0);
    atomic_store(&slot->logprobs_ready, 0);
    atomic_store(&slot->ended, false);
    atomic_store(&slot->queued, false);
    slot->held_first = -1;
    slot->held_next = -1;
    atomic_store(&slot->cancel, false);
    slot->end = RIG_END_NONE;
    slot->last_token_ns = -1;
    slot->message[0] = '\0';
    return slot->tokens != NULL && (slot->logprobs != NULL || !call->params.sampling.logprobs);
}

static void rig__choices_init(struct rig_serve *server, struct rig__call *call)
{
    const struct rig_serve_params *p = &call->params;
    for (int32_t i = 0; i < call->choice_count; i++) {
        struct rig__choice *c = &call->choices[i];
        c->index = i;
        c->prompt = i / p->n;
        c->stop_matched = -1;
        rig_tokenizer_stream_init(&c->detok, server->tokenizer, p->sampling.skip_special_tokens);
        rig_serve_stop_init(&c->stop, p->sampling.stop, p->sampling.stop_len,
                            p->sampling.stop_count);
    }
}

/* n > 1 with the radix cache: the call keeps its prompts for the choices it holds back
 * (serve_impl.h). Without memory it holds none back (each choice prefills its prompt). */
static void rig__keep_prompts(struct rig_serve *server, struct rig__call *call,
                              struct rig_tokenizer_ids *ids, struct rig_tokenizer_ids **prompts,
                              int32_t prompt_count)
{
    if (call->params.n < 2 || server->config.engine.cache_type != RIG_CACHE_RADIX) return;
    call->held_prompts = calloc((size_t)prompt_count, sizeof *call->held_prompts);
    if (call->held_prompts == NULL) return;
    call->held_prompt_count = prompt_count;
    for (int32_t i = 0; i < prompt_count; i++) {
        call->held_prompts[i] = ids[i];
        memset(&ids[i], 0, sizeof ids[i]);
        prompts[i] = &call->held_prompts[i];
    }
}

/* The engine request of choice i. */
static struct rig_submit rig__submit_of(const struct rig_serve *server,
                                        const struct rig__call *call,
                                        struct rig_tokenizer_ids *const *prompts,
                                        const int32_t *max_tokens, int32_t i)
{
    const struct rig__choice *c = &call->choices[i];
    return (struct rig_submit){
        .uid = server->slots[c->slot].uid, .prompt = prompts[c->prompt]->ids,
        .prompt_len = (int32_t)prompts[c->prompt]->count,
        .sampling = rig__sampling(&call->params.sampling, max_tokens[c->prompt], i),
        .arrival_ns = -1};
}

/* Posts every prompt's first choice to the inbox, the others held behind it when the call
 * keeps its prompts (call->lock held). A first choice the inbox refuses ends at once as
 * rejected, with those behind it; the call then answers 503 if nothing was posted. */
static void rig__submit(struct rig_serve *server, struct rig__call *call,
                        struct rig_tokenizer_ids *const *prompts, const int32_t *max_tokens)
{
    int32_t posted = 0, group = call->held_prompts != NULL ? call->params.n : 1;
    for (int32_t first = 0; first < call->choice_count; first += group) {
        struct rig__slot *lead = &server->slots[call->choices[first].slot];
        for (int32_t i = first + group - 1; i > first; i--) { /* the chain, in index order */
            struct rig__slot *slot = &server->slots[call->choices[i].slot];
            slot->held = rig__submit_of(server, call, prompts, max_tokens, i);
            slot->held_next = lead->held_first;
            lead->held_first = call->choices[i].slot;
        }
        /* the engine's references, each dropped when the detokenizer sees that choice end */
        for (int32_t i = first; i < first + group; i++) rig__call_ref(call);
        struct rig_submit submit = rig__submit_of(server, call, prompts, max_tokens, first);
        if (rig_inbox_submit(server->inbox, &submit) == RIG_OK) {
            posted++;
            continue;
        }
        for (int32_t i = first; i < first + group; i++) {
            atomic_fetch_sub(&call->refs, 1);
            call->choices[i].finished = true;
            call->choices[i].finish = RIG_SERVE_FINISH_ABORT;
        }
    }
    if (posted > 0) return;
    struct rig_serve_error e;
    rig_serve_error_set(&e, 503, "server_error", "server_busy", NULL,
                        "The server is busy (the engine's queue is full); retry later");
    call->error = e;
    call->state = RIG__CALL_FAILED;
}

/* Tokenizes, checks and posts one call; on a client error fails it. */
static void rig__tokenize_call(struct rig_serve *server, struct rig_tokenizer_work *work,
                               struct rig__call *call)
{
    const struct rig_serve_params *p = &call->params;
    int32_t prompt_count = p->api == RIG_SERVE_API_CHAT ? 1 : p->prompt_count;
    struct rig_tokenizer_ids ids[RIG_SERVE_PROMPTS_MAX];
    struct rig_tokenizer_ids *prompts[RIG_SERVE_PROMPTS_MAX];
    int32_t max_tokens[RIG_SERVE_PROMPTS_MAX];
    memset(ids, 0, sizeof ids);
    struct rig_serve_error e;
    enum rig_status st = RIG_OK;
    call->choice_count = rig_serve_params_choices(p);
    call->choices = calloc((size_t)call->choice_count, sizeof *call->choices);
    call->prompt_lens = calloc((size_t)prompt_count, sizeof *call->prompt_lens);
    if (call->choices == NULL) call->choice_count = 0;
    if (call->choices == NULL || call->prompt_lens == NULL)
        st = rig_serve_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
    for (int32_t i = 0; i < call->choice_count && st == RIG_OK; i++) call->choices[i].slot = -1;
    for (int32_t i = 0; i < prompt_count && st == RIG_OK; i++) {
        prompts[i] = &ids[i];
        st = rig__prompt_ids(server, work, p, i, &ids[i], &e);
        if (st == RIG_OK) st = rig__fit(server, p, (int32_t)ids[i].count, &max_tokens[i], &e);
        if (st == RIG_OK) call->prompt_lens[i] = (int32_t)ids[i].count;
    }
    if (st == RIG_OK) rig__choices_init(server, call);
    if (st == RIG_OK && !rig__reserve(server, call))
        st = rig_serve_error_set(&e, 503, "server_error", "server_busy", NULL,
                                 "The server is busy (%d requests in the engine); retry later",
                                 server->slot_count);
    for (int32_t i = 0; i < call->choice_count && st == RIG_OK; i++)
        if (!rig__slot_prepare(server, call, i, max_tokens[call->choices[i].prompt]))
            st = rig_serve_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
    if (st == RIG_OK) rig__keep_prompts(server, call, ids, prompts, prompt_count);
    pthread_mutex_lock(&call->lock);
    if (st == RIG_OK) {
        call->state = RIG__CALL_RUNNING;
        rig__submit(server, call, prompts, max_tokens);
    } else {
        call->error = e;
        call->state = RIG__CALL_FAILED;
    }
    if (call->state == RIG__CALL_FAILED) rig__call_wake(call);
    else if (call->connection == NULL) rig__call_abort(call); /* the client left meanwhile */
    pthread_mutex_unlock(&call->lock);
    for (int32_t i = 0; i < prompt_count; i++) rig_tokenizer_ids_free(&ids[i]);
}

static void *rig__tokenize_main(void *arg)
{
    struct rig_serve *server = arg;
    struct rig_tokenizer_work *work = NULL;
    if (rig_tokenizer_work_create(server->tokenizer, &work, NULL, 0) != RIG_OK) work = NULL;
    for (;;) {
        struct rig__call *call = rig__tokenize_take(server);
        if (call == NULL) break;
        rig__tokenize_call(server, work, call);
        rig__call_unref(call);
    }
    rig_tokenizer_work_free(work);
    return NULL;
}

/* ---- engine observer (the engine's thread) ---------------------------------------------- */

static struct rig__slot *rig__slot_of(struct rig_serve *server, uint64_t uid)
{
    uint64_t index = uid & RIG__SLOT_MASK;
    RIG_ASSERT(index < (uint64_t)server->slot_count);
    struct rig__slot *slot = &server->slots[index];
    RIG_ASSERT_MSG(slot->uid == uid, "engine event for a uid the server does not hold");
    return slot;
}

/* Lists the slot for the detokenizer (once until it takes it). */
static void rig__touch(struct rig_serve *server, struct rig__slot *slot)
{
    if (atomic_exchange(&slot->queued, true)) return;
    RIG_ASSERT(server->engine_dirty_count < server->slot_count);
    server->engine_dirty[server->engine_dirty_count++] = slot->uid;
}

/* Hands the slots touched since the last hand-over to the detokenizer. */
static void rig__hand_over(struct rig_serve *server)
{
    if (server->engine_dirty_count == 0) return;
    pthread_mutex_lock(&server->detok_lock);
    RIG_ASSERT(server->detok_pending_count + server->engine_dirty_count <=
               2 * server->slot_count);
    memcpy(server->detok_pending + server->detok_pending_count, server->engine_dirty,
           sizeof(uint64_t) * (size_t)server->engine_dirty_count);
    server->detok_pending_count += server->engine_dirty_count;
    pthread_cond_signal(&server->detok_wake);
    pthread_mutex_unlock(&server->detok_lock);
    server->engine_dirty_count = 0;
}

/* Ends held choice `slot`, never posted, as the engine's on_finish would have. */
static void rig__held_end(struct rig_serve *server, struct rig__slot *slot,
                          enum rig_request_end reason, const char *message, int64_t t_ns)
{
    slot->end = reason;
    slot->input_len = slot->held.prompt_len;
    slot->cached_len = 0;
    slot->output_len = 0;
    slot->arrival_ns = t_ns;
    slot->first_token_ns = -1;
    slot->finish_ns = t_ns;
    snprintf(slot->message, sizeof slot->message, "%s", message);
    atomic_store_explicit(&slot->ended, true, memory_order_release);
    rig__touch(server, slot);
}

static void rig__retry_push(struct rig_serve *server, uint64_t uid, bool abort)
{
    RIG_ASSERT(server->held_retry_count < server->slot_count);
    server->held_retry[server->held_retry_count++] = (struct rig__retry){uid, abort};
}

/* Posts held choice `slot` with the inbox's non-blocking submit; what the full inbox refuses
 * goes on the retry list. A client's abort that came before the submit is queued again after
 * it (rig__call_abort sets `cancel` before queueing its own). */
static void rig__held_post(struct rig_serve *server, struct rig__slot *slot, int64_t t_ns)
{
    if (atomic_load(&slot->cancel)) {
        rig__held_end(server, slot, RIG_END_ABORT, "", t_ns);
        return;
    }
    enum rig_status st = rig_inbox_submit(server->inbox, &slot->held);
    if (st == RIG_E_CAPACITY) {
        rig__retry_push(server, slot->uid, false);
    } else if (st != RIG_OK) { /* closed: the server is stopping */
        char why[128];
        snprintf(why, sizeof why, "the engine's inbox refused the choice: %s",
                 rig_status_message(st));
        rig__held_end(server, slot, st == RIG_E_STATE ? RIG_END_ABORT : RIG_END_REJECTED, why,
                      t_ns);
    } else if (atomic_load(&slot->cancel) &&
               rig_inbox_abort(server->inbox, slot->uid) == RIG_E_CAPACITY) {
        rig__retry_push(server, slot->uid, true);
    }
}

/* The choices held behind first choice `lead`: posted (reason NONE) or ended as `reason`. */
static void rig__held_release(struct rig_serve *server, struct rig__slot *lead,
                              enum rig_request_end reason, const char *message, int64_t t_ns)
{
    for (int32_t next = lead->held_first; next >= 0;) {
        struct rig__slot *slot = &server->slots[next];
        next = slot->held_next;
        if (reason == RIG_END_NONE) rig__held_post(server, slot, t_ns);
        else rig__held_end(server, slot, reason, message, t_ns);
    }
    lead->held_first = -1;
}

/* Before each step: posts again what the full inbox refused. */
static void rig__held_retry(struct rig_serve *server, int64_t t_ns)
{
    int32_t count = server->held_retry_count;
    server->held_retry_count = 0; /* each entry pushes at most one back, at or below its own */
    for (int32_t i = 0; i < count; i++) {
        struct rig__retry entry = server->held_retry[i];
        if (entry.abort) {
            if (rig_inbox_abort(server->inbox, entry.uid) == RIG_E_CAPACITY)
                rig__retry_push(server, entry.uid, true);
            continue;
        }
        rig__held_post(server, rig__slot_of(server, entry.uid), t_ns);
    }
    rig__hand_over(server);
}

void rig__held_drop(struct rig_serve *server)
{
    for (int32_t i = 0; i < server->held_retry_count; i++) {
        struct rig__retry entry = server->held_retry[i];
        if (!entry.abort) /* the driver aborted every posted request when it stopped */
            rig__held_end(server, rig__slot_of(server, entry.uid), RIG_END_ABORT, "", 0);
    }
    server->held_retry_count = 0;
    rig__hand_over(server);
}

static void rig__on_token(void *ctx, uint64_t uid, int32_t index, int32_t token, int64_t t_ns)
{
    struct rig_serve *server = ctx;
    struct rig__slot *slot = rig__slot_of(server, uid);
    RIG_ASSERT(index >= 0 && index < slot->capacity);
    slot->tokens[index] = token;
    atomic_store_explicit(&slot->produced, index + 1, memory_order_release);
    if (slot->last_token_ns >= 0)
        rig_serve_histogram_observe(&server->metrics.itl, t_ns - slot->last_token_ns);
    slot->last_token_ns = t_ns;
    atomic_fetch_add_explicit(&server->metrics.generation_tokens, 1, memory_order_relaxed);
    rig__touch(server, slot);
    /* The engine puts the prompt in the radix cache right after this token and drains the
     * inbox only after the step: the held choices find it there. */
    if (index == 0 && slot->held_first >= 0)
        rig__held_release(server, slot, RIG_END_NONE, "", t_ns);
}

static void rig__on_logprobs(void *ctx, uint64_t uid, int32_t index, int32_t token,
                             float logprob, int32_t top_count, const int32_t *top_ids,
                             const float *top_logprobs)
{
    (void)token;
    struct rig_serve *server = ctx;
    struct rig__slot *slot = rig__slot_of(server, uid);
    RIG_ASSERT(index >= 0 && index < slot->capacity && slot->logprobs != NULL);
    RIG_ASSERT(top_count >= 0 && top_count <= RIG_TOP_LOGPROBS_MAX);
    struct rig__logprob *entry = &slot->logprobs[index];
    entry->logprob = logprob;
    entry->top_count = top_count;
    memcpy(entry->top_ids, top_ids, sizeof(int32_t) * (size_t)top_count);
    memcpy(entry->top_logprobs, top_logprobs, sizeof(float) * (size_t)top_count);
    atomic_store_explicit(&slot->logprobs_ready, index + 1, memory_order_release);
}

static enum rig_serve_finish rig__finish_of(enum rig_request_end end)
{
    switch (end) {
    case RIG_END_LENGTH:
    case RIG_END_CONTEXT: return RIG_SERVE_FINISH_LENGTH;
    case RIG_END_EOS:
    case RIG_END_STOP_TOKEN: return RIG_SERVE_FINISH_STOP;
    case RIG_END_REJECTED: return RIG_SERVE_FINISH_REJECTED;
    default: return RIG_SERVE_FINISH_ABORT;
    }
}

static void rig__on_finish(void *ctx, const struct rig_request_result *r)
{
    struct rig_serve *server = ctx;
    struct rig__slot *slot = rig__slot_of(server, r->uid);
    if (slot->held_first >= 0) { /* it ended before its first token: so do those behind it */
        bool refused = r->reason == RIG_END_REJECTED || r->reason == RIG_END_ABORT;
        rig__held_release(server, slot, refused ? r->reason : RIG_END_NONE, r->message,
                          r->finish_ns);
    }
    slot->end = r->reason;
    slot->input_len = r->input_len;
    slot->cached_len = r->cached_len;
    slot->output_len = r->output_len;
    slot->arrival_ns = r->arrival_ns;
    slot->first_token_ns = r->first_token_ns;
    slot->finish_ns = r->finish_ns;
    snprintf(slot->message, sizeof slot->message, "%s", r->message);
    atomic_store_explicit(&slot->ended, true, memory_order_release);
    struct rig_serve_metrics *m = &server->metrics;
    if (r->reason != RIG_END_REJECTED) {
        atomic_fetch_add_explicit(&m->prompt_tokens, (uint64_t)(r->input_len - r->cached_len),
                                  memory_order_relaxed);
        atomic_fetch_add_explicit(&m->cached_tokens, (uint64_t)r->cached_len,
                                  memory_order_relaxed);
        rig_serve_histogram_observe(&m->e2e, r->finish_ns - r->arrival_ns);
    }
    if (r->first_token_ns >= 0)
        rig_serve_histogram_observe(&m->ttft, r->first_token_ns - r->arrival_ns);
    rig__touch(server, slot);
    rig__hand_over(server); /* ends may come outside a step (aborts, rejections) */
}

static void rig__on_step(void *ctx, const struct rig_step_record *record)
{
    (void)record;
    rig__hand_over(ctx);
}

struct rig_engine_observer rig__observer(struct rig_serve *server)
{
    return (struct rig_engine_observer){.ctx = server, .on_token = rig__on_token,
                                        .on_finish = rig__on_finish, .on_step = rig__on_step,
                                        .on_logprobs = rig__on_logprobs};
}

static enum rig_status rig__feed(void *ctx, struct rig_engine *engine, int64_t now_ns,
                                 char *error, size_t error_len)
{
    (void)engine, (void)error, (void)error_len;
    struct rig_serve *server = ctx;
    /* Everything arrives through the inbox; held choices it refused are posted again. While
     * one waits here the inbox is full, so the driver does not block on it. */
    if (server->held_retry_count > 0) rig__held_retry(server, now_ns);
    return RIG_OK;
}

static int64_t rig__next_event(void *ctx)
{
    (void)ctx;
    return -1;
}

static bool rig__after_step(void *ctx, struct rig_engine *engine, bool progress)
{
    (void)progress;
    struct rig_serve *server = ctx;
    struct rig_engine_stats s;
    rig_engine_stats(engine, &s);
    struct rig_serve_metrics *m = &server->metrics;
    int64_t page = rig_engine_get_config(engine)->page_size;
    atomic_store_explicit(&m->running, s.running, memory_order_relaxed);
    atomic_store_explicit(&m->queued, s.pending, memory_order_relaxed);
    atomic_store_explicit(&m->used_tokens, s.kv.owned + s.kv.protected_, memory_order_relaxed);
    atomic_store_explicit(&m->pages[0], s.kv.free / page, memory_order_relaxed);
    atomic_store_explicit(&m->pages[1], s.kv.evictable / page, memory_order_relaxed);
    atomic_store_explicit(&m->pages[2], s.kv.protected_ / page, memory_order_relaxed);
    atomic_store_explicit(&m->pages[3], s.kv.owned / page, memory_order_relaxed);
    rig__hand_over(server);
    return true;
}

struct rig_arrival_source rig__arrivals(struct rig_serve *server)
{
    return (struct rig_arrival_source){.ctx = server, .feed = rig__feed,
                                       .next_event_ns = rig__next_event,
                                       .after_step = rig__after_step};
}

/* ---- detokenizer stage ------------------------------------------------------------------- */

static void rig__emit_text(void *ctx, const char *text, size_t len)
{
    struct rig__choice *choice = ctx;
    if (rig_serve_buffer_append(&choice->text, text, len) == RIG_OK) return;
    choice->finished = true; /* over the response limit: end it as if at max_tokens */
    choice->finish = RIG_SERVE_FINISH_LENGTH;
}

/* Feeds the slot's new tokens through the detokenizer and the stop strings (call->lock). */
static void rig__detok_tokens(struct rig_serve *server, struct rig__call *call,
                              struct rig__choice *c, const struct rig__slot *slot)
{
    int32_t produced = atomic_load_explicit(&slot->produced, memory_order_acquire);
    char piece[1024];
    RIG_ASSERT(rig_tokenizer_stream_piece_max(server->tokenizer) < sizeof piece);
    while (!c->finished && c->consumed < produced) {
        size_t len = 0;
        enum rig_status st = rig_tokenizer_stream_step(&c->detok, slot->tokens[c->consumed], piece,
                                                       sizeof piece, &len, NULL, 0);
        RIG_ASSERT(st == RIG_OK);
        c->consumed++;
        c->kept = c->consumed;
        if (rig_serve_stop_feed(&c->stop, piece, len, rig__emit_text, c)) {
            c->finished = true;
            c->finish = RIG_SERVE_FINISH_STOP;
            c->stop_matched = c->stop.matched_index;
            rig_inbox_abort(server->inbox, slot->uid);
        }
    }
    (void)call;
}

/* The slot's end, once every token was taken (call->lock). */
static void rig__detok_end(struct rig__choice *c, const struct rig__slot *slot)
{
    c->prompt_tokens = slot->input_len;
    c->cached_tokens = slot->cached_len;
    c->e2e_ns = slot->finish_ns - slot->arrival_ns;
    if (c->finished) return; /* a stop string ended it first */
    char piece[8];
    size_t len = 0;
    rig_tokenizer_stream_finish(&c->detok, piece, sizeof piece, &len, NULL, 0);
    if (!rig_serve_stop_feed(&c->stop, piece, len, rig__emit_text, c))
        rig_serve_stop_flush(&c->stop, rig__emit_text, c);
    else
        c->stop_matched = c->stop.matched_index;
    c->finished = true;
    c->finish = c->stop_matched >= 0 ? RIG_SERVE_FINISH_STOP : rig__finish_of(slot->end);
    c->rejected = slot->end == RIG_END_REJECTED;
}

/* Counts the choice's end under the reason the client sees (a stop string: "stop"). */
static void rig__count_end(struct rig_serve *server, const struct rig__choice *c)
{
    atomic_fetch_add_explicit(&server->metrics.requests[c->finish], 1, memory_order_relaxed);
}

/* Processes one touched uid: new text, the end, and the wake-up of the connection. */
static void rig__detok_slot(struct rig_serve *server, uint64_t uid)
{
    struct rig__slot *slot = &server->slots[uid & RIG__SLOT_MASK];
    pthread_mutex_lock(&server->slots_lock);
    struct rig__call *call = slot->uid == uid ? slot->call : NULL;
    if (call != NULL) rig__call_ref(call);
    pthread_mutex_unlock(&server->slots_lock);
    if (call == NULL) return;
    atomic_store(&slot->queued, false);
    bool engine_done = false;
    pthread_mutex_lock(&call->lock);
    struct rig__choice *c = &call->choices[slot->choice];
    rig__detok_tokens(server, call, c, slot);
    bool ended = atomic_load_explicit(&slot->ended, memory_order_acquire);
    int32_t produced = atomic_load_explicit(&slot->produced, memory_order_acquire);
    if (ended && !c->end_seen && (c->finished || c->consumed == produced)) {
        c->end_seen = true;
        rig__detok_end(c, slot);
        rig__count_end(server, c);
        engine_done = true;
    }
    c->completion_tokens = c->kept;
    bool ready = call->params.stream ? rig__call_has_output(call) : rig__call_all_finished(call);
    if (ready) rig__call_wake(call);
    pthread_mutex_unlock(&call->lock);
    if (engine_done) rig__call_unref(call); /* the engine's reference */
    rig__call_unref(call);
}

static void *rig__detok_main(void *arg)
{
    struct rig_serve *server = arg;
    for (;;) {
        pthread_mutex_lock(&server->detok_lock);
        while (server->detok_pending_count == 0 && !server->detok_stop)
            pthread_cond_wait(&server->detok_wake, &server->detok_lock);
        int32_t count = server->detok_pending_count;
        bool stop = server->detok_stop && count == 0;
        uint64_t *work = server->detok_pending;
        server->detok_pending = server->detok_working;
        server->detok_working = work;
        server->detok_pending_count = 0;
        pthread_mutex_unlock(&server->detok_lock);
        if (stop) break;
        for (int32_t i = 0; i < count; i++) rig__detok_slot(server, work[i]);
    }
    return NULL;
}

enum rig_status rig__stages_start(struct rig_serve *server)
{
    if (pthread_create(&server->detok_thread, NULL, rig__detok_main, server) != 0)
        return RIG_E_NO_MEMORY;
    server->detok_started = true;
    for (int32_t i = 0; i < server->config.tokenizer_workers; i++) {
        if (pthread_create(&server->tokenize_threads[i], NULL, rig__tokenize_main, server) != 0)
            return RIG_E_NO_MEMORY;
        server->tokenize_started++;
    }
    return RIG_OK;
}

void rig__stages_stop_tokenizers(struct rig_serve *server)
{
    pthread_mutex_lock(&server->tokenize_lock);
    server->tokenize_stop = true; /* the workers finish what is queued, then return */
    pthread_cond_broadcast(&server->tokenize_wake);
    pthread_mutex_unlock(&server->tokenize_lock);
    for (int32_t i = 0; i < server->tokenize_started; i++)
        pthread_join(server->tokenize_threads[i], NULL);
    server->tokenize_started = 0;
}

void rig__stages_stop(struct rig_serve *server)
{
    rig__stages_stop_tokenizers(server);
    pthread_mutex_lock(&server->detok_lock);
    server->detok_stop = true;
    pthread_cond_broadcast(&server->detok_wake);
    pthread_mutex_unlock(&server->detok_lock);
    if (server->detok_started) pthread_join(server->detok_thread, NULL);
    server->detok_started = false;
}
