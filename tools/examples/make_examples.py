#!/usr/bin/env python3
"""Generate the bundled example models in the spmdc graph JSON format.

    python3 tools/examples/make_examples.py            # write docs/examples/
    python3 tools/examples/make_examples.py --check    # only check the files
    python3 tools/examples/make_examples.py --out DIR  # write elsewhere

Writes three models (see docs/graph-format.md for the format):

  mlp.json         the seed system's SimpleMLP with an MSE loss
  gpt2-mini.json   a 2-layer nanoGPT-style GPT-2 (LayerNorm, GELU, tied head,
                   separate q/k/v projections)
  llama-mini.json  a 2-layer Llama (RMSNorm, RoPE, GQA, SwiGLU)

The output is deterministic. After writing, every file is read back and
checked by an independent pass (check_graph) that re-infers each node's
shape and dtype by the format's rules, so the files are known to be
consistent even without the C++ importer. Uses only the standard library.
"""

import argparse
import json
import os
import sys

FORMAT = "spmdc.graph"
VERSION = 1

INPUT_ROLES = {"param", "data", "state"}
OUTPUT_ROLES = {"loss", "output", "param", "state", "grad"}
DTYPES = {"f64", "f32", "f16", "bf16", "i64", "i32", "i1"}
FLOAT_DTYPES = {"f64", "f32", "f16", "bf16"}
INT_DTYPES = {"i64", "i32"}
NUMERIC_DTYPES = FLOAT_DTYPES | INT_DTYPES

# Ops whose result type is not inferred: a node must carry shape and dtype.
NEEDS_TYPE = {"reshape", "broadcast", "convert", "full", "iota",
              "rand_uniform", "scatter_add", "embedding_backward", "constant"}


class GraphError(Exception):
    """A problem in a graph, located by a JSON pointer."""

    def __init__(self, pointer, message):
        super().__init__(f"{pointer}: {message}")


# ---------------------------------------------------------------------------
# Shape inference (the rules of docs/graph-format.md)
# ---------------------------------------------------------------------------

def _norm_dim(dim, rank, where):
    d = dim + rank if dim < 0 else dim
    if not 0 <= d < rank:
        raise GraphError(where, f"dim {dim} out of range for rank {rank}")
    return d


def _broadcast_shapes(shapes, where):
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        size = 1
        for s in shapes:
            j = i - (rank - len(s))
            if j < 0 or s[j] == 1:
                continue
            if size not in (1, s[j]):
                raise GraphError(where, f"shapes {shapes} do not broadcast")
            size = s[j]
        out.append(size)
    return out


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _expect(cond, where, message):
    if not cond:
        raise GraphError(where, message)


UNARY_FLOAT = {"exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "erf",
               "sigmoid", "sin", "cos", "silu", "gelu"}
UNARY_NUMERIC = {"neg", "abs", "relu"}
BINARY_NUMERIC = {"add", "sub", "mul", "div", "maximum", "minimum"}
BINARY_FLOAT = {"pow"}
BINARY_BOOL = {"and", "or"}
REDUCTIONS = {"sum": NUMERIC_DTYPES, "max": NUMERIC_DTYPES,
              "mean": FLOAT_DTYPES}


