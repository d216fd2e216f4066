#!/usr/bin/python3
"""bench/html_parsers.py: gumbo 0.10.1 vs libxml2 2.9's HTML parser on broken real-world
markup, against html5lib (a spec-conformant HTML5 parser in pure Python) as the reference.
Issue 27: "gumbo or libxml2's HTML parser: measure both on broken real-world markup and pick".

    cc -O2 bench/html_parsers.c -o build-hx/bench/html_parsers \
       $(pkg-config --cflags --libs gumbo libxml-2.0) -pthread
    /usr/bin/python3 bench/html_parsers.py --bin build-hx/bench/html_parsers [--quick] [--verbose]
        [--only compare|speed|depth] [--reps 20]

Needs Debian's python3-html5lib.  For each case, each parser's tree (bench/html_parsers.c
`tree`) is compared with html5lib's on four views:
  tree   the pre-order sequence of (depth, tag name) of every element, the whole document
  body   the same for the elements under <body> only, depths relative to it (what a
         translator of a fragment sees: the implied html/head/body are left out)
  attrs  (depth, name, sorted attributes) of every element
  text   the document's text (every text node in order, joined), exact
Then the speed on a ~1 MB document made of /usr/share/doc HTML pages, and the depth test:
parse and free N nested elements, each on a thread with a stack of its own (stack bytes
touched, and whether a 256 KB stack survives).
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

import html5lib

# ---------------------------------------------------------------------------------------
# the cases: (name, bytes).  Broken markup as found in the wild, one quirk each.
CASES = [
    ("misnested b/i", b"<p><b><i>x</b>y</i>z</p>"),
    ("misnested b across p (adoption agency)", b"<b>1<p>2</b>3</p>"),
    ("a around div (adoption agency)", b"<a href=x>1<div>2</a>3</div>"),
    ("misnested 3 formatting tags", b"<p><b><i><u>x</b>y</u>z</i>w</p>"),
    ("unclosed p", b"<p>one<p>two<p>three"),
    ("unclosed li", b"<ul><li>a<li>b<li>c</ul><li>d"),
    ("unclosed td/tr", b"<table><tr><td>a<td>b<tr><td>c</table>"),
    ("stray end tags", b"</p></div>text</span><b>x</b></i></a>"),
    ("stray </p> inside div", b"<div>a</p>b</div>"),
    ("table stray text (foster parenting)", b"<table>stray<tr><td>x</td></tr>more</table>"),
    ("table stray inline (foster parenting)", b"<table><b>bold<tr><td>c</td></tr></table>after"),
    ("table in p", b"<p>a<table><tr><td>b</table>c"),
    ("td outside table", b"<div><td>cell</td><tr>row</tr></div>"),
    ("&nbsp without semicolon", b"<p>a&nbsp b &copy 2024 &amp x &lt;y&gt</p>"),
    ("entities in attributes", b'<a href="?a=1&copy=2&nbsp=3&amp;b" title="&eacute;t&eacute &quot;q&quot">x</a>'),
    ("numeric entities", b"<p>&#233; &#xE9; &#x80; &#0; &#x110000; &#55296; &#X41; &#65</p>"),
    ("unknown and prefix entities", b"<p>&foo; &eacute &Eacute; &notit; &notin; &AMP &ampx</p>"),
    ("attributes without quotes", b"<a href=http://x/y?z=1&w=2 title=hello class=a/b>link</a>"),
    ("duplicate attributes", b"<p class=a class=b id=1 ID=2 data-x='1' data-X=\"2\">x</p>"),
    ("unclosed comment", b"<p>a<!-- never closed <b>x</b>"),
    ("bogus comments", b"<!--> <!---> <!-- a -- b --> <!x> <?php echo 1 ?><p>x</p>"),
    ("<br/> vs </br>", b"<p>a<br/>b</br>c<br>d<br></br>e</p>"),
    ("nested forms", b"<form id=1><form id=2><input name=a></form><input name=b></form>"),
    ("nested anchors", b"<a href=1>a<a href=2>b</a>c</a>"),
    ("uppercase tags", b"<P CLASS=X><B>Bold</B><BR><IMG SRC=a ALT=B><A HREF=Y>l</A></P>"),
    ("NUL bytes", b"<p>a\x00b<b\x00x>c</b\x00x><i t='\x00'>\x00</i></p>"),
    ("invalid UTF-8", b"<p>caf\xe9 \xff\xfe ok \xc3\x28 \xe2\x82 end</p>"),
    ("UTF-8 surrogates and overlong", b"<p>a\xed\xa0\x80b\xc0\xafc\xf4\x90\x80\x80d</p>"),
    ("self-closing non-void", b"<div/>text<span/>more<p/>x"),
    ("void end tags", b"<p><img src=a></img><input></input>x</p>"),
    ("script with markup", b"<script>if (a<b && c>d) document.write(\"</p>\")</script><p>x"),
    ("script escape states", b"<script><!--<script></script>x</script>y</script><p>z"),
    ("style", b"<style>p > b { content: \"</p>\" }</style><p>x</p>"),
    ("textarea and title RCDATA", b"<title>a<b>&amp;</title><textarea><b>not bold</b>&amp;</textarea>"),
    ("pre leading newline", b"<pre>\n\nx\n</pre><textarea>\ny</textarea>"),
    ("svg foreignObject mixed case", b'<svg viewBox="0 0 1 1"><foreignObject><p>x</p></foreignObject><clipPath/><path d=M0/></svg>'),
    ("math annotation-xml", b'<math><mi>x</mi><annotation-xml encoding="text/html"><p>a</p></annotation-xml></math>'),
    ("html inside svg breaks out", b"<svg><g><p>breaks out</p><b>b</b></g></svg>"),
    ("template", b"<template><tr><td>x</td></tr></template><p>y"),
    ("head elements late, body attrs merged", b"<title>t</title><p>a</p><head><meta charset=x></head><body class=late>"),
    ("two html tags", b"<html lang=en><p>a<html lang=fr class=x>"),
    ("select with stray tags", b"<select><option>a<b>b</b><option>c<p>d</select>"),
    ("li without ul", b"<li>a<li>b"),
    ("heading misnesting", b"<h1>a<h2>b</h1>c</h2>"),
    ("ruby", b"<ruby>a<rt>b<rp>(</ruby>"),
    ("dd/dt", b"<p>a<dd>b<dt>c"),
    ("font around p", b"<font color=red><p>x</font>y"),
    ("quotes in attributes", b"<a title='x\"y' href=\"a'b\" data-x=a\"b>t</a>"),
    ("missing >", b'<p class="a"<b>x</b>'),
    ("EOF inside a tag", b'<p>text<b class="'),
    ("CDATA in HTML", b"<p><![CDATA[x<y]]></p>"),
    ("<image>", b"<image src=a>"),
    ("content after </html>", b"<p>a</p></body></html><p>after</p>"),
    ("leading whitespace and doctype", b"   \n <!DOCTYPE html>\n<p>x"),
    ("plaintext", b"<plaintext><b>x</b>"),
    ("noscript", b"<noscript><p>x</p></noscript>"),
    ("deep nesting 10000 <div>", b"<div>" * 10000 + b"x" + b"</div>" * 10000),
    ("deep nesting 10000 <b> unclosed", b"<b>" * 10000 + b"x"),
]

REAL_PAGES = [
    "/usr/share/doc/python3/python-policy.html",
    "/usr/share/doc/zlib1g-dev/examples/zlib_how.html",
    "/usr/share/doc/libjs-underscore/index.html",
    "/usr/share/doc/libxslt1-dev/html/tutorial2/libxslt_pipes.html",
]

PARSERS = ["gumbo", "libxml2"]
VIEWS = ["tree", "body", "attrs", "text"]

# ---------------------------------------------------------------------------------------
NS_PREFIX = {
    "http://www.w3.org/1999/xlink": "xlink",
    "http://www.w3.org/XML/1998/namespace": "xml",
    "http://www.w3.org/2000/xmlns/": "xmlns",
}


def html5lib_nodes(data):
    """The reference: html5lib's tree as (kind, depth, name, attrs, text) tuples."""
    text = data.decode("utf-8", "replace")
    doc = html5lib.parse(text, treebuilder="etree", namespaceHTMLElements=False)
    walker = html5lib.getTreeWalker("etree")
    out, depth = [], 0
    for tok in walker(doc):
        t = tok["type"]
        if t in ("StartTag", "EmptyTag"):
            attrs = []
            for (ns, name), value in tok["data"].items():
                if ns in NS_PREFIX:
                    name = NS_PREFIX[ns] + ":" + name
                attrs.append((name.lower(), value))
            out.append(("E", depth, tok["name"].lower(), tuple(sorted(attrs)), ""))
            if t == "StartTag":
                depth += 1
        elif t == "EndTag":
            depth -= 1
        elif t in ("Characters", "SpaceCharacters"):
            out.append(("T", depth, "", (), tok["data"]))
        elif t == "Comment":
            out.append(("C", depth, "", (), tok["data"]))
    return out


