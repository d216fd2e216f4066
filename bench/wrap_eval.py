#!/usr/bin/python3
"""bench/wrap_eval.py --url URL [--lines N] [--width 60] [--direction en-fr]: hard-wrapped
text through DeepL's split_sentences (issue 48).

The held-out test split (tests/fixtures/tokenizer/inputs/test.{en,fr}.txt, one
sentence or paragraph a line) is re-wrapped at --width columns (textwrap: breaks
at spaces only, no word cut), as mail, man pages and copied PDF text are, and
translated by a running server's POST /v2/translate four ways:

  unwrapped          the lines as they are (split_sentences 1, the default)
  wrapped, 1         the wrapped lines, split_sentences 1: every line break ends a
                     sentence, so a wrapped sentence is translated in pieces
  wrapped, nonewlines   the wrapped lines, split_sentences nonewlines: a line break
                     inside a paragraph read as a space
  wrapped, 0         the wrapped lines, split_sentences 0: each text decoded whole

BLEU and chrF as the project reports them (models/recipe/scores.py: NLTK's
corpus_bleu on \\w+|[^\\w\\s] tokens; python3-nltk), the hypotheses' line breaks
read as spaces, against the reference translations of the unwrapped lines.
Prints a Markdown table.  The server: `build/mtserve serve --model en-fr=models/en-fr`
(no key), or pass --key.
"""
import argparse
import json
import os
import sys
import textwrap
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "recipe"))
from scores import bleu, chrf  # noqa: E402

SPLIT = "tests/fixtures/tokenizer/inputs/test.{}.txt"


def translate(url, key, texts, target, source, split, batch=16):
    out = []
    for i in range(0, len(texts), batch):
        body = json.dumps({"text": texts[i:i + batch], "target_lang": target, "source_lang": source,
                           "split_sentences": split}).encode()
        req = urllib.request.Request(url + "/v2/translate", data=body, method="POST",
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": "DeepL-Auth-Key " + key} if key else {})})
        with urllib.request.urlopen(req, timeout=600) as r:
            out += [t["text"] for t in json.load(r)["translations"]]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--key", default="")
    ap.add_argument("--lines", type=int, default=500, help="the first N lines of the split (0: all)")
    ap.add_argument("--width", type=int, default=60)
    ap.add_argument("--direction", default="en-fr")
    a = ap.parse_args()
    src_lang, tgt_lang = a.direction.split("-")
    src = open(SPLIT.format(src_lang), encoding="utf-8").read().splitlines()
    ref = open(SPLIT.format(tgt_lang), encoding="utf-8").read().splitlines()
    if a.lines:
        src, ref = src[:a.lines], ref[:a.lines]
    wrapped = [textwrap.fill(s, width=a.width, break_long_words=False, break_on_hyphens=False) for s in src]
    n_wrapped = sum("\n" in w for w in wrapped)
    rows = [("unwrapped", src, "1"), ("wrapped, 1", wrapped, "1"), ("wrapped, nonewlines", wrapped, "nonewlines"),
            ("wrapped, 0", wrapped, "0")]
    print(f"{len(src)} lines of the {a.direction} test split, {n_wrapped} of them wrapped at {a.width} columns "
          f"({sum(w.count(chr(10)) for w in wrapped)} line breaks added)\n")
    print("| input | split_sentences | BLEU | chrF | s |")
    print("|---|---|---|---|---|")
    for name, texts, split in rows:
        t0 = time.time()
        hyps = translate(a.url, a.key, texts, tgt_lang.upper(), src_lang.upper(), split)
        dt = time.time() - t0
        flat = [h.replace("\n", " ") for h in hyps]
        print(f"| {name.split(',')[0]} | {split} | {bleu(flat, ref):.2f} | {chrf(flat, ref):.2f} | {dt:.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
