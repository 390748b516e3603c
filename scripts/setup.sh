#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks and builds spmdc into build/.
# Used by both README commands and by CI (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build ccache python3 git
  clang-22 lld-22 libclang-rt-22-dev libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  libcli11-dev nlohmann-json3-dev libspdlog-dev libgtest-dev
  libopenmpi-dev openmpi-bin libopenblas-dev libdnnl-dev libzip-dev libmimalloc-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# ccache keys on paths relative to the checkout, so fresh clones share hits.
export CCACHE_BASEDIR="$PWD"
cmake -S . -B build -G Ninja \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >&2
cmake --build build >&2
