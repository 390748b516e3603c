#!/usr/bin/env python3
"""check-buffers.py SAVED.safetensors EXPECTED.json

Checks a --save-params file of make-buffer-pt2.py's model after one step:
exactly the state-dict names (lin.weight, the two mutated buffers and the
persistent `scale` the step only reads; not the non-persistent `mask`, not
the optimizer's state), the buffers' values (1e-6 relative; `scale` as
exported), and lin.weight within one AdamW step (lr 1e-3) of its exported
value. Prints "state dict matches" or exits 1."""

import json
import struct
import sys

f = open(sys.argv[1], "rb")
n = struct.unpack("<Q", f.read(8))[0]
header = json.loads(f.read(n))
data = f.read()
header.pop("__metadata__", None)
values = {}
for name, entry in header.items():
    begin, end = entry["data_offsets"]
    fmt = {"F32": "f", "F64": "d", "I64": "q"}[entry["dtype"]]
    values[name] = struct.unpack("<%d%s" % ((end - begin) // struct.calcsize(fmt), fmt),
                                 data[begin:end])
expected = json.load(open(sys.argv[2]))
names = {"lin.weight", "bn.running_mean", "bn.num_batches_tracked", "scale"}
if set(values) != names:
    sys.exit("saved %s, expected %s" % (sorted(values), sorted(names)))
for got, want in zip(values["bn.running_mean"], expected["bn.running_mean"]):
    if abs(got - want) > 1e-6 * abs(want) + 1e-7:
        sys.exit("bn.running_mean %r, expected %r" % (values["bn.running_mean"],
                                                     expected["bn.running_mean"]))
if list(values["scale"]) != expected["scale"]:
    sys.exit("scale %r, expected %r" % (values["scale"], expected["scale"]))
if values["bn.num_batches_tracked"] != (expected["bn.num_batches_tracked"],):
    sys.exit("bn.num_batches_tracked %r" % (values["bn.num_batches_tracked"],))
w = [v for row in expected["lin.weight"] for v in row]
if any(abs(a - b) > 2e-3 for a, b in zip(values["lin.weight"], w)):
    sys.exit("lin.weight %r is not one step from %r" % (values["lin.weight"], w))
print("state dict matches")
