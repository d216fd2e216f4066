#!/usr/bin/python3
"""BLEU and chrF of an exported model on the held-out test split, greedy and beam 4,
decoded by the PyTorch reference (models/recipe/model.py).

BLEU: NLTK's corpus_bleu (4-gram, uniform weights, no smoothing) on text
tokenized by the regex \\w+|[^\\w\\s] (words and single punctuation marks),
case-sensitive, one reference per sentence.
chrF: character 6-grams, beta = 2, whitespace removed, averaged over n = 1..6
(the definition sacreBLEU uses), computed here.

--decoder c decodes with build/mtserve translate instead of the PyTorch
reference: tests/test_engine.c proves the two produce the same ids (greedy
and beam 4, every fixture case), and C's beam search is much faster than the
reference's sentence-at-a-time Python loop.

--direction fr-en reads test.fr as the source and test.en as the references;
the translations go to <hyp-dir>/test.beam<N>.<target language> (en-fr's keep
their names: work/eval/test.beam1.fr ...).
"""
import subprocess
import argparse, json, os, re, sys, time
import torch
from tqdm import tqdm
sys.path.insert(0, os.path.dirname(__file__))
from load import load_dir
from marian_tok import MarianTok
from scores import TOK, bleu, chrf  # noqa: F401 (pick.py, repeats.py, int8_quality.py import them from here)


def read_split(corpus, split, direction, limit=0):
    """The source and reference lines of a corpus split (train/dev/test) for a
    direction, the first `limit` only when limit > 0."""
    sl, tl = direction.split("-")
    src = open(f"{corpus}/{split}.{sl}").read().splitlines()
    ref = open(f"{corpus}/{split}.{tl}").read().splitlines()
    return (src[:limit], ref[:limit]) if limit else (src, ref)


@torch.no_grad()
def translate(m, tok, lines, beam, max_len, batch=32):
    out = [None] * len(lines)
    order = sorted(range(len(lines)), key=lambda i: len(lines[i]))
    bar = tqdm(total=len(lines), desc=f"beam {beam}", unit="sent", mininterval=10)
    for s in range(0, len(order), batch if beam == 1 else 1):
        idx = order[s:s + (batch if beam == 1 else 1)]
        srcs = [tok.encode(lines[i]) for i in idx]
        if beam == 1:
            L = max(map(len, srcs))
            st = torch.full((len(srcs), L), tok.pad)
            for r, x in enumerate(srcs):
                st[r, :len(x)] = torch.tensor(x)
            res = m.greedy(st, (st != tok.pad).long(), max_len)
        else:
            res = [m.beam(srcs[0], beam, max_len)[0][1]]
        for i, ids in zip(idx, res):
            out[i] = tok.decode(ids)
        bar.update(len(idx))
    bar.close()
    return out


def c_translate(mtserve, model, lines, beam, max_length, threads=2, json_out=False):
    """build/mtserve translate on lines (one per line): the texts, or with
    json_out the parsed --json objects (source_ids, ids, pieces, text, score)."""
    cmd = [mtserve, "translate", "--model", model, "--beam", str(beam), "--max-length", str(max_length),
           "--threads", str(threads)] + (["--json"] if json_out else [])
    run = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    out = run.stdout.split("\n")[:len(lines)]
    assert len(out) == len(lines), (len(out), len(lines))
    return [json.loads(l) for l in out] if json_out else out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True); ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True); ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--hyp-dir", default="work/eval", help="where the translations are written")
    ap.add_argument("--beams", default="1,4")
    ap.add_argument("--decoder", default="torch", choices=["torch", "c"])
    ap.add_argument("--mtserve", default="../build/mtserve")
    ap.add_argument("--direction", default="en-fr", choices=["en-fr", "fr-en"])
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    sl, tl = a.direction.split("-")
    if a.decoder == "torch":
        m, _ = load_dir(a.model); tok = MarianTok(a.model)
    src, ref = read_split(a.corpus, "test", a.direction, a.limit)
    res = {"direction": a.direction, "test_sentences": len(src),
           "bleu_tokenization": "regex \\w+|[^\\w\\s], case-sensitive, nltk corpus_bleu",
           "chrf": "char 6-grams, beta 2, whitespace removed"}
    if os.path.exists(a.out):          # keep results of other beams / decoders (and the length guard's)
        old = json.load(open(a.out))
        if old.get("test_sentences") == len(src) and old.get("direction", "en-fr") == a.direction:
            res.update({k: v for k, v in old.items() if k not in res})
    for beam in map(int, a.beams.split(",")):
        t0 = time.time()
        if a.decoder == "c":
            hyp = c_translate(a.mtserve, a.model, src, beam, a.max_length, a.threads)
        else:
            hyp = translate(m, tok, src, beam, a.max_length)
        res[f"beam{beam}"] = {"bleu": round(bleu(hyp, ref), 2), "chrf": round(chrf(hyp, ref), 2),
                              "seconds": round(time.time() - t0, 1), "decoder": a.decoder}
        os.makedirs(a.hyp_dir, exist_ok=True)
        with open(f"{a.hyp_dir}/test.beam{beam}.{tl}", "w") as f:
            f.write("\n".join(hyp) + "\n")
        print(beam, res[f"beam{beam}"], flush=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=2); f.write("\n")


if __name__ == "__main__":
    main()
