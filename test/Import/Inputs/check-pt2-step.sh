#!/usr/bin/env bash
# check-pt2-step.sh MODEL SPEC|- NRANKS DIR [spmdc flags...]
# Compiles a torch.export fixture (sharded by SPEC, or for one device with
# -), trains one AdamW step in f32 on the fixture's data, and fails unless
# the loss and the updated parameters match PyTorch's to 1e-4 relative.
set -euo pipefail
model=$1 spec=$2 nranks=$3 dir=$4
shift 4
fixtures=$(dirname "$0")/../../Fixtures/pt2
name=$model-$(basename "$spec" .json)
mkdir -p "$dir"
shard=()
emit=partition
if [ "$spec" != "-" ]; then
  shard=(--shard-spec "$spec")
  emit=shard
fi
spmdc "$fixtures/$model.pt2" --emit=$emit "${shard[@]}" "$@" \
  --optimizer adamw --lr 0.001 --weight-decay 0.01 -o "$dir/$name.mlir"
spmd-run --interpret --nranks "$nranks" --steps 1 "$dir/$name.mlir" \
  --data "$fixtures/$model.data.safetensors" \
  --save-params "$dir/$name.params.safetensors" > "$dir/$name.loss"
python3 "$(dirname "$0")/../../Inputs/check-first-loss.py" "$dir/$name.loss" \
  "$fixtures/$model.meta.json" 1e-4
# The first AdamW step moves each weight by about lr: an absolute tolerance
# of 1e-5 (1% of lr) on top of the relative 1e-4.
python3 "$(dirname "$0")/../../Inputs/compare-safetensors.py" \
  "$dir/$name.params.safetensors" "$fixtures/$model.expected.safetensors" \
  --rtol 1e-4 --atol 1e-5 --exclude loss > "$dir/$name.compare"
echo "$name: loss and parameters match PyTorch"
