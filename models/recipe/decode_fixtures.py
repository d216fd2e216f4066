#!/usr/bin/python3
"""Fixtures for the engine's decoding features (issue 14), written by the
PyTorch reference (decode_rules.py over model.py) on inputs already in
<fixtures>/cases.jsonl (so no corpus is needed).

Output (format in tests/fixtures/README.md):
  decode.jsonl    one JSON object per (case, configuration): the parameters
                  (prefix, repetition_penalty, no_repeat_ngram_size,
                  min_length, beam, length_penalty, alignment layer/heads),
                  the reference's ids, token log-probs, score, margin and
                  alignments (with their margins)
  sampling.json   first-step sampling distributions (temperature, top_k,
                  top_p) of a few sources: every id of probability >= 1e-3
                  and the mass of the rest
"""
import argparse, json, math, os, sys
import torch
sys.path.insert(0, os.path.dirname(__file__))
from load import load_dir
import decode_rules as R

# (name, beam, params): prefix "alt<P>" = the second-best first id, then the
# greedy output's ids 1..P-1 (a path greedy would not take)
CONFIGS = [
    ("prefix1", 1, {"prefix": "alt1"}),
    ("prefix3", 1, {"prefix": "alt3"}),
    ("rep1.3", 1, {"rep_pen": 1.3}),
    ("rep0.8", 1, {"rep_pen": 0.8}),
    ("ngram2", 1, {"ngram": 2}),
    ("ngram3_rep1.2", 1, {"ngram": 3, "rep_pen": 1.2}),
    ("minlen", 1, {"min_length": "greedy+4"}),
    ("beam_prefix2", 4, {"prefix": "alt2"}),
    ("beam_rules", 4, {"rep_pen": 1.25, "ngram": 2, "length_penalty": 0.6}),
    ("beam_minlen_prefix", 3, {"prefix": "alt1", "min_length": "greedy+3", "length_penalty": 1.2}),
]
SAMPLING = [
    {"temperature": 1.0, "top_k": 0, "top_p": 1.0},
    {"temperature": 0.7, "top_k": 0, "top_p": 1.0},
    {"temperature": 1.0, "top_k": 8, "top_p": 1.0},
    {"temperature": 1.5, "top_k": 0, "top_p": 0.9},
    {"temperature": 1.2, "top_k": 20, "top_p": 0.75},
]


def g7(x):
    return float('%.7g' % x)


def g3(x):
    return float('%.3g' % x)


def resolve(cfg, greedy_ids, alt):
    p = dict(cfg)
    if isinstance(p.get("prefix"), str):
        n = int(p["prefix"][3:])
        p["prefix"] = ([alt] + greedy_ids[1:n])[:n]
    if isinstance(p.get("min_length"), str):
        p["min_length"] = len(greedy_ids) + 1 + int(p["min_length"].split("+")[1])
    return p


@torch.no_grad()
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True); ap.add_argument("--fixtures", required=True)
    ap.add_argument("--n", type=int, default=10); ap.add_argument("--max-length", type=int, default=0)
    ap.add_argument("--sampling-cases", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(2)
    m, cfg = load_dir(a.model)
    with open(f"{a.fixtures}/cases.jsonl") as f:
        cases = [json.loads(l) for l in f]
    # sources with at least 3 tokens and a greedy output of at least 4, spread over the file
    usable = [c for c in cases if len(c["src_ids"]) >= 3 and len(c["greedy_ids"]) >= 4]
    step = max(1, len(usable) // a.n)
    picked = usable[::step][:a.n]
    n_rows = 0
    with open(f"{a.fixtures}/decode.jsonl", "w") as out:
        for c in picked:
            src, max_len = c["src_ids"], a.max_length or min(c["max_length"], 64)
            g_ids, _, _, _ = R.greedy(m, src, max_len)
            st = torch.tensor([src]); sm = torch.ones_like(st)
            lg0 = m.step(torch.tensor([m.pad]), 0, m.new_cache(m.encode(st, sm)), sm)[0]
            top = [int(i) for i in torch.topk(m.logprobs(lg0), 4)[1]]
            alt = [i for i in top if i not in (top[0], m.eos, m.pad)][0]     # a first id greedy does not take
            for name, beam, cfg_p in CONFIGS:
                p = resolve(cfg_p, g_ids, alt)
                if p.get("prefix"):
                    p["prefix"] = [i for i in p["prefix"] if i not in (m.eos, m.pad)]
                if p.get("min_length", 0) > max_len:
                    p["min_length"] = max_len
                rules = {k: p[k] for k in ("rep_pen", "ngram", "min_length") if k in p}
                prefix = p.get("prefix", [])
                row = {"i": c["i"], "config": name, "src_ids": src, "max_length": max_len, "beam": beam,
                       "prefix": prefix, "repetition_penalty": p.get("rep_pen", 1.0),
                       "no_repeat_ngram_size": p.get("ngram", 0), "min_length": p.get("min_length", 0),
                       "length_penalty": p.get("length_penalty", 1.0)}
                if beam == 1:
                    ids, lps, score, margin = R.greedy(m, src, max_len, prefix, **rules)
                    hyps = [(score, ids, lps)]
                    row["margin"] = g3(margin) if margin != math.inf else 1e9
                else:
                    hyps = R.beam(m, src, beam, max_len, p.get("length_penalty", 1.0), prefix, **rules)
                row["hyps"] = []
                for score, ids, lps in hyps:
                    h = {"ids": ids, "score": score, "token_logp": [g7(x) for x in lps]}
                    for key, layer, heads in (("align_last", -1, 0), ("align_l0h1", 0, 1)):
                        al, mg = R.alignments(m, src, ids, layer, heads)
                        h[key], h[key + "_margin"] = al, [g3(x) for x in mg]
                    row["hyps"].append(h)
                out.write(json.dumps(row) + "\n")
                n_rows += 1
    # first-step sampling distributions
    dists = []
    for c in picked[:a.sampling_cases]:
        src = c["src_ids"]
        st = torch.tensor([src]); sm = torch.ones_like(st)
        lg0 = m.step(torch.tensor([m.pad]), 0, m.new_cache(m.encode(st, sm)), sm)[0].float()
        for s in SAMPLING:
            p = R.warp(lg0, m.pad, **s)
            big = [(int(i), float(p[i])) for i in torch.nonzero(p >= 1e-3).flatten()]
            rest = float(1.0 - sum(x for _, x in big))
            support = int((p > 0).sum())
            dists.append({"i": c["i"], "src_ids": src, **s, "ids": [i for i, _ in big],
                          "probs": [g7(x) for _, x in big], "rest": max(rest, 0.0), "support": support})
    with open(f"{a.fixtures}/sampling.json", "w") as f:
        json.dump({"vocab_size": cfg["vocab_size"], "dists": dists}, f)
    print(f"{n_rows} decode rows, {len(dists)} sampling distributions written to {a.fixtures}")


if __name__ == "__main__":
    main()
