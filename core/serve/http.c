/* http.c — the HTTP front end on libmicrohttpd: routes, API key, body limits, and the glue
 * between connections and calls (suspend while a stage works, resume when it is done).
 *
 * libmicrohttpd runs an internal thread pool over epoll with suspend/resume: a connection
 * waiting for the engine is suspended (no thread, no polling) and resumed by the stage that
 * has something for it; a streaming response is a content-reader callback that formats SSE
 * events from the call, or suspends when there is nothing yet. Idle connections (a slow or
 * stalled client, slowloris) time out after connection_timeout_s; a client that goes away is
 * noticed at the next write and libmicrohttpd's completion callback aborts its requests.
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/serve/serve_impl.h"

enum rig__route {
    RIG__ROUTE_NONE = 0,
    RIG__ROUTE_CHAT,
    RIG__ROUTE_COMPLETIONS,
    RIG__ROUTE_GENERATE,
    RIG__ROUTE_FLUSH,
    RIG__ROUTE_ABORT,
    RIG__ROUTE_MODELS,
    RIG__ROUTE_HEALTH,
    RIG__ROUTE_METRICS,
};

struct rig__route_entry {
    const char *path;
    const char *method;
    enum rig__route route;
};

static const struct rig__route_entry rig__routes[] = {
    {"/v1/chat/completions", "POST", RIG__ROUTE_CHAT},
    {"/v1/completions", "POST", RIG__ROUTE_COMPLETIONS},
    {"/generate", "POST", RIG__ROUTE_GENERATE},
    {"/flush_cache", "POST", RIG__ROUTE_FLUSH},
    {"/abort_request", "POST", RIG__ROUTE_ABORT},
    {"/v1/models", "GET", RIG__ROUTE_MODELS},
    {"/health", "GET", RIG__ROUTE_HEALTH},
    {"/metrics", "GET", RIG__ROUTE_METRICS},
};

/* ---- plain responses ---------------------------------------------------------------------- */

