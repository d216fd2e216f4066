#!/usr/bin/python3
"""Build the en-fr parallel corpus from Debian's translated package descriptions (DDTP).

Pairing: entries of Translation-en and Translation-fr share a Description-md5.
Inside one description the title line and the paragraphs (separated by " .")
pair up one to one when both sides have the same count.  Paragraph pairs whose
sentence counts match are split further into sentence pairs.

Split: by package name (md5 of the name -> bucket), so no test package is
seen in training.  Any pair whose English or French side occurs in dev/test is
also dropped from train, because many packages share boilerplate paragraphs.

Output (deterministic, sorted): train.{en,fr} dev.{en,fr} test.{en,fr}.
"""
import argparse, glob, hashlib, os, re, subprocess, sys
from tqdm import tqdm

LISTS = "/var/lib/apt/lists"


def read_translation(path):
    """Yield (package, md5, lines) for every entry of a Translation-xx.lz4 file."""
    data = subprocess.run(["lz4cat", path], check=True, capture_output=True).stdout.decode("utf-8", "replace")
    for block in data.split("\n\n"):
        pkg = md5 = None
        desc = []
        for line in block.split("\n"):
            if line.startswith("Package: "):
                pkg = line[9:].strip()
            elif line.startswith("Description-md5: "):
                md5 = line[17:].strip()
            elif line.startswith("Description-"):
                desc.append(line.split(": ", 1)[1] if ": " in line else "")
            elif line.startswith(" ") and desc:
                desc.append(line[1:])
        if pkg and md5 and desc:
            yield pkg, md5, desc


def paragraphs(desc):
    """Title, then paragraphs; a line holding only '.' separates paragraphs."""
    out = [desc[0]]
    cur = []
    for line in desc[1:]:
        if line.strip() == ".":
            out.append(" ".join(cur)); cur = []
        else:
            cur.append(line.strip())
    out.append(" ".join(cur))
    return [clean(p) for p in out]


def clean(s):
    return re.sub(r"\s+", " ", s).strip()


# A sentence ends at . ! ? followed by a space and a capital letter (or a digit
# after ':' lists).  Abbreviations like "e.g." and "i.e." are protected.
_ABBR = re.compile(r"\b(e\.g|i\.e|etc|vs|cf|ex|resp|approx|incl|Dr|Mr|Mrs|St|No|n°|p\.ex|c\.-à-d|c\.à\.d)\.$", re.I)


def sentences(p):
    parts, start = [], 0
    for m in re.finditer(r"[.!?]\s+(?=[A-ZÀ-ÖØ-Þ«\"(])", p):
        cand = p[start:m.start() + 1]
        if _ABBR.search(cand):
            continue
        parts.append(cand.strip()); start = m.end()
    parts.append(p[start:].strip())
    return [s for s in parts if s]


def bucket(pkg):
    h = int(hashlib.md5(pkg.encode()).hexdigest()[:8], 16) % 100
    return "test" if h < 2 else "dev" if h < 4 else "train"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--release", default="bookworm")
    ap.add_argument("--max-chars", type=int, default=600)
    a = ap.parse_args()
    en_files = sorted(glob.glob(f"{LISTS}/*_dists_{a.release}*_i18n_Translation-en.lz4"))
    fr_files = sorted(glob.glob(f"{LISTS}/*_dists_{a.release}*_i18n_Translation-fr.lz4"))
    if not en_files or not fr_files:
        sys.exit("no Translation-en/fr lists: run apt-get update -o Acquire::Languages=en,fr")
    en, fr = {}, {}
    for f in en_files:
        for pkg, md5, d in tqdm(read_translation(f), desc=os.path.basename(f), unit="pkg"):
            en.setdefault(md5, (pkg, d))
    for f in fr_files:
        for pkg, md5, d in tqdm(read_translation(f), desc=os.path.basename(f), unit="pkg"):
            fr.setdefault(md5, (pkg, d))
    splits = {"train": set(), "dev": set(), "test": set()}
    n_desc = n_par = 0
    for md5 in tqdm(sorted(set(en) & set(fr)), desc="pairing", unit="desc"):
        pkg, de = en[md5]
        pe, pf = paragraphs(de), paragraphs(fr[md5][1])
        if len(pe) != len(pf):
            continue
        n_desc += 1
        dst = splits[bucket(pkg)]
        for e, f in zip(pe, pf):
            if not e or not f:
                continue
            n_par += 1
            se, sf = sentences(e), sentences(f)
            if len(se) == len(sf) and len(se) > 1:
                dst.update(zip(se, sf))
            elif len(e) <= a.max_chars and len(f) <= a.max_chars:
                dst.add((e, f))
    held = set()
    for k in ("dev", "test"):
        for e, f in splits[k]:
            held.add(e); held.add(f)
    splits["train"] = {(e, f) for e, f in splits["train"] if e not in held and f not in held}
    # a pair that landed in both dev and test stays in test only
    splits["dev"] -= splits["test"]
    os.makedirs(a.out, exist_ok=True)
    for k, pairs in splits.items():
        pairs = sorted(pairs)
        with open(f"{a.out}/{k}.en", "w") as fe, open(f"{a.out}/{k}.fr", "w") as ff:
            for e, f in pairs:
                fe.write(e + "\n"); ff.write(f + "\n")
        print(f"{k}: {len(pairs)} pairs, {sum(len(e.split()) for e, _ in pairs)} English words")
    print(f"descriptions paired: {n_desc}, paragraph pairs: {n_par}")


if __name__ == "__main__":
    main()
