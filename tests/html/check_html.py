#!/usr/bin/python3
"""tests/html/check_html.py URL SNIPPETS.jsonl [--lt-every 4] [--only ID] [--max-depth N] [--frozen-head]

Checks a running mtserve's `format: "html"` (issue 27) on every snippet of SNIPPETS.jsonl
(tests/html/gen_snippets.py), with html5lib (Debian's python3-html5lib) as the independent
parser.  Every snippet goes through the JSON API ({"text", "source", "target", "format":
"html"}); every --lt-every'th also through the LibreTranslate shape ({"q", ...} ->
{"translatedText"}).  For each output:

  parses       the output parses without an html5lib parse error when the input had none
  fragment     a fragment's output is a fragment (no html/head/body tag added)
  elements     the same elements (tag names, every attribute but title/alt/placeholder by
               value, those by name) in the same pre-order with the same depths
  notranslate  script, style, pre, textarea, svg, math, template and translate="no" /
               class="notranslate" subtrees: the same names, attributes, text and comments;
               the snippet's `verbatim` byte strings appear unchanged; comments unchanged;
               the doctype unchanged
  units        each translation unit's output text (whitespace-collapsed, notranslate text left
               out) equals the server's plain-text translation (whitespace-collapsed: the model
               sometimes writes two spaces) of the unit's input text (POST
               /translate, same pair, default settings); an empty or whitespace-only unit is
               byte-identical; a unit's leading and trailing whitespace are kept; an inline
               notranslate element stays in its unit
  attributes   title/alt/placeholder: the output value (collapsed) equals the plain-text
               translation of the input value (collapsed)

Then bad input: nesting deeper than the server's limit (read from /openapi.json or /health,
else 100000 nested <b>) gets a 400 with a JSON error naming the limit, quickly; the
quadratic case of HTML5 tree building (nested <div>s filling the body limit) is answered
quickly; a body over the size limit gets 413 (or 400) with JSON; the server still answers.

Prints each failure with its snippet and a last line `html-check: N passed, M failed`; exits
1 on any failure.
"""
import argparse
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import html_units as hu  # noqa: E402


# ---- HTTP --------------------------------------------------------------------------------
class Client:
    def __init__(self, url, timeout=120):
        self.url = url.rstrip("/")
        self.timeout = timeout

    def request(self, method, path, body=None, timeout=None, raw=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data is not None else {})
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def json(self, method, path, body=None, **kw):
        st, b = self.request(method, path, body, **kw)
        try:
            return st, json.loads(b)
        except ValueError:
            return st, b


class Translator:
    """The server's plain-text translations, cached; many texts in one request."""

    def __init__(self, client):
        self.c = client
        self.cache = {}
        self.requests = 0

    def prefetch(self, src, tgt, texts):
        todo = sorted({t for t in texts if (src, tgt, t) not in self.cache})
        for i in range(0, len(todo), 16):
            chunk = todo[i:i + 16]
            st, r = self.c.json("POST", "/translate", {"text": chunk, "source": src, "target": tgt})
            self.requests += 1
            if st != 200:
                raise RuntimeError("plain-text /translate answered %d: %r" % (st, r))
            for t, tr in zip(chunk, r["translations"]):
                self.cache[(src, tgt, t)] = tr["text"]

    def __call__(self, src, tgt, text):
        if (src, tgt, text) not in self.cache:
            self.prefetch(src, tgt, [text])
        return self.cache[(src, tgt, text)]


def translate_html(client, rec, shape):
    """(output, error, refused): refused when the record expects a refusal and got it."""
    expect = str(rec.get("expect", 200)).split("|")
    body = {"text" if shape == "json" else "q": rec["html"], "source": rec["source"], "target": rec["target"],
            "format": "html"}
    st, r = client.json("POST", "/translate", body)
    if st != 200:
        if str(st) in expect and isinstance(r, dict) and "error" in r:
            return None, None
        return None, "%s answered %d (expected %s): %s" % ("JSON API" if shape == "json" else "LibreTranslate shape",
                                                           st, "|".join(expect), str(r)[:300])
    if "200" not in expect:
        return None, "answered 200, expected %s" % "|".join(expect)
    if shape == "json":
        if not isinstance(r, dict) or "translations" not in r:
            return None, "JSON API answered %d: %s" % (st, str(r)[:300])
        return r["translations"][0]["text"], None
    if not isinstance(r, dict) or "translatedText" not in r:
        return None, "LibreTranslate shape answered %d: %s" % (st, str(r)[:300])
    return r["translatedText"], None


