/* check.c — isolated checks, shrinking and scenario export of swarm cases (see swarm.h).
 *
 * _DEFAULT_SOURCE: glibc exposes MAP_ANONYMOUS (Linux, the BSDs and macOS have it), for the
 * page an exporting child shares with its parent. */
#define _DEFAULT_SOURCE 1
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/harness/swarm/swarm.h"

/* The checks in this process; *stage (when not NULL) follows the run in progress. */
static enum rig_swarm_verdict rig__check_here(const struct rig_swarm_case *c, bool equivalence,
                                              volatile int32_t *stage,
                                              struct rig_swarm_result *out)
{
    if (stage != NULL) *stage = 0;
    if (rig_swarm_run(c, out) != RIG_SWARM_PASS || !equivalence) return out->verdict;
    struct rig_swarm_result run = *out;
    if (rig_swarm_equivalence(c, stage, out) == RIG_SWARM_PASS) *out = run;
    return out->verdict;
}

/* Reads exactly `len` bytes; false on EOF or error. */
static bool rig__read_all(int fd, void *buffer, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = read(fd, (char *)buffer + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += (size_t)n;
    }
    return true;
}

/* The child runs the check and sends its result through a pipe; a child that dies (an
 * assertion, a sanitizer report) sends nothing, and that is the CRASH verdict. The run it
 * died in is the stage it last wrote to a page shared with the parent. */
