"""Checks a spmd-run --trace file against the compile report.

    check-trace.py TRACE REPORT STEPS

The trace must be Chrome's format ({"traceEvents": [...]}) with one track
(pid) per rank, each named "rank R"; on each track one "step K" event per
step, in order and not overlapping, and, inside the steps, as many
collective events per step as the report lists collectives (with the
report's kinds), and GEMM events carrying their flops. Prints a summary.
"""
import collections
import json
import sys

trace = json.load(open(sys.argv[1]))["traceEvents"]
report = json.load(open(sys.argv[2]))
steps = int(sys.argv[3])
nranks = report["nranks"]
failed = []

names = {e["pid"]: e["args"]["name"] for e in trace if e["name"] == "process_name"}
if names != {r: "rank %d" % r for r in range(nranks)}:
    failed.append("tracks %s, expected one per rank" % names)

expected_kinds = collections.Counter(
    c["kind"] + (" by max" if c.get("reduction") == "max" else "")
    for c in report["collectives"])
for rank in range(nranks):
    events = [e for e in trace if e["pid"] == rank and e["ph"] == "X"]
    step_events = sorted((e for e in events if e["cat"] == "step"),
                         key=lambda e: e["ts"])
    if [e["name"] for e in step_events] != ["step %d" % (k + 1) for k in range(steps)]:
        failed.append("rank %d: steps %s" % (rank, [e["name"] for e in step_events]))
        continue
    for a, b in zip(step_events, step_events[1:]):
        if a["ts"] + a["dur"] > b["ts"]:
            failed.append("rank %d: %s overlaps %s" % (rank, a["name"], b["name"]))
    for step in step_events:
        inside = [e for e in events if e["cat"] != "step" and
                  step["ts"] <= e["ts"] and e["ts"] + e["dur"] <= step["ts"] + step["dur"]]
        kinds = collections.Counter(e["name"] for e in inside if e["cat"] == "collective")
        if kinds != expected_kinds:
            failed.append("rank %d, %s: collectives %s, the report lists %s"
                          % (rank, step["name"], dict(kinds), dict(expected_kinds)))
        gemms = [e for e in inside if e["cat"] == "gemm"]
        if not gemms or any(e["args"]["flops"] <= 0 for e in gemms):
            failed.append("rank %d, %s: no GEMM with its flops" % (rank, step["name"]))

for f in failed:
    print("FAILED:", f)
if failed:
    sys.exit(1)
print("trace: %d ranks, %d steps each, %d collectives a step, as the report"
      % (nranks, steps, sum(expected_kinds.values())))
