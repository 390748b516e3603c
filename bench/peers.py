#!/usr/bin/env python3
"""spmdc against PyTorch eager, torch.compile and JAX jit, side by side.

    python3 bench/peers.py [--configs mini,medium,small-4x128,small-1x64]
                           [--steps K] [--build build] [--skip-peers]
                           [--bf16]

For each GPT-2 shaped config (the graph of tools/examples/make_examples.py,
and the same model in PyTorch, tools/reference/torch_reference.py, and in
JAX, below) it draws one set of initial values and one batch with numpy,
writes them as safetensors files, and trains K AdamW steps (lr 1e-3,
weight decay 0.01) in every system from those values. It checks that the
first step's loss agrees across systems (1e-3 relative: f32, different
summation orders) and prints, per row, the median step time, the ratio to
JAX's row on the same cores and to the best PyTorch row on them, and the
fraction of the machine's ceiling the step reaches (model FLOPs / step
time / (SGEMM ceiling x cores used)).

Rows (each in its own process, pinned with taskset / sched_setaffinity):

  spmdc 1 rank, 1 core         spmd-run on core 0
  spmdc 1 rank, all cores      spmd-run on every core, --threads all
  spmdc 2 ranks ddp            spmd-run --nranks 2 (one core each)
  torch eager 1 / all threads  torch.set_num_threads
  torch.compile all threads
  jax jit 1 core               os.sched_setaffinity({0}) before import
  jax jit 1 device             all cores
  jax jit 2 devices (dp)       --xla_force_host_platform_device_count=2,
                               the batch sharded over both

With --bf16, two rows more, compared with each other:

  spmdc 1 rank, all cores, bf16  spmdc --precision=bf16 (matmuls in bf16)
  torch eager bf16 all threads   torch.autocast("cpu", dtype=torch.bfloat16)

"ready s" is the wall time from starting the process to the end of its
first step: for spmdc, "ready" is spmdc's compile plus spmd-run's start,
inputs and first step with an empty native-code cache, "warm" a second
spmd-run of the same module (its native code cached), "compile s"
spmdc alone. The ceilings are measured first: SGEMM GFLOP/s on one
core with the best library installed (OpenBLAS through numpy, PyTorch's,
JAX's), the memory bandwidth of one core (a large numpy copy), and the
rate at which the kernel hands out fresh pages ("fresh GB/s": a new
block's first write less its second, the best of four blocks; the first
block's rate too, which on a virtual machine includes the host backing
pages it had taken back). "floor s" is what a warm start cannot go below
on this machine: the step, plus every byte the ranks' steps hold (the
compile report's peak memory) faulted in at the best rate.

A benchmark, not a test: nothing fails on a slow figure. docs/benchmarks.md
records its output.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "examples"))
sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))

import step_time  # noqa: E402  (mini, medium and GPT-2 small's shape)

CONFIGS = {
    "mini": step_time.CONFIGS["mini"],
    "medium": step_time.CONFIGS["medium"],
    "small-4x128": dict(step_time.CONFIGS["small"], batch=4, seq=128),
    "small-1x64": step_time.CONFIGS["small"],
}
STEPS = {"mini": 50, "medium": 10, "small-4x128": 3, "small-1x64": 3}
ADAMW = dict(lr=1e-3, weight_decay=0.01, betas=(0.9, 0.999), eps=1e-8)
STEP_LINE = re.compile(r"step (\d+) took ([0-9.]+) ms")
LOSS_LINE = re.compile(r"step (\d+) loss ([-0-9.e+naif]+)")


# ---------------------------------------------------------------------------
# The model's values: numpy, written once, read by every system
# ---------------------------------------------------------------------------

def param_shapes(cfg):
    d, h, v, s = cfg["n_embd"], cfg["mlp_hidden"], cfg["vocab"], cfg["seq"]
    shapes = {"wte.weight": (v, d), "wpe.weight": (s, d),
              "ln_f.weight": (d,), "ln_f.bias": (d,)}
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            shapes[p + ln + ".weight"] = (d,)
            shapes[p + ln + ".bias"] = (d,)
        for proj in ("q_proj", "k_proj", "v_proj", "c_proj"):
            shapes[p + "attn." + proj + ".weight"] = (d, d)
            shapes[p + "attn." + proj + ".bias"] = (d,)
        shapes[p + "mlp.c_fc.weight"] = (h, d)
        shapes[p + "mlp.c_fc.bias"] = (h,)
        shapes[p + "mlp.c_proj.weight"] = (d, h)
        shapes[p + "mlp.c_proj.bias"] = (d,)
    return shapes


def initial_values(cfg):
    import numpy as np
    rng = np.random.default_rng(0)
    params = {}
    for name, shape in param_shapes(cfg).items():
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or \
                name == "ln_f.weight":
            params[name] = np.ones(shape, np.float32)
        elif name.endswith(".bias"):
            params[name] = np.zeros(shape, np.float32)
        else:
            params[name] = (rng.standard_normal(shape) * 0.02).astype(
                np.float32)
    data = {n: rng.integers(0, cfg["vocab"], (cfg["batch"], cfg["seq"]))
            .astype(np.int64) for n in ("tokens", "labels")}
    return params, data


def model_flops(cfg):
    """6 x parameters x tokens plus the attention scores (12 L T S d)."""
    n = sum(int(__import__("math").prod(s)) for s in param_shapes(cfg).values())
    tokens = cfg["batch"] * cfg["seq"]
    return 6 * n * tokens + 12 * cfg["n_layer"] * tokens * cfg["seq"] * \
        cfg["n_embd"], n


# ---------------------------------------------------------------------------
# Peers, each run in a child process (`peers.py --child KIND ...`)
# ---------------------------------------------------------------------------

def child_torch(cfg, files, steps, threads, compiled, bf16=False):
    import torch
    import torch_reference
    from safetensors.torch import load_file
    torch.set_num_threads(threads)
    model = torch_reference.GPT2Mini(vocab=cfg["vocab"], seq=cfg["seq"],
                                     n_embd=cfg["n_embd"],
                                     n_head=cfg["n_head"],
                                     hidden=cfg["mlp_hidden"],
                                     n_layer=cfg["n_layer"])
    model.load_state_dict(load_file(files["params"]))
    data = load_file(files["data"])
    opt = torch.optim.AdamW(model.parameters(), lr=ADAMW["lr"],
                            weight_decay=ADAMW["weight_decay"])

    def step():
        opt.zero_grad()
        # bf16: autocast's CPU rule, matmuls in bf16 and the rest in f32,
        # as spmdc's --precision=bf16.
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(data["tokens"], data["labels"])
        loss.backward()
        opt.step()
        return loss

    fn = torch.compile(step) if compiled else step
    return timed_steps(lambda: float(fn()), steps)


def gpt2_jax(cfg):
    import jax
    import jax.numpy as jnp

    def layer_norm(x, w, b):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * w + b

    def linear(x, p, name):
        return x @ p[name + ".weight"].T + p[name + ".bias"]

    def loss_fn(p, tokens, labels):
        b, s = tokens.shape
        d, nh = cfg["n_embd"], cfg["n_head"]
        x = p["wte.weight"][tokens] + p["wpe.weight"][jnp.arange(s)]
        causal = jnp.tril(jnp.ones((s, s), bool))
        for i in range(cfg["n_layer"]):
            q = f"h.{i}."
            y = layer_norm(x, p[q + "ln_1.weight"], p[q + "ln_1.bias"])
            heads = [linear(y, p, q + "attn." + n).reshape(b, s, nh, d // nh)
                     .transpose(0, 2, 1, 3)
                     for n in ("q_proj", "k_proj", "v_proj")]
            scores = heads[0] @ heads[1].transpose(0, 1, 3, 2) / \
                jnp.sqrt(d // nh)
            scores = jnp.where(causal, scores, -jnp.inf)
            att = jax.nn.softmax(scores, -1) @ heads[2]
            x = x + linear(att.transpose(0, 2, 1, 3).reshape(b, s, d), p,
                           q + "attn.c_proj")
            y = layer_norm(x, p[q + "ln_2.weight"], p[q + "ln_2.bias"])
            h = jax.nn.gelu(linear(y, p, q + "mlp.c_fc"), approximate=True)
            x = x + linear(h, p, q + "mlp.c_proj")
        x = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"])
        logits = x @ p["wte.weight"].T
        logp = jax.nn.log_softmax(logits, -1)
        return -jnp.take_along_axis(logp, labels[..., None], -1).mean()

    def train_step(p, m, v, t, tokens, labels):
        loss, g = jax.value_and_grad(loss_fn)(p, tokens, labels)
        b1, b2 = ADAMW["betas"]
        lr, wd, eps = ADAMW["lr"], ADAMW["weight_decay"], ADAMW["eps"]
        t = t + 1
        m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
        v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
        p = jax.tree.map(
            lambda p, m, v: p * (1 - lr * wd) - lr * (m / (1 - b1 ** t)) /
            (jnp.sqrt(v / (1 - b2 ** t)) + eps), p, m, v)
        return loss, p, m, v, t

    return train_step


def child_jax(cfg, files, steps, devices):
    import jax
    import jax.numpy as jnp
    from safetensors.numpy import load_file
    params = {k: jnp.asarray(v) for k, v in load_file(files["params"]).items()}
    data = load_file(files["data"])
    tokens, labels = jnp.asarray(data["tokens"]), jnp.asarray(data["labels"])
    if devices > 1:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        mesh = Mesh(jax.devices()[:devices], ("dp",))
        batch = NamedSharding(mesh, P("dp"))
        tokens = jax.device_put(tokens, batch)
        labels = jax.device_put(labels, batch)
    step = jax.jit(gpt2_jax(cfg), donate_argnums=(0, 1, 2))
    state = [params, jax.tree.map(jnp.zeros_like, params),
             jax.tree.map(jnp.zeros_like, params), jnp.zeros((), jnp.float32)]

    def one():
        loss, *new = step(*state, tokens, labels)
        state[:] = new
        return float(loss)

    return timed_steps(one, steps)


def timed_steps(step, steps):
    start = time.perf_counter()
    loss = step()
    first = time.perf_counter() - start
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    times.sort()
    return dict(loss=loss, first_s=first, step_s=times[len(times) // 2])


def child_ceilings():
    import numpy as np
    n = 2048
    a = np.random.default_rng(0).standard_normal((n, n), np.float32)
    results = {}

    def best(f, reps=3):
        f()
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            f()
            times.append(time.perf_counter() - t)
        return min(times)

    results["sgemm numpy"] = 2 * n ** 3 / best(lambda: a @ a) / 1e9
    try:
        import torch
        torch.set_num_threads(1)
        t = torch.from_numpy(a)
        results["sgemm torch"] = 2 * n ** 3 / best(lambda: t @ t) / 1e9
    except ImportError:
        pass
    # oneDNN's dnnl_sgemm, the f32 GEMM of spmdc's runtime where it is
    # installed (libdnnl-dev), called directly through ctypes.
    try:
        import ctypes
        import ctypes.util
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        dnnl = ctypes.CDLL(ctypes.util.find_library("dnnl") or "libdnnl.so")
        c = np.empty_like(a)
        ptr = ctypes.POINTER(ctypes.c_float)
        dnnl.dnnl_sgemm.argtypes = [
            ctypes.c_char, ctypes.c_char, ctypes.c_int64, ctypes.c_int64,
            ctypes.c_int64, ctypes.c_float, ptr, ctypes.c_int64, ptr,
            ctypes.c_int64, ctypes.c_float, ptr, ctypes.c_int64]
        ap, cp = (x.ctypes.data_as(ptr) for x in (a, c))
        results["sgemm onednn"] = 2 * n ** 3 / best(
            lambda: dnnl.dnnl_sgemm(b"N", b"N", n, n, n, 1.0, ap, n, ap, n,
                                    0.0, cp, n)) / 1e9
    except (OSError, AttributeError):
        pass
    big = np.ones(64 * 1024 * 1024 // 4, np.float32)
    out = np.empty_like(big)
    results["copy GB/s"] = 2 * big.nbytes / best(
        lambda: np.copyto(out, big)) / 1e9
    best_rate, first_rate = fresh_memory_rates()
    results["fresh GB/s"] = best_rate
    results["fresh GB/s (first block)"] = first_rate
    return results


def fresh_memory_rates(nbytes=1 << 30, blocks=4):
    """GB/s at which the kernel hands out fresh 4 KiB pages: a new 1 GiB
    mapping's first write less its second, for several blocks in turn.
    Every byte a step holds is fresh memory in a run's first step. On a
    virtual machine the first block may also wait for the host to back
    its pages (seconds after idle); the later ones reuse pages the guest
    just freed, which the host still backs. Returns (the best, the
    first): the best bounds the warm start from below."""
    import mmap
    import numpy as np
    rates = []
    for _ in range(blocks):
        # mmap, not numpy's allocator, which advises huge pages.
        block = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE |
                          mmap.MAP_ANONYMOUS)
        view = np.frombuffer(block, np.uint8)
        t = time.perf_counter()
        view.fill(1)
        first = time.perf_counter() - t
        t = time.perf_counter()
        view.fill(2)
        second = time.perf_counter() - t
        del view
        block.close()
        rates.append(nbytes / max(first - second, 1e-9) / 1e9)
    return max(rates), rates[0]


def child_jax_gemm():
    import jax
    import jax.numpy as jnp
    n = 2048
    a = jnp.ones((n, n), jnp.float32)
    f = jax.jit(lambda a: a @ a)
    f(a).block_until_ready()
    times = []
    for _ in range(3):
        t = time.perf_counter()
        f(a).block_until_ready()
        times.append(time.perf_counter() - t)
    return {"sgemm jax": 2 * n ** 3 / min(times) / 1e9}


def run_child(kind, cfg_name, files, steps, cores, extra_env=None):
    """A peer in a child process on `cores`; None if it is not installed."""
    env = dict(os.environ, **(extra_env or {}))
    cmd = ["taskset", "-c", ",".join(map(str, cores)), sys.executable,
           __file__, "--child", kind, "--child-config", cfg_name or "",
           "--child-files", json.dumps(files), "--steps", str(steps)]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        if "ModuleNotFoundError" in done.stderr:
            missing = done.stderr.strip().splitlines()[-1]
            print(f"{kind}: skipped ({missing})", flush=True)
            return None
        raise SystemExit(f"{kind} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if "first_s" in result:
        # Ready: from the process's start to its first step done.
        result["ready_s"] = time.perf_counter() - start - \
            result["step_s"] * steps
    return result


# ---------------------------------------------------------------------------
# spmdc
# ---------------------------------------------------------------------------

def spmdc_rows(build, graph, files, steps, tmp, cores, batch, bf16):
    spec = os.path.join(tmp, "ddp.json")
    with open(spec, "w") as f:
        json.dump({"version": 1, "mesh": {"axes": ["dp"], "shape": [2]},
                   "presets": {"dp": "ddp"}}, f)
    rows = {}
    cache = os.path.join(tmp, "cache")
    configs = [("spmdc 1 rank, 1 core", 1, cores[:1]),
               ("spmdc 1 rank, all cores", 1, cores),
               ("spmdc 2 ranks ddp", 2, cores)]
    if bf16:
        configs.append(("spmdc 1 rank, all cores, bf16", 1, cores))
    for label, ranks, use in configs:
        if batch % ranks:
            # spmdc splits a dim only evenly so far (issue 15).
            print(f"{label}: skipped, a batch of {batch} does not split "
                  f"over {ranks} ranks", flush=True)
            continue
        precision = "bf16" if label.endswith("bf16") else "f32"
        module = os.path.join(tmp, f"step-{ranks}-{precision}.mod")
        compile_cmd = [os.path.join(build, "bin", "spmdc"), graph, "-o",
                       module, "--optimizer", "adamw", "--lr",
                       str(ADAMW["lr"]), "--weight-decay",
                       str(ADAMW["weight_decay"]), "--precision", precision]
        if ranks > 1:
            compile_cmd += ["--shard-spec", spec]
        report = module + ".report.json"
        compile_cmd += ["--report", report]
        run = ["taskset", "-c", ",".join(map(str, use)),
               os.path.join(build, "bin", "spmd-run"), module, "--nranks",
               str(ranks), "--log-level", "info", "--params",
               files["params"], "--data", files["data"]]
        if "all cores" in label:
            run += ["--threads", str(len(use))]
        env = dict(os.environ, SPMDC_CACHE_DIR=cache)
        # Cold: spmdc, then spmd-run with an empty native-code cache.
        # Warm: spmd-run of the same module again.
        subprocess.run(["rm", "-rf", cache], check=True)
        start = time.perf_counter()
        subprocess.run(compile_cmd, check=True, env=env)
        compile_s = time.perf_counter() - start
        readies = []
        for attempt in ("cold", "warm"):
            if attempt == "warm":
                start = time.perf_counter()
            subprocess.run(run + ["--steps", "1"], check=True,
                           capture_output=True, text=True, env=env)
            readies.append(time.perf_counter() - start)
        done = subprocess.run(run + ["--steps", str(1 + steps)], check=True,
                              capture_output=True, text=True, env=env)
        times = sorted(float(m.group(2)) / 1e3 for m in
                       STEP_LINE.finditer(done.stderr) if m.group(1) != "1")
        loss = float(LOSS_LINE.search(done.stdout).group(2))
        with open(report) as f:
            peaks = [r["peak_memory_bytes"] for r in json.load(f)["per_rank"]]
        rows[label] = dict(loss=loss, step_s=times[len(times) // 2],
                           ready_s=readies[0], warm_s=readies[1],
                           compile_s=compile_s, cores=len(use),
                           fresh_bytes=sum(peaks))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default="mini,medium")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--bf16", action="store_true",
                    help="also spmdc --precision=bf16 against PyTorch's "
                    "bf16 autocast, on all cores")
    ap.add_argument("--child")
    ap.add_argument("--child-config")
    ap.add_argument("--child-files")
    args = ap.parse_args()

    if args.child:
        cfg = CONFIGS.get(args.child_config)
        files = json.loads(args.child_files)
        kind = args.child
        if kind == "ceilings":
            out = child_ceilings()
        elif kind == "jax-gemm":
            out = child_jax_gemm()
        elif kind.startswith("torch"):
            threads = len(os.sched_getaffinity(0))
            out = child_torch(cfg, files, args.steps, threads,
                              kind == "torch-compile", kind == "torch-bf16")
        else:
            out = child_jax(cfg, files, args.steps,
                            2 if kind == "jax-2dev" else 1)
        print(json.dumps(out))
        return

    import make_examples
    from safetensors_io import write_safetensors
    cores = sorted(os.sched_getaffinity(0))
    ceilings = run_child("ceilings", None, {}, 0, cores[:1]) or {}
    jax_gemm = run_child("jax-gemm", None, {}, 0, cores[:1])
    ceilings.update(jax_gemm or {})
    sgemm = max(v for k, v in ceilings.items() if k.startswith("sgemm"))
    print("ceilings (one core): " + ", ".join(
        f"{k} {v:.1f}" + ("" if "GB/s" in k else " GFLOP/s")
        for k, v in ceilings.items()))
    for name in args.configs.split(","):
        cfg = CONFIGS[name]
        steps = args.steps or STEPS[name]
        flops, nparams = model_flops(cfg)
        with tempfile.TemporaryDirectory() as tmp:
            params, data = initial_values(cfg)
            files = {"params": os.path.join(tmp, "params.safetensors"),
                     "data": os.path.join(tmp, "data.safetensors")}
            write_safetensors(files["params"], params)
            write_safetensors(files["data"], data)
            g = make_examples.make_gpt2_mini(**cfg)
            graph = os.path.join(tmp, f"{name}.json")
            with open(graph, "w") as f:
                f.write(make_examples.to_json(g.document()))
            rows = spmdc_rows(args.build, graph, files, steps, tmp, cores,
                              cfg["batch"], args.bf16)
            peers = [("torch eager bf16 all threads", "torch-bf16", cores,
                      None)] if args.bf16 else []
            if not args.skip_peers:
                for label, kind, use, env in peers + [
                        ("torch eager 1 thread", "torch", cores[:1], None),
                        ("torch eager all threads", "torch", cores, None),
                        ("torch.compile all threads", "torch-compile", cores,
                         None),
                        ("jax jit 1 core", "jax", cores[:1], None),
                        ("jax jit 1 device", "jax", cores, None),
                        ("jax jit 2 devices (dp)", "jax-2dev", cores,
                         {"XLA_FLAGS":
                          "--xla_force_host_platform_device_count=2"})]:
                    if kind == "jax-2dev" and cfg["batch"] % 2:
                        print(f"{label}: skipped, a batch of {cfg['batch']} "
                              "does not split over 2 devices", flush=True)
                        continue
                    r = run_child(kind, name, files, steps, use, env)
                    if r:
                        r["cores"] = len(use)
                        rows[label] = r
        print(f"\n{name}: {nparams:,} parameters, batch {cfg['batch']} x "
              f"{cfg['seq']}, {flops / 1e9:.1f} GFLOP per step, {steps} "
              "steps timed")
        reference = rows["spmdc 1 rank, 1 core"]["loss"]
        print(f"{'':28} {'step ms':>9} {'ready s':>8} {'warm s':>7} "
              f"{'floor s':>7} {'compile s':>9} {'loss':>10} "
              f"{'of ceiling':>10}  ratio")
        vs = {"spmdc 1 rank, 1 core": "jax jit 1 core",
              "spmdc 1 rank, all cores": "jax jit 1 device",
              "spmdc 2 ranks ddp": "jax jit 1 device"}
        for label, r in rows.items():
            # bf16 rows round the forward's matmuls: the first loss agrees
            # to about 1e-4.
            if abs(r["loss"] - reference) > 1e-3 * abs(reference):
                raise SystemExit(f"{name}: {label} loss {r['loss']} differs "
                                 f"from spmdc's {reference}")
            fraction = flops / r["step_s"] / (sgemm * 1e9 * r["cores"])
            ratio = ""
            other = vs.get(label)
            if other in rows:
                ratio = f"{r['step_s'] / rows[other]['step_s']:.2f}x {other}"
                if label == "spmdc 2 ranks ddp":
                    best = min(rows[k]["step_s"] for k in rows
                               if k.startswith("jax") and rows[k]["cores"] > 1)
                    ratio = f"{r['step_s'] / best:.2f}x best jax"
            # PyTorch on the same cores: eager on one thread, or the faster
            # of eager and torch.compile on all of them.
            torch_rows = [k for k in rows if k.startswith("torch") and
                          (rows[k]["cores"] > 1) == (r["cores"] > 1) and
                          k.endswith("bf16 all threads") ==
                          label.endswith("bf16")]
            if label.startswith("spmdc") and torch_rows:
                best = min(rows[k]["step_s"] for k in torch_rows)
                ratio += (", " if ratio else "") + \
                    f"{r['step_s'] / best:.2f}x best torch"
            warm = f"{r['warm_s']:7.2f}" if "warm_s" in r else f"{'':7}"
            # The warm start's floor: the step, and every byte the ranks'
            # steps hold (the report's peaks) faulted in at the machine's
            # fresh-memory rate, one after another (two processes faulting
            # at once gain nothing on these virtual machines).
            floor = f"{'':7}"
            if "fresh_bytes" in r and ceilings.get("fresh GB/s"):
                faults_s = r["fresh_bytes"] / 1e9 / ceilings["fresh GB/s"]
                floor = f"{r['step_s'] + faults_s:7.2f}"
            comp = f"{r['compile_s']:9.2f}" if "compile_s" in r else f"{'':9}"
            print(f"{label:28} {r['step_s'] * 1e3:9.2f} {r['ready_s']:8.2f} "
                  f"{warm} {floor} {comp} {r['loss']:10.6f} {fraction:10.1%}"
                  f"  {ratio}", flush=True)


if __name__ == "__main__":
    main()
