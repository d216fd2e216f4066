#!/usr/bin/python3
"""check_zip_formats.py: a .pptx, .xlsx, .odp, .ods and .epub through the real server's
POST /translate_file (the shipped en-fr model), each output read by independent readers
(issue 52).

    tests/html/with_server.sh /usr/bin/python3 tests/documents/check_zip_formats.py {url} DIR

(`make doc-check`.)  DIR holds the files gen_zip_fixtures.py wrote.  For each file:
  archive    the same entries in the same order, every entry but the translated parts
             byte-identical once inflated and stored the same way ("mimetype" first and
             stored for odp, ods, epub)
  structure  pptx: lxml on the slides and notes, the same elements and attributes;
             xlsx: openpyxl, the same sheets (names), cells, numbers and formulas;
             odp, ods: odfpy, the same paragraphs, the same cells with their value
             types and values; epub: ebooklib, the same items, spine and metadata, the
             XHTML documents well-formed XML (lxml) with the same elements
  text       each unit's text (a slide paragraph, a shared string, a string cell, an ODF
             paragraph, an XHTML block, the title, the description, an NCX label)
             equals POST /translate of the source unit's text, whitespace runs made one
             space; what is not translated (numbers, formulas, dates, a slide-number
             field, the author) is unchanged; the EPUB's dc:language and its XHTML roots'
             lang and xml:lang (where the source has them) are the target
Prints one line per check and "doc-check (zip formats): N passed, M failed"; exits 1 on
a failure.
"""
import io
import os
import re
import sys
import warnings
import zipfile

from lxml import etree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_files as cf  # noqa: E402  (post_file, translate, check, units_equal)

A = "http://schemas.openxmlformats.org/drawingml/2006/main"


def archive(name, src, out, changed):
    """Entries, order, compression; every entry but those changed(name) byte-identical."""
    za, zb = zipfile.ZipFile(io.BytesIO(src)), zipfile.ZipFile(io.BytesIO(out))
    ia, ib = za.infolist(), zb.infolist()
    cf.check(f"{name}: the same entries in the same order",
             [i.filename for i in ia] == [i.filename for i in ib], repr([i.filename for i in ib]))
    same = [i.filename for i, j in zip(ia, ib) if not changed(i.filename)
            and (za.read(i) != zb.read(j) or i.compress_type != j.compress_type)]
    cf.check(f"{name}: every untranslated entry byte-identical ({sum(not changed(i.filename) for i in ia)})",
             not same, repr(same))
    if ia and ia[0].filename == "mimetype":
        cf.check(f"{name}: mimetype first and stored", ib[0].filename == "mimetype"
                 and ib[0].compress_type == zipfile.ZIP_STORED and za.read("mimetype") == zb.read("mimetype"))
    return za, zb


def shape(xml, skip_attrs=()):
    root = etree.fromstring(xml)
    return [(e.tag, sorted((k, v) for k, v in e.attrib.items() if etree.QName(k).localname not in skip_attrs))
            for e in root.iter() if isinstance(e.tag, str)]


LANG_ATTRS = ("lang", "{http://www.w3.org/XML/1998/namespace}lang")


def root_langs(sh):
    """The root element's lang and xml:lang, from shape()'s list."""
    return [(k, v) for k, v in sh[0][1] if k in LANG_ATTRS]


def without_root_langs(sh):
    return [(sh[0][0], [(k, v) for k, v in sh[0][1] if k not in LANG_ATTRS])] + sh[1:]


def check_pptx(url, path):
    src = open(path, "rb").read()
    out, _ = cf.post_file(url, "slides.pptx", src)
    parts = re.compile(r"^ppt/(slides/slide|notesSlides/notesSlide)\d+\.xml$")
    za, zb = archive("pptx", src, out, parts.match)
    pairs = []
    for n in za.namelist():
        if not parts.match(n):
            continue
        a, b = za.read(n), zb.read(n)
        cf.check(f"pptx {n}: the same elements and attributes (lxml)", shape(a) == shape(b))

        def paras(x):
            res = []
            for p in etree.fromstring(x).iter(f"{{{A}}}p"):
                t = []
                for c in p:
                    if c.tag == f"{{{A}}}r":
                        t.append("".join(c.itertext()))
                    elif c.tag == f"{{{A}}}br":
                        t.append(" ")
                fld = [("".join(f.itertext())) for f in p.iter(f"{{{A}}}fld")]
                res.append(("".join(t), fld))
            return res
        pa, pb = paras(a), paras(b)
        cf.check(f"pptx {n}: fields (slide number) unchanged", [f for _, f in pa] == [f for _, f in pb])
        pairs += [(x[0], y[0]) for x, y in zip(pa, pb) if x[0].strip()]
    cf.units_equal(url, "pptx", pairs)


