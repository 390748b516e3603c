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

# What the step's own buffers at the peak are: each named by the graph's
# node whose op allocated it (attention's "NODE (attention)"; "(N other
# names)", the rest in one), and
# with the arguments (parameters, optimizer state, the rank's batch and
# scalars: under 1 KiB here) they make up the peak exactly.
graph = json.load(open(sys.argv[3]))
names = {node["name"] for node in graph["nodes"]}
held = rank["peak_buffers"]
assert held and all(b["name"].split(" (")[0] in names or
                    b["name"].endswith(" other names)") for b in held), held
assert [b["bytes"] for b in held[:-1]] == sorted(
    (b["bytes"] for b in held[:-1]), reverse=True), held
arguments = peak - sum(b["bytes"] for b in held)
batch_and_scalars = arguments - rank["param_bytes"] - rank["optimizer_state_bytes"]
assert 0 < batch_and_scalars < 1024, (arguments, batch_and_scalars)
print(f"peak_buffers: {len(held)} names, the peak less the arguments")
