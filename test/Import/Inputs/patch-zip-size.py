"""Copies zip archive SRC to DST with the uncompressed size of every entry
whose name ends with SUFFIX set to SIZE in the central directory (the claim
a reader must check before it allocates): SRC DST SUFFIX SIZE."""
import struct
import sys

src, dst, suffix, size = sys.argv[1], sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])
data = bytearray(open(src, "rb").read())
at = data.find(b"PK\x01\x02")
while at >= 0:
    name_length, extra_length, comment_length = struct.unpack_from("<HHH", data, at + 28)
    name = bytes(data[at + 46:at + 46 + name_length])
    if name.endswith(suffix):
        struct.pack_into("<I", data, at + 24, size)
    at = data.find(b"PK\x01\x02", at + 46 + name_length + extra_length + comment_length)
open(dst, "wb").write(data)
