#!/bin/sh
# Installs what tools/train needs (Debian 12): torch, sentencepiece, numpy, matplotlib, OpenBLAS
# (Debian's torch otherwise calls the reference BLAS, ~16x slower) and the text packages the
# corpus is built from. Not needed by `make test`.
set -eu
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends \
  python3-torch python3-sentencepiece python3-numpy python3-matplotlib libopenblas0-pthread \
  bible-kjv bible-kjv-text fortunes fortunes-min python3-doc debian-reference-en \
  debian-policy developers-reference doc-debian
# The tool runs on Debian's interpreter (/usr/bin/python3), where these packages live, even when
# another python3 comes first on PATH.
/usr/bin/python3 -c 'import torch, sentencepiece, numpy, matplotlib; print("torch", torch.__version__)'
