#!/usr/bin/env bash
# check-sharded.sh MODEL SPEC NRANKS DIR
# Compiles MODEL once for one device and once sharded by SPEC, runs 3
# AdamW steps of each through the interpreter in f64 (the sharded one on
# NRANKS simulated ranks), and fails unless the loss of every step and the
# parameters after the last agree to 1e-5 relative (or RTOL).
# SPMDC_FLAGS adds flags to spmdc for the sharded step (e.g. --fsdp-group=1);
# SPMDC_STEP_FLAGS adds flags to both compiles (e.g. --clip-grad-norm 0.5).
set -euo pipefail
model=$1 spec=$2 nranks=$3 dir=$4
name=$(basename "$model" .json)-$(basename "$spec" .json)
mkdir -p "$dir"
rtol=${RTOL:-1e-5}
spmdc "$model" --emit=partition ${SPMDC_STEP_FLAGS:-} -o "$dir/$name.single.mlir"
spmdc "$model" --emit=shard --shard-spec "$spec" ${SPMDC_STEP_FLAGS:-} ${SPMDC_FLAGS:-} \
  -o "$dir/$name.sharded.mlir"
spmd-run --interpret --f64 --steps 3 "$dir/$name.single.mlir" \
  --save-params "$dir/$name.single.safetensors" > "$dir/$name.single.loss"
spmd-run --interpret --f64 --steps 3 --nranks "$nranks" "$dir/$name.sharded.mlir" \
  --save-params "$dir/$name.sharded.safetensors" > "$dir/$name.sharded.loss"
python3 "$(dirname "$0")/../../Inputs/compare-losses.py" \
  "$dir/$name.sharded.loss" "$dir/$name.single.loss" --rtol "$rtol"
python3 "$(dirname "$0")/../../Inputs/compare-safetensors.py" \
  "$dir/$name.sharded.safetensors" "$dir/$name.single.safetensors" \
  --rtol "$rtol" --atol 1e-9 > "$dir/$name.compare"
echo "$name: 3 steps and parameters agree"
