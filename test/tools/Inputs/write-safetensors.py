"""Writes a one-tensor safetensors file: NAME DTYPE SIZE, values 1..SIZE."""
import json
import struct
import sys

path, name, dtype, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
fmt = {"F32": "f", "F64": "d", "I64": "q"}[dtype]
data = struct.pack("<%d%s" % (size, fmt), *range(1, size + 1))
header = json.dumps({name: {"dtype": dtype, "shape": [size], "data_offsets": [0, len(data)]}}).encode()
header += b" " * (-len(header) % 8)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + data)
