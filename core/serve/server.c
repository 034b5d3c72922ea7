/* server.c — the server's life cycle: start (tokenizer, HTTP, stages, the engine thread),
 * readiness, shutdown and destruction (see serve.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/serve/serve_impl.h"
#include "hal/startup.h"

void rig_serve_config_default(struct rig_serve_config *c)
{
    memset(c, 0, sizeof *c);
    rig_engine_config_default(&c->engine);
    c->host = "127.0.0.1";
    c->port = 1919;
    c->served_model_name = "default";
    c->max_request_bytes = 16 << 20;
    c->max_connections = 4096;
    c->connection_timeout_s = 60;
    c->http_threads = 2;
    c->tokenizer_workers = 1;
    c->n_max = RIG_SERVE_CHOICES_MAX;
    c->pace = RIG_DRIVER_PACE_FAST;
    c->log_level = 1;
}

static enum rig_status rig__check_config(const struct rig_serve_config *c, char *error,
                                         size_t error_len)
{
    const char *problem = NULL;
    if (c->tokenizer_dir == NULL) problem = "no tokenizer directory";
    else if (c->engine.max_requests < 1 || c->engine.max_requests >= RIG__SLOTS_MAX)
        problem = "max_requests must be in [1, 2^20)";
    else if (c->tokenizer_workers < 1 || c->tokenizer_workers > RIG_SERVE_TOKENIZER_WORKERS_MAX)
        problem = "tokenizer workers must be in [1, 8]";
    else if (c->http_threads < 1 || c->http_threads > 256) problem = "HTTP threads in [1, 256]";
    else if (c->n_max < 1 || c->n_max > RIG_SERVE_CHOICES_MAX) problem = "n_max in [1, 64]";
    else if (c->max_request_bytes < 1024) problem = "max_request_bytes must be >= 1024";
    else if (c->max_connections < 1 || c->connection_timeout_s < 1)
        problem = "max_connections and connection_timeout_s must be >= 1";
    else if (strpbrk(c->served_model_name, "\"\\\n") != NULL || c->served_model_name[0] == '\0')
        problem = "the served model name must be non-empty, without quotes, backslashes or "
                  "newlines";
    if (problem == NULL) return RIG_OK;
    snprintf(error, error_len, "%s", problem);
    return RIG_E_INVALID;
}

/* The engine thread: creates the engine (devices, weights, KV pool, graphs), marks the server
 * ready, then runs the driver loop until the inbox is closed. */
static void *rig__engine_main(void *arg)
{
    struct rig_serve *server = arg;
    struct rig_engine_observer observer = rig__observer(server);
    char error[256] = "";
    struct rig_engine *engine = NULL;
    enum rig_status st = rig_engine_create(&server->config.engine, &observer, &engine, error,
                                           sizeof error);
    pthread_mutex_lock(&server->state_lock);
    server->engine = engine;
    server->engine_up = st == RIG_OK;
    if (st == RIG_OK) {
        const struct rig_engine_config *c = rig_engine_get_config(engine);
        server->context_len = c->max_seq_len > 0 ? c->max_seq_len : c->model.max_position;
        server->kv_tokens = (int64_t)c->num_pages * c->page_size;
        atomic_store(&server->metrics.total_tokens, server->kv_tokens);
        atomic_store(&server->metrics.page_size, c->page_size);
        atomic_store(&server->metrics.pages[0], c->num_pages);
        atomic_store(&server->ready, true);
    }
    pthread_cond_broadcast(&server->state_cond);
    pthread_mutex_unlock(&server->state_lock);
    if (st == RIG_OK) {
        struct rig_arrival_source source = rig__arrivals(server);
        struct rig_driver_options options = {.inbox = server->inbox,
                                             .pace = server->config.pace};
        st = rig_driver_run(engine, &source, &options, error, sizeof error);
        rig__held_drop(server);
    }
    pthread_mutex_lock(&server->state_lock);
    server->engine_done = true;
    server->engine_status = st;
    snprintf(server->engine_error, sizeof server->engine_error, "%s", error);
    pthread_cond_broadcast(&server->state_cond);
    pthread_mutex_unlock(&server->state_lock);
    return NULL;
}

static enum rig_status rig__allocate(struct rig_serve *server)
{
    pthread_mutex_init(&server->slots_lock, NULL);
    pthread_mutex_init(&server->calls_lock, NULL);
    pthread_cond_init(&server->calls_gone, NULL);
    pthread_mutex_init(&server->tokenize_lock, NULL);
    pthread_cond_init(&server->tokenize_wake, NULL);
    pthread_mutex_init(&server->detok_lock, NULL);
    pthread_cond_init(&server->detok_wake, NULL);
    pthread_mutex_init(&server->state_lock, NULL);
    pthread_cond_init(&server->state_cond, NULL);
    int32_t n = server->config.engine.max_requests;
    server->slot_count = n;
    server->slots = calloc((size_t)n, sizeof *server->slots);
    server->detok_pending = calloc((size_t)(2 * n), sizeof(uint64_t));
    server->detok_working = calloc((size_t)(2 * n), sizeof(uint64_t));
    server->engine_dirty = calloc((size_t)n, sizeof(uint64_t));
    server->held_retry = calloc((size_t)n, sizeof *server->held_retry);
    if (server->slots == NULL || server->detok_pending == NULL ||
        server->detok_working == NULL || server->engine_dirty == NULL ||
        server->held_retry == NULL)
        return RIG_E_NO_MEMORY;
    for (int32_t i = 0; i < n; i++) server->slots[i].free_next = i + 1 < n ? i + 1 : -1;
    server->slot_free = 0;
    return RIG_OK;
}

