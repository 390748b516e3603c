#!/usr/bin/env python3
"""edit-pt2-node.py IN OUT TARGET_SUBSTRING ARG VALUE

Copies a .pt2 archive, setting argument ARG of the first node whose target
contains TARGET_SUBSTRING to VALUE (true, false, or an integer), for the
importer's error tests."""
import json
import sys
import zipfile

src, dst, target, arg, value = sys.argv[1:6]
encoded = ({"as_bool": value == "true"} if value in ("true", "false")
           else {"as_int": int(value)})
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
    for item in zin.infolist():
        data = zin.read(item.filename)
        if item.filename.endswith("/models/model.json"):
            program = json.loads(data)
            for node in program["graph_module"]["graph"]["nodes"]:
                if target in node["target"]:
                    for a in node["inputs"]:
                        if a["name"] == arg:
                            a["arg"] = encoded
                    break
            data = json.dumps(program).encode()
        zout.writestr(item, data)
