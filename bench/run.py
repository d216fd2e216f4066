#!/usr/bin/python3
"""Issue 6 benchmarks: engine (C vs the PyTorch reference, weights held as F32
and as F16), server, memory, the machine's limits.  Run by `make bench`; prints
a table and writes BENCHMARKS.md.  Everything runs in one process tree so
ratios are measured in the same run (the machine is shared and noisy).  The
figures are saved in $B/bench/results.json; --from-json re-renders from it.

    bench/run.py --model DIR [--n 64] [--max-length 0] [--threads 2] [--out BENCHMARKS.md]
                 [--requests 256] [--clients 1,8,32,64] [--seconds 30] [--workers 8]
                 [--skip-torch] [--label TEXT] [--from-json FILE]
"""
import argparse, datetime, json, os, platform, re, shlex, signal, socket, subprocess, sys, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
B = os.environ.get("B", "build")
BENCH_ENGINE = f"{B}/bench/bench_engine"
LOADGEN = f"{B}/bench/loadgen"
MTSERVE = f"{B}/mtserve"
TMP = f"{B}/bench"      # scratch files of this run (ids, sources, server logs), beside results.json
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
MODES = ("F32", "F16")          # how the engine holds its weights (bench_engine / bench_torch --weights)


def keyed(rows):
    return {f"{r['batch']}:{r['beam']}": r for r in rows}


def bench_engine(a, w, threads, configs, max_length, extra=()):
    return jlines(sh([BENCH_ENGINE, "--model", a.model, "--input", INPUT, "--n", str(a.n), "--max-length",
                      str(max_length), "--threads", str(threads), "--weights", w.lower(), "--configs", configs]
                     + list(extra)))


def engine(a):
    """Per weights mode: model line, C rows, limits, batch-1 tokens/s at 1 and 2 threads, and the
    PyTorch reference with the same weights (F16: the same matrices rounded) on the same source ids."""
    E = {}
    for w in MODES:
        ids, src = f"{TMP}/ids-c-{w.lower()}.jsonl", f"{TMP}/src-{w.lower()}.jsonl"
        out = bench_engine(a, w, a.threads, a.configs, a.max_length,
                           ["--ids-out", ids, "--src-out", src, "--limits"])
        model = out[0]["model"]
        if model.get("weights", "F32") != w:
            raise RuntimeError(f"bench_engine --weights {w.lower()} reports weights {model.get('weights')}")
        E[w] = {"model": model, "c": keyed(r for r in out if r.get("engine") == "c"),
                "lim": next(r["limits"] for r in out if "limits" in r),
                "ids": {f"{r['batch']}:{r['beam']}": r["ids"] for r in map(json.loads, open(ids))}}
    src = f"{TMP}/src-f32.jsonl"
    if open(src).read() != open(f"{TMP}/src-f16.jsonl").read():
        raise RuntimeError("bench_engine wrote different source ids for F32 and F16")
    max_length = E["F32"]["model"]["max_length"]
    # batch 1, greedy and beam 4: 1 thread vs 2 (the main run's figures when it ran at that thread count)
    for w in MODES:
        sp = {}
        for th in (1, 2):
            c = E[w]["c"]
            if th != a.threads or "1:1" not in c or "1:4" not in c:
                c = keyed(r for r in bench_engine(a, w, th, "1:1,1:4", max_length) if r.get("engine") == "c")
            sp[str(th)] = {"1": c["1:1"]["tok_per_s"], "4": c["1:4"]["tok_per_s"]}
        E[w]["threads"] = sp
    # C F16 vs C F32 outputs (how much rounding the weights changes the translations)
    E["F16"]["same_as_f32"] = {k: sum(x == y for x, y in zip(v, E["F32"]["ids"].get(k, [])))
                               for k, v in E["F16"]["ids"].items()}
    for w in MODES:
        E[w]["t"] = {}
        if a.skip_torch:
            continue
        for r in jlines(sh([PY, "bench/bench_torch.py", "--model", a.model, "--src-ids", src, "--n", str(a.n),
                            "--max-length", str(max_length), "--threads", str(a.threads), "--weights", w.lower(),
                            "--configs", a.configs], timeout=a.torch_timeout)):
            k = f"{r['batch']}:{r['beam']}"
            r["equal"] = sum(x == y for x, y in zip(r.pop("ids"), E[w]["ids"][k]))
            E[w]["t"][k] = r
    for w in MODES:
        del E[w]["ids"]
    return E


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
        self.log = open(f"{TMP}/server-{self.port}.log", "w+")
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


