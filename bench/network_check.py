#!/usr/bin/env python3
"""The report's network estimate against a measured run on this machine.

    python3 bench/network_check.py GRAPH SPEC NETWORK [--nranks 2] [--steps 4]
        [--spmdc-flag=...]

NETWORK is spmdc's --network value with this machine's figures
(alpha-us and gbps from bench/allreduce_link.c, flops from
bench/gemm_libraries.c: one rank's GEMM rate; optionally membw from
bench/stream_triad.c: one core's triad GB/s). Compiles GRAPH under SPEC
with --report --network, runs it with spmd-run --trace, and prints the
estimate's step and communication against rank 0's measured step and time
in collectives (steps after the first, averaged as bench/exposed.py does),
with their ratios. docs/benchmarks.md records the figures.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exposed import per_step_ms  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "..", "build", "bin")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("graph")
    p.add_argument("spec")
    p.add_argument("network")
    p.add_argument("--nranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--spmdc-flag", action="append", default=[])
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        mod, rep, trace = (os.path.join(d, n)
                           for n in ("m.mod", "r.json", "t.json"))
        subprocess.run([os.path.join(BIN, "spmdc"), a.graph, "--shard-spec",
                        a.spec, "--report", rep, "--network", a.network,
                        "-o", mod] + a.spmdc_flag, check=True)
        subprocess.run([os.path.join(BIN, "spmd-run"), mod, "--nranks",
                        str(a.nranks), "--steps", str(a.steps), "--trace",
                        trace], check=True, stdout=subprocess.DEVNULL)
        e = json.load(open(rep))["network_estimate"]
        m = per_step_ms(trace)
    rows = [("step", e["step_ms"], m["step"]),
            ("compute (measured: step - collectives)", e["compute_ms"],
             m["step"] - m.get("collective", 0)),
            ("exposed communication", e["exposed_communication_ms"],
             m.get("collective", 0)),
            ("GEMMs (measured) vs compute", e["compute_ms"], m.get("gemm", 0))]
    print("%-40s %12s %12s %7s" % ("", "estimate ms", "measured ms",
                                   "ratio"))
    for name, est, got in rows:
        print("%-40s %12.3f %12.3f %7.2f" % (name, est, got,
                                             est / got if got else 0))


if __name__ == "__main__":
    main()
