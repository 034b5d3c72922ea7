/* serve_client.c — the HTTP side of `rig bench serve` (serve.h): one thread, libcurl's multi
 * interface, every request a stream.
 *
 * The loop: send every request whose arrival offset has passed while a slot is free (a slot
 * is an easy handle plus its buffers; there are max_concurrency of them, or one per request),
 * let libcurl move bytes (curl_multi_perform), collect finished transfers, and sleep in
 * curl_multi_poll until a socket is ready, the next arrival is due or the progress tick
 * (100 ms) comes. Bytes reach rig__write as libcurl reads them; that is where each event is
 * timestamped (CLOCK_MONOTONIC, ns since the start) and parsed, so parsing never waits for
 * the end of a response.
 *
 * Why per-request state lives in slots and rows: a slot's buffers are reused by the requests
 * it carries one after the other, and a request's token times go straight into its rows of
 * run->results (reserved at max_tokens each), so the loop allocates nothing. A request's
 * failure is decided once — the first reason wins (ours from the data, else libcurl's, else
 * the HTTP status) — and its transfer is cut at once when the data is bad.
 *
 * Bounds: a request ends by its own timeout (CURLOPT_TIMEOUT_MS); the run by the whole-run
 * timeout, after which what is in flight is cut and what was never sent is marked so; an
 * event longer than the slot's buffer fails its request. So the loop always ends.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/harness/bench/serve.h"
#include "core/text/tokenizer.h"

#define RIG__TICK_MS 100
#define RIG__URL_MAX 1024

struct rig__client;

struct rig__slot {
    CURL *easy;
    struct rig__client *client;
    int32_t request; /* the request it carries; -1 when free */
    char *buffer;    /* (capacity) SSE event / body / error body */
    size_t capacity;
    size_t body_len; /* bytes held (body or error body) */
    struct rig_serve_sse sse;
    char *seen; /* (capacity) /generate streams: the reader's escaped text; else NULL */
    struct rig_serve_generate_reader reader;
    int32_t status;  /* HTTP status; 0 before the headers */
    int32_t failure; /* enum rig_serve_failure decided here; 0 none yet */
    char error[RIG_SERVE_ERROR_MAX];
    int32_t filled;        /* token rows written */
    int64_t last_token_ns; /* time of the last event with output */
    int64_t last_event_ns; /* time of the last event of any kind */
    int64_t server_seen;   /* the server's count at the last event with output */
    int32_t finish_reason;
};

struct rig__client {
    const struct rig_serve_options *options;
    enum rig_serve_api api;
    const struct rig_serve_dataset *dataset;
    struct rig_serve_run *run;
    CURLM *multi;
    struct curl_slist *headers;
    char url[RIG__URL_MAX];
    struct rig__slot *slots; /* (slot_count) */
    int32_t slot_count;
    int32_t *free_slots; /* (free_count) stack of free slot indices */
    int32_t free_count;
    int64_t start_ns;
    int32_t next, done, failed;
    int64_t tokens; /* output rows written, for the progress line */
};

static int64_t rig__now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void rig__fail(struct rig__slot *s, int32_t failure, const char *fmt, const char *detail)
{
    if (s->failure != RIG_SERVE_OK) return; /* the first reason wins */
    s->failure = failure;
    snprintf(s->error, sizeof s->error, fmt, detail);
}

/* Writes k token rows for an event at `now`: the first event's all at now, later ones spread
 * evenly over the gap since the previous output (bench_serving's adjusted ITL). */
static void rig__tokens(struct rig__slot *s, int64_t k, int64_t now)
{
    struct rig_results *r = &s->client->run->results;
    struct rig_results_request *q = &r->requests[s->request];
    int32_t rows = s->client->dataset->prompts[s->request].output_len;
    if (s->filled == 0) q->first_token_ns = now;
    int64_t previous = s->filled == 0 ? now : s->last_token_ns;
    for (int64_t m = 1; m <= k && s->filled < rows; m++)
        r->token_time_ns[q->token_offset + s->filled++] = previous + (now - previous) * m / k;
    s->last_token_ns = now;
    s->client->tokens += k;
}