def infer(op, args, attrs, declared, where):
    """Result (shape, dtype) of `op` applied to `args` [(shape, dtype)].

    `declared` is the node's (shape, dtype) or None; it is the result type
    of the ops in NEEDS_TYPE and is only checked for the others.
    """
    a = attrs
    at = where + "/attrs"

    def nargs(*counts):
        _expect(len(args) in counts, where + "/inputs",
                f"'{op}' takes {' or '.join(map(str, counts))} operands, "
                f"got {len(args)}")

    def dtype_in(i, allowed, what):
        _expect(args[i][1] in allowed, f"{where}/inputs/{i}",
                f"'{op}' needs a {what} operand, got {args[i][1]}")

    def attr(name, kind=int):
        _expect(name in a, at, f"'{op}' needs attribute '{name}'")
        v = a[name]
        if kind is float:  # float attrs also accept JSON ints
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        else:
            ok = isinstance(v, kind) and not isinstance(v, bool)
        _expect(ok, f"{at}/{name}", f"bad value {v!r}")
        return v

    if op in NEEDS_TYPE:
        _expect(declared is not None, where,
                f"'{op}' needs \"shape\" and \"dtype\"")
        shape, dtype = declared
        if op == "reshape":
            nargs(1)
            _expect(_numel(args[0][0]) == _numel(shape), where,
                    f"reshape {args[0][0]} -> {shape} changes element count")
            _expect(args[0][1] == dtype, where, "reshape changes dtype")
        elif op == "broadcast":
            nargs(1)
            _expect(_broadcast_shapes([args[0][0], shape], where) == shape,
                    where, f"cannot broadcast {args[0][0]} to {shape}")
            _expect(args[0][1] == dtype, where, "broadcast changes dtype")
        elif op == "convert":
            nargs(1)
            _expect(args[0][0] == shape, where, "convert changes shape")
        elif op == "full":
            nargs(0)
            attr("value", float)
        elif op == "iota":
            nargs(0)
            _norm_dim(attr("dim"), len(shape), at + "/dim")
            _expect(dtype in NUMERIC_DTYPES, where, "iota needs a number type")
        elif op == "rand_uniform":
            nargs(0)
            attr("seed")
            _expect(dtype in FLOAT_DTYPES, where, "rand_uniform needs a float")
        elif op == "constant":
            nargs(0)
            v = attr("value", list)
            _expect(len(v) == _numel(shape), at + "/value",
                    f"{len(v)} values for shape {shape}")
        elif op == "scatter_add":
            nargs(2)
            dtype_in(0, INT_DTYPES, "integer index")
            _expect(args[0][0] == args[1][0], where, "index/source differ")
            _expect(len(shape) == len(args[0][0]), where, "rank mismatch")
            _norm_dim(attr("dim"), len(shape), at + "/dim")
        elif op == "embedding_backward":
            nargs(2)
            dtype_in(1, INT_DTYPES, "integer index")
            _expect(args[0][0] == args[1][0] + [shape[1]] and len(shape) == 2,
                    where, "embedding_backward shape mismatch")
        return shape, dtype

    if op in UNARY_FLOAT or op in UNARY_NUMERIC or op == "not":
        nargs(1)
        allowed = (FLOAT_DTYPES if op in UNARY_FLOAT else
                   NUMERIC_DTYPES if op in UNARY_NUMERIC else {"i1"})
        dtype_in(0, allowed, "suitable")
        if op == "gelu":
            _expect(a.get("approximate", "none") in ("none", "tanh"),
                    at + "/approximate", "must be \"none\" or \"tanh\"")
        return args[0]
    if op in BINARY_NUMERIC or op in BINARY_FLOAT or op in BINARY_BOOL \
            or op == "compare":
        nargs(2)
        allowed = (NUMERIC_DTYPES if op in BINARY_NUMERIC else
                   FLOAT_DTYPES if op in BINARY_FLOAT else
                   {"i1"} if op in BINARY_BOOL else DTYPES)
        dtype_in(0, allowed, "suitable")
        _expect(args[0][1] == args[1][1], where,
                f"element types differ: {args[0][1]} vs {args[1][1]}")
        shape = _broadcast_shapes([args[0][0], args[1][0]], where)
        if op == "compare":
            _expect(attr("predicate", str) in
                    ("eq", "ne", "lt", "le", "gt", "ge"),
                    at + "/predicate", "unknown predicate")
            return shape, "i1"
        return shape, args[0][1]
    if op == "select":
        nargs(3)
        dtype_in(0, {"i1"}, "i1 condition")
        _expect(args[1][1] == args[2][1], where, "branch dtypes differ")
        return _broadcast_shapes([x[0] for x in args], where), args[1][1]
    if op in REDUCTIONS:
        nargs(1)
        dtype_in(0, REDUCTIONS[op], "suitable")
        rank = len(args[0][0])
        dims = {_norm_dim(d, rank, at + "/dims") for d in attr("dims", list)}
        keep = a.get("keepdim", False)
        shape = [1 if i in dims else s for i, s in enumerate(args[0][0])
                 if keep or i not in dims]
        return shape, args[0][1]
    if op == "matmul":
        nargs(2)
        (sa, ta), (sb, tb) = args
        dtype_in(0, FLOAT_DTYPES, "float")
        _expect(ta == tb, where, "element types differ")
        _expect(len(sa) >= 2 and len(sb) >= 2, where, "matmul needs rank >= 2")
        _expect(sa[-1] == sb[-2], where, f"contracting dims {sa} x {sb}")
        batch = _broadcast_shapes([sa[:-2], sb[:-2]], where)
        return batch + [sa[-2], sb[-1]], ta
    if op == "transpose":
        nargs(1)
        perm = attr("permutation", list)
        shape = args[0][0]
        _expect(sorted(perm) == list(range(len(shape))), at + "/permutation",
                f"not a permutation of rank {len(shape)}")
        return [shape[p] for p in perm], args[0][1]
    if op == "slice":
        nargs(1)
        shape = list(args[0][0])
        d = _norm_dim(attr("dim"), len(shape), at + "/dim")
        start, end, step = attr("start"), attr("end"), attr("step")
        _expect(0 <= start <= end <= shape[d] and step >= 1, at,
                f"bad slice {start}:{end}:{step} of size {shape[d]}")
        shape[d] = (end - start + step - 1) // step
        return shape, args[0][1]
    if op == "concat":
        _expect(len(args) >= 1, where + "/inputs", "concat needs operands")
        shape = list(args[0][0])
        d = _norm_dim(attr("dim"), len(shape), at + "/dim")
        for i, (s, t) in enumerate(args[1:], 1):
            _expect(t == args[0][1] and len(s) == len(shape) and all(
                s[j] == shape[j] for j in range(len(s)) if j != d),
                f"{where}/inputs/{i}", "concat operand mismatch")
        shape[d] = sum(s[d] for s, _ in args)
        return shape, args[0][1]
    if op == "embedding":
        nargs(2)
        dtype_in(0, FLOAT_DTYPES, "float weight")
        dtype_in(1, INT_DTYPES, "integer indices")
        _expect(len(args[0][0]) == 2, where + "/inputs/0", "weight not [V, D]")
        return args[1][0] + [args[0][0][1]], args[0][1]
    if op == "gather":
        nargs(2)
        dtype_in(1, INT_DTYPES, "integer index")
        _expect(len(args[0][0]) == len(args[1][0]), where, "rank mismatch")
        _norm_dim(attr("dim"), len(args[0][0]), at + "/dim")
        return args[1][0], args[0][1]
    if op == "linear":
        nargs(2, 3)
        (sx, tx), (sw, tw) = args[:2]
        dtype_in(0, FLOAT_DTYPES, "float")
        _expect(len(sw) == 2 and sx[-1] == sw[1], where,
                f"linear input {sx} vs weight {sw}")
        _expect(tx == tw, where, "element types differ")
        if len(args) == 3:
            _expect(args[2] == ([sw[0]], tx), where + "/inputs/2",
                    f"bias must be [{sw[0]}] {tx}")
        return sx[:-1] + [sw[0]], tx
    if op in ("softmax", "log_softmax"):
        nargs(1)
        dtype_in(0, FLOAT_DTYPES, "float")
        _norm_dim(attr("dim"), len(args[0][0]), at + "/dim")
        return args[0]
    if op in ("layer_norm", "rms_norm"):
        nargs(3 if op == "layer_norm" else 2)
        dtype_in(0, FLOAT_DTYPES, "float")
        attr("eps", float)
        sx, sw = args[0][0], args[1][0]
        _expect(len(sw) <= len(sx) and sx[len(sx) - len(sw):] == sw, where,
                f"weight {sw} is not a trailing shape of {sx}")
        for w in args[1:]:
            _expect(w == (sw, args[0][1]), where, "weight/bias type mismatch")
        return args[0]
    if op == "cross_entropy":
        nargs(2)
        dtype_in(0, FLOAT_DTYPES, "float logits")
        dtype_in(1, INT_DTYPES, "integer labels")
        _expect(args[0][0][:-1] == args[1][0], where,
                f"logits {args[0][0]} vs labels {args[1][0]}")
        return [], args[0][1]
    if op == "sdpa":
        nargs(3)
        (sq, tq), (sk, tk), (sv, tv) = args
        dtype_in(0, FLOAT_DTYPES, "float")
        _expect(tq == tk == tv, where, "element types differ")
        _expect(len(sq) == len(sk) == len(sv) == 4, where, "sdpa needs rank 4")
        b, h, s, d = sq
        _expect(sk[0] == b and sv[0] == b, where, "batch mismatch")
        _expect(sk[1] == sv[1] and h % sk[1] == 0, where,
                f"kv heads {sk[1]} do not divide query heads {h}")
        _expect(sk[3] == d and sk[2] == sv[2], where, "q/k/v size mismatch")
        if "scale" in a:
            attr("scale", float)
        return [b, h, s, sv[3]], tq
    if op == "dropout":
        nargs(1)
        dtype_in(0, FLOAT_DTYPES, "float")
        p = attr("p", float)
        _expect(0 <= p < 1, at + "/p", "p must be in [0, 1)")
        attr("seed")
        return args[0]
    raise GraphError(where + "/op", f"unknown op '{op}'")


