#!/usr/bin/python3
"""bench/html_latency.py URL [--sentences 60] [--reps 5] [--pair en-fr] [--beam N]

The cost of `format: "html"` (issue 27) per request: the same sentences of the committed test
split sent as plain text and as HTML (the sentence in a <p> with two inline tags, a <b>
around words and an <a href> around others), one request at a time on one keep-alive
connection, alternating the order (text first, then html first) between repetitions.
Prints per format the median and p90 round trip and the server's timing_ms, and the
overhead ratio of html over text (the issue's goal: under 10%).
"""
import argparse
import html
import http.client
import json
import os
import random
import statistics
import sys
import time
import urllib.parse

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
INPUTS = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "inputs")


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def as_html(words, rng):
    """<p>: a <b> around one or two words of the first half, an <a href> around one or two
    of the second."""
    n = len(words)
    w = [html.escape(x, quote=False) for x in words]
    half = n // 2
    a0 = rng.randrange(0, half)
    a1 = min(a0 + rng.randint(1, 2), half)
    b0 = rng.randrange(half, n)
    b1 = min(b0 + rng.randint(1, 2), n)
    w[a0] = "<b>" + w[a0]
    w[a1 - 1] += "</b>"
    w[b0] = '<a href="https://example.org/doc">' + w[b0]
    w[b1 - 1] += "</a>"
    return "<p>" + " ".join(w) + "</p>"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("--sentences", type=int, default=60)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--pair", default="en-fr")
    ap.add_argument("--beam", type=int, help="beam_size for both (default: the model's)")
    ap.add_argument("--seed", type=int, default=27)
    args = ap.parse_args()
    src, tgt = args.pair.split("-")
    with open(os.path.join(INPUTS, "test.%s.txt" % src), encoding="utf-8") as f:
        lines = [l.strip() for l in f if 6 <= len(l.split()) <= 30]
    rng = random.Random(args.seed)
    sents = rng.sample(lines, args.sentences)
    pages = [as_html(s.split(), rng) for s in sents]

    u = urllib.parse.urlsplit(args.url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=120)

    def post(body):
        b = json.dumps(body).encode()
        t0 = time.perf_counter()
        conn.request("POST", "/translate", body=b, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        dt = (time.perf_counter() - t0) * 1e3
        if r.status != 200:
            raise RuntimeError("%d %s" % (r.status, data[:200]))
        j = json.loads(data)
        return dt, j.get("timing_ms", 0.0), j["translations"][0]["text"]

    extra = {"beam_size": args.beam} if args.beam else {}
    # warm-up
    for s, p in zip(sents[:5], pages[:5]):
        post({"text": s, "source": src, "target": tgt, **extra})
        post({"text": p, "source": src, "target": tgt, "format": "html", **extra})

    rt = {"text": [], "html": []}
    srv = {"text": [], "html": []}
    for rep in range(args.reps):
        for s, p in zip(sents, pages):
            order = ["text", "html"] if rep % 2 == 0 else ["html", "text"]
            for fmt in order:
                body = {"text": s if fmt == "text" else p, "source": src, "target": tgt, **extra}
                if fmt == "html":
                    body["format"] = "html"
                dt, tm, _ = post(body)
                rt[fmt].append(dt)
                srv[fmt].append(tm)

    print("## format html vs text: %d %s sentences x %d repetitions, one client, keep-alive%s\n"
          % (len(sents), args.pair, args.reps, ", beam %d" % args.beam if args.beam else ", the model's default beam"))
    print("| format | round trip median ms | p90 ms | server timing_ms median | p90 |")
    print("|---|---:|---:|---:|---:|")
    for fmt in ("text", "html"):
        print("| %s | %.2f | %.2f | %.2f | %.2f |" % (fmt, statistics.median(rt[fmt]), pct(rt[fmt], 0.9),
                                                    statistics.median(srv[fmt]), pct(srv[fmt], 0.9)))
    ratio_med = statistics.median(rt["html"]) / statistics.median(rt["text"]) - 1
    ratio_p90 = pct(rt["html"], 0.9) / pct(rt["text"], 0.9) - 1
    # paired: the same sentence, same repetition
    paired = [h / t for h, t in zip(rt["html"], rt["text"])]
    print("\nhtml-latency: overhead median %+.1f%%, p90 %+.1f%%, paired median %+.1f%% (goal < 10%%)"
          % (100 * ratio_med, 100 * ratio_p90, 100 * (statistics.median(paired) - 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
