#!/usr/bin/env bash
# check-aten-op.sh CASE DIR [fd-check flags...]
# A test/Fixtures/aten case: imported, decomposed and differentiated by
# spmdc; its gradients must match central differences of its own loss
# (fd-check.py) and PyTorch's float64 gradients (1e-6 relative), and its
# loss PyTorch's.
set -euo pipefail
case=$1 dir=$2
shift 2
fixtures=$(dirname "$0")/../../Fixtures/aten
inputs=$(dirname "$0")/../../Inputs
mkdir -p "$dir/$case"
spmdc "$fixtures/$case.pt2" --emit=import | spmdc-opt --tg-decompose --tg-autodiff > "$dir/$case/grads.mlir"
python3 "$inputs/fd-check.py" "$dir/$case/grads.mlir" "$fixtures/$case.params.safetensors" \
  "$fixtures/$case.data.safetensors" "$dir/$case" "$@" > "$dir/$case/fd" || { cat "$dir/$case/fd"; exit 1; }
python3 "$inputs/compare-safetensors.py" "$dir/$case/fd.outputs.safetensors" \
  "$fixtures/$case.grads.safetensors" --actual-prefix grad/ --rtol 1e-6 > "$dir/$case/torch" || { cat "$dir/$case/torch"; exit 1; }
python3 - "$dir/$case/fd.outputs.safetensors" "$fixtures/$case.meta.json" "$inputs" <<'PY'
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("c", sys.argv[3] + "/compare-safetensors.py")
c = importlib.util.module_from_spec(spec); spec.loader.exec_module(c)
got = c.read(sys.argv[1])["loss/loss"][2][0]
want = json.load(open(sys.argv[2]))["loss"]
if abs(got - want) > 1e-9 * max(1.0, abs(want)):
    sys.exit("loss %r, PyTorch %r" % (got, want))
PY
echo "$case: gradients match finite differences and PyTorch"
