#!/usr/bin/python3
"""Issue 6 benchmarks: engine (C vs the PyTorch reference), server, memory,
the machine's limits.  Run by `make bench`; prints a table and writes
BENCHMARKS.md.  Everything runs in one process tree so ratios are measured in
the same run (the machine is shared and noisy).

    bench/run.py --model DIR [--n 64] [--max-length 0] [--threads 2] [--out BENCHMARKS.md]
                 [--skip-torch] [--label TEXT]
"""
import argparse, datetime, json, os, platform, re, shlex, signal, socket, subprocess, sys, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
B = os.environ.get("B", "build")
BENCH_ENGINE = f"{B}/bench/bench_engine"
LOADGEN = f"{B}/bench/loadgen"
MTSERVE = f"{B}/mtserve"
PY = "/usr/bin/python3"
INPUT = "tests/fixtures/tokenizer/inputs/test.en.txt"
CMDS = []        # every command run, for BENCHMARKS.md


def sh(cmd, timeout=None, **kw):
    CMDS.append(" ".join(shlex.quote(c) for c in cmd))
    print("+", CMDS[-1], file=sys.stderr, flush=True)
    try:
        return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              cwd=ROOT, timeout=timeout, **kw).stdout
    except subprocess.TimeoutExpired as e:          # keep the lines printed so far
        print(f"timed out after {timeout} s", file=sys.stderr)
        out = e.stdout or b""
        return out.decode() if isinstance(out, bytes) else out


def jlines(text):
    return [json.loads(x) for x in text.splitlines() if x.startswith("{")]


# ---- machine ------------------------------------------------------------------------
def machine():
    cpu = re.search(r"Model name:\s*(.*)", subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True).stdout)
    mem = int(re.search(r"MemTotal:\s*(\d+)", open("/proc/meminfo").read()).group(1)) / 2**20
    osr = dict(l.split("=", 1) for l in open("/etc/os-release").read().splitlines() if "=" in l)
    blas = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\n", "libopenblas0-pthread",
                           "libopenblas-dev"], stdout=subprocess.PIPE, text=True).stdout.split("\n")[0]
    cc = subprocess.run(["cc", "--version"], stdout=subprocess.PIPE, text=True).stdout.split("\n")[0]
    torch = subprocess.run([PY, "-c", "import torch; print(torch.__version__)"], stdout=subprocess.PIPE,
                           text=True).stdout.strip()
    busy = subprocess.run(["pgrep", "-f", "recipe/train.py"], stdout=subprocess.PIPE, text=True).stdout.strip()
    return {"cpu": cpu.group(1) if cpu else platform.processor(), "cores": os.cpu_count(),
            "memory_gib": round(mem, 1), "os": osr.get("PRETTY_NAME", "").strip('"'), "kernel": platform.release(),
            "openblas": blas, "compiler": cc, "torch": torch,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "training_running": bool(busy), "load": os.getloadavg()}


