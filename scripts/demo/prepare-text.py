#!/usr/bin/env python3
"""Cuts a text into character ids for spmd-run --dataset, as nanoGPT's
shakespeare_char/prepare.py does.

    python3 scripts/demo/prepare-text.py data/kjv-genesis-exodus.txt /tmp/demo

Each distinct character of the text is a token (ids in the characters'
sorted order). The first 90% of the text becomes OUT/train.bin and the rest
OUT/val.bin, little-endian uint16 ids (nanoGPT's format); OUT/meta.json
holds the vocabulary. Standard library only.
"""
import argparse
import json
import os
import struct
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("text", help="a UTF-8 text file")
    parser.add_argument("out", help="the directory to write into")
    parser.add_argument("--val-fraction", type=float, default=0.1,
                        help="the share of the text, from its end, held out (default 0.1)")
    args = parser.parse_args()
    try:
        text = open(args.text, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError) as e:
        sys.exit(f"prepare-text: error: {args.text}: {e}")
    chars = sorted(set(text))
    if not text or len(chars) > 65535:
        sys.exit(f"prepare-text: error: {args.text}: {len(chars)} distinct "
                 "characters; a uint16 token file holds 1 to 65535")
    index = {c: i for i, c in enumerate(chars)}
    ids = [index[c] for c in text]
    split = int(len(ids) * (1 - args.val_fraction))
    os.makedirs(args.out, exist_ok=True)
    for name, part in (("train", ids[:split]), ("val", ids[split:])):
        with open(os.path.join(args.out, name + ".bin"), "wb") as f:
            f.write(struct.pack("<%dH" % len(part), *part))
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump({"vocab_size": len(chars), "chars": "".join(chars)}, f)
    print(f"{args.text}: {len(text)} characters, vocabulary {len(chars)}; "
          f"train.bin {split} tokens, val.bin {len(ids) - split} tokens in {args.out}")


if __name__ == "__main__":
    main()
