#!/usr/bin/env python3
"""Writes the harnesses' seed corpora (fuzz/corpus/<name>/) from the
project's own inputs: the bundled examples and shard specs, test fixtures,
and modules spmdc compiles. Run from the repository root with a built
spmdc: python3 fuzz/make-corpus.py build/bin/spmdc

Seeds stay small (libFuzzer mutates small inputs faster): archives lose
their sample inputs, modules keep 16 bytes of program (the module harness
reads the header and the weights, not the bytecode)."""
import glob
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
corpus = os.path.join(root, "fuzz", "corpus")
spmdc = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "bin", "spmdc")


def put(name, data, label):
    os.makedirs(os.path.join(corpus, name), exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:12]
    with open(os.path.join(corpus, name, f"{label}-{digest}"), "wb") as f:
        f.write(data)


def read(path):
    with open(os.path.join(root, path), "rb") as f:
        return f.read()


for name in os.listdir(corpus) if os.path.isdir(corpus) else []:
    shutil.rmtree(os.path.join(corpus, name))

# Graphs in the JSON format, and in MLIR.
for path in sorted(glob.glob(os.path.join(root, "docs/examples/*.json"))):
    put("json-graph", read(path), os.path.basename(path)[:-5])
for path in sorted(glob.glob(os.path.join(root, "docs/examples/*.mlir"))):
    put("mlir-import", read(path), os.path.basename(path)[:-5])
for stage in ["decompose", "autodiff", "partition"]:
    out = subprocess.run([spmdc, os.path.join(root, "docs/examples/mlp.json"),
                          f"--emit={stage}"], check=True,
                         capture_output=True).stdout
    put("mlir-import", out, f"mlp-{stage}")

# Shard specs.
for path in sorted(glob.glob(os.path.join(root, "docs/examples/specs/*.json"))):
    put("shard-spec", read(path), os.path.basename(path)[:-5])
put("shard-spec", json.dumps({
    "version": 1, "mesh": {"axes": ["dp", "tp"], "shape": [2, 2]},
    "presets": {"dp": "zero3"},
    "tensors": {"fc1.weight": {"tp": "S(0)"}, "layers.*.w": {"tp": "S(-1)"},
                "x?": {"dp": "P"}},
    "batch_dims": {"tokens": 1, "*": 0},
    "optimizer": {"name": "adamw", "lr": 0.001, "beta1": 0.9}}).encode(),
    "full")

# torch.export archives without their sample inputs, and bare programs.
for path in ["test/Fixtures/pt2/mlp.pt2", "test/Fixtures/pt2/mlp_logits.pt2",
             "test/Fixtures/aten/elementwise.pt2",
             "test/Fixtures/aten/embedding-padding_idx.pt2",
             "test/Fixtures/aten/index-two.pt2",
             "test/Fixtures/aten/sdpa-bool-mask.pt2"]:
    src = zipfile.ZipFile(os.path.join(root, path))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            if "sample_inputs" not in info.filename:
                dst.writestr(info.filename, src.read(info.filename))
    label = os.path.basename(path)[:-4]
    put("pt2", out.getvalue(), label)
    for info in src.infolist():
        if "/models/" in info.filename and info.filename.endswith(".json"):
            put("pt2", src.read(info.filename), label + "-program")


# safetensors files: every dtype, a scalar, an empty tensor, metadata.
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


put("safetensors", safetensors([
    ("w", "F32", [2, 3], struct.pack("<6f", *range(6))),
    ("b", "F64", [3], struct.pack("<3d", 1, 2, 3)),
    ("h", "F16", [2], b"\x00\x3c\x00\xc0"),
    ("bf", "BF16", [2], b"\x80\x3f\x00\x40"),
    ("i", "I64", [2, 1], struct.pack("<2q", -1, 7)),
    ("j", "I32", [], struct.pack("<i", 5)),
    ("m", "BOOL", [3], b"\x01\x00\x01"),
    ("e", "F32", [0, 4], b"")], {"format": "pt"}), "dtypes")
for path in ["test/Fixtures/pt2/gpt2.data.safetensors",
             "test/Fixtures/pt2/llama.data.safetensors"]:
    put("safetensors", read(path), os.path.basename(path).split(".")[0])


# Modules: single-rank, sharded, and with a weights section.
def shrink(module):
    magic, rest = module.split(b"\n", 1)
    length, rest = rest.split(b"\n", 1)
    header = json.loads(rest[:int(length)])
    body = rest[int(length):]
    program = header.get("program_bytes", len(body) - header.get("weights", {}).get("bytes", 0))
    tail = body[program:]
    if "program_bytes" in header:
        header["program_bytes"] = 16
    text = json.dumps(header, indent=1).encode()
    return magic + b"\n" + str(len(text)).encode() + b"\n" + text + body[:16] + tail


with tempfile.TemporaryDirectory() as tmp:
    for label, args in [
            ("mlp", ["docs/examples/mlp.json"]),
            ("mlp-ddp", ["docs/examples/mlp.json", "--shard-spec",
                         "docs/examples/specs/ddp.json"]),
            ("mlp-zero3-megatron", ["docs/examples/mlp.json", "--shard-spec",
                                    "docs/examples/specs/zero3-megatron.json"]),
            ("pt2-weights", ["test/Fixtures/pt2/mlp.pt2"])]:
        out = os.path.join(tmp, label + ".mod")
        subprocess.run([spmdc] + [os.path.join(root, a) if a.startswith(("docs", "test")) else a
                                  for a in args] + ["-o", out], check=True)
        with open(out, "rb") as f:
            put("module", shrink(f.read()), label)
