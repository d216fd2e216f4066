#!/usr/bin/python3
"""bench/glossary_eval.py build|run|speed ...: the glossary (terminology constraints) benchmark.

  build --direction en-fr --out DIR/terms.en-fr.jsonl [--url URL | --mtserve build/mtserve]
      A term test set from the held-out test split (tests/fixtures/tokenizer/inputs/test.*):
      every source line is translated unforced (greedy and beam 4, by a running server or by
      `mtserve translate`), the source is word-aligned with its REFERENCE translation by the
      independent aligner of bench/html_accuracy.py (IBM model 2 both ways, grow-diag-final-
      and, 5 EM iterations, trained on the test + dev pairs), and each kept sentence gets 1-3
      terms: a source word or 2-3 word phrase (its first and last words content words:
      letters only, >= 3 letters, no stopword; it occurs once in the sentence, whole word,
      any case; with --sure 1, the default, its first and last words each hold a link both
      alignment directions agree on) whose aligned reference words are one contiguous span
      of 1-3 words, consistent (no word of the span aligned outside the phrase); the target
      term is that span less punctuation and articles (French elided ones too) at its ends,
      holding a content word, and absent (whole word, any case) from every unforced
      translation.  Terms of one sentence overlap neither in the source nor in the
      reference.  Which terms and sentences are drawn with seeded random generators (same
      inputs, same file): a third of the sentences get 3 terms, a third 2, the rest 1, as far
      as the sentences offering that many allow.  Sentences of at most --max-words words;
      --sentences of them (default 400) drawn among those with a term, and as many
      "noterm" sentences (among the others) for the byte-identity check, each with an
      "absent_glossary" of terms of other sentences that do not occur in it; plus "speed"
      sentences: the others that offer 3 compatible terms (used by `speed` only).
      One JSON object a line: {"id" (0-based line of the split), "kind": "term"|"noterm"|
      "speed", "source", "reference", "unforced" (greedy), "unforced_beam4", "glossary":
      {src: tgt}, "glossary3" (3 compatible terms, the glossary's first), "spans" (word spans
      of each term: source, reference), "absent_glossary"}.
      Translate with the server (--url): `run` compares against it, and the server splits a
      line into sentences where `mtserve translate` (used without --url) decodes the line as
      one sequence, so a few multi-sentence lines differ.

  run --direction en-fr --terms FILE --url URL --beam 1,4 [--out RESULTS.json]
      Every term sentence is translated twice by POST /translate ("cache": false, 8 requests
      in flight): with its "glossary" and without the field.  Term recall: the (sentence,
      term) pairs whose target term occurs in the output as whole words, case-sensitive (and
      case-insensitive).  BLEU and chrF2 as models/recipe/evaluate.py defines them (NLTK
      corpus_bleu on \\w+|[^\\w\\s] tokens, case-sensitive; chrF char 6-grams, beta 2) with
      the glossary, without it, and of the build's unforced greedy output, on the same
      sentences.  Byte identity: each noterm sentence with "glossary": {} and with its
      absent_glossary must give the bytes it gives with no glossary field.

  speed --direction en-fr --terms FILE --url URL [--n 128] [--beam 1] [--clients 32]
      Throughput with 0, 1 and 3 terms a sentence, on the term and speed sentences that have 3
      compatible terms (glossary3), in line order: 0 = no glossary field, 1 = its first term,
      3 = all three.  Each setting is measured --reps times (default 3), the settings
      interleaved, and the median reported (all reps are in the JSON).
      (a) batch 1: one client, one request at a time; (b) --clients concurrent clients.
      Tokens are the generated target pieces the reply lists ("return_tokens": true; </s>
      not counted); tokens/s and requests/s over the wall time of each setting.

HTTP errors are counted and the first ones printed (a server without the glossary field may
ignore it -- recall then shows it -- or refuse it with 400).  Only the standard library,
numpy (the aligner) and NLTK (corpus_bleu; an exact copy of its formula is used when NLTK is
missing).  Start a server with e.g.
  build/mtserve serve --model en-fr=models/en-fr --model fr-en=models/fr-en --port 18777 --no-access-log
or wrap a command in tests/html/with_server.sh ({url} is replaced).
"""
import argparse
import http.client
import json
import math
import os
import random
import re
import subprocess
import sys
import threading
import time
import urllib.parse
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
INPUTS = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "inputs")


