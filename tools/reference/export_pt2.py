#!/usr/bin/env python3
"""torch.export (.pt2) fixtures for spmdc's PyTorch frontend.

Regenerate everything under test/Fixtures/pt2/ (from the repository root) with

    python3 tools/reference/export_pt2.py

This needs PyTorch and numpy where it runs; spmdc and its tests do not (they
only read the files this writes).  The archives are not byte-reproducible
(torch writes a random serialization_id, Python object ids and this file's
absolute path into them), but the models, their weights, the data and the
expected values are: every model is built after torch.manual_seed(0) and its
data drawn after torch.manual_seed(1), all in float32.

Models (see test/Fixtures/pt2/README.md):

  mlp         Linear(50,32)-ReLU-Linear(32,8)-sigmoid, MSE against `target`;
              forward(x [128,50], target [128,8]) -> scalar loss.
  gpt2        nanoGPT GPT-2: 2 layers, vocab 96, block 16, n_embd 32, 4 heads,
              biases, fused qkv c_attn split with .split(C, dim=2), causal
              F.scaled_dot_product_attention, GELU(tanh), LayerNorm, learned
              positions (torch.arange), tied lm_head / transformer.wte;
              forward(idx [4,16] i64, targets [4,16] i64) -> cross-entropy.
  llama       2 layers, vocab 64, dim 32, 4 heads, 2 kv heads (GQA by
              repeat_interleave), head_dim 8, RMSNorm, SwiGLU (hidden 64),
              rotate-half RoPE with cos/sin buffers (persistent=False), no
              biases, untied output; forward(tokens [2,16], labels [2,16]) ->
              cross-entropy.
  mlp_logits  the mlp's layers, forward(x) -> logits [128, 8]; its expected
              values use F.cross_entropy(logits, labels) with labels i64 [128]
              (the loss spmdc appends on request).

For each model it writes

  <model>.pt2                  ep = torch.export.export(model, args)
                                        .run_decompositions()
                               torch.export.save(ep, path)
  <model>.data.safetensors     the user inputs by their export names (+ the
                               "labels" of mlp_logits)
  <model>.expected.safetensors "loss" (f32 scalar, initial weights) and every
                               parameter name of the archive's weights config
                               after one torch.optim.AdamW step
                               (lr 1e-3, betas (0.9, 0.999), eps 1e-8,
                               weight_decay 0.01), f32
  <model>.grads.safetensors    the gradient of the loss at the initial
                               weights, per weights-config name, f32 (a
                               tied weight's is the sum over its uses, the
                               same under both names)
  <model>.meta.json            torch version, loss, ATen ops, input names ...

and, for the importer's error tests, damaged copies of mlp.pt2 in bad/
(rewritten with zipfile: STORED, data 64-byte aligned, the same members in
the same order, the folder inside still "mlp/"):

  not-a-zip.pt2         text, no zip at all
  no-model-json.pt2     mlp/models/model.json removed
  schema-major.pt2      model.json schema_version.major 8 -> 7
  truncated-weight.pt2  mlp/data/weights/weight_0 (fc1.weight) cut to half
                        (3200 of 6400 bytes)
  weight-size.pt2       model_weights_config.json: fc1.weight sizes
                        [32, 50] -> [33, 50] (6600 bytes; the blob has 6400)
  unknown-op.pt2        the relu node's target -> torch.ops.aten.frobnicate.default

It prints, per model, the loss, the parameter count and the op targets, and
what torch.export.load says about each bad archive.
"""

import json
import logging
import os
import tempfile
import shutil
import struct
import sys
import zipfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     "..", ".."))
OUT = os.path.join(ROOT, "test", "Fixtures", "pt2")
COMMAND = "python3 tools/reference/export_pt2.py"
ADAMW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
MAX_ARCHIVE = 2 * 1024 * 1024

from safetensors_io import read_safetensors, write_safetensors  # noqa: E402,F401


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(50, 32)
        self.fc2 = nn.Linear(32, 8)

    def logits(self, x):
        return torch.sigmoid(self.fc2(F.relu(self.fc1(x))))

    def forward(self, x, target):
        return F.mse_loss(self.logits(x), target)


class MLPLogits(MLP):
    """The same layers; returns the [128, 8] output only."""

    def forward(self, x):
        return self.logits(x)


# --- nanoGPT ----------------------------------------------------------------

