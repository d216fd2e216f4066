#!/usr/bin/python3
"""The PyTorch reference's speed on the same weights and inputs as bench_engine.

Prints one JSON line per configuration: sentences/s, target tokens/s and the
output ids (so bench/run.sh can check the C outputs are equal).
Greedy runs batched (batch 1 and 32); beam search in the reference decodes one
sentence at a time, so "beam 4 batch 32" is 32 sentences decoded one after
another (the reference has no batched beam search)."""
import argparse, json, os, sys, time
import torch
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models", "recipe"))
from load import load_dir
from marian_tok import MarianTok


@torch.no_grad()
def run(m, tok, srcs, batch, beam, max_len):
    outs = []
    t0 = time.perf_counter()
    for s in range(0, len(srcs), batch):
        chunk = srcs[s:s + batch]
        if beam == 1:
            L = max(map(len, chunk))
            st = torch.full((len(chunk), L), tok.pad)
            for r, x in enumerate(chunk):
                st[r, :len(x)] = torch.tensor(x)
            outs += m.greedy(st, (st != tok.pad).long(), max_len)
        else:
            outs += [m.beam(x, beam, max_len)[0][1] for x in chunk]
    dt = time.perf_counter() - t0
    return outs, dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True); ap.add_argument("--input")
    ap.add_argument("--n", type=int, default=64); ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--configs", default="1:1,32:1,1:4,32:4", help="batch:beam,...")
    ap.add_argument("--src-ids", help="source ids, one JSON list a line (bench_engine --src-out): "
                    "decode exactly these instead of tokenizing --input")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    m, _ = load_dir(a.model); tok = MarianTok(a.model)
    if a.src_ids:
        srcs = [json.loads(x) for x in open(a.src_ids).read().splitlines()[:a.n]]
    else:
        srcs = [tok.encode(x) for x in open(a.input).read().splitlines()[:a.n]]
    beams = {}       # beam search is sentence by sentence whatever the batch: measured once per beam size
    for cfg in a.configs.split(","):
        batch, beam = map(int, cfg.split(":"))
        note = None
        if beam > 1 and beam in beams:
            outs, dt, note = *beams[beam][:2], f"same run as batch {beams[beam][2]} (no batched beam)"
        else:
            run(m, tok, srcs[:batch if beam == 1 else 1], batch, beam, a.max_length)   # warm-up
            outs, dt = run(m, tok, srcs, batch, beam, a.max_length)
            if beam > 1:
                beams[beam] = (outs, dt, batch)
        ntok = sum(len(o) for o in outs)
        print(json.dumps({"engine": "pytorch", "batch": batch, "beam": beam, "sentences": len(srcs),
                          "seconds": round(dt, 3), "sent_per_s": round(len(srcs) / dt, 2),
                          "tok_per_s": round(ntok / dt, 1), "target_tokens": ntok, "note": note,
                          "ids": outs}), flush=True)


if __name__ == "__main__":
    main()
