#!/usr/bin/env python3
"""A small torch.export archive with buffers, written without torch.

    make-buffer-pt2.py DIR

writes DIR/buffers.pt2, DIR/buffers.data.safetensors and
DIR/buffers.expected.json. The program is what torch.export gives for

    class M(nn.Module):          # lin: Linear(3, 4, bias=False)
        def forward(self, x):    # x [8, 3]
            y = x @ self.lin.weight.T
            self.bn.running_mean = 0.9 * running_mean + 0.1 * y.mean(0)
            self.bn.num_batches_tracked += 1
            return ((y * self.scale) ** 2).mean()

with two mutated buffers (bn.running_mean f32 [4], bn.num_batches_tracked
i64 []), one that is only read (scale, persistent: in the state dict) and
one that is neither read nor persistent (mask: not in the state dict, a
lifted constant). lin.weight is
stored transposed (a [3, 4] storage viewed with strides [1, 4]), as a
parameter that is a view of another tensor's storage would be. The entries
are STORED with 64-byte aligned data, as torch.export.save writes them.
expected.json has the state-dict values after one step (the buffers
exactly: they do not depend on the optimizer).
"""

import json
import struct
import sys
import zipfile

out = sys.argv[1]
W = [[0.1 * (i + 1) - 0.05 * j for j in range(3)] for i in range(4)]  # [4, 3]
x = [[((i * 3 + j) % 7 - 3) * 0.25 for j in range(3)] for i in range(8)]
rm0 = [0.5, -0.25, 1.0, 0.0]
nbt0 = 5
scale = [1.0, 2.0, 0.5, 1.5]


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def meta(dtype, sizes, strides):
    return {"dtype": dtype, "sizes": [{"as_int": s} for s in sizes],
            "requires_grad": False, "device": {"type": "cpu", "index": None},
            "strides": [{"as_int": s} for s in strides],
            "storage_offset": {"as_int": 0}, "layout": 7}


F32, I64 = 7, 5
tensor_values = {
    "p_lin_weight": meta(F32, [4, 3], [3, 1]),
    "b_bn_running_mean": meta(F32, [4], [1]),
    "b_bn_num_batches_tracked": meta(I64, [], []),
    "b_scale": meta(F32, [4], [1]),
    "b_mask": meta(F32, [2], [1]),
    "x": meta(F32, [8, 3], [3, 1]),
    "permute": meta(F32, [3, 4], [1, 3]),
    "y": meta(F32, [8, 4], [4, 1]),
    "y2": meta(F32, [8, 4], [4, 1]),
    "sq": meta(F32, [8, 4], [4, 1]),
    "loss": meta(F32, [], []),
    "bm": meta(F32, [4], [1]),
    "rm9": meta(F32, [4], [1]),
    "bm1": meta(F32, [4], [1]),
    "new_rm": meta(F32, [4], [1]),
    "new_nbt": meta(I64, [], []),
}


def t(name):
    return {"as_tensor": {"name": name}}


def node(target, name, inputs):
    return {"target": "torch.ops.aten." + target, "name": name,
            "inputs": [{"name": k, "arg": v, "kind": 1} for k, v in inputs],
            "outputs": [t(name)], "is_hop_single_tensor_return": None}