# ---------------------------------------------------------------------------
# Independent checker for a whole graph document
# ---------------------------------------------------------------------------

def _check_type(obj, where):
    _expect(isinstance(obj.get("shape"), list) and all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0
        for s in obj["shape"]), where + "/shape", "bad or missing shape")
    _expect(obj.get("dtype") in DTYPES, where + "/dtype", "bad dtype")
    return list(obj["shape"]), obj["dtype"]


def check_graph(g):
    """Validate a parsed graph document; returns {name: (shape, dtype)}."""
    _expect(isinstance(g, dict), "", "document is not an object")
    allowed = {"format", "version", "name", "inputs", "nodes", "outputs"}
    for k in g:
        _expect(k in allowed, "/" + k, "unknown top-level field")
    _expect(g.get("format") == FORMAT, "/format", f"must be \"{FORMAT}\"")
    _expect(g.get("version") == VERSION, "/version", f"must be {VERSION}")
    _expect(isinstance(g.get("name"), str), "/name", "missing name")
    env = {}
    for i, inp in enumerate(g.get("inputs", [])):
        w = f"/inputs/{i}"
        for k in inp:
            _expect(k in {"name", "role", "dtype", "shape"}, f"{w}/{k}",
                    "unknown field")
        name = inp.get("name")
        _expect(isinstance(name, str) and name, w + "/name", "missing name")
        _expect(name not in env, w + "/name", f"duplicate name '{name}'")
        _expect(inp.get("role") in INPUT_ROLES, w + "/role", "bad role")
        env[name] = _check_type(inp, w)
    for i, node in enumerate(g.get("nodes", [])):
        w = f"/nodes/{i}"
        for k in node:
            _expect(k in {"name", "op", "inputs", "attrs", "shape", "dtype"},
                    f"{w}/{k}", "unknown field")
        name = node.get("name")
        _expect(isinstance(name, str) and name, w + "/name", "missing name")
        _expect(name not in env, w + "/name", f"duplicate name '{name}'")
        args = []
        for j, v in enumerate(node.get("inputs", [])):
            _expect(v in env, f"{w}/inputs/{j}", f"unknown value '{v}'")
            args.append(env[v])
        declared = None
        if "shape" in node or "dtype" in node:
            declared = _check_type(node, w)
        result = infer(node.get("op"), args, node.get("attrs", {}), declared,
                       w)
        if declared is not None:
            _expect(list(result[0]) == declared[0] and
                    result[1] == declared[1], w,
                    f"declared {declared} but inferred {result}")
        env[name] = (list(result[0]), result[1])
    losses = 0
    out_names = set()
    for i, out in enumerate(g.get("outputs", [])):
        w = f"/outputs/{i}"
        _expect(out.get("name") not in out_names, w + "/name", "duplicate")
        out_names.add(out.get("name"))
        _expect(out.get("value") in env, w + "/value",
                f"unknown value '{out.get('value')}'")
        _expect(out.get("role") in OUTPUT_ROLES, w + "/role", "bad role")
        if out["role"] == "loss":
            losses += 1
            _expect(env[out["value"]][0] == [] and
                    env[out["value"]][1] in FLOAT_DTYPES, w,
                    "the loss must be a float scalar")
    _expect(losses <= 1, "/outputs", "more than one loss")
    return env


