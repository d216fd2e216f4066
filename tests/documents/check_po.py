#!/usr/bin/python3
"""check_po.py: an independent reader (polib) comparing a .po/.pot file with
its translation by mtserve (server/document/doc_po.c).

    /usr/bin/python3 tests/documents/check_po.py INPUT.po OUTPUT.po

Checks: the same entries in the same order (msgctxt, msgid, msgid_plural,
references, comments, obsolete ones); entries translated in the input are
unchanged; every entry the output fills (msgstr was empty) has the fuzzy flag,
msgstr[0..nplurals) when plural, and every placeholder of its msgid the same
number of times (printf, python-format, brace, tags, entities), printf's
unnumbered conversions and the tags in the same order; an entry left empty is
not newly marked fuzzy.  Prints "check_po: N entries, M filled,
K problems" and exits 1 when K > 0.
"""
import re
import sys
from collections import Counter

import polib

PLACEHOLDER = re.compile(
    r"%%|%\([^)]{0,62}\)[-+#0'I]*[\d*$]*(?:\.[\d*$]*)?[hlLqjzZt]*[diouxXeEfFgGaAcsSpnmr@]"
    r"|%(?:\d+\$)?[-+#0'I]*[\d*$]*(?:\.[\d*$]*)?[hlLqjzZt]*[diouxXeEfFgGaAcsSpnmr@]"
    r"|%\d+(?![A-Za-z])|\{\{|\}\}|\{[^{}\s]{0,62}\}|</?[A-Za-z][^<>]{0,253}>|&#?[A-Za-z0-9]{1,31};")


def ordered(s):
    """The placeholders whose order matters: printf's unnumbered conversions and the tags."""
    return [p for p in PLACEHOLDER.findall(s)
            if p.startswith("<") or (p.startswith("%") and p != "%%" and not p.startswith("%(")
                                     and "$" not in p and not p[-1].isdigit())]


def nplurals(po):
    m = re.search(r"nplurals\s*=\s*(\d+)", po.metadata.get("Plural-Forms", ""))
    n = int(m.group(1)) if m else 2
    return n if 1 <= n <= 32 else 2


def empty(e):
    return not e.msgstr and not any(e.msgstr_plural.values())


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    a, b = polib.pofile(argv[1], wrapwidth=0), polib.pofile(argv[2], wrapwidth=0)
    problems, filled = [], 0
    ea, eb = list(a), list(b)
    if len(ea) != len(eb):
        problems.append(f"{len(ea)} entries in, {len(eb)} out")
    n = nplurals(a)
    for x, y in zip(ea, eb):
        where = f"msgid {x.msgid[:40]!r}"
        for f in ("msgctxt", "msgid", "msgid_plural", "occurrences", "comment", "tcomment", "obsolete",
                  "previous_msgid"):
            if getattr(x, f) != getattr(y, f):
                problems.append(f"{where}: {f} differs")
        if not empty(x) or not x.msgid:
            if (x.msgstr, x.msgstr_plural, x.flags) != (y.msgstr, y.msgstr_plural, y.flags):
                problems.append(f"{where}: a translated entry changed")
            continue
        if empty(y):
            if set(y.flags) != set(x.flags):
                problems.append(f"{where}: left empty but its flags changed")
            continue
        filled += 1
        if "fuzzy" not in y.flags:
            problems.append(f"{where}: filled without the fuzzy flag")
        if set(y.flags) - {"fuzzy"} != set(x.flags) - {"fuzzy"}:
            problems.append(f"{where}: flags changed")
        pairs = [(x.msgid, y.msgstr)]
        if x.msgid_plural:
            if sorted(y.msgstr_plural) != list(range(n)):
                problems.append(f"{where}: msgstr[] {sorted(y.msgstr_plural)}, want 0..{n - 1}")
            pairs = [(x.msgid, y.msgstr_plural.get(0, ""))] + [(x.msgid_plural, y.msgstr_plural.get(k, ""))
                                                               for k in range(1, n)]
        for src, tgt in pairs:
            if Counter(PLACEHOLDER.findall(src)) != Counter(PLACEHOLDER.findall(tgt)):
                problems.append(f"{where}: placeholders {PLACEHOLDER.findall(src)} vs {PLACEHOLDER.findall(tgt)}")
            elif ordered(src) != ordered(tgt):
                problems.append(f"{where}: order {ordered(src)} vs {ordered(tgt)}")
    for p in problems:
        print("  " + p)
    print(f"check_po: {len(ea)} entries, {filled} filled, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