# ---- the checks --------------------------------------------------------------------------
def unit_texts(html, frozen_block):
    root, _ = hu.parse(html, frozen_block=frozen_block)
    return [u.text for u in hu.units(root) if u.translatable]


def check_output(rec, out, tr, frozen_block):
    """Every guarantee on one output; returns a list of (check, detail)."""
    fails = []
    src, tgt, html = rec["source"], rec["target"], rec["html"]
    fragment = not hu.is_full_document(html)
    in_root, in_err = hu.parse(html, fragment, frozen_block)
    out_root, out_err = hu.parse(out, fragment, frozen_block)

    if not in_err and out_err:
        fails.append(("parses", "html5lib parse errors in the output: %s" % out_err[:3]))
    if fragment and re.search(r"<\s*/?\s*(html|head|body)\b", out, re.I):
        fails.append(("fragment", "a fragment's output has an html/head/body tag"))

    sig_in, sig_out = hu.signature(in_root), hu.signature(out_root)
    if sig_in != sig_out:
        for i, (a, b) in enumerate(zip(sig_in, sig_out)):
            if a != b:
                fails.append(("elements", "element %d: input %r, output %r" % (i, a, b)))
                break
        else:
            fails.append(("elements", "%d elements in the input, %d in the output" % (len(sig_in), len(sig_out))))
        return fails  # the rest compares element by element

    # kept subtrees, verbatim bytes, comments, doctype
    out_elems = hu.elements(out_root)
    for idx, n in hu.kept_subtrees(in_root).items():
        if hu.subtree_dump(n) != hu.subtree_dump(out_elems[idx]):
            fails.append(("notranslate", "<%s> (element %d) changed: %r -> %r" % (
                n.name, idx, hu.text_of(n)[:80], hu.text_of(out_elems[idx])[:80])))
    for v in rec.get("verbatim", []):
        if out.count(v) < html.count(v):
            fails.append(("notranslate", "not byte-identical in the output: %r" % v[:120]))
    if sorted(hu.comments(in_root)) != sorted(hu.comments(out_root)):
        fails.append(("notranslate", "comments %r -> %r" % (hu.comments(in_root), hu.comments(out_root))))
    m = re.search(r"<!doctype[^>]*>", html, re.I)
    if m and m.group(0) not in out:
        fails.append(("notranslate", "doctype %r not in the output" % m.group(0)))

    # translated attributes
    out_attrs = {(i, a): v for (i, a, v) in hu.translatable_attrs(out_root)}
    for (i, a, v) in hu.translatable_attrs(in_root):
        got = out_attrs.get((i, a))
        want = hu.collapse(tr(src, tgt, hu.collapse(v)))
        if got is None or hu.collapse(got) != want:
            fails.append(("attributes", "%s of element %d: %r -> %r, plain translation %r" % (a, i, v, got, want)))

    # units: the runs of inline content, matched by where they are
    u_in = {u.key: u for u in hu.units(in_root)}
    u_out = {u.key: u for u in hu.units(out_root)}
    for key in sorted(set(u_in) | set(u_out)):
        a, b = u_in.get(key), u_out.get(key)
        if a is None or b is None:
            x = a or b
            if x.full_raw or x.opaque:
                fails.append(("units", "a run (%r) only in the %s" % (x.full_raw[:60], "input" if b is None else "output")))
            continue
        if not a.translatable:
            if b.full_raw != a.full_raw:
                fails.append(("units", "blank run %r -> %r" % (a.full_raw, b.full_raw)))
            continue
        want = hu.collapse(tr(src, tgt, a.text))   # HTML whitespace runs are one space to a reader
        if b.text != want:
            fails.append(("units", "%r -> %r, plain translation %r" % (a.text, b.text, want)))
        if hu.lead_ws(a.full_raw) != hu.lead_ws(b.full_raw) or hu.trail_ws(a.full_raw) != hu.trail_ws(b.full_raw):
            fails.append(("whitespace", "%r: whitespace around it %r...%r -> %r...%r" % (
                a.text[:40], hu.lead_ws(a.full_raw), hu.trail_ws(a.full_raw), hu.lead_ws(b.full_raw), hu.trail_ws(b.full_raw))))
        if sorted(map(str, a.opaque)) != sorted(map(str, b.opaque)):
            fails.append(("units", "%r: opaque items %r -> %r" % (a.text[:40], a.opaque, b.opaque)))
    return fails