def check_xlsx(url, path):
    import openpyxl
    src = open(path, "rb").read()
    out, _ = cf.post_file(url, "sheet.xlsx", src)
    za = zipfile.ZipFile(io.BytesIO(src))
    inline = {n for n in za.namelist() if n.startswith("xl/worksheets/sheet") and b"inlineStr" in za.read(n)}
    archive("xlsx", src, out, lambda n: n == "xl/sharedStrings.xml" or n in inline)
    wa, wb = openpyxl.load_workbook(io.BytesIO(src)), openpyxl.load_workbook(io.BytesIO(out))
    cf.check("xlsx: the same sheet names", wa.sheetnames == wb.sheetnames, repr(wb.sheetnames))
    pairs, kept = [], []
    for sa, sb in zip(wa, wb):
        cf.check(f"xlsx {sa.title}: the same dimensions", sa.dimensions == sb.dimensions)
        for ra, rb in zip(sa.iter_rows(), sb.iter_rows()):
            for a, b in zip(ra, rb):
                if isinstance(a.value, str) and not a.value.startswith("="):
                    pairs.append((a.value, b.value if isinstance(b.value, str) else repr(b.value)))
                elif a.value != b.value or a.data_type != b.data_type:
                    kept.append((a.coordinate, a.value, b.value))
    cf.check("xlsx: numbers and formulas unchanged", not kept, repr(kept))
    cf.units_equal(url, "xlsx", pairs)


def odf_paragraphs(doc):
    from odf import teletype
    from odf.text import P, H
    return [teletype.extractText(p) for p in doc.getElementsByType(P) + doc.getElementsByType(H)]


def check_odp(url, path):
    from odf.opendocument import load
    src = open(path, "rb").read()
    out, _ = cf.post_file(url, "slides.odp", src)
    za, zb = archive("odp", src, out, lambda n: n == "content.xml")
    cf.check("odp content.xml: the same elements and attributes",
             shape(za.read("content.xml")) == shape(zb.read("content.xml")))
    pa, pb = odf_paragraphs(load(io.BytesIO(src))), odf_paragraphs(load(io.BytesIO(out)))
    cf.check("odp: as many paragraphs (odfpy)", len(pa) == len(pb), f"{len(pa)} vs {len(pb)}")
    cf.units_equal(url, "odp", [(a, b) for a, b in zip(pa, pb) if a.strip()])


def check_ods(url, path):
    from odf import teletype
    from odf.opendocument import load
    from odf.table import Table, TableCell
    src = open(path, "rb").read()
    out, _ = cf.post_file(url, "sheet.ods", src)
    za, zb = archive("ods", src, out, lambda n: n in ("content.xml", "styles.xml"))
    cf.check("ods content.xml: the same elements and attributes",
             shape(za.read("content.xml")) == shape(zb.read("content.xml")))
    da, db = load(io.BytesIO(src)), load(io.BytesIO(out))
    cf.check("ods: the same sheet names", [t.getAttribute("name") for t in da.getElementsByType(Table)] ==
             [t.getAttribute("name") for t in db.getElementsByType(Table)])
    pairs, kept = [], []
    for a, b in zip(da.getElementsByType(TableCell), db.getElementsByType(TableCell)):
        ta, tb = teletype.extractText(a), teletype.extractText(b)
        attrs = ("valuetype", "value", "datevalue", "formula")
        if [a.getAttribute(k) for k in attrs] != [b.getAttribute(k) for k in attrs]:
            kept.append(("attributes", ta, tb))
        if a.getAttribute("valuetype") == "string":
            pairs.append((ta, tb))
        elif ta != tb:
            kept.append((a.getAttribute("valuetype"), ta, tb))
    cf.check("ods: numbers, dates, formulas and their text unchanged", not kept, repr(kept))
    cf.units_equal(url, "ods", pairs)


BLOCKS = {"title", "h1", "h2", "h3", "p", "li"}