def serve_help():
    return subprocess.run([MTSERVE, "serve", "--help"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True).stdout


def has_batching():
    return "--batching" in serve_help()


def weights_opt(w):
    """--weights explicitly (MTSERVE_WEIGHTS in the environment must not change the run), if the build has it."""
    return ["--weights", w.lower()] if "--weights" in serve_help() else []


def loadgen(url, clients, requests, a, max_length):
    return jlines(sh([LOADGEN, "--url", url, "--input", INPUT, "--n", str(a.n), "--clients", str(clients),
                      "--requests", str(requests), "--seconds", str(a.seconds), "--beam", "1",
                      "--max-length", str(max_length)]))[0]


def server_modes():
    """(batching, weights, extra options): batching off and on with F32 weights, batching on with F16."""
    if not has_batching():
        return [(None, "F32", weights_opt("F32"))]
    modes = [("off", "F32", ["--batching", "off"] + weights_opt("F32")),
             ("on", "F32", ["--batching", "on"] + weights_opt("F32"))]
    if weights_opt("F16"):
        modes.append(("on", "F16", ["--batching", "on"] + weights_opt("F16")))
    return modes


def server(a, max_length):
    """Requests per run: max(--requests, 16 x clients), so every run is long enough that the drain at
    its end (fewer clients than the batch) weighs little."""
    res = []
    for batching, w, extra in server_modes():
        srv = Server(a.model, extra)
        try:
            loadgen(srv.url, 4, 64, a, max_length)                      # warm-up
            runs = [loadgen(srv.url, c, max(a.requests, 16 * c), a, max_length) for c in a.clients]
            res.append({"batching": batching, "weights": w, "banner": srv.banner(), "runs": runs, "rss": srv.rss()})
        finally:
            srv.stop()
    return res


def memory(a, max_length):
    out = {}
    extra_mode = ["--batching", "off"] if has_batching() else []
    for w in (1, a.workers):
        srv = Server(a.model, ["--threads", str(w), "--blas-threads", "1"] + extra_mode + weights_opt("F32"))
        try:
            loadgen(srv.url, 2 * w, 8 * w, a, max_length)               # every worker decodes
            out[str(w)] = srv.rss()
        finally:
            srv.stop()
    return out


# ---- report ---------------------------------------------------------------------------
def fmt_ratio(x):
    return f"{x:.1f}x" if x is not None else "n/a"


def status(ok):
    return "n/a (not measured)" if ok is None else "met" if ok else "**missed**"


def srv_label(r):
    return f"batching {r['batching'] or 'n/a'}, {r['weights']}"


def report(R):
    E, srv, mem, mach = R["engine"], R["srv"], R["mem"], R["mach"]
    model = E["F32"]["model"]
    L = []
    P = L.append
    P("# Benchmarks (issue 6)\n")
    P(f"Model: **{R['label']}** — d_model {model['d_model']}, {model['enc_layers']}+{model['dec_layers']} layers, "
      f"FFN {model['ffn']}, vocab {model['vocab']}, {model['dtype']} on disk; weights held as F32: "
      f"{E['F32']['model']['weight_bytes']/1e6:.1f} MB, as F16: {E['F16']['model']['weight_bytes']/1e6:.1f} MB.  "
      f"Input: the first {model['sentences']} lines of `{INPUT}` ({model['source_tokens']} source tokens), "
      f"max_length {model['max_length']}, {model['threads']} threads for both engines.\n")
    P("## Machine\n")
    P("| | |\n|---|---|")
    for k in ("cpu", "cores", "memory_gib", "os", "kernel", "openblas", "compiler", "torch", "date"):
        P(f"| {k} | {mach[k]} |")
    P(f"| load average at start | {' '.join(f'{x:.2f}' for x in mach['load'])}"
      f"{' (the model training job was running)' if mach['training_running'] else ''} |\n")

    P("## 1. Engine: C vs the PyTorch reference (same weights, same source ids, same run)\n")
    nmat = 6 * model["enc_layers"] + 10 * model["dec_layers"] + 1
    P("Greedy runs batched in both engines.  The reference's beam search decodes one sentence at a time "
      "(no batched beam), so its \"batch 32 beam 4\" is 32 sentences one after another; the C engine decodes "
      "32 sentences x 4 beams as one batch of 128 rows.  Target tokens = generated ids, </s> included.  "
      "F32: the checkpoint as it is in both engines.  F16: the C engine rounds every weight matrix to half "
      "precision at load (`--weights f16`) and the reference runs `bench_torch.py --weights f16`, which rounds "
      f"the same {nmat} matrices (every Linear weight and the shared embedding / lm_head; not the biases, the "
      "LayerNorms, final_logits_bias or the positions): outputs are compared within each weights mode.\n")
    P("| weights | batch | beam | C sent/s | C tok/s | PyTorch sent/s | PyTorch tok/s | C / PyTorch | outputs equal |")
    P("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w in MODES:
        for k, r in E[w]["c"].items():
            b, m = k.split(":")
            tr = E[w]["t"].get(k)
            P(f"| {w} | {b} | {m} | {r['sent_per_s']:.1f} | {r['tok_per_s']:.0f} | "
              f"{tr['sent_per_s'] if tr else 'n/a'} | "
              f"{str(tr['tok_per_s']) + (' *' if tr.get('note') else '') if tr else 'n/a'} | "
              f"{fmt_ratio(r['tok_per_s'] / tr['tok_per_s']) if tr else 'n/a'} | "
              f"{str(tr['equal']) + '/' + str(tr['sentences']) if tr else 'n/a'} |")
    P("")
    P("\\* the reference's beam search is sentence by sentence whatever the batch, so its batch-32 beam-4 figure is "
      "its batch-1 beam-4 run (measured once).\n")
    same = E["F16"].get("same_as_f32", {})
    if same:
        P("C F16 outputs equal to C F32 outputs (what rounding the weights changes): " +
          ", ".join(f"batch {k.split(':')[0]} beam {k.split(':')[1]} {v}/{model['sentences']}"
                    for k, v in same.items()) + ".\n")
    P("### Batch 1: 1 thread vs 2 (bench_engine --threads), target tokens/s\n")
    P("Every Linear runs on the engine's packed AVX-512 kernel, split over its own thread pool "
      "(engine/parallel.c)." + ("  The 2-thread figures are the table above's (same run)."
                                if R["args"]["threads"] == 2 else "") + "\n")
    P("| weights | | 1 thread | 2 threads | 2 / 1 |")
    P("|---|---|---:|---:|---:|")
    for w in MODES:
        sp = E[w]["threads"]
        for beam, name in (("1", "batch 1 greedy"), ("4", "batch 1 beam 4")):
            one, two = sp["1"][beam], sp["2"][beam]
            P(f"| {w} | {name} | {one:.0f} | {two:.0f} | {two / one:.2f}x |")
    P("")

    P("## 2. Server: POST /translate, one sentence per request, greedy, closed loop (bench/loadgen.c)\n")
    if any(r["batching"] is None for r in srv):
        P("`--batching` is not in this build's `mtserve serve`: one row, the server as it is.\n")
    P(f"Requests per run: max({R['args']['requests']}, 16 x clients), capped at {R['args']['seconds']:g} s; "
      "a warm-up run first.  \"vs 1 client\": the same server mode.\n")
    P("| batching | weights | clients | requests | errors | req/s | p50 ms | p99 ms | vs 1 client |")
    P("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in srv:
        one = next((x["req_per_s"] for x in r["runs"] if x["clients"] == 1), None)
        for x in r["runs"]:
            P(f"| {r['batching'] or 'n/a'} | {r['weights']} | {x['clients']} | {x['requests']} | {x['errors']} | "
              f"{x['req_per_s']:.1f} | {x['p50_ms']:.0f} | {x['p99_ms']:.0f} | "
              f"{fmt_ratio(x['req_per_s'] / one if one else None)} |")
    P("")
    for r in srv:
        P(f"- {srv_label(r)}: `{r['banner']}`; peak RSS {r['rss']['VmHWM']/2**20:.1f} MiB")
    P("")

    P("## 3. Memory\n")
    lim = E["F32"]["lim"]
    W = E["F32"]["model"]["weight_bytes"]
    ws = sorted(mem, key=int)
    P("`mtserve serve --batching off --blas-threads 1` (F32 weights) with 1 and "
      f"{ws[-1]} workers, each worker decoding.\n")
    P("| workers | peak RSS (VmHWM) | RSS now |")
    P("|---:|---:|---:|")
    for w in ws:
        P(f"| {w} | {mem[w]['VmHWM']/2**20:.1f} MiB | {mem[w]['VmRSS']/2**20:.1f} MiB |")
    grow = (mem[ws[-1]]["VmHWM"] - mem[ws[0]]["VmHWM"]) / max(1, int(ws[-1]) - int(ws[0]))
    P(f"\nPer extra worker the peak RSS grows by {grow/2**20:.1f} MiB, against {W/2**20:.1f} MiB of weights "
      f"({'counted once' if grow < 0.5 * W else 'NOT counted once'}).  The weights are loaded once per process: "
      f"the safetensors file is mmapped and validated, the Linear weights are packed once at load into the "
      f"kernel's layout, and all workers share that one copy.  So per extra worker only the session grows: "
      f"the part of it that decoding touched (a default session reserves "
      f"{lim['session_bytes_default']/2**20:.1f} MiB, mostly KV cache for max_batch x max_tgt_len, paged in "
      f"only as used), plus the worker's thread stack.\n")
    P(f"KV cache (F32 in both weights modes): self-attention K|V = {model['dec_layers']} layers x 2 x d_model x "
      f"4 bytes = **{lim['kv_self_bytes_per_token']:.0f} bytes per target token per sequence** (and the same, "
      f"{lim['kv_cross_bytes_per_src_token']:.0f} bytes, per source token for the cross K|V).  "
      f"mt_session_bytes() grows by {lim['session_bytes_per_tgt_token']:.0f} bytes per unit of max_tgt_len per "
      f"sequence (the KV cache plus the token history and beam bookkeeping sized by max_tgt_len).\n")

    P("## 4. The machine's limits (measured in the same run, once per weights mode)\n")
    P("Decode step at batch 1, from greedy runs of two lengths (so the encoder cancels).  It reads every decoder "
      "Linear and the vocabulary projection once, at the bytes per weight they are held in (F32: 4, F16: 2).  "
      "The bound is those bytes over the memory bandwidth measured with OpenBLAS sgemv on a cache-resident "
      f"{model['vocab']}x{model['d_model']} matrix (best of 1 and {lim['threads']} threads).  Encoder (and cross "
      "K/V projections) at batch 32, including one decoder step and the padding-free per-source attention: its "
      "Linears run on the engine's packed kernel (OpenBLAS sgemm only for the attention of whole sequences); "
      "the peak it is compared with is OpenBLAS sgemm 1024^3 (best of 1 and "
      f"{lim['threads']} threads).\n")
    P("| weights | step | weights read per step | sgemv GB/s (1 / n thr; 64 MB) | bound | % of bound | streamed "
      "| encoder | sgemm GFLOP/s (1 / n thr) | % of peak |")
    P("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w in MODES:
        x = E[w]["lim"]
        peak = max(x["sgemm_gflops_1t"], x["sgemm_gflops_nt"])
        P(f"| {w} | **{x['step_us']:.0f} us** | {x['step_weight_bytes']/1e6:.1f} MB | "
          f"{x['sgemv_gbs_1t']:.1f} / {x['sgemv_gbs_nt']:.1f}; {x['sgemv64mb_gbs_1t']:.1f} / "
          f"{x['sgemv64mb_gbs_nt']:.1f} | {x['step_bound_us']:.0f} us | "
          f"**{x['step_bound_us'] / x['step_us'] * 100:.0f}%** | {x['step_eff_gbs']:.1f} GB/s | "
          f"**{x['enc_gflops']:.1f} GFLOP/s** ({x['enc_flops']/1e9:.2f} GFLOP in {x['enc_seconds']*1e3:.0f} ms) | "
          f"{x['sgemm_gflops_1t']:.0f} / {x['sgemm_gflops_nt']:.0f} | **{x['enc_gflops'] / peak * 100:.0f}%** |")
    P("")

    P("## Targets\n")
    P("| target | figure | |")
    P("|---|---|---|")
    rows = []
    for w in MODES:
        for k, goal, name in (("1:1", 10, "batch 1 greedy"), ("32:4", 2, "batch 32 beam 4")):
            c, t = E[w]["c"].get(k), E[w]["t"].get(k)
            x = c["tok_per_s"] / t["tok_per_s"] if c and t else None
            rows.append((f"C >= {goal}x PyTorch tokens/s, {name} ({w} weights)", fmt_ratio(x),
                         None if x is None else x >= goal))
    for r in srv:
        one = next((x["req_per_s"] for x in r["runs"] if x["clients"] == 1), None)
        n32 = next((x["req_per_s"] for x in r["runs"] if x["clients"] == 32), None)
        x = n32 / one if one and n32 is not None else None
        rows.append((f"server 32 clients >= 4x 1 client ({srv_label(r)})", fmt_ratio(x),
                     None if x is None else x >= 4))
    rows.append(("no allocation in the decode step", "tests/test_engine.c test_no_alloc_in_decode_loop "
                 "(malloc interposition: 0 allocations between steps)", True))
    for name, fig, ok in rows:
        P(f"| {name} | {fig} | {status(ok)} |")
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
    ap.add_argument("--requests", type=int, default=256, help="server runs: max(this, 16 x clients) requests")
    ap.add_argument("--clients", default="1,8,32,64", help="server runs: client counts, comma-separated")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--configs", default="1:1,32:1,1:4,32:4")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--torch-timeout", type=float, default=1800,
                    help="seconds per bench_torch.py run; configurations not done are n/a")
    ap.add_argument("--out", default="BENCHMARKS.md")
    ap.add_argument("--notes", default=os.path.join(os.path.dirname(__file__), "notes.md"))
    ap.add_argument("--from-json", help="re-render BENCHMARKS.md from a saved run (notes edited)")
    a = ap.parse_args()
    a.label = a.label or a.model
    a.clients = [int(x) for x in a.clients.split(",")]
    os.chdir(ROOT)
    saved = f"{B}/bench/results.json"
    if a.from_json:
        R = json.load(open(a.from_json))
        if R.get("version") != 2:
            sys.exit(f"{a.from_json}: saved by an older bench/run.py (no F32/F16 runs); run the benchmarks again")
        CMDS[:] = R["cmds"]
    else:
        os.makedirs(TMP, exist_ok=True)
        mach = machine()
        E = engine(a)
        srv = server(a, E["F32"]["model"]["max_length"])
        mem = memory(a, E["F32"]["model"]["max_length"])
        R = {"version": 2, "cmds": CMDS, "model_dir": a.model, "label": a.label, "mach": mach,
             "args": {k: getattr(a, k) for k in ("n", "max_length", "threads", "workers", "requests", "clients",
                                                 "seconds", "configs", "skip_torch")},
             "engine": E, "srv": srv, "mem": mem}
        os.makedirs(os.path.dirname(saved), exist_ok=True)
        json.dump(R, open(saved, "w"), indent=1)
        print(f"saved {saved}", file=sys.stderr)
    L, rows = report(R)
    if os.path.exists(a.notes):
        L.append(open(a.notes).read())
    L.append("## Commands\n")
    L.append("`make bench" + (f" BENCH_MODEL={R['model_dir']}" if R["model_dir"] != "models/en-fr" else "") +
             "` ran:\n")
    L.append("```")
    L += CMDS
    L.append("```")
    text = "\n".join(L) + "\n"
    open(a.out, "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
