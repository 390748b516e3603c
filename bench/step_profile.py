#!/usr/bin/env python3
"""Where a compiled step's time goes, per kind of work.

    python3 bench/step_profile.py [--build build] [--config medium] [--steps K]
                             [--ranks 1|2] [--preset ddp|zero1|zero2|zero3]

Compiles the GPT-2 shaped config with spmdc (AdamW; 2 ranks: the data
parallel preset named, ddp by default), then samples one run of 1 + K
steps of spmd-run with `perf record -k 1` (SPMD_RUN_PERF=1 names the
JIT-compiled functions). The run's `--trace` gives each step's span on
the same clock (CLOCK_MONOTONIC), and only the samples of steps 2 to 1 + K
count: the JIT, the inputs and the first step's fresh pages are left out.
Each sample is charged by the function it fell in:

  GEMM          the runtime's AMX kernels, oneDNN, OpenBLAS and
                spmd_matmul_* (the model's matmuls, attention's included;
                oneDNN's JIT kernels, which perf shows as [unknown])
  attention     the loop nests of attention and its gradient, but for its
                GEMMs (`*_nest<N>_attention_*`: scaling, masking, softmax)
  optimizer     the optimizer's update (`*_nest<N>_optimizer_*`)
  elementwise   other loop nests that store at every point of their loops
                (`*_nest<N>_map`: elementwise math, copies, transposes,
                gathers)
  reductions    other loop nests that accumulate (`*_nest<N>_reduce`: sums,
                max, softmax and layer-norm statistics)
  collectives   spmd_collective_* and MPI
  memory        malloc/free/memcpy and the kernel (fresh pages)
  glue          the straight-line code between nests (main, forward_body,
                backward_body)
  other         the rest

and printed as ms per step (per rank), its share of the step, and the
fraction of the relevant ceiling: for GEMM the one-core SGEMM ceiling
(numpy's OpenBLAS) its FLOPs reach; for the optimizer the memory bandwidth
(one core's copy GB/s) that AdamW's 7 floats per parameter (read p, g, m,
v; write p, m, v) reach. Setup (start to the first step: inputs built,
native code linked) and the first step (the JIT, fresh pages) are printed
apart: they are paid once, not per step; the `step 1` column is the
first step's samples by kind. A benchmark, not a test; needs
`perf` (Debian: linux-perf).
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402  (configs, FLOPs, the SGEMM ceiling)
import make_examples  # noqa: E402  (on the path peers sets)

KINDS = ("GEMM", "attention", "optimizer", "elementwise", "reductions",
         "collectives", "memory", "glue", "other")
GLUE = re.compile(r"^(main|\w+_body)$")


def kind_of(symbol, dso):
    work = re.search(r"_nest\d+_(attention|optimizer)_", symbol)
    if work:
        return work.group(1)
    if re.search(r"_nest\d+_map", symbol):
        return "elementwise"
    if re.search(r"_nest\d+_reduce", symbol):
        return "reductions"
    # oneDNN's GEMM kernels are JIT code, named in a perf map
    # (DNNL_JIT_PROFILE=2) as jit_..._gemm_... where its build supports
    # that; Debian's does not, and perf puts them in [unknown]. The only
    # other code made at run time is spmdc's, which SPMD_RUN_PERF names
    # (jitted-*.so), so [unknown] is oneDNN's kernels.
    if ("openblas" in dso or "dnnl" in dso or dso == "[unknown]"
            or symbol.startswith(("spmd_matmul", "sgemm", "dgemm",
                                  "spmdc::rt::amx::"))
            or (symbol.startswith("jit_") and "gemm" in symbol)):
        return "GEMM"
    if (symbol.startswith(("spmd_collective", "spmdc::rt::collectives::",
                           "MPI_", "ompi_", "mca_", "opal_"))
            or dso.startswith("mca_")
            or re.search(r"lib(mpi|open-pal|open-rte|ucp|ucs|uct)", dso)):
        return "collectives"
    if GLUE.match(symbol):
        return "glue"
    if dso.startswith("[kernel") or re.match(
            r"^(_int_malloc|_int_free|malloc|free|cfree|__memmove|__memset|"
            r"memcpy|memset|malloc_consolidate|memrefCopy|unlink_chunk)",
            symbol):
        return "memory"
    return "other"


def samples_by_kind(injected, window):
    """Samples per kind in a perf.data file that perf inject --jit has
    named, within `window` (perf report --time: "start,stop" in seconds)."""
    report = subprocess.run(
        ["perf", "report", "-i", injected, "--stdio", "--no-children",
         "--sort", "dso,sym", "-F", "sample,dso,sym", "-g", "none",
         "--time", window],
        check=True, capture_output=True, text=True).stdout
    counts, functions = collections.Counter(), collections.Counter()
    for line in report.splitlines():
        m = re.match(r"\s*(\d+)\s+(\S+)\s+\[[.k]\]\s+(.+?)\s*$", line)
        kind = m and kind_of(m.group(3), m.group(2))
        if kind:
            counts[kind] += int(m.group(1))
            functions[(m.group(3), m.group(2))] += int(m.group(1))
    return counts, functions


def step_spans(trace_file):
    """Each step's (start, end) in seconds on CLOCK_MONOTONIC, from rank 0's
    track of an spmd-run --trace file."""
    trace = json.load(open(trace_file))
    origin = trace["otherData"]["origin_us"]
    spans = {}
    for e in trace["traceEvents"]:
        if e.get("cat") == "step" and e.get("pid") == 0:
            step = int(e["name"].split()[1])
            start = (origin + e["ts"]) / 1e6
            spans[step] = (start, start + e["dur"] / 1e6)
    return spans


def ceilings():
    """One core's SGEMM GFLOP/s (the best of numpy's OpenBLAS and oneDNN,
    on one thread) and copy GB/s."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    code = ("import sys, json; sys.path.insert(0, %r); import peers; "
            "print(json.dumps(peers.child_ceilings()))" % HERE)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout
    measured = json.loads(out.splitlines()[-1])
    sgemm = max(v for k, v in measured.items() if k.startswith("sgemm"))
    return sgemm, measured["copy GB/s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE),
                                                    "build"))
    ap.add_argument("--config", default="medium", choices=list(peers.CONFIGS))
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--ranks", type=int, default=1, choices=(1, 2))
    ap.add_argument("--preset", default="ddp",
                    choices=("ddp", "zero1", "zero2", "zero3"),
                    help="the data-parallel preset of 2 ranks")
    ap.add_argument("--precision", default="f32", choices=("f32", "bf16"),
                    help="spmdc --precision (bf16: the matmuls in bf16)")
    ap.add_argument("--threads", type=int, default=1,
                    help="spmd-run --threads: a rank's threads")
    ap.add_argument("--frequency", type=int, default=997)
    ap.add_argument("--top", type=int, default=12,
                    help="functions to list by their time")
    args = ap.parse_args()
    if not shutil.which("perf"):
        sys.exit("step_profile.py: needs perf (Debian: apt-get install linux-perf)")
    cfg = peers.CONFIGS[args.config]
    steps = args.steps or peers.STEPS[args.config]
    tmp = tempfile.mkdtemp(prefix="spmdc-profile-")
    graph = os.path.join(tmp, "graph.json")
    with open(graph, "w") as f:
        f.write(make_examples.to_json(
            make_examples.make_gpt2_mini(**cfg).document()))
    module = os.path.join(tmp, "step.mod")
    cmd = [os.path.join(args.build, "bin", "spmdc"), graph, "-o", module,
           "--optimizer", "adamw", "--precision", args.precision]
    if args.ranks == 2:
        spec = os.path.join(tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({"version": 1, "mesh": {"axes": ["dp"], "shape": [2]},
                       "presets": {"dp": args.preset}}, f)
        cmd += ["--shard-spec", spec]
    subprocess.run(cmd, check=True)

    env = dict(os.environ, SPMD_RUN_PERF="1", SPMDC_CACHE_DIR="off",
               DNNL_JIT_PROFILE="2")
    data = os.path.join(tmp, "perf.data")
    trace = os.path.join(tmp, "trace.json")
    run = ["perf", "record", "-q", "-k", "1", "-F", str(args.frequency),
           "-o", data, "--", os.path.join(args.build, "bin", "spmd-run"),
           module, "--nranks", str(args.ranks), "--steps", str(1 + steps),
           "--threads", str(args.threads), "--trace", trace,
           "--log-level", "info"]
    launched = time.clock_gettime(time.CLOCK_MONOTONIC)
    subprocess.run(run, check=True, env=env, cwd=tmp,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    spans = step_spans(trace)
    window = f"{spans[2][0]:.6f},{spans[1 + steps][1]:.6f}"
    injected = os.path.join(tmp, "injected.data")
    subprocess.run(["perf", "inject", "--jit", "-i", data, "-o", injected],
                   check=True, stderr=subprocess.DEVNULL)
    counts, functions = samples_by_kind(injected, window)
    first_counts, _ = samples_by_kind(
        injected, f"{spans[1][0]:.6f},{spans[1][1]:.6f}")
    step_ms = sorted((end - start) * 1e3 for step, (start, end)
                     in spans.items() if step != 1)
    setup_s = spans[1][0] - launched
    first_ms = (spans[1][1] - spans[1][0]) * 1e3

    flops, params = peers.model_flops(cfg)
    sgemm, copy_gbs = ceilings()
    per_step = {k: counts[k] / args.frequency / steps / args.ranks * 1e3
                for k in KINDS}
    total = sum(per_step.values())
    first = {k: first_counts[k] / args.frequency / args.ranks * 1e3
             for k in KINDS}
    layout = f" {args.preset}" if args.ranks == 2 else ""
    print(f"{args.config}, {args.precision}, {args.ranks} rank(s){layout} of "
          f"{args.threads} thread(s), {steps} steps profiled; "
          f"one core's ceilings: SGEMM {sgemm:.1f} GFLOP/s, copy "
          f"{copy_gbs:.1f} GB/s")
    print(f"{'kind':<14}{'ms/step':>10}{'share':>8}{'step 1':>10}  "
          f"of ceiling")
    for k in KINDS:
        note = ""
        if k == "GEMM" and per_step[k] > 0:
            gflops = flops / args.ranks / (per_step[k] / 1e3) / 1e9
            note = f"  {gflops:.1f} GFLOP/s, {gflops / sgemm:.0%} of SGEMM"
        if k == "optimizer" and per_step[k] > 0:
            # AdamW: p, g, m, v read and p, m, v written, 4 bytes each, of
            # every parameter on every rank (ddp replicates the update; the
            # zero presets update a rank's shard).
            updated = params if args.preset == "ddp" else params / args.ranks
            gbs = 7 * 4 * updated / (per_step[k] / 1e3) / 1e9
            note = f"  {gbs:.1f} GB/s, {gbs / copy_gbs:.0%} of copy"
        print(f"{k:<14}{per_step[k]:>10.2f}{per_step[k] / total:>8.0%}"
              f"{first[k]:>10.2f}{note}")
    median = step_ms[len(step_ms) // 2] if step_ms else float("nan")
    print(f"{'total':<14}{total:>10.2f}{'':>8}{sum(first.values()):>10.2f}"
          f"  (spmd-run's median step {median:.2f} ms)")
    print(f"{'setup':<14}{setup_s * 1e3:>10.2f}   once, start to the first "
          f"step: inputs built, perf's own start")
    print(f"{'first step':<14}{first_ms:>10.2f}   once: the JIT (no cache), "
          f"fresh pages")
    print("\nthe functions that take most (ms/step):")
    for (f, dso), n in functions.most_common(args.top):
        print(f"  {n / args.frequency / steps / args.ranks * 1e3:8.2f}  "
              f"{kind_of(f, dso):<12} {f}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
