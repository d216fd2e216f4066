#!/usr/bin/python3
"""tests/html/fake_server.py [--port 0] [--fault NAME] [--max-depth 200] [--max-body 1048576]

A stand-in for mtserve's POST /translate, to test tests/html/check_html.py (and the accuracy
and latency scripts) before or without the real server.  Its "translation" is upper-casing:
plain text -> text.upper(); format "html" -> every translatable text node upper-cased in
place and title/alt/placeholder values upper-cased, everything else copied byte for byte
(events of Python's html.parser, sliced from the source).  Upper-casing is word for word,
so tags stay where they were and every guarantee of the checker holds.

--fault NAME breaks one guarantee on purpose, so that tests/html/test_checker.py can see the
checker catch it:
  drop-em      <em> tags left out                       (elements)
  href         every href value gets an "x"             (elements)
  script       script contents upper-cased              (notranslate)
  notranslate  translate="no" / notranslate text upper-cased (notranslate)
  comment      comments left out                        (notranslate)
  lead-ws      leading whitespace of text nodes dropped (units)
  wrong-text   the second text node lower-cased         (units)
  escape       translated text not escaped              (parses / elements / units)
  title        title/alt/placeholder not translated     (attributes)
  wrap         a fragment's output wrapped in <html><body> (fragment)
  deep         no nesting limit: deep input is translated (bad input)

Prints "fake_server: listening on PORT" once it listens.
"""
import argparse
import html
import json
import re
import sys
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
        "param", "keygen", "image"}
VERBATIM = {"script", "style", "pre", "textarea", "svg", "math", "template"}
TRANSLATED_ATTRS = {"title", "alt", "placeholder"}

ARGS = None


def translate_text(s):
    return s.upper()


