#!/usr/bin/env python3
"""Writes the graph of a small character-level GPT (spmdc's graph format)
for the vocabulary of scripts/demo/prepare-text.py's meta.json.

    python3 scripts/demo/make-model.py /tmp/demo/meta.json -o /tmp/demo/gpt.json

The model is tools/examples/make_examples.py's GPT-2 (learned positions,
pre-norm blocks, GELU MLP, tied LM head, cross-entropy over 'labels') at the
size the flags give; the defaults train in about two minutes on two cores.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools", "examples"))
import make_examples  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("meta", help="meta.json of prepare-text.py")
    parser.add_argument("-o", "--output", required=True, help="the graph JSON to write")
    parser.add_argument("--batch", type=int, default=16, help="sequences a step (default 16)")
    parser.add_argument("--seq", type=int, default=64, help="characters a sequence (default 64)")
    parser.add_argument("--width", type=int, default=128, help="embedding width (default 128)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    parser.add_argument("--layers", type=int, default=4, help="blocks (default 4)")
    args = parser.parse_args()
    vocab = json.load(open(args.meta))["vocab_size"]
    g = make_examples.make_gpt2_mini(batch=args.batch, seq=args.seq, vocab=vocab,
                                     n_embd=args.width, n_head=args.heads,
                                     mlp_hidden=4 * args.width, n_layer=args.layers)
    with open(args.output, "w") as f:
        f.write(make_examples.to_json(g.document()))
    print(f"{args.output}: GPT of {args.layers} blocks, width {args.width}, "
          f"{args.heads} heads, vocabulary {vocab}, batch {args.batch} x {args.seq}")


if __name__ == "__main__":
    main()
