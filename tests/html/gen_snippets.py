#!/usr/bin/python3
"""tests/html/gen_snippets.py OUT.jsonl [--seed 27] [--en-fr 200] [--fr-en 80]

A deterministic set of HTML snippets for `format: "html"` (issue 27), made from the committed
test split (tests/fixtures/tokenizer/inputs/test.en.txt for en->fr, test.fr.txt for fr->en),
one JSON object a line.  The output is a test artefact: write it under a build directory,
never commit it.

Each record:
  id, source, target, kind     the pair and what the snippet exercises
  html                         the snippet (a fragment, or a whole document for kind "document")
  lines                        test-split line numbers (0-based) of the sentences used
  units                        [{"text", "line"}]: the expected translation units, in order,
                               non-empty ones only (text: whitespace-collapsed, notranslate parts
                               left out; line: the test line it equals exactly, else null); the
                               checker checks its own reading of the snippet against this
  attr_units                   [{"elem", "attr", "text"}]: title/alt/placeholder values to translate
  spans                        [{"elem", "tag", "unit", "words": [start, end)}]: for each inline
                               element around words, the source words it wraps (word positions in
                               its unit's text; elem: the element's pre-order index in html5lib's
                               parse of the snippet) -- what bench/html_accuracy.py scores
  verbatim                     exact byte strings of the snippet that must appear unchanged in the
                               output (scripts, styles, pre, notranslate parts, comments)

Kinds: inline1, inline2, link, nested, edges (tag at start/end/whole sentence), entities,
notranslate_inline, notranslate_block, attrs, blocks, br, empty, whitespace, comments, verbatim
(script/style/pre/textarea), foreign (svg/math/template), quirks (uppercase, unquoted attributes,
unclosed p/li, misnested b/i), document (doctype + html/head/body); then (unless --no-broken)
kind "broken": the broken-markup cases of bench/html_parsers.py (no units or spans recorded;
"expect": 400 on the ones nesting too deep), and kind "page": two real pages (tests/fixtures/html, from /usr/share/doc)
(the server needs --max-tokens 20000 for them).
"""
import argparse
import html
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import html_units as hu  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INPUTS = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "inputs")

INLINE_TAGS = ["b", "i", "em", "strong", "span", "code"]
KINDS = ["inline1", "inline2", "link", "nested", "edges", "entities", "notranslate_inline",
         "notranslate_block", "attrs", "blocks", "br", "empty", "whitespace", "comments",
         "verbatim", "foreign", "quirks", "document"]

ENTITY_NAMES = {"é": "&eacute;", "è": "&egrave;", "à": "&agrave;", "ç": "&ccedil;", "ê": "&ecirc;",
                "ù": "&ugrave;", "ô": "&ocirc;", "É": "&Eacute;", "î": "&icirc;"}


def esc(s):
    return html.escape(s, quote=False)


def esc_attr(s):
    return html.escape(s, quote=True)


class Builder:
    """Collects one snippet: its html pieces, expected units, spans and verbatim parts."""

    def __init__(self):
        self.html = []
        self.units = []       # (text, line)
        self.attr_units = []  # (gid, attr, text)
        self.spans = []       # (gid, tag, unit number, start, end)
        self.verbatim = []
        self.lines = []
        self.gid = 0

    def add(self, s):
        self.html.append(s)

    def marker(self):
        self.gid += 1
        return ' data-gid="%d"' % self.gid, self.gid

    def verb(self, s):
        self.verbatim.append(s)
        self.add(s)

    def sentence(self, words, line, tags=(), unit_text=None, text_esc=esc):
        """The words of one unit with inline tags around word ranges.  tags: (start, end,
        tag name, attribute string), properly nested or disjoint, start < end.  Returns the
        unit's html (not added)."""
        opens = {}
        closes = {}
        unit_no = len(self.units)
        for (s, e, tag, attrs) in sorted(tags, key=lambda t: (t[0], -t[1])):
            m, gid = self.marker()
            opens.setdefault(s, []).append("<%s%s%s>" % (tag, attrs, m))
            closes.setdefault(e - 1, []).insert(0, "</%s>" % tag)
            self.spans.append((gid, tag, unit_no, s, e))
        out = []
        for k, w in enumerate(words):
            piece = "".join(opens.get(k, [])) + text_esc(w) + "".join(closes.get(k, []))
            out.append(piece)
        text = unit_text if unit_text is not None else " ".join(words)
        self.units.append((text, line if text == " ".join(words) and unit_text is None else None))
        if line is not None:
            self.lines.append(line)
        return " ".join(out)


