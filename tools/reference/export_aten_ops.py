#!/usr/bin/env python3
"""One torch.export archive per ATen op that real models bring, for
finite-difference and PyTorch gradient tests of its mapping.

Regenerate test/Fixtures/aten/ (from the repository root) with

    python3 tools/reference/export_aten_ops.py [CASE ...]

Each case is a module with float64 parameters whose forward(inputs...)
returns sum(op(...) * r), r a fixed random buffer, so that every output
element weighs in the gradient. It is exported as docs/pytorch.md says
(`torch.export.export(m, args).run_decompositions()`, except the attention
cases, which keep `scaled_dot_product_attention` by skipping
run_decompositions, as a training-IR export has it). For each case it writes

  <case>.pt2                 the archive (weights inside)
  <case>.data.safetensors    the inputs by their export names
  <case>.params.safetensors  the initial parameters (F64)
  <case>.grads.safetensors   PyTorch's float64 gradients, per parameter
  <case>.meta.json           loss, the ATen ops of the graph

test/Inputs/fd-check.py checks spmdc's gradients against central
differences of its own loss; the same test compares them with PyTorch's.
"""

import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_pt2 import write_safetensors  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     "..", ".."))
OUT = os.path.join(ROOT, "test", "Fixtures", "aten")
torch.set_default_dtype(torch.float64)


class Case(nn.Module):
    """params: {name: shape}; fn(self, *inputs) -> tensor."""

    def __init__(self, params, fn, args):
        super().__init__()
        for name, shape in params.items():
            setattr(self, name, nn.Parameter(torch.randn(*shape)))
        self.fn = fn
        with torch.no_grad():
            out_shape = fn(self, *args).shape
        self.register_buffer("r", torch.randn(*out_shape))

    def forward(self, *inputs):
        return (self.fn(self, *inputs) * self.r).sum()


def conv2d(s, x):
    return F.conv2d(x, s.w, s.b, stride=(2, 1), padding=(1, 2),
                    dilation=(1, 2), groups=2)


def conv1d(s, x):
    return F.conv1d(x, s.w, None, stride=2, padding=1)


def vit_patches(s, x):
    return F.conv2d(x, s.w, s.b, stride=4)


def max_pool(s, x):
    return F.max_pool2d(x * s.w, 3, stride=2, padding=1, ceil_mode=True)


def adaptive_pool(s, x):
    return F.adaptive_avg_pool2d(x * s.w, (2, 3))


