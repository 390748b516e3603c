#!/usr/bin/env python3
"""Bucketing and overlap against one collective per tensor, blocking.

    python3 bench/overlap.py [--configs medium small-4x128] [--steps 6]

For each model (bench/peers.py's configurations, the same graph
bench/peers.py times), compiles the step for one rank and for 2 ranks
under ddp and zero3, blocking with one collective per tensor
(`--bucket-mb 0`, `--fsdp-group tensor`) and bucketed (the default
buckets, zero3's per-block groups) with and without `--overlap`, runs each with `spmd-run --trace`,
and prints rank 0's ms per step (steps after the first, averaged as
bench/exposed.py does): the step, the exposed communication (blocking
collectives and waits), the time collectives were under way from start to
wait, GEMMs, and the ratio of the step to the 1-rank step.
docs/benchmarks.md records the figures.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools", "examples"))
from exposed import per_step_ms  # noqa: E402
import make_examples  # noqa: E402
import peers  # noqa: E402

BIN = os.path.join(HERE, "..", "build", "bin")
SPECS = os.path.join(HERE, "..", "docs", "examples", "specs")
VARIANTS = [
    ("1 rank", None, []),
    ("ddp, --bucket-mb 0, blocking", "ddp", ["--bucket-mb", "0"]),
    ("ddp, buckets, blocking", "ddp", []),
    ("ddp, buckets, --overlap", "ddp", ["--overlap"]),
    ("zero3, --fsdp-group tensor, blocking", "zero3", ["--fsdp-group", "tensor"]),
    ("zero3, groups, blocking", "zero3", []),
    ("zero3, groups, --overlap", "zero3", ["--overlap"]),
]


def measure(graph, spec, flags, steps, tmp):
    mod, trace = os.path.join(tmp, "m.mod"), os.path.join(tmp, "t.json")
    cmd = [os.path.join(BIN, "spmdc"), graph, "-o", mod] + flags
    if spec:
        cmd += ["--shard-spec", os.path.join(SPECS, spec + ".json")]
    subprocess.run(cmd, check=True)
    subprocess.run([os.path.join(BIN, "spmd-run"), mod, "--nranks",
                    "2" if spec else "1", "--steps", str(steps), "--trace",
                    trace], check=True, stdout=subprocess.DEVNULL)
    return per_step_ms(trace)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--configs", nargs="+", default=["medium", "small-4x128"],
                   choices=sorted(peers.CONFIGS))
    p.add_argument("--steps", type=int, default=6)
    a = p.parse_args()
    for name in a.configs:
        with tempfile.TemporaryDirectory() as tmp:
            graph = os.path.join(tmp, "g.json")
            g = make_examples.make_gpt2_mini(**peers.CONFIGS[name])
            with open(graph, "w") as f:
                f.write(make_examples.to_json(g.document()))
            print(f"\n{name}, {a.steps} steps (the first not counted), "
                  "rank 0, ms per step")
            print("%-38s %9s %9s %9s %9s %8s" % (
                "", "step", "exposed", "under way", "GEMMs", "/1 rank"))
            one = None
            for label, spec, flags in VARIANTS:
                m = measure(graph, spec, flags, a.steps, tmp)
                one = one or m["step"]
                print("%-38s %9.1f %9.1f %9.1f %9.1f %8.2f" % (
                    label, m["step"], m.get("collective", 0),
                    m.get("collective_async", 0), m.get("gemm", 0),
                    m["step"] / one), flush=True)


if __name__ == "__main__":
    main()
