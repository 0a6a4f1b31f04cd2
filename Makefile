# Entry points for a fresh Debian 12 machine; see README.md.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
DEFAULT_MODEL := ../shared/models/stories260K.gguf
MODEL ?= $(if $(STRATA_MODEL),$(STRATA_MODEL),$(DEFAULT_MODEL))
PROMPT ?= Once upon a time

.PHONY: deps packages js-packages configure build run test install clean format format-check lint

deps: packages js-packages

packages:
	@bash scripts/install-deps.sh

# npm ci installs the server tests' node packages (tests/server/js) when its lock file is newer
# than the installed ones; without network those tests are skipped, not failed.
JS_TESTS := tests/server/js
js-packages: packages
	@[ $(JS_TESTS)/node_modules/.package-lock.json -nt $(JS_TESTS)/package-lock.json ] \
	  || (cd $(JS_TESTS) && npm ci --no-audit --no-fund --loglevel=error) \
	  || echo "warning: npm ci failed in $(JS_TESTS); its tests will be skipped" >&2

configure: packages
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) > $(BUILD_DIR).configure.log 2>&1 \
	  || (cat $(BUILD_DIR).configure.log; exit 1)

# Everything: the libraries, the strata binary, every test and benchmark.
build: deps configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Only the binary it runs: a newcomer's first token should not wait for the test suite to compile.
run: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target strata
	@if [ ! -f "$(MODEL)" ]; then \
	  echo "error: no model at '$(MODEL)'." >&2; \
	  echo "Set STRATA_MODEL to a GGUF file (for example a Llama, Mistral, Qwen or SmolLM .gguf" >&2; \
	  echo "downloaded from a model hub), or place stories260K.gguf at $(DEFAULT_MODEL)." >&2; \
	  exit 2; fi
	@$(BUILD_DIR)/strata run -m "$(MODEL)" -p "$(PROMPT)" -n 256

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# The binary, its man page, bash completion and systemd unit under PREFIX (root for /usr/local).
PREFIX ?= /usr/local
install: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target strata strata_man
	@cmake --install $(BUILD_DIR) --prefix "$(PREFIX)" > /dev/null
	@echo "installed strata under $(PREFIX) (bin, share/man/man1, bash-completion, systemd unit)"

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

# Fails on any file clang-format would change (CI runs this).
format-check:
	@git ls-files '*.h' '*.cc' | xargs clang-format --dry-run --Werror

# clang-tidy over the .cc files with uncommitted changes (FILES=... to choose others); slow on
# two cores, so run it before committing rather than over the whole tree.
FILES ?= $(shell git diff --name-only --diff-filter=d HEAD -- '*.cc' | grep -v '^tests/')
lint: build
	@[ -z "$(FILES)" ] || clang-tidy -p $(BUILD_DIR) --quiet $(FILES)

clean:
	rm -rf $(BUILD_DIR) $(BUILD_DIR).configure.log
