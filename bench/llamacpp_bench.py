#!/usr/bin/python3
"""llamacpp_bench.py: mtserve's server against llama.cpp's llama-server on the same
random-weight decoder-only checkpoints (issue 54 item 3), one table.

  /usr/bin/python3 bench/llamacpp_bench.py --hf build/llamacpp/hf --gguf build/llamacpp/gguf \
      --llama-server /work/llamacpp/build/bin/llama-server [--models tinyllama,qwen3,gemma3]
      [--pairs f32:f32,f16:f16,q8_0:int8] [--clients 1,8] [--gen 32] [--rounds 2] [--out FILE.md]

For each model and dtype pairing (GGUF type : mtserve --weights), both servers run
side by side on loopback with 2 threads each (llama-server -t 2 -tb 2 -np 8;
mtserve --blas-threads 2, continuous batching) and are driven with the same
prompts: mtserve through its OpenAI route POST /v1/completions, llama.cpp through its
native POST /completion (its /v1/completions answers 500 "The model produced output that
does not match the expected Content-only format" when random weights emit ids that are
not whole UTF-8; the same slots and scheduler serve both routes): the same prompts (English text of
tests/fixtures/tokenizer/inputs/test.en.txt, about PROMPT_CHARS characters, fresh
ones for each measurement, the same for both engines; llama.cpp is asked
"cache_prompt": false, mtserve has no prompt cache), temperature 0 (greedy), the same max_tokens.

`clients` requests at once, timed to the last reply (streaming cannot split the
phases: mtserve sends a byte-level BPE model's text at the end):
  prompt processing  prompts of ~PROMPT_CHARS characters, max_tokens 1: the sum of
                     their prompt tokens (each server's own count) / the wall time
  generation         prompts of ~SHORT_CHARS characters (5-10 tokens), max_tokens
                     gen: the sum of completion tokens / the wall time (the short
                     prompt's pass is in it for both: at most ~1 step of gen)
Engines alternate (A B B A ...) within each round; each figure is the median of
the rounds; the ratio (mtserve / llama.cpp) is taken per round, then the median.
The machine's bounds are measured by build/bench/llamacpp_bounds between the
rounds (read bandwidth, FMA and VNNI loops; the best of the run):
  batch-1 generation   read GB/s / the weight bytes one step reads (each engine's
                       own: GGUF tensor bytes, the embedding only where it is also
                       the output; mtserve: 4, 2 or 1 bytes a weight + int8 row scales)
  prompt processing    the instruction peak (F32 FMA for F32/F16, VNNI for int8) /
                       (2 x the weights of the products a token goes through)
  8-client generation  the lower of both: 8 tokens need a step's bytes once and 8x
                       its operations
A check first: both greedy continuations of one prompt (16 tokens) and
both prompt_tokens are printed; equal ids mean the GGUF (bench/llamacpp/to_gguf.py)
holds the same model and llama.cpp's tokenizer splits the prompt as mtserve's does
(compared without the leading space, which mtserve drops from a completion's first
token and llama.cpp keeps).
"""
import argparse
import concurrent.futures as cf
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TEXT = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "inputs", "test.en.txt")
PROMPT_CHARS = 300
SHORT_CHARS = 30
BYTES = {"f32": 4.0, "f16": 2.0, "bf16": 2.0}


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def post(url, body, timeout=1800):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def wait_ready(url, proc, timeout=900):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"server exited ({proc.returncode}) before it was ready: {url}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    return
        except Exception:
            pass
        time.sleep(1)
    raise SystemExit(f"not ready after {timeout} s: {url}")


class Prompts:
    def __init__(self, seed=7):
        self.lines = [ln.strip() for ln in open(TEXT, encoding="utf-8") if ln.strip().isascii() and ln.strip()]
        self.rng = random.Random(seed)

    def next(self, chars=None):
        chars = chars or PROMPT_CHARS
        out = ""
        while len(out) < chars:
            out += self.rng.choice(self.lines) + " "
        return out[:chars].rsplit(" ", 1)[0]


class Server:
    def __init__(self, name, cmd, url, log):
        self.name, self.url = name, url
        self.parse_500 = 0      # llama.cpp replies lost to its chat parser (complete())
        self.log = open(log, "w")
        sys.stderr.write("$ " + " ".join(cmd) + "\n")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_ready(url, self.proc)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def complete(srv, model, prompt, max_tokens):
    """(prompt tokens, completion tokens, text) of one greedy completion."""
    if srv.name == "llama.cpp":
        try:
            r = post(srv.url + "/completion", {"prompt": prompt, "n_predict": max_tokens, "temperature": 0,
                                               "cache_prompt": False})
            return r["tokens_evaluated"], r["tokens_predicted"], r["content"]
        except urllib.error.HTTPError as e:
            # llama-server parses every finished text with its chat parser, on every route, and
            # answers 500 "The model produced output that does not match the expected
            # Content-only format" when random ids end in a partial UTF-8 sequence: the work is
            # done by then; its tokens are the prompt's (its /tokenize, with BOS) and max_tokens
            # (random weights do not stop early: every counted reply ran to max_tokens)
            if e.code != 500 or b"does not match the expected" not in e.read():
                raise
            srv.parse_500 += 1
            n = len(post(srv.url + "/tokenize", {"content": prompt, "add_special": True})["tokens"])
            return n, max_tokens, None
    r = post(srv.url + "/v1/completions", {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0})
    u = r["usage"]
    return u["prompt_tokens"], u["completion_tokens"], r["choices"][0]["text"]


