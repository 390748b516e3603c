"""Prints each tensor of a safetensors file as `name DTYPE [shape] [values]`."""
import json
import struct
import sys

FORMATS = {"F64": "d", "F32": "f", "I64": "q", "I32": "i", "BOOL": "?"}

with open(sys.argv[1], "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(n))
    data = f.read()
for name in sorted(k for k in header if k != "__metadata__"):
    info = header[name]
    begin, end = info["data_offsets"]
    fmt = FORMATS[info["dtype"]]
    count = (end - begin) // struct.calcsize(fmt)
    values = list(struct.unpack("<%d%s" % (count, fmt), data[begin:end]))
    print(name, info["dtype"], info["shape"], values)
