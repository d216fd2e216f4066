#!/usr/bin/python3
"""BLEU, chrF and the untranslated rate of a model on the issue-53 test sets.

    /usr/bin/python3 recipe/evalsets.py --model en-fr --direction en-fr --corpus work/mix-en-fr \\
        --out work/evalsets/en-fr-v2.json [--sets test-ui,test-ui-tc,...] [--beams 1,4]

Sets (mixcorpus.py writes them): test-ui and test-everyday (held-out packages,
debcorpus.py), each as written and as -tc (the source in Title Case, the
reference as written), and test (DDTP package descriptions).  Decoded by the C
engine (build/mtserve translate, one line a sentence; its ids equal the PyTorch
reference's: tests/test_engine.c).  Metrics: evaluate.py's (scores.py).
Untranslated: the output equal to the source (both stripped), in percent of the
set's lines; every line of test-ui and test-everyday has a reference different
from its source, so a copy is always wrong.

--examples also translates the example sentences of web/examples.json and of
README.md's curl lines for the direction's source language and lists those
that come back unchanged.
"""
import argparse, json, os, re, subprocess, sys, time
sys.path.insert(0, os.path.dirname(__file__))
from scores import bleu, chrf


def c_translate(mtserve, model, lines, beam, max_length, threads, extra=()):
    """build/mtserve translate on lines, one a line (evaluate.py's, without torch)."""
    cmd = [mtserve, "translate", "--model", model, "--beam", str(beam), "--max-length", str(max_length),
           "--threads", str(threads)] + list(extra)
    run = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    out = run.stdout.split("\n")[:len(lines)]
    assert len(out) == len(lines), (len(out), len(lines))
    return out


def examples(repo, sl):
    """The demo page's examples in language sl, and README.md's "q"/"text" strings
    that read as sl (more of sl's function words than of the other's: debcorpus.py's
    lists; README also holds German and placeholder examples, left out)."""
    from debcorpus import EN_STOP, FR_STOP
    own, other = (EN_STOP, FR_STOP) if sl == "en" else (FR_STOP, EN_STOP)
    ex = json.load(open(f"{repo}/web/examples.json"))
    out = list(ex.get(sl, []))
    for m in re.finditer(r'"(?:q|text)": "([^"<%]+)"', open(f"{repo}/README.md", encoding="utf-8").read()):
        w = [x.strip(".,;:!?").lower() for x in m.group(1).split()]
        if sum(x in own for x in w) > sum(x in other for x in w):
            out.append(m.group(1))
    return sorted(set(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True); ap.add_argument("--corpus", required=True)
    ap.add_argument("--direction", required=True, choices=["en-fr", "fr-en"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sets", default="test-ui,test-ui-tc,test-everyday,test-everyday-tc")
    ap.add_argument("--beams", default="1")
    ap.add_argument("--mtserve", default="../build/mtserve")
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--examples", action="store_true")
    ap.add_argument("--cli-args", default="", help="more `mtserve translate` options, e.g. "
                    "\"--keep-title-case\" or \"--copy-guard on\" (README: Title Case, the guards)")
    a = ap.parse_args()
    sl, tl = a.direction.split("-")
    res = json.load(open(a.out)) if os.path.exists(a.out) else {}
    res.update({"model": a.model, "direction": a.direction})
    hyp_dir = os.path.splitext(a.out)[0]
    os.makedirs(hyp_dir, exist_ok=True)
    for name in a.sets.split(","):
        src = open(f"{a.corpus}/{name}.{sl}", encoding="utf-8").read().splitlines()
        ref = open(f"{a.corpus}/{name}.{tl}", encoding="utf-8").read().splitlines()
        for beam in map(int, a.beams.split(",")):
            t0 = time.time()
            hyp = c_translate(a.mtserve, a.model, src, beam, a.max_length, a.threads, a.cli_args.split())
            copied = sum(h.strip() == s.strip() for h, s in zip(hyp, src))
            r = {"lines": len(src), "bleu": round(bleu(hyp, ref), 2), "chrf": round(chrf(hyp, ref), 2),
                 "untranslated": copied, "untranslated_pct": round(100 * copied / len(src), 2),
                 "seconds": round(time.time() - t0, 1)}
            res[f"{name}.beam{beam}"] = r
            with open(f"{hyp_dir}/{name}.beam{beam}.{tl}", "w", encoding="utf-8") as f:
                f.write("\n".join(hyp) + "\n")
            print(name, f"beam{beam}", r, flush=True)
    if a.examples:
        repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        ex = examples(repo, sl)
        hyp = c_translate(a.mtserve, a.model, ex, 1, a.max_length, a.threads, a.cli_args.split())
        res["examples"] = {"sentences": len(ex), "untranslated": [s for s, h in zip(ex, hyp) if s.strip() == h.strip()]}
        print("examples", res["examples"], flush=True)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1, ensure_ascii=False); f.write("\n")


if __name__ == "__main__":
    main()
