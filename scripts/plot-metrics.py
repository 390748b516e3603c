#!/usr/bin/env python3
"""Plots an spmd-run metrics file (--metrics FILE.jsonl) to a PNG.

    python3 scripts/plot-metrics.py m.jsonl -o loss.png

One panel a series against the step: the loss, the eval loss when the file
has one ("eval_loss", spmd-run --eval-dataset) and the learning rate when it
has one ("lr"). Each panel is scaled to its own range, which the
script prints, with the points it drew. It needs only Python's standard
library (the PNG is written with zlib), so it runs wherever spmd-run does.
"""
import argparse
import json
import struct
import sys
import zlib

WIDTH, PANEL_HEIGHT, MARGIN = 640, 240, 24
BACKGROUND, AXES, COLOURS = (255, 255, 255), (160, 160, 160), {
    "loss": (31, 119, 180), "eval_loss": (44, 160, 44), "lr": (214, 39, 40)}


def fail(message):
    print(f"plot-metrics: error: {message}", file=sys.stderr)
    sys.exit(1)


def read_metrics(path):
    """The (step, record) pairs of a JSON Lines metrics file, in order."""
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            fail(f"{path}:{number}: not JSON: {e.msg}")
        if not isinstance(record, dict) or not isinstance(record.get("step"), int):
            fail(f"{path}:{number}: a metrics line needs an integer \"step\"")
        records.append(record)
    if not records:
        fail(f"{path}: no metrics lines")
    return records


class Canvas:
    def __init__(self, width, height):
        self.width, self.height = width, height
        self.pixels = [list(BACKGROUND) * width for _ in range(height)]

    def set(self, x, y, colour):
        if 0 <= x < self.width and 0 <= y < self.height:
            self.pixels[y][3 * x:3 * x + 3] = colour

    def line(self, x0, y0, x1, y1, colour):
        """Bresenham's line, two pixels thick."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        error = dx + dy
        while True:
            self.set(x0, y0, colour)
            self.set(x0, y0 + 1, colour)
            if x0 == x1 and y0 == y1:
                return
            doubled = 2 * error
            if doubled >= dy:
                error += dy
                x0 += sx
            if doubled <= dx:
                error += dx
                y0 += sy

    def png(self):
        rows = b"".join(b"\x00" + bytes(row) for row in self.pixels)

        def chunk(kind, data):
            return (struct.pack(">I", len(data)) + kind + data +
                    struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
                chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def plot(canvas, top, steps, values, colour):
    """One panel: the series in its own range, with a frame."""
    left, right = MARGIN, canvas.width - MARGIN
    upper, lower = top + MARGIN, top + PANEL_HEIGHT - MARGIN
    for x0, y0, x1, y1 in ((left, upper, right, upper), (right, upper, right, lower),
                           (right, lower, left, lower), (left, lower, left, upper)):
        canvas.line(x0, y0, x1, y1, AXES)
    low, high = min(values), max(values)
    first, last = steps[0], steps[-1]

    def at(step, value):
        x = left if last == first else left + round((step - first) / (last - first) * (right - left))
        y = (upper + lower) // 2 if high == low else lower - round((value - low) / (high - low) * (lower - upper))
        return x, y

    points = [at(s, v) for s, v in zip(steps, values)]
    for (x0, y0), (x1, y1) in zip(points, points[1:] or points):
        canvas.line(x0, y0, x1, y1, colour)
    return low, high


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("metrics", help="the JSON Lines file spmd-run --metrics wrote")
    parser.add_argument("-o", "--output", required=True, help="the PNG to write")
    args = parser.parse_args()
    records = read_metrics(args.metrics)
    series = [name for name in ("loss", "eval_loss", "lr")
              if any(name in r for r in records)]
    if not series:
        fail(f"{args.metrics}: no \"loss\" or \"lr\" to plot")
    canvas = Canvas(WIDTH, PANEL_HEIGHT * len(series))
    for panel, name in enumerate(series):
        points = [(r["step"], float(r[name])) for r in records if name in r]
        steps, values = [p[0] for p in points], [p[1] for p in points]
        low, high = plot(canvas, panel * PANEL_HEIGHT, steps, values, COLOURS[name])
        print(f"{name}: {len(points)} points, steps {steps[0]} to {steps[-1]}, "
              f"from {low:.6g} to {high:.6g}")
    try:
        with open(args.output, "wb") as out:
            out.write(canvas.png())
    except OSError as e:
        fail(f"cannot write {args.output}: {e.strerror}")
    print(f"wrote {args.output} ({canvas.width} x {canvas.height})")


if __name__ == "__main__":
    main()
