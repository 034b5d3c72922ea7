/* serve.h — `rig bench serve`: a serving benchmark client for any OpenAI-compatible server,
 * measured the way sglang.bench_serving measures (issue 16, docs/bench.md).
 *
 * The pieces, in the order a run uses them:
 *   dataset   the prompts (serve_dataset.c): `random` / `random-ids` (token ids as
 *             bench_serving makes them), `sharegpt` (a ShareGPT-format JSON file), `trace`
 *             (a rig scenario's requests, or a Mooncake / Qwen-Bailian JSONL trace);
 *   schedule  when each prompt is sent (serve_schedule.c): gamma-distributed gaps of mean
 *             1/rate with shape `burstiness` (1 = Poisson), all at once for rate inf, or the
 *             trace's own times; counter-based (Philox), so a seed gives one schedule;
 *   bodies    the HTTP body of each request for the chosen API (serve_body.c), built before
 *             the clock starts;
 *   client    one thread driving every request through libcurl's multi interface
 *             (serve_client.c); each response chunk is timestamped with CLOCK_MONOTONIC when
 *             it arrives and parsed incrementally as server-sent events (serve_sse.c);
 *   report    the records go into a struct rig_results (core/results), so the metrics are
 *             the ones `rig run` computes, the HDF5 file has the same layout, and the table
 *             and JSONL line are bench_serving's (serve_report.c).
 *
 * Definitions (bench_serving's): a request's clock starts when it is sent (after waiting for
 * --max-concurrency, as bench_serving's semaphore does); TTFT is the first chunk carrying
 * output; E2E is the last chunk (or the end of the body); output tokens are the server's
 * count (usage / meta_info) when it gives one, else the tokenizer's count of the text, else
 * one per chunk. A chunk carrying k > 1 new tokens after the first is spread evenly over the
 * gap since the previous chunk (bench_serving's adjusted ITL); the tokens of the first chunk
 * all arrive at TTFT. A request that fails (HTTP status, refused, reset, timeout, malformed
 * data) is counted apart with its status and reason, never in the latencies.
 *
 * Ownership: a struct rig_serve_dataset owns its prompts, tokens, texts and bodies; a struct
 * rig_serve_run owns its records. Everything is allocated before the clock starts, sized from
 * the dataset (max_tokens rows of token times per request, a text buffer per request, a line
 * buffer per concurrent stream); the client loop allocates only what libcurl does inside.
 * Threads: one thread does everything; nothing here is shared.
 */
#ifndef RIG_SERVE_H
#define RIG_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/harness/results/metrics.h"
#include "core/harness/results/results.h"
#include "hal/status.h"

#define RIG_SERVE_PROMPTS_MAX     (1 << 20) /* requests in one run */
#define RIG_SERVE_OUTPUT_MAX      (1 << 20) /* max_tokens of one request */
#define RIG_SERVE_CONCURRENCY_MAX 65536     /* streams in flight at once */
#define RIG_SERVE_WARMUP_MAX      1024
#define RIG_SERVE_LINE_MAX        (64u << 20) /* one SSE event or non-streamed body, bytes */
#define RIG_SERVE_ERROR_MAX       160         /* a request's failure reason, with the NUL */
#define RIG_SERVE_TEXT_MAX        512

/* Which HTTP API the requests go to. */
enum rig_serve_api {
    RIG_SERVE_API_GENERATE = 0,    /* SGLang /generate (rig, sglang) */
    RIG_SERVE_API_COMPLETIONS = 1, /* OpenAI /v1/completions */
    RIG_SERVE_API_CHAT = 2,        /* OpenAI /v1/chat/completions */
};

/* bench_serving's backend names: rig, sglang, sglang-native -> generate; openai, sglang-oai,
 * vllm, lmdeploy -> completions; openai-chat, sglang-oai-chat, vllm-chat, lmdeploy-chat ->
 * chat. -1 for an unknown name. */
int32_t rig_serve_api_parse(const char *backend);
/* "/generate", "/v1/completions", "/v1/chat/completions". */
const char *rig_serve_api_path(enum rig_serve_api api);

