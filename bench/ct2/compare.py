#!/usr/bin/python3
"""bench/ct2/compare.py: mtserve beside CTranslate2 at the two real shapes of
`make bench-models` (issue 32).  Run by `make bench-ct2`.

    B=build /usr/bin/python3 bench/ct2/compare.py [--ct2-dir /work/ct2] [--reps 3]
        [--shapes en-mg,tc-big] [--n 32] [--max-length 41] [--configs 1:1,32:1,32:4]
        [--threads 2] [--isas default,AVX512] [--idle-load 1.5] [--idle-wait 300]

--ct2-dir: bench/ct2/build.sh's WORK folder (src/CTranslate2: the source tree
whose converter convert.py runs; ct2/: the install, with bin/ct2_bench).

The shapes and settings are bench/run.py's OPUS-MT ones (`make bench-models`):
random weights of the published opus-mt-en-mg (base) and
opus-mt-tc-big-fr-en (big) configs at full depth, the first 32 lines of
tests/fixtures/tokenizer/inputs/test.en.txt (en-mg) or test.fr.txt (tc-big),
max_length 41 (random weights never choose </s>: every output runs to the cap,
40 ids, in both engines), batch 1 greedy, batch 32 greedy, batch 32 beam 4,
2 threads.  `--shapes nllb-600m` (issue 49, `make bench-ct2-nllb`): the
NLLB-200-distilled-600M config at full depth (--m2m-models), the same
test.en.txt lines with eng_Latn first, fra_Latn forced first by mtserve and
given to CTranslate2 as the target prefix (both count it among the 40 ids).

Steps:
 1. convert: each shape's safetensors-f32 folder to CTranslate2 float32 and int8
    ($B/ct2/<shape>-float32, -int8; bench/ct2/convert.py, CTranslate2's own converter).
 2. source ids: bench_engine tokenizes the input (--src-out); ct2_bench maps
    those ids to tokens through the converted model's vocabulary and back, and
    the ids it would decode must equal mtserve's, for every converted model,
    before anything is timed.
 3. timing: --reps rounds; in each, per shape, mtserve (bench_engine --weights
    f32, f16, int8) and CTranslate2 (ct2_bench float32 and int8, each on its
    default ISA and with CT2_FORCE_CPU_ISA=AVX512) alternate, the first engine
    changing every round.  Before each round: wait (up to --idle-wait s) for
    the 1-minute load average to fall below --idle-load; the load is recorded.
    Medians over the rounds; CTranslate2's figure is the better of its two
    ISAs' medians (the table says which).  mtserve F32 and F16 are both
    compared with CTranslate2 float32 (CTranslate2 has no F16 compute on CPU),
    INT8 with int8.
 4. agreement (outputs of the first round): mtserve's ids end with the </s>
    forced at the cap (max_length - 1 ids), CTranslate2's 40 ids are 40 chosen
    tokens without </s>; the two agree on a sentence when their first
    max_length - 2 = 39 tokens (the ones both engines chose) are equal, or their
    whole outputs when shorter.  Counted for mtserve vs CTranslate2 at each
    weights pairing, and INT8 vs the same engine's float32.
 --shortlist adds each engine with a lexical shortlist beside its whole-vocabulary
    runs: bench_engine --shortlist-build decodes the shape's sentences greedy
    over the whole vocabulary and builds a shortlist from those outputs (best
    50, frequent 100: a random-weight model has no corpus, so its own outputs
    stand for one), written as Marian's binary (mtserve --shortlist) and as a
    CTranslate2 vmap with the same lists ($B/ct2/<shape>-<type>-vmap/vmap.txt,
    ct2_bench --use-vmap 1).  The two restrict differently (mtserve: each
    sentence's own set, gathered as the batch's union; CTranslate2: the batch's
    union for every sentence), so their beam outputs may differ more.
 5. the beam experiment (issue 32, item 1's question): the same beam-4 decode
    with the cap moved by one in either engine, so that both pick the final
    beam after the same number of scored tokens: CTranslate2 at
    max_decoding_length 39 (39 tokens) vs mtserve at max_length 41 (39 tokens
    + forced </s>), and mtserve at max_length 42 (40 tokens + forced </s>) vs
    CTranslate2 at 40.  Not timed.

Writes $B/ct2/results.jsonl (every run) and $B/ct2/table.md, and prints the table.
"""
import argparse, datetime, json, os, platform, shlex, statistics, subprocess, sys, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
B = os.environ.get("B", "build")
PY = "/usr/bin/python3"
SHAPES = {
    "en-mg": {"title": "base (opus-mt-en-mg)", "fixture": "en-mg", "input": "tests/fixtures/tokenizer/inputs/test.en.txt"},
    "tc-big": {"title": "big (opus-mt-tc-big-fr-en)", "fixture": "tc-big-fr-en",
               "input": "tests/fixtures/tokenizer/inputs/test.fr.txt"},
    # issue 49: NLLB-200-distilled-600M's published config at full depth (make bench-m2m-vocab's model,
    # tests/m2m/gen_m2m.py bench nllb-600m, in --m2m-models), eng_Latn -> fra_Latn: the source language's
    # token first in the source; the target's forced first by mtserve, CTranslate2's target prefix
    "nllb-600m": {"title": "NLLB-200-distilled-600M", "m2m": "nllb-600m/deep",
                  "input": "tests/fixtures/tokenizer/inputs/test.en.txt",
                  "mt_args": ["--src-lang", "eng_Latn", "--tgt-lang", "fra_Latn"],
                  "ct2_args": ["--target-prefix", "fra_Latn"]},
}
# (mtserve --weights, CTranslate2 compute type) pairs of the table (--pairs chooses among them)
PAIRS = [("f32", "float32"), ("f16", "float32"), ("int8", "int8")]
WLABEL = {"f32": "F32", "f16": "F16", "int8": "INT8"}


