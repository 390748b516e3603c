#!/usr/bin/env bash
# run-lowered.sh GRAPH DIR
# GRAPH is a tg function @main() -> tensor<f32> of constants. Lowers it as
# spmdc does (--tg-decompose, then the lower stage's --spmdc-lower-cpu),
# runs it natively with mlir-runner and fails unless the value matches the
# interpreter's (f32) to 1e-5.
set -euo pipefail
graph=$1 dir=$2
mkdir -p "$dir"
name=$(basename "$graph" .mlir)
cat "$graph" - > "$dir/$name.entry.mlir" <<'MLIR'
func.func private @printMemrefF32(tensor<*xf32>) attributes { llvm.emit_c_interface }
func.func @entry() {
  %r = call @main() : () -> tensor<f32>
  %u = tensor.cast %r : tensor<f32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
MLIR
# The lowering spmdc --emit=lower runs (--spmdc-lower-cpu): its matmuls call
# the runtime's BLAS wrappers.
spmdc-opt "$dir/$name.entry.mlir" --tg-decompose --spmdc-lower-cpu \
  -o "$dir/$name.llvm.mlir"
libs=$(dirname "$(command -v mlir-runner)")/../lib
blas=$(dirname "$(command -v spmdc-opt)")/../lib/libspmdc_runtime_blas.so
native=$(mlir-runner "$dir/$name.llvm.mlir" -e entry --entry-point-result=void \
  -shared-libs="$libs/libmlir_runner_utils.so,$libs/libmlir_c_runner_utils.so,$blas" |
  tail -1 | tr -d '[]')
interpreted=$(spmd-run --interpret "$graph" | awk '{print $4}')
python3 - "$native" "$interpreted" "$name" <<'PY'
import sys
native, interpreted, name = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
if abs(native - interpreted) > 1e-5 * max(1.0, abs(interpreted)):
    sys.exit("%s: native %r, interpreter %r" % (name, native, interpreted))
print("%s: native %.9g equals the interpreter" % (name, native))
PY
