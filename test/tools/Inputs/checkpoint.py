"""Checks an spmd-run checkpoint directory against docs/tools.md
(standard library only).

  checkpoint.py check DIR
      DIR/latest names a step folder whose index.json has the format's
      fields, and each tensor's blocks tile it exactly, each where the
      index says in its shard file (the file's own safetensors header
      agrees: key, dtype, shape, byte range). Prints one summary line.
  checkpoint.py blocks DIR KEY
      Prints the blocks of tensor KEY (e.g. param/wte.weight) of DIR's last
      good checkpoint, one a line: "FILE KEY offsets [..] sizes [..]".
"""
import json
import os
import struct
import sys


def header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return 8 + n, json.loads(f.read(n))


def load(directory):
    folder = open(os.path.join(directory, "latest")).read().strip()
    return folder, json.load(open(os.path.join(directory, folder, "index.json")))


def disjoint(a, b):
    return any(ao + asz <= bo or bo + bsz <= ao for ao, asz, bo, bsz in
               zip(a["offsets"], a["sizes"], b["offsets"], b["sizes"]))


def check(directory):
    folder, index = load(directory)
    assert index["format"] == "spmdc-checkpoint" and index["version"] == 1, index
    assert folder == "step-%06d" % index["step"], (folder, index["step"])
    assert len(index["module"]) == 16, index["module"]
    assert index["dataset"]["next_batch"] == index["step"], index["dataset"]
    ranks = 1
    for size in index["mesh"]["shape"]:
        ranks *= size
    assert sorted(index["files"]) == sorted(
        "rank-%d.safetensors" % r for r in range(ranks)), index["files"]
    headers = {}
    for name, info in index["files"].items():
        path = os.path.join(directory, folder, name)
        assert os.path.getsize(path) == info["bytes"], (name, info)
        headers[name] = header(path)
    for key, tensor in index["tensors"].items():
        assert key == tensor["role"] + "/" + tensor["name"], key
        count = 1
        for size in tensor["shape"]:
            count *= size
        covered = 0
        for i, block in enumerate(tensor["blocks"]):
            start, entries = headers[block["file"]]
            # A tensor with a dim in parts: one block a piece, keyed KEY#j.
            assert block["key"] == key or \
                block["key"].startswith(key + "#"), (key, block)
            entry = entries[block["key"]]
            assert entry["shape"] == block["sizes"], (key, entry, block)
            assert entry["dtype"] == block["dtype"], (key, entry, block)
            begin, end = entry["data_offsets"]
            assert block["begin"] == start + begin, (key, block, start, begin)
            assert block["bytes"] == end - begin, (key, block)
            assert all(o + s <= d for o, s, d in
                       zip(block["offsets"], block["sizes"], tensor["shape"]))
            n = 1
            for size in block["sizes"]:
                n *= size
            covered += n
            assert all(disjoint(block, other)
                       for other in tensor["blocks"][:i]), (key, block)
        assert covered == count, (key, covered, count)
    print("index ok: step %d, %d tensors in %d files" %
          (index["step"], len(index["tensors"]), len(index["files"])))


def blocks(directory, key):
    for block in load(directory)[1]["tensors"][key]["blocks"]:
        print(block["file"], block["key"], "offsets", block["offsets"],
              "sizes", block["sizes"])


if __name__ == "__main__":
    if sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        assert sys.argv[1] == "blocks", sys.argv
        blocks(sys.argv[2], sys.argv[3])
