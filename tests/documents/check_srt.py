#!/usr/bin/python3
"""check_srt.py: an independent reader of SubRip and WebVTT comparing a file
with its translation by mtserve (server/document/doc_subtitles.c).

    /usr/bin/python3 tests/documents/check_srt.py INPUT.(srt|vtt) OUTPUT.(srt|vtt)

Reads both (blocks between blank lines; a cue is an optional number or
identifier, a timing line, its text lines) and checks: the same cues, numbers,
identifiers and timing lines (cue settings included) in order; the VTT header
and NOTE/STYLE/REGION blocks exactly; each cue at most as many text lines as
the input's; the styling tags of each cue ({\\...}, <...>) the same, in order;
the line endings (CRLF or LF) the input's.  Prints "check_srt: N cues,
K problems" and exits 1 when K > 0.
"""
import re
import sys

TIMING = re.compile(r"^\s*(\d+:)?\d\d:\d\d[,.]\d{1,3}\s*-->\s*(\d+:)?\d\d:\d\d[,.]\d{1,3}(\s.*)?$")
TAG = re.compile(r"\{\\[^}]*\}|<[^<>]+>")


def blocks(text):
    text = text.lstrip("\ufeff")
    out, cur = [], []
    for line in re.split(r"\r\n|\n|\r", text):
        if line.strip():
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def read(text):
    """[(kind, head lines, text lines)]: kind "cue" or "other"."""
    res = []
    for i, b in enumerate(blocks(text)):
        if i == 0 and b[0].startswith("WEBVTT"):
            res.append(("other", b, []))
            continue
        if re.match(r"(NOTE|STYLE|REGION)(\s|$)", b[0]) and "-->" not in b[0]:
            res.append(("other", b, []))
            continue
        at = 0 if TIMING.match(b[0]) else 1
        if at >= len(b) or not TIMING.match(b[at]):
            raise ValueError(f"a block without a timing line: {b[:2]}")
        res.append(("cue", b[:at + 1], b[at + 1:]))
    return res


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    raw_a = open(argv[1], "rb").read().decode("utf-8")
    raw_b = open(argv[2], "rb").read().decode("utf-8")
    a, b = read(raw_a), read(raw_b)
    problems = []
    if len(a) != len(b):
        problems.append(f"{len(a)} blocks in, {len(b)} out")
    for k, (x, y) in enumerate(zip(a, b)):
        if x[0] != y[0] or x[1] != y[1]:
            problems.append(f"block {k + 1}: {x[1]} became {y[1]}")
            continue
        if x[0] == "other" and x[2] != y[2]:
            problems.append(f"block {k + 1}: changed")
        if len(y[2]) > max(len(x[2]), 1):
            problems.append(f"block {k + 1}: {len(x[2])} text lines became {len(y[2])}")
        if TAG.findall(" ".join(x[2])) != TAG.findall(" ".join(y[2])):
            problems.append(f"block {k + 1}: tags {TAG.findall(' '.join(x[2]))} became {TAG.findall(' '.join(y[2]))}")
    if ("\r\n" in raw_a) != ("\r\n" in raw_b) or (raw_a.count("\n") > raw_a.count("\r\n")) != \
            (raw_b.count("\n") > raw_b.count("\r\n")):
        problems.append("line endings changed")
    for p in problems:
        print("  " + p)
    print(f"check_srt: {sum(1 for x in a if x[0] == 'cue')} cues, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
