#!/usr/bin/env bash
# `make install` as a user runs it: cmake --install of the build into a fresh PREFIX, then the
# installed binary names its version and commit, the man page documents the subcommands, the
# bash completion completes subcommands, flags (read from --help) and files, and the systemd
# unit starts the installed binary. Exits 77 (skipped) without help2man or bash-completion.
#   install_test.sh BUILD_DIR
set -euo pipefail
build=$1
command -v help2man > /dev/null || { echo "SKIP: help2man is not installed" >&2; exit 77; }
helpers=/usr/share/bash-completion/bash_completion
[ -f "$helpers" ] || { echo "SKIP: bash-completion is not installed" >&2; exit 77; }
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --build "$build" --target strata_man > /dev/null
cmake --install "$build" --prefix "$prefix" > /dev/null

fail() { echo "FAIL: $*" >&2; exit 1; }
version=$("$prefix/bin/strata" --version)
[[ $version =~ ^strata\ [0-9]+\.[0-9]+\.[0-9]+\ \((unknown|[0-9a-f]{12}\+?)\)$ ]] ||
  fail "--version printed '$version'"

man=$prefix/share/man/man1/strata.1
[ -f "$man" ] || fail "no man page at $man"
grep -q '^\.TH STRATA "1"' "$man" || fail "the man page has no .TH header"
for sub in run serve embed quantize; do grep -q "$sub" "$man" || fail "the man page omits $sub"; done

unit=$prefix/lib/systemd/system/strata.service
grep -qx "ExecStart=$prefix/bin/strata serve \$STRATA_ARGS" "$unit" || fail "unit: $(grep ExecStart "$unit")"

# Completion: what bash would offer after `strata se<TAB>` and `strata serve --chat<TAB>`.
complete_words() {
  PATH="$prefix/bin:$PATH" bash -c '
    source "$1"; source "$2"; shift 2
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    _strata strata "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf "%s\n" "${COMPREPLY[@]}"' _ "$helpers" "$prefix/share/bash-completion/completions/strata" "$@"
}
[[ $(complete_words strata se) == serve ]] || fail "strata se<TAB> gave '$(complete_words strata se)'"
complete_words strata serve --chat | grep -qx -- --chat-template ||
  fail "strata serve --chat<TAB> gave '$(complete_words strata serve --chat)'"
complete_words strata embed --js | grep -qx -- --json || fail "strata embed --js<TAB>"
echo "installed binary, man page, completion and unit work"
