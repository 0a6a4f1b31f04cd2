#!/usr/bin/env bash
# Checks strata against llama.cpp on one model (F16 or any type both read) and a held-out text:
#   a. perplexity of the text from `strata eval` and from llama-perplexity, same chunking (BOS in
#      place of each chunk's first token, the second half of each chunk scored), and their relative
#      difference;
#   b. greedy continuations (64 tokens) of 5 prompts cut from spread-out line starts of the text,
#      by `strata run` and by llama-cli: prompt token ids and generated token ids compared, with the
#      first differing token named (the texts, with builds that log no ids: llama-completion);
#   c. with --prompts FILE.jsonl ({"prompt", "answer", ...} per line, prompts without BOS, as
#      `strata eval --task T --write-prompts FILE.jsonl` writes them): llama-cli answers each prompt
#      greedily; exact match is the generated text, leading whitespace dropped, starting with the
#      answer. strata answers too, or --strata-answers FILE.jsonl gives its answers (one
#      {"generated": TEXT} per line in the same order: the file strata eval wrote when it ran the
#      prompts), and the share of prompts where both give the same answer (the first len(answer)
#      characters) is printed.
#
#   scripts/compare-llamacpp-testbed.sh MODEL.gguf TEXT [-t THREADS] [--chunks N] [--no-ppl]
#       [--no-greedy] [--prompts FILE.jsonl [--strata-answers FILE.jsonl] [-n TOKENS]]
#
# It never downloads or builds anything: LLAMA_PERPLEXITY and LLAMA_CLI (or --llama-perplexity PATH,
# --llama-cli PATH) are the paths of binaries you built. STRATA (default build/strata) selects the
# strata binary. --chunks limits (a) to the first N chunks on both sides. TESTBED_CTX (default 8300)
# is the context for (c). Needs python3.
set -euo pipefail

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 2 ]] || usage
MODEL=$1 TEXT=$2
shift 2
THREADS=$(nproc) CHUNKS=0 DO_PPL=1 DO_GREEDY=1 PROMPTS="" ANSWERS="" NGEN=8
LLAMA_PERPLEXITY=${LLAMA_PERPLEXITY:-} LLAMA_CLI=${LLAMA_CLI:-}
while [[ $# -gt 0 ]]; do
  case $1 in
    -t) THREADS=$2; shift 2 ;;
    -n) NGEN=$2; shift 2 ;;
    --chunks) CHUNKS=$2; shift 2 ;;
    --no-ppl) DO_PPL=0; shift ;;
    --no-greedy) DO_GREEDY=0; shift ;;
    --prompts) PROMPTS=$2; shift 2 ;;
    --strata-answers) ANSWERS=$2; shift 2 ;;
    --llama-perplexity) LLAMA_PERPLEXITY=$2; shift 2 ;;
    --llama-cli) LLAMA_CLI=$2; shift 2 ;;
    *) usage ;;
  esac
done
STRATA=${STRATA:-build/strata}
need=("$STRATA")
[[ $DO_PPL == 0 ]] || need+=("$LLAMA_PERPLEXITY")
[[ $DO_GREEDY == 0 && -z $PROMPTS ]] || need+=("$LLAMA_CLI")
for f in "${need[@]}"; do
  [[ -n $f && -x $f ]] || { echo "error: '$f' is not an executable (set STRATA, LLAMA_PERPLEXITY, LLAMA_CLI)" >&2; exit 2; }
done
for f in "$MODEL" "$TEXT" ${PROMPTS:+"$PROMPTS"} ${ANSWERS:+"$ANSWERS"}; do
  [[ -f $f ]] || { echo "error: no file at $f" >&2; exit 2; }
done
command -v python3 > /dev/null || { echo "error: python3 is needed to read the outputs" >&2; exit 2; }

# strata's f16 KV attention rounds as llama.cpp's CPU flash attention does (docs/numerics.md), so
# llama.cpp runs with it: `-fa` in older trees, `-fa on` where the flag takes a value.
fa_flags() {
  # The help is read whole first: with pipefail, a --help that exits non-zero (llama.cpp's do)
  # would fail the pipe even when grep finds the new spelling.
  local help
  help=$("$1" --help 2>&1 || true)
  if grep -q -- '--flash-attn \[\?\(FA\|on\)' <<< "$help"; then echo "-fa on"; else echo "-fa"; fi
}

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "model: $MODEL, text: $TEXT, threads: $THREADS"

