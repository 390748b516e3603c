#!/usr/bin/env bash
# Regenerates the op and pass references in docs/ from the .td files
# (test/docs-up-to-date.test fails until this has run after a .td change).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target mlir-doc >/dev/null
cp build/docs/Dialects/TensorGraphOps.md docs/ops.md
cp build/docs/Dialects/DistOps.md docs/dist-ops.md
cp build/docs/TensorGraphPasses.md docs/passes.md
cp build/docs/DistPasses.md docs/dist-passes.md
cp build/docs/ConversionPasses.md docs/conversion-passes.md