def burst(srv, model, prompts, max_tokens):
    """len(prompts) requests at once: (wall s, prompt tokens, completion tokens)."""
    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(len(prompts)) as ex:
        res = list(ex.map(lambda p: complete(srv, model, p, max_tokens), prompts))
    return time.perf_counter() - t0, sum(r[0] for r in res), sum(r[1] for r in res)


def measure(srv, model, long_prompts, short_prompts, gen):
    """prompt tok/s: the long prompts at once, max_tokens 1, all prompt tokens / wall;
    generation tok/s: the short prompts at once, max_tokens gen, all completion tokens / wall."""
    tp, pp, _ = burst(srv, model, long_prompts, 1)
    tg, pg, cg = burst(srv, model, short_prompts, gen)
    return {"pp_tok_s": pp / tp, "gen_tok_s": cg / tg, "prompt_tokens": pp / len(long_prompts),
            "short_prompt_tokens": pg / len(short_prompts), "completion_tokens": cg / len(short_prompts),
            "t_pp": tp, "t_gen": tg}


def bounds(binary, threads):
    out = subprocess.run([binary, "--threads", str(threads)], stdout=subprocess.PIPE, text=True, check=True).stdout
    return json.loads(out)


def matmul_params(cfg):
    """weights of the products one token goes through (layers + output)"""
    d, H, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or d // H
    layer = d * hd * (2 * H + 2 * KV) + 3 * d * cfg["intermediate_size"]
    return cfg["num_hidden_layers"] * layer + cfg["vocab_size"] * d


def gguf_step_bytes(gguf_py, path):
    """tensor bytes a decode step reads: all but token_embd, unless it is also the output."""
    sys.path.insert(0, gguf_py)
    import gguf
    rd = gguf.GGUFReader(path)
    names = {t.name for t in rd.tensors}
    return sum(int(t.n_bytes) for t in rd.tensors if t.name != "token_embd.weight" or "output.weight" not in names)


def mt_step_bytes(cfg, w):
    p = matmul_params(cfg)
    if w == "int8":
        rows = cfg["num_hidden_layers"] * 7 + 1     # a float32 scale per output row, roughly
        return p * 1.0 + rows * 4 * cfg["hidden_size"]
    return p * BYTES[w]


def fmt(x, nd=1):
    return "-" if x is None else f"{x:,.{nd}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hf", default="build/llamacpp/hf")
    ap.add_argument("--gguf", default="build/llamacpp/gguf")
    ap.add_argument("--gguf-py", default=os.environ.get("LLAMACPP_SRC", "/work/llamacpp/src") + "/gguf-py")
    ap.add_argument("--llama-server", default="/work/llamacpp/build/bin/llama-server")
    ap.add_argument("--mtserve", default="build/mtserve")
    ap.add_argument("--bounds", default="build/bench/llamacpp_bounds")
    ap.add_argument("--models", default="tinyllama,qwen3,gemma3")
    ap.add_argument("--pairs", default="f32:f32,f16:f16,q8_0:int8")
    ap.add_argument("--clients", default="1,8")
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--logs", default="build/llamacpp/logs")
    ap.add_argument("--jsonl", default="build/llamacpp/results.jsonl")
    ap.add_argument("--out")
    a = ap.parse_args()
    os.makedirs(a.logs, exist_ok=True)
    start, load0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load()
    clients = [int(c) for c in a.clients.split(",")]
    pr = Prompts()
    bnd = [bounds(a.bounds, a.threads)]
    sys.stderr.write(json.dumps(bnd[-1]) + "\n")
    rows, checks = [], []
    jl = open(a.jsonl, "a")
    for model in a.models.split(","):
        cfg = json.load(open(os.path.join(a.hf, model, "config.json")))
        for pair in a.pairs.split(","):
            gt, mw = pair.split(":")
            gpath = os.path.join(a.gguf, f"{model}-{gt}.gguf")
            ctx = 8 * 512
            lp, mp = free_port(), free_port()
            srv = {}
            try:
                srv["llama.cpp"] = Server("llama.cpp", [a.llama_server, "-m", gpath, "--host", "127.0.0.1", "--port", str(lp),
                                           "-t", str(a.threads), "-tb", str(a.threads), "-np", "8", "-c", str(ctx),
                                           "-a", model], f"http://127.0.0.1:{lp}",
                                          os.path.join(a.logs, f"llama-{model}-{gt}.log"))
                srv["mtserve"] = Server("mtserve", [a.mtserve, "serve", "--model", f"{model}={os.path.join(a.hf, model)}",
                                        "--host", "127.0.0.1", "--port", str(mp), "--weights", mw,
                                        "--blas-threads", str(a.threads), "--kv-cache", "f16", "--max-tokens", "8192",
                                        "--no-access-log"], f"http://127.0.0.1:{mp}",
                                        os.path.join(a.logs, f"mtserve-{model}-{mw}.log"))
                p = pr.next()
                chk = {k: complete(s, model, p, 16) for k, s in srv.items()}      # also the warm-up
                checks.append((model, gt, mw, chk))
                sys.stderr.write(f"check {model} {pair}: {json.dumps(chk)}\n")
                res = {(e, c): [] for e in srv for c in clients}
                for rnd in range(a.rounds):
                    order = ["mtserve", "llama.cpp"] if rnd % 2 == 0 else ["llama.cpp", "mtserve"]
                    for c in clients:
                        longp = [pr.next() for _ in range(c)]       # the same for both engines
                        shortp = [pr.next(SHORT_CHARS) for _ in range(c)]
                        for e in order:
                            r = measure(srv[e], model, longp, shortp, a.gen)
                            res[(e, c)].append(r)
                            rec = dict(r, parse_500=srv[e].parse_500, model=model, engine=e, weights=gt if e == "llama.cpp" else mw, clients=c,
                                       round=rnd, load=load(), time=time.time())
                            jl.write(json.dumps(rec) + "\n")
                            jl.flush()
                            sys.stderr.write(json.dumps(rec) + "\n")
                    bnd.append(bounds(a.bounds, a.threads))
                    sys.stderr.write(json.dumps(bnd[-1]) + "\n")
            finally:
                for s in srv.values():
                    s.stop()
            sb = {"llama.cpp": gguf_step_bytes(a.gguf_py, gpath), "mtserve": mt_step_bytes(cfg, mw)}
            rows.append((model, gt, mw, res, sb, matmul_params(cfg)))
            report(a, start, load0, clients, bnd, rows, checks)
    print(report(a, start, load0, clients, bnd, rows, checks))


