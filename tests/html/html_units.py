"""tests/html/html_units.py: the rules of `format: "html"` (issue 27) as an independent reader
sees them, on html5lib's parse (Debian's python3-html5lib, a spec-conformant HTML5 parser in
pure Python).  Shared by tests/html/check_html.py, tests/html/gen_snippets.py,
tests/html/fake_server.py and bench/html_accuracy.py.

The rules are the issue's, with the element lists server/markup/html.h settled on:
- a block container's children fall into runs of inline content (text, inline elements,
  opaque items) separated by block elements; each run with words is a translation unit.
  Block: every element not in INLINE or OPAQUE, and an inline element holding a block.
- a unit's text: its text nodes (inside its inline elements too) joined, HTML whitespace
  runs made one space, trimmed; opaque items (comments, the OPAQUE elements, and inline
  elements with translate="no" / class "notranslate") are left out of it and kept whole.
- not translated, kept as they are: the insides of OPAQUE, FROZEN_BLOCK, template and
  non-HTML (svg, math) elements, elements with translate="no" or class "notranslate" and
  everything inside them, comments, the doctype, every attribute value but TRANSLATED_ATTRS
  of elements that are not frozen (each of those a unit of its own).
"""
import re

import html5lib

# Inline: stays inside its sentence and is translated with it (html.c INLINE).
INLINE = {
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em", "font",
    "i", "ins", "kbd", "label", "mark", "nobr", "q", "rb", "rp", "rt", "rtc", "ruby", "s", "samp",
    "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "blink",
}
# Inline-level and never translated inside: kept whole at their place in the sentence
# (html.c OPAQUE).  The list of untranslated elements is script, style, pre,
# textarea, svg, math, template; html.c makes all but pre inline-level items.
OPAQUE = {
    "script", "style", "template", "textarea", "svg", "math", "img", "wbr", "input", "select", "iframe",
    "embed", "object", "audio", "video", "canvas", "keygen", "meter", "progress", "noscript", "xmp",
    "noembed", "noframes", "plaintext",
}
# Block-level, never translated inside (html.c FROZEN_BLOCK is pre, listing, head: the
# issue does not freeze head, so <title> is translated here; --frozen-head adds it).
FROZEN_BLOCK = {"pre", "listing"}
TRANSLATED_ATTRS = {"title", "alt", "placeholder"}
HTML_NS = "http://www.w3.org/1999/xhtml"

_WS = re.compile(r"[ \t\n\f\r]+")
_LEAD = re.compile(r"^[ \t\n\f\r]*")
_TRAIL = re.compile(r"[ \t\n\f\r]*$")
# html.c is_blank: a run of these only is not translated
_BLANK = re.compile("^[ \t\n\x0b\f\r\x85\xa0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]*$")

NS_PREFIX = {
    "http://www.w3.org/1999/xlink": "xlink:",
    "http://www.w3.org/XML/1998/namespace": "xml:",
    "http://www.w3.org/2000/xmlns/": "xmlns:",
}


def collapse(s):
    """HTML whitespace runs -> one space, trimmed (the unit text rule)."""
    return _WS.sub(" ", s).strip(" ")


def is_blank(s):
    return _BLANK.match(s) is not None


def lead_ws(s):
    return _LEAD.match(s).group(0)


def trail_ws(s):
    return _TRAIL.search(s).group(0)


class Node:
    __slots__ = ("kind", "name", "ns", "attrs", "children", "text", "parent", "index", "depth",
                 "frozen", "frozen_in", "cls")

    def __init__(self, kind, name="", attrs=None, text="", parent=None, ns=None):
        self.kind = kind          # "root", "elem", "text", "comment"
        self.name = name
        self.ns = ns or HTML_NS
        self.attrs = attrs or {}  # name -> value, in source order
        self.children = []
        self.text = text
        self.parent = parent
        self.index = -1           # pre-order index among elements
        self.depth = 0
        self.frozen = False       # not translated, its own attributes neither
        self.frozen_in = False    # its insides are not translated
        self.cls = None           # "text", "inline", "opaque", "block", "skip"

    def __repr__(self):
        return "<%s %s%r>" % (self.kind, self.name, self.text[:20] if self.text else "")


def is_full_document(html):
    """html.c is_document: a page is a document when it starts (after a BOM, spaces and
    comments) with a doctype or an html, head or body tag."""
    s = html[1:] if html.startswith("\ufeff") else html
    while True:
        s = s.lstrip(" \t\n\f\r")
        if s.startswith("<!--"):
            e = s.find("-->", 4)
            if e < 0:
                return False
            s = s[e + 3:]
            continue
        break
    return re.match(r"<(!doctype|(html|head|body)(?![A-Za-z0-9]))", s, re.I) is not None


