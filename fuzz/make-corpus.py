#!/usr/bin/env python3
"""Writes the harnesses' seed corpora (fuzz/corpus/<name>/) from the
project's own inputs: the bundled examples and shard specs, test fixtures,
and modules spmdc compiles. Run from the repository root with a built
spmdc (and spmd-run beside it): python3 fuzz/make-corpus.py build/bin/spmdc
[NAME...]; with NAMEs, only those harnesses' corpora are rewritten.

Seeds stay small (libFuzzer mutates small inputs faster): archives lose
their sample inputs, modules keep 16 bytes of program (the module harness
reads the header and the weights, not the bytecode)."""
import glob
import hashlib
import io
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
corpus = os.path.join(root, "fuzz", "corpus")
spmdc = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "bin", "spmdc")
spmd_run = os.path.join(os.path.dirname(os.path.abspath(spmdc)), "spmd-run")
only = set(sys.argv[2:])


def put(name, data, label):
    if only and name not in only:
        return
    os.makedirs(os.path.join(corpus, name), exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:12]
    with open(os.path.join(corpus, name, f"{label}-{digest}"), "wb") as f:
        f.write(data)


def read(path):
    with open(os.path.join(root, path), "rb") as f:
        return f.read()


for name in os.listdir(corpus) if os.path.isdir(corpus) else []:
    if only and name not in only:
        continue
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


# Checkpoints (checkpoint-fuzzer.cpp): index.json, then each shard file
# after a "\0SHARD\0", from spmd-run --checkpoint-dir on 1 and 2 ranks.
SHARD = b"\0SHARD\0"


def checkpoint(folder):
    with open(os.path.join(folder, "index.json"), "rb") as f:
        data = f.read()
    for rank in range(len(json.loads(data)["files"])):
        with open(os.path.join(folder, f"rank-{rank}.safetensors"), "rb") as f:
            data += SHARD + f.read()
    return data


env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
with tempfile.TemporaryDirectory() as tmp:
    for label, spec, ranks, extra in [
            ("mlp-adamw", None, 1, []),
            ("mlp-adamw-f64", None, 1, ["--interpret", "--f64"]),
            ("mlp-zero3", "zero3", 2, []),
            ("mlp-megatron", "megatron", 2, [])]:
        if only and "checkpoint" not in only:
            break
        # The interpreter (--f64: blocks stored as F64) runs the sharded IR.
        interpret = "--interpret" in extra
        module = os.path.join(tmp, label + (".mlir" if interpret else ".mod"))
        args = [spmdc, os.path.join(root, "docs/examples/mlp.json"),
                "--optimizer=adamw"] + (["--emit=shard"] if interpret else [])
        if spec:
            args += ["--shard-spec",
                     os.path.join(root, f"docs/examples/specs/{spec}.json")]
        subprocess.run(args + ["-o", module], check=True)
        directory = os.path.join(tmp, label)
        subprocess.run([spmd_run, module, "--nranks", str(ranks), "--steps", "2",
                        "--checkpoint-dir", directory, "--checkpoint-every", "2"]
                       + extra, check=True, env=env, stdout=subprocess.DEVNULL)
        put("checkpoint", checkpoint(os.path.join(directory, "step-000002")),
            label)

# A small one by hand, laid out as the writer does: a parameter in two
# blocks over two files (with an alias), a scalar state, a model-state
# buffer stored wider than its dtype.
shard0 = safetensors([("param/w", "F32", [1, 4], struct.pack("<4f", 1, 2, 3, 4)),
                      ("state/step", "I64", [], struct.pack("<q", 3)),
                      ("buffer/mean", "F64", [2], struct.pack("<2d", 0.5, 1.5))],
                     {"format": "spmdc-checkpoint", "rank": "0", "step": "1"})
shard1 = safetensors([("param/w", "F32", [1, 4], struct.pack("<4f", 5, 6, 7, 8))],
                     {"format": "spmdc-checkpoint", "rank": "1", "step": "1"})