# ---- scores: the project's definitions (models/recipe/scores.py) ------------------------
sys.path.insert(0, os.path.join(ROOT, "models", "recipe"))
from scores import TOK, bleu, chrf  # noqa: E402


# ---- words ---------------------------------------------------------------------------------
STOP_EN = set("""a about above after again against all am an and any are aren't as at be because been
before being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
don't down during each few for from further had hadn't has hasn't have haven't having he her here hers
herself him himself his how i if in into is isn't it it's its itself just let's me more most mustn't my
myself no nor not now of off on once only or other ought our ours ourselves out over own same shan't she
should shouldn't so some such than that that's the their theirs them themselves then there these they
this those through to too under until up very was wasn't we were weren't what when where which while who
whom why will with won't would wouldn't you your yours yourself yourselves also may might must shall
one two via etc use used using see yes though although however therefore thus within without upon
either neither whether yet still already even ever every many much several like well""".split())
STOP_FR = set("""à a au aux avec ce ces cet cette dans de des du elle elles en et eux il ils je la le les
leur leurs lui ma mais me même mes moi mon ne nos notre nous on ou où par pas pour qu que qui sa se ses
son sur ta te tes toi ton tu un une vos votre vous c d j l m n s t y été étée étées étés étant suis es
est sommes êtes sont serai seras sera serons serez seront serais serait serions seriez seraient étais
était étions étiez étaient fus fut fûmes fûtes furent sois soit soyons soyez soient fusse fusses fût
fussions fussiez fussent ayant eu eue eues eus ai as avons avez ont aurai auras aura aurons aurez auront
aurais aurait aurions auriez auraient avais avait avions aviez avaient eut eûmes eûtes eurent aie aies
ait ayons ayez aient eusse eusses eût eussions eussiez eussent ceci cela celà cet cette ici ils les leurs
quel quels quelle quelles sans soi tout tous toute toutes très plus moins aussi ainsi comme donc dont
lors puis entre vers chez sous selon peut être fait faire cas""".split())


def stopwords(lang):
    """NLTK's list when its corpus is installed, else the small lists above."""
    try:
        from nltk.corpus import stopwords as sw
        return set(sw.words({"en": "english", "fr": "french"}[lang])) | {"en": STOP_EN, "fr": STOP_FR}[lang]
    except Exception:
        return {"en": STOP_EN, "fr": STOP_FR}[lang]


_EDGE = re.compile(r"^[\W_]+|[\W_]+$")
_WORD = re.compile(r"^[^\W\d_]+(?:['’\-][^\W\d_]+)*$")   # letters, inner ' ’ - allowed
_LETTERS = re.compile(r"^[^\W\d_]{3,}$")
_ELISION = re.compile(r"^(?:[ldjmnstc]|qu|jusqu|lorsqu|puisqu)['’]", re.I)


def strip_edges(s):
    return _EDGE.sub("", s)


def content(word, stop):
    return bool(_LETTERS.match(word)) and word.lower() not in stop


def ww(term, flags=0):
    """A regex matching term as whole words (inner whitespace: any run of it)."""
    body = r"\s+".join(re.escape(w) for w in term.split())
    return re.compile(r"(?<!\w)" + body + r"(?!\w)", flags)


def occurs(term, text, ci=False):
    return ww(term, re.I if ci else 0).search(text) is not None


def count_ci(term, text):
    return len(ww(term, re.I).findall(text))


# ---- HTTP ----------------------------------------------------------------------------------
class Http:
    """POST JSON with one keep-alive connection per thread."""

    def __init__(self, url, timeout=600):
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.timeout = u.hostname, u.port or 80, timeout
        self.local = threading.local()

    def _conn(self):
        c = getattr(self.local, "c", None)
        if c is None:
            c = self.local.c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return c

    def post(self, path, body):
        """(status, parsed JSON or text) -- status 0 on a connection failure."""
        data = json.dumps(body).encode()
        for attempt in (0, 1):
            c = self._conn()
            try:
                c.request("POST", path, data, {"Content-Type": "application/json"})
                r = c.getresponse()
                raw = r.read()
                try:
                    return r.status, json.loads(raw)
                except ValueError:
                    return r.status, raw.decode("utf-8", "replace")
            except (OSError, http.client.HTTPException) as e:
                c.close()
                self.local.c = None
                if attempt:
                    return 0, "%s: %s" % (type(e).__name__, e)


