#!/usr/bin/python3
"""Average the weights of training checkpoints into one checkpoint.

    average.py --out avg.pt work/train-en-fr/last-*.pt [work/train-en-fr/best.pt]

Inputs are train.py's evaluation checkpoints (best.pt, last-N.pt: {"model",
"config", "dev_loss", "step"}); the same file named twice, or two files of the
same step (best.pt is also one of the ring's), count once.  Every tensor is
averaged in float64 and stored as float32; the config must be the same in all.
The output has the same layout, with "step" the newest step, "dev_loss" None
(not measured) and "averaged" listing [(path, step, dev_loss)] of the inputs,
so export.py takes it as it takes best.pt.

As a module: average(paths) -> checkpoint dict; ring(train_dir) -> the ring's
checkpoints, newest first; load(path) retries a file being rewritten.
"""
import argparse, glob, os, sys, time
import torch


def load(path, tries=5):
    """torch.load, retried: train.py rewrites last-N.pt in place while it runs."""
    for i in range(tries):
        try:
            return torch.load(path, map_location="cpu")
        except (RuntimeError, EOFError, OSError) as e:
            if i == tries - 1:
                raise
            print(f"{path}: {e}; retrying", file=sys.stderr)
            time.sleep(5)


def ring(train_dir):
    """[(step, dev_loss, path)] of train_dir/last-*.pt, newest step first."""
    out = []
    for p in glob.glob(f"{train_dir}/last-*.pt"):
        ck = load(p)
        out.append((int(ck["step"]), ck.get("dev_loss"), p))
    return sorted(out, reverse=True)


def average(paths):
    seen, cks = set(), []
    for p in paths:
        ck = load(p)
        if ck["step"] in seen:
            continue
        seen.add(ck["step"])
        cks.append((p, ck))
    if not cks:
        raise SystemExit("no checkpoints to average")
    cfg = cks[0][1]["config"]
    keys = list(cks[0][1]["model"].keys())
    for p, ck in cks[1:]:
        if ck["config"] != cfg:
            raise SystemExit(f"{p}: config differs from {cks[0][0]}")
        if list(ck["model"].keys()) != keys:
            raise SystemExit(f"{p}: tensor names differ from {cks[0][0]}")
    state = {}
    for k in keys:
        acc = torch.zeros_like(cks[0][1]["model"][k], dtype=torch.float64)
        for _, ck in cks:
            acc += ck["model"][k].to(torch.float64)
        state[k] = (acc / len(cks)).to(cks[0][1]["model"][k].dtype)
    return {"model": state, "config": cfg, "dev_loss": None if len(cks) > 1 else cks[0][1].get("dev_loss"),
            "step": max(ck["step"] for _, ck in cks),
            "averaged": [(p, int(ck["step"]), ck.get("dev_loss")) for p, ck in cks]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("ckpts", nargs="+")
    a = ap.parse_args()
    ck = average(a.ckpts)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    torch.save(ck, a.out + ".tmp"); os.replace(a.out + ".tmp", a.out)
    print(f"{a.out}: average of " + ", ".join(f"{p} (step {s}, dev loss {d:.4f})" if d is not None else f"{p} (step {s})"
                                          for p, s, d in ck["averaged"]))


if __name__ == "__main__":
    main()
