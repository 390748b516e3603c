"""safetensors files with numpy and the standard library alone.

Keeps each array's dtype (f32, f64, i64, i32, bool; f16 and bf16 are read
too, bf16 as float32), so that scripts which do not need PyTorch
(bench/peers.py's spmdc and JAX rows) can write spmdc's inputs.
"""

import json
import struct

import numpy as np

_ST_DTYPES = {np.dtype("float32"): "F32", np.dtype("float64"): "F64",
              np.dtype("int64"): "I64", np.dtype("int32"): "I32",
              np.dtype("bool"): "BOOL"}
_NP_DTYPES = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4",
              "BOOL": "|b1", "F16": "<f2"}


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: numpy array (f32/f64/i64/i32/bool)}; keys sorted."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        array = np.asarray(tensors[name])  # keeps 0-d arrays 0-d
        dtype = _ST_DTYPES[array.dtype]
        blob = array.astype(_NP_DTYPES[dtype]).tobytes(order="C")
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        if info["dtype"] == "BF16":  # numpy has no bfloat16: as float32
            raw = np.frombuffer(data[begin:end], "<u2").astype(np.uint32)
            array = (raw << 16).view(np.float32)
        else:
            array = np.frombuffer(data[begin:end], _NP_DTYPES[info["dtype"]])
        out[name] = array.reshape(info["shape"])
    return out
