#!/usr/bin/env bash
# Thirty-odd command lines and requests as llama.cpp and ollama users type them, against
# stories260K: each either works (exit 0, HTTP 200) or is refused with exactly one clear line
# (exit 2 and one `error:` line on stderr; an HTTP 4xx whose JSON names the problem). Prints one
# line per case and fails on the first that does neither.
#   habits_test.sh STRATA_BIN
set -uo pipefail
strata=$1
model=../shared/models/stories260K.gguf
command -v curl > /dev/null || { echo "SKIP: curl is not installed" >&2; exit 77; }
[ -f "$model" ] || { echo "SKIP: no model at $model" >&2; exit 77; }
tmp=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2> /dev/null && wait "$server_pid" 2> /dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
n=0

# works NAME -- COMMAND...: exit 0.
works() {
  local name=$1
  shift 2
  n=$((n + 1))
  if ! timeout 120 "$@" < /dev/null > "$tmp/out" 2> "$tmp/err"; then
    echo "FAIL $n $name: exit $?"; cat "$tmp/err"; exit 1
  fi
  printf 'ok   %2d %s\n' "$n" "$name"
}

# refused NAME TEXT -- COMMAND...: exit 2, exactly one stderr line, `error: ...TEXT...`.
refused() {
  local name=$1 text=$2
  shift 3
  n=$((n + 1))
  timeout 120 "$@" < /dev/null > "$tmp/out" 2> "$tmp/err"
  local code=$?
  if [ "$code" -ne 2 ] || [ "$(wc -l < "$tmp/err")" -ne 1 ] ||
    ! grep -q "^error: .*$text" "$tmp/err"; then
    echo "FAIL $n $name: exit $code, stderr:"; cat "$tmp/err"; exit 1
  fi
  printf 'no   %2d %s: %s\n' "$n" "$name" "$(cat "$tmp/err")"
}

# http NAME STATUS TEXT -- CURL ARGS...: the status, and TEXT in the body.
http() {
  local name=$1 status=$2 text=$3
  shift 4
  n=$((n + 1))
  local got
  got=$(curl -sS -o "$tmp/body" -w '%{http_code}' --max-time 60 "$@")
  if [ "$got" != "$status" ] || ! grep -q -- "$text" "$tmp/body"; then
    echo "FAIL $n $name: HTTP $got"; head -c 400 "$tmp/body"; echo; exit 1
  fi
  printf '%-4s %2d %s\n' "$([ "$status" = 200 ] && echo ok || echo no)" "$n" "$name"
}

echo "Once upon a time" > "$tmp/prompt.txt"
works "llama-cli -p -n" -- "$strata" run -m "$model" -p "Once upon a time" -n 16
works "-n -1 (until the context ends)" -- "$strata" run -m "$model" -p "Once" -n -1 -c 64
works "-ngl 99 (GPU layers: a warning)" -- "$strata" run -m "$model" -ngl 99 -p "Once" -n 4
works "-fa on" -- "$strata" run -m "$model" -fa on -p "Once" -n 4
works "-f prompt.txt" -- "$strata" run -m "$model" -f "$tmp/prompt.txt" -n 4
works "prompt on stdin (-p -)" -- bash -c "'$strata' run -m '$model' -p - -n 4 < '$tmp/prompt.txt'"
works "prompt piped" -- bash -c "echo Once | '$strata' run -m '$model' -n 4"
works "--ctx-size --threads" -- "$strata" run -m "$model" --ctx-size 128 --threads 2 -p "Once" -n 4
works "-e escapes" -- "$strata" run -m "$model" -e -p 'Once\nupon' -n 4
works "sampling flags" -- "$strata" run -m "$model" --temp 0.7 --top-k 40 --top-p 0.9 \
  --min-p 0.05 --repeat-penalty 1.1 --seed 1 -p "Once" -n 4
works "-cnv --jinja" -- "$strata" run -m "$model" -cnv --jinja -p "Once" -n 4
works "-ctk q8_0 -ctv q8_0" -- "$strata" run -m "$model" -ctk q8_0 -ctv q8_0 -p "Once" -n 4
refused "an unknown flag" "--nonsense" -- "$strata" run -m "$model" --nonsense -p "Once"
refused "-n abc" "-n" -- "$strata" run -m "$model" -n abc -p "Once"
refused "a missing model file" "/nonexistent.gguf" -- "$strata" run -m /nonexistent.gguf -p x
refused "-hf (llama.cpp downloads)" "strata pull" -- "$strata" serve -m "$model" -hf org/repo
works "llama-quantize to Q8_0" -- "$strata" quantize "$model" "$tmp/q8.gguf" Q8_0
refused "requantizing" "allow-requantize" -- "$strata" quantize "$tmp/q8.gguf" "$tmp/q4.gguf" Q4_0
works "info (gguf-dump)" -- "$strata" info -m "$model"
works "llama-bench" -- "$strata" bench -m "$model" -p 16 -n 8 -r 1
works "llama-tokenize" -- "$strata" tokenize -m "$model" -p "Hello world"
refused "embeddings without pooling" "--pooling" -- "$strata" embed -m "$model" -f "$tmp/prompt.txt"
works "embeddings with --pooling mean" -- "$strata" embed -m "$model" -f "$tmp/prompt.txt" --pooling mean
works "--version" -- "$strata" --version

# llama-server and ollama habits against one server.
"$strata" serve -m "$model" --port 0 --alias stories -np 2 2> "$tmp/serve.log" &
server_pid=$!
for _ in $(seq 100); do
  url=$(grep -o 'http://[0-9.]*:[0-9]*' "$tmp/serve.log" | head -1)
  [ -n "$url" ] && curl -sf "$url/health" > /dev/null && break
  sleep 0.1
done
[ -n "${url:-}" ] || { echo "FAIL: the server did not start"; cat "$tmp/serve.log"; exit 1; }
json=(-H 'Content-Type: application/json')
http "GET /health" 200 ok -- "$url/health"
http "GET /v1/models" 200 stories -- "$url/v1/models"
http "POST /v1/chat/completions, streamed" 200 "data: \[DONE\]" -- "${json[@]}" "$url/v1/chat/completions" \
  -d '{"model":"stories","messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true}'
http "POST /v1/completions" 200 '"text"' -- "${json[@]}" "$url/v1/completions" \
  -d '{"model":"stories","prompt":"Once upon a time","max_tokens":8}'
http "POST /completion (llama-server's)" 404 "use /v1/completions" -- "${json[@]}" "$url/completion" -d '{"prompt":"x"}'
http "GET /props" 200 total_slots -- "$url/props"
http "GET /slots" 200 is_processing -- "$url/slots"
http "ollama: GET /api/tags" 200 models -- "$url/api/tags"
http "ollama: POST /api/generate" 200 '"done":true' -- "${json[@]}" "$url/api/generate" \
  -d '{"model":"stories","prompt":"Once","stream":false,"options":{"num_predict":8}}'
http "ollama: POST /api/chat, streamed" 200 '"done":true' -- "${json[@]}" "$url/api/chat" \
  -d '{"model":"stories","messages":[{"role":"user","content":"Hi"}],"options":{"num_predict":8}}'
http "malformed JSON" 400 '"message"' -- "${json[@]}" "$url/v1/chat/completions" -d '{"model":'
http "a wrong method" 405 '"message"' -- -X DELETE "$url/v1/completions"
echo "$n cases: each works or is refused with one clear line"
