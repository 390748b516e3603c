#!/usr/bin/env bash
# check-compiled.sh MODEL SPEC NRANKS DIR
# Compiles MODEL sharded by SPEC into a module, runs 3 AdamW steps of it on
# NRANKS real ranks (spmd-run starts them under mpirun itself, killed after
# 300 s), and fails unless the loss of every step and the parameters after
# the last equal the interpreter's single-device run to 1e-4 relative (f32).
# SPEC "none": the single-device step on one rank.
# SPMDC_FLAGS adds flags to spmdc for the module (e.g. --gpu-kernels-on-cpu).
# EXCLUDE names more parameters to leave out of the comparison.
# gpt2-mini's key biases are left out: their gradient is 0 in exact
# arithmetic, so AdamW turns rounding noise into steps of size lr. For the
# same reason, an element is compared only where its first step's gradient
# (the interpreter's, in f64) exceeds 1e-6 of its tensor's largest: below
# that, f32 rounding decides the sign of AdamW's step, and it differs
# between machines' kernels.
set -euo pipefail
model=$1 spec=$2 nranks=$3 dir=$4
name=$(basename "$model" .json)-$(basename "$spec" .json)
mkdir -p "$dir"
spmdc "$model" --emit=partition -o "$dir/$name.single.mlir"
spmdc "$model" --emit=import -o "$dir/$name.import.mlir"
spmdc-opt "$dir/$name.import.mlir" --tg-decompose --tg-autodiff |
  spmd-run --interpret --f64 --save-outputs "$dir/$name.grads.safetensors" - \
  > /dev/null
spec_flags=(--shard-spec "$spec")
[ "$spec" = none ] && spec_flags=()
spmdc "$model" "${spec_flags[@]}" ${SPMDC_FLAGS:-} -o "$dir/$name.mod"
spmd-run --interpret --steps 3 "$dir/$name.single.mlir" \
  --save-params "$dir/$name.single.safetensors" > "$dir/$name.single.loss"
timeout -k 5 300 spmd-run --steps 3 --nranks "$nranks" "$dir/$name.mod" \
  --save-params "$dir/$name.compiled.safetensors" > "$dir/$name.compiled.loss"
python3 "$(dirname "$0")/../../Inputs/compare-losses.py" \
  "$dir/$name.compiled.loss" "$dir/$name.single.loss" --rtol 1e-4
python3 "$(dirname "$0")/../../Inputs/compare-safetensors.py" \
  "$dir/$name.compiled.safetensors" "$dir/$name.single.safetensors" \
  --rtol 1e-4 --atol 1e-5 --grads "$dir/$name.grads.safetensors" \
  --grads-prefix grad/ --grad-floor 1e-6 --exclude h.0.attn.k_proj.bias \
  --exclude h.1.attn.k_proj.bias ${EXCLUDE:+--exclude $EXCLUDE} \
  > "$dir/$name.compare"
echo "$name: compiled on $nranks ranks, 3 steps and parameters agree"
