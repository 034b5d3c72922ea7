/* serve.h — `rig serve`: the OpenAI-compatible HTTP server over the engine.
 *
 * One process: libmicrohttpd's HTTP threads → tokenizer workers → the engine's thread (the
 * driver loop with a live inbox) → the detokenizer thread → HTTP threads (serve_impl.h draws
 * the stages). Routes: POST /v1/chat/completions, /v1/completions, /generate, /flush_cache,
 * /abort_request; GET /v1/models, /health, /metrics (docs/server.md).
 *
 * Life cycle: rig_serve_start loads the tokenizer, starts the HTTP server (so /health answers
 * 503 at once) and the engine thread, which creates the engine (devices, model, KV pool,
 * graphs) and only then marks the server ready. rig_serve_wait_ready blocks until then (or
 * the engine failed). rig_serve_shutdown stops accepting connections, aborts every request in
 * flight (streams end with finish_reason "abort"), drains the engine and stops every thread;
 * rig_serve_destroy frees what is left. All from one controlling thread.
 */
#ifndef RIG_SERVE_H
#define RIG_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine/engine.h"
#include "core/engine/driver.h"

#define RIG_SERVE_TOKENIZER_WORKERS_MAX 8

struct rig_serve_config {
    struct rig_engine_config engine; /* model, backend and limits; max_requests = running +
                                        queued requests the engine holds at once */
    const char *tokenizer_dir;       /* tokenizer.json (+ tokenizer_config.json) */
    const char *served_model_name;   /* `model` in requests and responses */
    const char *host;                /* "127.0.0.1" */
    int32_t port;                    /* 1919; 0: any free port (see rig_serve_port) */
    const char *api_key;             /* NULL: no authentication */
    int64_t max_request_bytes;       /* larger bodies are refused with 413 */
    int32_t max_connections;         /* open connections at once */
    int32_t connection_timeout_s;    /* idle connections are closed after this (slowloris) */
    int32_t http_threads;            /* libmicrohttpd's thread pool */
    int32_t tokenizer_workers;       /* [1, RIG_SERVE_TOKENIZER_WORKERS_MAX] */
    int32_t n_max;                   /* largest prompts x n of one request */
    enum rig_driver_pace pace;       /* simulator: fast, or realtime (the virtual clock) */
    int32_t log_level;               /* 0 errors, 1 info (one line per request), 2 debug */
};

/* Defaults: host 127.0.0.1, port 1919, no API key, 16 MiB bodies, 4096 connections, 60 s
 * timeout, 2 HTTP threads, 1 tokenizer worker, n_max 64, fast pace, log level 1; the engine
 * config as rig_engine_config_default. The model and tokenizer must still be set. */
void rig_serve_config_default(struct rig_serve_config *config);

struct rig_serve;

/* Starts the server (see above). On error returns a negative status with a message in
 * `error` and leaves nothing running. */
enum rig_status rig_serve_start(const struct rig_serve_config *config, struct rig_serve **out,
                                char *error, size_t error_len);
/* Blocks until the engine is up (RIG_OK) or failed to start (its status, message in
 * `error`). */
enum rig_status rig_serve_wait_ready(struct rig_serve *server, char *error, size_t error_len);
/* The TCP port the server listens on. Can't fail. */
int32_t rig_serve_port(const struct rig_serve *server);
/* The engine's context length and KV slots (valid once ready). */
int32_t rig_serve_context_len(const struct rig_serve *server);
/* True when the engine thread has stopped on its own (a device error): the caller should
 * shut down. The message is in `error`. */
bool rig_serve_failed(struct rig_serve *server, char *error, size_t error_len);
/* Stops everything (see above); returns the engine thread's status. */
enum rig_status rig_serve_shutdown(struct rig_serve *server);
void rig_serve_destroy(struct rig_serve *server);

#endif /* RIG_SERVE_H */
