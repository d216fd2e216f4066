#!/usr/bin/python3
"""bench/html_accuracy.py URL SNIPPETS.jsonl [--markdown] [--save OUT.jsonl]

Tag placement accuracy of mtserve's `format: "html"` (issue 27) against the naive approach
LibreTranslate takes (every text node translated on its own in plain-text mode, the tags put
around each node's translation), scored against an independent reference word aligner.

  html    POST /translate {"text": snippet, "format": "html"}: the server's own placement
  naive   every text node of a unit translated alone (POST /translate, plain text), each
          inline tag around the translations of the nodes it held

Reference: a fast_align-style aligner written here (numpy): IBM Model 2 with fast_align's
diagonal prior (tension 4, p0 0.08), 5 EM iterations each way, symmetrized with
grow-diag-final-and; trained on the committed test and dev splits
(tests/fixtures/tokenizer/inputs/{test,dev}.{en,fr}.txt, line-aligned) plus every pair being
scored (source unit, each system's output).  For each inline tag of the snippets (the
generator's `spans`), the reference target words are those the aligner links to the source
words the tag wraps, in that system's output; the tag's own target words are the words it
wraps in the output.  Scores: exact match of the two word sets, and word-level F1; tags whose
source words have no reference link are counted apart.  Also: tags emptied (wrapping words
in, none out), the text cost of the naive approach (chrF2 of its text against the
whole-unit plain translation, and chrF2 of both against the test split's reference lines),
and the agreement of the reference aligner with the server's own word alignments
(return_alignments), which bounds how far the reference can be trusted.

Needs Debian's python3-html5lib and python3-numpy; the server serving en-fr and fr-en.
"""
import argparse
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "html"))
import html_units as hu  # noqa: E402
from check_html import Client, Translator  # noqa: E402

INPUTS = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "inputs")


# ---- the reference aligner ---------------------------------------------------------------
_PUNCT = re.compile(r"^[\W_]+|[\W_]+$", re.U)


def key(w):
    """The aligner's view of a word: lower-cased, surrounding punctuation off (a word of
    punctuation only stays itself)."""
    k = _PUNCT.sub("", w.lower())
    return k if k else w


class Vocab:
    def __init__(self):
        self.ids = {}

    def __call__(self, words):
        return np.array([self.ids.setdefault(key(w), len(self.ids)) for w in words], dtype=np.int64)


class Model2:
    """One direction: each target word f_j from a source word e_i or NULL,
    P(i | j) ~ exp(-tension * |i/m - j/n|) (fast_align's diagonal), t(f | e) by EM."""

    def __init__(self, pairs, ve, vf, tension=4.0, p0=0.08, iters=5):
        self.tension, self.p0 = tension, p0
        js, is_, es, fs, gs, ms, ns = [], [], [], [], [], [], []
        g = 0
        self.group_f = []
        for e, f in pairs:
            m, n = len(e), len(f)
            if m == 0 or n == 0:
                continue
            jj, ii = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")  # rows: j
            js.append(jj.ravel())
            is_.append(ii.ravel())
            es.append(e[ii.ravel()])
            fs.append(f[jj.ravel()])
            gs.append(g + jj.ravel())
            ms.append(np.full(n * m, m))
            ns.append(np.full(n * m, n))
            self.group_f.append(f)
            g += n
        self.G = g
        i_arr, j_arr = np.concatenate(is_), np.concatenate(js)
        e_arr, f_arr, self.gid = np.concatenate(es), np.concatenate(fs), np.concatenate(gs)
        m_arr, n_arr = np.concatenate(ms), np.concatenate(ns)
        self.group_f = np.concatenate(self.group_f)
        h = np.exp(-tension * np.abs((i_arr + 0.5) / m_arr - (j_arr + 0.5) / n_arr))
        z = np.bincount(self.gid, h, minlength=self.G)
        self.prior = (1 - p0) * h / z[self.gid]
        self.vf = vf
        pk = e_arr * vf + f_arr
        self.pairs_key, self.pid = np.unique(pk, return_inverse=True)
        self.pair_e = self.pairs_key // vf
        self.ve = ve
        self.t = np.full(len(self.pairs_key), 1.0 / vf)
        self.tnull = np.full(vf, 1.0 / vf)
        for _ in range(iters):
            self.em()

    def em(self):
        num = self.t[self.pid] * self.prior
        nnum = self.p0 * self.tnull[self.group_f]
        den = np.bincount(self.gid, num, minlength=self.G) + nnum
        post = num / den[self.gid]
        npost = nnum / den
        c = np.bincount(self.pid, post, minlength=len(self.pairs_key))
        tot = np.bincount(self.pair_e, c, minlength=self.ve)
        self.t = (c + 1e-9) / (tot[self.pair_e] + 1e-9 * self.vf)
        cn = np.bincount(self.group_f, npost, minlength=self.vf) + 1e-9
        self.tnull = cn / cn.sum()

    def tprob(self, e, f):
        k = e[None, :] * self.vf + f[:, None]  # [n, m]
        pos = np.searchsorted(self.pairs_key, k)
        pos = np.minimum(pos, len(self.pairs_key) - 1)
        found = self.pairs_key[pos] == k
        return np.where(found, self.t[pos], 1e-7)

    def viterbi(self, e, f):
        """{(i, j)}: each target word's best source word, when it beats NULL."""
        m, n = len(e), len(f)
        if not m or not n:
            return set()
        ii, jj = np.meshgrid(np.arange(m), np.arange(n))
        h = np.exp(-self.tension * np.abs((ii + 0.5) / m - (jj + 0.5) / n))
        h = (1 - self.p0) * h / h.sum(axis=1, keepdims=True)
        p = self.tprob(e, f) * h
        best = p.argmax(axis=1)
        nullp = self.p0 * self.tnull[f]
        return {(int(best[j]), j) for j in range(n) if p[j, best[j]] > nullp[j]}