static void rig__text(struct rig__slot *s, const struct rig_serve_chunk *c)
{
    struct rig_serve_outcome *o = &s->client->run->outcomes[s->request];
    char *text = s->client->run->text + o->text_offset;
    if (c->text_cumulative) o->text_len = 0;
    size_t room = (size_t)(o->text_capacity - o->text_len), len = c->text_len;
    if (len > room) {
        len = room;
        o->text_truncated = true;
    }
    memcpy(text + o->text_len, c->text, len);
    o->text_len += (int64_t)len;
}

/* One event's data (or a whole body) at time `now`. */
static void rig__chunk(struct rig__slot *s, const char *data, size_t len, int64_t now)
{
    struct rig_serve_chunk c;
    bool generate_stream = s->seen != NULL && s->client->options->stream;
    if (generate_stream)
        rig_serve_generate_parse(&s->reader, data, len, &c);
    else
        rig_serve_chunk_parse(s->client->api, data, len, &c);
    s->client->run->event_bytes += (int64_t)len;
    s->client->run->parsed_bytes += (int64_t)c.parsed_bytes;
    s->last_event_ns = now;
    if (c.error[0] != '\0') {
        bool server = strncmp(c.error, "server error", 12) == 0;
        rig__fail(s, server ? RIG_SERVE_FAIL_SERVER : RIG_SERVE_FAIL_MALFORMED, "%s", c.error);
    } else if (!c.done) {
        struct rig_serve_outcome *o = &s->client->run->outcomes[s->request];
        struct rig_results_request *q = &s->client->run->results.requests[s->request];
        /* Output: new text; on /generate, text so far (bench_serving's test), so an event
         * whose text the reader found unchanged still counts, as it did read whole. */
        bool held = generate_stream && !c.text_cumulative && c.text != NULL && o->text_len > 0;
        if (c.text != NULL && (c.text_len > 0 || held)) {
            int64_t k = c.completion_tokens >= 0 ? c.completion_tokens - s->server_seen : 1;
            if (c.completion_tokens >= 0) s->server_seen = c.completion_tokens;
            if (k > 0) rig__tokens(s, k, now);
            rig__text(s, &c);
            o->chunks++;
        }
        if (c.completion_tokens >= 0) o->server_tokens = (int32_t)c.completion_tokens;
        if (c.cached_tokens >= 0) q->cached_len = (int32_t)c.cached_tokens;
        if (c.finish_reason != RIG_FINISH_NONE) s->finish_reason = c.finish_reason;
    }
    rig_serve_chunk_release(&c);
}

static void rig__event(void *user, const char *data, size_t len)
{
    struct rig__slot *s = user;
    if (s->failure == RIG_SERVE_OK) rig__chunk(s, data, len, rig__now_ns() - s->client->start_ns);
}

/* Keeps a body (non-streamed, or an error's) in the slot's buffer. */
static bool rig__keep(struct rig__slot *s, const char *bytes, size_t len)
{
    if (s->body_len + len + 1 > s->capacity) return false;
    memcpy(s->buffer + s->body_len, bytes, len);
    s->body_len += len;
    s->buffer[s->body_len] = '\0';
    return true;
}

static size_t rig__write(char *bytes, size_t size, size_t count, void *user)
{
    struct rig__slot *s = user;
    size_t len = size * count;
    if (s->status == 0) {
        long code = 0;
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code);
        s->status = (int32_t)code;
    }
    if (s->status != 200) {
        rig__keep(s, bytes, len < s->capacity ? len : 0); /* an error body: what fits */
        return len;
    }
    if (!s->client->options->stream) {
        if (rig__keep(s, bytes, len)) return len;
        rig__fail(s, RIG_SERVE_FAIL_MALFORMED, "response longer than %s bytes", "the buffer");
        return 0;
    }
    if (rig_serve_sse_feed(&s->sse, bytes, len, rig__event, s) < 0)
        rig__fail(s, RIG_SERVE_FAIL_MALFORMED, "an event longer than %s bytes", "the buffer");
    return s->failure == RIG_SERVE_OK ? len : 0; /* 0 cuts the transfer */
}

