"""Writes the GPT-2 graphs of fused-qkv.test: one fused QKV projection per
block, sliced into q, k and v.

    python3 test/Sharding/Inputs/make_fused_models.py

gpt2-fused-linear.json keeps nanoGPT's c_attn, an nn.Linear weight
[3 * 32, 32]; gpt2-fused-conv1d.json HuggingFace GPT-2's Conv1D, a weight
[32, 3 * 32] applied as addmm to the flattened tokens. Otherwise both are
gpt2-mini (tools/examples/make_examples.py).
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "tools", "examples"))
import make_examples  # noqa: E402

for qkv in ("linear", "conv1d"):
    name = "gpt2-fused-" + qkv
    g = make_examples.make_gpt2_mini(qkv=qkv)
    g.name = name
    doc = g.document()
    doc["name"] = name
    make_examples.check_graph(doc)
    with open(os.path.join(here, name + ".json"), "w") as f:
        f.write(make_examples.to_json(doc))
    print(name + ".json")