static enum MHD_Result rig__send(struct rig_serve *server, struct MHD_Connection *connection,
                                 unsigned int status, const char *type,
                                 const struct rig_serve_buffer *body)
{
    struct MHD_Response *response = MHD_create_response_from_buffer(
        body->len, body->data != NULL ? body->data : (void *)"", MHD_RESPMEM_MUST_COPY);
    if (response == NULL) return MHD_NO;
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(response, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, POST");
    if (status >= 400) atomic_fetch_add(&server->metrics.http_errors, 1);
    enum MHD_Result result = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return result;
}

static enum MHD_Result rig__send_error(struct rig_serve *server,
                                       struct MHD_Connection *connection,
                                       const struct rig_serve_error *error)
{
    struct rig_serve_buffer body = {0};
    enum MHD_Result result = MHD_NO;
    if (rig__response_error(error, &body) == RIG_OK)
        result = rig__send(server, connection, (unsigned int)error->http_status,
                           "application/json", &body);
    rig_serve_buffer_free(&body);
    return result;
}

static enum MHD_Result rig__fail(struct rig_serve *server, struct MHD_Connection *connection,
                                 int32_t status, const char *type, const char *code,
                                 const char *format, const char *detail)
{
    struct rig_serve_error error;
    rig_serve_error_set(&error, status, type, code, NULL, format, detail);
    return rig__send_error(server, connection, &error);
}

static enum MHD_Result rig__send_text(struct rig_serve *server,
                                      struct MHD_Connection *connection, unsigned int status,
                                      const char *type, const char *text)
{
    struct rig_serve_buffer body = {.data = (char *)text, .len = strlen(text)};
    return rig__send(server, connection, status, type, &body);
}

/* ---- GET routes --------------------------------------------------------------------------- */

static enum MHD_Result rig__models(struct rig_serve *server, struct MHD_Connection *connection)
{
    json_t *model = json_pack("{s:s, s:s, s:I, s:s, s:s, s:i}", "id",
                              server->config.served_model_name, "object", "model", "created",
                              (json_int_t)0, "owned_by", "rig", "root",
                              server->config.served_model_name, "max_model_len",
                              server->context_len);
    /* "o" steals `model`; the list is ours to release once dumped. */
    json_t *list = json_pack("{s:s, s:[o]}", "object", "list", "data", model);
    char *text = list != NULL ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    enum MHD_Result result = text != NULL ? rig__send_text(server, connection, 200,
                                                           "application/json", text)
                                          : MHD_NO;
    free(text);
    return result;
}

static enum MHD_Result rig__metrics(struct rig_serve *server, struct MHD_Connection *connection)
{
    struct rig_serve_buffer body = {0};
    enum MHD_Result result = MHD_NO;
    if (rig_serve_metrics_render(&server->metrics, server->config.served_model_name, &body) ==
        RIG_OK)
        result = rig__send(server, connection, 200, "text/plain; version=0.0.4; charset=utf-8",
                           &body);
    rig_serve_buffer_free(&body);
    return result;
}

/* ---- POST routes without the engine's answer --------------------------------------------- */

/* /abort_request {"rid": "..."} or {"abort_all": true}: aborts matching calls. */
static enum MHD_Result rig__abort_request(struct rig_serve *server, struct rig__call *call,
                                          struct MHD_Connection *connection)
{
    json_t *body = json_loadb(call->body.data, call->body.len, 0, NULL);
    const char *rid = json_string_value(json_object_get(body, "rid"));
    bool all = json_is_true(json_object_get(body, "abort_all"));
    enum MHD_Result result;
    if (!json_is_object(body) || (rid == NULL && !all)) {
        result = rig__fail(server, connection, 400, "invalid_request_error", NULL,
                           "%s", "give {\"rid\": \"<request id>\"} or {\"abort_all\": true}");
        json_decref(body);
        return result;
    }
    int32_t matched = 0;
    pthread_mutex_lock(&server->calls_lock);
    for (struct rig__call *c = server->calls; c != NULL; c = c->next) {
        if (c == call || (!all && strcmp(c->id, rid) != 0)) continue;
        pthread_mutex_lock(&c->lock); /* lock order: calls_lock is only ever taken first here */
        rig__call_abort(c);
        pthread_mutex_unlock(&c->lock);
        matched++;
    }
    pthread_mutex_unlock(&server->calls_lock);
    json_decref(body);
    char text[64];
    snprintf(text, sizeof text, "{\"aborted\":%d}", matched);
    return rig__send_text(server, connection, 200, "application/json", text);
}

/* ---- the generation routes ---------------------------------------------------------------- */

static ssize_t rig__reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct rig__call *call = cls;
    pthread_mutex_lock(&call->lock);
    if (call->out.len == 0 && !call->stream_over &&
        rig__response_stream(call) != RIG_OK) {
        pthread_mutex_unlock(&call->lock);
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    ssize_t result;
    if (call->out.len > 0) {
        size_t n = call->out.len < max ? call->out.len : max;
        memcpy(buf, call->out.data, n);
        rig_serve_buffer_consume(&call->out, n);
        result = (ssize_t)n;
    } else if (call->stream_over) {
        result = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        call->suspended = true;
        MHD_suspend_connection(call->connection);
        result = 0;
    }
    pthread_mutex_unlock(&call->lock);
    return result;
}

static enum MHD_Result rig__start_stream(struct rig_serve *server, struct rig__call *call)
{
    struct MHD_Response *response =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, rig__reader, call, NULL);
    if (response == NULL) return MHD_NO;
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    (void)server;
    enum MHD_Result result = MHD_queue_response(call->connection, MHD_HTTP_OK, response);
    MHD_destroy_response(response);
    return result;
}