/* The reason of a non-200 response: its OpenAI / FastAPI error message or its first bytes. */
static void rig__http_reason(struct rig__slot *s)
{
    char detail[RIG_SERVE_ERROR_MAX - 16] = "";
    json_t *root = json_loads(s->buffer, 0, NULL);
    json_t *e = json_object_get(root, "error");
    const char *m = json_string_value(json_is_object(e) ? json_object_get(e, "message") : e);
    if (m == NULL) m = json_string_value(json_object_get(root, "message"));
    if (m == NULL) m = json_string_value(json_object_get(root, "detail"));
    snprintf(detail, sizeof detail, "%d %s", s->status,
             m != NULL ? m : (s->body_len > 0 ? s->buffer : "(no body)"));
    json_decref(root);
    rig__fail(s, RIG_SERVE_FAIL_HTTP, "HTTP %s", detail);
}

static void rig__curl_reason(struct rig__slot *s, CURLcode code)
{
    int32_t failure = RIG_SERVE_FAIL_RESET;
    if (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
        code == CURLE_COULDNT_RESOLVE_PROXY)
        failure = RIG_SERVE_FAIL_CONNECT;
    else if (code == CURLE_OPERATION_TIMEDOUT)
        failure = RIG_SERVE_FAIL_TIMEOUT;
    rig__fail(s, failure, "%s", curl_easy_strerror(code));
}

/* A transfer ended with `code` at `now`: decide the request's fate and free the slot. */
static void rig__complete(struct rig__client *c, struct rig__slot *s, CURLcode code, int64_t now)
{
    struct rig_serve_outcome *o = &c->run->outcomes[s->request];
    struct rig_results_request *q = &c->run->results.requests[s->request];
    bool open = s->failure == RIG_SERVE_OK; /* not yet decided from the data or a stop */
    if (open && code != CURLE_OK)
        rig__curl_reason(s, code);
    else if (open && s->status != 200)
        rig__http_reason(s);
    else if (open && !c->options->stream)
        rig__chunk(s, s->buffer, s->body_len, now);
    else if (open)
        rig_serve_sse_finish(&s->sse, rig__event, s);
    if (s->failure == RIG_SERVE_OK && s->filled == 0)
        rig__fail(s, RIG_SERVE_FAIL_EMPTY, "the response carried no output%s", "");
    o->http_status = s->status;
    o->failure = s->failure;
    memcpy(o->error, s->error, sizeof o->error);
    o->received = s->filled;
    q->output_len = s->failure == RIG_SERVE_OK ? s->filled : 0;
    q->finish_reason = s->finish_reason;
    q->finish_ns = s->failure == RIG_SERVE_OK && c->options->stream ? s->last_event_ns : now;
    if (s->failure != RIG_SERVE_OK) {
        q->finish_reason = s->failure == RIG_SERVE_FAIL_HTTP && s->status >= 400
                               ? RIG_FINISH_REJECTED
                               : RIG_FINISH_ABORT;
        c->failed++;
    }
    curl_multi_remove_handle(c->multi, s->easy);
    s->request = -1;
    c->free_slots[c->free_count++] = (int32_t)(s - c->slots);
    c->done++;
}

static void rig__launch(struct rig__client *c, int32_t request, int64_t now)
{
    RIG_ASSERT(c->free_count > 0);
    struct rig__slot *s = &c->slots[c->free_slots[--c->free_count]];
    const struct rig_serve_prompt *p = &c->dataset->prompts[request];
    RIG_ASSERT(p->body_offset >= 0);
    s->request = request;
    s->body_len = 0;
    s->status = 0;
    s->failure = RIG_SERVE_OK;
    s->error[0] = '\0';
    s->filled = 0;
    s->last_token_ns = s->last_event_ns = now;
    s->server_seen = 0;
    s->finish_reason = RIG_FINISH_NONE;
    rig_serve_sse_init(&s->sse, s->buffer, s->capacity);
    rig_serve_generate_reader_init(&s->reader, s->seen, s->seen != NULL ? s->capacity : 0);
    c->run->results.requests[request].arrival_ns = now;
    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, c->dataset->bodies + p->body_offset);
    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE, (long)p->body_len);
    curl_multi_add_handle(c->multi, s->easy);
}

