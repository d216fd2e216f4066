#!/usr/bin/python3
"""bench/file_load.py: a 1 MB text file (issue 28), or an EPUB (issue 52), through
POST /translate_file while 8 other clients keep sending one sentence each.

    make B=build build/mtserve build/bench/loadgen
    /usr/bin/python3 bench/file_load.py [--bin build/mtserve] [--loadgen build/bench/loadgen]
                                        [--mb 1] [--clients 8] [--seconds 30]
                                        [--format txt|epub] [--image-mb 1.6]

--format epub (`make epub-bench`): a book made by tests/documents/gen_zip_fixtures.py's
make_epub: chapters of 40 paragraphs (two sentences of the test split each, a bold one)
until its XHTML holds --mb MB of text, plus --image-mb MB of illustrations (random bytes,
which do not compress: a book's pictures), so that the file itself is over 2 MB; the
output must have the same entries and every XHTML document well-formed XML.

One server (models/en-fr, models/fr-en, defaults). Phase 1: the 8 clients alone for
--seconds (bench/loadgen: closed loop, one sentence of the test split per request):
their p50/p99. Phase 2: the file is posted (async), the same 8 clients run for
--seconds while it translates, and its progress (GET /translate_file/ID) is polled
every 0.5 s: the clients' p50/p99 during the file job, the file's units per second,
and whether done never went down. Then the file is waited for and fetched: its line
count must equal the input's. Prints a Markdown table for BENCHMARKS.md.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def get_json(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def post_file(url, name, data, fields):
    boundary = "mtserve-bench-boundary"
    parts = []
    for k, v in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
                 f'Content-Type: text/plain\r\n\r\n'.encode() + data + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.status, json.loads(r.read())


def loadgen(args, port, sentences):
    out = subprocess.run([args.loadgen, "--url", f"http://127.0.0.1:{port}/translate", "--input", sentences,
                          "--n", "200", "--clients", str(args.clients), "--requests", "1000000",
                          "--seconds", str(args.seconds)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def make_book(lines, args):
    """An EPUB of the lines (see the top): its bytes."""
    sys.path.insert(0, os.path.join(ROOT, "tests/documents"))
    import gen_zip_fixtures
    per_chapter = sum(len(l.encode()) for l in lines[:80]) or 1
    chapters = max(1, int(args.mb * 1e6 / per_chapter) + 1)
    path = "/tmp/file_load_book.epub"
    images = [os.urandom(int(args.image_mb * 1e6 / 4)) for _ in range(4)]
    gen_zip_fixtures.make_epub(path, chapters=chapters, paragraphs=40, texts=lines, images=images)
    with open(path, "rb") as f:
        return f.read()


def book_shape(data):
    """The EPUB's entries, each XHTML document read as XML (lxml raises if it is not): a
    string that the input and the output must share (compared as the text's line counts are)."""
    import io
    import zipfile
    from lxml import etree
    z = zipfile.ZipFile(io.BytesIO(data))
    for n in z.namelist():
        if n.endswith(".xhtml"):
            etree.fromstring(z.read(n))
    return f"{len(z.namelist())} entries"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/mtserve")
    ap.add_argument("--loadgen", default="build/bench/loadgen")
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--serve-args", default="", help="more flags for mtserve serve (e.g. --file-batch 4)")
    ap.add_argument("--format", choices=("txt", "epub"), default="txt")
    ap.add_argument("--image-mb", type=float, default=1.6, help="epub: the illustrations' bytes")
    args = ap.parse_args()
    os.chdir(ROOT)
    src = open("tests/fixtures/tokenizer/inputs/test.en.txt", encoding="utf-8").read().splitlines()
    src = [l for l in src if 3 <= len(l.split()) <= 30]
    sentences = "/tmp/file_load_sentences.txt"
    with open(sentences, "w", encoding="utf-8") as f:
        f.write("\n".join(src[:200]) + "\n")
    lines, size = [], 0
    while size < args.mb * 1e6:                 # the file: the test split's lines, again and again
        for l in src:
            lines.append(l)
            size += len(l.encode()) + 1
            if size >= args.mb * 1e6:
                break
    data = ("\n".join(lines) + "\n").encode()
    name, what = "big.txt", f"{args.mb:g} MB text file"
    if args.format == "epub":
        data = make_book(lines, args)
        name, what = "book.epub", f"{len(data) / 1e6:.1f} MB EPUB"
    port = free_port()
    log = open("/tmp/file_load_server.log", "w")
    srv = subprocess.Popen([args.bin, "serve", "--model", "en-fr=models/en-fr", "--model", "fr-en=models/fr-en",
                            "--port", str(port), "--no-access-log", "--file-ttl", "3600"] + args.serve_args.split(),
                           stderr=log)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if urllib.request.urlopen(base + "/health", timeout=2).status == 200:
                    break
            except Exception:
                time.sleep(0.2)
        load = [open("/proc/loadavg").read().split()[0]]      # the machine may be shared: say how busy
        alone = loadgen(args, port, sentences)
        load.append(open("/proc/loadavg").read().split()[0])
        t0 = time.time()
        status, j = post_file(base + "/translate_file", name, data,
                              {"source": "en", "target": "fr", "async": "true"})
        assert status == 202, j
        polls, stop = [], threading.Event()

        def poll():
            while not stop.is_set():
                s = get_json(base + j["status_url"])
                polls.append((time.time() - t0, s["done"], s["total"], s["state"]))
                if s["state"] != "running":
                    return
                time.sleep(0.5)
        th = threading.Thread(target=poll)
        th.start()
        during = loadgen(args, port, sentences)
        load.append(open("/proc/loadavg").read().split()[0])
        th.join()
        stop.set()
        final = polls[-1]
        monotonic = all(b[1] >= a[1] for a, b in zip(polls, polls[1:]))
        with urllib.request.urlopen(base + "/download_file/" + j["translatedFileUrl"].split("/download_file/")[1],
                                    timeout=60) as r:
            out = r.read()
        in_lines, out_lines = data.count(b"\n"), out.count(b"\n")
        shape = "lines"
        if args.format == "epub":
            in_lines, out_lines = book_shape(data), book_shape(out)
            shape = "entries, XHTML well-formed"
        done_at = next((p[0] for p in polls if p[3] == "done"), None)
        during_units = [p for p in polls if p[0] <= args.seconds]
        rate_during = during_units[-1][1] / during_units[-1][0] if during_units else 0
        print(f"file: {what}, {len(data)} bytes, {in_lines} ({shape}), {final[2]} units; state {final[3]}; "
              f"done after {done_at:.1f} s; output {out_lines}; progress polls {len(polls)}, "
              f"monotonic {monotonic}")
        print()
        print("| clients' single sentences | requests/s | p50 ms | p99 ms | errors |")
        print("|---|---|---|---|---|")
        for label, r in (("alone", alone), (f"during the {what} job", during)):
            print(f"| {label} | {r['req_per_s']:.1f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['errors']} |")
        print(f"\np99 during / alone: {during['p99_ms'] / alone['p99_ms']:.2f}x; load average (1 min) before, "
              f"between and after the two phases: {', '.join(load)}")
        print()
        print(f"file job: {final[2]} units in {done_at:.1f} s ({final[2] / done_at:.1f} units/s overall; "
              f"{rate_during:.1f} units/s while the {args.clients} clients ran); output {shape} {out_lines} "
              f"= input's {in_lines}: {out_lines == in_lines}; done never decreased over {len(polls)} polls: "
              f"{monotonic}")
        ok = monotonic and out_lines == in_lines and final[3] == "done"
    finally:
        srv.terminate()
        srv.wait(timeout=60)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
