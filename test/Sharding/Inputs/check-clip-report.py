"""check-clip-report.py CLIPPED PLAIN AXES

CLIPPED is the compile report of a step built with --clip-grad-norm, PLAIN
that of the same step without it. CLIPPED must list PLAIN's collectives, in
order, plus exactly one all_reduce of one f32 (4 bytes) in the optimizer
phase, origin "grad_norm", over the mesh axes AXES (comma-separated), or
none when AXES is "-" (every gradient is already whole on every rank).
Prints one line saying so; exits 1 with what differs otherwise.
"""
import json
import sys

report = json.load(open(sys.argv[1]))
clipped = report["collectives"]
plain = json.load(open(sys.argv[2]))["collectives"]
axes = [] if sys.argv[3] == "-" else sys.argv[3].split(",")
mesh = dict(zip(report["mesh"]["axes"], report["mesh"]["shape"]))
group = 1
for a in axes:
    group *= mesh[a]
norm = [c for c in clipped if c["origin"] == "grad_norm"]
others = [c for c in clipped if c["origin"] != "grad_norm"]
if others != plain:
    sys.exit("the other collectives differ:\n%s\nvs\n%s" % (others, plain))
want = [{"kind": "all_reduce", "axes": axes, "group_size": group,
         "dtype": "f32", "payload_bytes": 4, "phase": "optimizer",
         "origin": "grad_norm"}] if axes else []
if norm != want:
    sys.exit("grad_norm collectives: %s, expected %s" % (norm, want))
if norm:
    print("grad_norm: one all_reduce over %s (%d ranks), 4 bytes, optimizer; "
          "%d other collectives unchanged"
          % (",".join(axes), group, len(others)))
else:
    print("grad_norm: no collective; %d other collectives unchanged"
          % len(others))
