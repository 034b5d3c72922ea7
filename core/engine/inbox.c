/* inbox.c — the thread-safe inbox (see inbox.h).
 *
 * Messages sit in a ring of `capacity` slots; prompts in a ring of tokens. Both are consumed
 * in the order they were filled (FIFO), so the token ring needs only a head, a tail and the
 * count in use: a prompt that does not fit before the end of the ring starts again at 0, and
 * the gap it leaves is given back together with it. The drain reads the oldest message
 * outside the lock (producers never write a slot or tokens that are in use) and pops it only
 * once the engine has taken it.
 */
#include "core/engine/inbox.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum rig__message_kind {
    RIG__MESSAGE_SUBMIT = 1,
    RIG__MESSAGE_ABORT = 2,
    RIG__MESSAGE_FLUSH = 3,
};

struct rig__message {
    enum rig__message_kind kind;
    struct rig_submit submit; /* SUBMIT: prompt points into the token ring; ABORT: uid */
    int64_t tokens_end;       /* SUBMIT: token ring position after the prompt */
    int64_t tokens_held;      /* SUBMIT: prompt + the gap before it, given back on pop */
};

struct rig_inbox {
    struct rig_inbox_limits limits;
    pthread_mutex_t lock;
    pthread_cond_t wake;           /* a message was queued or the inbox closed */
    struct rig__message *messages; /* (capacity) ring */
    int32_t head;                  /* oldest message */
    int32_t count;
    int32_t *tokens; /* (tokens_size) ring of prompt tokens */
    int64_t tokens_size;
    int64_t tokens_head; /* first token in use */
    int64_t tokens_tail; /* first token after the newest prompt */
    int64_t tokens_used; /* in use, gaps included */
    bool closed;
    bool flush_pending; /* driver thread only */
};

int64_t rig_inbox_clock_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

enum rig_status rig_inbox_create(const struct rig_inbox_limits *limits, struct rig_inbox **out)
{
    RIG_ASSERT(limits != NULL && out != NULL);
    *out = NULL;
    if (limits->capacity < 1 || limits->prompt_tokens_max < 1) return RIG_E_INVALID;
    struct rig_inbox *inbox = calloc(1, sizeof *inbox);
    if (inbox == NULL) return RIG_E_NO_MEMORY;
    inbox->limits = *limits;
    int64_t tokens = (int64_t)limits->capacity * limits->prompt_tokens_max;
    if (tokens > RIG_INBOX_TOKENS_MAX) tokens = RIG_INBOX_TOKENS_MAX;
    if (tokens < limits->prompt_tokens_max) tokens = limits->prompt_tokens_max;
    inbox->tokens_size = tokens;
    inbox->messages = calloc((size_t)limits->capacity, sizeof *inbox->messages);
    inbox->tokens = malloc((size_t)tokens * sizeof *inbox->tokens);
    bool locks = pthread_mutex_init(&inbox->lock, NULL) == 0;
    /* The wait's deadline is on CLOCK_MONOTONIC, so the condition variable's clock is too. */
    pthread_condattr_t attr;
    bool cond = locks && pthread_condattr_init(&attr) == 0;
    if (cond) {
        cond = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
               pthread_cond_init(&inbox->wake, &attr) == 0;
        pthread_condattr_destroy(&attr);
    }
    if (inbox->messages == NULL || inbox->tokens == NULL || !cond) {
        if (locks) pthread_mutex_destroy(&inbox->lock);
        free(inbox->messages);
        free(inbox->tokens);
        free(inbox);
        return RIG_E_NO_MEMORY;
    }
    *out = inbox;
    return RIG_OK;
}

void rig_inbox_destroy(struct rig_inbox *inbox)
{
    if (inbox == NULL) return;
    pthread_cond_destroy(&inbox->wake);
    pthread_mutex_destroy(&inbox->lock);
    free(inbox->messages);
    free(inbox->tokens);
    free(inbox);
}

/* Takes `len` tokens from the ring (lock held): their start, or -1 when they do not fit. */
static int64_t rig__tokens_take(struct rig_inbox *inbox, int64_t len, int64_t *held)
{
    if (inbox->tokens_used == 0) inbox->tokens_head = inbox->tokens_tail = 0;
    int64_t head = inbox->tokens_head, tail = inbox->tokens_tail, size = inbox->tokens_size;
    bool wrapped = tail < head || (tail == head && inbox->tokens_used > 0);
    int64_t start = -1, gap = 0;
    if (!wrapped && tail + len <= size) {
        start = tail;
    } else if (!wrapped && len <= head) {
        start = 0; /* the rest of the ring is a gap, given back with this prompt */
        gap = size - tail;
    } else if (wrapped && tail + len <= head) {
        start = tail;
    }
    if (start < 0) return -1;
    inbox->tokens_tail = start + len;
    inbox->tokens_used += gap + len;
    RIG_ASSERT(inbox->tokens_used <= size);
    *held = gap + len;
    return start;
}

/* Queues `m` (lock held); a SUBMIT's prompt is copied into the token ring. */
static enum rig_status rig__post_locked(struct rig_inbox *inbox, struct rig__message *m)
{
    if (inbox->closed) return RIG_E_STATE;
    if (inbox->count == inbox->limits.capacity) return RIG_E_CAPACITY;
    if (m->kind == RIG__MESSAGE_SUBMIT) {
        int64_t len = m->submit.prompt_len;
        int64_t start = rig__tokens_take(inbox, len, &m->tokens_held);
        if (start < 0) return RIG_E_CAPACITY;
        memcpy(inbox->tokens + start, m->submit.prompt, (size_t)len * sizeof(int32_t));
        m->submit.prompt = inbox->tokens + start;
        m->tokens_end = start + len;
    }
    int32_t slot = (inbox->head + inbox->count) % inbox->limits.capacity;
    inbox->messages[slot] = *m;
    inbox->count++;
    pthread_cond_signal(&inbox->wake);
    return RIG_OK;
}