def log(msg):
    print(f"[{datetime.datetime.utcnow():%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


def run(cmd, env=None, capture_err=False, may_fail=False):
    """the command's JSON lines (and stderr); a failure ends the comparison, or with
    may_fail returns (None, the last line of stderr)"""
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        sys.stderr.write(p.stderr)
        if may_fail:
            last = (p.stderr.strip().splitlines() or [""])[-1]
            log(f"  FAILED ({p.returncode}): {last}")
            return None, f"exit {p.returncode}: {last}"
        sys.exit(f"compare.py: {cmd[0]} exited with {p.returncode}")
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return (lines, p.stderr) if capture_err else lines


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def load1():
    return os.getloadavg()[0]


def wait_idle(limit, budget):
    t0 = time.time()
    while load1() >= limit and time.time() - t0 < budget:
        time.sleep(10)
    return load1(), time.time() - t0


def model_dir(a, s):
    """the shape's mtserve model folder (the converter reads the same folder)"""
    S = SHAPES[s]
    return os.path.join(a.m2m_models, S["m2m"]) if "m2m" in S else os.path.join(a.models, S["fixture"], "safetensors-f32")


def agree(a, b, k):
    """outputs a and b agree on their first k tokens (whole outputs when shorter)"""
    return a[:k] == b[:k]


def common_prefix(a, b):
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ct2-dir", default=os.environ.get("CT2_DIR", "/work/ct2"))
    ap.add_argument("--models", default=f"{B}/bench-models", help="make bench-models' folder")
    ap.add_argument("--m2m-models", default=f"{B}/m2m-bench", help="make bench-m2m-vocab's folder (nllb-600m)")
    ap.add_argument("--shapes", default="en-mg,tc-big", help="of en-mg, tc-big, nllb-600m")
    ap.add_argument("--pairs", default="f32,f16,int8", help="mtserve weights compared (f16 is compared with float32)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=41)
    ap.add_argument("--configs", default="1:1,32:1,32:4")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--isas", default="default,AVX512", help="CTranslate2 ISAs: default and/or CT2_FORCE_CPU_ISA values")
    ap.add_argument("--idle-load", type=float, default=1.5)
    ap.add_argument("--idle-wait", type=float, default=300)
    ap.add_argument("--skip-beam-experiment", action="store_true")
    ap.add_argument("--shortlist", action="store_true", help="also run both engines with a shortlist (see above)")
    ap.add_argument("--ct2-env", default="", help="K=V[,K=V] added to CTranslate2's environment, e.g. "
                    "OMP_WAIT_POLICY=PASSIVE (libgomp threads sleep instead of spinning: on a loaded machine "
                    "a spinning OpenMP barrier whose partner thread is preempted costs 10x)")
    ap.add_argument("--out", default=f"{B}/ct2")
    a = ap.parse_args()
    global PAIRS
    PAIRS = [p for p in PAIRS if p[0] in a.pairs.split(",")]
    if "f32" not in a.pairs.split(","):
        sys.exit("compare.py: --pairs needs f32 (the agreement columns compare with it)")

    ct2_bench = os.path.join(a.ct2_dir, "ct2", "bin", "ct2_bench")
    ct2_env = dict(kv.split("=", 1) for kv in a.ct2_env.split(",") if kv)
    ct2_src = os.path.join(a.ct2_dir, "src", "CTranslate2")
    bench_engine = f"{B}/bench/bench_engine"
    for p in (ct2_bench, ct2_src, bench_engine):
        if not os.path.exists(os.path.join(ROOT, p)):
            sys.exit(f"compare.py: {p} is missing (bench/ct2/build.sh builds CTranslate2; make builds bench_engine)")
    os.makedirs(os.path.join(ROOT, a.out), exist_ok=True)
    open(os.path.join(ROOT, a.out, "runs.partial.jsonl"), "w").close()     # every run as it ends
    shapes = a.shapes.split(",")
    isas = a.isas.split(",")
    T = a.max_length
    K = T - 2                      # tokens both engines choose before the cap
    results = []                   # every run, to results.jsonl
    failures = []                  # CTranslate2 runs that aborted (--shortlist's vmap runs only)
    meta = {"date": f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC", "host": platform.node(),
            "load_before": open("/proc/loadavg").read().split()[:3], "args": vars(a)}
    try:
        meta["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                                        stdout=subprocess.PIPE).stdout.strip()
    except OSError:
        pass

    # 1. conversion
    ct2_model = {}
    for s in shapes:
        src = model_dir(a, s)
        for q in ("float32", "int8"):
            out = os.path.join(B, "ct2", f"{s}-{q}")
            ct2_model[s, q] = out
            stamp = os.path.join(out, "model.bin")
            if os.path.exists(stamp) and os.path.getmtime(stamp) >= os.path.getmtime(os.path.join(src, "model.safetensors")):
                continue
            cmd = [PY, "bench/ct2/convert.py", "--ct2-src", ct2_src, "--model", src, "--out", out, "--force"]
            run(cmd + (["--quantization", q] if q != "float32" else []))

    # 2. the same source ids
    src_ids = {}
    for s in shapes:
        S = SHAPES[s]
        model = model_dir(a, s)
        path = os.path.join(a.out, f"{s}.src.jsonl")
        run([bench_engine, "--model", model, "--input", S["input"], "--n", str(a.n), "--max-length", "3",
             "--threads", str(a.threads), "--weights", "f32", "--configs", "1:1:1", "--src-out", path]
            + S.get("mt_args", []))
        src_ids[s] = [json.loads(l) for l in open(os.path.join(ROOT, path))]
        for q in ("float32", "int8"):
            chk = os.path.join(a.out, f"{s}-{q}.srccheck.jsonl")
            run([ct2_bench, "--model", ct2_model[s, q], "--src-ids", path, "--n", str(a.n), "--compute-type", q,
                 "--configs", f"{a.n}:1", "--max-decoding-length", "1", "--threads", str(a.threads), "--ids-out", chk]
                + S.get("ct2_args", []))
            back = read_jsonl(os.path.join(ROOT, chk))[0]["src"]
            if back != src_ids[s]:
                sys.exit(f"compare.py: {s} {q}: the source ids CTranslate2 decodes differ from mtserve's")
        log(f"{s}: {len(src_ids[s])} sources, {sum(map(len, src_ids[s]))} ids, identical in both engines")

    # 2b. the shortlists: built from each shape's own greedy outputs, one file per engine format
    if a.shortlist:
        for s in shapes:
            S = SHAPES[s]
            model = model_dir(a, s)
            prefix = os.path.join(a.out, f"{s}.sl")
            run([bench_engine, "--model", model, "--input", S["input"], "--n", str(a.n), "--max-length", str(T),
                 "--threads", str(a.threads), "--weights", "f32", "--shortlist-build", prefix] + S.get("mt_args", []))
            for q in ("float32", "int8"):
                d = os.path.join(ROOT, B, "ct2", f"{s}-{q}-vmap")
                os.makedirs(d, exist_ok=True)
                for f in os.listdir(os.path.join(ROOT, ct2_model[s, q])):
                    dst = os.path.join(d, f)
                    if f != "vmap.txt" and not os.path.lexists(dst):
                        os.symlink(os.path.abspath(os.path.join(ROOT, ct2_model[s, q], f)), dst)
                with open(os.path.join(ROOT, prefix + ".vmap")) as fi, open(os.path.join(d, "vmap.txt"), "w") as fo:
                    fo.write(fi.read())
                ct2_model[s, q + "+vmap"] = os.path.join(B, "ct2", f"{s}-{q}-vmap")

    # 3. timing rounds
    ids = {}                       # (shape, engine, weights, isa) -> {(batch, beam): [ids]}, first round
    rounds = []
    for r in range(a.reps):
        ld, waited = wait_idle(a.idle_load, a.idle_wait)
        rounds.append({"round": r + 1, "load1_start": round(ld, 2), "waited_s": round(waited)})
        log(f"round {r + 1}: load {ld:.2f} after waiting {waited:.0f} s")
        for s in shapes:
            S = SHAPES[s]
            model = model_dir(a, s)
            srcf = os.path.join(a.out, f"{s}.src.jsonl")
            m_variants = ["-", "sl"] if a.shortlist else ["-"]
            c_isas = isas + [i + "+vmap" for i in isas] if a.shortlist else isas
            jobs_m = [("mtserve", w, v) for v in m_variants for w, _ in PAIRS]
            jobs_c = [("ct2", q, isa) for isa in c_isas for q in ("float32", "int8")]
            order = jobs_m + jobs_c if r % 2 == 0 else jobs_c + jobs_m
            # interleave: one mtserve run, one CTranslate2 run, ...
            mq = [j for j in order if j[0] == "mtserve"]
            cq = [j for j in order if j[0] == "ct2"]
            first, second = (mq, cq) if r % 2 == 0 else (cq, mq)
            seq = []
            while first or second:
                if first: seq.append(first.pop(0))
                if second: seq.append(second.pop(0))
            for eng, w, isa in seq:
                idf = os.path.join(a.out, f"{s}.{eng}.{w}.{isa}.r{r + 1}.ids.jsonl")
                if eng == "mtserve":
                    sl = ["--shortlist", os.path.join(a.out, f"{s}.sl.bin")] if isa == "sl" else []
                    lines = run([bench_engine, "--model", model, "--input", S["input"], "--n", str(a.n),
                                 "--max-length", str(T), "--threads", str(a.threads), "--weights", w,
                                 "--configs", a.configs, "--ids-out", idf] + sl + S.get("mt_args", []))
                    sel = None
                else:
                    env = dict(os.environ, CT2_VERBOSE="1", **ct2_env)
                    base_isa, vmap = isa.split("+")[0], isa.endswith("+vmap")
                    if base_isa != "default":
                        env["CT2_FORCE_CPU_ISA"] = base_isa
                    lines, err = run([ct2_bench, "--model", ct2_model[s, w + ("+vmap" if vmap else "")], "--src-ids",
                                      srcf, "--n", str(a.n), "--compute-type", w, "--configs", a.configs,
                                      "--max-decoding-length", str(T - 1), "--threads", str(a.threads),
                                      "--ids-out", idf, "--use-vmap", "1" if vmap else "0"] + S.get("ct2_args", []),
                                     env=env, capture_err=True, may_fail=vmap)
                    if lines is None:          # CTranslate2 aborted on its vmap: recorded, not fatal
                        failures.append({"round": r + 1, "shape": s, "weights": w, "isa": isa, "error": err})
                        continue
                    sel = next((l.split("Selected ISA:")[1].strip() for l in err.splitlines()
                                if "Selected ISA:" in l), None)
                recs = read_jsonl(os.path.join(ROOT, idf))
                outs = {(x["batch"], x["beam"]): x["ids"] for x in recs if "ids" in x}
                if r == 0:
                    ids[s, eng, w, isa] = outs
                for l in lines:
                    if "tok_per_s" in l:
                        results.append(rec := {"round": r + 1, "shape": s, "engine": eng, "weights": w, "isa": isa,
                                        "selected_isa": sel, "batch": l["batch"], "beam": l["beam"],
                                        "sentences": l["sentences"], "seconds": l["seconds"],
                                        "tok_per_s": l["tok_per_s"], "target_tokens": l["target_tokens"],
                                        "load1": round(load1(), 2)})
                        log(f"  {s} {eng} {w} {isa} {l['batch']}:{l['beam']} {l['tok_per_s']:.1f} tok/s")
                        with open(os.path.join(ROOT, a.out, "runs.partial.jsonl"), "a") as f:
                            f.write(json.dumps(rec) + "\n")
    meta["load_after"] = open("/proc/loadavg").read().split()[:3]
    meta["rounds"] = rounds

    # 4. medians, agreement
    def med(s, eng, w, isa, c):
        v = [x["tok_per_s"] for x in results if (x["shape"], x["engine"], x["weights"], x["isa"],
                                                  (x["batch"], x["beam"])) == (s, eng, w, isa, c)]
        return statistics.median(v) if v else None, v

    configs = [tuple(int(v) for v in c.split(":")) for c in a.configs.split(",")]
    WL = {(1, 1): "batch 1 greedy", (32, 1): "batch 32 greedy", (32, 4): "batch 32 beam 4"}
    table = []
    for s, sl, c, (w, q) in [(s, sl, c, p) for s in shapes for sl in ([0, 1] if a.shortlist else [0])
                             for c in configs for p in PAIRS]:
                mv = "sl" if sl else "-"
                m_med, m_all = med(s, "mtserve", w, mv, c)
                best, best_isa, c_all = None, None, {}
                for isa in [i + "+vmap" for i in isas] if sl else isas:
                    v, allv = med(s, "ct2", q, isa, c)
                    c_all[isa] = allv
                    if v is not None and (best is None or v > best):
                        best, best_isa = v, isa
                mo = ids[s, "mtserve", w, mv][c]
                if best is None:               # every CTranslate2 run of this cell aborted
                    table.append({"shape": s, "shortlist": sl, "batch": c[0], "beam": c[1], "mtserve": WLABEL[w],
                                  "ct2": q, "mtserve_tok_s": m_med, "ct2_tok_s": None, "ct2_isa": None,
                                  "ratio": None, "n": len(mo), "failed": [f["error"] for f in failures
                                                                         if (f["shape"], f["weights"]) == (s, q)]})
                    continue
                co = ids[s, "ct2", q, best_isa][c]
                n_agree = sum(agree(x, y, K) for x, y in zip(mo, co))
                row = {"shape": s, "shortlist": sl, "batch": c[0], "beam": c[1], "mtserve": WLABEL[w], "ct2": q,
                       "mtserve_tok_s": m_med, "ct2_tok_s": best, "ct2_isa": best_isa,
                       "ratio": m_med / best if m_med and best else None, "mtserve_runs": m_all, "ct2_runs": c_all,
                       "agree": n_agree, "n": len(mo),
                       "mean_common_prefix": statistics.mean(common_prefix(x, y) for x, y in zip(mo, co))}
                if w != "f32":   # against the same engine's float32 outputs
                    mf = ids[s, "mtserve", "f32", mv][c]
                    row["mtserve_vs_own_f32"] = sum(agree(x, y, K) for x, y in zip(mo, mf))
                    if q == "int8":
                        cf = ids[s, "ct2", "float32", best_isa][c]
                        row["ct2_int8_vs_own_float32"] = sum(agree(x, y, K) for x, y in zip(co, cf))
                table.append(row)

    # 5. the beam experiment
    beam_exp = []
    if not a.skip_beam_experiment:
        for s in shapes:
            S = SHAPES[s]
            model = model_dir(a, s)
            srcf = os.path.join(a.out, f"{s}.src.jsonl")
            isa = next(r["ct2_isa"] for r in table if r["shape"] == s and r["ct2"] == "float32" and not r["shortlist"])
            env = dict(os.environ, **ct2_env)
            if isa != "default":
                env["CT2_FORCE_CPU_ISA"] = isa
            f39 = os.path.join(a.out, f"{s}.ct2.beam-cap{T - 2}.ids.jsonl")
            run([ct2_bench, "--model", ct2_model[s, "float32"], "--src-ids", srcf, "--n", str(a.n),
                 "--compute-type", "float32", "--configs", "32:4,32:1", "--max-decoding-length", str(T - 2),
                 "--threads", str(a.threads), "--ids-out", f39] + S.get("ct2_args", []), env=env)
            f42 = os.path.join(a.out, f"{s}.mtserve.beam-maxlen{T + 1}.ids.jsonl")
            run([bench_engine, "--model", model, "--input", S["input"], "--n", str(a.n), "--max-length", str(T + 1),
                 "--threads", str(a.threads), "--weights", "f32", "--configs", "32:4,32:1", "--ids-out", f42]
                + S.get("mt_args", []))
            c39 = {(x["batch"], x["beam"]): x["ids"] for x in read_jsonl(os.path.join(ROOT, f39)) if "ids" in x}
            m42 = {(x["batch"], x["beam"]): x["ids"] for x in read_jsonl(os.path.join(ROOT, f42)) if "ids" in x}
            for c in ((32, 4), (32, 1)):
                m41, c40 = ids[s, "mtserve", "f32", "-"][c], ids[s, "ct2", "float32", isa][c]
                beam_exp.append({
                    "shape": s, "batch": c[0], "beam": c[1], "n": len(m41),
                    # the table's pairing: final beam picked after 39 tokens (mtserve) vs 40 (CT2)
                    "m41_vs_c40_first39": sum(agree(x, y, K) for x, y in zip(m41, c40)),
                    # both pick after 39 tokens
                    "m41_vs_c39": sum(x[:K] == y[:K] for x, y in zip(m41, c39[c])),
                    # both pick after 40 tokens
                    "m42_vs_c40": sum(x[:K + 1] == y[:K + 1] for x, y in zip(m42[c], c40)),
                    # same engine, cap moved: does the 39-token prefix change with the cap?
                    "m41_vs_m42_first39": sum(x[:K] == y[:K] for x, y in zip(m41, m42[c])),
                    "c39_vs_c40_first39": sum(x[:K] == y[:K] for x, y in zip(c39[c], c40)),
                })

    # output
    with open(os.path.join(ROOT, a.out, "results.jsonl"), "w") as f:
        f.write(json.dumps({"meta": meta}) + "\n")
        for x in results:
            f.write(json.dumps(x) + "\n")
        for x in table:
            f.write(json.dumps({"row": x}) + "\n")
        for x in beam_exp:
            f.write(json.dumps({"beam_experiment": x}) + "\n")
        for x in failures:
            f.write(json.dumps({"failure": x}) + "\n")
    L = []
    L.append(f"CTranslate2 environment: {a.ct2_env or 'stock'}.  Date {meta['date']}, commit {meta.get('commit')}, load before {' '.join(meta['load_before'])}, "
             f"after {' '.join(meta['load_after'])}; rounds: "
             + ", ".join(f"{x['round']}: load {x['load1_start']} (waited {x['waited_s']} s)" for x in rounds))
    L.append("")
    L.append("| shape | workload | shortlist | mtserve | tok/s | CTranslate2 | tok/s (ISA) | mtserve / CT2 | "
             f"outputs agreeing (first {K} tokens) | vs own float32 (mtserve / CT2) |")
    L.append("|---|---|---|---|---:|---|---:|---:|---|---|")
    for x in table:
        if x["ct2_tok_s"] is None:
            L.append(f"| {SHAPES[x['shape']]['title']} | {WL.get((x['batch'], x['beam']), x['batch'])} | "
                     f"{'yes' if x['shortlist'] else 'no'} | {x['mtserve']} | {x['mtserve_tok_s']:,.0f} | {x['ct2']} | "
                     f"aborted ({'; '.join(sorted(set(x['failed'])))}) | | | |")
            continue
        own = ""
        if "mtserve_vs_own_f32" in x:
            own = f"{x['mtserve_vs_own_f32']}/{x['n']}"
            if "ct2_int8_vs_own_float32" in x:
                own += f" / {x['ct2_int8_vs_own_float32']}/{x['n']}"
        L.append(f"| {SHAPES[x['shape']]['title']} | {WL.get((x['batch'], x['beam']), x['batch'])} | "
                 f"{'yes' if x['shortlist'] else 'no'} | {x['mtserve']} | "
                 f"{x['mtserve_tok_s']:,.0f} | {x['ct2']} | {x['ct2_tok_s']:,.0f} ({x['ct2_isa']}) | "
                 f"{x['ratio']:.2f}x | {x['agree']}/{x['n']} (mean common prefix {x['mean_common_prefix']:.1f}) | {own} |")
    if beam_exp:
        L.append("")
        L.append(f"Beam experiment (float32/F32, {a.n} sentences; counts of equal outputs): m41 = mtserve at "
                 f"max_length {T} ({T - 2} tokens + forced </s>), m42 = at {T + 1}; c40 = CTranslate2 at "
                 f"max_decoding_length {T - 1}, c39 = at {T - 2}.")
        L.append("")
        L.append(f"| shape | workload | m41 vs c40, first {K} | m41 vs c39 | m42 vs c40 (first {K + 1}) | "
                 f"m41 vs m42, first {K} | c39 vs c40, first {K} |")
        L.append("|---|---|---|---|---|---|---|")
        for x in beam_exp:
            L.append(f"| {x['shape']} | batch {x['batch']} beam {x['beam']} | {x['m41_vs_c40_first39']}/{x['n']} | "
                     f"{x['m41_vs_c39']}/{x['n']} | {x['m42_vs_c40']}/{x['n']} | {x['m41_vs_m42_first39']}/{x['n']} | "
                     f"{x['c39_vs_c40_first39']}/{x['n']} |")
    text = "\n".join(L) + "\n"
    open(os.path.join(ROOT, a.out, "table.md"), "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
