#!/usr/bin/env python3
"""PyTorch reference values for the bundled example models.

Regenerate the committed fixtures (from the repository root) with

    python3 tools/reference/torch_reference.py

and check that they are unchanged with

    python3 tools/reference/torch_reference.py --check

This needs PyTorch and numpy; nothing else in the project does (the lit
tests only read the fixtures, with a stdlib script).

For each model of docs/examples/ (mlp, gpt2-mini, llama-mini) it builds the
model with plain torch.nn code that mirrors the graph (parameters named
exactly as in the JSON file), starts from the values spmd-run starts from
(a Python port of spmd_init_element, include/spmdc/Runtime/Init.h, seed 0)
and computes in float64:

  * the loss and the gradient of every parameter,
  * the parameters after one torch.optim.AdamW step
    (lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0.01),
  * the parameters after one torch.optim.SGD step
    (lr 0.1, momentum 0.9, weight_decay 0.01).

It writes, per model, test/Fixtures/pytorch/<model>/:

  grads.safetensors        "grad/<param>" and "loss/loss" (the keys of
                           spmd-run --save-outputs), F64
  adamw-step1.safetensors  "<param>" after one AdamW step, F64
  sgd-step1.safetensors    "<param>" after one SGD step, F64
  meta.json                the loss, the torch version and this command

The inputs spmd-run makes up (see tools/spmd-run/spmd-run.cpp): parameters
use SPMD_INIT_PARAM, float data SPMD_INIT_DATA, integer data (tokens, labels)
SPMD_INIT_INDEX with the bound spmd-run derives (`tg.index_bound`: the rows
of the embedding / the classes of the loss), optimizer state is zero.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     "..", ".."))
EXAMPLES = os.path.join(ROOT, "docs", "examples")
FIXTURES = os.path.join(ROOT, "test", "Fixtures", "pytorch")
COMMAND = "python3 tools/reference/torch_reference.py"

ADAMW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
SGD = dict(lr=0.1, momentum=0.9, weight_decay=0.01)

# ---------------------------------------------------------------------------
# spmd_init_element, ported (include/spmdc/Runtime/Init.h)
# ---------------------------------------------------------------------------

INIT_PARAM, INIT_DATA, INIT_INDEX, INIT_ZERO = 0, 1, 2, 3
MASK = (1 << 64) - 1


def _mix(s, i):
    """mix(s, i) on uint64 arrays (numpy wraps uint64 arithmetic mod 2^64)."""
    z = np.uint64(s) * np.uint64(0x9E3779B97F4A7C15) + i + np.uint64(1)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _mix_int(s, i):
    """The same on Python ints, for the per-tensor key."""
    z = (s * 0x9E3779B97F4A7C15 + i + 1) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def _fnv1a64(name):
    h = 0xCBF29CE484222325
    for byte in name.encode("utf-8"):
        h ^= byte
        h = (h * 0x100000001B3) & MASK
    return h


def spmd_init(seed, name, shape, kind, index_bound=0):
    """The whole logical tensor, as float64 numpy (row-major)."""
    shape = list(shape)
    count = int(np.prod(shape)) if shape else 1
    key = _mix_int((seed ^ _mix_int(_fnv1a64(name), 0)) & MASK, 0)
    if kind == INIT_ZERO:
        return np.zeros(shape)
    if kind == INIT_PARAM and len(shape) <= 1:
        return np.full(shape, 0.0 if name.endswith("bias") else 1.0)
    with np.errstate(over="ignore"):
        bits = _mix(key, np.arange(count, dtype=np.uint64))
    u = (bits >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    if kind == INIT_PARAM:
        fan_in = shape[-1]
        v = (2 * u - 1) / math.sqrt(float(fan_in if fan_in > 0 else 1))
    elif kind == INIT_DATA:
        v = 2 * u - 1
    elif kind == INIT_INDEX:
        scale = float(index_bound if index_bound >= 1 else 1)
        v = np.floor(u * scale)
        v = np.where(v < scale, v, scale - 1)
    else:
        raise ValueError(f"unknown init kind {kind}")
    return v.reshape(shape)


# ---------------------------------------------------------------------------
# safetensors, stdlib + numpy
# ---------------------------------------------------------------------------

def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: numpy array}, written as F64; keys sorted."""
    safetensors_io.write_safetensors(
        path, {name: np.asarray(value, dtype=np.float64)
               for name, value in tensors.items()}, metadata)


def read_safetensors(path):
    """Every tensor as float64."""
    return {name: array.astype(np.float64)
            for name, array in safetensors_io.read_safetensors(path).items()}