if [[ $DO_PPL == 1 ]]; then
  "$STRATA" eval -m "$MODEL" -f "$TEXT" --chunk 512 --chunks "$CHUNKS" -t "$THREADS" --json \
    > "$OUT/strata-ppl.json"
  limit=()
  [[ $CHUNKS == 0 ]] || limit=(--chunks "$CHUNKS")
  # shellcheck disable=SC2046  # the flags split into words on purpose
  "$LLAMA_PERPLEXITY" -m "$MODEL" -f "$TEXT" -c 512 -b 512 -t "$THREADS" "${limit[@]}" \
    $(fa_flags "$LLAMA_PERPLEXITY") \
    > "$OUT/llama-ppl.log" 2>&1
  python3 - "$OUT" <<'PY'
import json, re, sys
out = sys.argv[1]
s = json.load(open(f"{out}/strata-ppl.json"))
log = open(f"{out}/llama-ppl.log").read()
m = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", log)
if not m:
    sys.exit("error: llama-perplexity printed no final estimate:\n" + log[-2000:])
n = re.search(r"calculating perplexity over (\d+) chunks", log)
ours, theirs = s["perplexity"], float(m.group(1))
print(f"\n## a. perplexity, 512-token chunks ({s['sequences']} chunks by strata, "
      f"{n.group(1) if n else '?'} by llama.cpp, {s['positions']} scored positions)")
print("| | strata | llama.cpp |\n| --- | ---: | ---: |")
print(f"| perplexity | {ours:.4f} ± {s['perplexity_std_error']:.4f} | {theirs:.4f} ± {m.group(2)} |")
print(f"relative difference (strata / llama.cpp - 1): {100 * (ours / theirs - 1):+.4f}%")
PY
fi

# Runs both engines greedily on prompts; prints per-prompt verdicts (mode greedy) or answer scores.
cat > "$OUT/drive.py" <<'PY'
import json, os, re, subprocess, sys, tempfile
strata, llama, model, threads, mode, src, ngen, answers, fa = sys.argv[1:10]
ngen = int(ngen)

def sh(cmd):
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True)
    if r.returncode:
        sys.exit(f"error: {cmd[0]} exited {r.returncode}:\n{r.stderr.decode(errors='replace')[-2000:]}")
    return r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")

def ids_of(listing):  # llama.cpp's "[ 'piece':id, ... ]"
    return [int(x) for x in re.findall(r"':(\d+)(?=, '|\s*\]$)", listing.strip())]

def run_llama(prompt, n, ctx, ids=True):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(prompt)
    # -v logs the prompt's ids ("tokens: [...]") and every batch it evaluates ("eval: [...]"); the
    # last sampled token is never evaluated, so one more is asked for than is kept (and the text
    # then has that one more token).
    out, err = sh([llama, "-m", model, "-f", f.name, "-n", str(n + ids), "-c", str(ctx),
                   "-t", threads, "--temp", "0", "--top-k", "1", "--repeat-penalty", "1",
                   "--seed", "1", "-no-cnv", "--no-display-prompt", "--no-escape", "--no-warmup",
                   ] + fa.split() + ["-v"] * ids)
    os.unlink(f.name)
    m = re.search(r"^tokens: (\[.*\])$", err, re.M)
    prompt_ids = ids_of(m.group(1)) if m else []
    seen = [t for e in re.findall(r"^eval: (\[.*\])$", err, re.M) for t in ids_of(e)]
    gen = seen[len(prompt_ids):][:n]
    eos = "[end of text]" in out
    text = out.replace(" [end of text]\n", "")
    return prompt_ids, gen, eos, text

def run_strata(prompt, n, ctx, ids):
    extra = ["--ids"] if ids else []
    out, err = sh([strata, "run", "-m", model, "-p", prompt, "-n", str(n), "-c", str(ctx), "-t",
                   threads, "--temp", "0"] + extra)
    eos = "finish: stop" in err or "finish: eos" in err
    return [int(x) for x in out.split()] if ids else out.rstrip("\n"), eos

def piece(i):
    return sh([strata, "detokenize", "-m", model, str(i)])[0].rstrip("\n")

