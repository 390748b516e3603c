#!/usr/bin/env bash
# check-hf-step.sh FAMILY SPEC|- NRANKS DIR [interpret|native] [spmdc flags...]
# Compiles a test/Fixtures/hf model (sharded by SPEC, or for one device
# with -), trains one AdamW step in f32 on its data, through the reference
# interpreter on NRANKS simulated ranks or as a native module on NRANKS MPI
# ranks, and fails unless the loss matches PyTorch's to 1e-5 relative and
# the parameters and updated buffers to 1e-4, counting only elements whose
# reference gradient is above 1e-6 of their tensor's largest, and unless
# --save-params writes every key of the model's state dict.
set -euo pipefail
family=$1 spec=$2 nranks=$3 dir=$4 mode=${5:-interpret}
shift 4; [ $# -gt 0 ] && shift
fixtures=${HF_FIXTURES:-$(dirname "$0")/../../Fixtures/hf}
name=$family-$(basename "$spec" .json)-$mode
mkdir -p "$dir"
shard=()
emit=partition
if [ "$spec" != "-" ]; then
  shard=(--shard-spec "$spec")
  emit=shard
fi
run=(spmd-run --interpret)
if [ "$mode" = native ]; then
  emit=module
  run=(spmd-run)
fi
spmdc "$fixtures/$family.pt2" --emit=$emit "${shard[@]}" "$@" \
  --optimizer adamw --lr 0.001 --weight-decay 0.01 -o "$dir/$name.step"
"${run[@]}" --nranks "$nranks" --steps 1 "$dir/$name.step" \
  --data "$fixtures/$family.data.safetensors" \
  --save-params "$dir/$name.params.safetensors" > "$dir/$name.loss"
python3 "$(dirname "$0")/../../Inputs/check-first-loss.py" "$dir/$name.loss" \
  "$fixtures/$family.meta.json" 1e-5
# The first AdamW step moves each weight by about lr: an absolute tolerance
# of 1e-5 (1% of lr) on top of the relative 1e-4.
python3 "$(dirname "$0")/../../Inputs/compare-safetensors.py" \
  "$dir/$name.params.safetensors" "$fixtures/$family.expected.safetensors" \
  --rtol 1e-4 --atol 1e-5 --exclude loss \
  --grads "$fixtures/$family.grads.safetensors" --grad-floor 1e-6 \
  > "$dir/$name.compare" || { cat "$dir/$name.compare" | grep -v '^ok'; exit 1; }
# Every state-dict entry is written (tied names, every buffer), so PyTorch's
# load_state_dict(strict=True) takes the file.
python3 - "$dir/$name.params.safetensors" "$fixtures/$family.meta.json" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    saved = set(json.loads(f.read(n))) - {"__metadata__"}
want = set(json.load(open(sys.argv[2]))["state_dict_keys"])
if want - saved:
    sys.exit("--save-params lacks %s" % sorted(want - saved))
PY
echo "$name: loss and parameters match PyTorch"