class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head, self.n_embd = n_head, n_embd
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=True)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=True)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GPTMLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=True)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=True)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, bias=True)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd, bias=True)
        self.mlp = GPTMLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's GPT with dropout 0 (the Dropout modules left out)."""

    def __init__(self, vocab_size=96, block_size=16, n_layer=2, n_head=4,
                 n_embd=32):
        super().__init__()
        self.vocab_size = vocab_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd, bias=True),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        # nanoGPT's initialisation.
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / (2 * n_layer) ** 0.5)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = tok_emb + pos_emb
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)),
                               targets.view(-1))


# --- Llama ------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)
                                              + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((-x2, x1), dim=-1)


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
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, hidden):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = LlamaAttention(dim, n_heads, n_kv_heads)
        self.ffn_norm = RMSNorm(dim)
        self.feed_forward = FeedForward(dim, hidden)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, vocab=64, seq=16, dim=32, n_heads=4, n_kv_heads=2,
                 hidden=64, n_layers=2, theta=10000.0):
        super().__init__()
        self.vocab = vocab
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            [TransformerBlock(dim, n_heads, n_kv_heads, hidden)
             for _ in range(n_layers)])
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        head_dim = dim // n_heads
        inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2,
                                                dtype=torch.float32) / head_dim)
        freqs = torch.outer(torch.arange(seq, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)  # [seq, head_dim]
        self.register_buffer("freqs_cos", emb.cos(), persistent=False)
        self.register_buffer("freqs_sin", emb.sin(), persistent=False)

    def forward(self, tokens, labels):
        T = tokens.shape[1]
        cos, sin = self.freqs_cos[:T], self.freqs_sin[:T]
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, cos, sin)
        logits = self.output(self.norm(h))
        return F.cross_entropy(logits.view(-1, self.vocab), labels.view(-1))


# ---------------------------------------------------------------------------
# Data and the reference step
# ---------------------------------------------------------------------------

def make_data(name):
    """(export args, {extra data name: tensor}) after torch.manual_seed(1)."""
    torch.manual_seed(1)
    if name == "mlp":
        return (torch.randn(128, 50), torch.rand(128, 8)), {}
    if name == "mlp_logits":
        x = torch.randn(128, 50)
        return (x,), {"labels": torch.randint(0, 8, (128,), dtype=torch.int64)}
    if name == "gpt2":
        return (torch.randint(0, 96, (4, 16), dtype=torch.int64),
                torch.randint(0, 96, (4, 16), dtype=torch.int64)), {}
    if name == "llama":
        return (torch.randint(0, 64, (2, 16), dtype=torch.int64),
                torch.randint(0, 64, (2, 16), dtype=torch.int64)), {}
    raise KeyError(name)


FACTORIES = {"mlp": MLP, "gpt2": GPT, "llama": Llama, "mlp_logits": MLPLogits}


def build(name):
    torch.manual_seed(0)
    return FACTORIES[name]().to(torch.float32)


def loss_of(name, model, args, extra):
    out = model(*args)
    if name == "mlp_logits":
        return F.cross_entropy(out, extra["labels"])
    return out


def reference_step(name, args, extra):
    """The loss at the initial weights, the gradients there and the weights
    after one AdamW step (all keyed by every name of a tied weight)."""
    model = build(name)
    opt = torch.optim.AdamW(model.parameters(), **ADAMW)
    opt.zero_grad()
    loss = loss_of(name, model, args, extra)
    loss.backward()
    # A tied weight is one Parameter: its .grad is the sum over both uses.
    grads = {n: p.grad.detach().clone() for n, p in
             model.named_parameters(remove_duplicate=False)}
    opt.step()
    # state_dict keeps both names of a tied weight (named_parameters drops
    # the duplicate); non-persistent buffers are not in it.
    params = {n: p.detach().clone() for n, p in
              model.named_parameters(remove_duplicate=False)}
    return loss.detach(), grads, params


# ---------------------------------------------------------------------------
# Archive inspection / rewriting
# ---------------------------------------------------------------------------

def archive_members(path):
    with zipfile.ZipFile(path) as z:
        return [(info, z.read(info.filename)) for info in z.infolist()]


def find_member(members, pred):
    hits = [(i, d) for i, d in members if pred(i.filename)]
    if len(hits) != 1:
        raise SystemExit(f"expected one archive member, got "
                         f"{[i.filename for i, _ in hits]}")
    return hits[0]


def is_model_json(n):
    return "/models/" in n and n.endswith(".json")


def is_weights_config(n):
    return "/data/weights/" in n and n.endswith(".json")


