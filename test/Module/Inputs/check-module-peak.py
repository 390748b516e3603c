"""Checks that a module's header carries its report's buffer peak."""
import json
import sys

module, report = sys.argv[1:3]
with open(module, "rb") as f:
    assert f.readline() == b"SPMDC-MODULE 1\n"
    header = json.loads(f.read(int(f.readline())))
peak = json.load(open(report))["per_rank"][0]["peak_memory_bytes"]
assert header["buffer_peak_bytes"] == peak, (header["buffer_peak_bytes"], peak)
print(f"buffer_peak_bytes {peak} equals the report's peak_memory_bytes")
