#!/usr/bin/python3
"""check_files.py: one file of each format through the real server's POST /translate_file
(the shipped en-fr model), each output read by an independent reader (issue 28).

    tests/html/with_server.sh /usr/bin/python3 tests/documents/check_files.py {url}

(`make doc-check`, part of `make check`.) For each fixture of tests/fixtures/documents
(plus a text and an HTML file made here; and tests/fixtures/markdown/README.md,
tests/fixtures/xliff/*.xlf through check_markup.py):
  structure  the format's own checker: check_srt.py (.srt, .vtt), check_po.py (polib),
             check_office.py (python3-docx, lxml on the odt's XML); text and HTML by
             html5lib / line counting here
  text       the output's text is the model's translation of the input's text: each
             unit's text (a docx/odt paragraph, a text paragraph, a subtitle sentence
             over its cues, an HTML block) equals POST /translate of the source unit's
             text (same model, greedy), whitespace runs made one space
Prints one line per check and "doc-check: N passed, M failed"; exits 1 on a failure.
"""
import html as htmlmod
import io
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests/fixtures/documents")
HERE = os.path.dirname(os.path.abspath(__file__))
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok  ", name)
    else:
        failed += 1
        print("FAIL", name, ("\n      " + detail[:1500]) if detail else "")


def ws(s):
    return re.sub(r"\s+", " ", s).strip()


def post_file(url, name, data, source="en", target="fr"):
    boundary = "doc-check-boundary-1"
    body = b"".join([
        f'--{boundary}\r\nContent-Disposition: form-data; name="source"\r\n\r\n{source}\r\n'.encode(),
        f'--{boundary}\r\nContent-Disposition: form-data; name="target"\r\n\r\n{target}\r\n'.encode(),
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        f'Content-Type: application/octet-stream\r\n\r\n'.encode(), data, b"\r\n",
        f"--{boundary}--\r\n".encode()])
    req = urllib.request.Request(url + "/translate_file", data=body, method="POST",
                                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=300) as r:
        reply = json.loads(r.read())
    path = reply["translatedFileUrl"].split("://", 1)[1].split("/", 1)[1]
    with urllib.request.urlopen(url + "/" + path, timeout=60) as r:
        return r.read(), r.headers.get("Content-Type", "")


_cache = {}


def translate(url, text):
    if text not in _cache:
        body = json.dumps({"text": text, "model": "en-fr"}).encode()
        req = urllib.request.Request(url + "/translate", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                _cache[text] = json.loads(r.read())["translations"][0]["text"]
        except urllib.error.HTTPError as e:
            _cache[text] = f"(POST /translate {text!r}: {e.code} {e.read()[:200]!r})"

    return _cache[text]


def run_checker(script, src, out_bytes, suffix):
    path = f"/tmp/doc-check-out{suffix}"
    with open(path, "wb") as f:
        f.write(out_bytes)
    p = subprocess.run(["/usr/bin/python3", os.path.join(HERE, script), src, path], capture_output=True, text=True)
    return p.returncode == 0, (p.stdout + p.stderr).strip()


def units_equal(url, name, pairs):
    """pairs: (source unit text, output unit text)"""
    bad = [(s, o, translate(url, s)) for s, o in pairs if ws(o) != ws(translate(url, s))]
    check(f"{name}: each unit's text is the model's translation of the source unit ({len(pairs)} units)",
          not bad and pairs, "\n      ".join(f"{s!r}: got {o!r}, /translate {t!r}" for s, o, t in bad[:5]))


def docx_paragraphs(data):
    import docx
    d = docx.Document(io.BytesIO(data))
    paras = list(d.paragraphs)
    for t in d.tables:
        for row in t.rows:
            for cell in row.cells:
                paras.extend(cell.paragraphs)
    return [p.text.replace("\t", " ").replace("\n", " ") for p in paras]


def odt_paragraphs(data):
    from lxml import etree
    T = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"

    def text_of(el):
        parts = [el.text or ""]
        for c in el:
            tag = etree.QName(c).localname if isinstance(c.tag, str) else ""
            if tag in ("s", "tab", "line-break"):
                parts.append(" ")
            elif tag in ("span", "a", "meta", "ruby", "ruby-base"):
                parts.append(text_of(c))
            # notes, annotations, frames, fields: not the paragraph's text
            parts.append(c.tail or "")
        return "".join(parts)
    root = etree.fromstring(zipfile.ZipFile(io.BytesIO(data)).read("content.xml"))
    return [text_of(p) for p in root.iter("{%s}p" % T, "{%s}h" % T)]


def srt_units(text, vtt):
    """Cue texts (tags removed, lines joined), merged as doc_subtitles.c merges: a cue
    whose text does not end a sentence is joined by the next (at most 5 cues), unless
    the next opens with a dash."""
    cues = []
    for block in re.split(r"\r?\n\r?\n", text.replace("\ufeff", "").strip()):
        lines = [l for l in re.split(r"\r?\n", block)]
        t = [i for i, l in enumerate(lines) if "-->" in l]
        if not t:
            continue
        body = " ".join(lines[t[0] + 1:])
        body = re.sub(r"\{\\[^}]*\}|<[^<>]+>", "", body)
        cues.append(ws(htmlmod.unescape(body) if vtt else body))
    units, cur = [], []
    for c in cues:
        if not c:                       # a cue without text is no unit's part
            continue
        if cur and (c.startswith("-") or len(cur) >= 5):
            units.append(cur)
            cur = []
        cur.append(c)
        if re.search(r"[.!?…][\"')\]»”’]*$", c):
            units.append(cur)
            cur = []
    if cur:
        units.append(cur)
    return units


def markup_files(url):
    """Markdown, XLIFF 1.2 and 2.0 (issue 52): check_markup.py reads both files (markdown-it,
    translate-toolkit, lxml) and gives the units; each compared with POST /translate, inline
    codes left out of both (the spaces the server puts around a code it placed aside)."""
    for fmt, name, mime in (("md", "markdown/README.md", "text/markdown"),
                            ("xliff12", "xliff/messages.en-fr.xlf", "application/xliff+xml"),
                            ("xliff20", "xliff/app.en-fr.xlf", "application/xliff+xml")):
        src = os.path.join(ROOT, "tests/fixtures", name)
        out, ctype = post_file(url, os.path.basename(name), open(src, "rb").read())
        check(f"{name}: served as {mime}", ctype.startswith(mime), ctype)
        path = "/tmp/doc-check-out-" + fmt
        with open(path, "wb") as f:
            f.write(out)
        p = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "check_markup.py"), fmt, src, path, "fr"],
                           capture_output=True, text=True)
        check(f"{name}: structure, inline codes, links, untranslated bytes kept (check_markup.py)",
              p.returncode == 0, (p.stdout + p.stderr).strip())
        if p.returncode:
            continue
        pairs = json.loads(p.stdout)
        same = lambda o, t, codes: ws(o) == ws(t) or (codes and re.sub(r"\s", "", o) == re.sub(r"\s", "", t))
        bad = [(s, o, translate(url, s)) for s, o, codes in pairs if not same(o, translate(url, s), codes)]
        spaced = sum(1 for s, o, codes in pairs if ws(o) != ws(translate(url, s)))
        check(f"{name}: each unit's text is the model's translation of the source unit ({len(pairs)} units, "
              f"{spaced} equal but for the spaces around an inline code)", not bad,
              "\n      ".join(f"{s!r}: got {o!r}, /translate {t!r}" for s, o, t in bad[:5]))


