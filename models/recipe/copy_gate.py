#!/usr/bin/python3
"""The copy guard's gate: the words the training corpus translates (issue 53).

The copy guard (engine/decode/README.md) decodes again, the copy banned, a
sentence whose output is its source given back.  On the UI test set every
such copy is wrong; for names, codes and numbers (recipe/right-copies.txt)
most are right, and the guard broke them.  The gate arms the guard only for
a sentence holding a word the training corpus translates: a word that occurs
in at least NMIN training sources, the target of at most RMAX of those pairs
holding it too.  "Linux", "Firefox" (kept in the targets) and words the corpus
never saw arm nothing.

    build:   /usr/bin/python3 recipe/copy_gate.py build --direction en-fr --corpus work/mix-en-fr \\
                 --out en-fr/copy_gate.txt
    measure: /usr/bin/python3 recipe/copy_gate.py measure --model en-fr --direction en-fr \\
                 --corpus work/mix-en-fr [--nmin 2,3 --rmax 0.2,0.3]
    fixture: /usr/bin/python3 recipe/copy_gate.py fixture --gate en-fr/copy_gate.txt \\
                 --lines work/mix-en-fr/test-ui.en --out ../tests/fixtures/copy_gate

Words, as server/translate/copy_gate.c reads them (the two must agree: the
fixture checks it): the text split at whitespace (mt_utf8_is_space's) , ; and /; each piece's edge
punctuation (EDGE) taken off; a piece that is letter runs joined by single
inner hyphens or apostrophes (- ' U+2019) gives its runs, case-folded (simple
folding, one code point to one); any other piece ("--help", "Ctrl+C",
"README.md", "x86_64") gives none, nor does a run over 64 bytes folded.  A letter: is_letter below.

`measure` simulates the gate (greedy, mtserve's defaults, `mtserve translate
--json --copy-guard off` and `on`, the gated output the guarded one where the
gate arms) on a test set (every copy wrong) and on right-copies.txt (every
copy right).  Figures: models/recipe/corpus-notes.md "The copy guard's gate".
"""
import argparse, collections, json, os, re, subprocess, sys
sys.path.insert(0, os.path.dirname(__file__))

NMIN, RMAX = 2, 0.3
EDGE = set(".,;:!?()[]{}\"'«»“”‘’…")
JOIN = set("-'’")
# engine/util/utf8.c mt_utf8_is_space, and , ; /
SEP = re.compile("[ \t\n\v\f\r\x85\xa0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff,;/]+")
MAX_WORD = 64   # bytes of a folded word (copy_gate.h SRV_COPY_GATE_MAX_WORD)


def is_letter(ch):
    """ASCII letters; Latin-1's letters; from U+0100 on, all but U+2000-2BFF
    (punctuation, symbols, arrows, box drawing), U+3000-303F (CJK
    punctuation), U+E000 and above (private use, presentation forms, emoji)."""
    c = ord(ch)
    if c < 0x80:
        return ch.isascii() and ch.isalpha()
    if c < 0x100:
        return c in (0xAA, 0xB5, 0xBA) or (c >= 0xC0 and c not in (0xD7, 0xF7))
    return not (0x2000 <= c < 0x2C00 or 0x3000 <= c < 0x3040 or c >= 0xE000)


def fold(w):
    out = []
    for ch in w:
        f = ch.casefold()
        out.append(f if len(f) == 1 else ch.lower() if len(ch.lower()) == 1 else ch)
    return "".join(out)


def words(s):
    out = []
    for tok in SEP.split(s):
        a, b = 0, len(tok)
        while a < b and tok[a] in EDGE:
            a += 1
        while b > a and tok[b - 1] in EDGE:
            b -= 1
        tok = tok[a:b]
        runs, cur, ok = [], "", bool(tok)
        for i, ch in enumerate(tok):
            if is_letter(ch):
                cur += ch
            elif ch in JOIN and cur and i + 1 < len(tok) and is_letter(tok[i + 1]):
                runs.append(cur); cur = ""
            else:
                ok = False
                break
        if ok and cur:
            runs.append(cur)
            out.extend(f for f in map(fold, runs) if len(f.encode()) <= MAX_WORD)
    return out


def stats(src_path, tgt_path):
    n, c = collections.Counter(), collections.Counter()
    for s, t in zip(open(src_path, encoding="utf-8"), open(tgt_path, encoding="utf-8")):
        tw = set(words(t))
        for w in set(words(s)):
            n[w] += 1
            c[w] += w in tw
    return n, c


def gate_words(n, c, nmin, rmax):
    return sorted((w for w in n if n[w] >= nmin and c[w] <= rmax * n[w]), key=lambda w: w.encode())


def arms(gate, text):
    return any(w in gate for w in words(text))


def run(mtserve, model, lines, guard):
    cmd = [mtserve, "translate", "--model", model, "--beam", "1", "--json", "--copy-guard", "on" if guard else "off"]
    out = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, check=True).stdout
    rows = [json.loads(x)["text"] for x in out.splitlines() if x.strip()]
    assert len(rows) == len(lines), (len(rows), len(lines))
    return rows


def right_copies():
    here = os.path.dirname(os.path.abspath(__file__))
    return [x for x in open(f"{here}/right-copies.txt", encoding="utf-8").read().splitlines()
            if x.strip() and not x.startswith("#")]