# ---------------------------------------------------------------------------
# Graph builder
# ---------------------------------------------------------------------------

class GraphBuilder:
    """Collects inputs and nodes; infers types as it goes (so helpers can
    look at shapes) and emits the JSON document."""

    def __init__(self, name):
        self.name = name
        self.inputs = []
        self.nodes = []
        self.outputs = []
        self.types = {}  # name -> (shape, dtype)

    # -- values ------------------------------------------------------------
    def input(self, name, role, shape, dtype="f32"):
        assert name not in self.types, name
        self.inputs.append({"name": name, "role": role, "dtype": dtype,
                            "shape": list(shape)})
        self.types[name] = (list(shape), dtype)
        return name

    def param(self, name, shape, dtype="f32"):
        return self.input(name, "param", shape, dtype)

    def data(self, name, shape, dtype="f32"):
        return self.input(name, "data", shape, dtype)

    def op(self, name, op, inputs=(), shape=None, dtype=None, **attrs):
        assert name not in self.types, f"duplicate name {name}"
        node = {"name": name, "op": op, "inputs": list(inputs)}
        if attrs:
            node["attrs"] = attrs
        declared = None
        if shape is not None:
            node["shape"] = list(shape)
            node["dtype"] = dtype
            declared = (list(shape), dtype)
        args = [self.types[v] for v in inputs]
        where = f"/nodes/{len(self.nodes)} ({name})"
        result = infer(op, args, attrs, declared, where)
        self.nodes.append(node)
        self.types[name] = (list(result[0]), result[1])
        return name

    def output(self, name, value, role):
        self.outputs.append({"name": name, "value": value, "role": role})

    def shape(self, value):
        return self.types[value][0]

    def dtype(self, value):
        return self.types[value][1]

    def expect(self, value, shape):
        assert self.shape(value) == list(shape), \
            f"{value}: {self.shape(value)} != {list(shape)}"
        return value

    def num_params(self):
        return sum(_numel(i["shape"]) for i in self.inputs
                   if i["role"] == "param")

    # -- helpers -----------------------------------------------------------
    def linear(self, name, x, prefix, out_features, bias=True):
        """x @ W^T (+ b) with a fresh param `prefix.weight` [out, in]."""
        in_features = self.shape(x)[-1]
        w = self.param(f"{prefix}.weight", [out_features, in_features])
        operands = [x, w]
        if bias:
            operands.append(self.param(f"{prefix}.bias", [out_features]))
        return self.op(name, "linear", operands)

    def layer_norm(self, name, x, prefix, eps=1e-5):
        d = self.shape(x)[-1]
        w = self.param(f"{prefix}.weight", [d])
        b = self.param(f"{prefix}.bias", [d])
        return self.op(name, "layer_norm", [x, w, b], eps=eps)

    def rms_norm(self, name, x, prefix, eps=1e-6):
        w = self.param(f"{prefix}.weight", [self.shape(x)[-1]])
        return self.op(name, "rms_norm", [x, w], eps=eps)

    def reshape(self, name, x, shape):
        return self.op(name, "reshape", [x], shape=shape, dtype=self.dtype(x))

    def transpose(self, name, x, perm):
        return self.op(name, "transpose", [x], permutation=list(perm))

    def slice(self, name, x, dim, start, end, step=1):
        return self.op(name, "slice", [x], dim=dim, start=start, end=end,
                       step=step)

    def split_heads(self, name, x, n_heads, head_dim):
        """[B, S, n*hd] -> [B, n, S, hd]."""
        b, s, _ = self.shape(x)
        r = self.reshape(f"{name}.r", x, [b, s, n_heads, head_dim])
        return self.transpose(name, r, [0, 2, 1, 3])

    def merge_heads(self, name, x):
        """[B, n, S, hd] -> [B, S, n*hd]."""
        b, n, s, hd = self.shape(x)
        t = self.transpose(f"{name}.t", x, [0, 2, 1, 3])
        return self.reshape(name, t, [b, s, n * hd])

    def document(self):
        return {"format": FORMAT, "version": VERSION, "name": self.name,
                "inputs": self.inputs, "nodes": self.nodes,
                "outputs": self.outputs}


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

