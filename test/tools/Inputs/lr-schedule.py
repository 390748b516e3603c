"""lr-schedule.py METRICS SCHEDULE LR MIN_LR WARMUP TOTAL: every "lr" of an
spmd-run --metrics file must be, exactly, nanoGPT's get_lr(it) for its step
(it = step - 1), with a linear decay beside the cosine one and constant for
"constant" (docs/tools.md, "Learning-rate schedules")."""
import json
import math
import sys

path, schedule = sys.argv[1], sys.argv[2]
lr, min_lr = float(sys.argv[3]), float(sys.argv[4])
warmup, total = int(sys.argv[5]), int(sys.argv[6])


def get_lr(it):
    """nanoGPT's train.py, line for line (its lr_decay_iters: total)."""
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if schedule == "constant":
        return lr
    if it > total:
        return min_lr
    decay_ratio = (it - warmup) / (total - warmup)
    assert 0 <= decay_ratio <= 1
    if schedule == "cosine":
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    else:
        coeff = 1.0 - decay_ratio
    return min_lr + coeff * (lr - min_lr)


records = [json.loads(line) for line in open(path)]
if not records:
    sys.exit("%s: no steps" % path)
for r in records:
    want = get_lr(r["step"] - 1)
    if r["lr"] != want:
        sys.exit("step %d: lr %r, expected %r" % (r["step"], r["lr"], want))
print("%d learning rates agree: %s" % (
    len(records), " ".join(repr(r["lr"]) for r in records)))
