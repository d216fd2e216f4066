#!/usr/bin/python3
"""Checks a translated .docx / .odt against its source with independent readers.

    /usr/bin/python3 tests/documents/check_office.py IN OUT [--same-text]

IN is the source file, OUT the file mtserve wrote from it (kind by extension,
else by content).  Exit 0 when OUT keeps IN's structure, 1 with one line per
difference on stderr, 2 on a usage error.  --same-text also wants each
paragraph's text equal (an identity translation; whitespace ignored).

docx (python3-docx, and zipfile):
  - the same archive entries in the same order; every entry but
    word/document.xml, word/header*.xml, word/footer*.xml, word/footnotes.xml
    and word/endnotes.xml byte-identical once inflated
  - the same sections, styles (names), tables (rows x columns, and each cell's
    paragraph count)
  - the same paragraphs (body, table cells, headers, footers), each with the
    same style and the same runs, each run with the same bold / italic /
    underline / style / font, and at least one paragraph's text changed
    (unless --same-text)
odt (lxml on content.xml and styles.xml, and zipfile):
  - the same entries in the same order, "mimetype" first and stored, every
    entry but content.xml and styles.xml byte-identical once inflated
  - content.xml and styles.xml: the same element tree (tags and attributes
    in document order); only text differs
"""
import re
import sys
import zipfile

DOCX_PARTS = re.compile(r"^word/(document|header\d*|footer\d*|footnotes|endnotes)\.xml$")
ODT_PARTS = {"content.xml", "styles.xml"}


def kind_of(path):
    if path.endswith(".docx"):
        return "docx"
    if path.endswith(".odt"):
        return "odt"
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        if "word/document.xml" in names:
            return "docx"
        if names and names[0] == "mimetype":
            return "odt"
    raise SystemExit("check_office: %s is neither docx nor odt" % path)


def check_zip(a, b, translated, errors):
    za, zb = zipfile.ZipFile(a), zipfile.ZipFile(b)
    if zb.testzip() is not None:
        errors.append("OUT: a corrupt entry: %s" % zb.testzip())
    na = [i.filename for i in za.infolist()]
    nb = [i.filename for i in zb.infolist()]
    if na != nb:
        errors.append("entries differ: %s vs %s" % (na, nb))
        return
    for ia, ib in zip(za.infolist(), zb.infolist()):
        if translated(ia.filename):
            continue
        if za.read(ia) != zb.read(ib) or ia.CRC != ib.CRC:
            errors.append("entry %s changed" % ia.filename)
        if ia.compress_type != ib.compress_type:
            errors.append("entry %s: compression %d -> %d" % (ia.filename, ia.compress_type, ib.compress_type))


def run_format(r):
    f = r.font
    return (r.bold, r.italic, r.underline, r.style.name if r.style is not None else None, f.name, f.size)


def paragraphs_of(doc):
    """Every paragraph python-docx sees: body, table cells (nested), headers, footers."""
    out = []

    def tables(ts, where):
        for ti, t in enumerate(ts):
            for ri, row in enumerate(t.rows):
                for ci, cell in enumerate(row.cells):
                    for pi, p in enumerate(cell.paragraphs):
                        out.append(("%s table %d cell %d,%d p %d" % (where, ti, ri, ci, pi), p))
                    tables(cell.tables, "%s table %d cell %d,%d" % (where, ti, ri, ci))

    for i, p in enumerate(doc.paragraphs):
        out.append(("body p %d" % i, p))
    tables(doc.tables, "body")
    for si, s in enumerate(doc.sections):
        for part_name in ("header", "footer", "first_page_header", "first_page_footer", "even_page_header",
                          "even_page_footer"):
            part = getattr(s, part_name, None)
            if part is None or part.is_linked_to_previous:
                continue
            for i, p in enumerate(part.paragraphs):
                out.append(("section %d %s p %d" % (si, part_name, i), p))
    return out


def table_shapes(doc):
    shapes = []

    def walk(ts):
        for t in ts:
            shapes.append((len(t.rows), len(t.columns),
                           tuple(len(c.paragraphs) for row in t.rows for c in row.cells)))
            for row in t.rows:
                for c in row.cells:
                    walk(c.tables)

    walk(doc.tables)
    return shapes