def report(a, start, load0, clients, bnd, rows, checks):
    """The table so far (written after every model x pairing)."""
    # the bounds: the best of the run (the least disturbed)
    rd = max(b["read_GBs"] for b in bnd)
    fma = max(b["fma_GFLOPs"] for b in bnd)
    vnni = max(b["vnni_GOPs"] for b in bnd)
    out = [f"{start}, load average at start {load0}, at end {load()}; {a.threads} threads each; "
           f"{a.rounds} rounds, engines alternating; prompt ~{PROMPT_CHARS} characters, generation {a.gen} tokens; "
           f"bounds (best of {len(bnd)}): read {rd:.1f} GB/s, F32 FMA {fma:.0f} GFLOP/s, VNNI {vnni:.0f} GOP/s "
           f"(each: {', '.join('%.1f' % b['read_GBs'] for b in bnd)} GB/s)", "",
           "| model | weights (llama.cpp / mtserve) | clients | what | llama.cpp tok/s | % of bound | "
           "mtserve tok/s | % of bound | mtserve / llama.cpp |", "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for model, gt, mw, res, sb, P in rows:
        for c in clients:
            for what, key in (("prompt", "pp_tok_s"), ("generation", "gen_tok_s")):
                med, pct = {}, {}
                for e in ("llama.cpp", "mtserve"):
                    med[e] = statistics.median(r[key] for r in res[(e, c)])
                    w = gt if e == "llama.cpp" else mw
                    peak = (vnni if w in ("q8_0", "int8") else fma) * 1e9
                    if what == "prompt":
                        bound = peak / (2 * P)
                    elif c == 1:
                        bound = rd * 1e9 / sb[e]
                    else:
                        bound = c / max(sb[e] / (rd * 1e9), c * 2 * P / peak)
                    pct[e] = 100 * med[e] / bound
                ratio = statistics.median(m[key] / l[key] for m, l in zip(res[("mtserve", c)], res[("llama.cpp", c)]))
                out.append(f"| {model} | {gt.upper()} / {mw.upper()} | {c} | {what} | {fmt(med['llama.cpp'], 1)} | "
                           f"{fmt(pct['llama.cpp'], 0)} | {fmt(med['mtserve'], 1)} | {fmt(pct['mtserve'], 0)} | "
                           f"{ratio:.2f}x |")
    out += ["", "Checks (F32 and every pairing: 16 greedy tokens of one prompt; prompt_tokens, completion_tokens, text):", ""]
    for model, gt, mw, chk in checks:
        l, m = chk["llama.cpp"], chk["mtserve"]
        out.append(f"- {model} {gt}/{mw}: prompt tokens {l[0]} / {m[0]}; completion tokens {l[1]} / {m[1]}; "
                   f"same text: {'-' if l[2] is None else 'yes' if l[2].strip() == m[2].strip() else 'no'}")
    text = "\n".join(out) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return text


if __name__ == "__main__":
    main()