/* The engine refused every choice (it can never fit): the first one's reason, as a 400. */
static bool rig__all_rejected(struct rig__call *call, struct rig_serve_error *error)
{
    for (int32_t i = 0; i < call->choice_count; i++)
        if (!call->choices[i].rejected) return false;
    const struct rig__slot *slot = &call->server->slots[call->choices[0].slot];
    rig_serve_error_set(error, 400, "invalid_request_error", "context_length_exceeded", NULL,
                        "%s", slot->message);
    return call->choice_count > 0;
}

/* A resumed call (call->lock held): answer it, or suspend again when nothing is ready. */
static enum MHD_Result rig__resume(struct rig_serve *server, struct rig__call *call)
{
    struct rig_serve_error error;
    if (call->state == RIG__CALL_FAILED) {
        call->responded = true;
        return rig__send_error(server, call->connection, &call->error);
    }
    bool ready = call->state == RIG__CALL_RUNNING &&
                 (call->params.stream ? rig__call_has_output(call)
                                      : rig__call_all_finished(call));
    if (!ready) {
        call->suspended = true;
        MHD_suspend_connection(call->connection);
        return MHD_YES;
    }
    call->responded = true;
    if (rig__call_all_finished(call) && rig__all_rejected(call, &error))
        return rig__send_error(server, call->connection, &error);
    if (call->params.stream) return rig__start_stream(server, call);
    struct rig_serve_buffer body = {0};
    enum MHD_Result result = MHD_NO;
    if (rig__response_full(call, &body) == RIG_OK)
        result = rig__send(server, call->connection, 200, "application/json", &body);
    rig_serve_buffer_free(&body);
    return result;
}

/* The body is complete: parse it and hand the call to the tokenizer stage. */
static enum MHD_Result rig__begin(struct rig_serve *server, struct rig__call *call,
                                  enum rig__route route)
{
    static const enum rig_serve_api apis[] = {
        [RIG__ROUTE_CHAT] = RIG_SERVE_API_CHAT,
        [RIG__ROUTE_COMPLETIONS] = RIG_SERVE_API_COMPLETION,
        [RIG__ROUTE_GENERATE] = RIG_SERVE_API_GENERATE,
    };
    struct rig_serve_error error;
    const char *body = call->body.data != NULL ? call->body.data : "";
    if (rig_serve_params_parse(apis[route], body, call->body.len, &server->limits,
                               &call->params, &error) != RIG_OK) {
        call->responded = true;
        return rig__send_error(server, call->connection, &error);
    }
    pthread_mutex_lock(&call->lock);
    call->state = RIG__CALL_TOKENIZING;
    enum MHD_Result result = MHD_YES;
    if (rig__tokenize_post(server, call)) {
        call->suspended = true;
        MHD_suspend_connection(call->connection);
    } else {
        call->responded = true;
        rig_serve_error_set(&error, 503, "server_error", "server_busy", NULL,
                            "The server is busy (the tokenizer queue is full); retry later");
        result = rig__send_error(server, call->connection, &error);
    }
    pthread_mutex_unlock(&call->lock);
    return result;
}

/* ---- the access handler ----------------------------------------------------------------- */

/* Bearer token check in constant time (independent of where the strings differ). */
static bool rig__authorized(const struct rig_serve *server, struct MHD_Connection *connection)
{
    const char *key = server->config.api_key;
    if (key == NULL) return true;
    const char *header = MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_AUTHORIZATION);
    const char *given = header != NULL && strncmp(header, "Bearer ", 7) == 0 ? header + 7 : "";
    size_t key_len = strlen(key), given_len = strlen(given);
    unsigned char diff = (unsigned char)(key_len != given_len);
    for (size_t i = 0; i < key_len; i++)
        diff |= (unsigned char)(key[i] ^ given[i < given_len ? i : 0]);
    return diff == 0 && header != NULL;
}