def request_body(e, src, tgt, beam, glossary=None, extra=None):
    b = {"text": e["source"], "source": src, "target": tgt, "beam_size": beam, "cache": False}
    if glossary is not None:
        b["glossary"] = glossary
    if extra:
        b.update(extra)
    return b


def reply_text(st, resp):
    if st == 200 and isinstance(resp, dict):
        try:
            return resp["translations"][0]["text"]
        except (KeyError, IndexError, TypeError):
            pass
    return None


def describe_error(st, resp):
    if isinstance(resp, dict):
        resp = resp.get("error", resp)
    return "HTTP %s %s" % (st, json.dumps(resp, ensure_ascii=False)[:300] if not isinstance(resp, str) else resp[:300])


# ---- build ---------------------------------------------------------------------------------
def read_lines(split, lang):
    with open(os.path.join(INPUTS, "%s.%s.txt" % (split, lang)), encoding="utf-8") as f:
        return [l.rstrip("\n") for l in f]


def translate_all(args, src, tgt, lines, beam):
    if args.url:
        h = Http(args.url)
        errs = []

        def one(line):
            if not line.strip():
                return ""
            st, resp = h.post("/translate", {"text": line, "source": src, "target": tgt,
                                             "beam_size": beam, "cache": False})
            t = reply_text(st, resp)
            if t is None:
                errs.append(describe_error(st, resp))
            return t
        with ThreadPoolExecutor(args.threads) as ex:
            out = list(ex.map(one, lines))
        if errs:
            sys.exit("translate: %d errors, first: %s" % (len(errs), errs[0]))
        return out
    model = os.path.join(ROOT, "models", "%s-%s" % (src, tgt))
    cmd = [args.mtserve, "translate", "--model", model, "--beam", str(beam), "--threads", str(args.threads)]
    run = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    out = run.stdout.split("\n")[:len(lines)]
    assert len(out) == len(lines), (len(out), len(lines))
    return out


# articles and the like, taken off the ends of a target term (other stopwords stay: "par défaut")
TRIM = {"en": {"the", "a", "an"},
        "fr": {"le", "la", "les", "un", "une", "des", "du", "de", "au", "aux"}}


def trim_target(t, lang):
    """A reference span as a target term: punctuation, articles and French elided articles off
    its ends ("valider des" -> "valider", "la coupure" -> "coupure", "l'architecture" ->
    "architecture")."""
    trim = TRIM[lang]
    while True:
        w = strip_edges(t).split()
        while w and (w[0].lower() in trim or not re.search(r"[^\W\d_]", w[0])):
            w = w[1:]
        while w and (w[-1].lower() in trim or not re.search(r"[^\W\d_]", w[-1])):
            w = w[:-1]
        u = strip_edges(" ".join(w))
        if lang == "fr":
            u = _ELISION.sub("", u)
        if u == t:
            return t
        t = u


def align2(al, en, fr):
    """The aligner's grow-diag-final-and links {(i en, j fr)} and the intersection of its two
    directional Viterbi alignments (the links both directions agree on)."""
    e, f = al.ven(en.split()), al.vfr(fr.split())
    a1 = al.ef.viterbi(e, f)
    a2 = {(i, j) for (j, i) in al.fe.viterbi(f, e)}
    return al.align(en, fr), a1 & a2