struct rig_serve_options {
    const char *base_url;     /* "http://127.0.0.1:1919" */
    const char *backend;      /* a name rig_serve_api_parse knows */
    const char *model;        /* NULL: the first of GET /v1/models (OpenAI APIs) */
    const char *tokenizer;    /* a directory with tokenizer.json, or the file; NULL: none */
    const char *dataset_name; /* random | random-ids | sharegpt | trace */
    const char *dataset_path; /* sharegpt file, trace file; random: ShareGPT file (optional) */
    int32_t num_prompts;      /* 0: the dataset's default (1000; trace: all of it) */
    int32_t random_input_len, random_output_len;
    double random_range_ratio;    /* lengths uniform in [len x ratio, len] */
    int32_t random_vocab_size;    /* random ids without a tokenizer: ids below this */
    int32_t sharegpt_output_len;  /* 0: the dataset's completion length */
    int32_t sharegpt_context_len; /* 0: no limit */
    double request_rate;          /* requests/s; INFINITY: all at once */
    bool request_rate_given;      /* trace: re-time by the rate instead of the trace's times */
    double burstiness;            /* gamma shape; 1 = Poisson */
    int32_t max_concurrency;      /* 0: no limit */
    uint64_t seed;
    bool ignore_eos;      /* bench_serving's default: true */
    bool stream;          /* false: --disable-stream */
    bool tokenize_prompt; /* send token ids even when a tokenizer could make text */
    bool stream_usage;    /* OpenAI APIs: ask for usage in the stream */
    int32_t warmup_requests;
    double request_timeout_s;                                /* per request, > 0 */
    double timeout_s;                                        /* whole run after warm-up; 0 = none */
    double goodput_ttft_ms, goodput_tpot_ms, goodput_e2e_ms; /* < 0: no objective */
    const char *output_file;                                 /* JSONL, appended; NULL: none */
    bool output_details; /* per-request lists in the JSONL line */
    const char *out_h5;  /* results file; NULL: none */
    const char *tag;     /* free text for the JSONL line; NULL: none */
    bool quiet;          /* no dataset / warm-up lines on stdout */
    /* Called about ten times a second while requests run (may be NULL). */
    void (*progress)(void *user, int32_t done, int32_t total, int32_t failed,
                     double output_tokens_per_s);
    void *user;
};

/* bench_serving's defaults: backend rig at http://127.0.0.1:1919, random 1024/1024 ratio 0,
 * 1000 prompts, rate inf, burstiness 1, seed 1, ignore_eos, streaming, one warm-up request,
 * 600 s per request. Can't fail. */
void rig_serve_options_default(struct rig_serve_options *options);

/* "ttft:MS", "tpot:MS", "e2e:MS" (or vLLM's "e2el:MS"), one per call, into `options`.
 * RIG_E_INVALID with a message for anything else or a negative value. */
enum rig_status rig_serve_goodput_parse(struct rig_serve_options *options, const char *text,
                                        char *error, size_t error_len);

/* ---- dataset --------------------------------------------------------------------------- */

struct rig_serve_prompt {
    char id[RIG_RESULTS_ID_MAX]; /* "random-7", the trace's request id */
    int64_t arrival_ns;          /* offset from the start; set by the dataset (trace) or
                                    rig_serve_schedule */
    int32_t input_len;           /* prompt tokens as the dataset counts them (bench_serving's
                                    prompt_len) */
    int32_t output_len;          /* max_tokens asked */
    int64_t token_offset;        /* ids in dataset.tokens; token_count 0: none */
    int32_t token_count;
    int64_t text_offset; /* text in dataset.text (NUL-terminated); -1: none */
    int64_t body_offset; /* HTTP body in dataset.bodies; -1 before rig_serve_bodies */
    int32_t body_len;
};

