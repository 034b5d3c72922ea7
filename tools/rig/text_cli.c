/* text_cli.c — text in and text out for the command line (text_cli.h). */
#include "tools/rig/text_cli.h"

#include <stdlib.h>
#include <string.h>

struct rig_tokenizer *rig_cli_tokenizer_load(const char *who, const char *dir)
{
    struct rig_tokenizer *tok = NULL;
    char error[512];
    if (rig_tokenizer_load(dir, &tok, error, sizeof error) == RIG_OK) return tok;
    fprintf(stderr, "%s: cannot load the tokenizer of %s: %s\n", who, dir, error);
    return NULL;
}

bool rig_cli_prompt_encode(const char *who, const struct rig_tokenizer *tok,
                           const struct rig_chat_message *messages, size_t count, bool chat,
                           bool enable_thinking, struct rig_tokenizer_ids *ids)
{
    struct rig_tokenizer_text text = {0};
    enum rig_status s = RIG_OK;
    char error[512];
    if (chat) {
        enum rig_chat_template kind = rig_tokenizer_chat_template(tok);
        if (kind == RIG_CHAT_TEMPLATE_NONE || kind == RIG_CHAT_TEMPLATE_UNKNOWN)
            kind = RIG_CHAT_TEMPLATE_CHATML;
        struct rig_chat_options options = {.add_generation_prompt = true,
                                           .enable_thinking = enable_thinking};
        s = rig_tokenizer_chat_render(tok, kind, messages, count, &options, &text, error,
                                      sizeof error);
    }
    const char *data = chat ? text.data : messages[0].content;
    size_t len = chat ? text.len : strlen(messages[0].content);
    if (s == RIG_OK)
        s = rig_tokenizer_encode(tok, NULL, data != NULL ? data : "", len, !chat, ids, error,
                                 sizeof error);
    rig_tokenizer_text_free(&text);
    if (s != RIG_OK) fprintf(stderr, "%s: the prompt: %s\n", who, error);
    return s == RIG_OK;
}

bool rig_cli_stream_begin(struct rig_cli_stream *s, const struct rig_tokenizer *tok,
                          bool skip_special_tokens, bool keep, FILE *out)
{
    memset(s, 0, sizeof *s);
    rig_tokenizer_stream_init(&s->detok, tok, skip_special_tokens);
    s->out = out;
    s->keep = keep;
    s->capacity = rig_tokenizer_stream_piece_max(tok) + 1;
    s->piece = malloc(s->capacity);
    return s->piece != NULL;
}

static void rig__cli_emit(struct rig_cli_stream *s, size_t len)
{
    if (len == 0) return;
    fwrite(s->piece, 1, len, s->out);
    fflush(s->out);
    if (!s->keep) return;
    struct rig_tokenizer_text *t = &s->all;
    if (t->len + len + 1 > t->capacity) {
        size_t capacity = (t->len + len + 1) * 2;
        char *grown = realloc(t->data, capacity);
        if (grown == NULL) return; /* the terminal has the text; history loses this piece */
        t->data = grown;
        t->capacity = capacity;
    }
    memcpy(t->data + t->len, s->piece, len);
    t->len += len;
    t->data[t->len] = '\0';
}

void rig_cli_stream_token(struct rig_cli_stream *s, int32_t id)
{
    size_t len = 0;
    if (rig_tokenizer_stream_step(&s->detok, id, s->piece, s->capacity, &len, NULL, 0) == RIG_OK)
        rig__cli_emit(s, len);
}

void rig_cli_stream_end(struct rig_cli_stream *s)
{
    size_t len = 0;
    if (s->piece != NULL &&
        rig_tokenizer_stream_finish(&s->detok, s->piece, s->capacity, &len, NULL, 0) == RIG_OK)
        rig__cli_emit(s, len);
    free(s->piece);
    s->piece = NULL;
}
