#!/usr/bin/env python3
"""Per-step ms in collectives, GEMMs and the rest, from a trace.

    python3 bench/exposed.py TRACE.json

TRACE is `spmd-run --trace`'s output; rank 0's events inside each step
after the first are summed per category and averaged. MPI's collectives
block, so their time is the exposed communication.
"""
import collections
import json
import sys


def per_step_ms(trace):
    """Rank 0's ms per step: the step, and per category inside it."""
    events = json.load(open(trace))["traceEvents"]
    rank0 = [e for e in events if e["pid"] == 0 and e["ph"] == "X"]
    steps = sorted((e for e in rank0 if e["cat"] == "step"),
                   key=lambda e: e["ts"])[1:]
    total = collections.Counter()
    for s in steps:
        total["step"] += s["dur"]
        for e in rank0:
            if e["cat"] != "step" and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]:
                total[e["cat"]] += e["dur"]
    n = max(1, len(steps))
    return {k: v / n / 1e3 for k, v in total.items()}


if __name__ == "__main__":
    print({k: round(v, 1) for k, v in per_step_ms(sys.argv[1]).items()})
