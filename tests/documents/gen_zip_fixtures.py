#!/usr/bin/python3
"""Real-world-shaped .pptx, .xlsx, .odp, .ods and .epub files (issue 52), for
`make doc-check` (check_zip_formats.py) and tests/test_doc_zipformats.c.

    /usr/bin/python3 tests/documents/gen_zip_fixtures.py OUT_DIR

Generated at test time into build/ (never committed).  Writers:
  pptx  the PresentationML parts written here (no python-pptx in Debian's
        python3 set): two slides with a title, a body of bullets with bold /
        italic runs and a line break, a 2x2 table, a slide-number field; notes
        on the first slide; a picture (a PNG) left as it is
  xlsx  openpyxl (shared strings, numbers, a formula, two sheets), then one
        shared string made rich text (r/t runs with rPr) and one cell an
        inline string (t="inlineStr"), as Excel and other writers make them
  odp   odfpy: two pages with a title and body frames (spans), a table, notes
  ods   odfpy: string cells (one with a span), a float cell, a date cell and a
        formula cell, two sheets
  epub  ebooklib: EPUB 3 with nav.xhtml and toc.ncx, chapters with headings,
        paragraphs with inline markup, an empty <a id="..."/> anchor (XML's
        empty-element form, which HTML reads otherwise), an image, CSS;
        (bench/file_load.py --format epub makes a long one with make_epub)
Zip timestamps are fixed, so a rerun gives the same bytes.
"""
import io
import os
import struct
import sys
import zipfile
import zlib

FIXED = (2026, 1, 2, 3, 4, 6)


