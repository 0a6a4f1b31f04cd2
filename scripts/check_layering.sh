#!/usr/bin/env bash
# The layering of README.md's layout table, checked over every `#include "..."` line: a library
# under src/ includes only its own folder and the libraries it may use; a public header
# (include/strata/) counts as part of the library that implements it; server/, bench/ and cli/
# include the public API and their own folder (cli also the server and bench it runs). Only
# tests (tests/, benchmarks/, fuzz/) include the scalar twins in src/kernels/reference/.
# Prints FILE:LINE, the include and the rule it breaks; exits 1 when there is any.
set -euo pipefail
cd "$(dirname "$0")/.."

# What each folder may include besides itself: the table's "uses" column with what those use in
# turn (a library sees its dependencies' headers).
declare -A uses=(
  [base]=""
  [platform]="base"
  [kernels]="base platform"
  [gguf]="base platform"
  [quant]="base platform kernels gguf"
  [tokenizer]="base platform gguf"
  [kv]="base platform kernels"
  [model]="base platform kernels gguf kv"
  [sampling]="base platform kernels gguf tokenizer"
  [grammar]="base platform kernels gguf tokenizer"
  [chat]="base platform kernels gguf tokenizer grammar"
  [engine]="base platform kernels gguf quant tokenizer kv model sampling grammar chat"
  [server]=""
  [bench]=""
  [cli]="server bench"
)
apps=" server bench cli "

# The library each public header belongs to. The small vocabulary headers (std only) sit with
# base so that any library may use them; a new header must be added here.
declare -A owner=(
  [result.h]=base [threads.h]=base [compile_budget.h]=base [json_depth.h]=base
  [output_constraint.h]=base [log.h]=base
  [model_tools.h]=quant
  [chat.h]=chat [tool_calls.h]=chat
  [tokenizer.h]=engine [engine.h]=engine [structured.h]=engine
)

rule() {
  local layer=$1
  if [[ $apps == *" $layer "* ]]; then
    echo "$layer/ may include only strata/ (the public API), its own folder${uses[$layer]:+ and ${uses[$layer]// /, }}"
  else
    echo "$layer may include only ${uses[$layer]:+${uses[$layer]// /, }, }its own folder and public headers of those"
  fi
}

allowed() {  # allowed LAYER FOLDER
  [[ $1 == "$2" || " ${uses[$1]} " == *" $2 "* ]]
}

status=0
report() {
  echo "$1: $2" >&2
  status=1
}

while IFS= read -r file; do
  case $file in
    src/*) layer=${file#src/}; layer=${layer%%/*} ;;
    include/strata/*)
      layer=${owner[${file#include/strata/}]:-}
      if [[ -z $layer ]]; then
        report "$file:1" "a public header the layering check does not know: add it to owner in $0"
        continue
      fi
      ;;
    server/* | bench/* | cli/*) layer=${file%%/*} ;;
    *) continue ;;
  esac
  [[ -v "uses[$layer]" ]] || { report "$file:1" "folder '$layer' is not in the layering table of $0"; continue; }
  while IFS= read -r hit; do
    line=${hit%%:*}
    [[ $hit =~ \"([^\"]*)\" ]] || continue
    path=${BASH_REMATCH[1]}
    folder=${path%%/*}
    [[ $path == */* ]] || continue  # a file beside this one
    if [[ $folder == strata ]]; then
      [[ $apps == *" $layer "* ]] && continue
      header=${path#strata/}
      header_owner=${owner[$header]:-}
      if [[ -z $header_owner ]]; then
        report "$file:$line" "#include \"$path\": unknown public header (add it to owner in $0)"
      elif ! allowed "$layer" "$header_owner"; then
        report "$file:$line" "#include \"$path\" (part of $header_owner): $(rule "$layer")"
      fi
      continue
    fi
    [[ -v "uses[$folder]" ]] || continue  # not strata's (hwy/, nlohmann/, ...)
    if ! allowed "$layer" "$folder"; then
      report "$file:$line" "#include \"$path\": $(rule "$layer")"
    elif [[ $path == kernels/reference/* && $file != src/kernels/reference/* ]]; then
      report "$file:$line" "#include \"$path\": the scalar twins in kernels/reference/ are test oracles; production code does not call them"
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
done < <(git ls-files --cached --others --exclude-standard -- src include server bench cli |
         grep -E '\.(h|cc|h\.in)$')

if [[ $status == 0 ]]; then echo "layering: every #include follows the layout table (README.md)"; fi
exit $status
