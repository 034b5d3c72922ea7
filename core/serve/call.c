/* call.c — one API request across the stages: creation, references, wake-ups, aborts.
 *
 * The wake-up protocol (libmicrohttpd forbids resuming a connection that is not suspended):
 * an HTTP thread suspends the connection only while holding call->lock and after checking
 * that nothing is ready, setting call->suspended; a stage that makes something ready takes
 * call->lock and resumes only when call->suspended is set. So a resume never precedes its
 * suspend and no wake-up is lost.
 */
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include <time.h>

#include "core/serve/serve_impl.h"

static const char *rig__id_prefix(enum rig_serve_api api)
{
    switch (api) {
    case RIG_SERVE_API_CHAT: return "chatcmpl-";
    case RIG_SERVE_API_COMPLETION: return "cmpl-";
    case RIG_SERVE_API_GENERATE: return "";
    }
    return "";
}

struct rig__call *rig__call_create(struct rig_serve *server, struct MHD_Connection *connection,
                                   enum rig_serve_api api)
{
    struct rig__call *call = calloc(1, sizeof *call);
    if (call == NULL) return NULL;
    atomic_fetch_add(&server->calls_since_trim, 1);
    if (pthread_mutex_init(&call->lock, NULL) != 0) {
        free(call);
        return NULL;
    }
    call->server = server;
    call->connection = connection;
    call->params.api = api;
    call->body.limit = (size_t)server->config.max_request_bytes;
    atomic_init(&call->refs, 1);
    uint64_t seq = atomic_fetch_add(&server->call_seq, 1) + 1;
    snprintf(call->id, sizeof call->id, "%s%016llx", rig__id_prefix(api),
             (unsigned long long)seq);
    call->created = (int64_t)time(NULL);
    pthread_mutex_lock(&server->calls_lock);
    call->next = server->calls;
    if (server->calls != NULL) server->calls->prev = call;
    server->calls = call;
    server->call_count++;
    pthread_mutex_unlock(&server->calls_lock);
    return call;
}

void rig__call_ref(struct rig__call *call)
{
    int32_t before = atomic_fetch_add(&call->refs, 1);
    RIG_ASSERT(before > 0);
}

/* Returns the call's slots to the free list. */
static void rig__release_slots(struct rig_serve *server, struct rig__call *call)
{
    pthread_mutex_lock(&server->slots_lock);
    for (int32_t i = 0; i < call->choice_count; i++) {
        int32_t index = call->choices[i].slot;
        if (index < 0) continue;
        struct rig__slot *slot = &server->slots[index];
        RIG_ASSERT(slot->call == call);
        free(slot->tokens);
        free(slot->logprobs);
        slot->tokens = NULL;
        slot->logprobs = NULL;
        slot->call = NULL;
        slot->uid = 0;
        slot->free_next = server->slot_free;
        server->slot_free = index;
        server->slots_in_use--;
    }
    pthread_mutex_unlock(&server->slots_lock);
}

/* When the last call is gone after a burst (64 calls or more since the last time), gives the
 * memory the burst took back to the system: glibc keeps freed memory in per-thread arenas. */
static void rig__trim(struct rig_serve *server)
{
#ifdef __GLIBC__
    if (atomic_exchange(&server->calls_since_trim, 0) >= 64) malloc_trim(0);
#else
    (void)server;
#endif
}

void rig__call_unref(struct rig__call *call)
{
    int32_t before = atomic_fetch_sub(&call->refs, 1);
    RIG_ASSERT(before > 0);
    if (before > 1) return;
    struct rig_serve *server = call->server;
    rig__release_slots(server, call);
    pthread_mutex_lock(&server->calls_lock);
    if (call->prev != NULL) call->prev->next = call->next;
    else server->calls = call->next;
    if (call->next != NULL) call->next->prev = call->prev;
    server->call_count--;
    bool idle = server->call_count == 0;
    pthread_cond_broadcast(&server->calls_gone);
    pthread_mutex_unlock(&server->calls_lock);
    for (int32_t i = 0; i < call->choice_count; i++) {
        rig_serve_buffer_free(&call->choices[i].text);
        rig_serve_buffer_free(&call->choices[i].text_json);
    }
    free(call->choices);
    free(call->prompt_lens);
    for (int32_t i = 0; i < call->held_prompt_count; i++)
        rig_tokenizer_ids_free(&call->held_prompts[i]);
    free(call->held_prompts);
    rig_serve_params_free(&call->params);
    rig_serve_buffer_free(&call->body);
    rig_serve_buffer_free(&call->out);
    pthread_mutex_destroy(&call->lock);
    free(call);
    if (idle) rig__trim(server);
}

void rig__call_wake(struct rig__call *call)
{
    if (!call->suspended || call->connection == NULL) return;
    call->suspended = false;
    MHD_resume_connection(call->connection);
}

void rig__call_fail(struct rig__call *call, const struct rig_serve_error *error)
{
    pthread_mutex_lock(&call->lock);
    call->error = *error;
    call->state = RIG__CALL_FAILED;
    rig__call_wake(call);
    pthread_mutex_unlock(&call->lock);
}

void rig__call_abort(struct rig__call *call)
{
    struct rig_serve *server = call->server;
    if (call->state != RIG__CALL_RUNNING) return;
    for (int32_t i = 0; i < call->choice_count; i++) {
        const struct rig__choice *choice = &call->choices[i];
        if (choice->slot < 0 || choice->finished) continue;
        struct rig__slot *slot = &server->slots[choice->slot];
        atomic_store(&slot->cancel, true); /* a held choice: never posted (serve_impl.h) */
        /* Harmless when the request just ended; the inbox is sized for one abort per slot. */
        rig_inbox_abort(server->inbox, slot->uid);
    }
}

bool rig__call_all_finished(const struct rig__call *call)
{
    for (int32_t i = 0; i < call->choice_count; i++)
        if (!call->choices[i].finished) return false;
    return true;
}

/* Something a streaming response can send now: text, logprobs, or an end. */
bool rig__call_has_output(const struct rig__call *call)
{
    if (call->out.len > 0 || call->state == RIG__CALL_FAILED) return true;
    for (int32_t i = 0; i < call->choice_count; i++) {
        const struct rig__choice *c = &call->choices[i];
        if (c->text.len > c->text_sent || (c->finished && !c->finish_sent)) return true;
    }
    return false;
}