/* Cuts everything in flight and marks what was never sent (whole-run timeout). */
static void rig__stop(struct rig__client *c, int64_t now)
{
    for (int32_t i = 0; i < c->slot_count; i++) {
        struct rig__slot *s = &c->slots[i];
        if (s->request < 0) continue;
        rig__fail(s, RIG_SERVE_FAIL_TIMEOUT, "%s", "the whole-run timeout fired");
        rig__complete(c, s, CURLE_OK, now);
    }
    for (; c->next < c->dataset->count; c->next++) {
        struct rig_serve_outcome *o = &c->run->outcomes[c->next];
        o->failure = RIG_SERVE_FAIL_NOT_SENT;
        snprintf(o->error, sizeof o->error, "never sent: the whole-run timeout fired");
        c->run->results.requests[c->next].finish_reason = RIG_FINISH_ABORT;
        c->done++;
        c->failed++;
    }
    c->run->stopped = true;
}

static void rig__collect(struct rig__client *c, int64_t now)
{
    int left = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(c->multi, &left)) != NULL) {
        if (message->msg != CURLMSG_DONE) continue;
        struct rig__slot *s = NULL;
        curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&s);
        RIG_ASSERT(s != NULL && s->request >= 0);
        rig__complete(c, s, message->data.result, now);
    }
}

static void rig__loop(struct rig__client *c)
{
    const struct rig_serve_options *o = c->options;
    int32_t n = c->dataset->count;
    int64_t timeout_ns = o->timeout_s > 0.0 ? (int64_t)(o->timeout_s * 1e9) : INT64_MAX;
    int64_t tick_ns = 0;
    c->start_ns = rig__now_ns();
    while (c->done < n) {
        int64_t now = rig__now_ns() - c->start_ns;
        if (now >= timeout_ns) {
            rig__stop(c, now);
            break;
        }
        while (c->next < n && c->free_count > 0 && c->dataset->prompts[c->next].arrival_ns <= now)
            rig__launch(c, c->next++, now);
        int running = 0;
        curl_multi_perform(c->multi, &running);
        rig__collect(c, rig__now_ns() - c->start_ns);
        if (o->progress != NULL && now >= tick_ns) {
            double seconds = now > 0 ? (double)now * 1e-9 : 1e-9;
            o->progress(o->user, c->done, n, c->failed, (double)c->tokens / seconds);
            tick_ns = now + RIG__TICK_MS * 1000000;
        }
        int64_t wait_ns = RIG__TICK_MS * 1000000;
        if (c->next < n && c->free_count > 0) {
            int64_t due = c->dataset->prompts[c->next].arrival_ns - now;
            if (due < wait_ns) wait_ns = due;
        }
        if (timeout_ns - now < wait_ns) wait_ns = timeout_ns - now;
        if (c->done < n && wait_ns > 0)
            curl_multi_poll(c->multi, NULL, 0, (int)((wait_ns + 999999) / 1000000), NULL);
    }
    c->run->duration_ns = rig__now_ns() - c->start_ns;
}

/* Records, texts and outcomes for every prompt: all allocated here, before the clock. */
static enum rig_status rig__run_init(const struct rig_serve_dataset *d, struct rig_serve_run *run)
{
    memset(run, 0, sizeof *run);
    int64_t tokens = 0, text = 0;
    for (int32_t i = 0; i < d->count; i++) {
        tokens += d->prompts[i].output_len;
        text += 16 * (int64_t)d->prompts[i].output_len + 256;
    }
    enum rig_status status = rig_results_init(&run->results, d->count, tokens, 0, 0);
    run->outcomes = calloc((size_t)d->count + 1, sizeof *run->outcomes);
    run->text = malloc((size_t)text + 1);
    run->text_capacity = text;
    if (status < 0 || run->outcomes == NULL || run->text == NULL) {
        rig_serve_run_free(run);
        return RIG_E_NO_MEMORY;
    }
    int64_t offset = 0;
    for (int32_t i = 0; i < d->count; i++) {
        const struct rig_serve_prompt *p = &d->prompts[i];
        struct rig_results_request *q = &run->results.requests[i];
        snprintf(q->id, sizeof q->id, "%s", p->id);
        q->input_len = p->input_len;
        q->token_offset = rig_results_reserve_tokens(&run->results, p->output_len);
        RIG_ASSERT(q->token_offset >= 0);
        struct rig_serve_outcome *o = &run->outcomes[i];
        o->server_tokens = o->retokenized = -1;
        o->text_offset = offset;
        o->text_capacity = 16 * (int64_t)p->output_len + 256;
        offset += o->text_capacity;
    }
    return RIG_OK;
}

