#!/usr/bin/python3
"""The training corpus of one direction (issue 53): the DDTP corpus (corpus.py)
and the Debian packages' corpus (debcorpus.py) mixed, with case-augmented copies.

    /usr/bin/python3 recipe/mixcorpus.py --ddtp work/corpus --deb work/debcorpus \\
        --direction en-fr --out work/mix-en-fr

train  DDTP train --ddtp-times times (2: package descriptions keep their weight
       beside 123k interface pairs, so their test BLEU need not fall), the
       packages' train once, then the copies:
         Title Case: every packages' train pair of 1-8 source words that is not
           Title Case already, when the md5 of its source puts it in the first
           --title-pct percent, again with its source in Title Case and its
           target as written (what a French or English localizer writes for a
           Title Case label: LibreOffice's "Border Distance" -> "Distance à la
           bordure" is such a pair in the data itself);
         ALL CAPS: the first --caps-pct percent (by the same md5) of those pairs
           with both sides upper-cased (the case pattern carried over).
dev    DDTP dev and the packages' dev (dev loss follows both domains).
test   DDTP test (the package-description figure of the card stays comparable),
       and the packages' test-ui and test-everyday, each also as -tc: the source
       side in Title Case, the reference as written.
Deterministic: the same inputs give the same bytes.
"""
import argparse, hashlib, os, re


def title(s):
    """Each word's first letter upper-cased, the rest kept ("l’éditeur" -> "L’éditeur")."""
    return re.sub(r"(^|(?<=[\s(\"“«'‘/-]))([^\W\d_])", lambda m: m.group(1) + m.group(2).upper(), s)


def is_title(s):
    return title(s) == s


def read(d, name, sl, tl):
    a = open(f"{d}/{name}.{sl}", encoding="utf-8").read().splitlines()
    b = open(f"{d}/{name}.{tl}", encoding="utf-8").read().splitlines()
    assert len(a) == len(b), (d, name)
    return list(zip(a, b))


def pct(s):
    return int(hashlib.md5(s.encode()).hexdigest()[:8], 16) % 100


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ddtp", required=True); ap.add_argument("--deb", required=True)
    ap.add_argument("--direction", required=True, choices=["en-fr", "fr-en"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--ddtp-times", type=int, default=2)
    ap.add_argument("--title-pct", type=int, default=50)
    ap.add_argument("--caps-pct", type=int, default=5)
    a = ap.parse_args()
    sl, tl = a.direction.split("-")
    os.makedirs(a.out, exist_ok=True)

    def write(name, pairs):
        with open(f"{a.out}/{name}.{sl}", "w", encoding="utf-8") as fs, \
             open(f"{a.out}/{name}.{tl}", "w", encoding="utf-8") as ft:
            for s, t in pairs:
                fs.write(s + "\n"); ft.write(t + "\n")
        print(f"{a.out}/{name}: {len(pairs)} pairs")

    deb = read(a.deb, "train", sl, tl)
    short = [(s, t) for s, t in deb if 1 <= len(s.split()) <= 8 and not is_title(s)]
    tc = [(title(s), t) for s, t in short if pct(s) < a.title_pct]
    caps = [(s.upper(), t.upper()) for s, t in short if pct(s) < a.caps_pct]
    write("train", read(a.ddtp, "train", sl, tl) * a.ddtp_times + deb + tc + caps)
    write("dev", read(a.ddtp, "dev", sl, tl) + read(a.deb, "dev", sl, tl))
    write("test", read(a.ddtp, "test", sl, tl))
    for name in ("test-ui", "test-everyday"):
        p = read(a.deb, name, sl, tl)
        write(name, p)
        write(name + "-tc", [(title(s), t) for s, t in p])


if __name__ == "__main__":
    main()
