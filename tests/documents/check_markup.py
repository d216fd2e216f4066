#!/usr/bin/python3
"""check_markup.py: a Markdown or XLIFF file and its translation by the server, read back
by independent readers (issue 52).

    check_markup.py md|xliff12|xliff20 SOURCE OUTPUT [TARGET_LANG]

md       python3-markdown-it (CommonMark + GFM tables and strikethrough) on both files:
         the same blocks in the same order (token types, tags, levels, list markers);
         code blocks, fences, HTML blocks and the YAML front matter byte for byte;
         every inline code span, link destination and title, image, autolink and raw
         inline HTML the same, in order; each block's text translated.
xliff12  translate-toolkit's XLIFF reader (translate.storage.xliff): the same units (ids,
         notes) in order, the target language set, the targets that were there (and
         translate="no" units) unchanged, every other unit with a target; lxml: each
         new target's inline codes (<g>, <x/>, <bx/>, <ex/>, <ph>, <bpt>, <ept>, <it>,
         <mrk>) the source's, byte for byte, each once; state="needs-review-translation".
xliff20  lxml (the XLIFF 2.0 namespace): segments, notes, trgLang, state="translated",
         <pc>, <ph/>, <sc/>, <ec/>, <mrk> as for 1.2.
All: the bytes outside what was translated are the source's (a line diff: only <target>
lines inserted, lines changed only in a target's text or the attributes the server
sets).

Placeholders (%s, %1$s, {name}, {{x}}, URLs) in each unit's text as often in its
translation, byte for byte.

Prints a JSON array on stdout: [source text, translated text, has inline codes] per
unit translated (inline codes left out of both texts, whitespace runs one space), for
the caller to compare with POST /translate.  Exits 1, saying why on stderr, on a
difference.
"""
import difflib
import json
import re
import sys

errors = []


def expect(ok, what):
    if not ok:
        errors.append(what)


def ws(s):
    return re.sub(r"\s+", " ", s).strip()


# ---- bytes outside the units ---------------------------------------------------------------

TARGET_LINE = re.compile(r"^\s*<(\w+:)?target[ >].*</(\w+:)?target>\s*$")
OUR_ATTRS = re.compile(r' (state|target-language|trgLang)="[^"]*"')
TARGET_TEXT = re.compile(r"(<(\w+:)?target\b[^>]*>).*?(</(\w+:)?target>)")


def xml_bytes_kept(src, out):
    a, b = src.split("\n"), out.split("\n")
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op == "insert":
            for line in b[j1:j2]:
                expect(TARGET_LINE.match(line), f"a line added that is not a target: {line!r}")
        elif op == "replace" and i2 - i1 == j2 - j1:
            for x, y in zip(a[i1:i2], b[j1:j2]):
                x2 = TARGET_TEXT.sub(r"\1\3", OUR_ATTRS.sub("", x)).replace("<target/>", "<target></target>")
                y2 = TARGET_TEXT.sub(r"\1\3", OUR_ATTRS.sub("", y))
                expect(x2 == y2, f"a line changed beyond its target and our attributes:\n  {x!r}\n  {y!r}")
        elif op == "replace":
            for line in b[j1:j2]:
                if not TARGET_LINE.match(line):
                    expect(line in a[i1:i2] or OUR_ATTRS.sub("", line) in [OUR_ATTRS.sub("", l) for l in a[i1:i2]],
                           f"lines replaced: {a[i1:i2]!r} -> {b[j1:j2]!r}")
        else:
            errors.append(f"lines deleted: {a[i1:i2]!r}")


# ---- XLIFF ---------------------------------------------------------------------------------

def local(el):
    return el.tag.split("}")[-1] if isinstance(el.tag, str) else ""


def opaque(el, v2):
    """An inline code whose content is not text to translate."""
    name = local(el)
    if el.get("translate") == "no" or el.get("mtype") == "protected":
        return True
    return name not in (("pc", "mrk") if v2 else ("g", "mrk"))


