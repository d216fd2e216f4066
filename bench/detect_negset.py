#!/usr/bin/python3
"""detect_negset.py: the negative set of the language-detector benchmark and test.

    /usr/bin/python3 bench/detect_negset.py DIR       # DIR holds Translation-{de,es,it}.bz2, Translation-en.xz

Writes tests/fixtures/detect/{de,es,it}.txt: N short package descriptions per
language (the one-line synopsis of a Debian package in German, Spanish or
Italian, DDTP), 3-10 words, one per line.  Those files are committed; this
script is only how they were made.  Fetch the inputs from the apt mirror:

    for l in de es it; do curl -fO http://deb.debian.org/debian/dists/bookworm/main/i18n/Translation-$l.bz2; done
    curl -fO http://deb.debian.org/debian/dists/bookworm/main/i18n/Translation-en.xz

Kept: synopses of 3-10 whitespace-separated words that differ from the English
synopsis of the same Description-md5 (an untranslated copy is English, not a
negative example) and from every English synopsis, no duplicates.  Chosen: the
N whose sha1 of the text is smallest (deterministic, spread over the archive,
not the first packages alphabetically).
"""
import bz2
import hashlib
import lzma
import os
import sys

LANGS = ("de", "es", "it")
N = 150
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "detect")


def synopses(path, lang):
    """{md5: synopsis} of a Translation-<lang> file."""
    opener = bz2.open if path.endswith(".bz2") else lzma.open
    res, md5 = {}, None
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("Description-md5: "):
                md5 = line.split(":", 1)[1].strip()
            elif line.startswith("Description-%s: " % lang) and md5:
                res[md5] = line.split(":", 1)[1].strip()
                md5 = None
    return res


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    d = argv[1]
    en = synopses(os.path.join(d, "Translation-en.xz"), "en")
    en_texts = set(en.values())
    os.makedirs(OUT, exist_ok=True)
    for lang in LANGS:
        syn = synopses(os.path.join(d, "Translation-%s.bz2" % lang), lang)
        keep = set()
        for md5, text in syn.items():
            if not 3 <= len(text.split()) <= 10:
                continue
            if text == en.get(md5) or text in en_texts:
                continue
            keep.add(text)
        chosen = sorted(keep, key=lambda t: hashlib.sha1(t.encode()).hexdigest())[:N]
        with open(os.path.join(OUT, "%s.txt" % lang), "w", encoding="utf-8") as f:
            for t in chosen:
                f.write(t + "\n")
        print("%s: %d synopses, %d kept, %d written" % (lang, len(syn), len(keep), len(chosen)))


if __name__ == "__main__":
    main(sys.argv)
