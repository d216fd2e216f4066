#!/usr/bin/python3
"""Reference fixtures for POST /score (teacher-forced scoring, CTranslate2's
score_batch): (source, target) text pairs scored by the PyTorch reference.

Each pair is tokenized by the Python reference tokenizer (marian_tok.py:
python3-sentencepiece and vocab.json; the target with target.spm, </s>
appended), then one teacher-forced pass with the causal mask: decoder input =
pad (the start token) + target[:-1], log p(target[t] | source, target[<t])
with pad excluded from the normalizer (model.logprobs), </s> included.

Output: <out>/score.jsonl, one JSON object per pair:
  source, target        the texts
  src_ids, tgt_ids      Marian ids (</s> appended to both)
  tokens                vocab.json pieces of tgt_ids
  log_probs             per target token (float32 as computed, printed exactly)
  score                 their sum (float64 over the float32 values)
Pairs: the test split's parallel lines (every k-th, source and its reference
translation), the same sources with a wrong target (a neighbour's reference),
and hand-written hard targets (accents, an unknown character, one token).
"""
import argparse, json, os, sys
import torch
sys.path.insert(0, os.path.dirname(__file__))
from load import load_dir
from marian_tok import MarianTok

HARD = [
    ("Hello.", "Bonjour."),
    ("Hello.", "Au revoir."),
    ("This package provides the Python 3 module.", "Ce paquet fournit le module Python 3."),
    ("A library for parsing JSON.", "Une bibliothèque pour analyser du JSON."),
    ("Café, naïve, façade.", "Café, naïve, façade."),
    ("emoji 😀 here", "emoji 😀 ici"),
    ("Yes", "Oui"),
    ("The the the", "Le le le le le le"),
]


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


@torch.no_grad()
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--inputs", required=True, help="directory with test.<src>.txt and test.<tgt>.txt")
    ap.add_argument("--direction", default="en-fr", choices=["en-fr", "fr-en"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--max-len", type=int, default=60, help="skip pairs with more target tokens")
    a = ap.parse_args()
    torch.set_num_threads(2)
    m, cfg = load_dir(a.model)
    tok = MarianTok(a.model)
    s_lang, t_lang = a.direction.split("-")
    src_lines = read_lines(f"{a.inputs}/test.{s_lang}.txt")
    tgt_lines = read_lines(f"{a.inputs}/test.{t_lang}.txt")
    idx = [i for i in range(len(src_lines)) if src_lines[i].strip() and tgt_lines[i].strip()]
    step = max(1, len(idx) // a.n)
    picked = idx[::step][:a.n]
    pairs = [(src_lines[i], tgt_lines[i]) for i in picked]
    pairs += [(src_lines[picked[k]], tgt_lines[picked[(k + 1) % len(picked)]]) for k in range(0, len(picked), 4)]
    pairs += HARD if s_lang == "en" else [(t, s) for s, t in HARD]
    n = 0
    with open(f"{a.out}/score.jsonl", "w", encoding="utf-8") as out:
        for source, target in pairs:
            src, tgt = tok.encode(source), tok.encode(target, target=True)
            if len(tgt) > a.max_len or len(src) > a.max_len:
                continue
            st = torch.tensor([src]); sm = torch.ones_like(st)
            enc = m.encode(st, sm)
            logits = m.decode_full(torch.tensor([[tok.pad] + tgt[:-1]]), enc, sm)[0]     # [T,V]
            lp = m.logprobs(logits)
            lps = [float(lp[t, tgt[t]]) for t in range(len(tgt))]
            out.write(json.dumps({"source": source, "target": target, "src_ids": src, "tgt_ids": tgt,
                                  "tokens": [tok.inv.get(i, "<unk>") for i in tgt],
                                  "log_probs": lps, "score": sum(lps)}, ensure_ascii=False) + "\n")
            n += 1
    print(f"{n} pairs written to {a.out}/score.jsonl")


if __name__ == "__main__":
    main()
