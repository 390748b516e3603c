"""Copies .pt2 archive SRC to DST without the tensor metadata of its first
node's first output (tensor_values[name] removed): SRC DST."""
import json
import sys
import zipfile

src, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
    for info in zin.infolist():
        data = zin.read(info.filename)
        if "/models/" in info.filename and info.filename.endswith(".json"):
            program = json.loads(data)
            graph = program["graph_module"]["graph"]
            del graph["tensor_values"][graph["nodes"][0]["outputs"][0]["as_tensor"]["name"]]
            data = json.dumps(program).encode()
        zout.writestr(info.filename, data)
