#!/usr/bin/python3
"""The quality of --weights int8 (or of --kv-cache f16), measured: BLEU and chrF
on the test split with the C engine's INT8 weights (greedy and beam 4), and the
share of outputs identical to the C engine's F32 outputs of the same decoding.

    int8_quality.py --model DIR --direction en-fr --corpus work/corpus --hyp-dir work/eval
                    --out DIR/eval.json [--limit N] [--threads 2] [--mode int8|kv-f16]

The F32 outputs are read from the hyp dir (c.beam1.<tl> and test.beam4.<tl>,
written by the finish recipe: C greedy and C beam 4); the mode's are written
beside them (int8.beam1.<tl>, int8.beam4.<tl>; kvf16.*).  Adds "int8" (or
"kv_f16") to eval.json.
"""
import argparse, json, os, subprocess, sys, time
sys.path.insert(0, os.path.dirname(__file__))
from evaluate import bleu, chrf, read_split


# --mode: the mtserve translate options, the eval.json key, the output files' prefix
MODES = {"int8": (["--weights", "int8"], "int8", "int8"),
         "kv-f16": (["--kv-cache", "f16"], "kv_f16", "kvf16")}


def kernel_name():
    """The kernel engine/linear_q8.c picks here (all give the same bits)."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    if {"avx512f", "avx512bw", "avx512_vnni"} <= flags:
        return "avx512-vnni"
    return "avx2" if "avx2" in flags else "portable"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True); ap.add_argument("--corpus", required=True)
    ap.add_argument("--direction", default="en-fr", choices=["en-fr", "fr-en"])
    ap.add_argument("--hyp-dir", required=True); ap.add_argument("--out", required=True)
    ap.add_argument("--limit", type=int, default=0); ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--mtserve", default="../build/mtserve")
    ap.add_argument("--mode", default="int8", choices=list(MODES))
    a = ap.parse_args()
    opts, key, prefix = MODES[a.mode]
    sl, tl = a.direction.split("-")
    src, ref = read_split(a.corpus, "test", a.direction, a.limit)
    res = ({"kernel": kernel_name(), "scheme": "weights per output row, inputs per row, int32 sums (engine/linear_q8.c)"}
           if a.mode == "int8" else {"scheme": "K and V rounded to half precision as cached (engine/session.c)"})
    for beam, f32_file in ((1, f"c.beam1.{tl}"), (4, f"test.beam4.{tl}")):
        t0 = time.time()
        out = subprocess.run([a.mtserve, "translate", "--model", a.model, "--beam", str(beam), "--max-length",
                              str(a.max_length), "--threads", str(a.threads)] + opts,
                             input="\n".join(src) + "\n", capture_output=True, text=True, check=True).stdout
        hyp = out.split("\n")[:len(src)]
        f32 = open(os.path.join(a.hyp_dir, f32_file)).read().split("\n")[:len(src)]
        assert len(hyp) == len(src) == len(f32), (len(hyp), len(src), len(f32))
        same = sum(h == g for h, g in zip(hyp, f32))
        res[f"beam{beam}"] = {"bleu": round(bleu(hyp, ref), 2), "chrf": round(chrf(hyp, ref), 2),
                              "f32_bleu": round(bleu(f32, ref), 2), "f32_chrf": round(chrf(f32, ref), 2),
                              "identical": same, "identical_pct": round(100.0 * same / len(src), 1),
                              "seconds": round(time.time() - t0, 1)}
        with open(os.path.join(a.hyp_dir, f"{prefix}.beam{beam}.{tl}"), "w") as f:
            f.write("\n".join(hyp) + "\n")
        print(beam, res[f"beam{beam}"], flush=True)
    ev = json.load(open(a.out)) if os.path.exists(a.out) else {}
    ev[key] = res
    with open(a.out, "w") as f:
        json.dump(ev, f, indent=2); f.write("\n")


if __name__ == "__main__":
    main()
