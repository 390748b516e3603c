"""compare-losses.py ACTUAL EXPECTED --rtol R: the `step K loss X` lines of
two runs must have the same steps and losses within R relative."""
import argparse
import sys

parser = argparse.ArgumentParser()
parser.add_argument("actual")
parser.add_argument("expected")
parser.add_argument("--rtol", type=float, required=True)
args = parser.parse_args()


def read(path):
    steps = []
    for line in open(path):
        words = line.split()
        if len(words) != 4 or words[0] != "step" or words[2] != "loss":
            sys.exit("%s: not a step line: %r" % (path, line))
        steps.append((int(words[1]), float(words[3])))
    return steps


actual, expected = read(args.actual), read(args.expected)
if [s for s, _ in actual] != [s for s, _ in expected] or not expected:
    sys.exit("steps differ: %s vs %s" % (actual, expected))
for (step, a), (_, e) in zip(actual, expected):
    if abs(a - e) > args.rtol * abs(e):
        sys.exit("step %d: loss %r, expected %r (rtol %g)" % (step, a, e, args.rtol))
print("%d steps agree" % len(expected))