def block(file, shard, name, offsets, sizes, dtype, width):
    (n,) = struct.unpack("<Q", shard[:8])
    begin = 8 + n + json.loads(shard[8:8 + n])[name]["data_offsets"][0]
    count = 1
    for size in sizes:
        count *= size
    return {"file": file, "offsets": offsets, "sizes": sizes, "dtype": dtype,
            "begin": begin, "bytes": count * width}


put("checkpoint", json.dumps({
    "format": "spmdc-checkpoint", "version": 1, "module": "0123456789abcdef",
    "mesh": {"axes": ["dp"], "shape": [2]}, "step": 1,
    "dataset": {"file": "train.bin", "shuffle": True, "next_batch": 1},
    "seed": 7,
    "files": {"rank-0.safetensors": {"bytes": len(shard0)},
              "rank-1.safetensors": {"bytes": len(shard1)}},
    "tensors": {
        "param/w": {
            "role": "param", "name": "w", "aliases": ["w_tied"],
            "buffer": False, "dtype": "F32", "shape": [2, 4],
            "blocks": [block("rank-0.safetensors", shard0, "param/w",
                             [0, 0], [1, 4], "F32", 4),
                       block("rank-1.safetensors", shard1, "param/w",
                             [1, 0], [1, 4], "F32", 4)]},
        "state/step": {
            "role": "state", "name": "step", "aliases": [], "buffer": False,
            "dtype": "I64", "shape": [],
            "blocks": [block("rank-0.safetensors", shard0, "state/step",
                             [], [], "I64", 8)]},
        "buffer/mean": {
            "role": "buffer", "name": "mean", "aliases": [], "buffer": True,
            "dtype": "F32", "shape": [2],
            "blocks": [block("rank-0.safetensors", shard0, "buffer/mean",
                             [0], [2], "F64", 8)]}}},
    indent=2).encode() + SHARD + shard0 + SHARD + shard1, "by-hand")


# Datasets (dataset-fuzzer.cpp): 4 bytes (flags, batch, seq, id bound; the
# harness says what each means), then the --dataset file: token files
# (u16, u32) and safetensors samples.
def dataset(flags, batch, seq, bound, data):
    return bytes([flags, batch, seq, bound]) + data


def token_file(count, vocab, u32=False, seed=1):
    rng = random.Random(seed)
    ids = [rng.randrange(vocab) for _ in range(count)]
    return struct.pack("<%d%s" % (count, "I" if u32 else "H"), *ids)


put("dataset", dataset(0, 4, 16, 1, token_file(180, 96)), "u16")
put("dataset", dataset(0b110, 2, 8, 1, token_file(100, 96, u32=True)),
    "u32-shuffle")
put("dataset", dataset(0b111000, 3, 5, 0, token_file(64, 50000)),
    "i32-inputs-first")
put("dataset", dataset(0b101, 2, 4, 0, token_file(40, 60000)),
    "u16-flag-shuffle")
put("dataset", dataset(0, 2, 0, 1, safetensors([
    ("x", "F32", [6, 3], struct.pack("<18f", *range(18))),
    ("y", "I64", [6], struct.pack("<6q", 0, 1, 2, 3, 0, 1)),
    ("m", "BOOL", [6, 2], bytes([0, 1] * 6)),
    ("h", "F16", [6], b"\x00\x3c" * 6)])), "samples")
put("dataset", dataset(0b100, 3, 0, 0, safetensors([
    ("tokens", "I32", [5, 4], struct.pack("<20i", *range(20))),
    ("labels", "I32", [5, 4], struct.pack("<20i", *range(1, 21)))])),
    "samples-shuffle")
for path in ["test/Fixtures/pt2/gpt2.data.safetensors",
             "test/Fixtures/pt2/llama.data.safetensors"]:
    put("dataset", dataset(0, 2, 0, 1, read(path)),
        os.path.basename(path).split(".")[0])