static enum rig_status rig__post(struct rig_inbox *inbox, struct rig__message *m)
{
    pthread_mutex_lock(&inbox->lock);
    enum rig_status status = rig__post_locked(inbox, m);
    pthread_mutex_unlock(&inbox->lock);
    return status;
}

enum rig_status rig_inbox_submit(struct rig_inbox *inbox, const struct rig_submit *request)
{
    RIG_ASSERT(inbox != NULL && request != NULL);
    if (request->prompt == NULL || request->prompt_len <= 0 ||
        request->prompt_len > inbox->limits.prompt_tokens_max)
        return RIG_E_INVALID;
    struct rig__message m = {.kind = RIG__MESSAGE_SUBMIT, .submit = *request};
    return rig__post(inbox, &m);
}

enum rig_status rig_inbox_abort(struct rig_inbox *inbox, uint64_t uid)
{
    RIG_ASSERT(inbox != NULL);
    struct rig__message m = {.kind = RIG__MESSAGE_ABORT, .submit = {.uid = uid}};
    return rig__post(inbox, &m);
}

enum rig_status rig_inbox_flush_cache(struct rig_inbox *inbox)
{
    RIG_ASSERT(inbox != NULL);
    struct rig__message m = {.kind = RIG__MESSAGE_FLUSH};
    return rig__post(inbox, &m);
}

void rig_inbox_close(struct rig_inbox *inbox)
{
    RIG_ASSERT(inbox != NULL);
    pthread_mutex_lock(&inbox->lock);
    inbox->closed = true;
    pthread_cond_broadcast(&inbox->wake);
    pthread_mutex_unlock(&inbox->lock);
}

bool rig_inbox_is_closed(struct rig_inbox *inbox)
{
    RIG_ASSERT(inbox != NULL);
    pthread_mutex_lock(&inbox->lock);
    bool closed = inbox->closed;
    pthread_mutex_unlock(&inbox->lock);
    return closed;
}

/* Applies one message; false when the engine is full and the message must wait. */
static bool rig__apply(struct rig_inbox *inbox, struct rig_engine *engine,
                       const struct rig__message *m, bool closed)
{
    char reason[256] = "";
    switch (m->kind) {
    case RIG__MESSAGE_SUBMIT:
        if (closed) {
            rig_engine_end_unsubmitted(engine, &m->submit, RIG_END_ABORT, "shutting down");
            return true;
        }
        enum rig_status status = rig_engine_submit(engine, &m->submit, reason, sizeof reason);
        if (status == RIG_E_CAPACITY) return false;
        /* RIG_E_RANGE ended it through the observer already. */
        if (status != RIG_OK && status != RIG_E_RANGE)
            rig_engine_end_unsubmitted(engine, &m->submit, RIG_END_REJECTED, reason);
        return true;
    case RIG__MESSAGE_ABORT:
        rig_engine_abort(engine, m->submit.uid); /* RIG_E_NOT_FOUND: ended or unknown */
        return true;
    case RIG__MESSAGE_FLUSH: inbox->flush_pending = true; return true;
    }
    RIG_UNREACHABLE();
}

/* Removes the oldest message and gives back its tokens (lock held). */
static void rig__pop_locked(struct rig_inbox *inbox)
{
    const struct rig__message *m = &inbox->messages[inbox->head];
    if (m->kind == RIG__MESSAGE_SUBMIT) {
        inbox->tokens_used -= m->tokens_held;
        inbox->tokens_head = m->tokens_end;
        RIG_ASSERT(inbox->tokens_used >= 0);
    }
    inbox->head = (inbox->head + 1) % inbox->limits.capacity;
    inbox->count--;
}

enum rig_status rig_inbox_drain(struct rig_inbox *inbox, struct rig_engine *engine)
{
    RIG_ASSERT(inbox != NULL && engine != NULL);
    /* Bounded: what is queued now, and as much again that arrives meanwhile. */
    for (int32_t n = 0; n < 2 * inbox->limits.capacity; n++) {
        pthread_mutex_lock(&inbox->lock);
        bool empty = inbox->count == 0, closed = inbox->closed;
        struct rig__message m = empty ? (struct rig__message){0} : inbox->messages[inbox->head];
        pthread_mutex_unlock(&inbox->lock);
        if (empty || !rig__apply(inbox, engine, &m, closed)) break;
        pthread_mutex_lock(&inbox->lock);
        rig__pop_locked(inbox);
        pthread_mutex_unlock(&inbox->lock);
    }
    if (inbox->flush_pending && rig_engine_flush_cache(engine) == RIG_OK)
        inbox->flush_pending = false;
    return RIG_OK;
}

void rig_inbox_wait(struct rig_inbox *inbox, int64_t deadline_ns)
{
    RIG_ASSERT(inbox != NULL);
    struct timespec until = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
    pthread_mutex_lock(&inbox->lock);
    int rc = 0;
    while (inbox->count == 0 && !inbox->closed && rc != ETIMEDOUT) {
        if (deadline_ns >= 0)
            rc = pthread_cond_timedwait(&inbox->wake, &inbox->lock, &until);
        else
            pthread_cond_wait(&inbox->wake, &inbox->lock);
    }
    pthread_mutex_unlock(&inbox->lock);
}