struct rig_serve_dataset {
    struct rig_serve_prompt *prompts; /* (count) in sending order */
    int32_t count;
    int64_t prompt_capacity;
    int32_t *tokens; /* (token_count) prompt ids back to back */
    int64_t token_count, token_capacity;
    char *text; /* (text_len) prompt texts, each NUL-terminated */
    int64_t text_len, text_capacity;
    char *bodies; /* (bodies_len) request bodies back to back */
    int64_t bodies_len;
    bool timed;                           /* arrivals come from the dataset (a trace) */
    char description[RIG_SERVE_TEXT_MAX]; /* "random-ids: 256 prompts, vocabulary 10000" */
};

struct rig_tokenizer;

/* Builds the prompts `options` ask for (`tokenizer` may be NULL where ids suffice: random
 * ids and traces). RIG_E_IO / RIG_E_PARSE / RIG_E_INVALID with a message naming the file
 * or the option; `out` is then empty. Deterministic in (options, files, seed). */
enum rig_status rig_serve_dataset_load(const struct rig_serve_options *options,
                                       const struct rig_tokenizer *tokenizer,
                                       struct rig_serve_dataset *out, char *error,
                                       size_t error_len);
void rig_serve_dataset_free(struct rig_serve_dataset *dataset);

/* Appends a prompt (ids and/or text; text may be NULL) to `dataset`. Start-up only.
 * RIG_E_NO_MEMORY or RIG_E_CAPACITY; the dataset is unchanged then. */
enum rig_status rig_serve_dataset_add(struct rig_serve_dataset *dataset, const char *id,
                                      const int32_t *ids, int32_t id_count, const char *text,
                                      int32_t input_len, int32_t output_len, int64_t arrival_ns);

/* ---- schedule -------------------------------------------------------------------------- */

/* Sending offsets of `count` requests (ns, first at 0): gaps gamma(shape = burstiness,
 * scale = 1 / (rate x burstiness)) drawn from Philox keyed by `seed` and the request's index;
 * all 0 for rate inf. Pure: the same arguments give the same schedule. */
void rig_serve_schedule(int32_t count, double rate, double burstiness, uint64_t seed,
                        int64_t *arrival_ns);

/* The gap after request `index`, seconds (one draw of the schedule). Pure. */
double rig_serve_gap_s(double rate, double burstiness, uint64_t seed, uint32_t index);

/* ---- bodies ---------------------------------------------------------------------------- */

/* Builds every prompt's HTTP body for `api` (JSON, bench_serving's fields; temperature 0).
 * Ids are sent as ids (generate: input_ids; completions: a list prompt) unless the prompt
 * has text and !tokenize_prompt; chat needs text. RIG_E_INVALID when a prompt cannot be
 * expressed for the API, RIG_E_NO_MEMORY. */
enum rig_status rig_serve_bodies(struct rig_serve_dataset *dataset, enum rig_serve_api api,
                                 const struct rig_serve_options *options, const char *model,
                                 char *error, size_t error_len);

/* ---- server-sent events and chunks ----------------------------------------------------- */

/* Incremental SSE reader of one response: feed bytes as they come; every complete event's
 * data (its `data:` lines joined by '\n') is handed to the callback. Lines end at "\n",
 * "\r\n" or "\r"; comments and other fields are skipped. `buffer` is caller-owned. */
struct rig_serve_sse {
    char *buffer; /* (capacity) the event being assembled, then the current line */
    size_t capacity;
    size_t data_len;   /* bytes of data of the current event, at the front of buffer */
    size_t line_start; /* where the current line starts in buffer */
    size_t line_len;
    bool has_data; /* the event has a data field */
    bool after_cr; /* the last byte was '\r' (a following '\n' is the same end) */
    bool overflow;
};
typedef void (*rig_serve_event_fn)(void *user, const char *data, size_t len);

void rig_serve_sse_init(struct rig_serve_sse *sse, char *buffer, size_t capacity);
/* Feeds `len` bytes. RIG_E_CAPACITY once an event does not fit (the reader then ignores the
 * rest of the stream). */
enum rig_status rig_serve_sse_feed(struct rig_serve_sse *sse, const char *bytes, size_t len,
                                   rig_serve_event_fn fn, void *user);
/* End of stream: dispatches an event left without its blank line. */
void rig_serve_sse_finish(struct rig_serve_sse *sse, rig_serve_event_fn fn, void *user);