# ---------------------------------------------------------------------------
# Models, mirroring tools/examples/make_examples.py
# ---------------------------------------------------------------------------

class MLP(nn.Module):
    """sigmoid(fc2(relu(fc1(x)))), MSE (mean over all elements)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(50, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x, target):
        y = torch.sigmoid(self.fc2(torch.relu(self.fc1(x))))
        return ((y - target) * (y - target)).mean()


class GPT2Attention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        # Separate q/k/v projections, as in the graph (not a fused c_attn).
        self.q_proj = nn.Linear(n_embd, n_embd)
        self.k_proj = nn.Linear(n_embd, n_embd)
        self.v_proj = nn.Linear(n_embd, n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        b, s, c = x.shape
        heads = [t.reshape(b, s, self.n_head, c // self.n_head).transpose(1, 2)
                 for t in (self.q_proj(x), self.k_proj(x), self.v_proj(x))]
        y = F.scaled_dot_product_attention(*heads, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, s, c))


class GPT2MLP(nn.Module):
    def __init__(self, n_embd, hidden):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, hidden)
        self.c_proj = nn.Linear(hidden, n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class GPT2Block(nn.Module):
    def __init__(self, n_embd, n_head, hidden):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, eps=1e-5)
        self.attn = GPT2Attention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd, eps=1e-5)
        self.mlp = GPT2MLP(n_embd, hidden)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Mini(nn.Module):
    """2-layer nanoGPT: learned positions, pre-LN blocks, tied LM head."""

    def __init__(self, vocab=96, seq=16, n_embd=32, n_head=4, hidden=128,
                 n_layer=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(seq, n_embd)
        self.h = nn.ModuleList(GPT2Block(n_embd, n_head, hidden)
                               for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd, eps=1e-5)

    def forward(self, tokens, labels):
        pos = torch.arange(tokens.shape[1])
        x = self.wte(tokens) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied head
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               labels.reshape(-1))


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) \
            * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_tables(seq, head_dim, theta=10000.0):
    # The graph holds positions and inv_freq as f32 constants; the f64
    # interpreter widens those f32 values, so round them the same way.
    half = head_dim // 2
    inv_freq = np.array([1.0 / theta ** (2 * i / head_dim)
                         for i in range(half)], dtype=np.float32)
    inv_freq = torch.tensor(inv_freq.astype(np.float64))
    pos = torch.arange(seq, dtype=torch.float64)
    freqs = pos[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=1)
    return emb.cos(), emb.sin()


class LlamaAttention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.wq(x).reshape(b, s, self.n_heads, self.head_dim)
        k = self.wk(x).reshape(b, s, self.n_kv_heads, self.head_dim)
        v = self.wv(x).reshape(b, s, self.n_kv_heads, self.head_dim)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # Grouped-query attention: query head h reads kv head h // group.
        group = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, s, -1))


class LlamaFeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, hidden):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = LlamaAttention(dim, n_heads, n_kv_heads)
        self.ffn_norm = RMSNorm(dim)
        self.feed_forward = LlamaFeedForward(dim, hidden)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class LlamaMini(nn.Module):
    """2-layer Llama: RMSNorm, rotate-half RoPE, GQA, SwiGLU, untied head."""

    def __init__(self, vocab=64, seq=16, dim=32, n_heads=4, n_kv_heads=2,
                 hidden=64, n_layers=2):
        super().__init__()
        self.seq, self.head_dim = seq, dim // n_heads
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            LlamaBlock(dim, n_heads, n_kv_heads, hidden)
            for _ in range(n_layers))
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens, labels):
        cos, sin = rope_tables(self.seq, self.head_dim)
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x, cos, sin)
        logits = self.output(self.norm(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               labels.reshape(-1))


# model name -> (module factory, index bound of its integer data)
MODELS = {
    "mlp": (MLP, None),
    "gpt2-mini": (GPT2Mini, 96),
    "llama-mini": (LlamaMini, 64),
}


# ---------------------------------------------------------------------------
# Reference computation
# ---------------------------------------------------------------------------

def graph_inputs(name):
    with open(os.path.join(EXAMPLES, name + ".json")) as f:
        return json.load(f)["inputs"]


def make_model(name, seed=0):
    """The model with its spmd-run initial parameters, and its data."""
    factory, bound = MODELS[name]
    model = factory().to(torch.float64)
    inputs = graph_inputs(name)
    params = dict(model.named_parameters())
    graph_params = {i["name"]: i["shape"] for i in inputs
                    if i["role"] == "param"}
    if {n: list(p.shape) for n, p in params.items()} != graph_params:
        raise SystemExit(f"{name}: the torch model's parameters "
                         f"{sorted(params)} do not match the graph's "
                         f"{sorted(graph_params)}")
    with torch.no_grad():
        for pname, p in params.items():
            p.copy_(torch.from_numpy(
                spmd_init(seed, pname, p.shape, INIT_PARAM)))
    data = []
    for i in inputs:
        if i["role"] != "data":
            continue
        if i["dtype"].startswith("f"):
            data.append(torch.from_numpy(
                spmd_init(seed, i["name"], i["shape"], INIT_DATA)))
        else:
            data.append(torch.from_numpy(spmd_init(
                seed, i["name"], i["shape"], INIT_INDEX, bound)).long())
    return model, data


def reference(name):
    """{loss, grads, adamw, sgd} of one model, float64 numpy."""
    model, data = make_model(name)
    loss = model(*data)
    loss.backward()
    grads = {f"grad/{n}": p.grad.detach().numpy().copy()
             for n, p in model.named_parameters()}
    grads["loss/loss"] = loss.detach().numpy().copy()
    result = {"loss": loss.item(), "grads": grads}
    for opt_name, make_opt in (("adamw", lambda ps: torch.optim.AdamW(
            ps, **ADAMW)), ("sgd", lambda ps: torch.optim.SGD(ps, **SGD))):
        # A fresh model per optimizer, the same gradient.
        m, d = make_model(name)
        m(*d).backward()
        opt = make_opt(m.parameters())
        opt.step()
        result[opt_name] = {n: p.detach().numpy().copy()
                            for n, p in m.named_parameters()}
    return result


def write_fixtures(name, result, out_dir):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    write_safetensors(os.path.join(d, "grads.safetensors"), result["grads"])
    write_safetensors(os.path.join(d, "adamw-step1.safetensors"),
                      result["adamw"])
    write_safetensors(os.path.join(d, "sgd-step1.safetensors"),
                      result["sgd"])
    meta = {
        "model": name,
        "loss": result["loss"],
        "torch": torch.__version__,
        "numpy": np.__version__,
        "dtype": "float64",
        "seed": 0,
        "adamw": {"lr": ADAMW["lr"], "betas": list(ADAMW["betas"]),
                  "eps": ADAMW["eps"], "weight_decay": ADAMW["weight_decay"],
                  "steps": 1},
        "sgd": dict(SGD, steps=1),
        "command": COMMAND,
    }
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


def check_fixtures(name, result, out_dir, rtol=1e-9, atol=1e-10):
    """True if the committed fixtures hold (nearly) these values. Another
    torch build may sum in another order; atol covers the AdamW step of
    gpt2-mini's key biases (k_proj.bias), whose gradient is 0 up to ~1e-18
    rounding noise that the step scales by lr / eps = 1e5."""
    ok = True
    d = os.path.join(out_dir, name)
    for fname, tensors in (("grads", result["grads"]),
                           ("adamw-step1", result["adamw"]),
                           ("sgd-step1", result["sgd"])):
        path = os.path.join(d, fname + ".safetensors")
        try:
            stored = read_safetensors(path)
        except OSError as e:
            print(f"{path}: {e}", file=sys.stderr)
            ok = False
            continue
        if sorted(stored) != sorted(tensors):
            print(f"{path}: keys differ", file=sys.stderr)
            ok = False
            continue
        for k, v in tensors.items():
            if not np.allclose(stored[k], v, rtol=rtol, atol=atol):
                print(f"{path}: {k} differs", file=sys.stderr)
                ok = False
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=FIXTURES,
                    help="fixtures directory (default: test/Fixtures/pytorch)")
    ap.add_argument("--check", action="store_true",
                    help="compare with the existing fixtures, write nothing")
    ap.add_argument("models", nargs="*", default=list(MODELS),
                    help="models to do (default: all)")
    args = ap.parse_args(argv)
    torch.set_default_dtype(torch.float64)
    status = 0
    for name in args.models:
        result = reference(name)
        if args.check:
            good = check_fixtures(name, result, args.out)
            print(f"{name}: {'ok' if good else 'DIFFERS'} "
                  f"(loss {result['loss']!r})")
            status |= not good
        else:
            write_fixtures(name, result, args.out)
            print(f"{name}: loss {result['loss']!r} -> "
                  f"{os.path.join(args.out, name)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