nodes = [
    node("permute.default", "permute",
         [("self", t("p_lin_weight")), ("dims", {"as_ints": [1, 0]})]),
    node("matmul.default", "y", [("self", t("x")), ("other", t("permute"))]),
    node("mul.Tensor", "y2", [("self", t("y")), ("other", t("b_scale"))]),
    node("mul.Tensor", "sq", [("self", t("y2")), ("other", t("y2"))]),
    node("mean.default", "loss", [("self", t("sq"))]),
    node("mean.dim", "bm", [("self", t("y")), ("dim", {"as_ints": [0]})]),
    node("mul.Tensor", "rm9",
         [("self", t("b_bn_running_mean")), ("other", {"as_float": 0.9})]),
    node("mul.Tensor", "bm1", [("self", t("bm")), ("other", {"as_float": 0.1})]),
    node("add.Tensor", "new_rm", [("self", t("rm9")), ("other", t("bm1"))]),
    node("add.Tensor", "new_nbt",
         [("self", t("b_bn_num_batches_tracked")), ("other", {"as_int": 1})]),
]
program = {
    "schema_version": {"major": 8, "minor": 0},
    "graph_module": {
        "graph": {"inputs": [], "outputs": [], "nodes": nodes,
                  "tensor_values": tensor_values},
        "signature": {
            "input_specs": [
                {"parameter": {"arg": {"name": "p_lin_weight"},
                               "parameter_name": "lin.weight"}},
                {"buffer": {"arg": {"name": "b_bn_running_mean"},
                            "buffer_name": "bn.running_mean",
                            "persistent": True}},
                {"buffer": {"arg": {"name": "b_bn_num_batches_tracked"},
                            "buffer_name": "bn.num_batches_tracked",
                            "persistent": True}},
                {"buffer": {"arg": {"name": "b_scale"},
                            "buffer_name": "scale", "persistent": True}},
                {"buffer": {"arg": {"name": "b_mask"},
                            "buffer_name": "mask", "persistent": False}},
                {"user_input": {"arg": t("x")}},
            ],
            "output_specs": [
                {"buffer_mutation": {"arg": t("new_rm"),
                                     "buffer_name": "bn.running_mean"}},
                {"buffer_mutation": {"arg": t("new_nbt"),
                                     "buffer_name": "bn.num_batches_tracked"}},
                {"user_output": {"arg": t("loss")}},
            ],
        },
    },
}

# lin.weight's storage holds W transposed: storage[j * 4 + i] = W[i][j].
weights = {
    "lin.weight": ("weight_0", f32([W[i][j] for j in range(3) for i in range(4)]),
                   meta(F32, [4, 3], [1, 4])),
    "bn.running_mean": ("weight_1", f32(rm0), meta(F32, [4], [1])),
    "bn.num_batches_tracked": ("weight_2", struct.pack("<q", nbt0),
                               meta(I64, [], [])),
    "scale": ("weight_3", f32(scale), meta(F32, [4], [1])),
}
constants = {"mask": ("constant_0", f32([1.0, 0.0]), meta(F32, [2], [1]))}


def config(entries, is_param):
    return {"config": {name: {"path_name": path, "is_param": is_param(name),
                              "use_pickle": False, "tensor_meta": m}
                       for name, (path, _, m) in entries.items()}}


def add(z, name, data):
    # torch.export.save aligns each entry's data to 64 bytes.
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_STORED
    header = 30 + len(name.encode())
    pad = (-(z.fp.tell() + header + 4)) % 64
    info.extra = struct.pack("<HH", 0xCAFE, pad) + b"\0" * pad
    z.writestr(info, data)


with zipfile.ZipFile(out + "/buffers.pt2", "w") as z:
    for name, (path, data, _) in weights.items():
        add(z, "buffers/data/weights/" + path, data)
    add(z, "buffers/data/weights/model_weights_config.json",
        json.dumps(config(weights, lambda n: n == "lin.weight")))
    for name, (path, data, _) in constants.items():
        add(z, "buffers/data/constants/" + path, data)
    add(z, "buffers/data/constants/model_constants_config.json",
        json.dumps(config(constants, lambda n: False)))
    add(z, "buffers/models/model.json", json.dumps(program))

# The data, as safetensors.
header = json.dumps({"x": {"dtype": "F32", "shape": [8, 3],
                           "data_offsets": [0, 96]}}).encode()
header += b" " * ((-len(header)) % 8)
with open(out + "/buffers.data.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header +
            f32([v for row in x for v in row]))

y = [[sum(x[n][j] * W[i][j] for j in range(3)) for i in range(4)]
     for n in range(8)]
rm1 = [0.9 * rm0[i] + 0.1 * sum(y[n][i] for n in range(8)) / 8
       for i in range(4)]
loss = sum((y[n][i] * scale[i]) ** 2 for n in range(8) for i in range(4)) / 32
json.dump({"loss": loss, "bn.running_mean": rm1,
           "bn.num_batches_tracked": nbt0 + 1, "lin.weight": W,
           "scale": scale},
          open(out + "/buffers.expected.json", "w"))