class Gen:
    def __init__(self, lines, rng):
        self.lines = lines
        self.rng = rng
        self.pool = [k for k, l in enumerate(lines) if 5 <= len(l.split()) <= 25]
        self.short = [k for k, l in enumerate(lines) if 3 <= len(l.split()) <= 10]

    def pick(self, short=False):
        k = self.rng.choice(self.short if short else self.pool)
        return k, self.lines[k].split()

    def span(self, n, maxlen=4):
        ln = self.rng.randint(1, min(maxlen, n))
        s = self.rng.randint(0, n - ln)
        return s, s + ln

    def two_spans(self, n):
        while True:
            a = self.span(n, 3)
            b = self.span(n, 3)
            if a[1] <= b[0] or b[1] <= a[0]:
                return sorted([a, b])

    # ---- kinds ---------------------------------------------------------------------------
    def inline1(self, b):
        k, w = self.pick()
        tag = self.rng.choice(INLINE_TAGS)
        s, e = self.span(len(w))
        b.add("<p>%s</p>" % b.sentence(w, k, [(s, e, tag, "")]))

    def inline2(self, b):
        k, w = self.pick()
        (s1, e1), (s2, e2) = self.two_spans(len(w))
        t1, t2 = self.rng.sample(INLINE_TAGS, 2)
        b.add("<p>%s</p>" % b.sentence(w, k, [(s1, e1, t1, ""), (s2, e2, t2, ' class="x"')]))

    def link(self, b):
        k, w = self.pick()
        s, e = self.span(len(w))
        href = self.rng.choice(['https://example.org/doc?x=1&amp;y=2', '#section-2', '/packages/search.html',
                                'mailto:someone@example.org'])
        attrs = ' href="%s"' % href
        if self.rng.random() < 0.4:
            attrs += ' rel="nofollow" data-id="%d"' % self.rng.randint(1, 99)
        b.add("<p>%s</p>" % b.sentence(w, k, [(s, e, "a", attrs)]))

    def nested(self, b):
        k, w = self.pick()
        n = len(w)
        if n < 3:
            return self.inline1(b)
        ln = self.rng.randint(2, min(6, n))
        s = self.rng.randint(0, n - ln)
        e = s + ln
        s2, e2 = s + self.rng.randint(0, ln - 1), None
        e2 = self.rng.randint(s2 + 1, e)
        outer, inner = self.rng.choice([("b", "i"), ("a", "strong"), ("span", "em"), ("em", "code"), ("strong", "a")])
        oa = ' href="https://example.org/"' if outer == "a" else ""
        ia = ' href="#x"' if inner == "a" else ""
        tags = [(s, e, outer, oa), (s2, e2, inner, ia)]
        if self.rng.random() < 0.3 and e2 - s2 >= 1:
            tags.append((s2, s2 + 1, "code", ""))  # three deep
        b.add("<p>%s</p>" % b.sentence(w, k, tags))

    def edges(self, b):
        k, w = self.pick()
        n = len(w)
        where = self.rng.choice(["start", "end", "whole"])
        tag = self.rng.choice(INLINE_TAGS + ["a"])
        attrs = ' href="#top"' if tag == "a" else ""
        s, e = {"start": (0, self.rng.randint(1, min(3, n))), "end": (n - self.rng.randint(1, min(3, n)), n),
                "whole": (0, n)}[where]
        b.add("<p>%s</p>" % b.sentence(w, k, [(s, e, tag, attrs)]))

    def entities(self, b):
        k, w = self.pick()
        words = list(w)
        variant = self.rng.choice(["amp", "lt", "quot", "nbsp", "named", "numeric"])
        if variant == "amp":
            i = self.rng.randrange(len(words))
            words.insert(i, "&")
        elif variant == "lt":
            i = self.rng.randrange(len(words))
            words[i] = "<" + words[i] + ">"
        elif variant == "quot":
            i = self.rng.randrange(len(words))
            words[i] = '"' + words[i] + '"'
        elif variant == "nbsp" and len(words) >= 2:
            i = self.rng.randrange(len(words) - 1)
            words[i:i + 2] = [words[i] + "\u00a0" + words[i + 1]]
        text = " ".join(words)

        def text_esc(x):
            x = esc(x).replace('"', "&quot;").replace("\u00a0", "&nbsp;")
            if variant == "named":
                for ch, ent in ENTITY_NAMES.items():
                    x = x.replace(ch, ent)
                x = x.replace("'", "&#39;")
            elif variant == "numeric":
                x = "".join("&#%d;" % ord(c) if ord(c) > 127 else ("&#x27;" if c == "'" else c) for c in x)
            return x
        tags = []
        if self.rng.random() < 0.5:
            s, e = self.span(len(words))
            tags = [(s, e, self.rng.choice(INLINE_TAGS), "")]
        line = k if text == " ".join(w) else None
        h = b.sentence(words, line, tags, text_esc=text_esc)
        if line is None:
            b.units[-1] = (text, None)
        b.add("<p>%s</p>" % h)

    def notranslate_inline(self, b):
        k, w = self.pick()
        words = list(w)
        i = self.rng.randrange(len(words) + 1)
        name = self.rng.choice(["mtserve", "Debian", "libgumbo", "apt-get install", "README.md"])
        form = self.rng.choice(['<span class="notranslate">%s</span>', '<code translate="no">%s</code>',
                                '<span class="brand notranslate" data-x="1">%s</span>', '<b translate="no">%s</b>'])
        opaque = form % esc(name)
        # the unit is the sentence; the opaque part sits between words i-1 and i
        tags = []
        if self.rng.random() < 0.5:
            s, e = self.span(len(words))
            t = self.rng.choice(["b", "em", "a"])
            tags = [(s, e, t, ' href="#n"' if t == "a" else "")]
        h = b.sentence(words, k, tags)
        b.verbatim.append(opaque)
        b.add("<p>%s</p>" % _insert_between_words(h, i, opaque))

    def notranslate_block(self, b):
        k1, w1 = self.pick()
        k2, w2 = self.pick()
        b.add("<p>%s</p>" % b.sentence(w1, k1))
        form = self.rng.choice(['<p class="notranslate">%s</p>', '<div translate="no"><p>%s</p></div>',
                                '<blockquote class="quote notranslate">%s <b>kept</b></blockquote>'])
        b.verb(form % esc(" ".join(w2)))
        b.lines.append(k2)
        if self.rng.random() < 0.5:
            k3, w3 = self.pick()
            b.add("<p>%s</p>" % b.sentence(w3, k3))

    def attrs(self, b):
        k, w = self.pick()
        ka, wa = self.pick(short=True)
        variant = self.rng.choice(["img", "abbr", "input", "a", "img_inline", "textarea"])
        if variant == "img":
            m, gid = b.marker()
            b.add('<figure><img src="img/shot.png" width="40" alt="%s"%s><figcaption>%s</figcaption></figure>'
                  % (esc_attr(" ".join(wa)), m, b.sentence(w, k)))
            b.attr_units.append((gid, "alt", " ".join(wa)))
        elif variant == "abbr":
            s, e = self.span(len(w), 2)
            h = b.sentence(w, k, [(s, e, "abbr", ' title="%s"' % esc_attr(" ".join(wa)))])
            b.attr_units.append((b.gid, "title", " ".join(wa)))
            b.add("<p>%s</p>" % h)
        elif variant == "input":
            m, gid = b.marker()
            b.add('<p>%s</p><form action="/search"><input type="text" name="q" placeholder="%s"%s></form>'
                  % (b.sentence(w, k), esc_attr(" ".join(wa)), m))
            b.attr_units.append((gid, "placeholder", " ".join(wa)))
        elif variant == "img_inline":
            # an image inside the sentence: an opaque item, put back where the alignment says
            m, gid = b.marker()
            img = '<img src="icons/info.png" alt="%s"%s>' % (esc_attr(" ".join(wa)), m)
            b.add("<p>%s</p>" % _insert_between_words(b.sentence(w, k), self.rng.randint(0, len(w)), img))
            b.attr_units.append((gid, "alt", " ".join(wa)))
        elif variant == "textarea":
            m, gid = b.marker()
            b.add('<p>%s</p><textarea name="c" placeholder="%s"%s>  kept &amp; raw</textarea>'
                  % (b.sentence(w, k), esc_attr(" ".join(wa)), m))
            b.attr_units.append((gid, "placeholder", " ".join(wa)))
            b.verbatim.append("  kept &amp; raw</textarea>")
        else:
            s, e = self.span(len(w), 3)
            h = b.sentence(w, k, [(s, e, "a", ' href="https://example.org/?q=a&amp;b" title="%s"' % esc_attr(" ".join(wa)))])
            b.attr_units.append((b.gid, "title", " ".join(wa)))
            b.add("<p>%s</p>" % h)
        b.lines.append(ka)

    def blocks(self, b):
        variant = self.rng.choice(["ul", "table", "h2", "div"])
        k1, w1 = self.pick()
        k2, w2 = self.pick()
        t1 = [(*self.span(len(w1), 3), self.rng.choice(INLINE_TAGS), "")] if self.rng.random() < 0.5 else []
        s1 = b.sentence(w1, k1, t1)
        s2 = b.sentence(w2, k2)
        if variant == "ul":
            b.add("<ul>\n  <li>%s</li>\n  <li>%s</li>\n</ul>" % (s1, s2))
        elif variant == "table":
            b.add('<table class="t">\n<tr><td>%s</td><td>%s</td></tr>\n</table>' % (s1, s2))
        elif variant == "h2":
            b.add("<h2>%s</h2>\n<p>%s</p>" % (s1, s2))
        else:
            k3, w3 = self.pick()
            s3 = b.sentence(w3, k3)
            b.add("<div>%s<p>%s</p>%s</div>" % (s1, s2, s3))

    def br(self, b):
        k1, w1 = self.pick(short=True)
        k2, w2 = self.pick(short=True)
        form = self.rng.choice(["<p>%s<br>%s</p>", "<p>%s<br/>%s</p>", "<p>%s <br> %s</p>"])
        b.add(form % (b.sentence(w1, k1), b.sentence(w2, k2)))

    def empty(self, b):
        k, w = self.pick()
        pieces = ["<p></p>", "<p>   </p>", "<div> \n </div>", "<span></span>", "<b> </b>", "<li></li>", "<td></td>"]
        self.rng.shuffle(pieces)
        b.add(pieces[0])
        variant = self.rng.choice(["icon", "plain"])
        if variant == "icon":
            # an empty inline element inside a sentence (an icon): kept, wraps no word
            h = b.sentence(w, k)
            b.add('<p><span class="icon"></span> %s</p>' % h)
        else:
            b.add("<p>%s</p>" % b.sentence(w, k))
        b.add(pieces[1])

    def whitespace(self, b):
        k, w = self.pick()
        n = len(w)
        cut = self.rng.randint(1, n - 1) if n > 1 else 1
        s, e = self.span(n, 3)
        h = b.sentence(w, k, [(s, e, self.rng.choice(INLINE_TAGS), "")])
        # a line break inside the unit (collapsed) and leading/trailing whitespace kept
        h = _insert_between_words(h, cut, "\n    ", replace_space=True)
        lead = self.rng.choice(["\n  ", "  ", " ", "\t"])
        trail = self.rng.choice(["\n", "  ", " \n"])
        b.add("<p>%s%s%s</p>" % (lead, h, trail))

    def comments(self, b):
        k, w = self.pick()
        c1 = "<!-- header: generated -->"
        b.verb(c1)
        h = b.sentence(w, k)
        if self.rng.random() < 0.5 and len(w) > 2:
            c2 = "<!-- inline note -->"
            h = _insert_between_words(h, self.rng.randint(1, len(w) - 1), c2)
            b.verbatim.append(c2)
        b.add("<p>%s</p>" % h)

    def verbatim(self, b):
        k, w = self.pick()
        pieces = ['<script>var msg = "<b>Hello</b> & bye"; if (a < b) { f(); }</script>',
                  '<style>p > b { color: red; } /* & */</style>',
                  '<pre>  $ make install\n  &lt;done&gt; &amp; ok\n</pre>',
                  '<pre><code>int main(void) { return 0; }\n</code></pre>',
                  '<textarea name="t">  raw &amp; text <b>not</b></textarea>']
        self.rng.shuffle(pieces)
        b.verb(pieces[0])
        b.add("<p>%s</p>" % b.sentence(w, k, [(*self.span(len(w), 2), "em", "")]))
        b.verb(pieces[1])

    def foreign(self, b):
        k, w = self.pick()
        piece = self.rng.choice(['<svg width="10" height="10" viewBox="0 0 10 10"><text x="0" y="5">Label text</text></svg>',
                                 '<math><mi>x</mi><mo>=</mo><mn>2</mn></math>',
                                 '<template><p>Template text</p></template>'])
        b.add("<p>%s</p>" % b.sentence(w, k))
        b.verb(piece)

    def quirks(self, b):
        k1, w1 = self.pick()
        k2, w2 = self.pick()
        variant = self.rng.choice(["upper", "unquoted", "unclosed_p", "unclosed_li", "misnested"])
        if variant == "upper":
            s, e = self.span(len(w1), 3)
            b.add("<P CLASS=lead>%s</P>" % b.sentence(w1, k1, [(s, e, "B", "")]))
            b.add("<P>%s</P>" % b.sentence(w2, k2))
        elif variant == "unquoted":
            s, e = self.span(len(w1), 3)
            b.add("<p>%s</p>" % b.sentence(w1, k1, [(s, e, "a", " href=/doc/index.html class=ref")]))
            b.add("<p>%s</p>" % b.sentence(w2, k2))
        elif variant == "unclosed_p":
            b.add("<p>%s\n<p>%s\n" % (b.sentence(w1, k1), b.sentence(w2, k2)))
        elif variant == "unclosed_li":
            b.add("<ul><li>%s<li>%s</ul>" % (b.sentence(w1, k1), b.sentence(w2, k2)))
        else:
            # <b><i>x</b></i>: the parsers' tree has b>i then the rest; no accuracy span
            n = len(w1)
            if n < 4:
                return self.quirks(b)
            b.units.append((" ".join(w1), k1))
            b.lines.append(k1)
            b.add("<p>%s <b>%s <i>%s</b> %s</i> %s</p>" % (esc(w1[0]), esc(w1[1]), esc(w1[2]),
                                                        esc(" ".join(w1[3:n - 1])), esc(w1[n - 1])))
            b.add("<p>%s</p>" % b.sentence(w2, k2))

    def document(self, b):
        k1, w1 = self.pick(short=True)
        k2, w2 = self.pick()
        title = b.sentence(w1, k1)
        body = b.sentence(w2, k2, [(*self.span(len(w2), 3), "strong", "")])
        b.add('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>%s</title>\n'
              '<style>body { margin: 0 }</style>\n</head>\n<body>\n<p>%s</p>\n</body>\n</html>\n' % (title, body))
        b.verbatim.append("<!DOCTYPE html>")
        b.verbatim.append("<style>body { margin: 0 }</style>")