def says_notranslate(n):
    if n.attrs.get("translate", "\x00").lower() == "no":
        return True
    return "notranslate" in re.split(r"[ \t\n\f\r]+", n.attrs.get("class", ""))


FRAGMENT_PREFIX = "<!DOCTYPE html><body>"


def parse(html, fragment=None, frozen_block=None):
    """html5lib's tree as Nodes, classified; returns (root, parse_errors).  Iterative: deep
    inputs do not recurse.  fragment (default: not is_full_document(html)): parsed as
    FRAGMENT_PREFIX + html, a no-quirks document already in <body>: what gumbo's
    body-context fragment parse does (a stray </p> makes an empty <p>, a table closes a
    <p>, <title> stays where it is), except that <html>/<body> tags inside merge their
    attributes into the implied ones (signature() leaves those out for a fragment).
    html5lib 1.1's own fragment mode is not used: it drops foster-parented elements
    (<table><b>x<tr>...: the <b> is lost); its document mode places them as the spec says.
    Pass the input's fragment flag when parsing its output."""
    if fragment is None:
        fragment = not is_full_document(html)
    p = html5lib.HTMLParser(tree=html5lib.getTreeBuilder("etree"), namespaceHTMLElements=False)
    tree = p.parse(FRAGMENT_PREFIX + html if fragment else html)
    walker = html5lib.getTreeWalker("etree")
    root = Node("root", name="fragment" if fragment else "document")
    cur = root
    count = 0
    for tok in walker(tree):
        t = tok["type"]
        if t in ("StartTag", "EmptyTag"):
            attrs = {}
            for (ns, name), value in tok["data"].items():
                attrs[NS_PREFIX.get(ns, "") + name] = value
            n = Node("elem", tok["name"], attrs, parent=cur, ns=tok.get("namespace"))
            n.index = count
            n.depth = cur.depth + 1 if cur.kind == "elem" else 0
            count += 1
            cur.children.append(n)
            if t == "StartTag":
                cur = n
        elif t == "EndTag":
            cur = cur.parent
        elif t in ("Characters", "SpaceCharacters"):
            if cur.children and cur.children[-1].kind == "text":
                cur.children[-1].text += tok["data"]
            else:
                cur.children.append(Node("text", text=tok["data"], parent=cur))
        elif t == "Comment":
            cur.children.append(Node("comment", text=tok["data"], parent=cur))
    classify(root, FROZEN_BLOCK if frozen_block is None else frozen_block)
    # a fragment parsed as a document has no doctype: not an error of the markup
    errors = [e for e in p.errors if not str(e[1]).startswith("expected-doctype-but-got")]
    return root, errors


def classify(root, frozen_block):
    """html.c mark() and kind_of(): frozen top-down, then each node's class bottom-up."""
    order = list(iter_nodes(root))
    for n in order:  # pre-order: parents first
        if n.kind != "elem":
            continue
        pf = n.parent.frozen_in if n.parent.kind == "elem" else False
        n.frozen = pf or says_notranslate(n)
        n.frozen_in = n.frozen or n.name in OPAQUE or n.name in frozen_block or n.name == "template" or \
            (n.ns not in (None, HTML_NS))
    for n in reversed(order):  # children before parents
        if n.kind == "text":
            n.cls = "text"
        elif n.kind == "comment":
            n.cls = "opaque"
        else:
            inline_level = n.name in INLINE or n.name in OPAQUE
            if n.frozen:
                n.cls = "opaque" if inline_level else "skip"
            elif n.name in OPAQUE or n.name == "template":
                n.cls = "opaque"
            elif n.name in INLINE and all(c.cls in ("text", "opaque", "inline") for c in n.children):
                n.cls = "inline"
            else:
                n.cls = "skip" if n.name in frozen_block else "block"


def iter_nodes(root):
    """Pre-order, iteratively."""
    stack = list(reversed(root.children))
    while stack:
        n = stack.pop()
        yield n
        if n.children:
            stack.extend(reversed(n.children))


def elements(root):
    return [n for n in iter_nodes(root) if n.kind == "elem"]


def text_of(n):
    """All text of a subtree (every text node, raw)."""
    if n.kind == "text":
        return n.text
    return "".join(x.text for x in iter_nodes(n) if x.kind == "text")


