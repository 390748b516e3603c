"""Copies module SRC to DST with its JSON header edited by EXPR, a Python
expression over `h` (the header, a dict) evaluated for its side effects,
e.g. "h['arguments'][0].update(shape=[-1])": SRC DST EXPR."""
import json
import sys

src, dst, expr = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(src, "rb").read()
magic, rest = data.split(b"\n", 1)
length, rest = rest.split(b"\n", 1)
h = json.loads(rest[:int(length)])
body = rest[int(length):]
exec(expr)
text = json.dumps(h, indent=1).encode()
open(dst, "wb").write(magic + b"\n" + str(len(text)).encode() + b"\n" + text + body)
