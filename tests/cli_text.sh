#!/bin/sh
# cli_text.sh — text in the CLI (tools/rig/text_cli.h) on the simulator with the tiny Qwen3 test
# model: `rig generate --prompt` prints exactly `rig detokenize` of the ids that the same run
# with --prompt-ids (the ids `rig tokenize` gives) prints; `rig shell` fed by a pipe streams an
# answer per line, /reset forgets the history (the same first message gives the same answer
# again), /exit quits before the next line. Usage: cli_text.sh RIG MODEL_DIR TOKENIZER_DIR
set -eu
rig=$1 model=$2 tok=$3
common="--model $model --dummy-weights --tokenizer $tok --max-tokens 12"
for chat in "" "--chat"; do
    text=$("$rig" generate $common --prompt "Once upon a time" $chat)
    ids=$("$rig" tokenize --tokenizer "$tok" $chat "Once upon a time" | tr ' ' ',')
    out=$("$rig" generate $common --prompt-ids "$ids")
    want=$("$rig" detokenize --tokenizer "$tok" "$out")
    [ -n "$text" ] && [ "$text" = "$want" ] || {
        echo "FAIL generate --prompt $chat: '$text' != detokenize '$want' (ids $out)"; exit 1; }
done
echo "ok: rig generate --prompt [--chat] = rig detokenize of the --prompt-ids run"

out=$(printf 'Hello\nTell me more\n/reset\nHello\n/exit\nnever answered\n' |
      "$rig" shell --backend sim $common 2>shell.err)
[ "$(printf '%s\n' "$out" | wc -l)" -eq 4 ] || { echo "FAIL shell lines: '$out'"; exit 1; }
first=$(printf '%s\n' "$out" | sed -n 1p)
second=$(printf '%s\n' "$out" | sed -n 2p)
again=$(printf '%s\n' "$out" | sed -n 4p)
[ "$(printf '%s\n' "$out" | sed -n 3p)" = "(history cleared)" ] || { echo "FAIL /reset"; exit 1; }
[ -n "$first" ] && [ "$first" = "$again" ] || { echo "FAIL: '$first' != '$again'"; exit 1; }
# the first answer is the chat answer to "Hello" alone, as `rig generate --prompt --chat`
# gives it (special tokens skipped by the shell: the tiny model's dummy weights emit none)
alone=$("$rig" generate $common --prompt Hello --chat)
[ "$first" = "$alone" ] || { echo "FAIL shell '$first' != generate '$alone'"; exit 1; }
[ "$second" != "" ] || { echo "FAIL: no second answer"; exit 1; }
grep -q "/exit quits" shell.err || { echo "FAIL: no banner"; cat shell.err; exit 1; }
echo "ok: rig shell streams answers, /reset, /exit"