class Unit:
    """A run of inline content of a block container (a translation unit when it has words)."""

    def __init__(self, key):
        self.key = key            # (container element index or -1, index of the block sibling before it or -1)
        self.raw = ""             # translatable text, raw
        self.full_raw = ""        # every text of the run, opaque items' included
        self.spans = {}           # inline element index -> [start, end) in raw
        self.opaque = []          # opaque items: element indexes, "#comment" for comments
        self.first_text = None    # the run's first / last item when it is a text node (html.c lead/trail)
        self.last_text = None

    @property
    def text(self):
        return collapse(self.raw)

    @property
    def translatable(self):
        return not is_blank(self.raw)

    def word_sets(self):
        """inline element index -> set of word positions (in self.text) it wraps; a word is
        inside when one of its characters is."""
        words = word_offsets(self.raw)
        return {idx: {k for k, (ws, we) in enumerate(words) if ws < e and we > s}
                for idx, (s, e) in self.spans.items()}

    def word_spans(self):
        out = {}
        for idx, ks in self.word_sets().items():
            out[idx] = (min(ks), max(ks) + 1) if ks else (None, None)
        return out


def word_offsets(raw):
    """Offsets of the words (runs of non-whitespace) of raw; their order is that of
    collapse(raw).split(' ')."""
    return [(m.start(), m.end()) for m in re.finditer(r"[^ \t\n\f\r]+", raw)]


def _fill_run(u, items):
    """Walk a run's items (iteratively), filling u."""
    stack = [("node", c) for c in reversed(items)]
    while stack:
        ev, n = stack.pop()
        if ev == "end":
            u.spans[n.index] = (u.spans[n.index][0], len(u.raw))
            continue
        if n.cls == "text":
            u.raw += n.text
            u.full_raw += n.text
        elif n.cls == "opaque":
            u.opaque.append("#comment" if n.kind == "comment" else n.index)
            u.full_raw += text_of(n) if n.kind == "elem" else ""
        elif n.cls == "inline":
            u.spans[n.index] = (len(u.raw), None)
            stack.append(("end", n))
            stack.extend(("node", c) for c in reversed(n.children))


def units(root):
    """Every run of every block container, in document order (blank ones included: they
    must come out as they went in)."""
    out = []
    stack = [("block", root)]
    while stack:
        what, c = stack.pop()
        if what == "run":
            out.append(c)
            continue
        ci = c.index if c.kind == "elem" else -1
        kids = c.children
        i, prev_block = 0, -1
        entries = []
        while i < len(kids):
            k = kids[i]
            if k.cls in ("text", "inline", "opaque"):
                j = i
                while j < len(kids) and kids[j].cls in ("text", "inline", "opaque"):
                    j += 1
                u = Unit((ci, prev_block))
                _fill_run(u, kids[i:j])
                u.first_text = kids[i].text if kids[i].cls == "text" else None
                u.last_text = kids[j - 1].text if kids[j - 1].cls == "text" else None
                entries.append(("run", u))
                i = j
                continue
            if k.cls == "block":
                entries.append(("block", k))
            prev_block = k.index
            i += 1
        stack.extend(reversed(entries))
    return out


def translatable_attrs(root):
    """(element index, attribute name, value) of every title/alt/placeholder that html.c
    translates: not frozen, not blank."""
    out = []
    for n in elements(root):
        if n.frozen:
            continue
        for a, v in n.attrs.items():
            if a.lower() in TRANSLATED_ATTRS and not is_blank(v):
                out.append((n.index, a, v))
    return out


def signature(root):
    """Pre-order (depth, name, attributes) of every element, a translated attribute by name
    only ("*"); for a fragment, html/head/body (the parser's, not the fragment's) without
    attributes."""
    sig = []
    for n in elements(root):
        if root.name == "fragment" and n.name in ("html", "head", "body") and n.depth <= 1:
            sig.append((n.depth, n.name, ()))
            continue
        attrs = tuple(sorted((a, "*" if (not n.frozen and a.lower() in TRANSLATED_ATTRS and not is_blank(v)) else v)
                             for a, v in n.attrs.items()))
        sig.append((n.depth, n.name, attrs))
    return sig


def subtree_dump(n):
    """A kept subtree, exactly: names, attributes (the root's translated ones aside), text,
    comments."""
    out = []
    stack = [(n, 0)]
    while stack:
        x, d = stack.pop()
        if x.kind == "elem":
            attrs = tuple((a, v) for a, v in x.attrs.items()
                          if x.frozen or a.lower() not in TRANSLATED_ATTRS)
            out.append(("E", d, x.name, attrs))
            stack.extend((c, d + 1) for c in reversed(x.children))
        elif x.kind == "text":
            out.append(("T", d, x.text))
        elif x.kind == "comment":
            out.append(("C", d, x.text))
    return out


def kept_subtrees(root):
    """The outermost elements whose insides are not translated (index -> node)."""
    out = {}
    for n in elements(root):
        parent_in = n.parent.frozen_in if n.parent.kind == "elem" else False
        if n.frozen_in and not parent_in:
            out[n.index] = n
    return out


def comments(root):
    return [n.text for n in iter_nodes(root) if n.kind == "comment"]