_ESC = re.compile(rb"\\x([0-9a-f]{2})")


def _unescape(b):
    return _ESC.sub(lambda m: bytes([int(m.group(1), 16)]), b).decode("utf-8", "replace")


def c_nodes(binary, parser, path):
    r = subprocess.run([binary, "tree", parser, path], capture_output=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (parser, r.returncode, r.stderr.decode()[:200]))
    out = []
    for line in r.stdout.split(b"\n"):
        if not line:
            continue
        kind, depth, rest = line.split(b"\t", 2)
        depth = int(depth)
        if kind == b"E":
            name, attrs = rest.split(b"\t", 1)
            al = []
            if attrs:
                for a in attrs.split(b"\x1f"):
                    n, v = a.split(b"=", 1)
                    al.append((_unescape(n), _unescape(v)))
            out.append(("E", depth, name.decode(), tuple(sorted(al)), ""))
        else:
            out.append((kind.decode(), depth, "", (), _unescape(rest)))
    return out


def views(nodes):
    elems = [n for n in nodes if n[0] == "E"]
    tree = [(d, name) for _, d, name, _, _ in elems]
    attrs = [(d, name, a) for _, d, name, a, _ in elems]
    body, inside = [], None
    for _, d, name, _, _ in elems:
        if inside is not None and d <= inside:
            inside = None
        if inside is not None:
            body.append((d - inside - 1, name))
        elif name == "body" and d == 1:
            inside = d
    text = "".join(n[4] for n in nodes if n[0] == "T")
    return {"tree": tree, "body": body, "attrs": attrs, "text": text}


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return "at %d: ref %r vs %r" % (i, x, y)
    return "length ref %d vs %d" % (len(a), len(b))


