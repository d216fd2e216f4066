#!/usr/bin/python3
"""Character n-gram language models for language detection (issue 48): train, write, score.

    /usr/bin/python3 models/recipe/charlm.py train --text work/corpus/train.en --lang en \\
        --exclude ../tests/fixtures/tokenizer/inputs/test.en.txt ... --order 4 --cut 0,0,2,3 --out en.charlm
    /usr/bin/python3 models/recipe/charlm.py score FILE.charlm < lines        # log p per line (the reference)

`make -C models charlm` runs the first for English and French on the training side of
the en-fr corpus (models/recipe/corpus.py) and writes models/en-fr/en.charlm and
models/fr-en/fr.charlm, the files the server reads (server/detect/charlm.h, which
defines the format and the model: this file and charlm.c must agree, and
tests/test_detect.c checks the C scorer against `score` on tests/fixtures/detect/charlm_ref.tsv).

The model: interpolated Kneser-Ney over characters of order N (one discount per order,
D = n1 / (n1 + 2 n2)), written in back-off form (the probability of every kept n-gram,
the back-off weight of every kept context), pruned by count (an n-gram of order k is
kept when its count at that order, raw for N, continuation for k < N, is >= cut[k-1];
the contexts of a kept n-gram are kept), the back-off weights recomputed after
pruning so that every context's distribution sums to one again.

Training text: every line of --text that contains none of the --exclude files' lines of
3 words or more (the held-out dev and test splits: corpus.py keeps equal lines out of
train, not paragraphs holding a held-out sentence).  Deterministic: the same text and
options give the same bytes (the hash seed is the first one without a collision).
"""
import argparse, collections, math, struct, sys

MAGIC = b"MTCHARLM"
VERSION = 1
MAX_ORDER = 6
SCALE = 2048.0                      # quantized log-probabilities: 1/2048 nat
HEADER = struct.Struct("<8sIIII16s6I")
CONTEXT_ONLY = 0xFFFF               # the stored -log p of an entry that is a context only
ALPHABET = 65536                    # the base distribution under unigrams: uniform over this many


# ---- normalization and hashing (server/detect/charlm.c does the same) ----

SPACES = {0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF}


def is_sep(c):
    return (c < 0x20 or 0x7F <= c <= 0x9F or c in SPACES or 0x2000 <= c <= 0x200B)


def fold(c):
    """Lower case of ASCII, Latin-1 and Latin Extended-A letters; digits all '0'."""
    if 0x41 <= c <= 0x5A or (0xC0 <= c <= 0xDE and c != 0xD7):
        return c + 0x20
    if 0x30 <= c <= 0x39:
        return 0x30
    if (0x100 <= c <= 0x137 or 0x14A <= c <= 0x177) and c % 2 == 0 and c != 0x130:
        return c + 1
    if (0x139 <= c <= 0x148 or 0x179 <= c <= 0x17E) and c % 2 == 1:
        return c + 1
    if c == 0x178:
        return 0xFF
    return c


def normalize(text):
    """The code points a model reads: separators (controls, Unicode spaces) collapsed to
    one space, none at either end, letters folded; [] when nothing is left."""
    out, sep = [], False
    for ch in text:
        c = ord(ch)
        if is_sep(c):
            sep = bool(out)
            continue
        if sep:
            out.append(0x20)
            sep = False
        out.append(fold(c))
    return out


def padded(cps, order):
    """order-1 spaces (the start), the text, one space (its end)."""
    return [0x20] * (order - 1) + cps + [0x20]


M64 = (1 << 64) - 1


def mix64(x):
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & M64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & M64
    x ^= x >> 33
    return x


def key(seed, gram):
    h = (0x9E3779B97F4A7C15 ^ seed) & M64
    for c in gram:
        h = mix64(h ^ c)
    return h >> 32


# ---- training ----

def read_text(path, exclude):
    """The lines of path that hold no line of 3 words or more of the exclude files; and
    how many were dropped.  One scan of the whole text per held-out line."""
    import bisect
    held = set()
    for p in exclude:
        with open(p, encoding="utf-8") as f:
            held.update(l.rstrip("\n") for l in f if len(l.split()) >= 3)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    text = "\n".join(lines)
    starts, at = [], 0
    for l in lines:
        starts.append(at)
        at += len(l) + 1
    bad = set()
    for h in sorted(held):
        i = text.find(h)
        while i >= 0:
            bad.add(bisect.bisect_right(starts, i) - 1)
            i = text.find(h, i + 1)
    return [l for k, l in enumerate(lines) if k not in bad], len(bad)


def count(lines, order):
    """counts[k][gram]: raw counts of the order-N grams; continuation counts below."""
    top = collections.Counter()
    for line in lines:
        cps = normalize(line)
        if not cps:
            continue
        s = tuple(padded(cps, order))
        for i in range(order - 1, len(s)):
            top[s[i - order + 1:i + 1]] += 1
    counts = [None] * (order + 1)
    counts[order] = top
    for k in range(order - 1, 0, -1):
        c = collections.Counter()
        for g in counts[k + 1]:
            c[g[1:]] += 1
        counts[k] = c
    return counts


