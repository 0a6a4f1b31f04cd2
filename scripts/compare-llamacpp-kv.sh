#!/usr/bin/env bash
# What a compressed KV cache costs, in strata and in llama.cpp, on the same model file and text:
# each engine's perplexity with an f16 cache, then per KV type its perplexity, its change
# (ΔPPL) and the KL divergence of its next-token distributions from the f16 cache's, with
# top-1 agreement. llama.cpp runs llama-perplexity --kl-divergence with -ctk/-ctv and flash
# attention (its quantized V cache needs it); strata runs `strata eval` with the model as its own
# reference (--reference-kv-type f16). Both chunk the text the same way (the second half of each
# chunk scored).
#
#   scripts/compare-llamacpp-kv.sh LLAMA_PERPLEXITY MODEL.gguf TEXT [-c 4096] [--chunks N] [-t THREADS]
#
# Rows: q8_0 and q4_0 in both engines; r4, r3 and `--kv-tiers default` in strata alone. It never
# downloads or builds anything: LLAMA_PERPLEXITY is the path of a llama-perplexity you built.
# STRATA (default build/strata) selects the strata binary. Needs python3.
set -euo pipefail

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 3 ]] || usage
LLAMA_PERPLEXITY=$1 MODEL=$2 TEXT=$3
shift 3
CHUNK=4096 CHUNKS=0 THREADS=$(nproc)
while [[ $# -gt 0 ]]; do
  case $1 in
    -c) CHUNK=$2; shift 2 ;;
    --chunks) CHUNKS=$2; shift 2 ;;
    -t) THREADS=$2; shift 2 ;;
    *) usage ;;
  esac
done
STRATA=${STRATA:-build/strata}
for f in "$LLAMA_PERPLEXITY" "$STRATA"; do
  [[ -x $f ]] || { echo "error: $f is not an executable" >&2; exit 2; }
done
for f in "$MODEL" "$TEXT"; do
  [[ -f $f ]] || { echo "error: no file at $f" >&2; exit 2; }
done
command -v python3 > /dev/null || { echo "error: python3 is needed to read the outputs" >&2; exit 2; }
fa_flags() {
  # The help is read whole first: with pipefail, a --help that exits non-zero (llama.cpp's do)
  # would fail the pipe even when grep finds the new spelling.
  local help
  help=$("$1" --help 2>&1 || true)
  if grep -q -- '--flash-attn \[\?\(FA\|on\)' <<< "$help"; then echo "-fa on"; else echo "-fa"; fi
}
FA=$(fa_flags "$LLAMA_PERPLEXITY")
limit=()
[[ $CHUNKS == 0 ]] || limit=(--chunks "$CHUNKS")

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
# shellcheck disable=SC2086  # $FA splits into words on purpose
"$LLAMA_PERPLEXITY" -m "$MODEL" -f "$TEXT" -c "$CHUNK" -b "$CHUNK" -t "$THREADS" "${limit[@]}" $FA \
  --kl-divergence-base "$OUT/base.kld" > "$OUT/llama-f16.log" 2>&1
for type in q8_0 q4_0; do
  # shellcheck disable=SC2086
  "$LLAMA_PERPLEXITY" -m "$MODEL" -f "$TEXT" -c "$CHUNK" -b "$CHUNK" -t "$THREADS" "${limit[@]}" $FA \
    -ctk "$type" -ctv "$type" --kl-divergence-base "$OUT/base.kld" --kl-divergence \
    > "$OUT/llama-$type.log" 2>&1
done
for config in "q8_0:--kv-type q8_0" "r8:--kv-type r8" "q4_0:--kv-type q4_0" "r4:--kv-type r4" "r3:--kv-type r3" \
              "tiers:--kv-tiers default"; do
  name=${config%%:*}
  # shellcheck disable=SC2086  # the flags split into words on purpose
  "$STRATA" eval -m "$MODEL" --reference "$MODEL" --reference-kv-type f16 -f "$TEXT" \
    --chunk "$CHUNK" "${limit[@]}" -t "$THREADS" ${config#*:} --json > "$OUT/strata-$name.json"
done

python3 - "$OUT" "$MODEL" "$CHUNK" <<'PY'
import json, re, sys
out, model, chunk = sys.argv[1:4]

def llama(name):
    log = open(f"{out}/llama-{name}.log").read()
    def field(pattern):
        m = re.search(pattern, log)
        if not m:
            sys.exit(f"error: llama-perplexity printed no '{pattern}':\n{log[-2000:]}")
        return float(m.group(1))
    if name == "f16":
        return {"ppl": field(r"Final estimate: PPL = ([0-9.]+)")}
    return {"ppl": field(r"Mean PPL\(Q\)\s*:\s*([0-9.]+)"), "base": field(r"Mean PPL\(base\)\s*:\s*([0-9.]+)"),
            "kld": field(r"Mean\s+KLD:\s*([0-9.]+)"), "top1": field(r"Same top p:\s*([0-9.]+)") / 100}

def strata(name):
    s = json.load(open(f"{out}/strata-{name}.json"))
    return {"ppl": s["perplexity"], "base": s["reference_perplexity"], "kld": s["kld_mean"],
            "top1": s["top1_agreement"], "positions": s["positions"]}

rows = [("q8_0", "q8_0"), ("r8", None), ("q4_0", "q4_0"), ("r4", None), ("r3", None),
        ("tiers default", None)]
first = strata("q8_0")
print(f"model: {model}, {chunk}-token chunks, {first['positions']} scored positions")
print(f"f16 perplexity: strata {first['base']:.4f}, llama.cpp {llama('f16')['ppl']:.4f}")
print("| KV type | strata ΔPPL | strata KL | strata top-1 | llama.cpp ΔPPL | llama.cpp KL | llama.cpp top-1 |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for label, theirs in rows:
    s = strata(label.split()[0])
    cells = [f"{s['ppl'] - s['base']:+.4f}", f"{s['kld']:.6f}", f"{100 * s['top1']:.2f}%"]
    if theirs:
        l = llama(theirs)
        cells += [f"{l['ppl'] - l['base']:+.4f}", f"{l['kld']:.6f}", f"{100 * l['top1']:.2f}%"]
    else:
        cells += ["-", "-", "-"]
    print(f"| {label} | " + " | ".join(cells) + " |")
PY
