#!/usr/bin/python3
"""llm_bench.py: decoder-only LM decode speed, C engine vs PyTorch, one table (issue 31).

  /usr/bin/python3 bench/llm_bench.py --llm-dir DIR [--models tinyllama,qwen3] [--weights f32,f16,int8]
        [--torch f32,bf16] [--batch 1,8] [--bench build/bench/bench_llm] [--compare OTHER_BENCH_LLM]
        [--compare-model qwen3 --compare-weights f16 --compare-n 5] [--out FILE.md]

For each model DIR/<model>-full/bf16 (the full-depth BF16 fixtures of
tests/llm/gen_llm.py): bench/bench_llm (held F32, F16, INT8; batch 1 and 8;
the read bandwidth of a buffer as large as a step's weights, measured in the
same process) and bench/llm_torch.py (F32 and BF16; its first-step logits
checked against the float64 reference first), then one markdown table:
tok/s, step ms, weight bytes a batch-1 step reads, the bound (read GB/s /
bytes), % of the bound (batch 1), and the C engine's ratio to PyTorch at the
same batch (F32 and BF16).

--compare B2: also run bench_llm and B2 (e.g. a build before a change)
alternately --compare-n times each on one model / held weights at batch 1,
and print each one's median step and % of bound (before/after in one run).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_json(cmd):
    sys.stderr.write("$ " + " ".join(cmd) + "\n")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if p.returncode:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}")
    rows = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    for r in rows:
        sys.stderr.write(json.dumps(r) + "\n")
    return rows


def c_run(bench, d, w, batch, threads):
    head, *rows = run_json([bench, "--model", d, "--weights", w, "--batch", batch, "--threads", str(threads)])
    return head, {r["batch"]: r for r in rows}


def fmt(x, nd=1):
    return "-" if x is None else f"{x:,.{nd}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm-dir", required=True)
    ap.add_argument("--models", default="tinyllama,qwen3")
    ap.add_argument("--weights", default="f32,f16,int8")
    ap.add_argument("--torch", default="f32,bf16", help="PyTorch dtypes ('' for none)")
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bench", default="build/bench/bench_llm")
    ap.add_argument("--compare", help="a second bench_llm binary: before/after, alternately")
    ap.add_argument("--compare-model", default="qwen3")
    ap.add_argument("--compare-weights", default="f16")
    ap.add_argument("--compare-n", type=int, default=5)
    ap.add_argument("--out", help="also write the table (markdown) here")
    a = ap.parse_args()
    t_start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load0 = load()
    lines, checks = [], []
    hdr = ("| model | engine | weights | batch | tok/s | step ms | bytes/step | read GB/s | bound tok/s | % of bound "
           "| x PyTorch F32 | x PyTorch BF16 |")
    lines += [hdr, "|" + "---|" * 4 + "---:|" * 8]
    batches = [int(b) for b in a.batch.split(",")]
    for name in a.models.split(","):
        d = os.path.join(a.llm_dir, f"{name}-full", "bf16")
        c = {w: c_run(a.bench, d, w, a.batch, a.threads) for w in a.weights.split(",") if w}
        t = {}
        if a.torch:
            rows = run_json(["/usr/bin/python3", os.path.join(HERE, "llm_torch.py"), "--model", d, "--dtype", a.torch,
                             "--batch", a.batch, "--threads", str(a.threads), "--check"])
            for r in rows:
                if "check" in r:
                    checks.append((name, r))
                elif "batch" in r:
                    t.setdefault(r["dtype"], {})[r["batch"]] = r
                else:
                    t.setdefault(r["dtype"], {})["head"] = r
        # the bound of a PyTorch dtype: the C run with the same bytes per weight
        same = {"f32": "f32", "bf16": "f16"}
        for w, (head, rows) in c.items():
            # the bound: the best read bandwidth of the run (measured again between batch 1's decodes)
            mb, gbs = head["step_bytes_MB"], rows.get(1, {}).get("read_GBs", head["read_GBs"])
            for b in batches:
                r = rows[b]
                ratio = [fmt(r["tok_s"] / t[td][b]["tok_s"], 1) + "x" if td in t and b in t[td] else "-"
                         for td in ("f32", "bf16")]
                pct = 100 * (mb / 1e3 / gbs) / (r["step_ms"] / 1e3) if b == 1 else None
                lines.append(f"| {name} | C | {w.upper()} | {b} | {fmt(r['tok_s'], 2)} | {fmt(r['step_ms'])} | "
                             f"{mb:,.0f} MB | {gbs:.1f} | {fmt(gbs * 1e3 / mb, 2)} | {fmt(pct, 0)} | "
                             f"{ratio[0]} | {ratio[1]} |")
        for td, rs in t.items():
            mb = rs["head"]["step_bytes_MB"]
            gbs = None
            if same[td] in c:
                ch, cr = c[same[td]]
                gbs = cr.get(1, {}).get("read_GBs", ch["read_GBs"])
            for b in batches:
                r = rs[b]
                pct = 100 * (mb / 1e3 / gbs) / (r["step_ms"] / 1e3) if b == 1 and gbs else None
                lines.append(f"| {name} | PyTorch | {td.upper()} | {b} | {fmt(r['tok_s'], 2)} | {fmt(r['step_ms'])} | "
                             f"{mb:,.0f} MB | {fmt(gbs)} | {fmt(gbs * 1e3 / mb if gbs else None, 2)} | "
                             f"{fmt(pct, 0)} | | |")
    out = [f"{t_start}, load average at start {load0}, at end {load()}; {a.threads} threads for both engines; "
           f"prompt 16 ids, step = (t(40 ids) - t(8 ids)) / 32, best of 3.", ""] + lines
    if checks:
        out += ["", "PyTorch first-step logits vs the float64 reference (max |torch - ref| / max |ref|, per prompt):", ""]
        for name, r in checks:
            out.append(f"- {name} {r['dtype']}: {', '.join(f'{e:.1e}' for e in r['max_rel_err'])} (prompts of "
                       f"{', '.join(map(str, r['prompt_lengths']))} ids); argmax equal {r['argmax_equal']}; "
                       f"within 1e-4: {'yes' if r['within_1e-4'] else 'no'}")
    if a.compare:
        d = os.path.join(a.llm_dir, f"{a.compare_model}-full", "bf16")
        res = {a.bench: [], a.compare: []}
        for _ in range(a.compare_n):
            for b in (a.compare, a.bench):
                head, rows = c_run(b, d, a.compare_weights, "1", a.threads)
                r = rows[1]
                res[b].append((r["step_ms"], r["pct_of_bound"], r.get("read_GBs", head["read_GBs"])))
        out += ["", f"Before/after, {a.compare_model} held {a.compare_weights.upper()} batch 1, run alternately "
                f"{a.compare_n} times each (load at end {load()}):", "",
                "| build | step ms (median) | min | max | % of bound (median) | read GB/s (median) |",
                "|---|---:|---:|---:|---:|---:|"]
        for b, lab in ((a.compare, "before (" + a.compare + ")"), (a.bench, "after (" + a.bench + ")")):
            st = [x[0] for x in res[b]]
            out.append(f"| {lab} | {statistics.median(st):.1f} | {min(st):.1f} | {max(st):.1f} | "
                       f"{statistics.median(x[1] for x in res[b]):.0f} | {statistics.median(x[2] for x in res[b]):.1f} |")
        out.append("")
        out.append("each run's step ms: before " + ", ".join(f"{x[0]:.1f}" for x in res[a.compare]) +
                   "; after " + ", ".join(f"{x[0]:.1f}" for x in res[a.bench]))
    text = "\n".join(out) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