def grow_diag_final_and(e2f, f2e, m, n):
    """Koehn's symmetrization of two directional alignments {(i, j)}."""
    inter = e2f & f2e
    union = e2f | f2e
    a = set(inter)
    nb = [(-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)]
    changed = True
    while changed:
        changed = False
        for (i, j) in sorted(a):
            for di, dj in nb:
                ii, jj = i + di, j + dj
                if (ii, jj) in union and (ii, jj) not in a:
                    if not any(x == ii for x, _ in a) or not any(y == jj for _, y in a):
                        a.add((ii, jj))
                        changed = True
    for d in (e2f, f2e):  # final-and
        for (i, j) in sorted(d):
            if not any(x == i for x, _ in a) and not any(y == j for _, y in a):
                a.add((i, j))
    return a


class Aligner:
    """English <-> French, both directions, symmetrized."""

    def __init__(self, en_fr_pairs, iters=5):
        self.ven, self.vfr = Vocab(), Vocab()
        ids = [(self.ven(e.split()), self.vfr(f.split())) for e, f in en_fr_pairs]
        ve, vf = len(self.ven.ids), len(self.vfr.ids)
        self.ef = Model2(ids, ve, vf, iters=iters)                            # fr word from en word
        self.fe = Model2([(f, e) for e, f in ids], vf, ve, iters=iters)      # en word from fr word

    def align(self, en, fr):
        """{(en word, fr word)} of two texts split on spaces."""
        e, f = self.ven(en.split()), self.vfr(fr.split())
        a1 = self.ef.viterbi(e, f)                          # (i en, j fr)
        a2 = {(i, j) for (j, i) in self.fe.viterbi(f, e)}   # (j fr, i en) -> (i, j)
        return grow_diag_final_and(a1, a2, len(e), len(f))


# ---- chrF ----------------------------------------------------------------------------------
def chrf_stats(hyp, ref, n=6):
    h, r = hyp.replace(" ", ""), ref.replace(" ", "")
    st = []
    for k in range(1, n + 1):
        hc = Counter(h[i:i + k] for i in range(len(h) - k + 1))
        rc = Counter(r[i:i + k] for i in range(len(r) - k + 1))
        st.append((sum((hc & rc).values()), sum(hc.values()), sum(rc.values())))
    return st


