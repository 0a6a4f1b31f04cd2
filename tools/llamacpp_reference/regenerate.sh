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

# Embeddings: a llama file with mean pooling and a qwen3 file with last-token pooling
# (Qwen3-Embedding's), on the 20 texts of texts.txt.
for spec in llama:1 qwen3:3; do
  arch=${spec%:*}
  file="$TMP/$arch-embed.gguf"
  "$STRATA" synth --arch "$arch" --preset tiny-gqa --type F32 --seed 0 --pooling-type "${spec#*:}" \
    -o "$file" 2>/dev/null
  {
    sep="["
    while IFS= read -r text; do
      ids=$("$STRATA" tokenize -m "$file" -p "$text" 2>/dev/null | awk '{print $1}' | paste -sd,)
      printf '%s[%s]' "$sep" "$ids"
      sep=","
    done < tools/llamacpp_reference/texts.txt
    echo "]"
  } > "$TMP/prompts.json"
  NODE_PATH="$PEER/node_modules" node tools/llamacpp_reference/embeddings.mjs "$file" \
    "$TMP/prompts.json" > "tests/engine/reference/embeddings-$arch.json"
  echo "wrote tests/engine/reference/embeddings-$arch.json"
done