def text_of(el, v2):
    """Its text, inline codes' own content left out; whether it has inline codes."""
    parts, codes = [el.text or ""], False
    for c in el:
        if not isinstance(c.tag, str):          # a comment, a processing instruction
            codes = True
        elif opaque(c, v2):
            codes = True
        else:
            t, _ = text_of(c, v2)
            parts.append(t)
            codes = True
        parts.append(c.tail or "")
    return "".join(parts), codes


def codes_of(el, v2):
    """Every inline code of el: an opaque one serialized whole (no tail), one around text by
    its name and attributes, and the codes inside it."""
    from lxml import etree
    out = []
    for c in el:
        if not isinstance(c.tag, str) or opaque(c, v2):
            s = etree.tostring(c, encoding="unicode", with_tail=False)
            out.append(re.sub(r' xmlns(:\w+)?="[^"]*"', "", s))
        else:
            out.append(str((local(c), sorted(c.attrib.items()))))
            out.extend(codes_of(c, v2))
    return out


def check_xliff(src, out, lang, v2):
    from lxml import etree
    ns = "{urn:oasis:names:tc:xliff:document:2.0}" if v2 else "{urn:oasis:names:tc:xliff:document:1.2}"
    ta, tb = etree.fromstring(src.encode()), etree.fromstring(out.encode())
    holder = "segment" if v2 else "trans-unit"
    ua, ub = list(ta.iter(ns + holder)), list(tb.iter(ns + holder))
    expect(len(ua) == len(ub), f"{len(ua)} {holder}s, {len(ub)} after")
    expect([n.text for n in ta.iter(ns + "note")] == [n.text for n in tb.iter(ns + "note")], "the notes differ")
    if v2:
        expect(tb.get("trgLang") == lang, f"trgLang {tb.get('trgLang')!r}")
    pairs = []
    for a, b in zip(ua, ub):
        sa, sb = a.find(ns + "source"), b.find(ns + "source")
        expect(etree.tostring(sa, with_tail=False) == etree.tostring(sb, with_tail=False), "a source changed")
        ta_, tb_ = a.find(ns + "target"), b.find(ns + "target")
        unit = a.getparent() if v2 else a
        no = any(x.get("translate") == "no" for x in [a] + list(a.iterancestors()))
        had = ta_ is not None and (len(ta_) or (ta_.text or "").strip())
        if no or had or not ws(text_of(sa, v2)[0]):
            expect(etree.tostring(ta_, with_tail=False) == etree.tostring(tb_, with_tail=False) if ta_ is not None
                   else tb_ is None,
                   f"{unit.get('id')}: a target that was kept changed")
            continue
        expect(tb_ is not None, f"{unit.get('id')}: no target")
        if tb_ is None:
            continue
        if v2:
            expect(b.get("state") == "translated", f"{unit.get('id')}: segment state {b.get('state')!r}")
        else:
            expect(tb_.get("state") == "needs-review-translation", f"{unit.get('id')}: target state {tb_.get('state')!r}")
        expect(sorted(codes_of(sa, v2)) == sorted(codes_of(tb_, v2)), f"{unit.get('id')}: inline codes {codes_of(sa, v2)} -> {codes_of(tb_, v2)}")
        s_text, codes = text_of(sa, v2)
        pairs.append([ws(s_text), ws(text_of(tb_, v2)[0]), codes])
    return pairs


def check_xliff12_toolkit(src, out, lang):
    from translate.storage import xliff
    a, b = xliff.xlifffile.parsestring(src.encode()), xliff.xlifffile.parsestring(out.encode())
    expect(b.gettargetlanguage() == lang, f"target-language {b.gettargetlanguage()!r}")
    expect([u.getid() for u in a.units] == [u.getid() for u in b.units], "the units' ids differ")
    expect([u.getnotes() for u in a.units] == [u.getnotes() for u in b.units], "the units' notes differ")
    expect([u.source for u in a.units] == [u.source for u in b.units], "a source differs")
    for u, v in zip(a.units, b.units):
        if u.target:
            expect(u.target == v.target, f"{u.getid()}: its target changed")
        elif u.xmlelement.get("translate") != "no":
            expect(bool(v.target), f"{u.getid()}: no target after")
        expect([type(x).__name__ for x in u.rich_source[0].sub] == [type(x).__name__ for x in v.rich_source[0].sub],
               f"{u.getid()}: the source's placeables differ")