static enum rig_swarm_verdict rig__check_forked(const struct rig_swarm_case *c,
                                                bool equivalence, struct rig_swarm_result *out)
{
    int fds[2];
    RIG_ASSERT_MSG(pipe(fds) == 0, "pipe failed");
    volatile int32_t *stage = mmap(NULL, sizeof *stage, PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    RIG_ASSERT_MSG(stage != MAP_FAILED, "mmap failed");
    *stage = 0;
    fflush(NULL);
    pid_t child = fork();
    RIG_ASSERT_MSG(child >= 0, "fork failed");
    if (child == 0) {
        close(fds[0]);
        struct rig_swarm_result result;
        rig__check_here(c, equivalence, stage, &result);
        ssize_t n = write(fds[1], &result, sizeof result);
        _exit(n == (ssize_t)sizeof result ? 0 : 3);
    }
    close(fds[1]);
    bool got = rig__read_all(fds[0], out, sizeof *out);
    close(fds[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    int32_t died_in = *stage;
    munmap((void *)stage, sizeof *stage);
    if (got && WIFEXITED(status) && WEXITSTATUS(status) == 0) return out->verdict;
    memset(out, 0, sizeof *out);
    out->verdict = RIG_SWARM_CRASH;
    out->step_failed = -1;
    out->stage = died_in >= 0 && died_in < RIG_SWARM_STAGES ? died_in : 0;
    char where[96];
    rig_swarm_stage_name(out->stage, where, sizeof where);
    if (WIFSIGNALED(status))
        snprintf(out->message, sizeof out->message, "the run died of signal %d (%s) in %s: its "
                 "assertion or sanitizer report is on stderr", WTERMSIG(status),
                 WTERMSIG(status) == SIGABRT ? "abort" : "crash", where);
    else
        snprintf(out->message, sizeof out->message, "the run exited with status %d in %s",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1, where);
    return out->verdict;
}

enum rig_swarm_verdict rig_swarm_check(const struct rig_swarm_case *c, bool equivalence,
                                       bool isolate, struct rig_swarm_result *out)
{
    RIG_ASSERT(c != NULL && out != NULL);
    return isolate ? rig__check_forked(c, equivalence, out)
                   : rig__check_here(c, equivalence, NULL, out);
}

/* Removes requests [from, from + count) and their tokens, keeping arrival order. */
static void rig__drop(struct rig_swarm_case *c, int32_t from, int32_t count)
{
    struct rig_swarm_case *copy = malloc(sizeof *copy);
    RIG_ASSERT_MSG(copy != NULL, "out of memory");
    memcpy(copy, c, sizeof *copy);
    c->request_count = 0;
    c->token_count = 0;
    for (int32_t i = 0; i < copy->request_count; i++) {
        if (i >= from && i < from + count) continue;
        struct rig_swarm_request q = copy->requests[i];
        memcpy(c->tokens + c->token_count, copy->tokens + q.prompt_offset,
               (size_t)q.prompt_len * sizeof(int32_t));
        q.prompt_offset = c->token_count;
        c->token_count += q.prompt_len;
        c->requests[c->request_count++] = q;
    }
    free(copy);
}

static bool rig__still_fails(const struct rig_swarm_case *c, enum rig_swarm_verdict verdict,
                             bool equivalence, bool isolate, int32_t *runs)
{
    struct rig_swarm_result result;
    (*runs)++;
    return rig_swarm_check(c, equivalence, isolate, &result) == verdict;
}

int32_t rig_swarm_shrink(struct rig_swarm_case *c, enum rig_swarm_verdict verdict,
                         bool equivalence, bool isolate, int32_t attempts)
{
    RIG_ASSERT(c != NULL && verdict != RIG_SWARM_PASS);
    struct rig_swarm_case *trial = malloc(sizeof *trial);
    RIG_ASSERT_MSG(trial != NULL, "out of memory");
    int32_t runs = 0;
    /* Chunks of requests, halving the chunk size down to one (delta debugging, simplified). */
    for (int32_t size = c->request_count / 2; size >= 1 && runs < attempts; size /= 2) {
        for (int32_t from = 0; from + size <= c->request_count && runs < attempts;) {
            memcpy(trial, c, sizeof *trial);
            rig__drop(trial, from, size);
            if (trial->request_count > 0 &&
                rig__still_fails(trial, verdict, equivalence, isolate, &runs))
                memcpy(c, trial, sizeof *c);
            else
                from += size;
        }
    }
    /* Then shorter outputs. */
    for (int32_t i = 0; i < c->request_count && runs < attempts; i++) {
        if (c->requests[i].max_tokens == 1) continue;
        memcpy(trial, c, sizeof *trial);
        trial->requests[i].max_tokens = 1;
        if (rig__still_fails(trial, verdict, equivalence, isolate, &runs))
            memcpy(c, trial, sizeof *c);
    }
    free(trial);
    return runs;
}

/* The tiny preset with the case's vocabulary, as a config.json the scenario can name. */
static enum rig_status rig__write_model(const struct rig_swarm_case *c, const char *path)
{
    struct rig_model_config m;
    enum rig_status s = rig_model_config_preset("tiny", &m);
    RIG_ASSERT(s == RIG_OK);
    FILE *f = fopen(path, "w");
    if (f == NULL) return RIG_E_IO;
    fprintf(f, "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\",\n"
               " \"vocab_size\": %d, \"hidden_size\": %d, \"intermediate_size\": %d,\n"
               " \"num_hidden_layers\": %d, \"num_attention_heads\": %d, "
               "\"num_key_value_heads\": %d,\n \"head_dim\": %d, \"rms_norm_eps\": %g, "
               "\"max_position_embeddings\": %d,\n \"rope_theta\": %g, "
               "\"tie_word_embeddings\": %s, \"bos_token_id\": %d, \"eos_token_id\": %d}\n",
            c->vocab_size, m.hidden_size, m.intermediate_size, m.num_layers, m.num_heads,
            m.num_kv_heads, m.head_dim, (double)m.rms_norm_eps, m.max_position,
            (double)m.rope.theta, m.tie_word_embeddings ? "true" : "false", m.bos_token_id,
            m.eos_token_ids[0]);
    return fclose(f) == 0 ? RIG_OK : RIG_E_IO;
}

static void rig__write_engine(FILE *f, const struct rig_swarm_case *c, const char *model)
{
    if (model == NULL)
        fprintf(f, "model: {preset: tiny, dummy_weights: true}\n");
    else
        fprintf(f, "model: {config: \"%s\"}\n", model);
    fprintf(f, "sim: {timing_only: %s}\n", c->real_model ? "false" : "true");
    fprintf(f, "seed: %llu\n", (unsigned long long)c->seed);
    fprintf(f, "engine: {num_pages: %d, page_size: %d, max_running_req: %d, max_seq_len: %d,\n"
               "         prefill_budget: %d, tp_size: %d, policy: %s, cache: %s, "
               "overlap: %s,\n         cuda_graph_max_bs: %d, max_requests: %d}\n",
            c->num_pages, c->page_size, c->max_running_req, c->max_seq_len, c->prefill_budget,
            c->tp_size, rig_policy_name(c->policy), rig_cache_type_name(c->cache),
            c->overlap ? "true" : "false", c->graphs ? c->graph_max_bs : 0, c->max_requests);
    if (!c->faults) return;
    fprintf(f, "faults: {until_step: %d", c->fault_steps);
    if (c->fail_alloc_at >= 0) fprintf(f, ", start_alloc_fail: %lld", (long long)c->fail_alloc_at);
    if (c->stall_op_at >= 0)
        fprintf(f, ",\n         stall: {rank: %d, op: %lld, duration: %lldns}", c->stall_rank,
                (long long)c->stall_op_at, (long long)c->stall_ns);
    fprintf(f, "}\n");
}

/* Scenario time of engine clock `t_ns` in a run that started at `origin_ns`: what the swarm
 * did before the engine was ready happens at its start. */
static int64_t rig__scenario_ns(int64_t t_ns, int64_t origin_ns)
{
    return t_ns > origin_ns ? t_ns - origin_ns : 0;
}

static void rig__write_request(FILE *f, const struct rig_swarm_case *c, int32_t i,
                               int64_t origin_ns, int64_t abort_ns)
{
    const struct rig_swarm_request *q = &c->requests[i];
    /* The scenario format wants max_tokens >= 1: "up to the context" written out. */
    int32_t max_tokens = q->max_tokens > 0 ? q->max_tokens : c->max_seq_len - q->prompt_len;
    if (max_tokens < 1) max_tokens = 1;
    /* Block style: libfyaml refuses a flow mapping whose entry spans more than 1024
     * characters (YAML's limit on implicit keys), which long prompts exceed. */
    fprintf(f, "  - id: r%d\n    at: %lldns\n    max_tokens: %d\n    temperature: %g\n"
               "    top_k: %d\n    ignore_eos: %s\n", i,
            (long long)rig__scenario_ns(q->arrival_ns, origin_ns), max_tokens,
            (double)q->temperature, q->top_k, q->ignore_eos ? "true" : "false");
    if (abort_ns >= 0) fprintf(f, "    abort_at: %lldns\n", (long long)abort_ns);
    if (q->stop_count > 0) {
        fprintf(f, "    stop_token_ids: [%d", q->stop_ids[0]);
        for (int32_t k = 1; k < q->stop_count; k++) fprintf(f, ", %d", q->stop_ids[k]);
        fprintf(f, "]\n");
    }
    fprintf(f, "    tokens: [");
    for (int32_t t = 0; t < q->prompt_len; t++)
        fprintf(f, "%s%d", t == 0 ? "" : ", ", c->tokens[q->prompt_offset + t]);
    fprintf(f, "]\n");
}

/* The run's origin and, per request, the scenario time its planned abort was issued (-1:
 * none), from a run of the case in a child process: a case that crashes the engine (the
 * very case worth exporting) still gives the aborts issued before the crash. */
static enum rig_status rig__abort_plan(const struct rig_swarm_case *c, int64_t *abort_ns,
                                       int64_t *origin_ns)
{
    size_t bytes = (RIG_SWARM_REQUESTS_MAX + 1) * sizeof(int64_t);
    int64_t *shared = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                           -1, 0);
    if (shared == MAP_FAILED) return RIG_E_NO_MEMORY;
    for (int32_t i = 0; i <= RIG_SWARM_REQUESTS_MAX; i++) shared[i] = -1;
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) _exit(rig_swarm_abort_times(c, shared + 1, shared) == RIG_OK ? 0 : 3);
    int status = 0;
    while (child > 0 && waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    *origin_ns = shared[0] > 0 ? shared[0] : 0;
    for (int32_t i = 0; i < c->request_count; i++) abort_ns[i] = shared[1 + i];
    munmap(shared, bytes);
    return child > 0 ? RIG_OK : RIG_E_NO_MEMORY;
}

enum rig_status rig_swarm_write_scenario(const struct rig_swarm_case *c, const char *path)
{
    RIG_ASSERT(c != NULL && path != NULL);
    int64_t abort_ns[RIG_SWARM_REQUESTS_MAX], origin_ns = 0;
    for (int32_t i = 0; i < RIG_SWARM_REQUESTS_MAX; i++) abort_ns[i] = -1;
    if (rig__abort_plan(c, abort_ns, &origin_ns) != RIG_OK) return RIG_E_NO_MEMORY;
    /* Another vocabulary than the preset's: a config.json beside the scenario. */
    char model[1024];
    int n = snprintf(model, sizeof model, "%s.model.json", path);
    if (n < 0 || (size_t)n >= sizeof model) return RIG_E_INVALID;
    bool preset = c->vocab_size == 1024;
    if (!preset && rig__write_model(c, model) != RIG_OK) return RIG_E_IO;
    FILE *f = fopen(path, "w");
    if (f == NULL) return RIG_E_IO;
    char line[256];
    rig_swarm_describe(c, line, sizeof line);
    char stage[96];
    rig_swarm_stage_name(c->stage, stage, sizeof stage);
    fprintf(f, "# Swarm seed %llu, %s%s, written by `rig fuzz`.\n# %s\n",
            (unsigned long long)c->seed, stage, c->stage > 0 ? "" : c->faults ? " (faults on)"
                                                                             : " (faults off)",
            line);
    fprintf(f, "# Replay: rig run FILE; `rig fuzz --seed %llu` replays the seed's whole check.\n"
               "# Times are from the engine's start; aborts the swarm triggered by a state "
               "(queued,\n# mid-chunk, ...) are written as the times it issued them.\n",
            (unsigned long long)c->seed);
    fprintf(f, "name: swarm-%llu\n", (unsigned long long)c->seed);
    rig__write_engine(f, c, preset ? NULL : model);
    fprintf(f, "requests:\n");
    for (int32_t i = 0; i < c->request_count; i++)
        rig__write_request(f, c, i, origin_ns, abort_ns[i]);
    fprintf(f, "expect:\n  - {pages_leaked: 0, invariant_violations: 0}\n");
    return fclose(f) == 0 ? RIG_OK : RIG_E_IO;
}