def squeeze(s):
    return re.sub(r"\s+", "", s)


def check_docx(a, b, same_text, errors):
    import docx
    check_zip(a, b, lambda n: bool(DOCX_PARTS.match(n)), errors)
    da, db = docx.Document(a), docx.Document(b)
    if len(da.sections) != len(db.sections):
        errors.append("sections: %d -> %d" % (len(da.sections), len(db.sections)))
    if [s.name for s in da.styles] != [s.name for s in db.styles]:
        errors.append("styles differ")
    if table_shapes(da) != table_shapes(db):
        errors.append("tables differ: %s -> %s" % (table_shapes(da), table_shapes(db)))
    pa, pb = paragraphs_of(da), paragraphs_of(db)
    if len(pa) != len(pb):
        errors.append("paragraphs: %d -> %d" % (len(pa), len(pb)))
        return
    changed = 0
    for (where, x), (_, y) in zip(pa, pb):
        if x.style.name != y.style.name:
            errors.append("%s: style %s -> %s" % (where, x.style.name, y.style.name))
        if len(x.runs) != len(y.runs):
            errors.append("%s: runs %d -> %d" % (where, len(x.runs), len(y.runs)))
            continue
        for k, (rx, ry) in enumerate(zip(x.runs, y.runs)):
            if run_format(rx) != run_format(ry):
                errors.append("%s run %d: format %s -> %s" % (where, k, run_format(rx), run_format(ry)))
        if x.text.strip() and not y.text.strip():
            errors.append("%s: text lost (%r)" % (where, x.text))
        if squeeze(x.text) != squeeze(y.text):
            changed += 1
            if same_text:
                errors.append("%s: text %r -> %r" % (where, x.text, y.text))
    if not same_text and not changed and any(x.text.strip() for _, x in pa):
        errors.append("no paragraph's text changed")


def tree_shape(xml):
    from lxml import etree
    root = etree.fromstring(xml, etree.XMLParser(resolve_entities=False, no_network=True))
    out = []
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        out.append((el.tag, tuple(sorted(el.attrib.items()))))
    return out, root


def check_odt(a, b, same_text, errors):
    check_zip(a, b, lambda n: n in ODT_PARTS, errors)
    za, zb = zipfile.ZipFile(a), zipfile.ZipFile(b)
    first = zb.infolist()[0] if zb.infolist() else None
    if first is None or first.filename != "mimetype" or first.compress_type != zipfile.ZIP_STORED:
        errors.append("OUT: mimetype is not the first entry, stored")
    changed = 0
    for name in sorted(ODT_PARTS):
        if name not in za.namelist():
            continue
        sa, ra = tree_shape(za.read(name))
        sb, rb = tree_shape(zb.read(name))
        if sa != sb:
            for i, (x, y) in enumerate(zip(sa, sb)):
                if x != y:
                    errors.append("%s: element %d: %s -> %s" % (name, i, x, y))
                    break
            else:
                errors.append("%s: %d elements -> %d" % (name, len(sa), len(sb)))
            continue
        tp = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
        for x, y in zip(ra.iter(tp + "p", tp + "h"), rb.iter(tp + "p", tp + "h")):
            tx, ty = "".join(x.itertext()), "".join(y.itertext())
            if squeeze(tx) != squeeze(ty):
                changed += 1
                if same_text:
                    errors.append("%s: text %r -> %r" % (name, tx, ty))
            elif tx.strip() and not ty.strip():
                errors.append("%s: text lost (%r)" % (name, tx))
    if not same_text and not changed:
        errors.append("no paragraph's text changed")


def main(argv):
    args = [x for x in argv[1:] if not x.startswith("--")]
    same_text = "--same-text" in argv
    if len(args) != 2:
        sys.stderr.write(__doc__)
        return 2
    a, b = args
    errors = []
    kind = kind_of(a)
    if kind_of(b) != kind:
        errors.append("OUT is not a %s" % kind)
    else:
        (check_docx if kind == "docx" else check_odt)(a, b, same_text, errors)
    for e in errors:
        sys.stderr.write("check_office: %s\n" % e)
    if not errors:
        print("check_office: %s OK (%s)" % (b, kind))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
