#!/bin/sh
# Trains the draft and the target side by side, one thread each (with THREADS=2 the target goes
# on with two threads once the draft is done), then fine-tunes the target for multikey retrieval
# (FINETUNE: each config starts from the run before it, exported as $WORK/runs/RUN/target.gguf).
# Then plots the loss curves and writes models/testbed/.
# Resumable: after an interruption (Ctrl-C, kill, reboot) run the same command again; each model
# restarts from its last checkpoint (at most checkpoint_every_s old) and finishes as it would have.
#
#   tools/train/train-all.sh            # WORK=/work/train-data by default
#   TARGET=configs/smoke.json DRAFT=configs/smoke-draft.json REPO=/tmp/smoke-repo \
#     tools/train/train-all.sh       # the two-minute check of the whole sequence
set -eu
cd "$(dirname "$0")"
PY=/usr/bin/python3
WORK=${WORK:-/work/train-data}
TARGET=${TARGET:-configs/target.json}
DRAFT=${DRAFT:-configs/draft.json}
# Fine-tunes in order, each from the one before; FINETUNE= (empty) skips them.
FINETUNE=${FINETUNE-configs/target-multikey.json configs/target-multikey2.json}
NICE=${NICE:-10}
REPO=${REPO:-$(cd ../.. && pwd)}  # where models/testbed/ is written
# Threads for the target once the draft is done. 1 by default: on a loaded 2-core machine two
# OpenBLAS threads ran a smoke model 5x slower per CPU-second; try THREADS=2 on an idle one.
THREADS=${THREADS:-1}
mkdir -p "$WORK/logs"

# train CONFIG THREADS: in the background; $! is the python process itself (exec), so a TERM
# reaches its handler, which writes a checkpoint before it exits.
train() {
  ( export OMP_NUM_THREADS="$2" OPENBLAS_NUM_THREADS="$2"
    exec nice -n "$NICE" "$PY" main.py --work "$WORK" train "$1" --threads "$2" \
      >> "$WORK/logs/$(basename "$1" .json).log" 2>&1 ) &
}

[ -f "$WORK/data/train.npy" ] || { echo "error: run the corpus and tokenizer steps first (README)" >&2; exit 2; }
echo "$(date -u +%T) training; logs in $WORK/logs/"
train "$DRAFT" 1; D=$!
train "$TARGET" 1; T=$!
trap 'kill -TERM $D $T 2>/dev/null; wait; echo "interrupted; run again to resume" >&2; exit 130' INT TERM
wait $D || { echo "error: the draft failed, see $WORK/logs/" >&2; kill -TERM $T; wait; exit 1; }
if [ "$THREADS" -gt 1 ]; then
  echo "$(date -u +%T) draft done; target continues on $THREADS threads"
  kill -TERM $T 2>/dev/null || true
  wait $T || true
  train "$TARGET" "$THREADS"; T=$!
else
  echo "$(date -u +%T) draft done"
fi
wait $T || { echo "error: the target failed, see $WORK/logs/" >&2; exit 1; }
trap - INT TERM
echo "$(date -u +%T) target done"
FINAL=$(basename "$TARGET" .json)
for STEP in $FINETUNE; do  # each fine-tune starts from the previous run's export
  # Named as the manifest step names the target, so the file is the one a manifest of that
  # run recorded (same sha256): the fine-tune's entry then says how its base was trained.
  "$PY" main.py --work "$WORK" export "$FINAL" "$WORK/runs/$FINAL/target.gguf" \
    --gguf-name strata-testbed-target
  RUNS="${RUNS:-} $FINAL"
  train "$STEP" "$THREADS"; T=$!
  trap 'kill -TERM $T 2>/dev/null; wait; echo "interrupted; run again to resume" >&2; exit 130' INT TERM
  wait $T || { echo "error: the fine-tune $STEP failed, see $WORK/logs/" >&2; exit 1; }
  trap - INT TERM
  FINAL=$(basename "$STEP" .json)
  echo "$(date -u +%T) fine-tune $FINAL done"
done
mkdir -p "$REPO/models/testbed"
# shellcheck disable=SC2086  # RUNS: the target and each fine-tune but the last, by name
"$PY" main.py --work "$WORK" plot "$REPO/models/testbed/loss.png" ${RUNS:-} "$FINAL" \
  "$(basename "$DRAFT" .json)"
"$PY" main.py --work "$WORK" manifest --repo "$REPO" --target "$FINAL" \
  --draft "$(basename "$DRAFT" .json)"
