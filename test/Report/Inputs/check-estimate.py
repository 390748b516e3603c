"""Checks a report's network_estimate against hand-computed figures.

    check-estimate.py REPORT 'EXPR' ...

Each EXPR is a Python expression that must hold, over these names:
  e            the report's "network_estimate" object
  c(i)         e["collectives"][i]
  report       the whole report
  near(a, b)   a and b agree to 1e-9 relative (JSON prints doubles to 17
               digits, so a hand-computed decimal is never exact)
  load(path)   another report, to compare with
Exits 1 and prints every failing expression with its value.
"""
import json
import sys

report = json.load(open(sys.argv[1]))
e = report["network_estimate"]


def c(i):
    return e["collectives"][i]


def near(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-12)


failed = False
for expr in sys.argv[2:]:
    env = {"e": e, "c": c, "report": report, "near": near,
           "load": lambda path: json.load(open(path))}
    if not eval(expr, env):
        failed = True
        left = expr.split("(", 1)[1].rsplit(",", 1)[0] if expr.startswith(
            "near(") else expr
        try:
            seen = eval(left, env)
        except Exception:
            seen = "?"
        print("FAILED: %s (saw %r)" % (expr, seen))
sys.exit(1 if failed else 0)