def main():
    url = sys.argv[1]
    # plain text
    txt = ("The library is free software.\n\nIt runs on every system\nthat has a C compiler.\n"
           "  - It is small.\n").encode()
    out, ctype = post_file(url, "notes.txt", txt)
    check("txt: served as text/plain", ctype.startswith("text/plain"), ctype)
    check("txt: the same lines, blank lines and indentation",
          [bool(l.strip()) for l in out.decode().split("\n")] == [bool(l.strip()) for l in txt.decode().split("\n")]
          and out.decode().split("\n")[4].startswith("  "), out.decode())
    lines = out.decode().split("\n")
    units_equal(url, "txt", [("The library is free software.", lines[0]),
                             ("It runs on every system that has a C compiler.", lines[2] + " " + lines[3]),
                             ("- It is small.", lines[4])])
    # html
    html = (b"<!DOCTYPE html><html><head><title>Notes</title></head><body><h1>The manual</h1>"
            b"<p>This package provides the <b>documentation</b> of the library.</p>"
            b"<ul><li>It is free software.</li></ul><pre>make install</pre></body></html>")
    out, ctype = post_file(url, "page.html", html)
    import html5lib
    t_in = html5lib.parse(html.decode(), namespaceHTMLElements=False)
    t_out = html5lib.parse(out.decode(), namespaceHTMLElements=False)
    check("html: the same elements in the same order",
          [e.tag for e in t_in.iter()] == [e.tag for e in t_out.iter()], out.decode())
    check("html: pre kept byte for byte", b"<pre>make install</pre>" in out)
    blocks = [(t_in.find(f".//{tag}"), t_out.find(f".//{tag}")) for tag in ("title", "h1", "p", "li")]
    units_equal(url, "html", [("".join(a.itertext()), "".join(b.itertext())) for a, b in blocks])
    # subtitles
    for name in ("sample.srt", "crlf.srt", "sample.vtt"):
        src = os.path.join(FIX, name)
        data = open(src, "rb").read()
        out, _ = post_file(url, name, data)
        ok, msg = run_checker("check_srt.py", src, out, os.path.splitext(name)[1])
        check(f"{name}: cues, numbers, timings, settings and styling kept (check_srt.py)", ok, msg)
        vtt = name.endswith(".vtt")
        su, ou = srt_units(data.decode(), vtt), srt_units(out.decode(), vtt)
        flat = [c for u in ou for c in u]
        pairs, k = [], 0
        for u in su:                     # the output's cues regrouped as the source's units
            pairs.append((" ".join(u), " ".join(flat[k:k + len(u)])))
            k += len(u)
        units_equal(url, name, pairs)
        check(f"{name}: every cue that had text has text", len(flat) == sum(len(u) for u in su), repr(flat))
    # gettext
    src = os.path.join(FIX, "sample.po")
    out, _ = post_file(url, "sample.po", open(src, "rb").read())
    ok, msg = run_checker("check_po.py", src, out, ".po")
    check("sample.po: entries, msgids, comments, plurals kept; placeholders exact; fuzzy set (check_po.py)", ok, msg)
    m = re.search(r"(\d+) filled", msg)
    check("sample.po: the model's translations fill entries", m and int(m.group(1)) > 0, msg)
    # office
    for name, paras in (("office.docx", docx_paragraphs), ("office.odt", odt_paragraphs)):
        src = os.path.join(FIX, name)
        data = open(src, "rb").read()
        out, ctype = post_file(url, name, data)
        ok, msg = run_checker("check_office.py", src, out, os.path.splitext(name)[1])
        check(f"{name}: parts, paragraphs, runs and their formatting, styles, tables kept (check_office.py)", ok, msg)
        pi, po = paras(data), paras(out)
        check(f"{name}: as many paragraphs", len(pi) == len(po), f"{len(pi)} vs {len(po)}")
        units_equal(url, name, [(a, b) for a, b in zip(pi, po) if a.strip()])
    markup_files(url)
    print(f"doc-check: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
