#!/usr/bin/python3
"""calm: pick the init gain of the full-depth benchmark models (make
bench-models) by measurement.

    /usr/bin/python3 bench/calm.py [--models en-mg,tc-big-fr-en] [--gains 5,2,1.5,1,0.5]
                                   [--ln signed|default] [--n 6] [--max-length 41] [--threads 2]

For each model and gain G, build/tests/gen_opus writes the published
configuration at FULL depth (6+6) with Linear weights of gain G / sqrt(in) and
(--ln signed, as make bench-models does) LayerNorm weights in [-1, 1)
(safetensors-f32 only, under $B/bench-models/calm/, deleted after use).  The PyTorch reference
(models/recipe/model.py) then decodes the first --n lines of the shape's
benchmark input greedily twice: in float32 and in float64.  Printed per gain:

  f32 = f64       output ids of the float32 copy equal to the float64 reference's
                  (the criterion: at a gain where they differ, float32 rounding
                  alone flips tokens, and no float32 engine can be expected to
                  reproduce another's outputs)
  gap / err       the smallest top-1/top-2 logit gap along the float64 outputs
                  (teacher-forced), over the largest float32-vs-float64 logit
                  error of those steps (both relative to max(1, max |logit|) of
                  the step): how far the closest decision is from a flip
  length          mean output length (ids, </s> included), how many ended with
                  </s> before max_length
  distinct        mean number of distinct ids per output (2 = one token repeated,
                  then the </s> forced at max_length)

The float64 model is a true float64 computation: model.py's attention runs its
softmax in float32 (`w.float()`), so this script swaps in an Attention.forward
that keeps the input dtype (the same code otherwise)."""
import argparse, json, os, shutil, subprocess, sys, time
import torch
import torch.nn.functional as F

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "models", "recipe"))
import model as M
from load import load_dir
from marian_tok import MarianTok

FIX = "tests/fixtures/opus-mt"
B = os.environ.get("B", "build")
GEN = os.path.join(B, "tests", "gen_opus")
INPUT = {"en-mg": "tests/fixtures/tokenizer/inputs/test.en.txt",
         "tc-big-fr-en": "tests/fixtures/tokenizer/inputs/test.fr.txt"}


def attention_forward(self, x, k, v, mask):
    """model.Attention.forward with the softmax in the input's dtype (float64 stays float64)."""
    q = self.split(self.q_proj(x))
    w = torch.matmul(q, k.transpose(-1, -2)) * self.scaling
    if mask is not None:
        w = w + mask
    w = F.softmax(w, dim=-1)
    o = torch.matmul(w, v).transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)
    return self.out_proj(o), w


M.Attention.forward = attention_forward


@torch.no_grad()
def greedy(m, srcs, max_length):
    """Batched greedy in the model's dtype (model.greedy casts the logits to float32)."""
    pad, eos = m.pad, m.eos
    B, S = len(srcs), max(map(len, srcs))
    st = torch.full((B, S), pad)
    for r, x in enumerate(srcs):
        st[r, :len(x)] = torch.tensor(x)
    sm = (st != pad).long()
    cache = m.new_cache(m.encode(st, sm))
    tok = torch.full((B,), pad, dtype=torch.long)
    out, done = [[] for _ in range(B)], [False] * B
    for t in range(max_length - 1):
        lg = m.step(tok, t, cache, sm)
        lg[:, pad] = -float("inf")
        if t + 1 == max_length - 1:
            lg[:] = -float("inf")
            lg[:, eos] = 0
        tok = lg.argmax(-1)
        for b in range(B):
            if not done[b]:
                out[b].append(int(tok[b]))
                done[b] = int(tok[b]) == eos
        if all(done):
            break
        tok = torch.where(torch.tensor(done), torch.full_like(tok, pad), tok)
    return out


@torch.no_grad()
def margins(m32, m64, src, ids):
    """Teacher-forced along ids: (smallest top-1/top-2 gap of the float64 logits,
    largest |f32 - f64| logit error), both relative to max(1, max |logit|) per step."""
    pad = m64.pad
    st = torch.tensor([src])
    sm = torch.ones_like(st)
    tin = torch.tensor([[pad] + ids[:-1]])
    a = m64.decode_full(tin, m64.encode(st, sm), sm)[0]
    b = m32.decode_full(tin, m32.encode(st, sm), sm)[0].double()
    a[:, pad] = -float("inf")
    b[:, pad] = -float("inf")
    fin = torch.isfinite(a)
    scale = torch.clamp(a.masked_fill(~fin, 0).abs().amax(-1), min=1.0)
    top = a.topk(2, dim=-1).values
    gap = ((top[:, 0] - top[:, 1]) / scale).min().item()
    err = ((a - b).masked_fill(~fin, 0).abs().amax(-1) / scale).max().item()
    return gap, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="en-mg,tc-big-fr-en")
    ap.add_argument("--gains", default="5,2,1.5,1,0.5")
    ap.add_argument("--ln", choices=("signed", "default"), default="signed")
    ap.add_argument("--n", type=int, default=6)
    ap.add_argument("--max-length", type=int, default=41)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    os.chdir(ROOT)
    torch.set_num_threads(a.threads)
    rows = []
    for name in a.models.split(","):
        for g in a.gains.split(","):
            out = f"{B}/bench-models/calm/{name}-g{g}"
            shutil.rmtree(out, ignore_errors=True)
            subprocess.run([GEN, "--full-depth", "--gain", g] + (["--signed-ln"] if a.ln == "signed" else []) +
                           ["--forms", "safetensors-f32", f"{FIX}/{name}", out], check=True)
            d = f"{out}/safetensors-f32"
            tok = MarianTok(d)
            srcs = [tok.encode(x) for x in open(INPUT[name]).read().splitlines()[:a.n]]
            m32, _ = load_dir(d)
            m64 = load_dir(d)[0].double()
            t0 = time.time()
            o32 = greedy(m32, srcs, a.max_length)
            o64 = greedy(m64, srcs, a.max_length)
            gm = [margins(m32, m64, s, o) for s, o in zip(srcs, o64)]
            eos = m64.eos
            r = {"model": name, "gain": float(g), "ln": a.ln, "n": len(srcs),
                 "equal": sum(x == y for x, y in zip(o32, o64)),
                 "min_gap": min(x for x, _ in gm), "max_err": max(y for _, y in gm),
                 "mean_len": sum(map(len, o64)) / len(o64),
                 "ended": sum(o[-1] == eos and len(o) < a.max_length - 1 for o in o64),
                 "distinct": sum(len(set(o)) for o in o64) / len(o64),
                 "first_ids": o64[0][:12], "seconds": round(time.time() - t0, 1)}
            r["gap_over_err"] = r["min_gap"] / r["max_err"] if r["max_err"] else float("inf")
            print(json.dumps(r), flush=True)
            rows.append(r)
            del m32, m64
            shutil.rmtree(out, ignore_errors=True)
    try:
        os.rmdir(f"{B}/bench-models/calm")
    except OSError:
        pass
    print(f"\n| model | gain | LayerNorm weights | f32 = f64 | gap / err | min gap | max err | mean length | ended by </s> "
          f"| distinct ids |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['gain']:g} | {r['ln']} | {r['equal']}/{r['n']} | "
              f"{r['gap_over_err']:.0f} | {r['min_gap']:.1e} | {r['max_err']:.1e} | {r['mean_len']:.1f} | "
              f"{r['ended']}/{r['n']} | {r['distinct']:.1f} |")


if __name__ == "__main__":
    main()
