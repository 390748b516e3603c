"""Datasets for spmd-run --dataset tests, and the --data file of one step's
batch drawn from them sequentially (standard library only).

  dataset.py tokens OUT --count N --vocab V [--u32] [--seed S] [--poke I=V]
      N random token ids below V, little-endian uint16 (or uint32); --poke
      sets token I to V.
  dataset.py windows TOKENS OUT --batch B --seq S --step K [--u32]
      the --data file (I64 'tokens' and 'labels', [B, S]) of step K: rows
      are windows of S + 1 tokens starting every S tokens, batch after
      batch, wrapping at the end of the file.
  dataset.py samples OUT --count N [--rows NAME=M] [--seed S]
             NAME:DTYPE:SHAPE[:BOUND]...
      a safetensors file of N samples a tensor (M for tensor NAME): SHAPE
      is a sample's (3x4, or empty for one value a sample); integer values
      lie below BOUND.
  dataset.py rows SAMPLES OUT --batch B --step K
      the --data file of step K: samples [(K-1) B, K B) modulo N.
"""
import argparse
import json
import random
import struct

FORMATS = {"F64": "d", "F32": "f", "I64": "q", "I32": "i"}


def write_safetensors(path, tensors):
    """tensors: name -> (dtype, shape, flat values)."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        dtype, shape, values = tensors[name]
        blob = struct.pack("<%d%s" % (len(values), FORMATS[dtype]), *values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        fmt = FORMATS[info["dtype"]]
        count = (end - begin) // struct.calcsize(fmt)
        tensors[name] = (info["dtype"], info["shape"],
                         list(struct.unpack("<%d%s" % (count, fmt), data[begin:end])))
    return tensors


def tokens(args):
    rng = random.Random(args.seed)
    ids = [rng.randrange(args.vocab) for _ in range(args.count)]
    for poke in args.poke:
        index, value = map(int, poke.split("="))
        ids[index] = value
    with open(args.out, "wb") as f:
        f.write(struct.pack("<%d%s" % (len(ids), "I" if args.u32 else "H"), *ids))


def windows(args):
    with open(args.tokens, "rb") as f:
        raw = f.read()
    fmt = "I" if args.u32 else "H"
    ids = struct.unpack("<%d%s" % (len(raw) // struct.calcsize(fmt), fmt), raw)
    count = (len(ids) - 1) // args.seq
    inputs, targets = [], []
    for row in range(args.batch):
        start = (((args.step - 1) * args.batch + row) % count) * args.seq
        window = ids[start:start + args.seq + 1]
        inputs += window[:-1]
        targets += window[1:]
    shape = [args.batch, args.seq]
    write_safetensors(args.out, {"tokens": ("I64", shape, inputs),
                                 "labels": ("I64", shape, targets)})


def samples(args):
    rng = random.Random(args.seed)
    rows = {k: int(v) for k, v in (r.split("=") for r in args.rows)}
    tensors = {}
    for spec in args.specs:
        parts = spec.split(":")
        name, dtype, shape = parts[0], parts[1], parts[2]
        sample = [int(d) for d in shape.split("x")] if shape else []
        size = rows.get(name, args.count)
        for d in sample:
            size *= d
        if dtype.startswith("I"):
            values = [rng.randrange(int(parts[3])) for _ in range(size)]
        else:
            values = [rng.uniform(-1, 1) for _ in range(size)]
        tensors[name] = (dtype, [rows.get(name, args.count)] + sample, values)
    write_safetensors(args.out, tensors)


def rows(args):
    tensors = {}
    for name, (dtype, shape, values) in read_safetensors(args.samples).items():
        per = len(values) // shape[0]
        picked = []
        for row in range(args.batch):
            index = ((args.step - 1) * args.batch + row) % shape[0]
            picked += values[index * per:(index + 1) * per]
        tensors[name] = (dtype, [args.batch] + shape[1:], picked)
    write_safetensors(args.out, tensors)


parser = argparse.ArgumentParser()
commands = parser.add_subparsers(dest="command", required=True)
p = commands.add_parser("tokens")
p.add_argument("out")
p.add_argument("--count", type=int, required=True)
p.add_argument("--vocab", type=int, required=True)
p.add_argument("--u32", action="store_true")
p.add_argument("--seed", type=int, default=0)
p.add_argument("--poke", action="append", default=[])
p.set_defaults(run=tokens)
p = commands.add_parser("windows")
p.add_argument("tokens")
p.add_argument("out")
p.add_argument("--batch", type=int, required=True)
p.add_argument("--seq", type=int, required=True)
p.add_argument("--step", type=int, required=True)
p.add_argument("--u32", action="store_true")
p.set_defaults(run=windows)
p = commands.add_parser("samples")
p.add_argument("out")
p.add_argument("--count", type=int, required=True)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--rows", action="append", default=[])
p.add_argument("specs", nargs="+")
p.set_defaults(run=samples)
p = commands.add_parser("rows")
p.add_argument("samples")
p.add_argument("out")
p.add_argument("--batch", type=int, required=True)
p.add_argument("--step", type=int, required=True)
p.set_defaults(run=rows)
args = parser.parse_args()
args.run(args)
