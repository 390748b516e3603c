#!/usr/bin/env python3
"""Checks spmdc's gradients of a graph against central finite differences.

    fd-check.py GRAPH PARAMS DATA WORKDIR [--eps E] [--rtol R]
                [--fixed-row NAME:ROW]...

GRAPH is tg IR with its gradients (`--tg-decompose --tg-autodiff`), PARAMS
a safetensors file of its parameters (the point to differentiate at), DATA
its inputs. spmd-run --interpret --f64 computes the loss and the gradients
there; then, for each parameter tensor W and a fixed direction D (every
element nonzero, of varying sign and size), it computes the loss at
W + eps*D and W - eps*D and requires

    |(L+ - L-) / (2 eps) - <grad W, D>| <= rtol * (|<grad W, D>| + 1e-3 |grad W| |D|)

Prints one line per parameter and PASSED or FAILED; exits 1 on a failure.
Standard library only (the safetensors reader of compare-safetensors.py).
"""

import argparse
import importlib.util
import json
import math
import os
import struct
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "compare_safetensors", os.path.join(here, "compare-safetensors.py"))
compare_safetensors = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_safetensors)


def write_f64(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        shape, values = tensors[name]
        blob = struct.pack("<%dd" % len(values), *values)
        header[name] = {"dtype": "F64", "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def run(graph, params, data, outputs):
    subprocess.run(["spmd-run", "--interpret", "--f64", "--params", params,
                    "--data", data, "--save-outputs", outputs, graph],
                   check=True, stdout=subprocess.DEVNULL)
    return compare_safetensors.read(outputs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("graph")
    ap.add_argument("params")
    ap.add_argument("data")
    ap.add_argument("workdir")
    ap.add_argument("--eps", type=float, default=1e-5)
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--fixed-row", action="append", default=[],
                    metavar="NAME:ROW",
                    help="leave row ROW (of dim 0) of NAME unmoved: PyTorch "
                         "gives it no gradient (embedding's padding_idx)")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    base = {n: (shape, values) for n, (_, shape, values)
            in compare_safetensors.read(args.params).items()}
    at = os.path.join(args.workdir, "fd.params.safetensors")
    out = os.path.join(args.workdir, "fd.moved.safetensors")
    write_f64(at, base)
    # The loss and gradients at the point itself stay in WORKDIR for other
    # comparisons.
    outputs = run(args.graph, at, args.data,
                  os.path.join(args.workdir, "fd.outputs.safetensors"))
    failures = 0
    for name, (shape, values) in sorted(base.items()):
        if "grad/" + name not in outputs:
            print(f"FAIL {name}: no gradient in the outputs")
            failures += 1
            continue
        grad = outputs["grad/" + name][2]
        direction = [math.sin(1.0 + 0.7 * i) + 0.3 for i in range(len(values))]
        for fixed in args.fixed_row:
            fixed_name, row = fixed.rsplit(":", 1)
            if fixed_name == name:
                width = len(values) // shape[0]
                for i in range(int(row) * width, (int(row) + 1) * width):
                    direction[i] = 0.0
        analytic = sum(g * d for g, d in zip(grad, direction))
        losses = []
        for sign in (1, -1):
            moved = dict(base)
            moved[name] = (shape, [v + sign * args.eps * d
                                   for v, d in zip(values, direction)])
            write_f64(at, moved)
            losses.append(run(args.graph, at, args.data, out)["loss/loss"][2][0])
        numeric = (losses[0] - losses[1]) / (2 * args.eps)
        scale = math.sqrt(sum(g * g for g in grad)) * \
            math.sqrt(sum(d * d for d in direction))
        bound = args.rtol * (abs(analytic) + 1e-3 * scale)
        ok = abs(numeric - analytic) <= bound
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name} {shape} analytic "
              f"{analytic:.12g} numeric {numeric:.12g} "
              f"rel {abs(numeric - analytic) / max(abs(analytic), 1e-300):.2g}")
    print(f"{'FAILED' if failures else 'PASSED'}: {len(base) - failures} of "
          f"{len(base)} parameters within rtol {args.rtol:g} of central "
          f"differences (eps {args.eps:g})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
