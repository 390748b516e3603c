"""same-collectives.py A.json B.json: fails unless two compile reports list
the same collectives (kind, axes, phase, dtype, payload, reduction) in the
same order, whatever their origins."""
import json
import sys


def collectives(path):
    with open(path) as f:
        report = json.load(f)
    return [(c["kind"], c["axes"], c["phase"], c["dtype"], c["payload_bytes"],
             c.get("reduction", "sum")) for c in report["collectives"]]


a, b = collectives(sys.argv[1]), collectives(sys.argv[2])
if a != b:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            print(f"collective {i}: {x} != {y}")
            break
    print(f"{sys.argv[1]}: {len(a)} collectives, {sys.argv[2]}: {len(b)}")
    sys.exit(1)
print(f"{len(a)} collectives, the same")
