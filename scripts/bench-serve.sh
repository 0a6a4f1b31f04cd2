#!/usr/bin/env bash
# Serving benchmark: starts `strata serve` on MODEL with 16 sequence slots and measures aggregate
# generation tokens/s, time to first token and inter-token latency at 1, 4, 8 and 16 concurrent
# streams (scripts/bench_serve_client.py, through the HTTP API as clients see it).
#
# Usage: scripts/bench-serve.sh MODEL [STRATA_BIN] [extra strata serve flags...]
# Env: TOKENS (per stream, default 64), CONCURRENCY (default 1,4,8,16), ROUNDS (default 2),
# SCHEMA (a JSON Schema file: every stream constrained to it, to see what masks cost the step).
set -euo pipefail
model=${1:?usage: bench-serve.sh MODEL [STRATA_BIN] [serve flags...]}
bin=${2:-build/strata}
shift $(( $# >= 2 ? 2 : 1 ))
here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp /tmp/strata-bench-serve.XXXXXX)
"$bin" serve -m "$model" --port 0 --parallel 16 --max-queue 0 -c 512 "$@" 2> "$log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 600); do
  url=$(grep -o 'listening on http://[^ ]*' "$log" | sed 's/listening on //') || true
  [ -n "${url:-}" ] && break
  kill -0 $server 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.5
done
[ -n "${url:-}" ] || { echo "strata serve did not start" >&2; cat "$log"; exit 1; }
grep -v '^listening' "$log" >&2 || true
python3 "$here/bench_serve_client.py" "$url" --tokens "${TOKENS:-64}" \
  --concurrency "${CONCURRENCY:-1,4,8,16}" --rounds "${ROUNDS:-2}" \
  ${SCHEMA:+--json-schema "$SCHEMA"}
