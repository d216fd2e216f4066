#!/usr/bin/python3
"""mt_ab.py: two mtserve binaries (A: a build before a change, B: after it) on the
same checkpoint, alternating, with llamacpp_bench.py's prompts, measurements and
bounds; llama.cpp is not run (issue 54: the F16 products at 1 thread).

  /usr/bin/python3 bench/llamacpp/mt_ab.py --a OLD/mtserve --b build/mtserve
      [--hf build/llamacpp/hf] [--model qwen3] [--weights f16] [--threads 1]
      [--rounds 3] [--gen 16] [--bounds build/bench/llamacpp_bounds]

Both servers run at once on loopback (only the one being measured works) with
llamacpp_bench.py's mtserve arguments; a check first: both greedy continuations of
one prompt (16 tokens) must be the same text (the kernels keep each output's bits).
Each round: 1 client, prompt (~300 characters, max_tokens 1: prompt tokens / wall)
then generation (~30 characters, max_tokens gen: completion tokens / wall), A and B
in alternating order, the bounds after the round.  Medians of the rounds; B / A is
the median of the per-round ratios; % of bound as in llamacpp_bench.py (read GB/s
/ the weight bytes of a step; the FMA peak / 2 x the products' weights a token).
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import llamacpp_bench as lb  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--hf", default="build/llamacpp/hf")
    ap.add_argument("--model", default="qwen3")
    ap.add_argument("--weights", default="f16")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gen", type=int, default=16)
    ap.add_argument("--bounds", default="build/bench/llamacpp_bounds")
    ap.add_argument("--logs", default="build/llamacpp/logs")
    a = ap.parse_args()
    os.makedirs(a.logs, exist_ok=True)
    start, load0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), lb.load()
    cfg = json.load(open(os.path.join(a.hf, a.model, "config.json")))
    pr, bnd, srv = lb.Prompts(), [lb.bounds(a.bounds, a.threads)], {}
    try:
        for name, binary in (("A", a.a), ("B", a.b)):
            port = lb.free_port()
            srv[name] = lb.Server(name, [binary, "serve", "--model", f"{a.model}={os.path.join(a.hf, a.model)}",
                                         "--host", "127.0.0.1", "--port", str(port), "--weights", a.weights,
                                         "--blas-threads", str(a.threads), "--kv-cache", "f16", "--max-tokens", "8192",
                                         "--no-access-log"], f"http://127.0.0.1:{port}",
                                  os.path.join(a.logs, f"ab-{name}-{a.model}-{a.weights}.log"))
        p = pr.next()
        chk = {k: lb.complete(s, a.model, p, 16) for k, s in srv.items()}       # also the warm-up
        sys.stderr.write(f"check: {json.dumps(chk)}\n")
        res = {"A": [], "B": []}
        for rnd in range(a.rounds):
            longp, shortp = [pr.next()], [pr.next(lb.SHORT_CHARS)]
            for e in (("A", "B") if rnd % 2 == 0 else ("B", "A")):
                r = lb.measure(srv[e], a.model, longp, shortp, a.gen)
                res[e].append(r)
                sys.stderr.write(json.dumps(dict(r, engine=e, round=rnd, load=lb.load())) + "\n")
            bnd.append(lb.bounds(a.bounds, a.threads))
            sys.stderr.write(json.dumps(bnd[-1]) + "\n")
    finally:
        for s in srv.values():
            s.stop()
    rd, fma = max(b["read_GBs"] for b in bnd), max(b["fma_GFLOPs"] for b in bnd)
    step, P = lb.mt_step_bytes(cfg, a.weights), lb.matmul_params(cfg)
    print(f"{start}, load average at start {load0}, at end {lb.load()}; {a.model} {a.weights}, {a.threads} thread(s), "
          f"{a.rounds} rounds, A and B alternating; bounds (best of {len(bnd)}): read {rd:.1f} GB/s "
          f"(each: {', '.join('%.1f' % b['read_GBs'] for b in bnd)}), F32 FMA {fma:.0f} GFLOP/s\n")
    print("| what | A tok/s | % of bound | B tok/s | % of bound | B / A |\n|---|---:|---:|---:|---:|---:|")
    for what, key, bound in (("prompt", "pp_tok_s", fma * 1e9 / (2 * P)), ("generation", "gen_tok_s", rd * 1e9 / step)):
        med = {e: statistics.median(r[key] for r in res[e]) for e in res}
        ratio = statistics.median(b[key] / x[key] for b, x in zip(res["B"], res["A"]))
        print(f"| {what} | {med['A']:.1f} | {100 * med['A'] / bound:.0f} | {med['B']:.1f} | "
              f"{100 * med['B'] / bound:.0f} | {ratio:.2f}x |")
    same = chk["A"][2].strip() == chk["B"][2].strip()
    print(f"\ncheck (16 greedy tokens of one prompt): prompt tokens {chk['A'][0]} / {chk['B'][0]}; "
          f"same text: {'yes' if same else 'no'}")


if __name__ == "__main__":
    main()
