#!/usr/bin/env python3
"""Step time of compiled spmdc modules against PyTorch eager on the CPU.

    python3 bench/step_time.py [--build build] [--steps K] [--opt-level N]
                               [--configs mini,medium,small]

For each GPT-2 shaped config it generates the JSON graph, compiles it with
spmdc (1 rank, and ZeRO-1 data parallel over 2 ranks), and runs 1 + K steps
with spmd-run; the step time is the median of the times spmd-run logs for
steps 2..K+1 (all ranks' logs; JIT compilation and input set-up are not
counted, and "first run s" is the rest of the run's wall time). PyTorch eager (when installed) trains the same model with AdamW on
one thread, as the compiled step uses one per rank. Prints one row per
config and rank count, and the ratio compiled / PyTorch. A benchmark, not a
test: nothing fails on a slow figure.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

STEP_LINE = re.compile(r"step (\d+) took ([0-9.]+) ms")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "examples"))
sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))
import make_examples  # noqa: E402

# name -> make_gpt2_mini arguments. "small" is GPT-2 small's width, depth and
# vocabulary at a short sequence; its naive-loop step takes minutes.
CONFIGS = {
    "mini": dict(batch=4, seq=16, vocab=96, n_embd=32, n_head=4,
                 mlp_hidden=128, n_layer=2),
    "medium": dict(batch=4, seq=64, vocab=512, n_embd=128, n_head=4,
                   mlp_hidden=512, n_layer=4),
    "small": dict(batch=1, seq=64, vocab=50257, n_embd=768, n_head=12,
                  mlp_hidden=3072, n_layer=12),
}
# Steps timed per config: enough that the difference of two runs is well
# above the noise of JIT compilation.
STEPS = {"mini": 200, "medium": 20, "small": 3}


def timed(cmd, **kw):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.perf_counter() - start


def spmdc_step(build, graph, spec, ranks, steps, opt_level, tmp):
    module = os.path.join(tmp, f"step-{ranks}.mod")
    cmd = [os.path.join(build, "bin", "spmdc"), graph, "-o", module]
    if spec:
        cmd += ["--shard-spec", spec]
    compile_s = timed(cmd)
    run = [os.path.join(build, "bin", "spmd-run"), module, "--nranks",
           str(ranks), "--opt-level", str(opt_level), "--log-level", "info",
           "--steps", str(1 + steps)]
    start = time.perf_counter()
    done = subprocess.run(run, check=True, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    total = time.perf_counter() - start
    # Rank 0's "step K took X ms" lines; the first step warms caches up.
    times = [float(m.group(2)) / 1e3
             for m in STEP_LINE.finditer(done.stderr) if m.group(1) != "1"]
    times.sort()
    step = times[len(times) // 2]
    return compile_s, total - step * len(times), step


def torch_step(cfg, steps):
    try:
        import torch
        import torch_reference
    except ImportError:
        return None
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch_reference.GPT2Mini(vocab=cfg["vocab"], seq=cfg["seq"],
                                     n_embd=cfg["n_embd"],
                                     n_head=cfg["n_head"],
                                     hidden=cfg["mlp_hidden"],
                                     n_layer=cfg["n_layer"])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]))
    labels = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]))

    def step():
        opt.zero_grad()
        model(tokens, labels).backward()
        opt.step()

    step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=0,
                    help="steps timed (default: per config)")
    ap.add_argument("--opt-level", type=int, default=1,
                    help="spmd-run --opt-level")
    ap.add_argument("--configs", default="mini,medium")
    args = ap.parse_args()
    print(f"{'config':8} {'params':>10} {'ranks':>5} {'compile s':>9} "
          f"{'1st run s':>9} {'step ms':>9} {'torch ms':>9} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.configs.split(","):
            cfg = CONFIGS[name]
            g = make_examples.make_gpt2_mini(**cfg)
            graph = os.path.join(tmp, f"{name}.json")
            with open(graph, "w") as f:
                f.write(make_examples.to_json(g.document()))
            spec = os.path.join(tmp, "zero1.json")
            with open(spec, "w") as f:
                json.dump({"version": 1,
                           "mesh": {"axes": ["dp"], "shape": [2]},
                           "presets": {"dp": "zero1"}}, f)
            steps = args.steps or STEPS[name]
            torch_s = torch_step(cfg, steps)
            for ranks in (1, 2):
                if ranks > cfg["batch"]:
                    continue
                c, one, step = spmdc_step(args.build, graph,
                                          spec if ranks > 1 else None, ranks,
                                          steps, args.opt_level, tmp)
                torch_ms = f"{torch_s * 1e3:9.2f}" if torch_s else f"{'-':>9}"
                ratio = (f"{step / torch_s:6.2f}" if torch_s and ranks == 1
                         else f"{'-':>6}")
                print(f"{name:8} {g.num_params():>10} {ranks:>5} {c:9.2f} "
                      f"{one:9.2f} {step * 1e3:9.2f} {torch_ms} {ratio}",
                      flush=True)


if __name__ == "__main__":
    main()