# ---- engine ---------------------------------------------------------------------------
def engine(a, configs):
    ids_c, src = "/tmp/mtbench-ids-c.jsonl", "/tmp/mtbench-src.jsonl"
    out = jlines(sh([BENCH_ENGINE, "--model", a.model, "--input", INPUT, "--n", str(a.n), "--max-length",
                     str(a.max_length), "--threads", str(a.threads), "--configs", configs, "--ids-out", ids_c,
                     "--src-out", src, "--limits"]))
    model = out[0]["model"]
    c = {(r["batch"], r["beam"]): r for r in out if r.get("engine") == "c"}
    lim = next(r["limits"] for r in out if "limits" in r)
    # the same binary with the opt-in row split (engine/kernels.c MT_ROW_SPLIT=1)
    base = jlines(sh([BENCH_ENGINE, "--model", a.model, "--input", INPUT, "--n", str(a.n), "--max-length",
                      str(model["max_length"]), "--threads", str(a.threads), "--configs", "1:1,1:4"],
                     env=dict(os.environ, MT_ROW_SPLIT="1")))
    c_before = {r["beam"]: r["tok_per_s"] for r in base if r.get("engine") == "c"}
    one = jlines(sh([BENCH_ENGINE, "--model", a.model, "--input", INPUT, "--n", str(a.n), "--max-length",
                     str(model["max_length"]), "--threads", "1", "--configs", "1:1,1:4"]))
    c_before = {"split_off": c_before, "one_thread": {r["beam"]: r["tok_per_s"] for r in one if r.get("engine") == "c"}}
    cids = {(r["batch"], r["beam"]): r["ids"] for r in map(json.loads, open(ids_c))}
    t = {}
    if not a.skip_torch:
        for r in jlines(sh([PY, "bench/bench_torch.py", "--model", a.model, "--src-ids", src, "--n", str(a.n),
                            "--max-length", str(model["max_length"]), "--threads", str(a.threads),
                            "--configs", configs], timeout=a.torch_timeout)):
            k = (r["batch"], r["beam"])
            r["equal"] = sum(x == y for x, y in zip(r.pop("ids"), cids[k]))
            t[k] = r
    return model, c, t, lim, c_before