def discounts(counts, order):
    d = [0.0] * (order + 1)
    for k in range(1, order + 1):
        vals = collections.Counter(v for v in counts[k].values() if v <= 2)
        n1, n2 = vals[1], vals[2]
        d[k] = n1 / (n1 + 2 * n2) if n1 + n2 else 0.5
        d[k] = min(max(d[k], 0.05), 0.95)
    return d


def interpolate(counts, order, d):
    """prob[k][gram] (interpolated KN) and gamma[k][context] (the lower order's weight)."""
    prob, gamma = [None] * (order + 1), [None] * (order + 1)
    for k in range(1, order + 1):
        tot, typ = collections.Counter(), collections.Counter()
        for g, v in counts[k].items():
            tot[g[:-1]] += v
            typ[g[:-1]] += 1
        gamma[k] = {h: d[k] * typ[h] / tot[h] for h in tot}
        p = {}
        for g, v in counts[k].items():
            h = g[:-1]
            lower = prob[k - 1].get(g[1:]) if k > 1 else 1.0 / ALPHABET
            if lower is None:               # cannot happen: every suffix has a count
                raise SystemExit("internal: no lower order for %r" % (g,))
            p[g] = (v - d[k]) / tot[h] + gamma[k][h] * lower
        prob[k] = p
    return prob, gamma


def prune(counts, order, cut):
    """The kept grams of each order: count >= cut, and every context of a kept gram."""
    keep = [set() for _ in range(order + 1)]
    for k in range(order, 0, -1):
        c = cut[k - 1] if k - 1 < len(cut) else 0
        for g, v in counts[k].items():
            if v >= c or g in keep[k]:
                keep[k].add(g)
                if k > 1:
                    keep[k - 1].add(g[:-1])
    return keep


class Model:
    """A model in back-off form: lp[k][gram], bow[k][gram] (natural logs), unk."""

    def __init__(self, order, lp, bow, unk, lang, seed=0):
        self.order, self.lp, self.bow, self.unk, self.lang, self.seed = order, lp, bow, unk, lang, seed

    def log_prob_cp(self, h, w):
        acc = 0.0
        for k in range(self.order, 0, -1):
            ctx = tuple(h[len(h) - (k - 1):]) if k > 1 else ()
            v = self.lp[k].get(ctx + (w,))
            if v is not None:
                return acc + v
            if k > 1:
                acc += self.bow[k - 1].get(ctx, 0.0)
        return acc + self.unk

    def log_prob(self, text):
        cps = normalize(text)
        if not cps:
            return 0.0, 0
        s = padded(cps, self.order)
        lp = 0.0
        for i in range(self.order - 1, len(s)):
            lp += self.log_prob_cp(s[i - self.order + 1:i], s[i])
        return lp, len(s) - (self.order - 1)


def backoff_model(counts, order, cut, lang):
    d = discounts(counts, order)
    prob, gamma = interpolate(counts, order, d)
    keep = prune(counts, order, cut)
    # a kept gram without a probability is a context only: the padding's spaces, which
    # begin every text and are never predicted
    lp = [None] + [{g: math.log(prob[k][g]) for g in keep[k] if g in prob[k]} for k in range(1, order + 1)]
    bow = [None] + [dict() for _ in range(order)]
    m = Model(order, lp, bow, math.log(gamma[1][()] / ALPHABET), lang)
    # back-off weights, lowest order first: each context's kept extensions and the
    # pruned model's lower order decide it (exactly gamma when nothing was pruned)
    for k in range(2, order + 1):
        ext = collections.defaultdict(list)
        for g in lp[k]:
            ext[g[:-1]].append(g[-1])
        for h, ws in ext.items():
            num = 1.0 - sum(prob[k][h + (w,)] for w in ws)
            den = 1.0 - sum(math.exp(m.log_prob_cp(list(h[1:]), w)) for w in ws)
            if num <= 1e-12 or den <= 1e-12:
                b = math.log(gamma[k][h])
            else:
                b = math.log(num / den)
            bow[k - 1][h] = b
    return m, d


def quantize(m):
    """The model as stored: log-probabilities and back-off weights rounded to 1/SCALE."""
    lp = [None] + [{g: -min(round(-v * SCALE), CONTEXT_ONLY - 1) / SCALE for g, v in m.lp[k].items()}
                   for k in range(1, m.order + 1)]
    bow = [None] + [{g: max(min(round(v * SCALE), 32767), -32767) / SCALE for g, v in m.bow[k].items()}
                    for k in range(1, m.order + 1)]
    unk = -min(round(-m.unk * SCALE), 2 ** 31) / SCALE
    return Model(m.order, lp, bow, unk, m.lang, m.seed)


