"""prefetch-peaks.py DEPTH0 DEPTH1 DEPTH3: the forward's buffer peaks.

Under ZeRO-3 with --overlap, each parameter group's all-gather that is
under way ahead of the one in use holds the group's gathered parameters
(and the flat buffer of its local shards) until its wait. The reports'
`peak_memory_bytes_in.forward` must therefore grow with --prefetch-depth:
depth 1 above depth 0, and depth 3 above depth 1 by at most two groups'
gathered bytes and their shards (2 ranks: 1.5 x the largest gather's
payload, each).
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


reports = [load(p) for p in sys.argv[1:4]]
for report in reports:
    assert report["peak_memory_of"] == "buffers", report["peak_memory_of"]
depth0, depth1, depth3 = (
    max(rank["peak_memory_bytes_in"]["forward"] for rank in r["per_rank"])
    for r in reports)
group = max(c["payload_bytes"] for c in reports[1]["collectives"]
            if c["kind"] == "all_gather" and c["phase"] == "forward")
print(f"forward peaks: depth 0 {depth0}, 1 {depth1}, 3 {depth3}; "
      f"largest group {group}")
assert depth0 < depth1 < depth3, "the forward's peak does not grow with depth"
assert depth3 - depth1 <= 2 * 1.5 * group, "depth 3 holds more than 2 groups"