# ---- server ---------------------------------------------------------------------------
def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Server:
    def __init__(self, model, extra):
        self.port = free_port()
        cmd = [MTSERVE, "serve", "--model", model, "--host", "127.0.0.1", "--port", str(self.port),
               "--no-access-log", "--web", "", "--queue", "1024"] + extra
        CMDS.append(" ".join(shlex.quote(c) for c in cmd))
        print("+", CMDS[-1], file=sys.stderr, flush=True)
        self.log = open(f"/tmp/mtbench-server-{self.port}.log", "w+")
        self.p = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(600):
            if self.p.poll() is not None:
                self.log.seek(0)
                raise RuntimeError("server exited: " + self.log.read()[-500:])
            self.log.seek(0)
            if "listening on" in self.log.read():
                try:
                    socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                    ready = subprocess.run(["curl", "-s", f"http://127.0.0.1:{self.port}/health"],
                                           stdout=subprocess.PIPE, text=True).stdout
                    if '"ok"' in ready:
                        break
                except OSError:
                    pass
            time.sleep(0.1)
        self.url = f"http://127.0.0.1:{self.port}/translate"

    def rss(self):
        st = open(f"/proc/{self.p.pid}/status").read()
        return {k: int(re.search(k + r":\s*(\d+)", st).group(1)) * 1024 for k in ("VmHWM", "VmRSS")}

    def banner(self):
        self.log.seek(0)
        m = re.search(r"listening on .*", self.log.read())
        return m.group(0) if m else ""

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def has_batching():
    h = subprocess.run([MTSERVE, "serve", "--help"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True).stdout
    return "--batching" in h


def loadgen(url, clients, a, max_length):
    req = max(a.requests, 4 * clients)
    return jlines(sh([LOADGEN, "--url", url, "--input", INPUT, "--n", str(a.n), "--clients", str(clients),
                      "--requests", str(req), "--seconds", str(a.seconds), "--beam", "1",
                      "--max-length", str(max_length)]))[0]


def server(a, max_length):
    modes = ["off", "on"] if has_batching() else [None]
    res = {}
    for mode in modes:
        srv = Server(a.model, ["--batching", mode] if mode else [])
        try:
            loadgen(srv.url, 4, a, max_length)                      # warm-up
            res[mode] = {"banner": srv.banner(), "runs": [loadgen(srv.url, c, a, max_length) for c in (1, 8, 32, 64)],
                         "rss": srv.rss()}
        finally:
            srv.stop()
    return res


def memory(a, max_length):
    out = {}
    extra_mode = ["--batching", "off"] if has_batching() else []
    for w in (1, a.workers):
        srv = Server(a.model, ["--threads", str(w), "--blas-threads", "1"] + extra_mode)
        try:
            loadgen(srv.url, 2 * w, dict_ns(a, requests=8 * w), max_length)   # every worker decodes
            out[w] = srv.rss()
        finally:
            srv.stop()
    return out


def dict_ns(a, **kw):
    return argparse.Namespace(**dict(vars(a), **kw))


# ---- report ---------------------------------------------------------------------------
def fmt_ratio(x):
    return f"{x:.1f}x" if x is not None else "n/a"


def report(a, mach, model, c, t, lim, c_before, srv, mem):
    L = []
    P = L.append
    P("# Benchmarks (issue 6)\n")
    P(f"Model: **{a.label}** — d_model {model['d_model']}, {model['enc_layers']}+{model['dec_layers']} layers, "
      f"FFN {model['ffn']}, vocab {model['vocab']}, {model['dtype']}, {model['weight_bytes']/1e6:.1f} MB of weights.  "
      f"Input: the first {model['sentences']} lines of `{INPUT}` ({model['source_tokens']} source tokens), "
      f"max_length {model['max_length']}, {model['threads']} threads for both engines.\n")
    P("## Machine\n")
    P("| | |\n|---|---|")
    for k in ("cpu", "cores", "memory_gib", "os", "kernel", "openblas", "compiler", "torch", "date"):
        P(f"| {k} | {mach[k]} |")
    P(f"| load average at start | {' '.join(f'{x:.2f}' for x in mach['load'])}"
      f"{' (the model training job was running)' if mach['training_running'] else ''} |\n")

    P("## 1. Engine: C vs the PyTorch reference (same weights, same source ids, same run)\n")
    P("Greedy runs batched in both engines.  The reference's beam search decodes one sentence at a time "
      "(no batched beam), so its \"batch 32 beam 4\" is 32 sentences one after another; the C engine decodes "
      "32 sentences x 4 beams as one batch of 128 rows.  Target tokens = generated ids, </s> included.\n")
    P("| batch | beam | C sent/s | C tok/s | PyTorch sent/s | PyTorch tok/s | C / PyTorch | outputs equal |")
    P("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k, r in c.items():
        tr = t.get(k)
        P(f"| {k[0]} | {k[1]} | {r['sent_per_s']:.1f} | {r['tok_per_s']:.0f} | "
          f"{tr['sent_per_s'] if tr else 'n/a'} | {str(tr['tok_per_s']) + (' *' if tr.get('note') else '') if tr else 'n/a'} | "
          f"{fmt_ratio(r['tok_per_s'] / tr['tok_per_s']) if tr else 'n/a'} | "
          f"{str(tr['equal']) + '/' + str(tr['sentences']) if tr else 'n/a'} |")
    P("")
    P("\\* the reference's beam search is sentence by sentence whatever the batch, so its batch-32 beam-4 figure is "
      "its batch-1 beam-4 run (measured once).\n")
    P(f"### Batch-1 speed (engine/kernels.c), same binary, same run, target tokens/s\n")
    P("| | 1 thread (serial kernel) | 2 threads, MT_ROW_SPLIT=1: rows split over a spinning helper | "
      "2 threads, default: OpenBLAS threaded sgemv (single rows) |")
    P("|---|---:|---:|---:|")
    for beam in (1, 4):
        if (1, beam) in c:
            P(f"| batch 1 beam {beam} | {c_before['one_thread'][beam]:.0f} | {c_before['split_off'][beam]:.0f} | "
              f"{c[(1, beam)]['tok_per_s']:.0f} |")
    P("")

    P("## 2. Server: POST /translate, one sentence per request, greedy, closed loop (bench/loadgen.c)\n")
    if None in srv:
        P("`--batching` is not in this build's `mtserve serve`: one row, the server as it is.\n")
    P("| batching | clients | requests | errors | req/s | p50 ms | p99 ms | vs 1 client |")
    P("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode, r in srv.items():
        one = r["runs"][0]["req_per_s"]
        for x in r["runs"]:
            P(f"| {mode or 'n/a'} | {x['clients']} | {x['requests']} | {x['errors']} | {x['req_per_s']:.1f} | "
              f"{x['p50_ms']:.0f} | {x['p99_ms']:.0f} | {x['req_per_s'] / one:.1f}x |")
    P("")
    for mode, r in srv.items():
        P(f"- batching {mode or 'n/a'}: `{r['banner']}`; peak RSS {r['rss']['VmHWM']/2**20:.1f} MiB")
    P("")

    P("## 3. Memory\n")
    W = model["weight_bytes"]
    ws = sorted(mem)
    P("| workers | peak RSS (VmHWM) | RSS now |")
    P("|---:|---:|---:|")
    for w in ws:
        P(f"| {w} | {mem[w]['VmHWM']/2**20:.1f} MiB | {mem[w]['VmRSS']/2**20:.1f} MiB |")
    grow = (mem[ws[-1]]["VmHWM"] - mem[ws[0]]["VmHWM"]) / max(1, ws[-1] - ws[0])
    P(f"\nPer extra worker the peak RSS grows by {grow/2**20:.1f} MiB, against {W/2**20:.1f} MiB of weights: "
      f"the weights are mmapped once and shared ({'counted once' if grow < 0.5 * W else 'NOT counted once'}); "
      f"the growth is the part of the worker's session that decoding touched (a default session reserves "
      f"{lim['session_bytes_default']/2**20:.1f} MiB, mostly KV cache for max_batch x max_tgt_len, paged in "
      f"only as used) and its thread stack.\n")
    P(f"KV cache: self-attention K|V = {model['dec_layers']} layers x 2 x d_model x 4 bytes = "
      f"**{lim['kv_self_bytes_per_token']:.0f} bytes per target token per sequence** (and the same, "
      f"{lim['kv_cross_bytes_per_src_token']:.0f} bytes, per source token for the cross K|V).  "
      f"mt_session_bytes() grows by {lim['session_bytes_per_tgt_token']:.0f} bytes per unit of max_tgt_len per "
      f"sequence (the KV cache plus the token history and beam bookkeeping sized by max_tgt_len).\n")

    P("## 4. The machine's limits (measured in the same run)\n")
    P(f"- Decode step, batch 1: **{lim['step_us']:.0f} us** (greedy runs of two lengths, so the encoder cancels).  "
      f"It reads {lim['step_weight_bytes']/1e6:.1f} MB of weights (every decoder Linear + the vocabulary "
      f"projection).  OpenBLAS sgemv here: {lim['sgemv_gbs_1t']:.1f} GB/s with 1 thread, "
      f"{lim['sgemv_gbs_nt']:.1f} GB/s with {lim['threads']} on a cache-resident {model['vocab']}x{model['d_model']} "
      f"matrix ({lim['sgemv64mb_gbs_1t']:.1f} / {lim['sgemv64mb_gbs_nt']:.1f} GB/s on 64 MB).  Bound: "
      f"{lim['step_bound_us']:.0f} us/step; we stream {lim['step_eff_gbs']:.1f} GB/s, "
      f"**{lim['step_bound_us'] / lim['step_us'] * 100:.0f}% of the sgemv bound**.")
    peak = max(lim["sgemm_gflops_1t"], lim["sgemm_gflops_nt"])
    P(f"- Encoder (and cross K/V projections), batch 32: **{lim['enc_gflops']:.1f} GFLOP/s** "
      f"({lim['enc_flops']/1e9:.2f} GFLOP in {lim['enc_seconds']*1e3:.0f} ms, includes one decoder step and "
      f"the padding-free per-source attention) against OpenBLAS sgemm 1024^3: {lim['sgemm_gflops_1t']:.0f} "
      f"GFLOP/s on 1 thread, {lim['sgemm_gflops_nt']:.0f} on {lim['threads']}: "
      f"**{lim['enc_gflops'] / peak * 100:.0f}% of peak**.\n")

    P("## Targets\n")
    P("| target | figure | |")
    P("|---|---|---|")
    rows = []
    if (1, 1) in t:
        x = c[(1, 1)]["tok_per_s"] / t[(1, 1)]["tok_per_s"]
        rows.append(("C >= 10x PyTorch tokens/s, batch 1 greedy", f"{x:.1f}x", x >= 10))
    if (32, 4) in t:
        x = c[(32, 4)]["tok_per_s"] / t[(32, 4)]["tok_per_s"]
        rows.append(("C >= 2x PyTorch tokens/s, batch 32 beam 4", f"{x:.1f}x", x >= 2))
    for mode, r in srv.items():
        x = r["runs"][2]["req_per_s"] / r["runs"][0]["req_per_s"]
        rows.append((f"server 32 clients >= 4x 1 client (batching {mode or 'n/a'})", f"{x:.1f}x", x >= 4))
    rows.append(("no allocation in the decode step", "tests/test_engine.c test_no_alloc_in_decode_loop "
                 "(malloc interposition: 0 allocations between steps)", True))
    for name, fig, ok in rows:
        P(f"| {name} | {fig} | {'met' if ok else '**missed**'} |")
    P("")
    return L, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/en-fr")
    ap.add_argument("--label", default=None)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--max-length", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=8, help="workers for the memory run")
    ap.add_argument("--requests", type=int, default=128)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--configs", default="1:1,32:1,1:4,32:4")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--torch-timeout", type=float, default=1800, help="seconds; configurations not done are n/a")
    ap.add_argument("--out", default="BENCHMARKS.md")
    ap.add_argument("--notes", default=os.path.join(os.path.dirname(__file__), "notes.md"))
    ap.add_argument("--from-json", help="re-render BENCHMARKS.md from a saved run (notes edited)")
    a = ap.parse_args()
    a.label = a.label or a.model
    os.chdir(ROOT)
    saved = f"{B}/bench/results.json"
    if a.from_json:
        R = json.load(open(a.from_json))
        CMDS[:] = R["cmds"]
        a.model, a.label = R["model_dir"], R["label"]
        mach, model, lim, c_before = R["mach"], R["model"], R["lim"], R["c_before"]
        c = {tuple(map(int, k.split(":"))): v for k, v in R["c"].items()}
        t = {tuple(map(int, k.split(":"))): v for k, v in R["t"].items()}
        c_before = {k: {int(b): x for b, x in v.items()} for k, v in c_before.items()}
        srv = {None if k == "null" else k: v for k, v in R["srv"].items()}
        mem = {int(k): v for k, v in R["mem"].items()}
    else:
        mach = machine()
        model, c, t, lim, c_before = engine(a, a.configs)
        srv = server(a, model["max_length"])
        mem = memory(a, model["max_length"])
        os.makedirs(os.path.dirname(saved), exist_ok=True)
        json.dump({"cmds": CMDS, "model_dir": a.model, "label": a.label, "mach": mach, "model": model, "lim": lim,
                   "c_before": c_before, "c": {f"{k[0]}:{k[1]}": v for k, v in c.items()},
                   "t": {f"{k[0]}:{k[1]}": v for k, v in t.items()},
                   "srv": {("null" if k is None else k): v for k, v in srv.items()},
                   "mem": {str(k): v for k, v in mem.items()}}, open(saved, "w"), indent=1)
    L, rows = report(a, mach, model, c, t, lim, c_before, srv, mem)
    if os.path.exists(a.notes):
        L.append(open(a.notes).read())
    L.append("## Commands\n")
    L.append("`make bench" + (f" BENCH_MODEL={a.model}" if a.model != "models/en-fr" else "") + "` ran:\n")
    L.append("```")
    L += CMDS
    L.append("```")
    text = "\n".join(L) + "\n"
    open(a.out, "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