class BatchNormCase(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(3)
        with torch.no_grad():
            self.bn.weight.copy_(torch.randn(3))
            self.bn.bias.copy_(torch.randn(3))
        self.register_buffer("r", torch.randn(4, 3, 5, 5))

    def forward(self, x):
        return (self.bn(x) * self.r).sum()


def pad(s, x):
    return F.pad(x * s.w, (2, -1, 1, 3), value=0.5)


def slice_scatter(s, x):
    # Writes over every second column of rows 1..3 (step 2) and over column
    # 0 (step 1).
    y = torch.slice_scatter(x, s.w, dim=1, start=1, end=6, step=2)
    return torch.slice_scatter(y, s.v, dim=1, start=0, end=1)


def copy(s, x):
    y = x.clone()
    y.copy_(s.w)  # broadcast [5] into [3, 5]
    return y * x


def index_one(s, i):
    return s.w[i]


def index_two(s, i, j):
    return s.w[i, :, j]  # non-adjacent: the index dims go in front


def index_adjacent(s, i, j):
    return s.w[:, i, j]


def repeat(s, x):
    return (x * s.w).repeat(2, 1, 3)


def pow_scalar(s, x):
    return 10000 ** (s.w / 8) * x


def cumsum(s, x):
    return torch.cumsum(x * s.w, dim=1)


def cumsum_mask(s, m):
    # Positions from a 0/1 mask, as decoders build them from attention_mask.
    pos = torch.cumsum(m, dim=1) - 1
    keep = torch.bitwise_and(pos >= 1, m.bool())
    return torch.where(keep, s.w, 0.0)


def embedding_padding(s, i):
    return F.embedding(i, s.w, padding_idx=2)


# Masks built outside forward: the export holds them as constants.
CAUSAL_AND_FIRST = torch.ones(6, 6, dtype=torch.bool).tril()
CAUSAL_AND_FIRST[:, 0] = True
PADDING = torch.zeros(2, 1, 1, 6, dtype=torch.bool)
PADDING[:, :, :, 1:] = True


def sdpa_bool(s, q):
    return F.scaled_dot_product_attention(q, s.k, s.v,
                                          attn_mask=CAUSAL_AND_FIRST)


def sdpa_float(s, q):
    return F.scaled_dot_product_attention(q, s.k, s.v, attn_mask=s.bias,
                                          is_causal=False)


def sdpa_padding_mask(s, q):
    # A padding mask [B, 1, 1, S2] (PyTorch refuses one with is_causal).
    return F.scaled_dot_product_attention(q, s.k, s.v, attn_mask=PADDING)


def index_select(s, i):
    return torch.index_select(s.w, 1, i)


def flip(s, x):
    return torch.flip(x * s.w, dims=(0, 2))


def clamp(s, x):
    return torch.clamp(x * s.w, min=-0.5, max=0.7) + torch.clamp(s.w, max=x)


def smooth(s, x):
    y = x * s.w
    return (torch.log1p(y.abs()) + torch.expm1(y) + torch.log2(y.abs() + 1)
            + torch.log10(y.abs() + 2) + torch.tan(y * 0.3) + torch.sinh(y)
            + torch.cosh(y) + F.leaky_relu(y, 0.2) + F.hardtanh(y, -0.4, 0.6)
            + F.elu(y, 0.7))


def rounding(s, x):
    # Piecewise constant ops (zero gradient) times y, so that their values
    # weigh in the loss, and fmod/remainder, whose gradient is 1 in y and
    # -trunc / -floor of the quotient in a parameter divisor.
    y = x * s.w
    d = s.v.abs() + 0.5
    return (torch.floor(y) * y + torch.ceil(y) * y + torch.trunc(y) * y
            + torch.round(y * 2) * y + torch.round(y, decimals=1) * y
            + torch.round(y * 30, decimals=-1) * y + torch.sign(y) * y
            + torch.fmod(y, 0.7) + torch.remainder(y, -0.9)
            + torch.fmod(y, d) + torch.remainder(y, d)
            + torch.div(y, 0.6, rounding_mode="floor") * y
            + torch.div(y, -0.6, rounding_mode="trunc") * y
            + torch.div(y, d, rounding_mode="floor") * y)


def integer_rounding(s, i):
    # Integer semantics (C's fmod, Python's %, floored and truncated
    # division) on negative and positive values, as index arithmetic does.
    k = (torch.fmod(i, 3) * 7 + torch.remainder(i, 3) * 5
         + torch.remainder(i, -4) * 3 + torch.div(i, 4, rounding_mode="floor")
         * 11 + torch.div(i, -3, rounding_mode="trunc") * 13 + i // 5)
    return k.to(s.w.dtype) * s.w


def as_strided(s, x):
    # Reads of the contiguous y (a window, a broadcast by stride 0) and of
    # its transpose (strides (1, 6): storage order is not the dims' order).
    y = x * s.w
    return torch.cat([torch.as_strided(y, (3, 4), (2, 1), 1).flatten(),
                      torch.as_strided(y.t(), (2, 3), (1, 6)).flatten(),
                      torch.as_strided(y, (2, 2), (0, 3)).flatten()])


def as_strided_sparse(s, x):
    # Every other column: its input is not dense in memory (refused).
    y = x * s.w
    return torch.as_strided(y[:, ::2], (2, 2), (6, 2))


def as_strided_beyond(s, x):
    # The first two rows, read past their end into the rest of y's
    # storage: valid in PyTorch, outside what the value holds (refused).
    y = x * s.w
    return torch.as_strided(y[:2], (3,), (6,), 6)


def variance(s, x):
    return torch.var(x * s.w, dim=1, keepdim=True) + \
        torch.var(x * s.w, dim=(0, 1), correction=0)


def extremes(s, x):
    y = x * s.w
    values, index = torch.max(y, dim=1)
    low = torch.amin(y, dim=0)
    return values * index + low.sum() + torch.argmin(y, dim=1) + \
        torch.min(y, dim=1).values


def avg_pool(s, x):
    y = x * s.w
    return F.avg_pool2d(y, 3, stride=2, padding=1) + \
        F.avg_pool2d(y, 3, stride=2, padding=1, count_include_pad=False)


def select_scatter(s, x):
    return torch.select_scatter(x, s.w, 1, -2)


class GroupNormCase(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 4)
        with torch.no_grad():
            self.gn.weight.copy_(torch.randn(4))
            self.gn.bias.copy_(torch.randn(4))
        self.register_buffer("r", torch.randn(3, 4, 5))

    def forward(self, x):
        return (self.gn(x) * self.r).sum()


def cases():
    g = torch.Generator().manual_seed(3)

    def randn(*shape):
        return torch.randn(*shape, generator=g)

    def randint(hi, *shape):
        return torch.randint(0, hi, shape, generator=g)

    yield "convolution2d", {"w": (6, 2, 3, 2), "b": (6,)}, conv2d, \
        (randn(2, 4, 7, 6),)
    yield "convolution1d", {"w": (4, 3, 3)}, conv1d, (randn(2, 3, 9),)
    yield "convolution-patches", {"w": (8, 3, 4, 4), "b": (8,)}, \
        vit_patches, (randn(2, 3, 8, 8),)
    yield "max_pool2d", {"w": (1, 3, 1, 1)}, max_pool, \
        (randn(2, 3, 8, 7),)
    yield "adaptive_avg_pool2d", {"w": (3, 1, 1)}, adaptive_pool, \
        (randn(2, 3, 5, 7),)
    yield "constant_pad_nd", {"w": (4, 5)}, pad, (randn(2, 4, 5),)
    yield "slice_scatter", {"w": (4, 3), "v": (4, 1)}, slice_scatter, \
        (randn(4, 7),)
    yield "copy", {"w": (5,)}, copy, (randn(3, 5),)
    yield "index-one", {"w": (6, 4)}, index_one, (randint(6, 2, 3),)
    yield "index-two", {"w": (5, 3, 4)}, index_two, \
        (randint(5, 2, 1), torch.tensor([[0, -1, 2]]))
    yield "index-adjacent", {"w": (3, 5, 4)}, index_adjacent, \
        (randint(5, 2), randint(4, 2))
    yield "repeat", {"w": (4,)}, repeat, (randn(3, 4),)
    yield "pow-scalar", {"w": (8,)}, pow_scalar, (randn(2, 8),)
    yield "cumsum", {"w": (3, 5)}, cumsum, (randn(3, 5),)
    yield "cumsum-mask", {"w": (2, 6)}, cumsum_mask, \
        (torch.tensor([[1, 1, 1, 0, 1, 1], [0, 1, 1, 1, 1, 0]]),)
    yield "embedding-padding_idx", {"w": (5, 3)}, embedding_padding, \
        (torch.tensor([[0, 2, 4, 2], [1, 3, 2, 0]]),)
    yield "index_select", {"w": (3, 5, 2)}, index_select, \
        (torch.tensor([4, 0, 0, 2]),)
    yield "flip", {"w": (4,)}, flip, (randn(2, 3, 4),)
    yield "clamp", {"w": (6,)}, clamp, (randn(3, 6),)
    yield "elementwise", {"w": (6,)}, smooth, (randn(3, 6),)
    yield "var", {"w": (5,)}, variance, (randn(3, 4, 5),)
    yield "rounding", {"w": (6,), "v": (6,)}, rounding, (randn(3, 6),)
    yield "rounding-int", {"w": (9,)}, integer_rounding, \
        (torch.arange(-9, 9).reshape(2, 9),)
    yield "as_strided", {"w": (6,)}, as_strided, (randn(4, 6),)
    yield "as_strided-sparse", {"w": (6,)}, as_strided_sparse, (randn(4, 6),)
    yield "as_strided-beyond", {"w": (6,)}, as_strided_beyond, (randn(4, 6),)
    yield "max-min", {"w": (5,)}, extremes, (randn(4, 5),)
    yield "avg_pool2d", {"w": (3, 1, 1)}, avg_pool, (randn(2, 3, 7, 6),)
    yield "select_scatter", {"w": (4,)}, select_scatter, (randn(4, 5),)
    yield "sdpa-bool-mask", {"k": (2, 3, 6, 4), "v": (2, 3, 6, 4)}, \
        sdpa_bool, (randn(2, 3, 6, 4),)
    yield "sdpa-float-mask", {"k": (2, 3, 6, 4), "v": (2, 3, 6, 4),
                              "bias": (1, 3, 6, 6)}, \
        sdpa_float, (randn(2, 3, 6, 4),)
    yield "sdpa-padding-mask", {"k": (2, 3, 6, 4), "v": (2, 3, 6, 4)}, \
        sdpa_padding_mask, (randn(2, 3, 6, 4),)


def export(name, model, args, decompose=True):
    ep = torch.export.export(model, args)
    if decompose:
        ep = ep.run_decompositions()
    torch.export.save(ep, os.path.join(OUT, name + ".pt2"))
    loss = model(*args)
    model.zero_grad()
    loss.backward()
    inputs = [s.arg.name for s in ep.graph_signature.input_specs
              if s.kind.name == "USER_INPUT"]
    write_safetensors(os.path.join(OUT, name + ".data.safetensors"),
                      {n: a.numpy() for n, a in zip(inputs, args)})
    params = dict(model.named_parameters())
    write_safetensors(os.path.join(OUT, name + ".params.safetensors"),
                      {n: p.detach().numpy() for n, p in params.items()})
    write_safetensors(os.path.join(OUT, name + ".grads.safetensors"),
                      {n: p.grad.numpy() for n, p in params.items()})
    ops = sorted({str(n.target) for n in ep.graph.nodes
                  if n.op == "call_function"})
    with open(os.path.join(OUT, name + ".meta.json"), "w") as f:
        json.dump(dict(command="python3 tools/reference/export_aten_ops.py",
                       torch_version=torch.__version__, loss=float(loss),
                       aten_ops=ops), f, indent=1)
        f.write("\n")
    print(f"{name}: loss {float(loss):.6f}, ops {' '.join(ops)}")


def main():
    # python3 export_aten_ops.py [CASE ...]: only those cases (all without).
    only = set(sys.argv[1:])
    os.makedirs(OUT, exist_ok=True)
    for name, params, fn, args in cases():
        if only and name not in only:
            continue
        torch.manual_seed(0)
        model = Case(params, fn, args)
        export(name, model, args, decompose=not name.startswith("sdpa"))
    if not only or "batch_norm" in only:
        torch.manual_seed(0)
        export("batch_norm", BatchNormCase().train(),
               (torch.randn(4, 3, 5, 5),))
    if not only or "group_norm" in only:
        torch.manual_seed(0)
        export("group_norm", GroupNormCase(), (torch.randn(3, 4, 5),))


if __name__ == "__main__":
    main()
