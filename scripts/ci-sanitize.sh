#!/usr/bin/env bash
# CI's sanitizer job (docs/reliability.md): a second build in build-asan/
# with ASan and UBSan on the tools, the libraries and the runtime
# (-DSPMDC_SANITIZE=address,undefined) and the readers' libFuzzer harnesses
# (-DSPMDC_FUZZ=ON), then its lit and unit tests, every harness over its
# corpus and for SPMDC_FUZZ_RUNS inputs from a fixed seed (default 100,000,
# at most SPMDC_FUZZ_SECONDS, default 120) each, and the check that no
# process left a sanitizer report. Run after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD"
cmake -S . -B build-asan -G Ninja \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  -DSPMDC_SANITIZE=address,undefined -DSPMDC_FUZZ=ON \
  -DSPMDC_FUZZ_RUNS="${SPMDC_FUZZ_RUNS:-100000}" \
  -DSPMDC_FUZZ_SECONDS="${SPMDC_FUZZ_SECONDS:-120}" >&2
cmake --build build-asan >&2
ctest --test-dir build-asan --output-on-failure