def xhtml_blocks(xml):
    """The texts of the leaf blocks: the title, headings, paragraphs, list items (the
    navigation's links); one holding another block is not itself one."""
    root = etree.fromstring(xml)    # XML: a document that is not well-formed raises
    res = []
    for e in root.iter():
        if not isinstance(e.tag, str):
            continue
        tag = etree.QName(e).localname
        if tag in BLOCKS and not any(isinstance(c.tag, str) and etree.QName(c).localname in BLOCKS
                                     for c in e.iter() if c is not e):
            res.append("".join(e.itertext()))
    return res


def check_epub(url, path):
    import ebooklib
    from ebooklib import epub
    warnings.filterwarnings("ignore", module="ebooklib")    # its notice about a future default
    src = open(path, "rb").read()
    out, ctype = cf.post_file(url, "story.epub", src)
    cf.check("epub: served as application/epub+zip", ctype.startswith("application/epub+zip"), ctype)
    za = zipfile.ZipFile(io.BytesIO(src))
    changed = {n for n in za.namelist() if n.endswith((".xhtml", ".opf", ".ncx"))}
    za, zb = archive("epub", src, out, lambda n: n in changed)
    tmp = "/tmp/doc-check-out.epub"
    with open(tmp, "wb") as f:
        f.write(out)
    ba, bb = epub.read_epub(path, {"ignore_ncx": False}), epub.read_epub(tmp, {"ignore_ncx": False})
    ia, ib = list(ba.get_items()), list(bb.get_items())
    cf.check("epub: the same items (ebooklib: ids, names, media types) and spine",
             [(i.get_id(), i.get_name(), i.media_type) for i in ia] ==
             [(i.get_id(), i.get_name(), i.media_type) for i in ib] and ba.spine == bb.spine)
    other = [i.get_name() for i, j in zip(ia, ib)
             if i.get_type() not in (ebooklib.ITEM_DOCUMENT, ebooklib.ITEM_NAVIGATION)
             and i.get_content() != j.get_content()]
    cf.check("epub: images, CSS and the other items byte-identical", not other, repr(other))
    lang = bb.get_metadata("DC", "language")
    cf.check("epub: dc:language is the target", lang and lang[0][0] == "fr", repr(lang))
    pairs = []
    for key in ("title", "description"):
        a, b = ba.get_metadata("DC", key), bb.get_metadata("DC", key)
        pairs += [(x[0], y[0]) for x, y in zip(a, b)]
    cf.check("epub: the author unchanged", ba.get_metadata("DC", "creator") == bb.get_metadata("DC", "creator"))
    for n in sorted(changed):
        if not n.endswith(".xhtml"):
            continue
        a, b = za.read(n), zb.read(n)
        try:
            sa, sb = shape(a, ("alt", "title")), shape(b, ("alt", "title"))
            # the root's lang and xml:lang, where the source has them, become the target's
            la, lb = root_langs(sa), root_langs(sb)
            cf.check(f"epub {n}: the root's lang attributes are the target", {k for k, _ in la} == {k for k, _ in lb}
                     and all(v == "fr" for _, v in lb), f"{la} -> {lb}")
            ok = without_root_langs(sa) == without_root_langs(sb)
        except etree.XMLSyntaxError as e:
            ok = False
            print("      ", n, e)
        cf.check(f"epub {n}: well-formed XML with the same elements and attributes (lxml)", ok)
        if ok:
            xa, xb = xhtml_blocks(a), xhtml_blocks(b)
            cf.check(f"epub {n}: as many blocks", len(xa) == len(xb), f"{len(xa)} vs {len(xb)}")
            pairs += list(zip(xa, xb))
    ncx = [n for n in changed if n.endswith(".ncx")]
    for n in ncx:
        N = "{http://www.daisy.org/z3986/2005/ncx/}"

        def labels(x):
            r = etree.fromstring(x)
            return ["".join(t.itertext()) for t in r.iter(N + "text")
                    if t.getparent().tag in (N + "navLabel", N + "docTitle")]
        pairs += list(zip(labels(za.read(n)), labels(zb.read(n))))
    cf.units_equal(url, "epub", [(a, b) for a, b in pairs if a.strip()])


def main():
    url, d = sys.argv[1], sys.argv[2]
    check_pptx(url, os.path.join(d, "slides.pptx"))
    check_xlsx(url, os.path.join(d, "sheet.xlsx"))
    check_odp(url, os.path.join(d, "slides.odp"))
    check_ods(url, os.path.join(d, "sheet.ods"))
    check_epub(url, os.path.join(d, "story.epub"))
    print(f"doc-check (zip formats): {cf.passed} passed, {cf.failed} failed")
    sys.exit(1 if cf.failed else 0)


if __name__ == "__main__":
    main()