def compare(binary, cases, verbose):
    results = []  # (name, {parser: {view: ok}}, notes)
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in cases:
            path = os.path.join(tmp, "case.html")
            with open(path, "wb") as f:
                f.write(data)
            ref = views(html5lib_nodes(data))
            row, notes = {}, []
            for p in PARSERS:
                try:
                    got = views(c_nodes(binary, p, path))
                except Exception as e:  # a crash counts as disagreeing on every view
                    row[p] = {v: False for v in VIEWS}
                    notes.append("%s: %s" % (p, e))
                    continue
                row[p] = {}
                for v in VIEWS:
                    ok = got[v] == ref[v]
                    row[p][v] = ok
                    if not ok and verbose:
                        if v == "text":
                            notes.append("%s %s: ref %r vs %r" % (p, v, ref[v][:80], got[v][:80]))
                        else:
                            notes.append("%s %s: %s" % (p, v, first_diff(ref[v], got[v])))
            results.append((name, row, notes))
    return results


# ---------------------------------------------------------------------------------------
def big_document(target_bytes):
    pages = sorted(p for p in glob.glob("/usr/share/doc/**/*.html", recursive=True) if os.path.isfile(p))
    out, n = [], 0
    for p in pages:
        with open(p, "rb") as f:
            b = f.read()
        out.append(b)
        n += len(b)
        if n >= target_bytes:
            break
    return b"".join(out), len(out)


def timing(binary, reps, target_bytes):
    doc, npages = big_document(target_bytes)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.html")
        with open(path, "wb") as f:
            f.write(doc)
        for p in ["gumbo", "gumbo0", "libxml2"]:
            r = subprocess.run([binary, "time", p, path, str(reps)], capture_output=True, text=True, check=True)
            kv = dict(x.split("=", 1) for x in r.stdout.split())
            rows.append((p, float(kv["median_ms"]), float(kv["best_ms"]), int(kv["max_rss_kb"])))
    ts = []
    for _ in range(3):
        t0 = time.perf_counter()
        html5lib.parse(doc.decode("utf-8", "replace"), treebuilder="etree")
        ts.append((time.perf_counter() - t0) * 1e3)
    rows.append(("html5lib (Python, reference; 3 runs)", sorted(ts)[1], min(ts), 0))
    return len(doc), npages, rows


