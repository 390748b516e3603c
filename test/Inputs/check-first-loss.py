#!/usr/bin/env python3
"""check-first-loss.py LOSSES META.json RTOL

LOSSES holds spmd-run's `step 1 loss X` line; META.json (a fixture's) its
reference "loss". Exits 1 unless |X - loss| <= RTOL * |loss|."""
import json
import sys

losses, meta, rtol = sys.argv[1], sys.argv[2], float(sys.argv[3])
got = float(open(losses).read().split()[3])
want = json.load(open(meta))["loss"]
if abs(got - want) > rtol * abs(want):
    sys.exit("loss %r, PyTorch %r (rtol %g)" % (got, want, rtol))
