"""Checks a compiled step's report peak against its tensor estimate."""
import json
import sys

tensors, buffers = (json.load(open(path)) for path in sys.argv[1:3])
assert tensors["peak_memory_of"] == "tensors", tensors["peak_memory_of"]
print("tensors: estimate")
assert buffers["peak_memory_of"] == "buffers", buffers["peak_memory_of"]
rank = buffers["per_rank"][0]
floor = (rank["param_bytes"] + rank["optimizer_state_bytes"] +
         rank["saved_activation_bytes"])
peak, estimate = rank["peak_memory_bytes"], tensors["per_rank"][0]["peak_memory_bytes"]
assert floor < peak < estimate, (floor, peak, estimate)
print("buffers: peak below the estimate, above arguments and saved activations")
