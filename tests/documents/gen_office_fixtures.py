#!/usr/bin/python3
"""Small .docx and .odt fixtures for tests/test_doc_office.c and the fuzz seeds.

    /usr/bin/python3 tests/documents/gen_office_fixtures.py [OUT_DIR]

OUT_DIR defaults to tests/fixtures/documents.  Needs Debian's python3-docx and
python3-odf.  The files are committed (a few KB each): the C tests never run
Python.  Zip timestamps are fixed so a rerun gives the same bytes (python-docx
and odfpy write the current time otherwise).

office.docx   a heading, paragraphs with bold / italic / bold+italic runs, a
              run split inside a word, a tab and a line break, a table (2x2)
              with a bold run in a cell, an empty paragraph, a page header and
              footer
office.odt    a heading, paragraphs with bold / italic spans, a span inside a
              word, text:s / text:tab / text:line-break, a link, a 2x2 table,
              a list, a footnote, an empty paragraph, a page header
"""
import io
import os
import sys
import zipfile

from docx import Document
from docx.enum.text import WD_BREAK

FIXED = (2026, 1, 2, 3, 4, 6)


def rezip(data, stored_first=None):
    """The archive again with fixed timestamps (entry order, compression kept)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            zi = zipfile.ZipInfo(info.filename, FIXED)
            zi.compress_type = info.compress_type
            zi.external_attr = info.external_attr
            dst.writestr(zi, src.read(info.filename))
    return out.getvalue()


def make_docx(path):
    d = Document()
    d.add_heading("Installing the package", level=1)
    p = d.add_paragraph("This package provides the ")
    p.add_run("documentation").bold = True
    p.add_run(" of the ")
    p.add_run("library").italic = True
    p.add_run(".")
    p = d.add_paragraph()
    r = p.add_run("It is free software")
    r.bold = True
    r.italic = True
    p.add_run(" and it runs on every ")
    p.add_run("archi").bold = True
    p.add_run("tecture.")
    p = d.add_paragraph("Name:")
    r = p.add_run()
    r.add_tab()
    p.add_run("value of the field")
    r = p.add_run()
    r.add_break(WD_BREAK.LINE)
    p.add_run("on a second line.")
    t = d.add_table(rows=2, cols=2)
    t.cell(0, 0).text = "Package name"
    t.cell(0, 1).text = "Description"
    t.cell(1, 0).text = "libfoo"
    c = t.cell(1, 1).paragraphs[0]
    c.add_run("A small ")
    c.add_run("fast").bold = True
    c.add_run(" library.")
    d.add_paragraph("")
    d.add_paragraph("The end of the document.", style="List Bullet")
    sec = d.sections[0]
    sec.header.paragraphs[0].text = "Debian manual"
    sec.footer.paragraphs[0].text = "Free software page"
    buf = io.BytesIO()
    d.save(buf)
    with open(path, "wb") as f:
        f.write(rezip(buf.getvalue()))


def make_odt(path):
    from odf.opendocument import OpenDocumentText
    from odf.style import (Style, TextProperties, MasterPage, PageLayout, PageLayoutProperties,
                           Header, Footer)
    from odf.text import H, P, Span, S, Tab, LineBreak, A, List, ListItem, Note, NoteCitation, NoteBody
    from odf.table import Table, TableColumn, TableRow, TableCell

    doc = OpenDocumentText()
    bold = Style(name="Bold", family="text")
    bold.addElement(TextProperties(fontweight="bold"))
    italic = Style(name="Italic", family="text")
    italic.addElement(TextProperties(fontstyle="italic"))
    doc.automaticstyles.addElement(bold)
    doc.automaticstyles.addElement(italic)
    pl = PageLayout(name="PL")
    pl.addElement(PageLayoutProperties(pagewidth="21cm", pageheight="29.7cm"))
    doc.automaticstyles.addElement(pl)
    mp = MasterPage(name="Standard", pagelayoutname=pl)
    h = Header()
    h.addElement(P(text="Debian manual"))
    mp.addElement(h)
    f = Footer()
    f.addElement(P(text="Free software page"))
    mp.addElement(f)
    doc.masterstyles.addElement(mp)

    doc.text.addElement(H(outlinelevel=1, text="Installing the package"))
    p = P(text="This package provides the ")
    p.addElement(Span(stylename=bold, text="documentation"))
    p.addText(" of the ")
    p.addElement(Span(stylename=italic, text="library"))
    p.addText(".")
    doc.text.addElement(p)
    p = P()
    p.addElement(Span(stylename=bold, text="It is free software"))
    p.addText(" and it runs on every ")
    p.addElement(Span(stylename=bold, text="archi"))
    p.addText("tecture.")
    doc.text.addElement(p)
    p = P(text="Name:")
    p.addElement(Tab())
    p.addText("value of")
    p.addElement(S(c=2))
    p.addText("the field")
    p.addElement(LineBreak())
    p.addText("on a second line, see ")
    p.addElement(A(href="https://www.debian.org/", text="the web site"))
    p.addText(".")
    doc.text.addElement(p)
    p = P(text="A note follows")
    n = Note(noteclass="footnote", id="ftn1")
    n.addElement(NoteCitation(text="1"))
    nb = NoteBody()
    nb.addElement(P(text="The footnote text."))
    n.addElement(nb)
    p.addElement(n)
    p.addText(" this sentence.")
    doc.text.addElement(p)
    t = Table(name="T1")
    t.addElement(TableColumn(numbercolumnsrepeated=2))
    for row in (("Package name", "Description"), ("libfoo", None)):
        tr = TableRow()
        for cell in row:
            tc = TableCell()
            if cell is None:
                cp = P(text="A small ")
                cp.addElement(Span(stylename=bold, text="fast"))
                cp.addText(" library.")
            else:
                cp = P(text=cell)
            tc.addElement(cp)
            tr.addElement(tc)
        t.addElement(tr)
    doc.text.addElement(t)
    lst = List()
    for s in ("First item of the list.", "Second item."):
        li = ListItem()
        li.addElement(P(text=s))
        lst.addElement(li)
    doc.text.addElement(lst)
    doc.text.addElement(P(text=""))
    doc.text.addElement(P(text="The end of the document."))
    buf = io.BytesIO()
    doc.write(buf)
    with open(path, "wb") as f:
        f.write(rezip(buf.getvalue()))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "fixtures",
                                                             "documents")
    os.makedirs(out, exist_ok=True)
    make_docx(os.path.join(out, "office.docx"))
    make_odt(os.path.join(out, "office.odt"))


if __name__ == "__main__":
    main()