# ---- Markdown ------------------------------------------------------------------------------

FRONT = re.compile(r"\A(\ufeff?---\r?\n.*?\r?\n(---|\.\.\.)\r?\n)", re.S)
KEPT_INLINE = ("code_inline", "html_inline", "image")


def md_parse(text):
    from markdown_it import MarkdownIt
    m = FRONT.match(text)
    front = m.group(1) if m else ""
    md = MarkdownIt("commonmark").enable("table").enable("strikethrough")
    return front, md.parse(text[len(front):])


def inline_text(tok):
    parts, kept, codes = [], [], False
    for c in tok.children or []:
        if c.type == "text":
            parts.append(c.content)
        elif c.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif c.type in KEPT_INLINE:
            kept.append((c.type, c.content, c.attrs.get("src") if c.attrs else None))
            codes = True
        elif c.type == "link_open":
            kept.append(("link", c.attrs.get("href"), c.attrs.get("title"), c.markup))
        if c.type == "link_open" and c.markup == "autolink":
            codes = True
    if any(k[0] == "link" and k[3] == "autolink" for k in kept):   # an autolink's text is its URL: kept
        parts = []
        inside = False
        for c in tok.children:
            if c.type == "link_open" and c.markup == "autolink":
                inside = True
            elif c.type == "link_close" and inside:
                inside = False
            elif c.type == "text" and not inside:
                parts.append(c.content)
            elif c.type in ("softbreak", "hardbreak"):
                parts.append(" ")
    return "".join(parts), kept, codes


def check_md(src, out):
    fa, ta = md_parse(src)
    fb, tb = md_parse(out)
    expect(fa == fb, f"the front matter changed: {fa!r} -> {fb!r}")
    shape = lambda ts: [(t.type, t.tag, t.level, t.markup, t.info) for t in ts]
    expect(shape(ta) == shape(tb), "the blocks differ:\n" + "\n".join(
        f"  {x} | {y}" for x, y in zip(shape(ta), shape(tb)) if x != y)[:2000])
    pairs = []
    for a, b in zip(ta, tb):
        if a.type in ("fence", "code_block", "html_block"):
            expect(a.content == b.content, f"a {a.type} changed: {a.content!r} -> {b.content!r}")
        if a.type != "inline" or b.type != "inline":
            continue
        sa, ka, codes = inline_text(a)
        sb, kb, _ = inline_text(b)
        expect(ka == kb, f"inline code, links or HTML changed: {ka} -> {kb}")
        if ws(sa):
            pairs.append([ws(sa), ws(sb), codes])
    return pairs


# the placeholders translate/protect.c keeps (printf, braces, i18next, URLs)
PLACEHOLDER = re.compile(r"%(\d+\$)?[-+ 0#]*\d*(\.\d+)?[sdifuxXeEgGcp@]|\{\{[^{}]*\}\}|\{[^{}\s]*\}|https?://\S+")


def placeholders_kept(pairs):
    for s, o, _ in pairs:
        a, b = sorted(m.group(0) for m in PLACEHOLDER.finditer(s)), sorted(m.group(0) for m in PLACEHOLDER.finditer(o))
        expect(a == b, f"placeholders {a} -> {b} in {o!r}")


def main():
    fmt, src_path, out_path = sys.argv[1:4]
    lang = sys.argv[4] if len(sys.argv) > 4 else "fr"
    src = open(src_path, encoding="utf-8").read()
    out = open(out_path, encoding="utf-8").read()
    if fmt == "md":
        pairs = check_md(src, out)
    else:
        xml_bytes_kept(src, out)
        if fmt == "xliff12":
            check_xliff12_toolkit(src, out, lang)
        pairs = check_xliff(src, out, lang, fmt == "xliff20")
    placeholders_kept(pairs)
    expect(pairs, "nothing was translated")
    expect(any(a != b for a, b, _ in pairs), "every unit came back as its source")
    if errors:
        print("\n".join(errors), file=sys.stderr)
        sys.exit(1)
    json.dump(pairs, sys.stdout, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