def build(a):
    sl, tl = a.direction.split("-")
    n, c = stats(f"{a.corpus}/train.{sl}", f"{a.corpus}/train.{tl}")
    ws = gate_words(n, c, a.nmin, a.rmax)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(f"# mtserve copy guard gate ({a.direction}): the words of the training sources (work/mix-{a.direction}/train)\n"
                f"# found in at least {a.nmin} sources and in the targets of at most {a.rmax:g} of those pairs;\n"
                f"# built by models/recipe/copy_gate.py build.  Case-folded, sorted by bytes, one a line.\n")
        for w in ws:
            f.write(w + "\n")
    print(f"{a.out}: {len(ws)} words of {len(n)}")


def measure(a):
    from scores import bleu, chrf
    sl, tl = a.direction.split("-")
    right = right_copies()
    src = open(f"{a.corpus}/{a.set}.{sl}", encoding="utf-8").read().splitlines()
    ref = open(f"{a.corpus}/{a.set}.{tl}", encoding="utf-8").read().splitlines()
    n, c = stats(f"{a.corpus}/train.{sl}", f"{a.corpus}/train.{tl}")
    off, on = run(a.mtserve, a.model, src, False), run(a.mtserve, a.model, src, True)
    roff, ron = run(a.mtserve, a.model, right, False), run(a.mtserve, a.model, right, True)
    same = lambda h, x: h.strip() == x.strip()
    print(f"{a.set}: guard off {sum(map(same, off, src))} copies, BLEU {bleu(off, ref):.2f} chrF {chrf(off, ref):.2f}; "
          f"on {sum(map(same, on, src))}, BLEU {bleu(on, ref):.2f} chrF {chrf(on, ref):.2f}")
    print(f"right copies: {len(right)}; the model copies {sum(map(same, roff, right))}; "
          f"the guard leaves {sum(map(same, ron, right))}")
    for nmin in map(int, a.nmin.split(",")):
        for rmax in map(float, a.rmax.split(",")):
            g = set(gate_words(n, c, nmin, rmax))
            hyp = [y if arms(g, s) else x for x, y, s in zip(off, on, src)]
            rh = [y if arms(g, s) else x for x, y, s in zip(roff, ron, right)]
            broke = [x for x, h, o in zip(right, rh, roff) if same(o, x) and not same(h, x)]
            left = [s for h, s in zip(hyp, src) if same(h, s)]
            print(f"nmin {nmin} rmax {rmax:.2f} ({len(g)} words): {a.set} untranslated {len(left)} "
                  f"({100 * len(left) / len(src):.1f}%), BLEU {bleu(hyp, ref):.2f} chrF {chrf(hyp, ref):.2f}; "
                  f"right copies broken {len(broke)} {broke}")
            if a.verbose:
                print("  left:", left)


def fixture(a):
    """The gate's words that the lines hold (so the fixture decides as the
    whole list does) and each line's decision, for tests/test_copy_gate.c."""
    gate = set(open(a.gate, encoding="utf-8").read().splitlines()) - {""}
    gate = {w for w in gate if not w.startswith("#")}
    lines = open(a.lines, encoding="utf-8").read().splitlines()[:a.max_lines] + right_copies() + EXTRA
    os.makedirs(a.out, exist_ok=True)
    used = sorted({w for x in lines for w in words(x) if w in gate}, key=lambda w: w.encode())
    with open(f"{a.out}/words.txt", "w", encoding="utf-8") as f:
        f.write(f"# the words of {os.path.basename(a.gate)} ({a.gate}) that lines.jsonl holds "
                "(models/recipe/copy_gate.py fixture)\n")
        f.writelines(w + "\n" for w in used)
    with open(f"{a.out}/lines.jsonl", "w", encoding="utf-8") as f:
        for x in lines:
            f.write(json.dumps({"text": x, "words": words(x), "armed": arms(gate, x)}, ensure_ascii=False) + "\n")
    print(f"{a.out}: {len(used)} words, {len(lines)} lines, {sum(arms(gate, x) for x in lines)} armed")


# Lines for the word rule's corners (edges, joiners, separators, case, scripts).
EXTRA = ["«Save» the file…", "l’Étoile, l'Île/ÉTÉ;déjà", "Straße STRASSE ǅemal", "save-as -- file- -x x-",
         "(Open) [Close] {Quit}", "naïve café façade Œuvre", "Ελληνικά Кириллица 中文 العربية",
         "E-mail e–mail x86_64 a.b a_b", "“Quit”? ‘Open’!", "Ctrl+Q quit", "", "   ", "tab\tsep\u00a0nbsp",
         "10 files", "ÀÉÎÕÜ", "μ-law 5µs"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--direction", required=True, choices=["en-fr", "fr-en"]); b.add_argument("--corpus", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--nmin", type=int, default=NMIN); b.add_argument("--rmax", type=float, default=RMAX)
    m = sub.add_parser("measure")
    m.add_argument("--model", required=True); m.add_argument("--corpus", required=True)
    m.add_argument("--direction", required=True, choices=["en-fr", "fr-en"])
    m.add_argument("--mtserve", default="../build/mtserve"); m.add_argument("--set", default="test-ui")
    m.add_argument("--nmin", default=str(NMIN)); m.add_argument("--rmax", default=str(RMAX))
    m.add_argument("--verbose", action="store_true")
    f = sub.add_parser("fixture")
    f.add_argument("--gate", required=True); f.add_argument("--lines", required=True)
    f.add_argument("--out", required=True); f.add_argument("--max-lines", type=int, default=300)
    a = ap.parse_args()
    {"build": build, "measure": measure, "fixture": fixture}[a.cmd](a)


if __name__ == "__main__":
    main()