def write_archive(path, members, align=64):
    """Rewrites a zip like torch's PyTorchStreamWriter: STORED entries whose
    data starts at a multiple of `align`, padded with an extra field
    ('FB', as torch does)."""
    with open(path, "wb") as f:
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as z:
            for old, data in members:
                # torch writes date 1980-00-00 (DOS date 0); keep it.
                info = zipfile.ZipInfo(old.filename, date_time=old.date_time)
                info.compress_type = zipfile.ZIP_STORED
                info.external_attr = old.external_attr
                info.create_system = old.create_system
                name_len = len(old.filename.encode("utf-8"))
                start = f.tell() + 30 + name_len + 4
                pad = -start % align
                info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
                z.writestr(info, data)


def replace_member(members, name, data):
    return [(i, data if i.filename == name else d) for i, d in members]


def export_model(name):
    model = build(name)
    args, extra = make_data(name)
    ep = torch.export.export(model, args).run_decompositions()
    path = os.path.join(OUT, name + ".pt2")
    torch.export.save(ep, path)
    size = os.path.getsize(path)
    if size > MAX_ARCHIVE:
        raise SystemExit(f"{path}: {size} bytes, over {MAX_ARCHIVE}")

    sig = ep.graph_signature
    user_inputs = list(sig.user_inputs)
    if len(user_inputs) != len(args):
        raise SystemExit(f"{name}: user inputs {user_inputs} vs {len(args)} args")
    data = {n: a.numpy() for n, a in zip(user_inputs, args)}
    data.update({n: t.numpy() for n, t in extra.items()})
    write_safetensors(os.path.join(OUT, name + ".data.safetensors"), data)

    loss, grads, params = reference_step(name, args, extra)
    # The exported program computes the same loss.
    with torch.no_grad():
        ep_loss = loss_of(name, ep.module(), args, extra)
    if not torch.allclose(ep_loss, loss, rtol=1e-5, atol=1e-6):
        raise SystemExit(f"{name}: exported loss {ep_loss} != eager {loss}")

    members = archive_members(path)
    _, wcfg = find_member(members, is_weights_config)
    weight_names = list(json.loads(wcfg)["config"])
    if set(weight_names) - set(params):
        raise SystemExit(f"{name}: weights {weight_names} vs params {sorted(params)}")
    expected = {"loss": loss.numpy().astype(np.float32)}
    for n in weight_names:
        expected[n] = params[n].numpy()
    # Every trainable parameter of the signature must be covered.
    for n in sig.parameters:
        if n not in expected:
            raise SystemExit(f"{name}: parameter {n} not in weights config")
    write_safetensors(os.path.join(OUT, name + ".expected.safetensors"),
                      expected)
    write_safetensors(os.path.join(OUT, name + ".grads.safetensors"),
                      {n: grads[n].numpy() for n in weight_names})

    # The op targets as the archive spells them.  The FX graph's
    # operator.getitem nodes (outputs of multi-output ops) are not nodes of
    # the serialized graph: they become the producer's outputs.
    _, mjson = find_member(members, is_model_json)
    nodes = json.loads(mjson)["graph_module"]["graph"]["nodes"]
    ops = sorted({n["target"] for n in nodes})
    n_getitem = sum(1 for n in ep.graph.nodes
                    if n.op == "call_function" and "getitem" in str(n.target))
    # Parameters: distinct tensors (a tied weight counts once).
    n_params = sum(p.numel() for p in model.parameters())
    meta = {
        "command": COMMAND,
        "torch_version": torch.__version__,
        "model": name,
        "loss": float(loss),
        "loss_note": ("F.cross_entropy(logits, labels) appended to the "
                      "exported logits" if name == "mlp_logits" else
                      "the exported program's output"),
        "adamw": {"lr": ADAMW["lr"], "betas": list(ADAMW["betas"]),
                  "eps": ADAMW["eps"], "weight_decay": ADAMW["weight_decay"]},
        "user_inputs": user_inputs,
        "data": {n: {"dtype": str(a.dtype), "shape": list(a.shape)}
                 for n, a in data.items()},
        "user_outputs": list(sig.user_outputs),
        "parameters": list(sig.parameters),
        "buffers": list(sig.buffers),
        "non_persistent_buffers": sorted(sig.non_persistent_buffers),
        "lifted_tensor_constants": list(sig.lifted_tensor_constants),
        "weights_config_names": weight_names,
        "parameter_count": n_params,
        "aten_ops": ops,
        "serialized_nodes": len(nodes),
        "fx_getitem_nodes_folded": n_getitem,
        "schema_version": json.loads(mjson)["schema_version"],
        "archive": sorted(i.filename for i, _ in members),
        "archive_bytes": size,
    }
    with open(os.path.join(OUT, name + ".meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    return meta


def write_bad(mlp_path):
    bad = os.path.join(OUT, "bad")
    os.makedirs(bad, exist_ok=True)
    members = archive_members(mlp_path)
    mname, mjson = find_member(members, is_model_json)
    wname, wcfg = find_member(members, is_weights_config)
    made = {}

    def out(n):
        made[n] = os.path.join(bad, n)
        return made[n]

    with open(out("not-a-zip.pt2"), "wb") as f:
        f.write(b"this is not a zip archive, just text\n")

    write_archive(out("no-model-json.pt2"),
                  [(i, d) for i, d in members if not is_model_json(i.filename)])

    j = json.loads(mjson)
    j["schema_version"]["major"] = 7
    write_archive(out("schema-major.pt2"),
                  replace_member(members, mname.filename,
                                 json.dumps(j).encode("utf-8")))

    cfg = json.loads(wcfg)["config"]
    first = next(iter(cfg))  # fc1.weight
    prefix = wname.filename.rsplit("/", 1)[0] + "/"
    blob = prefix + cfg[first]["path_name"]
    full = dict((i.filename, d) for i, d in members)[blob]
    write_archive(out("truncated-weight.pt2"),
                  replace_member(members, blob, full[:len(full) // 2]))

    c = json.loads(wcfg)
    sizes = c["config"][first]["tensor_meta"]["sizes"]
    sizes[0]["as_int"] += 1  # [32, 50] -> [33, 50]: 6600 bytes, blob 6400
    write_archive(out("weight-size.pt2"),
                  replace_member(members, wname.filename,
                                 json.dumps(c).encode("utf-8")))

    j = json.loads(mjson)
    node = next(n for n in j["graph_module"]["graph"]["nodes"]
                if n["target"] == "torch.ops.aten.relu.default")
    node["target"] = "torch.ops.aten.frobnicate.default"
    write_archive(out("unknown-op.pt2"),
                  replace_member(members, mname.filename,
                                 json.dumps(j).encode("utf-8")))

    # The rewriter itself must keep a good archive good.
    with tempfile.TemporaryDirectory() as tmp:
        control = os.path.join(tmp, "mlp.pt2")
        write_archive(control, members)
        if torch_load_verdict(control) != "loads":
            raise SystemExit("write_archive broke an unchanged archive")
    # What torch itself says about each (a sanity check that they are bad).
    return {n: torch_load_verdict(p) for n, p in made.items()}


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.errors = []

    def emit(self, record):
        if record.exc_info and record.exc_info[1] is not None:
            e = record.exc_info[1]
            while e.__cause__ is not None:  # the innermost cause
                e = e.__cause__
            self.errors.append(e)


def torch_load_verdict(path):
    """'loads', or the error torch reports.  torch.export.load logs the real
    cause (with its traceback) as a warning and then raises a generic error;
    this keeps the logged one and silences the log."""
    logger = logging.getLogger("torch.export")
    capture = _Capture()
    saved = logger.handlers[:], logger.propagate
    logger.handlers[:] = [capture]
    logger.propagate = False
    try:
        torch.export.load(path)
        return "loads"
    except Exception as e:  # noqa: BLE001
        e = capture.errors[-1] if capture.errors else e
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    finally:
        logger.handlers[:], logger.propagate = saved


def main():
    os.makedirs(OUT, exist_ok=True)
    shutil.rmtree(os.path.join(OUT, "bad"), ignore_errors=True)
    metas = {}
    for name in ("mlp", "gpt2", "llama", "mlp_logits"):
        metas[name] = export_model(name)
    verdicts = write_bad(os.path.join(OUT, "mlp.pt2"))
    for name, m in metas.items():
        print(f"{name}: loss {m['loss']:.6f}, {m['parameter_count']} parameters,"
              f" {m['archive_bytes']} bytes, inputs {m['user_inputs']}")
        for op in m["aten_ops"]:
            print(f"    {op}")
    all_ops = sorted(set().union(*(m["aten_ops"] for m in metas.values())))
    print(f"all ops ({len(all_ops)}): " + ", ".join(all_ops))
    print("bad archives (torch.export.load):")
    for n, v in verdicts.items():
        print(f"    {n}: {v}")


if __name__ == "__main__":
    sys.exit(main())