def self_check(rec, frozen_block):
    """The checker's reading of the snippet agrees with the generator's record (made with
    the issue's rules: not with --frozen-head on a document)."""
    if "head" in frozen_block and rec.get("kind") == "document":
        return []
    got = unit_texts(rec["html"], frozen_block)
    want = [u["text"] for u in rec.get("units", [])]
    if "units" in rec and got != want:
        return [("checker", "units read %r, generator's %r (html_units or the generator)" % (got, want))]
    return []


# ---- bad input ---------------------------------------------------------------------------
def find_limit(obj, words):
    """A number under a key naming one of words, anywhere in a JSON document."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            kl = k.lower()
            if any(w in kl for w in words):
                if isinstance(v, int) and not isinstance(v, bool):
                    return v
                if isinstance(v, dict):
                    for kk in ("maximum", "default", "value", "limit"):
                        if isinstance(v.get(kk), int):
                            return v[kk]
            r = find_limit(v, words)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = find_limit(v, words)
            if r is not None:
                return r
    return None


def discover_limits(c):
    limits = {}
    for path in ("/health", "/openapi.json"):
        st, doc = c.json("GET", path)
        if st != 200 or not isinstance(doc, (dict, list)):
            continue
        if "depth" not in limits:
            d = find_limit(doc, ("depth", "nesting"))
            if d:
                limits["depth"] = (d, path)
        if "body" not in limits:
            b = find_limit(doc, ("max_body", "maxbody", "body_limit", "max-body"))
            if b:
                limits["body"] = (b, path)
    return limits


def error_json(body):
    try:
        j = json.loads(body)
    except ValueError:
        return None
    return j if isinstance(j, dict) and "error" in j else None


def bad_input(c, fast_s, max_depth=None, probe_timeout=30.0):
    """[(name, ok, detail)]"""
    res = []
    limits = discover_limits(c)
    if max_depth:
        limits["depth"] = (max_depth, "--max-depth")
    depth, where = limits.get("depth", (None, None))

    def post_html(html, timeout=probe_timeout):
        body = json.dumps({"text": html, "source": "en", "target": "fr", "format": "html"}).encode()
        t0 = time.monotonic()
        try:
            st, b = c.request("POST", "/translate", raw=body, timeout=timeout)
        except Exception as e:  # timeout, reset
            return None, str(e).encode(), time.monotonic() - t0
        return st, b, time.monotonic() - t0

    if depth:
        n = depth + 1
        st, b, dt = post_html("<b>" * n + "x")
        j = error_json(b)
        ok = st == 400 and j is not None and str(depth) in json.dumps(j)
        res.append(("depth %d+1 nested <b> (limit %d from %s) -> 400 naming the limit" % (depth, depth, where), ok,
                    "status %s in %.2f s: %s" % (st, dt, b[:200])))
        res.append(("depth %d+1 answered within %.0f s" % (depth, fast_s), dt < fast_s, "%.2f s" % dt))
        inner = max(1, depth - 3)
        st, b, dt = post_html("<p>" + "<b>" * inner + "This package provides a library." + "</b>" * inner + "</p>")
        res.append(("depth %d (under the limit) -> 200" % inner, st == 200, "status %s: %s" % (st, b[:200])))
    else:
        st, b, dt = post_html("<b>" * 100000 + "x")
        j = error_json(b)
        ok = st == 400 and j is not None and re.search(r"\d", json.dumps(j)) is not None and \
            re.search(r"depth|nest", json.dumps(j), re.I) is not None
        res.append(("100000 nested <b> (no published limit) -> 400 naming the limit", ok,
                    "status %s in %.2f s: %s" % (st, dt, b[:200])))
        res.append(("100000 nested <b> answered within %.0f s" % fast_s, dt < fast_s, "%.2f s" % dt))

    # HTML5 tree building is quadratic on nested <div>s (each start tag looks for a <p> in
    # button scope through the whole stack): the body limit's worth of them must not cost
    # the server seconds.  gumbo 0.10.1: 100000 nested <div>s take ~20 s.
    body_limit = limits.get("body", (1 << 20, "default"))[0]
    n = (body_limit - 200) // 5
    st, b, dt = post_html("<div>" * n)
    res.append(("%d unclosed nested <div> (a body-limit's worth) answered within %.0f s" % (n, fast_s),
                st is not None and dt < fast_s and st in (400, 413), "status %s in %.2f s: %s" % (st, dt, b[:160])))

    # a body over the size limit
    big = json.dumps({"text": "<p>" + "word " * (body_limit // 5 + 1000) + "</p>", "source": "en",
                      "target": "fr", "format": "html"}).encode()
    t0 = time.monotonic()
    try:
        st, b = c.request("POST", "/translate", raw=big, timeout=120)
    except Exception as e:
        st, b = None, str(e).encode()
    res.append(("body of %d bytes (limit %d) -> 413 or 400 with JSON" % (len(big), body_limit),
                st in (413, 400) and error_json(b) is not None, "status %s in %.2f s: %s" % (st, time.monotonic() - t0, b[:200])))

    # bytes that are not UTF-8 inside the JSON string
    raw = b'{"text": "<p>caf\xe9 <b>\xff\xfe</b> ok</p>", "source": "en", "target": "fr", "format": "html"}'
    st, b = c.request("POST", "/translate", raw=raw)
    res.append(("invalid UTF-8 in the body -> 400 with JSON", st == 400 and error_json(b) is not None,
                "status %s: %s" % (st, b[:200])))

    # still alive
    st, _ = c.request("GET", "/health")
    st2, r = c.json("POST", "/translate", {"text": "<p>It is <b>free</b> software.</p>", "source": "en",
                                           "target": "fr", "format": "html"})
    res.append(("server answers afterwards", st == 200 and st2 == 200, "health %s, translate %s %s" % (st, st2, str(r)[:200])))
    return res


# ---- main --------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("snippets")
    ap.add_argument("--lt-every", type=int, default=4, help="every N-th snippet also through the LibreTranslate shape")
    ap.add_argument("--only", help="check only the snippet with this id")
    ap.add_argument("--frozen-head", action="store_true", help="<head> is not translated (html.c's FROZEN_BLOCK)")
    ap.add_argument("--max-depth", type=int, help="the server's --max-html-depth, when it does not publish it")
    ap.add_argument("--no-bad-input", action="store_true")
    ap.add_argument("--fast", type=float, default=5.0, help="seconds within which bad input must be answered")
    ap.add_argument("--probe-timeout", type=float, default=30.0,
                    help="seconds the client waits on a bad-input probe before counting it unanswered")
    ap.add_argument("--save", help="write every output here (JSONL)")
    ap.add_argument("--concurrency", type=int, default=4,
                    help="then every snippet again from this many clients at once, and in lists of 5: same outputs")
    args = ap.parse_args()

    frozen_block = set(hu.FROZEN_BLOCK) | ({"head"} if args.frozen_head else set())
    c = Client(args.url)
    tr = Translator(c)
    recs = [json.loads(l) for l in open(args.snippets, encoding="utf-8")]
    if args.only:
        recs = [r for r in recs if r["id"] == args.only]

    # every plain-text translation the checks will need, in few requests
    need = {}
    for r in recs:
        if "200" not in str(r.get("expect", 200)):
            continue
        root, _ = hu.parse(r["html"], frozen_block=frozen_block)
        texts = [u.text for u in hu.units(root) if u.translatable]
        texts += [hu.collapse(v) for (_, _, v) in hu.translatable_attrs(root) if hu.collapse(v)]
        need.setdefault((r["source"], r["target"]), []).extend(texts)
    for (s, t), texts in need.items():
        tr.prefetch(s, t, texts)

    passed = failed = 0
    by_check = {}
    lt_same = lt_total = 0
    saved = open(args.save, "w", encoding="utf-8") if args.save else None
    t0 = time.monotonic()
    for i, rec in enumerate(recs):
        fails = self_check(rec, frozen_block)
        shapes = ["json"] + (["lt"] if args.lt_every and i % args.lt_every == 0 else [])
        outs = {}
        for shape in shapes:
            out, err = translate_html(c, rec, shape)
            if err:
                fails.append(("answer", err))
                continue
            if out is None:     # the refusal it expected
                continue
            outs[shape] = out
            fails += [(chk if shape == "json" else "lt " + chk, d) for chk, d in check_output(rec, out, tr, frozen_block)]
        if "json" in outs and "lt" in outs:
            lt_total += 1
            lt_same += outs["json"] == outs["lt"]
        if saved:
            saved.write(json.dumps({"id": rec["id"], "out": outs.get("json"), "lt": outs.get("lt")}, ensure_ascii=False) + "\n")
        if fails:
            failed += 1
            print("FAIL %s (%s, %s-%s)" % (rec["id"], rec["kind"] + (": " + rec["name"] if "name" in rec else ""),
                                          rec["source"], rec["target"]))
            for chk, d in fails:
                by_check[chk] = by_check.get(chk, 0) + 1
                print("  [%s] %s" % (chk, d))
            print("  input:  %r" % rec["html"][:600])
            if "json" in outs:
                print("  output: %r" % outs["json"][:600])
        else:
            passed += 1
    dt = time.monotonic() - t0

    # the same outputs from concurrent clients (continuous batching) and as lists of pages
    if args.concurrency > 1 and not args.only:
        import concurrent.futures
        singles = {}
        for rec in recs:
            if "200" in str(rec.get("expect", 200)) and "expect" not in rec:
                singles[rec["id"]] = rec

        def one(rec):
            st, r = Client(args.url).json("POST", "/translate", {"text": rec["html"], "source": rec["source"],
                                                                 "target": rec["target"], "format": "html"})
            return rec["id"], (r["translations"][0]["text"] if st == 200 else "status %d" % st)
        seq = {}
        for rec in singles.values():
            seq[rec["id"]] = one(rec)[1]
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as ex:
            conc = dict(ex.map(one, singles.values()))
        diff = [i for i in singles if conc[i] != seq[i]]
        groups = {}
        for rec in singles.values():
            groups.setdefault((rec["source"], rec["target"]), []).append(rec)
        ldiff = []
        for (s_, t_), rs in groups.items():
            for k in range(0, len(rs), 5):
                chunk = rs[k:k + 5]
                st, r = c.json("POST", "/translate", {"text": [x["html"] for x in chunk], "source": s_, "target": t_,
                                                      "format": "html"})
                got = [x["text"] for x in r["translations"]] if st == 200 else ["status %d" % st] * len(chunk)
                ldiff += [x["id"] for x, g in zip(chunk, got) if g != seq[x["id"]]]
        for name, d in (("%d concurrent clients" % args.concurrency, diff), ("lists of 5 pages", ldiff)):
            ok = not d
            print("%s batching: %s give the same outputs as one at a time (%d differ%s)" % (
                "ok  " if ok else "FAIL", name, len(d), (": " + ", ".join(d[:8])) if d else ""))
            passed += ok
            failed += not ok
            if not ok:
                by_check["batching"] = by_check.get("batching", 0) + 1
    print("snippets: %d checked in %.1f s (%d plain-text requests); LibreTranslate shape identical to the JSON API "
          "on %d/%d" % (len(recs), dt, tr.requests, lt_same, lt_total))

    if not args.no_bad_input and not args.only:
        for name, ok, detail in bad_input(c, args.fast, args.max_depth, args.probe_timeout):
            print("%s bad input: %s (%s)" % ("ok  " if ok else "FAIL", name, detail))
            if ok:
                passed += 1
            else:
                failed += 1
                by_check["bad input"] = by_check.get("bad input", 0) + 1
    if by_check:
        print("failures by check: " + ", ".join("%s %d" % kv for kv in sorted(by_check.items())))
    print("html-check: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
