#!/usr/bin/python3
"""The loop guard and the length cap as mtserve applies them (issue 53 item 3),
measured on the test sets: BLEU / chrF (scores.py), outputs that loop
(repeats.py's rule, on words) and outputs changed, for greedy and beam 4,
with the guard off (--loop-no-repeat-ngram-size -1) and on (3); the model's
length cap (generation_config.json) stays on in both.

    /usr/bin/python3 models/recipe/guard_eval.py --mtserve build/mtserve \\
        --corpus models/work/mix-en-fr --direction en-fr --model models/en-fr \\
        --sets test-ui,test-everyday,test --out guard-en-fr.json

--guard copy measures the copy guard the same way (--copy-guard off / on, the
loop guard off in both, --beams 1 by default): BLEU, chrF, untranslated (an
output equal to its source, stripped) and outputs changed.
"""
import argparse, json, os, subprocess, sys, time
sys.path.insert(0, os.path.dirname(__file__))
from scores import bleu, chrf
from repeats import loops


def translate(mtserve, model, lines, beam, guard, threads, kind="loop"):
    cmd = [mtserve, "translate", "--model", model, "--beam", str(beam), "--threads", str(threads)]
    if kind == "loop":
        cmd += ["--loop-no-repeat-ngram-size", str(guard)]
    else:
        cmd += ["--loop-no-repeat-ngram-size", "-1", "--copy-guard", "on" if guard > 0 else "off"]
    out = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, check=True).stdout
    got = out.split("\n")[:len(lines)]
    assert len(got) == len(lines), (len(got), len(lines))
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mtserve", required=True); ap.add_argument("--model", required=True)
    ap.add_argument("--corpus", required=True); ap.add_argument("--direction", required=True)
    ap.add_argument("--sets", default="test-ui,test-everyday,test"); ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", required=True)
    ap.add_argument("--guard", default="loop", choices=["loop", "copy"])
    ap.add_argument("--beams", default="", help="comma-separated beam sizes (default: loop 1,4; copy 1)")
    a = ap.parse_args()
    beams = [int(b) for b in (a.beams or ("1,4" if a.guard == "loop" else "1")).split(",")]
    on = 3 if a.guard == "loop" else 1
    sl, tl = a.direction.split("-")
    res = {}
    for name in a.sets.split(","):
        src = open(f"{a.corpus}/{name}.{sl}").read().splitlines()
        ref = open(f"{a.corpus}/{name}.{tl}").read().splitlines()
        for beam in beams:
            rows = {}
            for guard in (-1, on):
                t0 = time.time()
                hyp = translate(a.mtserve, a.model, src, beam, guard, a.threads, a.guard)
                rows[guard] = hyp
                r = {"bleu": round(bleu(hyp, ref), 2), "chrf": round(chrf(hyp, ref), 2),
                     "loops": sum(any(loops(h)) for h in hyp), "seconds": round(time.time() - t0, 1),
                     "untranslated": sum(h.strip() == x.strip() for h, x in zip(hyp, src))}
                if guard > 0:
                    r["changed"] = sum(x != y for x, y in zip(rows[-1], hyp))
                res[f"{name} beam{beam} {a.guard}{guard}"] = r
                print(name, beam, guard, r, flush=True)
        res[f"{name} sentences"] = len(src)
    json.dump(res, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
