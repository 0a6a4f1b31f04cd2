#!/usr/bin/env bash
# Runs `strata bench` and a llama-bench binary in alternation on the same model file and thread
# count, and prints each engine's prompt-processing (pp) and generation (tg) tokens/s and
# strata's ratio to llama-bench. Alternating rounds (one repetition each) spread the machine's
# noise over both engines instead of handing one of them a quiet minute. Each strata round also
# measures the machine's read bandwidth (STREAM-like), decode's ceiling, and the summary gives
# each engine's generation speed as a share of it: where both sit near the ceiling, the tg ratio
# is bounded by the bandwidth the machine had that minute, not by either engine.
#
#   scripts/compare-llamacpp.sh LLAMA_BENCH MODEL.gguf [-p 512] [-n 128] [-t THREADS] [-r ROUNDS]
#
# It never downloads or builds anything: LLAMA_BENCH is the path of a llama-bench you built.
# STRATA (default build/strata) selects the strata binary; STRATA_ARGS adds flags to its bench
# (e.g. "--simd AVX2" against a llama.cpp built for AVX2 only). Needs python3 for the JSON.
set -euo pipefail

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 2 ]] || usage
LLAMA_BENCH=$1 MODEL=$2
shift 2
PP=512 TG=128 THREADS=$(nproc) ROUNDS=5
while [[ $# -gt 0 ]]; do
  case $1 in
    -p) PP=$2; shift 2 ;;
    -n) TG=$2; shift 2 ;;
    -t) THREADS=$2; shift 2 ;;
    -r) ROUNDS=$2; shift 2 ;;
    *) usage ;;
  esac
done
STRATA=${STRATA:-build/strata}
for f in "$LLAMA_BENCH" "$STRATA"; do
  [[ -x $f ]] || { echo "error: $f is not an executable" >&2; exit 2; }
done
[[ -f $MODEL ]] || { echo "error: no model file at $MODEL" >&2; exit 2; }
command -v python3 > /dev/null || { echo "error: python3 is needed to read the JSON" >&2; exit 2; }

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for ((round = 1; round <= ROUNDS; round++)); do
  echo "round $round/$ROUNDS" >&2
  # shellcheck disable=SC2086  # STRATA_ARGS is a list of flags
  "$STRATA" bench -m "$MODEL" -p "$PP" -n "$TG" -t "$THREADS" -r 1 --json ${STRATA_ARGS:-} \
    > "$OUT/strata.$round.json"
  "$LLAMA_BENCH" -m "$MODEL" -p "$PP" -n "$TG" -t "$THREADS" -r 1 -o json \
    > "$OUT/llama.$round.json" 2> "$OUT/llama.$round.log"
done

python3 - "$OUT" "$ROUNDS" "$MODEL" "$THREADS" <<'PY'
import json, statistics, sys
out, rounds, model, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
strata = {"pp": [], "tg": []}
llama = {"pp": [], "tg": []}
bandwidth = []  # GB/s of the STREAM-like read in each strata round
for r in range(1, rounds + 1):
    s = json.load(open(f"{out}/strata.{r}.json"))
    strata["pp"].append(s["pp_tokens_per_s"])
    strata["tg"].append(s["tg_tokens_per_s"])
    # llama-bench -o json: one entry per test; pp tests have n_gen 0, tg tests n_prompt 0.
    for entry in json.load(open(f"{out}/llama.{r}.json")):
        test = "pp" if entry["n_gen"] == 0 else "tg"
        llama[test].append(entry["avg_ts"])
    bandwidth.append(s["read_bandwidth_gb_s"])
    weight_bytes = s["weight_bytes"]
print(f"model: {model}, threads: {threads}, rounds: {rounds} (median of each engine's rounds)")
print("| test | strata t/s | llama.cpp t/s | strata / llama.cpp |")
print("| --- | ---: | ---: | ---: |")
for test in ("pp", "tg"):
    if not strata[test] or not llama[test]:
        continue
    a, b = statistics.median(strata[test]), statistics.median(llama[test])
    print(f"| {test} | {a:.2f} | {b:.2f} | {a / b:.2f}x |")
# Decode reads every weight once per token: tokens/s * weight bytes is the bandwidth it used.
if strata["tg"] and llama["tg"] and min(bandwidth) > 0:
    ceiling = statistics.median(bandwidth)
    share = lambda tps: 100 * statistics.median(tps) * weight_bytes / 1e9 / ceiling
    print(f"read bandwidth {ceiling:.1f} GB/s (median; rounds {min(bandwidth):.1f}-{max(bandwidth):.1f}); "
          f"tg reads weights at {share(strata['tg']):.0f}% of it (strata) and "
          f"{share(llama['tg']):.0f}% (llama.cpp)")
PY