def _insert_between_words(h, i, piece, replace_space=False):
    """Insert piece before the i-th word of a unit's html (the words are separated by single
    spaces outside tags).  i == number of words: at the end."""
    # positions of the separating spaces outside tags
    seps, depth, q = [], 0, None
    for pos, ch in enumerate(h):
        if q:
            if ch == q:
                q = None
        elif ch == "<":
            depth = 1
        elif ch == ">":
            depth = 0
        elif depth and ch in "\"'":
            q = ch
        elif ch == " " and not depth:
            seps.append(pos)
    if i <= 0:
        return piece + " " + h if not replace_space else piece + h
    if i > len(seps):
        return h + " " + piece if not replace_space else h + piece
    p = seps[i - 1]
    if replace_space:
        return h[:p] + piece + h[p + 1:]
    return h[:p] + " " + piece + h[p:]


def build(gen, kind, src, tgt, idx):
    b = Builder()
    getattr(gen, kind)(b)
    marked = "".join(b.html)
    # element indexes of the markers, from html5lib's parse; then the markers go
    root, _ = hu.parse(marked)
    gid_elem = {}
    for n in hu.elements(root):
        if "data-gid" in n.attrs:
            gid_elem[int(n.attrs["data-gid"])] = n.index
    clean = re.sub(r' data-gid="\d+"', "", marked)
    for v in b.verbatim:
        assert v in clean, (kind, v)
    spans = [{"elem": gid_elem[g], "tag": t.lower(), "unit": u, "words": [s, e]} for (g, t, u, s, e) in b.spans]
    attr_units = [{"elem": gid_elem[g], "attr": a, "text": t} for (g, a, t) in b.attr_units]
    rec = {"id": "%s-%s-%04d" % (src, tgt, idx), "source": src, "target": tgt, "kind": kind, "html": clean,
           "lines": b.lines, "units": [{"text": t, "line": l} for (t, l) in b.units],
           "attr_units": attr_units, "spans": spans, "verbatim": b.verbatim}
    self_check(rec)
    return rec


