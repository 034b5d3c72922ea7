/* decode.c — ids to text (HF's ByteLevel decoder followed by String::from_utf8_lossy) and the
 * incremental detokenizer. The stream keeps back only the bytes of a UTF-8 character that later
 * bytes could still complete (at most 3); everything before them is final, because lossy
 * conversion of a byte string is the conversion of its prefix up to such a boundary followed by
 * the conversion of the rest. So the pieces concatenate to exactly the full decode.
 */
#include <string.h>

#include "core/text/tokenizer_impl.h"

/* Whether `id` contributes bytes to a decode. */
static bool rig__decodes(const struct rig_tokenizer *tok, int32_t id, bool skip_special)
{
    if (id < 0 || id >= tok->token_count) return false;
    uint8_t flags = tok->token_flags[id];
    if (!(flags & RIG__TOKEN_EXISTS)) return false;
    return !(skip_special && (flags & RIG__TOKEN_SPECIAL));
}

enum rig_status rig_tokenizer_decode(const struct rig_tokenizer *tok, const int32_t *ids,
                                     size_t count, bool skip_special_tokens,
                                     struct rig_tokenizer_text *out, char *error, size_t error_len)
{
    RIG_ASSERT(tok != NULL);
    RIG_ASSERT(out != NULL && (ids != NULL || count == 0));
    /* Gather the raw bytes after the current text, then convert them in place from the end:
     * lossy conversion needs up to 3 bytes out per byte in, so the bytes go at the far end. */
    size_t raw = 0;
    for (size_t i = 0; i < count; i++) {
        if (rig__decodes(tok, ids[i], skip_special_tokens))
            raw += tok->bytes_offset[ids[i] + 1] - tok->bytes_offset[ids[i]];
    }
    struct rig__tokenizer_error sink = {error, error_len};
    if (raw > SIZE_MAX / 8) return rig__tokenizer_fail(sink, RIG_E_NO_MEMORY, "decode too large");
    enum rig_status status = rig__text_reserve(out, 4 * raw, sink);
    if (status != RIG_OK) return status;
    uint8_t *bytes = (uint8_t *)out->data + out->len + 3 * raw;
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        if (!rig__decodes(tok, ids[i], skip_special_tokens)) continue;
        uint32_t begin = tok->bytes_offset[ids[i]], end = tok->bytes_offset[ids[i] + 1];
        memcpy(bytes + at, tok->bytes + begin, end - begin);
        at += end - begin;
    }
    RIG_ASSERT(at == raw);
    /* Output never overtakes input: after k input bytes at most 3k output bytes are written,
     * and input byte k sits at offset 3 * raw + k >= 3k. */
    out->len += rig__utf8_lossy(bytes, raw, out->data + out->len);
    out->data[out->len] = '\0';
    return RIG_OK;
}

void rig_tokenizer_stream_init(struct rig_tokenizer_stream *stream, const struct rig_tokenizer *tok,
                               bool skip_special_tokens)
{
    RIG_ASSERT(stream != NULL);
    RIG_ASSERT(tok != NULL);
    *stream =
        (struct rig_tokenizer_stream){.tokenizer = tok, .skip_special_tokens = skip_special_tokens};
}

size_t rig_tokenizer_stream_piece_max(const struct rig_tokenizer *tok)
{
    return 3 * ((size_t)tok->token_bytes_max + 3);
}

enum rig_status rig_tokenizer_stream_step(struct rig_tokenizer_stream *stream, int32_t id,
                                          char *piece, size_t capacity, size_t *piece_len,
                                          char *error, size_t error_len)
{
    const struct rig_tokenizer *tok = stream->tokenizer;
    RIG_ASSERT(piece != NULL && piece_len != NULL);
    RIG_ASSERT(stream->pending_len <= 3);
    if (capacity < rig_tokenizer_stream_piece_max(tok) + 1)
        return rig__tokenizer_fail((struct rig__tokenizer_error){error, error_len}, RIG_E_CAPACITY,
                                   "detokenizer piece buffer of %zu bytes is smaller than %zu",
                                   capacity, rig_tokenizer_stream_piece_max(tok) + 1);
    stream->ids_seen++;
    *piece_len = 0;
    piece[0] = '\0';
    if (!rig__decodes(tok, id, stream->skip_special_tokens)) return RIG_OK;
    uint8_t bytes[3 + RIG__TOKEN_BYTES_MAX];
    uint32_t begin = tok->bytes_offset[id], end = tok->bytes_offset[id + 1];
    size_t len = stream->pending_len + (end - begin);
    memcpy(bytes, stream->pending, stream->pending_len);
    memcpy(bytes + stream->pending_len, tok->bytes + begin, end - begin);
    size_t complete = rig__utf8_complete_prefix(bytes, len);
    RIG_ASSERT(len - complete <= 3);
    *piece_len = rig__utf8_lossy(bytes, complete, piece);
    piece[*piece_len] = '\0';
    stream->pending_len = (uint8_t)(len - complete);
    memcpy(stream->pending, bytes + complete, stream->pending_len);
    return RIG_OK;
}

enum rig_status rig_tokenizer_stream_finish(struct rig_tokenizer_stream *stream, char *piece,
                                            size_t capacity, size_t *piece_len, char *error,
                                            size_t error_len)
{
    RIG_ASSERT(piece != NULL && piece_len != NULL);
    if (capacity < 3 * sizeof stream->pending + 1)
        return rig__tokenizer_fail((struct rig__tokenizer_error){error, error_len}, RIG_E_CAPACITY,
                                   "detokenizer piece buffer too small");
    *piece_len = rig__utf8_lossy(stream->pending, stream->pending_len, piece);
    piece[*piece_len] = '\0';
    stream->pending_len = 0;
    return RIG_OK;
}