/* What one chunk (or a whole non-streamed body) says. Texts point into `root`. */
struct rig_serve_chunk {
    void *root;       /* the parsed JSON (json_t *); release with the function below */
    bool done;        /* "[DONE]" */
    const char *text; /* new output text (generate: all of it so far), or NULL */
    size_t text_len;
    bool text_cumulative;            /* generate: text is everything so far */
    int64_t completion_tokens;       /* the server's count so far; -1 not given */
    int64_t prompt_tokens;           /* -1 not given */
    int64_t cached_tokens;           /* -1 not given */
    int32_t finish_reason;           /* RIG_FINISH_LENGTH / _STOP, or RIG_FINISH_NONE */
    size_t parsed_bytes;             /* bytes handed to the JSON parser */
    char error[RIG_SERVE_ERROR_MAX]; /* non-empty: malformed, or the server sent an error */
};

/* Parses one event's data (or a body) for `api`. Never fails: a malformed chunk sets
 * chunk->error. */
void rig_serve_chunk_parse(enum rig_serve_api api, const char *data, size_t len,
                           struct rig_serve_chunk *chunk);
void rig_serve_chunk_release(struct rig_serve_chunk *chunk);

/* /generate's stream read incrementally. SGLang's /generate (and rig's) send all the text so
 * far in every event, so the events of a stream of n tokens add up to O(n^2) bytes; parsing
 * each one whole made one client thread the bottleneck of a long run. This reader keeps the
 * escaped text (the JSON string's bytes as sent) of the events it has read; when the next
 * event's "text" starts with exactly those bytes (the object opening with its "text" member,
 * as SGLang and rig write it), only the rest of the event reaches the JSON parser, and the
 * chunk's text is the new part alone (text_cumulative false). Anything else — a server that
 * rewrote its text, another member first, bytes that do not fit `seen` — is parsed whole
 * and read as cumulative, as rig_serve_chunk_parse does. The prefix is compared with
 * memcmp and the event was already scanned by the SSE reader, so bytes still cross memory
 * O(n^2) times at memcpy speed; what grows linearly is the JSON parsing. `seen` is
 * caller-owned; one reader per stream, reset for each request. */
struct rig_serve_generate_reader {
    char *seen; /* (capacity) the escaped text the caller holds, as the server sent it */
    size_t capacity;
    size_t seen_len;
    bool whole; /* `seen` overflowed: every later event is parsed whole */
};

void rig_serve_generate_reader_init(struct rig_serve_generate_reader *reader, char *seen,
                                    size_t capacity);
/* Parses one /generate event's data as rig_serve_chunk_parse does (never fails; a malformed
 * event sets chunk->error), reading only its new text where it can (above). */
void rig_serve_generate_parse(struct rig_serve_generate_reader *reader, const char *data,
                              size_t len, struct rig_serve_chunk *chunk);

/* ---- a run ----------------------------------------------------------------------------- */

/* Why a request failed. */
enum rig_serve_failure {
    RIG_SERVE_OK = 0,
    RIG_SERVE_FAIL_HTTP = 1,      /* a status other than 200 */
    RIG_SERVE_FAIL_CONNECT = 2,   /* refused, no route, name not resolved */
    RIG_SERVE_FAIL_RESET = 3,     /* the connection broke mid-response */
    RIG_SERVE_FAIL_TIMEOUT = 4,   /* per-request or whole-run timeout */
    RIG_SERVE_FAIL_MALFORMED = 5, /* data that is not the API's JSON, or too long */
    RIG_SERVE_FAIL_SERVER = 6,    /* the server sent an error object */
    RIG_SERVE_FAIL_EMPTY = 7,     /* the response ended without any output */
    RIG_SERVE_FAIL_NOT_SENT = 8,  /* never sent (the run was stopped) */
};
#define RIG_SERVE_FAIL_COUNT 9
const char *rig_serve_failure_name(int32_t failure);