static enum rig__route rig__find_route(const char *url, const char *method, bool *path_known)
{
    *path_known = false;
    for (size_t i = 0; i < RIG_ARRAY_LEN(rig__routes); i++) {
        if (strcmp(url, rig__routes[i].path) != 0) continue;
        *path_known = true;
        if (strcmp(method, rig__routes[i].method) == 0) return rig__routes[i].route;
    }
    return RIG__ROUTE_NONE;
}

/* The first call for a request: route, method, key, size; GET routes answer at once. */
static enum MHD_Result rig__first(struct rig_serve *server, struct MHD_Connection *connection,
                                  const char *url, const char *method, void **con_cls)
{
    bool known = false;
    enum rig__route route = rig__find_route(url, method, &known);
    if (route == RIG__ROUTE_NONE)
        return known ? rig__fail(server, connection, 405, "invalid_request_error",
                                 "method_not_allowed", "Method %s not allowed here", method)
                     : rig__fail(server, connection, 404, "invalid_request_error", "not_found",
                                 "No route %.128s", url);
    if (route == RIG__ROUTE_HEALTH)
        return atomic_load(&server->ready) && !atomic_load(&server->stopping)
                   ? rig__send_text(server, connection, 200, "text/plain", "")
                   : rig__send_text(server, connection, 503, "text/plain", "not ready\n");
    if (route == RIG__ROUTE_METRICS) return rig__metrics(server, connection);
    if (!rig__authorized(server, connection))
        return rig__fail(server, connection, 401, "authentication_error", "invalid_api_key",
                         "%s", "Missing or incorrect API key (Authorization: Bearer <key>)");
    if (route == RIG__ROUTE_MODELS) return rig__models(server, connection);
    if (!atomic_load(&server->ready) || atomic_load(&server->stopping))
        return rig__fail(server, connection, 503, "server_error", "not_ready", "%s",
                         "The server is starting or stopping");
    const char *length = MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length != NULL && strtoll(length, NULL, 10) > server->config.max_request_bytes)
        return rig__fail(server, connection, 413, "invalid_request_error", "request_too_large",
                         "The body is over the limit of %s bytes", "--max-request-bytes");
    enum rig_serve_api api = route == RIG__ROUTE_CHAT          ? RIG_SERVE_API_CHAT
                             : route == RIG__ROUTE_COMPLETIONS ? RIG_SERVE_API_COMPLETION
                                                               : RIG_SERVE_API_GENERATE;
    struct rig__call *call = rig__call_create(server, connection, api);
    if (call == NULL) return MHD_NO;
    call->route = (int32_t)route;
    *con_cls = call;
    return MHD_YES;
}

/* The first call of a GET only marks it: answering before the request is complete would make
 * libmicrohttpd close a keep-alive connection. */
static char rig__get_pending;