class Events(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ev = []

    def _pos(self):
        return self.getpos()

    def handle_starttag(self, tag, attrs):
        self.ev.append(["start", self._pos(), tag, attrs])

    def handle_startendtag(self, tag, attrs):
        self.ev.append(["startend", self._pos(), tag, attrs])

    def handle_endtag(self, tag):
        self.ev.append(["end", self._pos(), tag, None])

    def handle_data(self, data):
        self.ev.append(["data", self._pos(), data, None])

    def handle_comment(self, data):
        self.ev.append(["comment", self._pos(), data, None])

    def handle_decl(self, decl):
        self.ev.append(["decl", self._pos(), decl, None])

    def handle_pi(self, data):
        self.ev.append(["pi", self._pos(), data, None])

    def unknown_decl(self, data):
        self.ev.append(["decl", self._pos(), data, None])


def says_no(tag, attrs):
    d = {k: (v or "") for k, v in attrs}
    if ARGS.fault == "notranslate":
        return False
    return d.get("translate", "").strip().lower() == "no" or "notranslate" in d.get("class", "").split()


def rebuild(tag, attrs, selfclose=False):
    out = "<" + tag
    for k, v in attrs:
        out += " " + k if v is None else ' %s="%s"' % (k, html.escape(v, quote=True))
    return out + ("/>" if selfclose else ">")


def html_translate(src):
    p = Events()
    p.feed(src)
    p.close()
    starts = [0]
    for i, c in enumerate(src):
        if c == "\n":
            starts.append(i + 1)
    offs = [starts[ln - 1] + col for (_, (ln, col), _, _) in p.ev] + [len(src)]
    out = []
    stack = []  # (tag, verbatim)
    ndata = 0
    for i, (kind, _, a, attrs) in enumerate(p.ev):
        raw = src[offs[i]:offs[i + 1]]
        verb = stack[-1][1] if stack else False
        if kind in ("start", "startend"):
            frozen = verb or says_no(a, attrs)       # its own attributes too
            v = frozen or a in VERBATIM                # its insides
            if kind == "start" and a not in VOID:
                stack.append((a, v))
            if ARGS.fault == "drop-em" and a == "em":
                continue
            new = list(attrs)
            changed = False
            if not frozen and ARGS.fault != "title":
                for j, (k, val) in enumerate(new):
                    if k in TRANSLATED_ATTRS and val and val.strip():
                        new[j] = (k, translate_text(val))
                        changed = True
            if ARGS.fault == "href":
                for j, (k, val) in enumerate(new):
                    if k == "href":
                        new[j] = (k, (val or "") + "x")
                        changed = True
            out.append(rebuild(a, new, kind == "startend") if changed else raw)
        elif kind == "end":
            for j in range(len(stack) - 1, -1, -1):
                if stack[j][0] == a:
                    del stack[j:]
                    break
            if ARGS.fault == "drop-em" and a == "em":
                continue
            out.append(raw)
        elif kind == "data":
            in_script = stack and stack[-1][0] in ("script", "style")
            if verb and not (ARGS.fault == "script" and in_script):
                out.append(raw)
                continue
            text = a
            ndata += 1
            if ARGS.fault == "lead-ws":
                text = text.lstrip(" \t\n\r\f")
            t = translate_text(text)
            if ARGS.fault == "wrong-text" and ndata == 2 and text.strip():
                t = text.lower() + " X"
            if in_script:
                out.append(t)
            elif ARGS.fault == "escape":
                out.append(t)
            else:
                out.append(html.escape(t, quote=False))
        elif kind == "comment":
            if ARGS.fault == "comment":
                continue
            out.append(raw)
        else:
            out.append(raw)
    res = "".join(out)
    if ARGS.fault == "wrap" and not re.search(r"<\s*(html|body)\b", src, re.I):
        res = "<html><body>" + res + "</body></html>"
    return res


def rough_depth(src):
    """Nesting as start tags minus end tags (a pre-scan, not a parse)."""
    depth = best = 0
    for m in re.finditer(r"<(/?)([A-Za-z][^\s/>]*)[^>]*?(/?)>", src):
        name = m.group(2).lower()
        if m.group(1):
            depth = max(0, depth - 1)
        elif name not in VOID and not m.group(3):
            depth += 1
            best = max(best, depth)
    return best


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, obj):
        b = json.dumps(obj, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_GET(self):
        if self.path == "/health":
            self.reply(200, {"status": "ok", "html": {"max_depth": ARGS.max_depth}})
        elif self.path == "/openapi.json":
            self.reply(200, {"openapi": "3.0.3", "info": {"title": "fake"}})
        else:
            self.reply(404, {"error": {"code": "not_found", "message": "no such route"}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        if n > ARGS.max_body:
            while n > 0:
                n -= len(self.rfile.read(min(n, 65536)))
            return self.reply(413, {"error": {"code": "too_large", "message": "body over %d bytes" % ARGS.max_body}})
        try:
            body = json.loads(self.rfile.read(n))
        except ValueError:
            return self.reply(400, {"error": {"code": "bad_json", "message": "body is not JSON"}})
        lt = "q" in body
        texts = body.get("q") if lt else body.get("text")
        single = isinstance(texts, str)
        if single:
            texts = [texts]
        fmt = body.get("format", "text")
        out = []
        for t in texts:
            if fmt == "html":
                if ARGS.fault != "deep" and rough_depth(t) > ARGS.max_depth:
                    msg = "HTML nesting deeper than %d elements" % ARGS.max_depth
                    return self.reply(400, {"error": msg} if lt else {"error": {"code": "invalid_field", "message": msg}})
                out.append(html_translate(t))
            else:
                out.append(translate_text(t))
        if lt:
            return self.reply(200, {"translatedText": out[0] if single else out})
        self.reply(200, {"model": "fake", "translations": [{"text": x} for x in out], "timing_ms": 0.0})


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--fault", default="")
    ap.add_argument("--max-depth", type=int, default=200)
    ap.add_argument("--max-body", type=int, default=1 << 20)
    ARGS = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    print("fake_server: listening on %d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