def chrf(pairs, n=6, beta=2.0):
    """Corpus chrF2 (statistics summed over the corpus, as sacrebleu)."""
    tot = [[0, 0, 0] for _ in range(n)]
    for hyp, ref in pairs:
        for k, s in enumerate(chrf_stats(hyp, ref, n)):
            for x in range(3):
                tot[k][x] += s[x]
    ps, rs = [], []
    for m, hh, rr in tot:
        if hh and rr:
            ps.append(m / hh)
            rs.append(m / rr)
    if not ps:
        return 0.0
    p, r = sum(ps) / len(ps), sum(rs) / len(rs)
    return 100 * (1 + beta ** 2) * p * r / (beta ** 2 * p + r) if p + r else 0.0


# ---- the naive approach ------------------------------------------------------------------
def run_segments(unit_items):
    """A run's text nodes in order, each with the inline elements (indexes) around it."""
    segs = []
    stack = [("node", c, ()) for c in reversed(unit_items)]
    while stack:
        ev, n, anc = stack.pop()
        if n.cls == "text":
            segs.append((n.text, anc))
        elif n.cls == "inline":
            stack.extend(("node", c, anc + (n.index,)) for c in reversed(n.children))
    return segs


def runs_with_items(root):
    """Like hu.units, with each run's items, for the naive approach."""
    stack = [root]
    order = []
    while stack:
        c = stack.pop()
        kids, i, prev = c.children, 0, -1
        inner = []
        while i < len(kids):
            if kids[i].cls in ("text", "inline", "opaque"):
                j = i
                while j < len(kids) and kids[j].cls in ("text", "inline", "opaque"):
                    j += 1
                order.append(((c.index if c.kind == "elem" else -1, prev), kids[i:j]))
                i = j
                continue
            if kids[i].cls == "block":
                inner.append(kids[i])
            prev = kids[i].index
            i += 1
        stack.extend(reversed(inner))
    return dict(order)


def naive_unit(segs, tr, src, tgt):
    """The naive output of one run: raw text and each inline element's [start, end)."""
    raw = ""
    spans = {}
    for text, anc in segs:
        if hu.is_blank(text):
            piece = text
        else:
            piece = hu.lead_ws(text) + tr(src, tgt, hu.collapse(text)) + hu.trail_ws(text)
        s = len(raw)
        raw += piece
        for a in anc:
            if a in spans:
                spans[a] = (spans[a][0], len(raw))
            else:
                spans[a] = (s, len(raw))
    u = hu.Unit(None)
    u.raw = raw
    u.spans = spans
    return u


