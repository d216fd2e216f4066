#!/usr/bin/python3
"""Reference fixtures for the C engine, written by the PyTorch reference from an
exported model directory (weights read back from model.safetensors).

Output (format documented in tests/fixtures/README.md):
  cases.jsonl     one JSON object per input: text, src_ids, greedy ids/text,
                  beam-4 hypotheses with scores, teacher-forced log-probs of
                  the greedy output and top-5 logits at every position
  logits.bin      full float32 logit rows for a few (case, position) pairs,
                  indexed by logits.json
  attention.json  encoder self, decoder self and cross attention weights
                  (teacher-forced on the greedy output) for a few inputs
"""
import argparse, json, os, sys
import torch
sys.path.insert(0, os.path.dirname(__file__))
from load import load_dir
from marian_tok import MarianTok

HARD = [
    "", " ", "Hello.", "!!!", "...", "?!", "12345", "3.14159 2026-11-22 10:30", "100 %", "v1.2.3",
    "the the the the the the the the", "file file file file", "ok ok ok",
    "Café, naïve, façade, résumé, über, Ångström.", "Ça va très bien, merci.", "ÉLÈVE ÊTRE",
    "Привет, мир", "日本語のテキスト", "中文字符", "한국어", "مرحبا بالعالم", "שלום", "Ελληνικά",
    "emoji 😀🎉 here", "fullwidth ＡＢＣ １２３", "ligature ﬁle ﬂow", "a\u00a0b\u2009c", "tab\tseparated\twords",
    "control\x07char", "ÆØÅ ÞÐ", "a" * 80, "supercalifragilisticexpialidocious", "x-y_z/a\\b", "<html>&amp;</html>",
    "https://www.debian.org/doc/", "user@example.com", "C++ and C# and F#", "(parentheses) [brackets] {braces}",
    "«quotes» “double” ‘single’", "—dash–dash-", "≥ ≤ ≠ ∞ √", "©®™", "   leading and trailing   ",
    "This package provides the Python 3 module.", "A library for parsing JSON.",
]
# fr-en: the same inputs (most are language-neutral), then French ones of the
# same kinds: the domain, elision and apostrophes, ligatures and accents.
HARD_FR = [
    "Ce paquet fournit le module Python 3.", "Une bibliothèque pour analyser du JSON.",
    "L'outil n'est qu'une interface « simple » à l'API.", "Œuvre, cœur, sœur, ex æquo.",
    "À l'été, où ça ? Déjà !", "Il s'agit d'un logiciel libre : vous pouvez le redistribuer.",
]


def rnd(t):
    return [[[float('%.7g' % x) for x in row] for row in head] for head in t.tolist()]


def pick_inputs(corpus, n, src="en"):
    with open(f"{corpus}/test.{src}") as f:
        lines = f.read().splitlines()
    lines.sort(key=len)
    step = max(1, len(lines) // n)
    return HARD + (HARD_FR if src == "fr" else []) + lines[::step][:n]


@torch.no_grad()
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True); ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True); ap.add_argument("--n", type=int, default=170)
    ap.add_argument("--max-length", type=int, default=0)
    ap.add_argument("--full-rows", type=int, default=6)
    ap.add_argument("--attention", type=int, default=4)
    # fr-en: the inputs come from test.fr (the model's own direction is in its directory)
    ap.add_argument("--direction", default="en-fr", choices=["en-fr", "fr-en"])
    a = ap.parse_args()
    torch.set_num_threads(2)
    m, cfg = load_dir(a.model)
    tok = MarianTok(a.model)
    max_len = a.max_length or min(cfg["max_length"], 128)
    os.makedirs(a.out, exist_ok=True)
    inputs = pick_inputs(a.corpus, a.n, a.direction.split("-")[0])
    full_index, full_rows = [], []
    attn = []
    with open(f"{a.out}/cases.jsonl", "w") as out:
        for ci, text in enumerate(inputs):
            src = tok.encode(text)
            st = torch.tensor([src]); sm = torch.ones_like(st)
            greedy = m.greedy(st, sm, max_len)[0]
            beams = m.beam(src, 4, max_len)
            tin = torch.tensor([[tok.pad] + greedy[:-1]])
            cap = {"encoder": [], "decoder": [], "cross": []}
            enc = m.encode(st, sm, capture=cap)
            logits = m.decode_full(tin, enc, sm, capture=cap)[0]          # [T,V]
            lp = m.logprobs(logits)
            tf_lp = [float(lp[t, greedy[t]]) for t in range(len(greedy))]
            top_v, top_i = logits.topk(5, dim=-1)
            case = {"i": ci, "text": text, "src_ids": src, "max_length": max_len,
                    "greedy_ids": greedy, "greedy_text": tok.decode(greedy),
                    "beam4": [{"ids": ids, "score": s, "text": tok.decode(ids)} for s, ids in beams],
                    "tf_logprobs": tf_lp,
                    "top5_ids": top_i.tolist(), "top5_logits": [[round(float(x), 6) for x in r] for r in top_v]}
            out.write(json.dumps(case, ensure_ascii=False) + "\n")
            if len(full_index) < a.full_rows and len(greedy) >= 2:
                for t in (0, len(greedy) - 1):
                    full_index.append({"case": ci, "pos": t, "row": len(full_rows)})
                    full_rows.append(logits[t].clone())
            if len(attn) < a.attention and 3 <= len(src) <= 16 and len(greedy) <= 40:
                attn.append({"case": ci, "src_ids": src, "tgt_in": tin[0].tolist(),
                             "encoder": [rnd(w[0]) for w in cap["encoder"]],
                             "decoder": [rnd(w[0]) for w in cap["decoder"]],
                             "cross": [rnd(w[0]) for w in cap["cross"]]})
            if ci % 20 == 0:
                print(f"case {ci}/{len(inputs)}", flush=True)
    torch.stack(full_rows).numpy().astype("<f4").tofile(f"{a.out}/logits.bin")
    with open(f"{a.out}/logits.json", "w") as f:
        json.dump({"vocab_size": cfg["vocab_size"], "rows": full_index}, f, indent=1)
    with open(f"{a.out}/attention.json", "w") as f:
        json.dump(attn, f)
    print(f"{len(inputs)} cases written to {a.out}")


if __name__ == "__main__":
    main()