def candidates(sw, rw, links, sure, unforced, source, stop_s, stop_t, tgt_lang):
    """Every term a sentence offers: (src term, tgt term, (a, b) source words, (lo, hi) ref words)."""
    by_s, by_t = defaultdict(set), defaultdict(set)
    for i, j in links:
        by_s[i].add(j)
        by_t[j].add(i)
    out, seen = [], set()
    for a in range(len(sw)):
        for L in (1, 2, 3):
            b = a + L
            if b > len(sw):
                break
            term = strip_edges(" ".join(sw[a:b]))
            words = term.split()
            if len(words) != L or not all(_WORD.match(w) for w in words):
                continue
            if not content(words[0], stop_s) or not content(words[-1], stop_s):
                continue
            if not by_s[a] or not by_s[b - 1]:
                continue
            if sure is not None and not all(any((i, j) in sure for j in by_s[i]) for i in (a, b - 1)):
                continue
            J = set().union(*(by_s[i] for i in range(a, b)))
            lo, hi = min(J), max(J) + 1
            if hi - lo > 3 or J != set(range(lo, hi)):
                continue
            if any(not by_t[j] <= set(range(a, b)) for j in J):
                continue
            tterm = trim_target(" ".join(rw[lo:hi]), tgt_lang)
            tw = tterm.split()
            if not 1 <= len(tw) <= 3 or not any(content(w, stop_t) for w in tw):
                continue
            if not all(re.search(r"[^\W\d_]", w) and strip_edges(w) == w for w in tw):
                continue
            if count_ci(term, source) != 1:
                continue
            if any(occurs(tterm, u, ci=True) for u in unforced):
                continue
            if term.lower() in seen:
                continue
            seen.add(term.lower())
            out.append((term, tterm, (a, b), (lo, hi)))
    return out


def compatible(c, chosen):
    for d in chosen:
        if c[2][0] < d[2][1] and d[2][0] < c[2][1]:
            return False
        if c[3][0] < d[3][1] and d[3][0] < c[3][1]:
            return False
        if occurs(c[1], d[1], ci=True) or occurs(d[1], c[1], ci=True):
            return False
        if occurs(c[0], d[0], ci=True) or occurs(d[0], c[0], ci=True):
            return False
    return True