if mode == "greedy":
    lines = [l for l in open(src, encoding="utf-8").read().split("\n") if len(l.split()) >= 24]
    picks = [lines[len(lines) * k // 5] for k in range(5)]
    same = 0
    print(f"\n## b. greedy continuations, {ngen} tokens, 5 prompts (first 20 words of lines)")
    for k, line in enumerate(picks):
        prompt = line[:re.match(r"(\s*\S+){20}", line).end()]
        sp = [int(x) for x in sh([strata, "tokenize", "-m", model, "-p", prompt, "--ids"])[0].split()]
        lp, lg, leos, _ = run_llama(prompt, ngen, 512)
        if not lp:
            # Newer llama.cpp builds (llama-completion) log no token ids: compare the texts of
            # exactly ngen tokens instead.
            ltext = run_llama(prompt, ngen, 512, False)[3]
            stext = run_strata(prompt, ngen, 512, False)[0]
            print(f"\nprompt {k + 1}: {prompt!r} (llama.cpp logs no ids: texts compared)")
            if ltext.rstrip() == stext.rstrip():  # llama-completion ends with its own newlines
                same += 1
                print(f"  identical: {stext!r}")
            else:
                d = next((i for i, (a, b) in enumerate(zip(stext, ltext)) if a != b),
                         min(len(stext), len(ltext)))
                print(f"  DIFFER at character {d}:\n  strata:    {stext!r}\n  llama.cpp: {ltext!r}")
            continue
        sg, seos = run_strata(prompt, ngen, 512, True)
        stext, _ = run_strata(prompt, ngen, 512, False)
        print(f"\nprompt {k + 1} ({len(sp)} tokens with BOS): {prompt!r}")
        if sp != lp:
            d = next((i for i, (a, b) in enumerate(zip(sp, lp)) if a != b), min(len(sp), len(lp)))
            print(f"  prompt tokens DIFFER at {d}: strata {sp[d:d + 4]}, llama.cpp {lp[d:d + 4]}")
        if sg == lg and seos == leos:
            same += 1
            print(f"  identical ({len(sg)} tokens{', then EOS' if seos else ''}): {stext!r}")
            continue
        d = next((i for i, (a, b) in enumerate(zip(sg, lg)) if a != b), min(len(sg), len(lg)))
        a = f"{sg[d]} {piece(sg[d])!r}" if d < len(sg) else "EOS" if seos else "end"
        b = f"{lg[d]} {piece(lg[d])!r}" if d < len(lg) else "EOS" if leos else "end"
        print(f"  DIFFER at generated token {d}: strata {a}, llama.cpp {b}")
        print(f"  strata:    {stext!r}\n  llama.cpp: {run_llama(prompt, ngen, 512, False)[3]!r}")
    print(f"\ngreedy: {same} of 5 identical")
else:
    rows = [json.loads(l) for l in open(src, encoding="utf-8") if l.strip()]
    theirs = None
    if answers:
        recs = [json.loads(l) for l in open(answers, encoding="utf-8") if l.strip()]
        theirs = [next(r[k] for k in ("generated", "output", "text") if k in r) for r in recs]
        if len(theirs) != len(rows):
            sys.exit(f"error: {len(theirs)} answers for {len(rows)} prompts")
    hit_l = hit_s = agree = 0
    print(f"\n## c. prompts from {src}: {len(rows)}, {ngen} tokens generated each")
    print("| # | length | depth | answer | llama.cpp | strata |\n| ---: | ---: | ---: | --- | --- | --- |")
    for k, r in enumerate(rows):
        ans = str(r["answer"])
        ctx = int(os.environ.get("TESTBED_CTX", "8300"))  # prompts are up to 8,192 tokens
        lt = run_llama(r["prompt"], ngen, ctx, False)[3]
        st = theirs[k] if theirs is not None else run_strata(r["prompt"], ngen, ctx, False)[0]
        la, sa = lt.lstrip()[:len(ans)], st.lstrip()[:len(ans)]
        hit_l += la == ans
        hit_s += sa == ans
        agree += la == sa
        print(f"| {k + 1} | {r.get('length', '')} | {r.get('depth', '')} | {ans} | "
              f"{lt.strip()[:24]!r} | {st.strip()[:24]!r} |")
    n = max(len(rows), 1)
    print(f"\nexact match: llama.cpp {hit_l}/{len(rows)} ({100 * hit_l / n:.1f}%), "
          f"strata {hit_s}/{len(rows)} ({100 * hit_s / n:.1f}%); "
          f"same answer: {agree}/{len(rows)} ({100 * agree / n:.1f}%)")
PY

if [[ $DO_GREEDY == 1 ]]; then
  python3 "$OUT/drive.py" "$STRATA" "$LLAMA_CLI" "$MODEL" "$THREADS" greedy "$TEXT" 64 "" \
    "$(fa_flags "$LLAMA_CLI")"
fi
if [[ -n $PROMPTS ]]; then
  python3 "$OUT/drive.py" "$STRATA" "$LLAMA_CLI" "$MODEL" "$THREADS" answers "$PROMPTS" "$NGEN" \
    "$ANSWERS" "$(fa_flags "$LLAMA_CLI")"
fi
