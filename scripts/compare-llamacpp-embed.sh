#!/usr/bin/env bash
# Embedding throughput of `strata embed` and llama.cpp's llama-embedding on the same model file,
# texts and thread count, in alternating rounds (one run each per round, so the machine's noise
# falls on both). Each run is timed whole: load, tokenization, every forward pass and output.
# Prints texts/s per round, the medians and strata's ratio.
#
#   scripts/compare-llamacpp-embed.sh LLAMA_EMBEDDING MODEL.gguf TEXTS.txt [-t THREADS] [-r ROUNDS]
#   scripts/compare-llamacpp-embed.sh --make-texts CORPUS.txt N > TEXTS.txt
#
# TEXTS.txt holds one text per line. --make-texts cuts N texts from a corpus, deterministically:
# runs of consecutive non-empty lines of 8 to 160 words (log-uniform, as retrieval chunks vary),
# joined with spaces. It never downloads or builds anything: LLAMA_EMBEDDING is a binary you
# built. STRATA (default build/strata) selects the strata binary; STRATA_ARGS adds flags.
set -euo pipefail

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

if [[ ${1:-} == --make-texts ]]; then
  [[ $# -eq 3 ]] || usage
  exec python3 - "$2" "$3" <<'PY'
import math, random, sys
words = " ".join(l.strip() for l in open(sys.argv[1], encoding="utf-8") if l.strip()).split()
rng = random.Random(0)
at = 0
for _ in range(int(sys.argv[2])):
    n = int(math.exp(rng.uniform(math.log(8), math.log(160))))
    if at + n > len(words):
        at = 0
    print(" ".join(words[at:at + n]))
    at += n
PY
fi

[[ $# -ge 3 ]] || usage
LLAMA_EMBEDDING=$1 MODEL=$2 TEXTS=$3
shift 3
THREADS=$(nproc) ROUNDS=3
while [[ $# -gt 0 ]]; do
  case $1 in
    -t) THREADS=$2; shift 2 ;;
    -r) ROUNDS=$2; shift 2 ;;
    *) usage ;;
  esac
done
STRATA=${STRATA:-build/strata}
for f in "$LLAMA_EMBEDDING" "$STRATA"; do
  [[ -x $f ]] || { echo "error: $f is not an executable" >&2; exit 2; }
done
for f in "$MODEL" "$TEXTS"; do
  [[ -f $f ]] || { echo "error: no file at $f" >&2; exit 2; }
done
N=$(grep -c . "$TEXTS")

# Seconds a command takes, its output discarded.
seconds() {
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || { echo "error: $* failed" >&2; exit 1; }
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { print e - s }'
}

S=() L=()
for ((round = 1; round <= ROUNDS; round++)); do
  # shellcheck disable=SC2086
  s=$(seconds "$STRATA" embed -m "$MODEL" -f "$TEXTS" -t "$THREADS" ${STRATA_ARGS:-})
  l=$(seconds "$LLAMA_EMBEDDING" -m "$MODEL" -f "$TEXTS" -t "$THREADS")
  S+=("$s") L+=("$l")
  awk -v r="$round" -v n="$N" -v s="$s" -v l="$l" 'BEGIN {
    printf "round %d: strata %.2f s (%.1f texts/s), llama-embedding %.2f s (%.1f texts/s)\n", r, s, n / s, l, n / l }'
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ms=$(median "${S[@]}") ml=$(median "${L[@]}")
awk -v r="$ROUNDS" -v n="$N" -v t="$THREADS" -v s="$ms" -v l="$ml" 'BEGIN {
  printf "median over %d rounds, %d texts, %d threads: strata %.1f texts/s, llama-embedding %.1f texts/s, ratio %.2fx\n", r, n, t, n / s, n / l, l / s }'
