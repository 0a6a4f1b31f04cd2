#!/usr/bin/env bash
# Runs `strata eval` and llama-perplexity's KL-divergence mode on the same quantized file,
# reference file and text, and prints both engines' perplexity, KL divergence from the reference
# (mean, p99) and top-1 agreement side by side. Both chunk the text the same way (BOS in place of
# each chunk's first token, the second half of each chunk scored), so the figures compare
# directly.
#
#   scripts/compare-llamacpp-quality.sh LLAMA_PERPLEXITY MODEL.gguf REFERENCE.gguf TEXT [-c 512] [-t THREADS]
#
# It never downloads or builds anything: LLAMA_PERPLEXITY is the path of a llama-perplexity you
# built. STRATA (default build/strata) selects the strata binary. Needs python3.
set -euo pipefail

usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 4 ]] || usage
LLAMA_PERPLEXITY=$1 MODEL=$2 REFERENCE=$3 TEXT=$4
shift 4
CHUNK=512 THREADS=$(nproc)
while [[ $# -gt 0 ]]; do
  case $1 in
    -c) CHUNK=$2; shift 2 ;;
    -t) THREADS=$2; shift 2 ;;
    *) usage ;;
  esac
done
STRATA=${STRATA:-build/strata}
for f in "$LLAMA_PERPLEXITY" "$STRATA"; do
  [[ -x $f ]] || { echo "error: $f is not an executable" >&2; exit 2; }
done
for f in "$MODEL" "$REFERENCE" "$TEXT"; do
  [[ -f $f ]] || { echo "error: no file at $f" >&2; exit 2; }
done
command -v python3 > /dev/null || { echo "error: python3 is needed to read the outputs" >&2; exit 2; }

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$STRATA" eval -m "$MODEL" --reference "$REFERENCE" -f "$TEXT" --chunk "$CHUNK" -t "$THREADS" \
  --json > "$OUT/strata.json"
# llama-perplexity saves the reference's logits first, then compares the model against them.
"$LLAMA_PERPLEXITY" -m "$REFERENCE" -f "$TEXT" -c "$CHUNK" -b "$CHUNK" -t "$THREADS" \
  --kl-divergence-base "$OUT/base.kld" > "$OUT/llama-base.log" 2>&1
"$LLAMA_PERPLEXITY" -m "$MODEL" -f "$TEXT" -c "$CHUNK" -b "$CHUNK" -t "$THREADS" \
  --kl-divergence-base "$OUT/base.kld" --kl-divergence > "$OUT/llama.log" 2>&1

python3 - "$OUT" "$MODEL" "$REFERENCE" "$CHUNK" <<'PY'
import json, re, sys
out, model, reference, chunk = sys.argv[1:5]
s = json.load(open(f"{out}/strata.json"))
log = open(f"{out}/llama.log").read()

def field(pattern):
    m = re.search(pattern, log)
    if not m:
        sys.exit(f"error: llama-perplexity printed no '{pattern}'; its output is in {out}/llama.log")
    return float(m.group(1))

llama = {
    "ppl": field(r"Mean PPL\(Q\)\s*:\s*([0-9.]+)"),
    "kld": field(r"Mean\s+KLD:\s*([0-9.]+)"),
    "kld99": field(r"99\.0%\s+KLD:\s*([0-9.]+)"),
    "top1": field(r"Same top p:\s*([0-9.]+)") / 100,
}
ours = {"ppl": s["perplexity"], "kld": s["kld_mean"], "kld99": s["kld_p99"],
        "top1": s["top1_agreement"]}
print(f"model: {model}, reference: {reference}, {chunk}-token chunks, "
      f"{s['positions']} scored positions")
print("| | strata | llama.cpp |")
print("| --- | ---: | ---: |")
print(f"| perplexity | {ours['ppl']:.4f} | {llama['ppl']:.4f} |")
print(f"| KL divergence mean | {ours['kld']:.6f} | {llama['kld']:.6f} |")
print(f"| KL divergence p99 | {ours['kld99']:.6f} | {llama['kld99']:.6f} |")
print(f"| same top-1 as the reference | {100 * ours['top1']:.2f}% | {100 * llama['top1']:.2f}% |")
PY