def deep(binary, quick):
    """Depth: (parser, tag, depth, stack_kb) -> parse ms, stack bytes of parse and of free."""
    runs = [
        ("gumbo0", "div", 10000, 1 << 20), ("gumbo0", "div", 100000 if not quick else 30000, 1 << 20),
        ("gumbo0", "b", 100000 if not quick else 30000, 1 << 20),
        ("gumbo0", "span", 100000 if not quick else 30000, 1 << 20),
        ("libxml2", "div", 100000, 1 << 20),
        ("gumbo0", "div", 8000, 256), ("gumbo0", "div", 10000, 256), ("gumbo0", "div", 100000 if not quick else 30000, 256),
        ("libxml2", "div", 100000, 256),
    ]
    rows = []
    for p, tag, n, kb in runs:
        r = subprocess.run([binary, "deep", p, str(n), str(kb), tag], capture_output=True, text=True, timeout=900)
        kv = dict(x.split("=", 1) for x in r.stdout.split() if "=" in x)
        status = "ok" if r.returncode == 0 else ("SIGSEGV" if r.returncode in (-11, 139) else "exit %d" % r.returncode)
        rows.append((p, tag, n, kb, kv.get("parse_ms", "-"), kv.get("parse_stack_bytes", "-"),
                     kv.get("free_stack_bytes", "-"), status))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build-hx/bench/html_parsers")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--bytes", type=int, default=1 << 20)
    ap.add_argument("--quick", action="store_true", help="smaller depth runs (30000 instead of 100000)")
    ap.add_argument("--verbose", action="store_true", help="print the first difference of each disagreement")
    ap.add_argument("--only", choices=["compare", "speed", "depth"], help="run one part only")
    args = ap.parse_args()
    if args.only in (None, "compare"):
        part_compare(args)
    if args.only in (None, "speed"):
        part_speed(args)
    if args.only in (None, "depth"):
        part_depth(args)


def part_compare(args):
    cases = list(CASES)
    for p in REAL_PAGES:
        if os.path.exists(p):
            with open(p, "rb") as f:
                cases.append(("real page " + p.replace("/usr/share/doc/", ""), f.read()))
    res = compare(args.bin, cases, args.verbose)

    print("## Agreement with html5lib on %d broken-markup cases\n" % len(res))
    print("| case | " + " | ".join("%s %s" % (p, v) for p in PARSERS for v in VIEWS) + " |")
    print("|---|" + "---|" * (len(PARSERS) * len(VIEWS)))
    for name, row, notes in res:
        cells = ["ok" if row[p][v] else "**differs**" for p in PARSERS for v in VIEWS]
        print("| %s | %s |" % (name.replace("|", "\\|").replace("<", "&lt;"), " | ".join(cells)))
    print()
    print("| parser | " + " | ".join(VIEWS) + " | all four |")
    print("|---|" + "---:|" * (len(VIEWS) + 1))
    for p in PARSERS:
        counts = [sum(row[p][v] for _, row, _ in res) for v in VIEWS]
        allv = sum(all(row[p].values()) for _, row, _ in res)
        print("| %s | %s | %d/%d |" % (p, " | ".join("%d/%d" % (c, len(res)) for c in counts), allv, len(res)))
    print("\nKnown reference faults: html5lib 1.1 implements no <template> (it puts a leading template in"
          "\n<body> and drops its table tags; the spec, and gumbo, put it in <head>); an unknown tag name"
          "\nwith a NUL byte is U+FFFD in the spec's name, gumbo's API gives its source bytes.")
    if args.verbose:
        print()
        for name, row, notes in res:
            for n in notes:
                print("- %s: %s" % (name, n))



def part_speed(args):
    size, npages, rows = timing(args.bin, args.reps, args.bytes)
    print("\n## Speed: %d bytes (%d /usr/share/doc HTML pages concatenated), parse + free, %d runs\n"
          % (size, npages, args.reps))
    print("| parser | median ms | best ms | MB/s (best) | peak RSS MB |")
    print("|---|---:|---:|---:|---:|")
    for p, ms, best, rss in rows:
        print("| %s | %.1f | %.1f | %.1f | %s |" % (p, ms, best, size / 1e6 / (best / 1e3),
                                                  "%.0f" % (rss / 1024) if rss else "-"))



def part_depth(args):
    print("\n## Depth: N nested elements (closed), parse then free, each on a thread with its own stack\n")
    print("| parser | tag | depth | stack | parse ms | parse stack bytes | free stack bytes | result |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for p, tag, n, kb, ms, ps, fs, st in deep(args.bin, args.quick):
        print("| %s | %s | %d | %s | %s | %s | %s | %s |" % (p, tag, n, "%d KB" % kb if kb < 1024 else "%d MB" % (kb >> 10),
                                                          ms, ps, fs, st))


if __name__ == "__main__":
    sys.exit(main())