def self_check(rec):
    """The construction and html_units' reading of the snippet agree (units and spans)."""
    root, _ = hu.parse(rec["html"])
    us = [u for u in hu.units(root) if u.translatable]
    got = [u.text for u in us]
    want = [u["text"] for u in rec["units"]]
    if got != want:
        raise AssertionError("%s: units %r != %r\n%s" % (rec["id"], got, want, rec["html"]))
    for sp in rec["spans"]:
        u = us[sp["unit"]]
        ws = u.word_spans().get(sp["elem"])
        if ws != tuple(sp["words"]):
            raise AssertionError("%s: span %r != %r\n%s" % (rec["id"], ws, sp, rec["html"]))


# Two real pages, copied from Debian's /usr/share/doc (zlib1g-dev, libxslt1-dev) with
# their licences: tests/fixtures/html/LICENSES.md.
REAL_PAGES = [os.path.join(ROOT, "tests", "fixtures", "html", "zlib_how.html"),
              os.path.join(ROOT, "tests", "fixtures", "html", "libxslt_pipes.html")]


def broken_cases(max_depth=200):
    """The broken-markup cases of bench/html_parsers.py (what real pages do wrong), as
    snippets of their own (kind "broken": no expected units or spans), and two real pages
    (kind "page", tests/fixtures/html).  A case nesting deeper than max_depth
    expects a 400; bytes that are not UTF-8 are sent as U+FFFD (JSON carries no others)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("html_parsers", os.path.join(ROOT, "bench", "html_parsers.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = []
    for k, (name, data) in enumerate(mod.CASES):
        text = data.decode("utf-8", "replace")
        rec = {"id": "broken-%02d" % k, "source": "en", "target": "fr", "kind": "broken", "name": name, "html": text}
        if b"<div>" * 1000 in data or b"<b>" * 1000 in data:
            rec["expect"] = 400
        if "\x00" in text:
            rec["expect"] = "200|400"   # jansson refuses \u0000 in a string unless told otherwise
        out.append(rec)
    for k, p in enumerate(REAL_PAGES):
        with open(p, "rb") as f:
            out.append({"id": "page-%d" % k, "source": "en", "target": "fr", "kind": "page",
                        "name": os.path.basename(p), "html": f.read().decode("utf-8", "replace")})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--en-fr", type=int, default=200)
    ap.add_argument("--fr-en", type=int, default=80)
    ap.add_argument("--no-broken", action="store_true", help="leave out the broken-markup cases and real pages")
    args = ap.parse_args()
    recs = []
    for src, tgt, n in (("en", "fr", args.en_fr), ("fr", "en", args.fr_en)):
        with open(os.path.join(INPUTS, "test.%s.txt" % src), encoding="utf-8") as f:
            lines = [l.rstrip("\n") for l in f]
        rng = random.Random("%d-%s-%s" % (args.seed, src, tgt))
        gen = Gen(lines, rng)
        for i in range(n):
            recs.append(build(gen, KINDS[i % len(KINDS)], src, tgt, i))
    if not args.no_broken:
        recs += broken_cases()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    kinds = {}
    for r in recs:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    print("gen_snippets: %d snippets, %d inline spans, %d attribute units -> %s" %
          (len(recs), sum(len(r.get("spans", [])) for r in recs), sum(len(r.get("attr_units", [])) for r in recs), args.out))
    print("  " + ", ".join("%s %d" % kv for kv in sorted(kinds.items())))


if __name__ == "__main__":
    main()