void rig_serve_run_free(struct rig_serve_run *run)
{
    if (run == NULL) return;
    rig_results_free(&run->results);
    free(run->outcomes);
    free(run->text);
    memset(run, 0, sizeof *run);
}

static void rig__client_free(struct rig__client *c)
{
    for (int32_t i = 0; c->slots != NULL && i < c->slot_count; i++) {
        if (c->slots[i].easy != NULL) {
            if (c->slots[i].request >= 0) curl_multi_remove_handle(c->multi, c->slots[i].easy);
            curl_easy_cleanup(c->slots[i].easy);
        }
        free(c->slots[i].buffer);
        free(c->slots[i].seen);
    }
    free(c->slots);
    free(c->free_slots);
    if (c->multi != NULL) curl_multi_cleanup(c->multi);
    curl_slist_free_all(c->headers);
}

static bool rig__slot_init(struct rig__client *c, struct rig__slot *s, size_t capacity)
{
    s->client = c;
    s->request = -1;
    s->buffer = malloc(capacity);
    s->capacity = capacity;
    bool reader = c->api == RIG_SERVE_API_GENERATE && c->options->stream;
    s->seen = reader ? malloc(capacity) : NULL;
    s->easy = curl_easy_init();
    if (s->buffer == NULL || s->easy == NULL || (reader && s->seen == NULL)) return false;
    long timeout_ms = (long)(c->options->request_timeout_s * 1000.0);
    curl_easy_setopt(s->easy, CURLOPT_URL, c->url);
    curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, rig__write);
    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
    curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->easy, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(s->easy, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 1L);
    curl_easy_setopt(s->easy, CURLOPT_POST, 1L);
    return true;
}

/* The headers every request carries: JSON, no "Expect: 100-continue" wait on large bodies,
 * and the OPENAI_API_KEY bearer token when set (as bench_serving does). */
static struct curl_slist *rig__headers(void)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (h != NULL) h = curl_slist_append(h, "Expect:");
    const char *key = getenv("OPENAI_API_KEY");
    if (h != NULL && key != NULL && key[0] != '\0') {
        char line[512];
        snprintf(line, sizeof line, "Authorization: Bearer %s", key);
        h = curl_slist_append(h, line);
    }
    return h;
}

static enum rig_status rig__client_init(struct rig__client *c, size_t line_capacity)
{
    const struct rig_serve_options *o = c->options;
    int32_t n = c->dataset->count;
    c->slot_count = o->max_concurrency > 0 && o->max_concurrency < n ? o->max_concurrency : n;
    size_t base = strlen(o->base_url);
    while (base > 0 && o->base_url[base - 1] == '/')
        base--;
    snprintf(c->url, sizeof c->url, "%.*s%s", (int)base, o->base_url, rig_serve_api_path(c->api));
    c->multi = curl_multi_init();
    c->headers = rig__headers();
    c->slots = calloc((size_t)c->slot_count, sizeof *c->slots);
    c->free_slots = calloc((size_t)c->slot_count, sizeof *c->free_slots);
    if (c->multi == NULL || c->headers == NULL || c->slots == NULL || c->free_slots == NULL)
        return RIG_E_NO_MEMORY;
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)c->slot_count);
    for (int32_t i = 0; i < c->slot_count; i++) {
        if (!rig__slot_init(c, &c->slots[i], line_capacity)) return RIG_E_NO_MEMORY;
        c->free_slots[c->free_count++] = c->slot_count - 1 - i;
    }
    return RIG_OK;
}

/* After the clock: the output count of each success (the server's, else the tokenizer's,
 * else one per event), its token rows made to match it, and the finish reason. */
