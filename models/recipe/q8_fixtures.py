#!/usr/bin/python3
"""INT8 fixtures: the PyTorch reference with the C engine's --weights int8
(model.quantize_int8: weights per output row, inputs per row as each product
runs) on the inputs of an existing fixture directory (cases.jsonl).

    q8_fixtures.py --model DIR --fixtures tests/fixtures/en-fr [--cases 40] [--full-rows 6]

Writes, beside cases.jsonl (format in tests/fixtures/README.md):
  int8.jsonl        per case: i, greedy_ids under int8, margin (the smallest gap
                    between the two best logits over the greedy steps: a case
                    whose margin is within the C-vs-reference tolerance may
                    flip a token without a fault), tf_logprobs of those ids
  int8_logits.bin   full float32 logit rows (teacher-forced on the int8 greedy
                    output) for a few (case, position) pairs,
  int8_logits.json  their index
"""
import argparse, json, os, sys
import torch
sys.path.insert(0, os.path.dirname(__file__))
from load import load_dir
from model import quantize_int8


@torch.no_grad()
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--cases", type=int, default=40, help="every k-th case of cases.jsonl, this many")
    ap.add_argument("--full-rows", type=int, default=6)
    a = ap.parse_args()
    torch.set_num_threads(2)
    m, cfg = load_dir(a.model)
    n_q = quantize_int8(m)
    with open(f"{a.fixtures}/cases.jsonl") as f:
        cases = [json.loads(line) for line in f]
    step = max(1, len(cases) // a.cases)
    chosen = cases[::step][:a.cases]
    rows, index = [], []
    with open(f"{a.fixtures}/int8.jsonl", "w") as out:
        for c in chosen:
            src = c["src_ids"]
            st = torch.tensor([src]); sm = torch.ones_like(st)
            greedy = m.greedy(st, sm, c["max_length"])[0]
            tin = torch.tensor([[m.pad] + greedy[:-1]])
            logits = m.decode_full(tin, m.encode(st, sm), sm)[0]              # [T,V]
            lp = m.logprobs(logits)
            masked = logits.clone()
            masked[:, m.pad] = float("-inf")                                  # pad is never generated
            top2 = masked.topk(2, dim=-1).values
            margin = float((top2[:, 0] - top2[:, 1]).min())
            out.write(json.dumps({"i": c["i"], "greedy_ids": greedy, "margin": margin,
                                  "tf_logprobs": [float(lp[t, greedy[t]]) for t in range(len(greedy))]}) + "\n")
            if len(index) < a.full_rows and len(greedy) >= 2:
                for t in (0, len(greedy) - 1):
                    index.append({"case": c["i"], "pos": t, "row": len(rows)})
                    rows.append(logits[t].clone())
    torch.stack(rows).numpy().astype("<f4").tofile(f"{a.fixtures}/int8_logits.bin")
    with open(f"{a.fixtures}/int8_logits.json", "w") as f:
        json.dump({"vocab_size": logits.shape[-1], "rows": index}, f, indent=1)
    print(f"int8 fixtures: {len(chosen)} cases, {len(rows)} full rows, {n_q} matrices quantized -> {a.fixtures}")


if __name__ == "__main__":
    main()
