#!/usr/bin/env bash
# check-pt2-module.sh MODEL SPEC|- NRANKS DIR
# Compiles a torch.export fixture into a native module (sharded by SPEC, or
# for one device with -): the module carries the archive's weights. Runs
# one AdamW step of it on NRANKS real ranks (killed after 300 s) on the
# fixture's data, and fails unless the loss and every parameter PyTorch's
# state dict names (tied names included) match PyTorch's to 1e-4 relative.
set -euo pipefail
model=$1 spec=$2 nranks=$3 dir=$4
fixtures=$(dirname "$0")/../../Fixtures/pt2
name=$model-$(basename "$spec" .json)
mkdir -p "$dir"
shard=()
[ "$spec" != "-" ] && shard=(--shard-spec "$spec")
spmdc "$fixtures/$model.pt2" "${shard[@]}" --optimizer adamw --lr 0.001 \
  --weight-decay 0.01 -o "$dir/$name.mod"
timeout -k 5 300 spmd-run --nranks "$nranks" --steps 1 "$dir/$name.mod" \
  --data "$fixtures/$model.data.safetensors" \
  --save-params "$dir/$name.params.safetensors" > "$dir/$name.loss"
python3 "$(dirname "$0")/../../Inputs/check-first-loss.py" "$dir/$name.loss" \
  "$fixtures/$model.meta.json" 1e-4
python3 "$(dirname "$0")/../../Inputs/compare-safetensors.py" \
  "$dir/$name.params.safetensors" "$fixtures/$model.expected.safetensors" \
  --rtol 1e-4 --atol 1e-5 --exclude loss > "$dir/$name.compare"
echo "$name: the module trains from the exported weights to PyTorch's loss and parameters on $nranks ranks"