def fnv1a32(data):
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def write(m, path):
    """Pick the first seed under which no two kept grams of one order share a key."""
    for seed in range(1000):
        tables = []
        for k in range(1, m.order + 1):
            rows = {}
            for g in set(m.lp[k]) | set(m.bow[k]):
                kk = key(seed, g)
                if kk in rows:
                    break
                q = round(-m.lp[k][g] * SCALE) if g in m.lp[k] else CONTEXT_ONLY
                rows[kk] = (q, round(m.bow[k].get(g, 0.0) * SCALE))
            else:
                tables.append(sorted(rows.items()))
                continue
            break
        if len(tables) == m.order:
            break
    else:
        raise SystemExit("no seed without a key collision")
    m.seed = seed
    n = [len(t) for t in tables] + [0] * (MAX_ORDER - m.order)
    lang = m.lang.encode().ljust(16, b"\0")
    body = bytearray(HEADER.pack(MAGIC, VERSION, m.order, seed, round(-m.unk * SCALE), lang, *n))
    for k, t in enumerate(tables, 1):      # per order: keys, -log p, back-off weights (not the top order's)
        body += struct.pack("<%dI" % len(t), *[kk for kk, _ in t])
        body += struct.pack("<%dH" % len(t), *[q for _, (q, _) in t])
        if k < m.order:
            body += struct.pack("<%dh" % len(t), *[b for _, (_, b) in t])
    body += struct.pack("<I", fnv1a32(body))
    with open(path, "wb") as f:
        f.write(body)
    return len(body), n


def read(path):
    """A .charlm file back into a Model (the reference scorer; checks as charlm.c does)."""
    data = open(path, "rb").read()
    magic, ver, order, seed, unk, lang, *n = HEADER.unpack_from(data, 0)
    if magic != MAGIC or ver != VERSION or not 1 <= order <= MAX_ORDER:
        raise SystemExit("%s: not a version-1 character language model" % path)
    if struct.unpack_from("<I", data, len(data) - 4)[0] != fnv1a32(data[:-4]):
        raise SystemExit("%s: checksum mismatch" % path)
    # keys are hashes: the reference scorer looks them up by key
    at = HEADER.size
    tabs = [None]
    for k in range(1, order + 1):
        c = n[k - 1]
        keys = struct.unpack_from("<%dI" % c, data, at)
        qs = struct.unpack_from("<%dH" % c, data, at + 4 * c)
        at += 6 * c
        bs = struct.unpack_from("<%dh" % c, data, at) if k < order else [0] * c
        at += 2 * c if k < order else 0
        t = {kk: (None if q == CONTEXT_ONLY else -q / SCALE, b / SCALE) for kk, q, b in zip(keys, qs, bs)}
        tabs.append(t)
    return KeyedModel(order, seed, tabs, -unk / SCALE, lang.rstrip(b"\0").decode())


class KeyedModel(Model):
    """A model read from its file: grams looked up by their keys."""

    def __init__(self, order, seed, tabs, unk, lang):
        super().__init__(order, None, None, unk, lang, seed)
        self.tabs = tabs

    def log_prob_cp(self, h, w):
        acc = 0.0
        for k in range(self.order, 0, -1):
            ctx = list(h[len(h) - (k - 1):]) if k > 1 else []
            e = self.tabs[k].get(key(self.seed, ctx + [w]))
            if e is not None and e[0] is not None:
                return acc + e[0]
            if k > 1:
                b = self.tabs[k - 1].get(key(self.seed, ctx))
                acc += b[1] if b else 0.0
        return acc + self.unk


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--text", required=True)
    t.add_argument("--lang", required=True)
    t.add_argument("--exclude", nargs="*", default=[])
    t.add_argument("--order", type=int, default=4)
    t.add_argument("--cut", default="0", help="comma-separated minimum count per order, from order 1")
    t.add_argument("--out", required=True)
    s = sub.add_parser("score")
    s.add_argument("model")
    a = ap.parse_args()
    if a.cmd == "score":
        m = read(a.model)
        for line in sys.stdin:
            lp, n = m.log_prob(line.rstrip("\n"))
            print("%.6f\t%d" % (lp, n))
        return
    if not 1 <= a.order <= MAX_ORDER or len(a.lang.encode()) > 15:
        sys.exit("--order 1..%d, --lang at most 15 bytes" % MAX_ORDER)
    lines, dropped = read_text(a.text, a.exclude)
    counts = count(lines, a.order)
    m, d = backoff_model(counts, a.order, [int(x) for x in a.cut.split(",")], a.lang)
    size, n = write(quantize(m), a.out)
    print("%s: %s, %d lines (%d dropped: they hold a held-out line), order %d, discounts %s, entries %s, "
          "%d bytes, seed %d" % (a.out, a.lang, len(lines), dropped, a.order,
                                 ",".join("%.3f" % x for x in d[1:]), n[:a.order], size, m.seed))


if __name__ == "__main__":
    main()
