#!/usr/bin/env bash
# The README's demo: a character-level GPT trained on a bundled public-domain
# text (data/kjv-genesis-exodus.txt) on 2 ranks (ddp), with a cosine
# learning-rate schedule, checkpoints, a held-out evaluation and a loss plot.
#
#   scripts/demo/train.sh [OUT]        (default OUT: /tmp/spmdc-demo)
#
# STEPS (default 1500) sets the length, and the warmup (a 15th of it); the
# rest is fixed. It needs the
# build (build/bin) and python3; about two minutes on two cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-/tmp/spmdc-demo}"
steps="${STEPS:-1500}"
warmup=$(( steps / 15 ))  # 100 of 1,500
bin="$root/build/bin"
mkdir -p "$out"

python3 "$root/scripts/demo/prepare-text.py" "$root/data/kjv-genesis-exodus.txt" "$out"
python3 "$root/scripts/demo/make-model.py" "$out/meta.json" -o "$out/gpt.json"
"$bin/spmdc" "$out/gpt.json" --shard-spec "$root/docs/examples/specs/ddp.json" \
  --optimizer=adamw --lr=2e-3 --weight-decay=0.1 --clip-grad-norm=1.0 -o "$out/gpt.mod"
rm -rf "$out/checkpoints"
"$bin/spmd-run" "$out/gpt.mod" --nranks 2 --steps "$steps" \
  --dataset "$out/train.bin" --shuffle --seed 1 \
  --lr-schedule cosine --warmup-steps "$warmup" --min-lr 2e-4 \
  --eval-dataset "$out/val.bin" --eval-every 250 --eval-batches 16 \
  --checkpoint-dir "$out/checkpoints" --checkpoint-every 500 \
  --log-every 100 --metrics "$out/metrics.jsonl" > "$out/losses.txt"
python3 "$root/scripts/plot-metrics.py" "$out/metrics.jsonl" -o "$out/loss.png"