static enum MHD_Result rig__access(void *cls, struct MHD_Connection *connection, const char *url,
                                   const char *method, const char *version,
                                   const char *upload_data, size_t *upload_data_size,
                                   void **con_cls)
{
    (void)version;
    struct rig_serve *server = cls;
    if (*con_cls == NULL && strcmp(method, "GET") == 0) {
        *con_cls = &rig__get_pending;
        return MHD_YES;
    }
    if (*con_cls == &rig__get_pending) {
        if (*upload_data_size > 0) { /* a GET with a body: ignored */
            *upload_data_size = 0;
            return MHD_YES;
        }
        *con_cls = NULL;
        return rig__first(server, connection, url, method, con_cls);
    }
    struct rig__call *call = *con_cls;
    if (call == NULL) return rig__first(server, connection, url, method, con_cls);
    if (call->state == RIG__CALL_RECEIVING && *upload_data_size > 0) {
        if (!call->body_too_large &&
            rig_serve_buffer_append(&call->body, upload_data, *upload_data_size) != RIG_OK)
            call->body_too_large = true;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (call->state == RIG__CALL_RECEIVING) {
        if (call->body_too_large) {
            call->responded = true;
            return rig__fail(server, connection, 413, "invalid_request_error",
                             "request_too_large", "The body is over the limit of %s bytes",
                             "--max-request-bytes");
        }
        if (call->route == RIG__ROUTE_FLUSH) {
            call->responded = true;
            rig_inbox_flush_cache(server->inbox);
            return rig__send_text(server, connection, 200, "text/plain",
                                  "Cache flush queued (done when the engine is idle).\n");
        }
        if (call->route == RIG__ROUTE_ABORT) {
            call->responded = true;
            return rig__abort_request(server, call, connection);
        }
        return rig__begin(server, call, (enum rig__route)call->route);
    }
    pthread_mutex_lock(&call->lock);
    enum MHD_Result result = call->responded ? MHD_YES : rig__resume(server, call);
    pthread_mutex_unlock(&call->lock);
    return result;
}

static void rig__completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                           enum MHD_RequestTerminationCode code)
{
    (void)cls, (void)connection, (void)code;
    struct rig__call *call = *con_cls;
    if (call == NULL || *con_cls == (void *)&rig__get_pending) return;
    *con_cls = NULL;
    pthread_mutex_lock(&call->lock);
    call->connection = NULL;
    RIG_ASSERT(!call->suspended);
    rig__call_abort(call); /* a client gone mid-stream: its requests stop and free their KV */
    pthread_mutex_unlock(&call->lock);
    rig__call_unref(call);
}

/* ---- start and stop ----------------------------------------------------------------------- */

static enum rig_status rig__address(const struct rig_serve_config *c, struct sockaddr_storage *out,
                                    bool *ipv6, char *error, size_t error_len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *found = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", c->port);
    int rc = getaddrinfo(c->host, port, &hints, &found);
    if (rc != 0 || found == NULL) {
        snprintf(error, error_len, "--host %s: %s", c->host, gai_strerror(rc));
        return RIG_E_INVALID;
    }
    memcpy(out, found->ai_addr, found->ai_addrlen);
    *ipv6 = found->ai_family == AF_INET6;
    freeaddrinfo(found);
    return RIG_OK;
}

enum rig_status rig__http_start(struct rig_serve *server, char *error, size_t error_len)
{
    const struct rig_serve_config *c = &server->config;
    struct sockaddr_storage address;
    bool ipv6 = false;
    enum rig_status st = rig__address(c, &address, &ipv6, error, error_len);
    if (st != RIG_OK) return st;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                         MHD_ALLOW_SUSPEND_RESUME | (ipv6 ? MHD_USE_IPv6 : 0);
    server->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, rig__access, server, MHD_OPTION_SOCK_ADDR, &address,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)c->http_threads, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned int)c->max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned int)c->connection_timeout_s, MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096u,
        MHD_OPTION_NOTIFY_COMPLETED, rig__completed, server, MHD_OPTION_END);
    if (server->daemon == NULL) {
        snprintf(error, error_len, "cannot listen on %s:%d (in use, or not an address here)",
                 c->host, c->port);
        return RIG_E_IO;
    }
    return RIG_OK;
}

void rig__http_stop(struct rig_serve *server)
{
    if (server->daemon == NULL) return;
    /* libmicrohttpd wants no suspended connection at stop: answer every waiting call. */
    pthread_mutex_lock(&server->calls_lock);
    for (struct rig__call *c = server->calls; c != NULL; c = c->next) {
        pthread_mutex_lock(&c->lock);
        if (!c->responded && c->state != RIG__CALL_FAILED) {
            rig_serve_error_set(&c->error, 503, "server_error", "shutting_down", NULL,
                                "The server is shutting down");
            c->state = RIG__CALL_FAILED;
        }
        c->stream_over = c->stream_over || c->responded;
        rig__call_wake(c);
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&server->calls_lock);
    MHD_stop_daemon(server->daemon);
    server->daemon = NULL;
}

int32_t rig_serve_port(const struct rig_serve *server)
{
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(server->daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info != NULL ? (int32_t)info->port : server->config.port;
}
