#!/usr/bin/env python3
"""Compares the tensors of two safetensors files element by element.

    compare-safetensors.py ACTUAL EXPECTED --rtol R [--atol A] [--prefix P]
                           [--exclude X]... [--grads G [--grads-prefix GP]
                           [--grad-floor F]]

Every tensor of EXPECTED (only those whose key starts with P, if given, and
none whose key starts with an X) must
be in ACTUAL with the same shape, and every element must satisfy

    |actual - expected| <= atol + rtol * |expected|

(numpy.isclose's rule; NaN matches only NaN). With --grads G --grad-floor F,
an element of a tensor that G also holds (as GP + its key: 'grad/' for
spmd-run's --save-outputs) is compared only where its gradient in G
exceeds F times that gradient's largest magnitude: AdamW
turns a gradient that is zero in exact arithmetic (a key bias's) into an
lr-sized step of random sign, which no two implementations share. ACTUAL may hold more tensors
than EXPECTED. Prints one line per tensor compared,

    ok   grad/fc1.weight [32, 50] max_abs 1.2e-17 max_rel 3.4e-15 worst 0.0012

where max_rel is over the elements with a nonzero expected value and worst
is the largest |a - e| / (atol + rtol * |e|) (a tensor passes when it is at
most 1). Exits 1 if anything differs or is missing, 2 on a usage error.

The default atol, 1e-12, is for elements whose expected value is exactly or
nearly 0 (bias gradients that cancel, unused embedding rows, parameters an
update moved close to 0): there a relative bound alone would demand
bit-exact zeros, while the rounding noise of an f64 computation of O(1)
values is around 1e-16. Tests of f32 results give a larger atol.

Reads F64, F32, F16, BF16, I64, I32 and BOOL tensors; standard library only.
"""

import argparse
import json
import math
import struct
import sys

FORMATS = {"F64": "d", "F32": "f", "F16": "e", "I64": "q", "I32": "i",
           "BOOL": "?"}


def read(path):
    """{name: (dtype, shape, [float values])}."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("too short for a safetensors file")
    (n,) = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + n])
    data = memoryview(raw)[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape = info["dtype"], info["shape"]
        begin, end = info["data_offsets"]
        count = math.prod(shape)
        if dtype == "BF16":
            halves = struct.unpack_from("<%dH" % count, data, begin)
            values = [struct.unpack("<f", struct.pack("<I", h << 16))[0]
                      for h in halves]
        elif dtype in FORMATS:
            fmt = FORMATS[dtype]
            if (end - begin) != count * struct.calcsize(fmt):
                raise ValueError(f"tensor '{name}': {end - begin} bytes for "
                                 f"{count} {dtype} elements")
            values = [float(v) for v in
                      struct.unpack_from("<%d%s" % (count, fmt), data, begin)]
        else:
            raise ValueError(f"tensor '{name}': unsupported dtype {dtype}")
        tensors[name] = (dtype, shape, values)
    return tensors


def compare(actual, expected, rtol, atol):
    """(ok, max_abs, max_rel, worst, worst_index)."""
    max_abs = max_rel = worst = 0.0
    worst_index = None
    ok = True
    for i, (a, e) in enumerate(zip(actual, expected)):
        if math.isnan(e) or math.isnan(a):
            if not (math.isnan(e) and math.isnan(a)):
                ok, worst, worst_index = False, math.inf, i
            continue
        if math.isinf(e) or math.isinf(a):
            if a != e:
                ok, worst, worst_index = False, math.inf, i
            continue
        diff = abs(a - e)
        max_abs = max(max_abs, diff)
        if e != 0:
            max_rel = max(max_rel, diff / abs(e))
        bound = atol + rtol * abs(e)
        ratio = diff / bound if bound > 0 else (math.inf if diff else 0.0)
        if ratio > worst:
            worst, worst_index = ratio, i
        if diff > bound:
            ok = False
    return ok, max_abs, max_rel, worst, worst_index


def unravel(index, shape):
    out = []
    for size in reversed(shape):
        out.append(index % size)
        index //= size
    return list(reversed(out))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("actual")
    ap.add_argument("expected")
    ap.add_argument("--rtol", type=float, required=True)
    ap.add_argument("--atol", type=float, default=1e-12)
    ap.add_argument("--prefix", default="",
                    help="compare only the expected keys with this prefix")
    ap.add_argument("--actual-prefix", default="",
                    help="the actual file's key for expected key K is this "
                         "prefix + K (e.g. 'grad/' for --save-outputs)")
    ap.add_argument("--exclude", action="append", default=[],
                    help="skip the expected keys with this prefix "
                         "(repeatable)")
    ap.add_argument("--grads", help="reference gradients (see above)")
    ap.add_argument("--grads-prefix", default="",
                    help="G's key for expected key K is this prefix + K")
    ap.add_argument("--grad-floor", type=float, default=1e-6)
    args = ap.parse_args(argv)
    try:
        actual = read(args.actual)
        expected = read(args.expected)
        grads = read(args.grads) if args.grads else {}
    except (OSError, ValueError, KeyError, struct.error) as e:
        print(f"compare-safetensors: error: {e}", file=sys.stderr)
        return 1

    keys = sorted(k for k in expected if k.startswith(args.prefix) and
                  not any(k.startswith(x) for x in args.exclude))
    if not keys:
        print(f"compare-safetensors: error: {args.expected} has no tensor "
              f"to compare (prefix '{args.prefix}', exclude {args.exclude})",
              file=sys.stderr)
        return 1
    failures = 0
    overall = 0.0
    for key in keys:
        _, shape, want = expected[key]
        if args.actual_prefix + key not in actual:
            print(f"FAIL {key}: missing from {args.actual}")
            failures += 1
            continue
        _, got_shape, got = actual[args.actual_prefix + key]
        if got_shape != shape:
            print(f"FAIL {key}: shape {got_shape}, expected {shape}")
            failures += 1
            continue
        masked = args.grads_prefix + key in grads
        if masked:
            g = grads[args.grads_prefix + key][2]
            floor = args.grad_floor * max((abs(v) for v in g), default=0.0)
            kept = [i for i, v in enumerate(g) if abs(v) > floor]
            got = [got[i] for i in kept]
            want = [want[i] for i in kept]
        ok, max_abs, max_rel, worst, index = compare(got, want, args.rtol,
                                                     args.atol)
        overall = max(overall, worst)
        line = (f"{'ok  ' if ok else 'FAIL'} {key} {shape} max_abs "
                f"{max_abs:.3g} max_rel {max_rel:.3g} worst {worst:.3g}")
        if not ok and index is not None:
            at = kept[index] if masked else index
            line += (f" at {unravel(at, shape)}: got {got[index]!r}, "
                     f"expected {want[index]!r}")
        print(line)
        failures += not ok
    print(f"{'FAILED' if failures else 'PASSED'}: {len(keys) - failures} of "
          f"{len(keys)} tensors within rtol {args.rtol:g} atol {args.atol:g} "
          f"(worst {overall:.3g})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
