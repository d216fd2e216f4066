#!/usr/bin/python3
"""The PyTorch reference as a whole process, for bench/run.py's whole-process
figure: load the model directory (models/recipe/load.py), read one sentence a
line on stdin, translate each alone (batch 1, greedy, the model's max_length),
write one translation a line.  The C side of the comparison is
`mtserve translate --beam 1 --threads N`, which does the same: load,
tokenize, decode one sentence at a time, detokenize."""
import argparse, os, sys
import torch
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models", "recipe"))
from load import load_dir
from marian_tok import MarianTok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/en-fr")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    m, cfg = load_dir(a.model)
    tok = MarianTok(a.model)
    max_len = cfg.get("max_length", 256) if isinstance(cfg, dict) else 256
    out = sys.stdout
    with torch.no_grad():
        for line in sys.stdin.read().splitlines():
            ids = tok.encode(line)
            st = torch.tensor([ids])
            res = m.greedy(st, torch.ones_like(st), max_len)
            out.write(tok.decode(res[0]) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