/* Per request, beside its row in results.requests (same index). */
struct rig_serve_outcome {
    int32_t failure;       /* enum rig_serve_failure */
    int32_t http_status;   /* 0: none received */
    int32_t chunks;        /* events carrying output */
    int32_t server_tokens; /* the server's output count; -1 not given */
    int32_t retokenized;   /* tokenizer's count of the text; -1 without a tokenizer */
    int32_t received;      /* output tokens received, a failed request's too (its rows
                              filled before it ended); a success: its output count */
    int64_t text_offset;   /* generated text in run.text */
    int64_t text_len;
    int64_t text_capacity;
    bool text_truncated;             /* more text than the buffer held */
    char error[RIG_SERVE_ERROR_MAX]; /* the reason, "" when it succeeded */
};

struct rig_serve_run {
    struct rig_results results;         /* requests, token times (ns since the start) */
    struct rig_serve_outcome *outcomes; /* (results.request_count) */
    char *text;                         /* generated texts, per outcome */
    int64_t text_capacity;
    int64_t duration_ns;  /* start to the last request's end */
    int64_t event_bytes;  /* data bytes of the events (or bodies) received */
    int64_t parsed_bytes; /* of which handed to the JSON parser */
    bool stopped;         /* the whole-run timeout fired */
};

/* Sends every prompt of `dataset` (bodies built) at its arrival offset, at most
 * options->max_concurrency at once, and records what comes back into `run` (initialised
 * here; release with rig_serve_run_free). Request failures are recorded, not returned;
 * the return is RIG_E_NO_MEMORY / RIG_E_IO (libcurl could not start) with a message. */
enum rig_status rig_serve_run(const struct rig_serve_options *options, enum rig_serve_api api,
                              const struct rig_serve_dataset *dataset,
                              const struct rig_tokenizer *tokenizer, struct rig_serve_run *run,
                              char *error, size_t error_len);
void rig_serve_run_free(struct rig_serve_run *run);

/* GET base_url/v1/models; the first model's id into `model`. RIG_E_IO / RIG_E_PARSE. */
enum rig_status rig_serve_model_query(const char *base_url, char *model, size_t model_len,
                                      char *error, size_t error_len);

/* ---- summary --------------------------------------------------------------------------- */

struct rig_serve_summary {
    struct rig_metrics metrics; /* rig_metrics_compute over run.results */
    double failed;              /* requests that failed, all reasons */
    double failures[RIG_SERVE_FAIL_COUNT];
    double itl_p95;                  /* bench_serving prints it */
    double total_output_retokenized; /* -1 without a tokenizer */
    double streamed_output;          /* tokens received by every request, failed or cut ones
                                        too: a saturated server's progress in a cut run */
    double good_completed;           /* requests meeting every --goodput objective */
    double request_goodput;          /* good_completed / duration; -1 without objectives */
    double max_output_tokens_per_s;  /* busiest whole second (bench_serving) */
    double max_concurrent_requests;  /* most requests in flight in one second */
};

/* Metrics of a finished run. RIG_E_NO_MEMORY (summary zeroed). */
enum rig_status rig_serve_summarize(const struct rig_serve_options *options,
                                    const struct rig_serve_run *run,
                                    struct rig_serve_summary *summary);

/* bench_serving's result table on `out`. */
void rig_serve_print(const struct rig_serve_options *options, const struct rig_serve_run *run,
                     const struct rig_serve_summary *summary, void *out /* FILE * */);
/* Appends bench_serving's JSONL line (with per-request lists when output_details). */
enum rig_status rig_serve_write_jsonl(const struct rig_serve_options *options,
                                      const struct rig_serve_dataset *dataset,
                                      const struct rig_serve_run *run,
                                      const struct rig_serve_summary *summary, const char *path,
                                      char *error, size_t error_len);
/* The results file (docs/results.md layout; backend "http", clock wall, no steps). */
enum rig_status rig_serve_write_h5(const struct rig_serve_options *options,
                                   const struct rig_serve_dataset *dataset,
                                   struct rig_serve_run *run,
                                   const struct rig_serve_summary *summary, const char *path,
                                   char *error, size_t error_len);

#endif /* RIG_SERVE_H */