# ---- scoring -----------------------------------------------------------------------------
def f1(g, r):
    if not g and not r:
        return 1.0
    return 2 * len(g & r) / (len(g) + len(r))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("snippets")
    ap.add_argument("--save", help="every scored tag, one JSON object a line")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--layer-scan", type=int, default=0, metavar="LAYERS",
                    help="also the agreement of each decoder layer's alignments (0..LAYERS-1, all heads / head 0)")
    args = ap.parse_args()

    c = Client(args.url)
    tr = Translator(c)
    recs = [json.loads(l) for l in open(args.snippets, encoding="utf-8")]
    recs = [r for r in recs if r.get("spans")]
    t0 = time.monotonic()

    items = []  # one per snippet with spans
    for r in recs:
        src, tgt = r["source"], r["target"]
        st, resp = c.json("POST", "/translate", {"text": r["html"], "source": src, "target": tgt, "format": "html"})
        if st != 200:
            print("skip %s: html answered %d %s" % (r["id"], st, str(resp)[:200]))
            continue
        out = resp["translations"][0]["text"]
        in_root, _ = hu.parse(r["html"])
        out_root, _ = hu.parse(out, not hu.is_full_document(r["html"]))
        in_units = [u for u in hu.units(in_root) if u.translatable]
        out_units = {u.key: u for u in hu.units(out_root)}
        in_runs = runs_with_items(in_root)
        for u in in_units:
            tr.prefetch(src, tgt, [hu.collapse(t) for t, _ in run_segments(in_runs[u.key]) if not hu.is_blank(t)])
        items.append((r, in_units, out_units, in_runs))

    # every tag: source words, html's output, naive's output
    tags = []
    for r, in_units, out_units, in_runs in items:
        src, tgt = r["source"], r["target"]
        for sp in r["spans"]:
            u = in_units[sp["unit"]]
            s_words = u.word_sets()[sp["elem"]]
            assert s_words == set(range(*sp["words"])), (r["id"], sp, s_words)
            if not s_words:
                continue
            plain = tr(src, tgt, u.text)
            ho = out_units.get(u.key)
            h_words = ho.word_sets().get(sp["elem"], set()) if ho else set()
            h_text = ho.text if ho else ""
            nu = naive_unit(run_segments(in_runs[u.key]), tr, src, tgt)
            n_words = nu.word_sets().get(sp["elem"], set())
            tags.append({"id": r["id"], "tag": sp["tag"], "src": src, "tgt": tgt, "source": u.text,
                         "s_words": sorted(s_words), "plain": plain, "html_text": h_text,
                         "html_words": sorted(h_words), "naive_text": nu.text, "naive_words": sorted(n_words),
                         "line": next((x["line"] for x in r["units"] if x["text"] == u.text), None)})

    # the reference aligner: splits + every pair scored, as (en, fr)
    corpus = []
    for split in ("test", "dev"):
        with open(os.path.join(INPUTS, "%s.en.txt" % split), encoding="utf-8") as fe, \
                open(os.path.join(INPUTS, "%s.fr.txt" % split), encoding="utf-8") as ff:
            corpus += [(e.strip(), f.strip()) for e, f in zip(fe, ff)]
    n_split = len(corpus)
    seen = set()
    for t in tags:
        for out in (t["html_text"], t["naive_text"], t["plain"]):
            p = (t["source"], out) if t["src"] == "en" else (out, t["source"])
            if p not in seen:
                seen.add(p)
                corpus.append(p)
    ta = time.monotonic()
    al = Aligner(corpus, iters=args.iters)
    t_align = time.monotonic() - ta

    def ref_words(t, out_text):
        if t["src"] == "en":
            links = al.align(t["source"], out_text)
            return {j for (i, j) in links if i in set(t["s_words"])}
        links = al.align(out_text, t["source"])
        return {i for (i, j) in links if j in set(t["s_words"])}

    res = {"html": [], "naive": []}
    for t in tags:
        for sysname, text_key, words_key in (("html", "html_text", "html_words"), ("naive", "naive_text", "naive_words")):
            ref = ref_words(t, t[text_key])
            got = set(t[words_key])
            t[sysname + "_ref"] = sorted(ref)
            res[sysname].append((got, ref))

    def summary(rows):
        scored = [(g, r) for g, r in rows if r]
        exact = sum(g == r for g, r in scored)
        return {"tags": len(rows), "scored": len(scored), "no_ref": len(rows) - len(scored),
                "exact": exact / len(scored) if scored else 0.0,
                "f1": sum(f1(g, r) for g, r in scored) / len(scored) if scored else 0.0,
                "emptied": sum(1 for g, _ in rows if not g)}

    sh, sn = summary(res["html"]), summary(res["naive"])

    # text cost
    units_seen = {}
    for t in tags:
        units_seen[(t["id"], t["source"])] = t
    uu = list(units_seen.values())
    chrf_naive_vs_plain = chrf([(t["naive_text"], t["plain"]) for t in uu])
    chrf_html_vs_plain = chrf([(t["html_text"], t["plain"]) for t in uu])
    refs = {}
    for lang in ("en", "fr"):
        with open(os.path.join(INPUTS, "test.%s.txt" % lang), encoding="utf-8") as f:
            refs[lang] = [l.strip() for l in f]
    with_ref = [t for t in uu if t["line"] is not None]
    chrf_ref = {k: chrf([(t[k], refs[t["tgt"]][t["line"]]) for t in with_ref]) for k in ("plain", "html_text", "naive_text")}

    # the reference aligner vs the model's own word alignments, on the plain translations
    def agreement(layer=None, heads=None):
        agree = [0, 0, 0]  # both, ref only, model only
        for t in uu[:200]:
            body = {"text": t["source"], "source": t["src"], "target": t["tgt"], "return_alignments": True}
            if layer is not None:
                body["alignment_layer"] = layer
            if heads is not None:
                body["alignment_heads"] = heads
            st, resp = c.json("POST", "/translate", body)
            if st != 200:
                continue
            tx = resp["translations"][0]
            if tx["text"] != t["plain"]:
                continue
            s_off = hu.word_offsets(t["source"])
            t_off = hu.word_offsets(tx["text"])

            def widx(offs, a, b):  # code point offsets -> word indexes
                return {k for k, (x, y) in enumerate(offs) if x < b and y > a}
            model = set()
            for wa in tx.get("word_alignments", []):
                for i in widx(s_off, *wa["source"]):
                    for j in widx(t_off, *wa["target"]):
                        model.add((i, j))
            if t["src"] == "en":
                ref = al.align(t["source"], tx["text"])
            else:
                ref = {(j, i) for (i, j) in al.align(tx["text"], t["source"])}
            agree[0] += len(model & ref)
            agree[1] += len(ref - model)
            agree[2] += len(model - ref)
        p = agree[0] / max(1, agree[0] + agree[1])
        r = agree[0] / max(1, agree[0] + agree[2])
        return p, r, (2 * p * r / (p + r) if p + r else 0.0), agree
    p_, r_, f_agree, agree = agreement()
    scan = []
    if args.layer_scan:
        for layer in range(args.layer_scan):
            for heads in (0, 1):
                scan.append((layer, heads) + agreement(layer, heads)[:3])

    if args.save:
        with open(args.save, "w", encoding="utf-8") as f:
            for t in tags:
                f.write(json.dumps(t, ensure_ascii=False) + "\n")

    by_dir = defaultdict(lambda: {"html": [], "naive": []})
    for t, h, n in zip(tags, res["html"], res["naive"]):
        by_dir["%s-%s" % (t["src"], t["tgt"])]["html"].append(h)
        by_dir["%s-%s" % (t["src"], t["tgt"])]["naive"].append(n)

    print("## Tag placement: %d inline tags in %d snippets (%s), reference aligner trained on %d split pairs + %d "
          "scored pairs in %.1f s\n" % (len(tags), len(items), os.path.basename(args.snippets), n_split,
                                        len(corpus) - n_split, t_align))
    print("| approach | pairs | tags scored | exact match | word F1 | tags emptied | no reference link |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for d in ["all"] + sorted(by_dir):
        for sysname, label in (("html", "html mode (server)"), ("naive", "naive per text node")):
            s = summary(res[sysname] if d == "all" else by_dir[d][sysname])
            print("| %s | %s | %d | %.1f%% | %.3f | %d | %d |" % (label, d, s["scored"], 100 * s["exact"], s["f1"],
                                                               s["emptied"], s["no_ref"]))
    print("\n## Text: chrF2 over the %d units that hold the tags (%d with a reference line)\n" % (len(uu), len(with_ref)))
    print("| output | vs the whole-unit plain translation | vs the reference line |")
    print("|---|---:|---:|")
    print("| plain translation | 100.0 | %.1f |" % chrf_ref["plain"])
    print("| html mode | %.1f | %.1f |" % (chrf_html_vs_plain, chrf_ref["html_text"]))
    print("| naive per text node | %.1f | %.1f |" % (chrf_naive_vs_plain, chrf_ref["naive_text"]))
    print("\nReference aligner vs the model's own word alignments (return_alignments) on %d plain translations: "
          "precision %.2f, recall %.2f, F1 %.2f (links both %d, aligner only %d, model only %d)"
          % (min(200, len(uu)), p_, r_, f_agree, agree[0], agree[1], agree[2]))
    if scan:
        print("\n| alignment_layer | alignment_heads | precision | recall | F1 vs the reference aligner |")
        print("|---:|---:|---:|---:|---:|")
        for row in scan:
            print("| %d | %d | %.2f | %.2f | %.2f |" % row)
    print("\nhtml-accuracy: html exact %.1f%% F1 %.3f; naive exact %.1f%% F1 %.3f; naive chrF2 cost %.1f points; %.0f s"
          % (100 * sh["exact"], sh["f1"], 100 * sn["exact"], sn["f1"], 100 - chrf_naive_vs_plain, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
