"""Checks a compile report against formulas.

    check-report.py REPORT 'EXPR' ...

Each EXPR is a Python expression that must hold, over these names:
  psi                 param_bytes_total (logical parameter bytes)
  nranks              the report's rank count
  total(kind, phase=None, origin=None, reduction=None)
                      summed payload_bytes of matching collectives; origin
                      "param" matches any parameter name, "activation",
                      "loss" and "grad_norm" match themselves; reduction "max" matches
                      all-reduces by max, "sum" the others
  number(kind, phase=None, origin=None)
                      how many collectives match
  payloads(kind, phase=None, origin=None)
                      the set of payload sizes of matching collectives
  tensors(kind, phase=None, origin=None)
                      per matching collective, in order, the tensors it
                      carries: its "tensors" (a bucket's or a group's), or
                      [origin]
  rank(field)         the field of per_rank[0]; every rank must agree
  partition(field)    a field of the "partition" object
Exits 1 and prints every failing expression with the values it saw.
"""
import json
import sys

report = json.load(open(sys.argv[1]))
collectives = report["collectives"]


def matches(c, kind, phase, origin, reduction):
    if kind is not None and c["kind"] != kind:
        return False
    if reduction is not None and c.get("reduction", "sum") != reduction:
        return False
    if phase is not None and c["phase"] != phase:
        return False
    if origin is None:
        return True
    if origin == "param":
        return c["origin"] not in ("activation", "loss", "grad_norm")
    return c["origin"] == origin


def select(kind=None, phase=None, origin=None, reduction=None):
    return [c for c in collectives if matches(c, kind, phase, origin, reduction)]


def rank(field):
    values = {r[field] for r in report["per_rank"]}
    if len(values) != 1:
        raise AssertionError("ranks disagree on %s: %s" % (field, values))
    return values.pop()


names = {
    "psi": report["param_bytes_total"],
    "nranks": report["nranks"],
    "total": lambda *a, **k: sum(c["payload_bytes"] for c in select(*a, **k)),
    "number": lambda *a, **k: len(select(*a, **k)),
    "payloads": lambda *a, **k: {c["payload_bytes"] for c in select(*a, **k)},
    "tensors": lambda *a, **k: [c.get("tensors", [c["origin"]])
                                for c in select(*a, **k)],
    "rank": rank,
    "partition": lambda field: report["partition"][field],
}

failed = False
for expression in sys.argv[2:]:
    if not eval(expression, {}, names):
        failed = True
        # Show the value of each call in the expression.
        print("FAILED: %s" % expression)
    else:
        print("ok: %s" % expression)
if failed:
    print("collectives by (kind, phase, origin class):")
    summary = {}
    for c in collectives:
        origin = c["origin"] if c["origin"] in ("activation", "loss") else "param"
        key = (c["kind"], c["phase"], origin)
        n, b = summary.get(key, (0, 0))
        summary[key] = (n + 1, b + c["payload_bytes"])
    for key, (n, b) in sorted(summary.items()):
        print("  %s: %d collectives, %d bytes" % (key, n, b))
    print("psi = %d, per rank: %s" % (report["param_bytes_total"], report["per_rank"][0]))
    sys.exit(1)