def make_mlp():
    """SimpleMLP: sigmoid(fc2(relu(fc1(x)))), MSE loss against target."""
    g = GraphBuilder("mlp")
    x = g.data("x", [128, 50])
    target = g.data("target", [128, 8])
    h = g.linear("fc1", x, "fc1", 32)
    h = g.op("relu", "relu", [h])
    y = g.linear("fc2", h, "fc2", 8)
    y = g.op("y", "sigmoid", [y])
    diff = g.op("diff", "sub", [y, target])
    sq = g.op("sq", "mul", [diff, diff])
    loss = g.op("mse", "mean", [sq], dims=[0, 1])
    g.expect(loss, [])
    g.output("loss", loss, "loss")
    return g


def fused_qkv(g, a, p, qkv):
    """One projection to [B, S, 3c], sliced into q, k and v: nanoGPT's
    c_attn (qkv="linear", an nn.Linear weight [3c, c]) or HuggingFace
    GPT-2's Conv1D (qkv="conv1d", a weight [c, 3c] applied as addmm on the
    flattened tokens)."""
    b, s, c = g.shape(a)
    if qkv == "linear":
        out = g.linear(f"{p}.attn.c_attn", a, f"{p}.attn.c_attn", 3 * c)
    else:
        w = g.param(f"{p}.attn.c_attn.weight", [c, 3 * c])
        bias = g.param(f"{p}.attn.c_attn.bias", [3 * c])
        flat = g.reshape(f"{p}.attn.c_attn.in", a, [b * s, c])
        mm = g.op(f"{p}.attn.c_attn.mm", "matmul", [flat, w])
        mm = g.op(f"{p}.attn.c_attn.addmm", "add", [mm, bias])
        out = g.reshape(f"{p}.attn.c_attn", mm, [b, s, 3 * c])
    return [g.slice(f"{p}.attn.{nm}", out, 2, j * c, (j + 1) * c)
            for j, nm in enumerate("qkv")]