def cmd_build(args):
    from html_accuracy import Aligner  # noqa: E402 (needs python3-html5lib through tests/html)
    src, tgt = args.direction.split("-")
    t0 = time.monotonic()
    S, R = read_lines("test", src), read_lines("test", tgt)
    corpus = []
    for split in ("test", "dev"):
        corpus += [(e.strip(), f.strip()) for e, f in zip(read_lines(split, "en"), read_lines(split, "fr"))]
    beams = [int(b) for b in args.beams.split(",")]
    unforced = {}
    times = {}
    for b in beams:
        tb = time.monotonic()
        unforced[b] = translate_all(args, src, tgt, S, b)
        times["translate_beam%d" % b] = time.monotonic() - tb
        print("unforced beam %d: %d lines in %.1f s" % (b, len(S), times["translate_beam%d" % b]), flush=True)
    ta = time.monotonic()
    al = Aligner(corpus, iters=args.iters)
    times["align_train"] = time.monotonic() - ta
    print("aligner: %d pairs, %d iterations, %.1f s" % (len(corpus), args.iters, times["align_train"]), flush=True)

    tc = time.monotonic()
    stop_s, stop_t = stopwords(src), stopwords(tgt)
    cands, eligible, pool = {}, [], []
    for i, (s, r) in enumerate(zip(S, R)):
        sw, rw = s.split(), r.split()
        if not sw or not rw or len(sw) > args.max_words:
            continue
        pool.append(i)
        links, sure = align2(al, s, r) if src == "en" else [{(j, i2) for (i2, j) in x} for x in align2(al, r, s)]
        c = candidates(sw, rw, links, sure if args.sure else None, [unforced[b][i] for b in beams], s,
                       stop_s, stop_t, tgt)
        if c:
            cands[i] = c
            eligible.append(i)
    times["candidates"] = time.monotonic() - tc

    # each eligible sentence's terms: its candidates in a seeded random order, each kept when
    # compatible with those kept before, up to 3
    picks = {}
    for i in eligible:
        r = random.Random("%d:%s:%d" % (args.seed, args.direction, i))
        order = cands[i][:]
        r.shuffle(order)
        picked = []
        for c in order:
            if len(picked) < 3 and compatible(c, picked):
                picked.append(c)
        picks[i] = picked
    # how many terms a sentence gets: a third of the sentences 3, a third 2, the rest 1, as far
    # as the sentences offering that many allow (most offer 1), drawn with a seeded generator
    rng = random.Random("%d:%s" % (args.seed, args.direction))
    n = min(args.sentences, len(eligible))
    k_of = {}
    for k, share in ((3, n // 3), (2, (n - n // 3) // 2), (1, n)):
        avail = [i for i in eligible if i not in k_of and len(picks[i]) >= k]
        for i in rng.sample(avail, min(len(avail), share, n - len(k_of))):
            k_of[i] = k
    chosen_ids = sorted(k_of)
    chosen_set = set(chosen_ids)
    rest = [i for i in pool if i not in chosen_set]
    noterm_ids = sorted(rng.sample(rest, min(len(chosen_ids), len(rest))))

    def entry(i, kind):
        e = {"id": i, "kind": kind, "source": S[i], "reference": R[i], "unforced": unforced[beams[0]][i]}
        for b in beams[1:]:
            e["unforced_beam%d" % b] = unforced[b][i]
        return e

    entries, all_terms = [], []
    for i in chosen_ids:
        k, picked = k_of[i], picks[i]
        e = entry(i, "term")
        e["glossary"] = {c[0]: c[1] for c in picked[:k]}
        if len(picked) == 3:
            e["glossary3"] = {c[0]: c[1] for c in picked}
        e["spans"] = [{"src": c[0], "tgt": c[1], "src_words": list(c[2]), "ref_words": list(c[3])} for c in picked[:k]]
        entries.append(e)
        all_terms += [(c[0], c[1]) for c in picked[:k]]
    for i in eligible:       # more sentences with 3 terms, for `speed` only
        if i not in chosen_set and len(picks[i]) == 3:
            e = entry(i, "speed")
            e["glossary3"] = {c[0]: c[1] for c in picks[i]}
            entries.append(e)
    for i in noterm_ids:
        r = random.Random("%d:%s:noterm:%d" % (args.seed, args.direction, i))
        absent = {}
        for s_t, t_t in r.sample(all_terms, min(len(all_terms), 40)):
            if len(absent) == 3:
                break
            if not occurs(s_t, S[i], ci=True) and s_t not in absent:
                absent[s_t] = t_t
        e = entry(i, "noterm")
        e["glossary"] = {}
        e["absent_glossary"] = absent
        entries.append(e)
    entries.sort(key=lambda e: (["term", "noterm", "speed"].index(e["kind"]), e["id"]))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for e in entries:
            f.write(json.dumps(e, ensure_ascii=False) + "\n")
    times["total"] = time.monotonic() - t0

    terms = [e for e in entries if e["kind"] == "term"]
    dist = Counter(len(e["glossary"]) for e in terms)
    lens = Counter(len(k.split()) for e in terms for k in e["glossary"])
    print("%s: %d lines, %d of <= %d words, %d with a term candidate" % (args.direction, len(S), len(pool),
                                                                      args.max_words, len(eligible)))
    print("wrote %s: %d term sentences (%d terms; per sentence %s; source words per term %s; "
          "%d with glossary3), %d noterm sentences, %d more sentences with 3 terms for speed" % (
              args.out, len(terms), sum(dist[k] * k for k in dist), dict(sorted(dist.items())),
              dict(sorted(lens.items())), sum("glossary3" in e for e in terms),
              sum(e["kind"] == "noterm" for e in entries), sum(e["kind"] == "speed" for e in entries)))
    print("times: " + ", ".join("%s %.1f s" % kv for kv in times.items()))


# ---- run -----------------------------------------------------------------------------------
def load_terms(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def cmd_run(args):
    src, tgt = args.direction.split("-")
    entries = load_terms(args.terms)
    terms = [e for e in entries if e["kind"] == "term"]
    noterm = [e for e in entries if e["kind"] == "noterm"]
    h = Http(args.url)
    results = {"direction": args.direction, "terms_file": args.terms, "url": args.url,
               "bleu": "models/recipe/evaluate.py: nltk corpus_bleu on \\w+|[^\\w\\s] tokens, case-sensitive"
                       + ("" if _nltk_corpus_bleu else " (NLTK missing: its formula copied)"),
               "beams": {}}
    goal_ok = True
    n_err_total = 0
    for beam in [int(b) for b in args.beam.split(",")]:
        jobs = []
        for e in terms:
            jobs.append((e, "glossary", e["glossary"]))
            jobs.append((e, "plain", None))
        for e in noterm:
            jobs.append((e, "plain", None))
            jobs.append((e, "empty", {}))
            if e.get("absent_glossary"):
                jobs.append((e, "absent", e["absent_glossary"]))

        def one(job):
            e, kind, g = job
            st, resp = h.post("/translate", request_body(e, src, tgt, beam, g))
            return reply_text(st, resp), (None if reply_text(st, resp) is not None else describe_error(st, resp))

        t0 = time.monotonic()
        with ThreadPoolExecutor(args.threads) as ex:
            outs = list(ex.map(one, jobs))
        wall = time.monotonic() - t0
        out = defaultdict(dict)
        errors = Counter()
        first_err = {}
        for (e, kind, _), (text, err) in zip(jobs, outs):
            out[(e["kind"], e["id"])][kind] = text
            if err:
                errors[kind] += 1
                first_err.setdefault(kind, err)
        n_err_total += sum(errors.values())

        # recall
        pairs = cs = ci = cs_plain = 0
        per = []
        for e in terms:
            o = out[("term", e["id"])]
            g_out = o.get("glossary") or ""
            hit = {}
            for s_t, t_t in e["glossary"].items():
                pairs += 1
                a, b = occurs(t_t, g_out), occurs(t_t, g_out, ci=True)
                cs += a
                ci += b
                cs_plain += occurs(t_t, o.get("plain") or "")
                hit[s_t] = a
            per.append({"id": e["id"], "glossary": e["glossary"], "with": o.get("glossary"),
                        "without": o.get("plain"), "hits": hit})
        ok = [e for e in terms if out[("term", e["id"])].get("glossary") is not None
              and out[("term", e["id"])].get("plain") is not None]
        refs = [e["reference"] for e in ok]
        hyp_g = [out[("term", e["id"])]["glossary"] for e in ok]
        hyp_p = [out[("term", e["id"])]["plain"] for e in ok]
        hyp_u = [e["unforced"] for e in ok]
        sc = {
            "with_glossary": {"bleu": bleu(hyp_g, refs), "chrf2": chrf(hyp_g, refs)},
            "without_glossary": {"bleu": bleu(hyp_p, refs), "chrf2": chrf(hyp_p, refs)},
            "unforced_greedy_from_build": {"bleu": bleu(hyp_u, refs), "chrf2": chrf(hyp_u, refs)},
        }
        changed = sum(g != p for g, p in zip(hyp_g, hyp_p))
        plain_vs_build = sum(p != e.get("unforced" if beam == 1 else "unforced_beam%d" % beam, p)
                             for p, e in zip(hyp_p, ok))

        # byte identity
        ident = {"sentences": len(noterm), "empty_mismatch": 0, "empty_tested": 0, "absent_mismatch": 0,
                 "absent_tested": 0, "examples": []}
        for e in noterm:
            o = out[("noterm", e["id"])]
            if o.get("plain") is None:
                continue
            for kind in ("empty", "absent"):
                if o.get(kind) is None:      # not asked, or an HTTP error (counted above)
                    continue
                ident[kind + "_tested"] += 1
                if o[kind] != o["plain"]:
                    ident[kind + "_mismatch"] += 1
                    if len(ident["examples"]) < 5:
                        ident["examples"].append({"id": e["id"], "kind": kind, "plain": o["plain"], "got": o[kind]})

        res = {
            "beam": beam, "wall_s": wall, "requests": len(jobs),
            "errors": dict(errors), "first_errors": first_err,
            "term_sentences": len(terms), "scored_sentences": len(ok), "term_pairs": pairs,
            "recall_cs": cs / pairs if pairs else 0.0, "recall_ci": ci / pairs if pairs else 0.0,
            "recall_cs_without_glossary": cs_plain / pairs if pairs else 0.0,
            "scores": sc, "sentences_changed_by_glossary": changed,
            "plain_differs_from_build_unforced": plain_vs_build,
            "identity": ident, "per_sentence": per,
        }
        res["goal"] = {
            "recall_ge_99": res["recall_cs"] >= 0.99,
            "bleu_not_lower": sc["with_glossary"]["bleu"] >= sc["without_glossary"]["bleu"],
            "byte_identical": ident["empty_mismatch"] == 0 and ident["absent_mismatch"] == 0
                              and ident["empty_tested"] == len(noterm),
            "no_errors": not errors,
        }
        goal_ok &= all(res["goal"].values())
        results["beams"][str(beam)] = res

        print("%s beam %d: %d term sentences (%d terms), %d noterm, %d requests in %.1f s" % (
            args.direction, beam, len(terms), pairs, len(noterm), len(jobs), wall))
        for kind, n in sorted(errors.items()):
            print("  ERRORS %-8s %d, first: %s" % (kind, n, first_err[kind]))
        print("  term recall   cs %6.2f%%  ci %6.2f%%   (without glossary: cs %.2f%%)" % (
            100 * res["recall_cs"], 100 * res["recall_ci"], 100 * res["recall_cs_without_glossary"]))
        print("  %-28s %7s %7s" % ("on %d sentences" % len(ok), "BLEU", "chrF2"))
        for k, v in sc.items():
            print("  %-28s %7.2f %7.2f" % (k, v["bleu"], v["chrf2"]))
        print("  outputs changed by the glossary: %d; no-glossary output != build's unforced: %d" % (
            changed, plain_vs_build))
        print("  byte identity (noterm): {} mismatches %d/%d, absent-terms glossary mismatches %d/%d" % (
            ident["empty_mismatch"], ident["empty_tested"], ident["absent_mismatch"], ident["absent_tested"]))
        print("  goal: " + ", ".join("%s %s" % (k, "PASS" if v else "FAIL") for k, v in res["goal"].items()))
    results["goal_met"] = goal_ok
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(results, f, ensure_ascii=False, indent=1)
        print("wrote %s" % args.out)
    if n_err_total:
        sys.exit(2)
    if args.check and not goal_ok:
        sys.exit(1)


# ---- speed ---------------------------------------------------------------------------------
def cmd_speed(args):
    src, tgt = args.direction.split("-")
    entries = [e for e in load_terms(args.terms) if e["kind"] in ("term", "speed") and len(e.get("glossary3", {})) == 3]
    entries.sort(key=lambda e: e["id"])
    if not entries:
        sys.exit("speed: no sentence of %s has 3 compatible terms (glossary3)" % args.terms)
    entries = entries[:args.n]
    h = Http(args.url)
    note = []
    if len(entries) < args.n:
        note.append("only %d sentences have 3 terms" % len(entries))

    def glossary_for(e, k):
        if k == 0:
            return None
        return dict(list(e["glossary3"].items())[:k])

    counted = {"how": "reply tokens"}

    def one(e, k, beam):
        t = time.monotonic()
        st, resp = h.post("/translate", request_body(e, src, tgt, beam, glossary_for(e, k), {"return_tokens": True}))
        dt = time.monotonic() - t
        text = reply_text(st, resp)
        if text is None:
            return None, dt, describe_error(st, resp)
        tr = resp["translations"][0]
        if "tokens" in tr:
            n = len(tr["tokens"])
        else:
            counted["how"] = "words of the output (the reply has no tokens)"
            n = len(text.split())
        return n, dt, None

    for _ in range(4):  # warm up
        one(entries[0], 0, 1)
    results = {"direction": args.direction, "sentences": len(entries), "settings": []}
    print("%s speed on %d sentences (%s), median of %d interleaved reps, load average %.2f%s" % (
        args.direction, len(entries), args.terms, args.reps, os.getloadavg()[0], "; " + "; ".join(note) if note else ""))
    results["load_average_at_start"] = os.getloadavg()
    print("  %-6s %-8s %-5s %9s %8s %9s %9s %6s" % ("beam", "clients", "terms", "tokens/s", "req/s", "p50 ms",
                                                   "p90 ms", "errors"))
    def measure(beam, clients, k):
        work = entries * (1 if clients == 1 else args.rounds)
        t0 = time.monotonic()
        if clients == 1:
            outs = [one(e, k, beam) for e in work]
        else:
            with ThreadPoolExecutor(clients) as ex:
                outs = list(ex.map(lambda e: one(e, k, beam), work))
        wall = time.monotonic() - t0
        good = [o for o in outs if o[0] is not None]
        errs = [o[2] for o in outs if o[2]]
        return {"requests": len(work), "ok": len(good), "errors": len(errs), "first_error": errs[0] if errs else None,
                "tokens": sum(o[0] for o in good), "wall_s": wall, "latencies": sorted(o[1] for o in good) or [0.0]}

    # every setting --reps times, the settings interleaved (rotated each rep) so that a change of
    # the machine's load spreads over all of them; the median rep is reported
    settings = [(beam, clients, k) for beam in [int(b) for b in args.beam.split(",")]
                for clients in (1, args.clients) for k in [int(x) for x in args.terms_per_sentence.split(",")]]
    reps = defaultdict(list)
    for rep in range(args.reps):
        rot = rep % len(settings)
        for st in settings[rot:] + settings[:rot]:
            reps[st].append(measure(*st))
    for st in settings:
        beam, clients, k = st
        runs = sorted(reps[st], key=lambda m: m["tokens"] / m["wall_s"])
        m = runs[len(runs) // 2]
        lat = m["latencies"]
        errs = sum(x["errors"] for x in runs)
        r = {"beam": beam, "clients": clients, "terms": k, "requests": m["requests"], "ok": m["ok"],
             "errors": errs, "first_error": next((x["first_error"] for x in runs if x["first_error"]), None),
             "tokens": m["tokens"], "wall_s": m["wall_s"], "tokens_per_s": m["tokens"] / m["wall_s"],
             "requests_per_s": m["ok"] / m["wall_s"], "p50_ms": 1e3 * lat[len(lat) // 2],
             "p90_ms": 1e3 * lat[int(len(lat) * 0.9)],
             "tokens_per_s_reps": [x["tokens"] / x["wall_s"] for x in reps[st]]}
        results["settings"].append(r)
        print("  %-6d %-8d %-5d %9.1f %8.2f %9.1f %9.1f %6d   reps %s" % (
            beam, clients, k, r["tokens_per_s"], r["requests_per_s"], r["p50_ms"], r["p90_ms"], errs,
            " ".join("%.0f" % x for x in r["tokens_per_s_reps"])), flush=True)
        if r["first_error"]:
            print("    first error: %s" % r["first_error"])
    base = {(r["beam"], r["clients"]): r["tokens_per_s"] for r in results["settings"] if r["terms"] == 0}
    for r in results["settings"]:
        if (r["beam"], r["clients"]) in base and base[(r["beam"], r["clients"])]:
            r["relative_to_0_terms"] = r["tokens_per_s"] / base[(r["beam"], r["clients"])]
    results["tokens_counted_as"] = counted["how"]
    print("  tokens: %s" % counted["how"])
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(results, f, ensure_ascii=False, indent=1)
        print("wrote %s" % args.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="make a term test set")
    b.add_argument("--direction", choices=["en-fr", "fr-en"], required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--url", help="a running server (default: build/mtserve translate)")
    b.add_argument("--mtserve", default=os.path.join(ROOT, "build", "mtserve"))
    b.add_argument("--threads", type=int, default=8, help="requests in flight (or mtserve translate --threads)")
    b.add_argument("--beams", default="1,4", help="unforced decodes the target terms must be absent from")
    b.add_argument("--sentences", type=int, default=400)
    b.add_argument("--max-words", type=int, default=40)
    b.add_argument("--iters", type=int, default=5, help="aligner EM iterations (html_accuracy.py's default)")
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--sure", type=int, default=1, help="1: the first and last source words of a term need "
                   "a link both alignment directions agree on (fewer alignment errors); 0: off")
    r = sub.add_parser("run", help="term recall, BLEU, byte identity")
    r.add_argument("--direction", choices=["en-fr", "fr-en"], required=True)
    r.add_argument("--terms", required=True)
    r.add_argument("--url", required=True)
    r.add_argument("--beam", default="1", help="1, 4 or 1,4")
    r.add_argument("--threads", type=int, default=8)
    r.add_argument("--out")
    r.add_argument("--check", action="store_true", help="exit 1 when a goal is not met")
    s = sub.add_parser("speed", help="tokens/s with 0, 1, 3 terms a sentence")
    s.add_argument("--direction", choices=["en-fr", "fr-en"], required=True)
    s.add_argument("--terms", required=True)
    s.add_argument("--url", required=True)
    s.add_argument("--n", type=int, default=128, help="sentences (those with 3 terms)")
    s.add_argument("--beam", default="1")
    s.add_argument("--clients", type=int, default=32)
    s.add_argument("--rounds", type=int, default=2, help="passes over the sentences with concurrent clients")
    s.add_argument("--terms-per-sentence", default="0,1,3")
    s.add_argument("--reps", type=int, default=3, help="measurements of each setting (median reported)")
    s.add_argument("--out")
    a = ap.parse_args()
    {"build": cmd_build, "run": cmd_run, "speed": cmd_speed}[a.cmd](a)


if __name__ == "__main__":
    main()
