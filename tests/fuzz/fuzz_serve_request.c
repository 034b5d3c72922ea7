/* fuzz_serve_request.c — libFuzzer harness for the server's request parsing (core/serve/
 * request.c): a JSON body → prompts, chat messages and sampling parameters, or an OpenAI error.
 *
 * The first byte picks the API (chat, completions, /generate), the rest is the body. A parse
 * either succeeds with values inside their documented ranges, or fails with a 4xx/500 status
 * and a message; either way nothing leaks (ASan) and nothing asserts. Corpus:
 * tests/fuzz/corpus/serve_request/ (valid bodies of each API and a few broken ones).
 */
#include <stdint.h>
#include <string.h>

#include "core/serve/request.h"
#include "hal/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void rig__check_ok(const struct rig_serve_params *p)
{
    const struct rig_serve_sampling *s = &p->sampling;
    RIG_ASSERT(p->n >= 1 && rig_serve_params_choices(p) <= RIG_SERVE_CHOICES_MAX);
    RIG_ASSERT(s->temperature >= 0.0f && s->temperature <= 2.0f);
    RIG_ASSERT(s->top_p > 0.0f && s->top_p <= 1.0f);
    RIG_ASSERT(s->top_k == -1 || s->top_k >= 1);
    RIG_ASSERT(s->max_tokens == -1 || s->max_tokens >= 1);
    RIG_ASSERT(s->top_logprobs >= 0 && s->top_logprobs <= RIG_SERVE_TOP_LOGPROBS_MAX);
    RIG_ASSERT(s->stop_count >= 0 && s->stop_count <= RIG_SERVE_STOP_MAX);
    for (int32_t i = 0; i < s->stop_count; i++)
        RIG_ASSERT(s->stop_len[i] >= 1 && s->stop_len[i] <= RIG_SERVE_STOP_BYTES_MAX);
    for (int32_t i = 0; i < s->stop_token_count; i++)
        RIG_ASSERT(s->stop_token_ids[i] >= 0 && s->stop_token_ids[i] < 151936);
    if (p->api == RIG_SERVE_API_CHAT) {
        RIG_ASSERT(p->message_count >= 1);
        for (size_t i = 0; i < p->message_count; i++)
            RIG_ASSERT(p->messages[i].role != NULL && p->messages[i].content != NULL);
        return;
    }
    RIG_ASSERT(p->prompt_count >= 1 && p->prompt_count <= RIG_SERVE_PROMPTS_MAX);
    for (int32_t i = 0; i < p->prompt_count; i++)
        RIG_ASSERT((p->prompts[i].text != NULL) != (p->prompts[i].ids != NULL));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    static struct rig_serve_params params; /* large (owned strings table): not on the stack */
    const struct rig_serve_parse_limits limits = {.model_name = "tiny-qwen3",
                                                  .vocab_size = 151936, .n_max = 16};
    enum rig_serve_api api = (enum rig_serve_api)(data[0] % 3);
    struct rig_serve_error error;
    memset(&error, 0, sizeof error);
    enum rig_status st = rig_serve_params_parse(api, (const char *)data + 1, size - 1, &limits,
                                                &params, &error);
    if (st == RIG_OK) {
        rig__check_ok(&params);
        rig_serve_params_free(&params);
        return 0;
    }
    RIG_ASSERT(error.http_status == 400 || error.http_status == 404 ||
               error.http_status == 500);
    RIG_ASSERT(error.message[0] != '\0' && error.type != NULL);
    RIG_ASSERT(params.root == NULL && params.messages == NULL && params.owned_count == 0);
    return 0;
}
