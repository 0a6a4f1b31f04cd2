#!/usr/bin/env bash
# Installs the Debian packages strata builds and tests with, skipping those already present.
# Run as root (or with sudo available). The README says why each package is here.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libhwy-dev            # Google Highway: SIMD kernels with runtime dispatch
  libcli11-dev          # CLI11: command-line parsing
  nlohmann-json3-dev    # nlohmann-json: JSON for metadata, requests and test vectors
  libpcre2-dev          # PCRE2: Unicode regexes of the BPE pre-tokenizers
  libpng-dev            # libpng: the heatmap of strata eval --task --plot
  libssl-dev            # OpenSSL's libcrypto: SHA-256 keys of prefix-cache pages and model files
  libboost1.81-dev      # Boost.Beast on Asio (header-only): the server's HTTP/1.1 transport
  libcpp-httplib-dev    # cpp-httplib: the HTTP client of the server's C++ tests
  libcurl4-openssl-dev  # libcurl: strata pull's downloads (resume, redirects, TLS, proxies)
  libedit-dev           # libedit: strata chat's line editing and history (BSD-licensed readline)
  libjs-marked          # marked: the chat page renders answers' markdown (embedded at build time)
  libgtest-dev libgmock-dev  # GoogleTest: the test suite
  libbenchmark-dev      # Google Benchmark: kernel microbenchmarks
  clang-format          # formatting check (make format-check, run by CI)
  help2man              # the man page make install writes from strata --help
  bash-completion       # the helpers strata's completion (packaging/strata.bash) builds on
  curl                  # the server's error-case tests (tests/server/js)
  chromium              # headless browser of the chat page test (tests/server/js)
  prometheus            # scrapes /metrics in the server tests (tests/server/js)
)
# node and npm run the server's client tests; a node already installed (NodeSource's bundles npm)
# is kept.
command -v npm > /dev/null || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