def png(w=4, h=4):
    raw = b"".join(b"\x00" + bytes([200, 30, 30] * w) for _ in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def write_zip(path, entries):
    """entries: (name, bytes, stored) in order."""
    with zipfile.ZipFile(path, "w") as z:
        for name, data, stored in entries:
            zi = zipfile.ZipInfo(name, FIXED)
            zi.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            z.writestr(zi, data)


def rezip(data, patch=None):
    """The archive again with fixed timestamps; patch(name, bytes) -> bytes."""
    src = zipfile.ZipFile(io.BytesIO(data))
    entries = []
    for info in src.infolist():
        b = src.read(info.filename)
        if patch:
            b = patch(info.filename, b)
        entries.append((info.filename, b, info.compress_type == zipfile.ZIP_STORED))
    return entries


# ---- pptx ---------------------------------------------------------------------------

P_NS = ('xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
        'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"')
DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"


def sp(i, name, paras, ph=None):
    php = f'<p:nvPr><p:ph type="{ph}"/></p:nvPr>' if ph else '<p:nvPr/>'
    return (f'<p:sp><p:nvSpPr><p:cNvPr id="{i}" name="{name}"/><p:cNvSpPr/>{php}</p:nvSpPr><p:spPr/>'
            f'<p:txBody><a:bodyPr/><a:lstStyle/>{"".join(paras)}</p:txBody></p:sp>')


def para(*runs, lvl=None):
    ppr = f'<a:pPr lvl="{lvl}"/>' if lvl is not None else ''
    out = []
    for r in runs:
        if r == "<br>":
            out.append('<a:br><a:rPr lang="en-US"/></a:br>')
        elif isinstance(r, tuple):
            attrs = ' '.join(f'{k}="1"' for k in r[1])
            out.append(f'<a:r><a:rPr lang="en-US" {attrs} dirty="0"/><a:t>{r[0]}</a:t></a:r>')
        else:
            out.append(f'<a:r><a:rPr lang="en-US" dirty="0"/><a:t>{r}</a:t></a:r>')
    return f'<a:p>{ppr}{"".join(out)}<a:endParaRPr lang="en-US"/></a:p>'


def table():
    def cell(t):
        return f'<a:tc><a:txBody><a:bodyPr/><a:lstStyle/>{para(t)}</a:txBody><a:tcPr/></a:tc>'
    rows = [("Quarter", "Revenue"), (("The results were good.",), "Sales grew in the north.")]
    trs = "".join('<a:tr h="370840">' + "".join(cell(c if isinstance(c, str) else c[0]) for c in r) + '</a:tr>'
                  for r in rows)
    return ('<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="5" name="Table 4"/><p:cNvGraphicFramePr/><p:nvPr/>'
            '</p:nvGraphicFramePr><p:xfrm><a:off x="0" y="0"/><a:ext cx="6000000" cy="741680"/></p:xfrm>'
            '<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl>'
            '<a:tblGrid><a:gridCol w="3000000"/><a:gridCol w="3000000"/></a:tblGrid>' + trs +
            '</a:tbl></a:graphicData></a:graphic></p:graphicFrame>')


def slide(shapes):
    return (DECL + f'<p:sld {P_NS}><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/>'
            f'<p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>{"".join(shapes)}</p:spTree></p:cSld>'
            '<p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>')


def make_pptx(path):
    fld = ('<a:p><a:fld id="{B6F15528-21DE-4FAA-801E-634DDDAF4B2B}" type="slidenum"><a:rPr lang="en-US"/>'
           '<a:t>1</a:t></a:fld><a:endParaRPr lang="en-US"/></a:p>')
    s1 = slide([sp(2, "Title 1", [para("Quarterly report")], "title"),
                sp(3, "Content 2", [para("The team ", ("finished", ["b"]), " the new design."),
                                    para("Customers ", ("liked", ["i"]), " the faster pages.", lvl=1),
                                    para("Next year", "<br>", "we will open two offices.")], "body"),
                sp(4, "Slide Number 3", [fld], "sldNum")])
    s2 = slide([sp(2, "Title 1", [para("Results by region")], "title"), table(),
                '<p:pic><p:nvPicPr><p:cNvPr id="6" name="Picture 5"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr>'
                '<p:blipFill><a:blip r:embed="rId2"/></p:blipFill><p:spPr/></p:pic>'])
    notes = (DECL + f'<p:notes {P_NS}><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/>'
             '<p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>' +
             sp(2, "Notes Placeholder 2", [para("Remember to thank the design team.")], "body") +
             '</p:spTree></p:cSld></p:notes>')
    ct = (DECL + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
          '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
          '<Default Extension="xml" ContentType="application/xml"/><Default Extension="png" ContentType="image/png"/>'
          '<Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.'
          'presentationml.presentation.main+xml"/>'
          '<Override PartName="/ppt/slides/slide1.xml" ContentType="application/vnd.openxmlformats-officedocument.'
          'presentationml.slide+xml"/>'
          '<Override PartName="/ppt/slides/slide2.xml" ContentType="application/vnd.openxmlformats-officedocument.'
          'presentationml.slide+xml"/>'
          '<Override PartName="/ppt/notesSlides/notesSlide1.xml" ContentType="application/vnd.openxmlformats-'
          'officedocument.presentationml.notesSlide+xml"/></Types>')
    pres = (DECL + f'<p:presentation {P_NS}><p:sldIdLst><p:sldId id="256" r:id="rId2"/><p:sldId id="257" '
            'r:id="rId3"/></p:sldIdLst><p:sldSz cx="12192000" cy="6858000"/><p:notesSz cx="6858000" '
            'cy="9144000"/></p:presentation>')
    rels = (DECL + f'<Relationships xmlns="{PKG_REL}"><Relationship Id="rId1" Type="{REL}/officeDocument" '
            'Target="ppt/presentation.xml"/></Relationships>')
    prels = (DECL + f'<Relationships xmlns="{PKG_REL}"><Relationship Id="rId2" Type="{REL}/slide" '
             f'Target="slides/slide1.xml"/><Relationship Id="rId3" Type="{REL}/slide" Target="slides/slide2.xml"/>'
             '</Relationships>')
    s1rels = (DECL + f'<Relationships xmlns="{PKG_REL}"><Relationship Id="rId2" Type="{REL}/notesSlide" '
              'Target="../notesSlides/notesSlide1.xml"/></Relationships>')
    s2rels = (DECL + f'<Relationships xmlns="{PKG_REL}"><Relationship Id="rId2" Type="{REL}/image" '
              'Target="../media/image1.png"/></Relationships>')
    write_zip(path, [("[Content_Types].xml", ct.encode(), False), ("_rels/.rels", rels.encode(), False),
                     ("ppt/presentation.xml", pres.encode(), False),
                     ("ppt/_rels/presentation.xml.rels", prels.encode(), False),
                     ("ppt/slides/slide1.xml", s1.encode(), False),
                     ("ppt/slides/_rels/slide1.xml.rels", s1rels.encode(), False),
                     ("ppt/slides/slide2.xml", s2.encode(), False),
                     ("ppt/slides/_rels/slide2.xml.rels", s2rels.encode(), False),
                     ("ppt/notesSlides/notesSlide1.xml", notes.encode(), False),
                     ("ppt/media/image1.png", png(), True)])


# ---- xlsx -----------------------------------------------------------------------------

def make_xlsx(path):
    import openpyxl
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Budget"
    ws.append(["Item", "Cost", "Note"])
    ws.append(["Office rent", 1200, "Paid every month."])
    ws.append(["New laptops", 3400.5, "RICHTEXT"])
    ws.append(["Total", "=SUM(B2:B3)", "INLINE"])
    ws2 = wb.create_sheet("Plans")
    ws2.append(["The project starts in spring.", 2027])
    buf = io.BytesIO()
    wb.save(buf)

    # This openpyxl writes every string inline: all but C4 of the first sheet made
    # shared strings, as Excel writes them, RICHTEXT a rich-text item.
    import re
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    strings = []

    def share(m):
        if m.group(1) == "C4" and m.group(3) == "INLINE":
            return f'<c r="C4"{m.group(2)} t="inlineStr"><is><t>Checked by the accountant.</t></is></c>'
        strings.append(m.group(3))
        return f'<c r="{m.group(1)}"{m.group(2)} t="s"><v>{len(strings) - 1}</v></c>'
    entries = []
    for info in src.infolist():
        b = src.read(info.filename)
        if info.filename.startswith("xl/worksheets/sheet"):
            b = re.sub(r'<c r="([A-Z]+[0-9]+)"([^>]*?) t="inlineStr"><is><t>([^<]*)</t></is></c>', share,
                       b.decode()).encode()
        elif info.filename == "[Content_Types].xml":
            b = b.replace(b"</Types>", b'<Override PartName="/xl/sharedStrings.xml" ContentType="application/'
                          b'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>')
        elif info.filename == "xl/_rels/workbook.xml.rels":
            b = b.replace(b"</Relationships>", b'<Relationship Id="rIdSst" Type="http://schemas.openxmlformats.org/'
                          b'officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>'
                          b"</Relationships>")
        entries.append((info.filename, b, False))
    items = []
    for t in strings:
        if t == "RICHTEXT":
            items.append('<si><r><t xml:space="preserve">The order was </t></r><r><rPr><b/><sz val="11"/></rPr>'
                         '<t>delayed</t></r><r><t xml:space="preserve"> by the supplier.</t></r></si>')
        else:
            items.append(f"<si><t>{t}</t></si>")
    sst = (DECL + '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
           f'count="{len(items)}" uniqueCount="{len(items)}">' + "".join(items) + "</sst>")
    entries.append(("xl/sharedStrings.xml", sst.encode(), False))
    write_zip(path, entries)


# ---- odp, ods ----------------------------------------------------------------------------

def save_odf(doc, path):
    buf = io.BytesIO()
    doc.write(buf)
    write_zip(path, rezip(buf.getvalue()))


def cell(text):
    from odf.table import TableCell
    from odf.text import P
    tc = TableCell(valuetype="string")
    tc.addElement(P(text=text))
    return tc


def make_odp(path):
    from odf.opendocument import OpenDocumentPresentation
    from odf.style import Style, MasterPage, PageLayout, TextProperties
    from odf.draw import Page, Frame, TextBox
    from odf.presentation import Notes
    from odf.text import P, Span
    from odf.table import Table, TableColumn, TableRow
    doc = OpenDocumentPresentation()
    pl = PageLayout(name="PL")
    doc.automaticstyles.addElement(pl)
    mp = MasterPage(name="Default", pagelayoutname=pl)
    doc.masterstyles.addElement(mp)
    bold = Style(name="Bold", family="text")
    bold.addElement(TextProperties(fontweight="bold"))
    doc.automaticstyles.addElement(bold)
    p1 = Page(masterpagename=mp, name="page1")
    f = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
    tb = TextBox()
    tb.addElement(P(text="Our plans for the autumn"))
    f.addElement(tb)
    p1.addElement(f)
    f2 = Frame(width="20cm", height="10cm", x="1cm", y="5cm")
    tb2 = TextBox()
    q = P(text="The library will ")
    q.addElement(Span(stylename=bold, text="reopen"))
    q.addText(" in October.")
    tb2.addElement(q)
    tb2.addElement(P(text="Children can borrow three books at a time."))
    f2.addElement(tb2)
    p1.addElement(f2)
    n = Notes()
    nf = Frame(width="10cm", height="5cm", x="1cm", y="1cm")
    ntb = TextBox()
    ntb.addElement(P(text="Speak slowly on this slide."))
    nf.addElement(ntb)
    n.addElement(nf)
    p1.addElement(n)
    doc.presentation.addElement(p1)
    p2 = Page(masterpagename=mp, name="page2")
    tf = Frame(width="20cm", height="6cm", x="1cm", y="1cm")
    t = Table()
    t.addElement(TableColumn(numbercolumnsrepeated=2))
    for row in (("Room", "Opening time"), ("The reading room", "Every morning at nine.")):
        tr = TableRow()
        for c in row:
            tr.addElement(cell(c))
        t.addElement(tr)
    tf.addElement(t)
    p2.addElement(tf)
    doc.presentation.addElement(p2)
    save_odf(doc, path)


def make_ods(path):
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.style import Style, TextProperties
    from odf.table import Table, TableRow, TableCell
    from odf.text import P, Span
    doc = OpenDocumentSpreadsheet()
    bold = Style(name="Bold", family="text")
    bold.addElement(TextProperties(fontweight="bold"))
    doc.automaticstyles.addElement(bold)
    t = Table(name="Expenses")
    rows = [[("string", "Item"), ("string", "Amount"), ("string", "Comment")],
            [("string", "Train tickets"), ("float", 84.5), ("string", "The trip was booked early.")],
            [("string", "Hotel"), ("float", 320), ("span", None)],
            [("string", "Total"), ("formula", "of:=SUM([.B2:.B3])"), ("date", "2026-03-01")]]
    for r in rows:
        tr = TableRow()
        for kind, v in r:
            if kind == "string":
                tc = cell(v)
            elif kind == "float":
                tc = TableCell(valuetype="float", value=v)
                tc.addElement(P(text=str(v)))
            elif kind == "formula":
                tc = TableCell(valuetype="float", value=404.5, formula=v)
                tc.addElement(P(text="404.5"))
            elif kind == "date":
                tc = TableCell(valuetype="date", datevalue=v)
                tc.addElement(P(text="03/01/26"))
            else:
                tc = TableCell(valuetype="string")
                q = P(text="Two nights, ")
                q.addElement(Span(stylename=bold, text="breakfast"))
                q.addText(" included.")
                tc.addElement(q)
            tr.addElement(tc)
        t.addElement(tr)
    doc.spreadsheet.addElement(t)
    t2 = Table(name="Notes")
    tr = TableRow()
    tr.addElement(cell("Ask the bank about the new card."))
    t2.addElement(tr)
    doc.spreadsheet.addElement(t2)
    save_odf(doc, path)


# ---- epub ------------------------------------------------------------------------------

SENTENCES = [
    "The old lighthouse stood at the end of the harbour.",
    "Every evening the keeper climbed the stairs and lit the lamp.",
    "Ships from distant countries passed the rocks in safety.",
    "In winter the storms were long and the nights were cold.",
    "The village children brought him bread and news from the market.",
    "He wrote everything he saw in a small blue notebook.",
    "One morning a boat with a red sail arrived in the bay.",
    "Nobody knew where it had come from or who had sent it.",
]


def chapter_html(i, paragraphs, texts):
    from xml.sax.saxutils import escape
    at = (i - 1) * 2 * paragraphs
    body = [f'<h1>Chapter {i}: The harbour</h1>', f'<p><a id="start{i}"/>'
            f'{escape(texts[at % len(texts)])} The keeper was <em>very</em> happy.</p>']
    for k in range(paragraphs):
        a, b = texts[(at + 2 * k) % len(texts)], texts[(at + 2 * k + 1) % len(texts)]
        body.append(f'<p>{escape(a)} <strong>{escape(b)}</strong></p>')
    body.append('<p><img src="images/lamp.png" alt="The lamp of the lighthouse"/></p>')
    return "\n".join(body)


def make_epub(path, chapters=3, paragraphs=4, texts=SENTENCES, images=()):
    """texts: the sentences the chapters are made of, in order (two a paragraph);
    images: more pictures' bytes (a book's illustrations), copied as they are."""
    from ebooklib import epub
    book = epub.EpubBook()
    book.set_identifier("mtserve-doc-check-1")
    book.set_title("The Keeper of the Light")
    book.set_language("en")
    book.add_author("A. Writer")
    book.add_metadata("DC", "description", "A short story about a lighthouse and the sea.")
    css = epub.EpubItem(uid="style", file_name="style/main.css", media_type="text/css",
                        content=b"body { font-family: serif; }\nh1 { text-align: center; }\n")
    book.add_item(css)
    img = epub.EpubItem(uid="lamp", file_name="images/lamp.png", media_type="image/png", content=png())
    book.add_item(img)
    for k, b in enumerate(images):
        book.add_item(epub.EpubItem(uid=f"plate{k}", file_name=f"images/plate{k}.jpg", media_type="image/jpeg",
                                    content=b))
    chs = []
    for i in range(1, chapters + 1):
        c = epub.EpubHtml(title=f"Chapter {i}: The harbour", file_name=f"chap_{i:03d}.xhtml", lang="en")
        c.content = chapter_html(i, paragraphs, texts)
        c.add_item(css)
        book.add_item(c)
        chs.append(c)
    book.toc = [epub.Link(c.file_name, c.title, f"c{i}") for i, c in enumerate(chs, 1)]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav"] + chs
    tmp = path + ".tmp"
    import datetime
    epub.write_epub(tmp, book, {"mtime": datetime.datetime(*FIXED)})
    with open(tmp, "rb") as f:
        data = f.read()
    os.unlink(tmp)
    write_zip(path, rezip(data))


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    make_pptx(os.path.join(out, "slides.pptx"))
    make_xlsx(os.path.join(out, "sheet.xlsx"))
    make_odp(os.path.join(out, "slides.odp"))
    make_ods(os.path.join(out, "sheet.ods"))
    make_epub(os.path.join(out, "story.epub"))


if __name__ == "__main__":
    main()
