#!/usr/bin/python3
"""Pick the checkpoint to ship: best.pt (lowest dev loss) or an average of the
last evaluations' weights (train.py's ring last-N.pt), by greedy BLEU on the
dev split.

    pick.py --train work/train-en-fr --direction en-fr --corpus work/corpus --tok work/tok \\
            --work work/pick-en-fr --out work/pick-en-fr/final.pt

Candidates (--candidates, comma-separated):
  best         best.pt
  lastN        the average of the N newest ring checkpoints (by step)
  best+lastN   the average of best.pt and the N newest ring checkpoints
A candidate whose set of steps equals an earlier one's is not decoded twice.
Each candidate is exported to <work>/cand-<name> and decoded greedily on the
dev split by the C engine (build/mtserve translate: the same ids as the
PyTorch reference, tests/test_engine.c; much faster); BLEU as in evaluate.py.
The winner (ties go to the earlier candidate, so best.pt wins a tie) is
written to --out in train.py's checkpoint layout, with "picked" and the
averaged steps; <work>/pick.json records every candidate's figures.
"""
import argparse, json, os, re, shutil, sys, time
import torch
sys.path.insert(0, os.path.dirname(__file__))
from average import average, load, ring
from evaluate import bleu, chrf, c_translate, read_split
from export import export


def candidate(name, train_dir, newest):
    m = re.fullmatch(r"(best)?\+?(?:last(\d+))?", name)
    if not m or not (m.group(1) or m.group(2)):
        raise SystemExit(f"bad candidate '{name}' (best, lastN, best+lastN)")
    paths = [f"{train_dir}/best.pt"] if m.group(1) else []
    if m.group(2):
        n = int(m.group(2))
        if n > len(newest):
            return None
        paths += [p for _, _, p in newest[:n]]
    return paths


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True, help="train.py's --out directory (read only)")
    ap.add_argument("--direction", default="en-fr", choices=["en-fr", "fr-en"])
    ap.add_argument("--corpus", required=True); ap.add_argument("--tok", required=True)
    ap.add_argument("--work", required=True, help="scratch directory for the candidates' exports")
    ap.add_argument("--out", required=True, help="the winner's checkpoint")
    ap.add_argument("--candidates", default="best,last2,last4,best+last4")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--limit", type=int, default=0, help="first N sentences of the split only")
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--mtserve", default="../build/mtserve")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    sl, tl = a.direction.split("-")
    src, ref = read_split(a.corpus, a.split, a.direction, a.limit)
    os.makedirs(a.work, exist_ok=True)
    newest = ring(a.train)
    print(f"ring: " + ", ".join(f"step {s} dev loss {d:.4f}" for s, d, _ in newest), flush=True)
    best_step = int(load(f"{a.train}/best.pt")["step"])
    results, done, cks = [], {}, {}
    for name in a.candidates.split(","):
        paths = candidate(name, a.train, newest)
        if paths is None:
            print(f"{name}: the ring holds only {len(newest)} checkpoints; skipped", flush=True)
            continue
        ck = average(paths)
        steps = tuple(sorted(s for _, s, _ in ck["averaged"]))
        if steps in done:
            print(f"{name}: steps {list(steps)} = candidate {done[steps]}; not decoded again", flush=True)
            continue
        done[steps] = name
        d = f"{a.work}/cand-{name}"
        export(ck["model"], ck["config"], a.tok, d, "F32", sl, tl)
        t0 = time.time()
        hyp = c_translate(a.mtserve, d, src, 1, a.max_length, a.threads)
        r = {"name": name, "steps": list(steps), "dev_loss": ck["dev_loss"],
             "bleu": round(bleu(hyp, ref), 2), "chrf": round(chrf(hyp, ref), 2), "seconds": round(time.time() - t0, 1)}
        print(json.dumps(r), flush=True)
        results.append(r); cks[name] = ck
        shutil.rmtree(d)
    win = max(results, key=lambda r: r["bleu"])          # max keeps the first of equals
    ck = cks[win["name"]]
    ck["picked"] = win["name"]
    torch.save(ck, a.out + ".tmp"); os.replace(a.out + ".tmp", a.out)
    rec = {"direction": a.direction, "split": a.split, "sentences": len(src), "decoder": "c, greedy",
           "train_dir": a.train, "best_step": best_step, "candidates": results, "picked": win["name"],
           "picked_steps": win["steps"], "checkpoint": a.out}
    with open(f"{a.work}/pick.json", "w") as f:
        json.dump(rec, f, indent=2); f.write("\n")
    print(f"picked {win['name']} (steps {win['steps']}): dev BLEU {win['bleu']} -> {a.out}")


if __name__ == "__main__":
    main()