static void rig__finalize(const struct rig_serve_dataset *d, const struct rig_tokenizer *t,
                          struct rig_serve_run *run)
{
    struct rig_tokenizer_ids ids = {0};
    for (int32_t i = 0; i < d->count; i++) {
        struct rig_serve_outcome *o = &run->outcomes[i];
        struct rig_results_request *q = &run->results.requests[i];
        if (o->failure != RIG_SERVE_OK) continue;
        ids.count = 0;
        if (t != NULL && rig_tokenizer_encode(t, NULL, run->text + o->text_offset,
                                              (size_t)o->text_len, false, &ids, NULL, 0) == RIG_OK)
            o->retokenized = (int32_t)ids.count;
        int64_t target = o->server_tokens >= 0 ? o->server_tokens
                         : o->retokenized >= 0 ? o->retokenized
                                               : q->output_len;
        int32_t rows = d->prompts[i].output_len;
        if (target > rows) target = rows;
        if (target < 1) target = 1;
        int64_t *times = run->results.token_time_ns + q->token_offset;
        for (int32_t k = q->output_len; k < target; k++)
            times[k] = times[q->output_len - 1];
        q->output_len = (int32_t)target;
        o->received = (int32_t)target;
        if (q->finish_reason == RIG_FINISH_NONE)
            q->finish_reason = target >= rows ? RIG_FINISH_LENGTH : RIG_FINISH_STOP;
    }
    rig_tokenizer_ids_free(&ids);
}

enum rig_status rig_serve_run(const struct rig_serve_options *options, enum rig_serve_api api,
                              const struct rig_serve_dataset *dataset,
                              const struct rig_tokenizer *tokenizer, struct rig_serve_run *run,
                              char *error, size_t error_len)
{
    RIG_ASSERT(dataset->count > 0 && dataset->bodies != NULL);
    if (rig__run_init(dataset, run) < 0) {
        snprintf(error, error_len, "out of memory for %d requests", dataset->count);
        return RIG_E_NO_MEMORY;
    }
    int64_t text_max = 0;
    for (int32_t i = 0; i < dataset->count; i++)
        if (run->outcomes[i].text_capacity > text_max) text_max = run->outcomes[i].text_capacity;
    int64_t line = 65536 + 6 * text_max;
    if (line > (int64_t)RIG_SERVE_LINE_MAX) line = RIG_SERVE_LINE_MAX;
    struct rig__client c = {.options = options, .api = api, .dataset = dataset, .run = run};
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(error, error_len, "libcurl could not start");
        rig_serve_run_free(run);
        return RIG_E_IO;
    }
    enum rig_status status = rig__client_init(&c, (size_t)line);
    if (status == RIG_OK) rig__loop(&c);
    rig__client_free(&c);
    curl_global_cleanup();
    if (status < 0) {
        snprintf(error, error_len, "out of memory for %d streams", c.slot_count);
        rig_serve_run_free(run);
        return status;
    }
    rig__finalize(dataset, tokenizer, run);
    return RIG_OK;
}

struct rig__body {
    char data[1 << 20];
    size_t len;
};

static size_t rig__collect_body(char *bytes, size_t size, size_t count, void *user)
{
    struct rig__body *b = user;
    size_t len = size * count;
    if (b->len + len + 1 > sizeof b->data) return 0;
    memcpy(b->data + b->len, bytes, len);
    b->len += len;
    b->data[b->len] = '\0';
    return len;
}

enum rig_status rig_serve_model_query(const char *base_url, char *model, size_t model_len,
                                      char *error, size_t error_len)
{
    static struct rig__body body; /* 1 MiB: off the stack; one caller at a time */
    body.len = 0;
    body.data[0] = '\0';
    char url[RIG__URL_MAX];
    snprintf(url, sizeof url, "%s/v1/models", base_url);
    CURL *easy = curl_easy_init();
    if (easy == NULL) {
        snprintf(error, error_len, "libcurl could not start");
        return RIG_E_IO;
    }
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, rig__collect_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 30000L);
    CURLcode code = curl_easy_perform(easy);
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(easy);
    json_t *root = code == CURLE_OK && status == 200 ? json_loads(body.data, 0, NULL) : NULL;
    const char *id =
        json_string_value(json_object_get(json_array_get(json_object_get(root, "data"), 0), "id"));
    if (id != NULL) snprintf(model, model_len, "%s", id);
    json_decref(root);
    if (id != NULL) return RIG_OK;
    snprintf(error, error_len, "GET %s: %s", url,
             code != CURLE_OK ? curl_easy_strerror(code)
             : status != 200  ? "HTTP status not 200"
                              : "no data[0].id in the answer");
    return code != CURLE_OK || status != 200 ? RIG_E_IO : RIG_E_PARSE;
}
