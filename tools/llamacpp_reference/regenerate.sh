#!/bin/bash
# Rewrites tests/model/reference/ARCH.json for the given architectures (default: all of them)
# from the reference engine: llama.cpp tag v0.5.0, as node-llama-cpp 3.22.1 ships it prebuilt.
#
#   PEER=DIR tools/llamacpp_reference/regenerate.sh [ARCH...]
#
# DIR is a folder where `npm install node-llama-cpp@3.22.1` was run; build/strata must be built.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${PEER:?set PEER to the folder holding node_modules/node-llama-cpp}"
STRATA=${STRATA:-build/strata}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ARCHS=("$@")
[ ${#ARCHS[@]} -gt 0 ] || ARCHS=(llama gemma gemma2 gemma3 smollm3 granite mistral3 phi3 olmo2)
for arch in "${ARCHS[@]}"; do
  file="$TMP/$arch.gguf"
  "$STRATA" synth --arch "$arch" --preset tiny-gqa --type F32 --seed 0 -o "$file" 2>/dev/null
  ids=$("$STRATA" tokenize -m "$file" -p "$(cat tools/llamacpp_reference/prompt.txt)" 2>/dev/null |
        awk '{print $1}' | paste -sd,)
  NODE_PATH="$PEER/node_modules" node tools/llamacpp_reference/reference.mjs "$file" "$ids" 64 \
    > "tests/model/reference/$arch.json"
  echo "wrote tests/model/reference/$arch.json"
done

# Embeddings: a llama file with mean pooling, a qwen3 file with last-token pooling
# (Qwen3-Embedding's), encoders with BERT's WordPiece vocabulary: bert with CLS pooling (bge's)
# and nomic-bert with mean pooling (nomic-embed-text's). The 20 texts of texts.txt; the encoders
# also embed prompt.txt, longer than a step's token budget, which they must run in one batch.
BERT_VOCAB=../shared/testdata/vocab/ggml-vocab-bert-bge.gguf
for spec in llama:1 qwen3:3 bert:2 nomic-bert:1; do
  arch=${spec%:*}
  file="$TMP/$arch-embed.gguf"
  vocab=()
  texts=(tools/llamacpp_reference/texts.txt)
  if [[ $arch == *bert ]]; then
    vocab=(--vocab "$BERT_VOCAB")
    texts+=(tools/llamacpp_reference/prompt.txt)
  fi
  "$STRATA" synth --arch "$arch" --preset tiny-gqa --type F32 --seed 0 --pooling-type "${spec#*:}" \
    "${vocab[@]}" -o "$file" 2>/dev/null
  {
    sep="["
    while IFS= read -r text; do
      ids=$("$STRATA" tokenize -m "$file" -p "$text" 2>/dev/null | awk '{print $1}' | paste -sd,)
      printf '%s[%s]' "$sep" "$ids"
      sep=","
    done < <(cat "${texts[@]}")
    echo "]"
  } > "$TMP/prompts.json"
  NODE_PATH="$PEER/node_modules" node tools/llamacpp_reference/embeddings.mjs "$file" \
    "$TMP/prompts.json" > "tests/engine/reference/embeddings-$arch.json"
  echo "wrote tests/engine/reference/embeddings-$arch.json"
done