/* Tokenizer, limits and the inbox, before any thread starts. */
static enum rig_status rig__prepare(struct rig_serve *server, char *error, size_t error_len)
{
    const struct rig_serve_config *c = &server->config;
    char message[512];
    if (rig_tokenizer_load(c->tokenizer_dir, &server->tokenizer, message, sizeof message) !=
        RIG_OK) {
        snprintf(error, error_len, "tokenizer: %s", message);
        return RIG_E_IO;
    }
    rig_startup_mark("tokenizer loaded");
    server->chat_template = rig_tokenizer_chat_template(server->tokenizer);
    if (server->chat_template == RIG_CHAT_TEMPLATE_NONE ||
        server->chat_template == RIG_CHAT_TEMPLATE_UNKNOWN)
        server->chat_template = RIG_CHAT_TEMPLATE_CHATML; /* the documented fallback */
    int32_t vocab = c->engine.model.vocab_size;
    server->limits = (struct rig_serve_parse_limits){.model_name = c->served_model_name,
                                                     .vocab_size = vocab, .n_max = c->n_max};
    /* Every slot may need one submit and one abort queued at once. */
    struct rig_inbox_limits limits = {.capacity = 2 * c->engine.max_requests + 64,
                                      .prompt_tokens_max = c->engine.model.max_position};
    enum rig_status st = rig_inbox_create(&limits, &server->inbox);
    if (st != RIG_OK) snprintf(error, error_len, "inbox: %s", rig_status_message(st));
    return st;
}

enum rig_status rig_serve_start(const struct rig_serve_config *config, struct rig_serve **out,
                                char *error, size_t error_len)
{
    enum rig_status st = rig__check_config(config, error, error_len);
    if (st != RIG_OK) return st;
    struct rig_serve *server = calloc(1, sizeof *server);
    if (server == NULL) return RIG_E_NO_MEMORY;
    server->config = *config;
    rig_serve_metrics_init(&server->metrics);
    st = rig__allocate(server);
    if (st == RIG_OK) st = rig__prepare(server, error, error_len);
    if (st == RIG_OK) st = rig__stages_start(server);
    if (st == RIG_OK) st = rig__http_start(server, error, error_len);
    if (st == RIG_OK && pthread_create(&server->engine_thread, NULL, rig__engine_main,
                                       server) != 0)
        st = RIG_E_NO_MEMORY;
    if (st == RIG_OK) server->engine_started = true;
    if (st != RIG_OK) {
        if (error[0] == '\0') snprintf(error, error_len, "%s", rig_status_message(st));
        rig_serve_shutdown(server);
        rig_serve_destroy(server);
        return st;
    }
    *out = server;
    return RIG_OK;
}

enum rig_status rig_serve_wait_ready(struct rig_serve *server, char *error, size_t error_len)
{
    pthread_mutex_lock(&server->state_lock);
    while (!server->engine_up && !server->engine_done)
        pthread_cond_wait(&server->state_cond, &server->state_lock);
    enum rig_status st = server->engine_up ? RIG_OK : server->engine_status;
    if (st != RIG_OK) snprintf(error, error_len, "%s", server->engine_error);
    pthread_mutex_unlock(&server->state_lock);
    return st;
}

int32_t rig_serve_context_len(const struct rig_serve *server)
{
    return server->context_len;
}

bool rig_serve_failed(struct rig_serve *server, char *error, size_t error_len)
{
    pthread_mutex_lock(&server->state_lock);
    bool failed = server->engine_done;
    if (failed) snprintf(error, error_len, "%s", server->engine_error);
    pthread_mutex_unlock(&server->state_lock);
    return failed;
}

/* Waits (bounded) until every call has ended: streams flushed, clients answered. */
static void rig__wait_calls(struct rig_serve *server, int32_t seconds)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += seconds;
    pthread_mutex_lock(&server->calls_lock);
    while (server->call_count > 0 &&
           pthread_cond_timedwait(&server->calls_gone, &server->calls_lock, &deadline) == 0) {
    }
    pthread_mutex_unlock(&server->calls_lock);
}

enum rig_status rig_serve_shutdown(struct rig_serve *server)
{
    atomic_store(&server->stopping, true);
    if (server->daemon != NULL) MHD_quiesce_daemon(server->daemon);
    if (server->inbox != NULL) rig_inbox_close(server->inbox); /* the driver aborts all */
    if (server->engine_started) pthread_join(server->engine_thread, NULL);
    server->engine_started = false;
    rig__stages_stop_tokenizers(server);
    rig__wait_calls(server, 5);
    rig__stages_stop(server);
    rig__http_stop(server);
    return server->engine_status;
}

void rig_serve_destroy(struct rig_serve *server)
{
    if (server == NULL) return;
    RIG_ASSERT(server->daemon == NULL && !server->engine_started);
    /* After shutdown every reference is dropped (the engine's at each end, the connection's at
     * its completion): a call still here would leak, with its slots' buffers. */
    RIG_ASSERT_MSG(server->call_count == 0, "a call outlived the server's shutdown");
    RIG_ASSERT_MSG(server->slots_in_use == 0, "a slot outlived the server's shutdown");
    if (server->engine != NULL) rig_engine_destroy(server->engine);
    if (server->inbox != NULL) rig_inbox_destroy(server->inbox);
    rig_tokenizer_free(server->tokenizer);
    free(server->slots);
    free(server->detok_pending);
    free(server->detok_working);
    free(server->engine_dirty);
    free(server->held_retry);
    free(server);
}
