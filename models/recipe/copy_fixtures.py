#!/usr/bin/python3
"""The copy guard's reference (issue 53): Title Case labels that the model gives
back untranslated, decoded by the PyTorch reference greedily without and with
repeats.py's greedy_no_copy (the source's ids banned from being copied), for
tests/test_decode.c test_copy_reference: the C engine's guarded ids must be
these.  No length cap (max_length alone), as the engine is asked there.

    /usr/bin/python3 models/recipe/copy_fixtures.py --model models/en-fr \\
        --out tests/fixtures/en-fr/copy_guard.jsonl
"""
import argparse, json, os, sys
import torch
sys.path.insert(0, os.path.dirname(__file__))
from load import load_dir
from marian_tok import MarianTok
from repeats import greedy_no_copy

# UI labels of the kind the shipped model copies (models/recipe/corpus-notes.md:
# 225 of the 1500 UI strings came back as their source)
LABELS = ["Alarm", "April", "Restore From Trash", "Calendar", "Settings", "Bookmarks", "Network Manager",
          "Open Recent", "Keyboard Shortcuts", "Volume Control", "Print Preview", "Zoom In", "Terminal",
          "Screenshot", "Disk Usage Analyzer", "File Manager", "Text Editor", "System Monitor",
          # rarer words the v3 weights gave back (test-ui), so that a better model still copies a few
          "Gradians", "Exabytes", "Caodaism", "Factorials", "Conveyance", "Cosine", "Hexadecimal", "Megahertz"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True); ap.add_argument("--out", required=True)
    ap.add_argument("--max-length", type=int, default=64)
    a = ap.parse_args()
    torch.set_num_threads(2)
    m, _ = load_dir(a.model)
    tok = MarianTok(a.model)
    rows, copies = [], 0
    for text in LABELS:
        src = tok.encode(text)
        plain = greedy_no_copy(m, src, a.max_length, copy=[])
        copy = [i for i in plain if i != tok.eos] == src[:-1]
        guarded = greedy_no_copy(m, src, a.max_length) if copy else plain
        rows.append({"text": text, "src_ids": src, "max_length": a.max_length, "plain_ids": plain,
                     "copy": copy, "guarded_ids": guarded, "guarded_text": tok.decode(guarded)})
        copies += copy
        print(text, "->", tok.decode(plain), "| guarded:", tok.decode(guarded) if copy else "(not a copy)", flush=True)
    with open(a.out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"{copies} of {len(rows)} labels copied; {a.out}")


if __name__ == "__main__":
    main()
