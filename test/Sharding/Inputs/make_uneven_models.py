"""Writes the GPT-2 graphs of uneven.test: shapes no mesh divides.

    python3 test/Sharding/Inputs/make_uneven_models.py

gpt2-vocab.json has GPT-2's real vocabulary (50,257 rows, an odd number)
at a tiny width; gpt2-odd.json a batch of 6, width 15 and 3 heads of 5
(nothing divides by 2 or 4 but the batch by 2); gpt2-batch1.json a batch
of 1, which no preset can split.
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "tools", "examples"))
import make_examples  # noqa: E402

MODELS = {
    "gpt2-vocab": dict(batch=2, seq=4, vocab=50257, n_embd=8, n_head=2,
                       mlp_hidden=16, n_layer=1),
    "gpt2-odd": dict(batch=6, seq=5, vocab=97, n_embd=15, n_head=3,
                     mlp_hidden=21, n_layer=1),
    "gpt2-batch1": dict(batch=1, seq=6, vocab=33, n_embd=8, n_head=2,
                        mlp_hidden=16, n_layer=1),
}

for name, shape in MODELS.items():
    g = make_examples.make_gpt2_mini(**shape)
    g.name = name
    doc = g.document()
    doc["name"] = name
    make_examples.check_graph(doc)
    with open(os.path.join(here, name + ".json"), "w") as f:
        f.write(make_examples.to_json(doc))
    print(name + ".json")
