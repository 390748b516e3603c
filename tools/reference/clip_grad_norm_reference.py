#!/usr/bin/env python3
"""PyTorch reference values for spmdc --clip-grad-norm.

Regenerate the committed fixtures (from the repository root) with

    python3 tools/reference/clip_grad_norm_reference.py

and check that they are unchanged with

    python3 tools/reference/clip_grad_norm_reference.py --check

This needs PyTorch and numpy (the lit tests only read the fixtures). It
builds the bundled models exactly as torch_reference.py does (the same
initial values as spmd-run, float64), runs the forward and backward once,
clips the gradients with torch.nn.utils.clip_grad_norm_(params, X) and takes
one optimizer step:

  * SGD (lr 0.1, momentum 0.9, weight_decay 0.01) and AdamW (lr 1e-3,
    betas (0.9, 0.999), eps 1e-8, weight_decay 0.01), as torch_reference.py;
  * X below the gradients' global norm (clipping active) and, for mlp, X
    above it (clipping inactive: the coefficient clamps to 1). AdamW's first
    step is nearly blind to the gradients' scale (lr * g / (|g| + eps)), so
    its active X is tiny, 1e-6: the clipped gradients are then near eps and
    the step depends on the clipping coefficient.

It writes, per model, test/Fixtures/pytorch/<model>/:

  clip-<optimizer>-<X>.safetensors   "<param>" after the step, F64
  clip-meta.json                     the gradients' global norm, the cases,
                                     the torch version and this command
"""

import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as ref  # noqa: E402

COMMAND = "python3 tools/reference/clip_grad_norm_reference.py"

# (model, optimizer, max_norm)
CASES = [
    ("mlp", "sgd", 0.05),
    ("mlp", "sgd", 100.0),
    ("mlp", "adamw", 1e-6),
    ("mlp", "adamw", 100.0),
    ("gpt2-mini", "sgd", 0.5),
    ("gpt2-mini", "adamw", 1e-6),
]


def case_file(optimizer, max_norm):
    return f"clip-{optimizer}-{max_norm:g}.safetensors"


def global_norm(name):
    model, data = ref.make_model(name)
    model(*data).backward()
    return torch.sqrt(sum((p.grad ** 2).sum()
                          for p in model.parameters())).item()


def clipped_step(name, optimizer, max_norm):
    """The parameters after one clipped step, float64 numpy."""
    model, data = ref.make_model(name)
    model(*data).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), **ref.SGD)
    else:
        opt = torch.optim.AdamW(model.parameters(), **ref.ADAMW)
    opt.step()
    return {n: p.detach().numpy().copy() for n, p in model.named_parameters()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=ref.FIXTURES,
                    help="fixtures directory (default: test/Fixtures/pytorch)")
    ap.add_argument("--check", action="store_true",
                    help="compare with the existing fixtures, write nothing")
    args = ap.parse_args(argv)
    torch.set_default_dtype(torch.float64)
    status = 0
    meta = {}
    for name, optimizer, max_norm in CASES:
        norm = meta.setdefault(name, {
            "model": name, "global_norm": global_norm(name), "cases": [],
            "torch": torch.__version__, "numpy": np.__version__,
            "dtype": "float64", "seed": 0,
            "sgd": dict(ref.SGD, steps=1),
            "adamw": {"lr": ref.ADAMW["lr"], "betas": list(ref.ADAMW["betas"]),
                      "eps": ref.ADAMW["eps"],
                      "weight_decay": ref.ADAMW["weight_decay"], "steps": 1},
            "command": COMMAND})["global_norm"]
        fname = case_file(optimizer, max_norm)
        meta[name]["cases"].append({"file": fname, "optimizer": optimizer,
                                    "max_norm": max_norm,
                                    "clipped": max_norm < norm})
        params = clipped_step(name, optimizer, max_norm)
        path = os.path.join(args.out, name, fname)
        if args.check:
            stored = ref.read_safetensors(path)
            good = sorted(stored) == sorted(params) and all(
                np.allclose(stored[k], v, rtol=1e-9, atol=1e-10)
                for k, v in params.items())
            print(f"{path}: {'ok' if good else 'DIFFERS'}")
            status |= not good
        else:
            ref.write_safetensors(path, params)
            print(f"{name} {optimizer} max_norm {max_norm:g} (global norm "
                  f"{norm:.6g}) -> {path}")
    if not args.check:
        for name, m in meta.items():
            with open(os.path.join(args.out, name, "clip-meta.json"),
                      "w") as f:
                json.dump(m, f, indent=2)
                f.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
