"""Unpacks an input of the checkpoint fuzzer (fuzz/checkpoint-fuzzer.cpp)
into a checkpoint directory: the bytes up to the first "\\0SHARD\\0" are
DIR/step-000001/index.json, each part after one is the next
rank-R.safetensors.

  unpack-checkpoint.py INPUT DIR
"""
import os
import sys

parts = open(sys.argv[1], "rb").read().split(b"\0SHARD\0")
folder = os.path.join(sys.argv[2], "step-000001")
os.makedirs(folder)
for i, part in enumerate(parts):
    name = "index.json" if i == 0 else f"rank-{i - 1}.safetensors"
    with open(os.path.join(folder, name), "wb") as f:
        f.write(part)
