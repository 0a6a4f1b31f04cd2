#!/usr/bin/env bash
# Runs one node:test file of this folder for ctest: run_test.sh FILE [PROGRAM...].
# Exits 77 (ctest's SKIP_RETURN_CODE) with a message when node, this folder's npm packages
# (`npm ci`, done by `make deps`), the model or a PROGRAM the test drives (curl, chromium,
# prometheus) is missing, so that a machine without them skips these tests instead of failing.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
file="$1"
shift
skip() {
  echo "SKIP $file: $*" >&2
  exit 77
}
command -v node > /dev/null || skip "node is not installed (scripts/install-deps.sh installs it)"
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 18 ] || skip "node $major is too old; the tests need node 18 or later"
[ -d "$here/node_modules/openai" ] && [ -d "$here/node_modules/playwright-core" ] \
  || skip "no node_modules in tests/server/js; run: (cd tests/server/js && npm ci)"
model="${STRATA_MODEL:-../shared/models/stories260K.gguf}"
[ -f "$model" ] || skip "no model at $model (set STRATA_MODEL)"
for program in "$@"; do
  command -v "$program" > /dev/null || skip "$program is not installed (scripts/install-deps.sh)"
done
exec node --test "$here/$file"