def gpt2_block(g, x, i, n_head, mlp_hidden, qkv=None):
    """One nanoGPT Block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""
    p = f"h.{i}"
    b, s, c = g.shape(x)
    hd = c // n_head
    a = g.layer_norm(f"{p}.ln_1", x, f"{p}.ln_1")
    # Separate q/k/v projections (not nanoGPT's fused c_attn) unless `qkv`
    # asks for a fused one (see fused_qkv).
    heads = []
    fused = fused_qkv(g, a, p, qkv) if qkv else None
    for j, nm in enumerate("qkv"):
        part = fused[j] if fused else g.linear(
            f"{p}.attn.{nm}", a, f"{p}.attn.{nm}_proj", c)
        heads.append(g.split_heads(f"{p}.attn.{nm}h", part, n_head, hd))
    y = g.op(f"{p}.attn.sdpa", "sdpa", heads, causal=True)
    g.expect(y, [b, n_head, s, hd])
    y = g.merge_heads(f"{p}.attn.merged", y)
    y = g.linear(f"{p}.attn.out", y, f"{p}.attn.c_proj", c)
    x = g.op(f"{p}.res1", "add", [x, y])
    m = g.layer_norm(f"{p}.ln_2", x, f"{p}.ln_2")
    m = g.linear(f"{p}.mlp.fc", m, f"{p}.mlp.c_fc", mlp_hidden)
    m = g.op(f"{p}.mlp.gelu", "gelu", [m], approximate="tanh")
    m = g.linear(f"{p}.mlp.out", m, f"{p}.mlp.c_proj", c)
    return g.op(f"{p}.res2", "add", [x, m])


def make_gpt2_mini(batch=4, seq=16, vocab=96, n_embd=32, n_head=4,
                   mlp_hidden=128, n_layer=2, qkv=None):
    g = GraphBuilder("gpt2-mini")
    tokens = g.data("tokens", [batch, seq], "i64")
    labels = g.data("labels", [batch, seq], "i64")
    wte = g.param("wte.weight", [vocab, n_embd])
    wpe = g.param("wpe.weight", [seq, n_embd])
    tok = g.op("tok_emb", "embedding", [wte, tokens])
    pos = g.op("pos", "iota", [], shape=[seq], dtype="i64", dim=0)
    pos = g.op("pos_emb", "embedding", [wpe, pos])
    x = g.op("x0", "add", [tok, pos])
    for i in range(n_layer):
        x = gpt2_block(g, x, i, n_head, mlp_hidden, qkv)
    x = g.layer_norm("ln_f", x, "ln_f")
    logits = g.op("logits", "linear", [x, wte])  # tied LM head, no bias
    g.expect(logits, [batch, seq, vocab])
    loss = g.op("xent", "cross_entropy", [logits, labels])
    g.output("loss", loss, "loss")
    return g


def rope_tables(g, seq, head_dim, theta=10000.0):
    """cos/sin tables [seq, head_dim] for rotate-half RoPE."""
    half = head_dim // 2
    pos = g.op("rope.pos_i", "iota", [], shape=[seq], dtype="i64", dim=0)
    pos = g.op("rope.pos", "convert", [pos], shape=[seq], dtype="f32")
    inv_freq = [1.0 / theta ** (2 * i / head_dim) for i in range(half)]
    inv = g.op("rope.inv_freq", "constant", [], shape=[half], dtype="f32",
               value=inv_freq)
    pos = g.reshape("rope.pos_col", pos, [seq, 1])
    inv = g.reshape("rope.inv_row", inv, [1, half])
    freqs = g.op("rope.freqs", "mul", [pos, inv])
    emb = g.op("rope.emb", "concat", [freqs, freqs], dim=1)
    g.expect(emb, [seq, head_dim])
    return g.op("rope.cos", "cos", [emb]), g.op("rope.sin", "sin", [emb])


def apply_rope(g, name, x, cos, sin):
    """x * cos + rotate_half(x) * sin on [B, H, S, D]."""
    d = g.shape(x)[-1]
    x1 = g.slice(f"{name}.x1", x, 3, 0, d // 2)
    x2 = g.slice(f"{name}.x2", x, 3, d // 2, d)
    nx2 = g.op(f"{name}.neg_x2", "neg", [x2])
    rot = g.op(f"{name}.rot", "concat", [nx2, x1], dim=3)
    a = g.op(f"{name}.xcos", "mul", [x, cos])
    b = g.op(f"{name}.rsin", "mul", [rot, sin])
    return g.op(name, "add", [a, b])


def llama_block(g, x, i, n_heads, n_kv_heads, head_dim, ffn_hidden, cos, sin):
    p = f"layers.{i}"
    b, s, dim = g.shape(x)
    a = g.rms_norm(f"{p}.attention_norm", x, f"{p}.attention_norm")
    q = g.linear(f"{p}.attention.q", a, f"{p}.attention.wq",
                 n_heads * head_dim, bias=False)
    k = g.linear(f"{p}.attention.k", a, f"{p}.attention.wk",
                 n_kv_heads * head_dim, bias=False)
    v = g.linear(f"{p}.attention.v", a, f"{p}.attention.wv",
                 n_kv_heads * head_dim, bias=False)
    q = g.split_heads(f"{p}.attention.qh", q, n_heads, head_dim)
    k = g.split_heads(f"{p}.attention.kh", k, n_kv_heads, head_dim)
    v = g.split_heads(f"{p}.attention.vh", v, n_kv_heads, head_dim)
    q = apply_rope(g, f"{p}.attention.q_rot", q, cos, sin)
    k = g.expect(apply_rope(g, f"{p}.attention.k_rot", k, cos, sin),
                 [b, n_kv_heads, s, head_dim])
    y = g.op(f"{p}.attention.sdpa", "sdpa", [q, k, v], causal=True)
    y = g.merge_heads(f"{p}.attention.merged", y)
    y = g.linear(f"{p}.attention.out", y, f"{p}.attention.wo", dim,
                 bias=False)
    h = g.op(f"{p}.h", "add", [x, y])
    f = g.rms_norm(f"{p}.ffn_norm", h, f"{p}.ffn_norm")
    f1 = g.linear(f"{p}.feed_forward.x1", f, f"{p}.feed_forward.w1",
                  ffn_hidden, bias=False)
    f3 = g.linear(f"{p}.feed_forward.x3", f, f"{p}.feed_forward.w3",
                  ffn_hidden, bias=False)
    act = g.op(f"{p}.feed_forward.silu", "silu", [f1])
    gated = g.op(f"{p}.feed_forward.gated", "mul", [act, f3])
    f = g.linear(f"{p}.feed_forward.out", gated, f"{p}.feed_forward.w2", dim,
                 bias=False)
    return g.op(f"{p}.out", "add", [h, f])


def make_llama_mini(batch=2, seq=16, vocab=64, dim=32, n_heads=4,
                    n_kv_heads=2, ffn_hidden=64, n_layers=2):
    head_dim = dim // n_heads
    g = GraphBuilder("llama-mini")
    tokens = g.data("tokens", [batch, seq], "i64")
    labels = g.data("labels", [batch, seq], "i64")
    emb = g.param("tok_embeddings.weight", [vocab, dim])
    x = g.op("h0", "embedding", [emb, tokens])
    cos, sin = rope_tables(g, seq, head_dim)
    for i in range(n_layers):
        x = llama_block(g, x, i, n_heads, n_kv_heads, head_dim, ffn_hidden,
                        cos, sin)
    x = g.rms_norm("norm", x, "norm")
    logits = g.linear("logits", x, "output", vocab, bias=False)
    g.expect(logits, [batch, seq, vocab])
    loss = g.op("xent", "cross_entropy", [logits, labels])
    g.output("loss", loss, "loss")
    return g


MODELS = {"mlp": make_mlp, "gpt2-mini": make_gpt2_mini,
          "llama-mini": make_llama_mini}


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

def _one_line(obj):
    return json.dumps(obj, separators=(", ", ": "))


def to_json(doc):
    """Pretty-print with one input, node or output per line."""
    lines = ["{"]
    for key in ("format", "version", "name"):
        lines.append(f'  "{key}": {json.dumps(doc[key])},')
    for key in ("inputs", "nodes", "outputs"):
        items = doc[key]
        lines.append(f'  "{key}": [')
        for i, item in enumerate(items):
            comma = "," if i + 1 < len(items) else ""
            lines.append(f"    {_one_line(item)}{comma}")
        lines.append("  ]," if key != "outputs" else "  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def default_out_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "docs", "examples"))


def check_file(path):
    with open(path) as f:
        doc = json.load(f)
    check_graph(doc)
    return doc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=default_out_dir(),
                    help="output directory (default: docs/examples)")
    ap.add_argument("--check", action="store_true",
                    help="only check the existing files, write nothing")
    args = ap.parse_args(argv)
    status = 0
    for name, make in MODELS.items():
        path = os.path.join(args.out, name + ".json")
        if not args.check:
            g = make()
            os.makedirs(args.out, exist_ok=True)
            with open(path, "w") as f:
                f.write(to_json(g.document()))
        try:
            doc = check_file(path)
        except (GraphError, OSError, ValueError) as e:
            print(f"{path}: {e}", file=sys.stderr)
            status = 1
            continue
        params = sum(_numel(i["shape"]) for i in doc["inputs"]
                     if i["role"] == "param")
        n_params = sum(1 for i in doc["inputs"] if i["role"] == "param")
        print(f"{path}: ok ({len(doc['nodes'])} nodes, {n_params} param "
              f"tensors, {params} parameters)")
    return status


if __name__ == "__main__":
    sys.exit(main())
