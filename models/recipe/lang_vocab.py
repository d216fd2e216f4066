#!/usr/bin/python3
"""lang_vocab.py MODEL_DIR OUT CODE=TEXT_FILE... [--min-count N] [--max-pieces K]

A target-language vocabulary map (engine/formats/langvocab_fmt.h defines the
format; mtserve serve --lang-vocab, mtserve translate --lang-vocab) for an
M2M-100 / NLLB-200 model directory, from text per language: each TEXT_FILE
(UTF-8, one sentence a line) is cut into pieces by the model's own
sentencepiece.bpe.model (python3-sentencepiece, as the published tokenizers
call it), and CODE's line lists the pieces seen at least N times (1), the K
most frequent when K is given (ties: the piece's first appearance), and the
specials every step may need (</s>, <unk>).  Pieces the model cannot give
an id of are left out: an unknown character's run (SentencePiece's unk) and,
for M2M-100, a piece vocab.json lacks.

The text should be what the model will be asked to produce: the more text, the
fewer of the model's words left out (a missing piece is never generated;
docs/M2M100.md "Target-language vocabulary map" on choosing the size).

Only the standard library and python3-sentencepiece."""
import collections
import json
import os
import sys

import sentencepiece as spm

MAGIC = "mtserve-lang-vocab 1"
SPECIALS = ["</s>", "<unk>"]


def pieces_of(model_dir):
    """(sentencepiece processor, the set of pieces with an id, or None: every piece the spm knows)."""
    sp = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "sentencepiece.bpe.model"))
    vj = os.path.join(model_dir, "vocab.json")
    known = None
    if os.path.exists(vj):                      # M2M-100: ids from vocab.json
        with open(vj, encoding="utf-8") as f:
            known = set(json.load(f))
    return sp, known


def count(sp, known, path):
    c, first = collections.Counter(), {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            for p in sp.encode(line, out_type=str):
                if sp.PieceToId(p) == sp.unk_id() or (known is not None and p not in known):
                    continue
                if any(ch in p for ch in " \t\r\n"):
                    continue
                c[p] += 1
                first.setdefault(p, len(first))
    return c, first


def main(argv):
    args, min_count, max_pieces = [], 1, 0
    i = 0
    while i < len(argv):
        if argv[i] == "--min-count":
            min_count, i = int(argv[i + 1]), i + 2
        elif argv[i] == "--max-pieces":
            max_pieces, i = int(argv[i + 1]), i + 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) < 3 or any("=" not in a for a in args[2:]):
        sys.exit(__doc__)
    model_dir, out = args[0], args[1]
    sp, known = pieces_of(model_dir)
    seen = set()
    lines = [MAGIC, "# built by models/recipe/lang_vocab.py: min-count %d, max-pieces %d" % (min_count, max_pieces)]
    for a in args[2:]:
        code, path = a.split("=", 1)
        if code in seen:
            sys.exit("lang_vocab.py: language %s given twice" % code)
        seen.add(code)
        c, first = count(sp, known, path)
        keep = [p for p in c if c[p] >= min_count]
        keep.sort(key=lambda p: (-c[p], first[p]))
        if max_pieces:
            keep = keep[:max_pieces]
        keep += [s for s in SPECIALS if s not in keep]
        lines.append(code + "\t" + " ".join(keep))
        print("lang_vocab.py: %s: %d pieces from %s (%d distinct seen)" % (code, len(keep), path, len(c)),
              file=sys.stderr)
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
