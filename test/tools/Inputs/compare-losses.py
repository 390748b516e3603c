"""Compares the `step K loss X` lines of two runs: the same steps, each
loss within a relative TOLERANCE (a sharded run against one rank)."""
import sys

a, b, tolerance = sys.argv[1], sys.argv[2], float(sys.argv[3])


def losses(path):
    return [(int(l.split()[1]), float(l.split()[3])) for l in open(path) if l.startswith("step ")]


la, lb = losses(a), losses(b)
assert [s for s, _ in la] == [s for s, _ in lb] and la, (la, lb)
for (step, x), (_, y) in zip(la, lb):
    assert abs(x - y) <= tolerance * max(1.0, abs(x)), "step %d: %r against %r" % (step, x, y)
print("%d losses agree" % len(la))
