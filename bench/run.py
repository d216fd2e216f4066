#!/usr/bin/python3
"""Benchmarks of issues 6 and 13: the engine (C vs the PyTorch reference, on three
model shapes, with the weights held in each mode of --weights), the server,
memory, the machine's limits.  Run by `make bench`; prints a table and writes
its part of BENCHMARKS.md (below).  Everything runs in one process tree so
ratios are measured in the same run (the machine is shared and noisy).  The
figures are saved in $B/bench/results.json; --from-json re-renders from it.

    bench/run.py --model DIR [--n 64] [--max-length 0] [--threads 2] [--out BENCHMARKS.md]
                 [--weights f32,f16] [--shapes en-fr,en-mg,tc-big] [--shape-n en-mg=32:8,tc-big=32:4]
                 [--opus-max-length 41] [--opus-models DIR] [--configs ...] [--opus-configs ...]
                 [--requests 256] [--clients 1,8,32,64] [--seconds 30] [--workers 8]
                 [--skip-torch] [--skip-server] [--label TEXT] [--from-json FILE]

Shapes (SHAPES below): en-fr is --model (the shipped model, d 256, 3+3); en-mg
and tc-big are random-weight models of the published opus-mt-en-mg (d 512,
6+6, FFN 2048, vocab 54,688) and opus-mt-tc-big-fr-en (d 1024, 16 heads, 6+6,
FFN 4096, vocab 53,017) configurations at full depth, written by `make
bench-models` (tests/gen_opus.c --full-depth --gain G --signed-ln) into
--opus-models.  Their outputs are capped at --opus-max-length (random weights
have no reason to stop: every output runs to the cap).

Per shape n sentences (--n for en-fr, --shape-n NAME=N:M for the others): the
C engine decodes all N in every configuration, except at batch 1, where both
engines decode the first M (the reference's batch-1 runs are slow at these
sizes); the reference's beam search is sentence by sentence whatever the
batch, so its "batch 32 beam 4" decodes the first M too, and its outputs are
compared with the C engine's for those M.

--weights: how the engine holds its weights, one entry per mode, each a mode
of bench_engine --weights and bench_torch.py --weights (f32, f16, int8).

BENCHMARKS.md: the hand-written sections at its top stay.  run.py writes two
generated parts, each found by its marker lines: the summary table (shape x
workload x weights), inserted the first time before the file's first "## "
section, and the full report, from its marker to the end of the file (the
first time: from the old generated part's heading, "# Benchmarks (issue 6)" or
"# Issue 6: the engine and the server", to the end).
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
INPUT_FR = "tests/fixtures/tokenizer/inputs/test.fr.txt"
CMDS = []        # every command run, for BENCHMARKS.md
TIMES = []       # [command, seconds] of each engine command, in results.json (sizing the run)

# How the engines hold the weights, in the order reported: --weights' default.  Every
# name must be a mode of bench_engine.c (WEIGHTS) and bench_torch.py (WEIGHTS).  int8's
# "outputs equal" compares the engine with the reference's quantize_int8: on the random
# full-depth shapes, whose top logits are close, an input element quantized one step apart
# (float32 activations differing in their last bits on either side of a rounding boundary)
# can change a token, so there it is expected to be lower than F32's; logits agree within
# tests/test_engine.c's int8 tolerance on the trained models.
WEIGHTS = ["f32", "f16", "int8"]

# The model shapes.  n: sentences the C engine decodes in every configuration; ref_n:
# sentences both engines decode at batch 1 and the reference decodes with beam search
# (None: n).  max_length None: the en-fr run's --max-length (0: the model's default).
# limits_n/limits_reps: sentences and repetitions of the batch-1 step timing (--limits).
# The sizes keep `make bench` within about 25 minutes on the 2-core machine: at 40
# tokens a sentence the reference decodes tc-big at about 5 tokens/s at batch 1 and
# 1-2 with beam 4 (one sentence, ~30 s), and its batch-32 greedy run takes ~1.5 min.
SHAPES = {
    "en-fr": {"title": "en-fr", "input": INPUT, "n": 64, "ref_n": None, "max_length": None,
              "configs": "1:1,32:1,1:4,32:4", "limits_n": 16, "limits_reps": 3, "threads_runs": True},
    "en-mg": {"title": "opus-mt-en-mg (base)", "fixture": "en-mg", "input": INPUT, "n": 32, "ref_n": 6,
              "max_length": 41, "configs": "1:1,32:1,32:4", "limits_n": 4, "limits_reps": 2},
    "tc-big": {"title": "opus-mt-tc-big-fr-en (big)", "fixture": "tc-big-fr-en", "input": INPUT_FR, "n": 32,
               "ref_n": 2, "max_length": 41, "configs": "1:1,32:1,32:4", "limits_n": 2, "limits_reps": 2},
}


def workload(k):
    b, m = k.split(":")
    return f"batch {b} " + ("greedy" if m == "1" else f"beam {m}")

SUMMARY_BEGIN = "<!-- bench/run.py: summary table (generated by make bench; edit bench/run.py, not this part) -->"
SUMMARY_END = "<!-- bench/run.py: end of the summary table -->"
MAIN_BEGIN = "<!-- bench/run.py: generated by make bench from here to the end of the file -->"
LEGACY_HEADINGS = re.compile(r"^# (Benchmarks \(issue 6\)|Issue 6: the engine and the server)[ \t]*$", re.M)


def sh(cmd, timeout=None, **kw):
    CMDS.append(" ".join(shlex.quote(c) for c in cmd))
    print("+", CMDS[-1], file=sys.stderr, flush=True)
    t0 = time.time()
    try:
        return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              cwd=ROOT, timeout=timeout, **kw).stdout
    except subprocess.TimeoutExpired as e:          # keep the lines printed so far
        print(f"timed out after {timeout} s", file=sys.stderr)
        out = e.stdout or b""
        return out.decode() if isinstance(out, bytes) else out
    finally:
        TIMES.append([CMDS[-1], round(time.time() - t0, 1)])
        print(f"  ({TIMES[-1][1]} s)", file=sys.stderr, flush=True)


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
def keyed(rows):
    return {f"{r['batch']}:{r['beam']}": r for r in rows}


def shape_configs(sh_, n, ref_n):
    """The shape's configurations for bench_engine: batch-1 ones on the first ref_n sentences."""
    out = []
    for c in sh_["configs"].split(","):
        b, k = map(int, c.split(":"))
        out.append(f"{b}:{k}:{ref_n}" if b == 1 and ref_n < n else f"{b}:{k}")
    return ",".join(out)


def torch_configs(sh_, n, ref_n):
    """The reference's: batch 1 and beam search (sentence by sentence) on the first ref_n sentences."""
    out = []
    for c in sh_["configs"].split(","):
        b, k = map(int, c.split(":"))
        out.append(f"{b}:{k}:{ref_n}" if (b == 1 or k > 1) and ref_n < n else f"{b}:{k}")
    return ",".join(out)


def bench_engine(S, w, threads, configs, extra=()):
    return jlines(sh([BENCH_ENGINE, "--model", S["model"], "--input", S["input"], "--n", str(S["n"]),
                      "--max-length", str(S["max_length"]), "--threads", str(threads), "--weights", w,
                      "--configs", configs] + list(extra)))


def engine(a, S):
    """One shape, per weights mode: model line (load time, RSS), C rows, limits, the process's peak RSS,
    for en-fr the batch-1 tokens/s at 1 and 2 threads, and the PyTorch reference with the same weights
    (F16, INT8: the same rounding / quantization) on the same source ids."""
    E = {}
    tag = S["name"]
    n, ref_n = S["n"], S["ref_n"]
    for w in a.weights:
        W = w.upper()
        ids, src = f"{TMP}/ids-{tag}-c-{w}.jsonl", f"{TMP}/src-{tag}-{w}.jsonl"
        out = bench_engine(S, w, a.threads, shape_configs(S, n, ref_n),
                           ["--ids-out", ids, "--src-out", src, "--limits", "--limits-n", str(S["limits_n"]),
                            "--limits-reps", str(S["limits_reps"])])
        model = out[0]["model"]
        if model.get("weights", "F32") != W:
            raise RuntimeError(f"bench_engine --weights {w} reports weights {model.get('weights')}")
        E[W] = {"model": model, "c": keyed(r for r in out if r.get("engine") == "c"),
                "lim": next(r["limits"] for r in out if "limits" in r),
                "rss": next(r["rss"] for r in out if "rss" in r),
                "ids": {f"{r['batch']}:{r['beam']}": r["ids"] for r in map(json.loads, open(ids))}}
    W0 = a.weights[0].upper()
    src = f"{TMP}/src-{tag}-{a.weights[0]}.jsonl"
    for w in a.weights[1:]:
        if open(src).read() != open(f"{TMP}/src-{tag}-{w}.jsonl").read():
            raise RuntimeError(f"bench_engine wrote different source ids for {a.weights[0]} and {w}")
    max_length = E[W0]["model"]["max_length"]
    if S.get("threads_runs"):
        # batch 1, greedy and beam 4: 1 thread vs 2 (the main run's figures when it ran at that thread count)
        for w in a.weights:
            sp = {}
            for th in (1, 2):
                c = E[w.upper()]["c"]
                if th != a.threads or "1:1" not in c or "1:4" not in c:
                    c = keyed(r for r in bench_engine(S, w, th, "1:1,1:4") if r.get("engine") == "c")
                sp[str(th)] = {"1": c["1:1"]["tok_per_s"], "4": c["1:4"]["tok_per_s"]}
            E[w.upper()]["threads"] = sp
    # C outputs of each mode vs C F32 outputs (how much rounding the weights changes the translations)
    if "F32" in E:
        for W in E:
            if W != "F32":
                E[W]["same_as_f32"] = {k: sum(x == y for x, y in zip(v, E["F32"]["ids"].get(k, [])))
                                       for k, v in E[W]["ids"].items()}
    for w in a.weights:
        W = w.upper()
        E[W]["t"] = {}
        if a.skip_torch:
            continue
        for r in jlines(sh([PY, "bench/bench_torch.py", "--model", S["model"], "--src-ids", src, "--n", str(n),
                            "--max-length", str(max_length), "--threads", str(a.threads), "--weights", w,
                            "--configs", torch_configs(S, n, ref_n)], timeout=a.torch_timeout)):
            k = f"{r['batch']}:{r['beam']}"
            ref = r.pop("ids")
            r["equal"] = sum(x == y for x, y in zip(ref, E[W]["ids"][k]))
            r["compared"] = len(ref)
            E[W]["t"][k] = r
    for W in E:
        E[W]["mean_len"] = {k: sum(map(len, v)) / max(1, len(v)) for k, v in E[W]["ids"].items()}
        del E[W]["ids"]
    return E


def bench_model_info(d):
    """What make bench-models recorded about a generated model (gain, LayerNorm weights)."""
    p = os.path.join(os.path.dirname(d.rstrip("/")), "bench-model.json")
    return json.load(open(p)) if os.path.exists(p) else None


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


def server_modes(weights):
    """(batching, weights, extra options): batching off with the first weights mode (F32), then
    batching on with each mode of --weights, then (if the build has --kv-cache) batching on with
    the F16 K/V cache, with the first and the last weights mode."""
    w0 = weights[0].upper()
    if not has_batching():
        return [(None, w0, weights_opt(w0))]
    modes = [("off", w0, ["--batching", "off"] + weights_opt(w0))]
    if weights_opt(w0):
        modes += [("on", w.upper(), ["--batching", "on"] + weights_opt(w)) for w in weights]
        if "--kv-cache" in serve_help():
            modes += [("on", f"{w.upper()} + KV F16", ["--batching", "on", "--kv-cache", "f16"] + weights_opt(w))
                      for w in dict.fromkeys((weights[0], weights[-1]))]
    else:
        modes.append(("on", w0, ["--batching", "on"]))
    return modes


def server(a, max_length):
    """Requests per run: max(--requests, 16 x clients), so every run is long enough that the drain at
    its end (fewer clients than the batch) weighs little."""
    res = []
    for batching, w, extra in server_modes(a.weights):
        srv = Server(a.model, extra)
        try:
            loadgen(srv.url, 4, 64, a, max_length)                      # warm-up
            runs = [loadgen(srv.url, c, max(a.requests, 16 * c), a, max_length) for c in a.clients]
            res.append({"batching": batching, "weights": w, "banner": srv.banner(), "runs": runs, "rss": srv.rss()})
        finally:
            srv.stop()
    return res


def whole_process(a):
    """Batch 1 greedy as a user runs it, load included: `mtserve translate --beam 1` against the
    reference as a process (bench/torch_translate.py), on the same first --whole-n sentences, both
    with --threads threads, alternately --whole-reps times each; median wall seconds, and the lines
    of the two outputs that are equal."""
    lines = open(INPUT).read().splitlines()[:a.whole_n]
    src = f"{TMP}/whole-in.txt"
    open(src, "w").write("\n".join(lines) + "\n")
    cmds = {"c": [MTSERVE, "translate", "--model", a.model, "--beam", "1", "--threads", str(a.threads)],
            "t": [PY, "bench/torch_translate.py", "--model", a.model, "--threads", str(a.threads)]}
    for k, c in cmds.items():
        CMDS.append(" ".join(shlex.quote(x) for x in c) + f" < {src}")
    secs, outs = {"c": [], "t": []}, {}
    for _ in range(a.whole_reps):
        for k in ("c", "t"):
            t0 = time.monotonic()
            with open(src) as fin:
                r = subprocess.run(cmds[k], cwd=ROOT, stdin=fin, stdout=subprocess.PIPE, text=True, check=True)
            secs[k].append(time.monotonic() - t0)
            outs[k] = r.stdout.splitlines()
    med = {k: sorted(v)[len(v) // 2] for k, v in secs.items()}
    equal = sum(x == y for x, y in zip(outs["c"], outs["t"]))
    return {"n": len(lines), "reps": a.whole_reps, "seconds": secs, "median": med, "equal": equal,
            "ratio": med["t"] / med["c"]}


def memory(a, max_length):
    out = {}
    extra_mode = ["--batching", "off"] if has_batching() else []
    for w in (1, a.workers):
        srv = Server(a.model, ["--threads", str(w), "--blas-threads", "1"] + extra_mode + weights_opt("f32"))
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


def mb(x):
    return f"{x / 1e6:,.0f} MB" if x >= 10e6 else f"{x / 1e6:.1f} MB"


def shape_line(S):
    m = S["E"][next(iter(S["E"]))]["model"]
    return (f"d {m['d_model']}, {m['enc_layers']}+{m['dec_layers']} layers, {m.get('heads', '?')} heads, "
            f"FFN {m['ffn']}, vocab {m['vocab']:,}")


def equal_cell(tr):
    return f"{tr['equal']} of {tr.get('compared', tr['sentences'])}" if tr else "n/a"


def summary(R):
    """The table up front: shape x workload x weights."""
    L = []
    P = L.append
    mach = R["mach"]
    P("## Speed on three model shapes (issue 13; `make bench`, generated)\n")
    P(f"{mach['date']}, {mach['cores']} cores ({mach['cpu']}), load average at start "
      f"{' '.join(f'{x:.2f}' for x in mach['load'])}"
      f"{' (a training job was running)' if mach['training_running'] else ''}; {R['args']['threads']} threads "
      "for both engines.  Target tokens per second (generated ids, </s> included) of the C engine "
      "(bench/bench_engine.c) and of the PyTorch reference (bench/bench_torch.py, models/recipe/model.py) "
      "on the same weights and the same source ids in the same run; \"outputs equal\": output id sequences "
      "of the two engines that are identical.  en-fr is the shipped model; the two OPUS-MT shapes are "
      "the published configurations at full depth with random weights (details and caveats under "
      "\"The three shapes\" below).\n")
    P("| shape | workload | weights | C tok/s | PyTorch tok/s | x PyTorch | outputs equal |")
    P("|---|---|---|---:|---:|---:|---:|")
    for S in R["shapes"]:
        E0 = S["E"][next(iter(S["E"]))]
        # batch 1 greedy and the batched workloads (en-fr's batch-1 beam 4 is in section 1)
        for k in [k for k in E0["c"] if k == "1:1" or not k.startswith("1:")]:
            for W, E in S["E"].items():
                c, tr = E["c"].get(k), E["t"].get(k)
                if not c:
                    continue
                ref = format(tr["tok_per_s"], ",.0f") if tr else "n/a"
                P(f"| {S['title']} | {workload(k)} | {W} | {c['tok_per_s']:,.0f} | {ref} | "
                  f"{fmt_ratio(c['tok_per_s'] / tr['tok_per_s']) if tr else 'n/a'} | {equal_cell(tr)} |")
    P("")
    w = R.get("whole")
    if w:
        P(f"Whole process, load included (`mtserve translate --beam 1` against bench/torch_translate.py, "
          f"{w['n']} en-fr test sentences one at a time, {R['args']['threads']} threads each, median of "
          f"{w['reps']} alternating runs): C {w['median']['c']:.2f} s, PyTorch {w['median']['t']:.2f} s: "
          f"**{fmt_ratio(w['ratio'])}**; translations equal on {w['equal']} of {w['n']} lines.\n")
    return L


def shapes_section(R):
    L = []
    P = L.append
    P("## The three shapes: load, memory, bandwidth\n")
    P("| shape | | source | max_length | sentences (C / batch 1 and reference beam) | mean output length "
      "(C, first weights mode: greedy; beam) |")
    P("|---|---|---|---:|---|---|")
    for S in R["shapes"]:
        E0 = S["E"][next(iter(S["E"]))]
        m, ml = E0["model"], E0.get("mean_len", {})
        lens = "; ".join(f"{ml[k]:.1f}" for k in (next((k for k in ml if k.endswith(":1")), None),
                                                  next((k for k in ml if not k.endswith(":1")), None)) if k)
        P(f"| {S['title']} | {shape_line(S)}; {m['dtype']} on disk, {m['file_bytes'] / 1e6:,.0f} MB | "
          f"`{S['model']}`, first {m['sentences']} lines of `{S['input']}` ({m['source_tokens']:,} source tokens) | "
          f"{m['max_length']} | {S['n']} / {S['ref_n']} | {lens or 'n/a'} |")
    P("")
    gens = [S for S in R["shapes"] if S.get("gen")]
    if gens:
        g = gens[0]["gen"]
        P(f"The OPUS-MT shapes are written by `make bench-models` ({B}/bench-models/, never committed): "
          f"`{g['command']}`, from the real config.json and tokenizer files under tests/fixtures/opus-mt/ "
          f"at their published depth.  Linear weights are drawn with gain {g['gain']:g}/sqrt(in) (the test "
          "models use 5): at full depth, wide random weights collapse every position of the encoder and every "
          "decoder step to one state, and with the tied embeddings calm ones copy the input token to the "
          "output; LayerNorm weights drawn in [-1, 1) (`--signed-ln`) break that copy.  The gain was chosen by "
          "`bench/calm.py`: the reference in float32 and in float64 must give the same ids, and outputs must "
          "not be one token repeated.  Random weights have no reason to end a sentence, so max_length is "
          "capped explicitly (--opus-max-length: at the cap an output is max_length - 1 ids, </s> forced last, "
          "about a test sentence's length; the table above gives the mean lengths): beam search then runs to "
          "the cap too, the dearest case for both engines.\n")
    P("Load: `mt_model_load` wall time in bench_engine (the file is in the page cache: bench_engine loads "
      "it once per weights mode).  Peak RSS: the bench_engine process's VmHWM after the load, and at its "
      "end (after every configuration, with a session sized for the largest of them: batch x beams rows, "
      "KV caches paged in as used).  A decode step at batch 1 reads every decoder Linear (but the cross "
      "K/V projections, run once per source) and the vocabulary projection once: \"read per step\".  The "
      "bandwidth it is compared with is measured in the same process: threads summing a buffer as large as "
      "those bytes (the step's own working set: in the 32 MB L3 for en-fr, from memory for the OPUS-MT "
      "shapes), on huge pages as the engine's packed weights are, best of 1 and 2 threads; the bound is "
      "the bytes over that bandwidth, and \"% of bound\" the bound over the measured step (batch-1 greedy "
      "runs of two lengths, so the encoder cancels).\n")
    P("| shape | weights | load | peak RSS after load | peak RSS at end | weights held | read per step "
      "| read GB/s at that size (1 / 2 thr) | bound | step (batch 1) | % of bound |")
    P("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for S in R["shapes"]:
        for W, E in S["E"].items():
            m, x, r = E["model"], E["lim"], E["rss"]
            P(f"| {S['title']} | {W} | {m['load_ms']:,.0f} ms | {m['hwm_after_load'] / 2**20:,.0f} MiB | "
              f"{r['hwm_end'] / 2**20:,.0f} MiB | {mb(m['weight_bytes'])} | {mb(x['step_weight_bytes'])} | "
              f"{x['read_step_gbs_1t']:.1f} / {x['read_step_gbs_nt']:.1f} | {x['step_bound_mem_us']:,.0f} us | "
              f"**{x['step_us']:,.0f} us** | **{x['step_bound_mem_us'] / x['step_us'] * 100:.0f}%** |")
    P("")
    return L


# What each weights mode means, for section 1 (a mode without an entry is only named in the tables).
WEIGHTS_TEXT = {
    "F32": "F32: the checkpoint as it is in both engines.",
    "F16": ("F16: the C engine rounds every weight matrix to half precision at load (`--weights f16`) and the "
            "reference runs `bench_torch.py --weights f16`, which rounds the same matrices ({nmat} for en-fr: "
            "every Linear weight and the shared embedding / lm_head; not the biases, the LayerNorms, "
            "final_logits_bias or the positions)."),
    "INT8": ("INT8: `--weights int8` and the reference's `model.quantize_int8` (every Linear and the "
             "vocabulary projection quantized per output row, inputs per row as each product runs)."),
}


def report(R):
    shapes = {S["name"]: S for S in R["shapes"]}
    L = []
    P = L.append
    P(f"# The engine and the server (`make bench`: issues 6 and 13)\n")
    mach = R["mach"]
    P("## Machine\n")
    P("| | |\n|---|---|")
    for k in ("cpu", "cores", "memory_gib", "os", "kernel", "openblas", "compiler", "torch", "date"):
        P(f"| {k} | {mach[k]} |")
    P(f"| load average at start | {' '.join(f'{x:.2f}' for x in mach['load'])}"
      f"{' (the model training job was running)' if mach['training_running'] else ''} |\n")
    L += shapes_section(R)

    P("## 1. Engine: C vs the PyTorch reference (same weights, same source ids, same run)\n")
    W0 = next(iter(R["shapes"][0]["E"]))
    m0 = R["shapes"][0]["E"][W0]["model"]
    nmat = 6 * m0["enc_layers"] + 10 * m0["dec_layers"] + 1
    P("Greedy runs batched in both engines.  The reference's beam search decodes one sentence at a time "
      "(no batched beam), so its \"batch 32 beam 4\" is sentences one after another; the C engine decodes "
      "32 sentences x 4 beams as one batch of 128 rows.  Target tokens = generated ids, </s> included."
      + "".join("  " + WEIGHTS_TEXT[W].format(nmat=nmat) for W in R["shapes"][0]["E"] if W in WEIGHTS_TEXT) +
      "  Outputs are compared within each weights mode; \"sentences\" is how many each engine decoded "
      "(C / reference) when they differ.\n")
    P("| shape | weights | batch | beam | sentences | C sent/s | C tok/s | PyTorch sent/s | PyTorch tok/s "
      "| C / PyTorch | outputs equal |")
    P("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for S in R["shapes"]:
        for W, E in S["E"].items():
            for k, r in E["c"].items():
                b, m = k.split(":")
                tr = E["t"].get(k)
                ns = (f"{r['sentences']}" if not tr or tr["sentences"] == r["sentences"]
                      else f"{r['sentences']} / {tr['sentences']}")
                P(f"| {S['title']} | {W} | {b} | {m} | {ns} | {r['sent_per_s']:.1f} | {r['tok_per_s']:,.0f} | "
                  f"{tr['sent_per_s'] if tr else 'n/a'} | "
                  f"{format(tr['tok_per_s'], ',.0f') + (' *' if tr.get('note') else '') if tr else 'n/a'} | "
                  f"{fmt_ratio(r['tok_per_s'] / tr['tok_per_s']) if tr else 'n/a'} | {equal_cell(tr)} |")
    P("")
    P("\\* the reference's beam search is sentence by sentence whatever the batch, so its batch-32 beam-4 figure is "
      "its batch-1 beam-4 run (measured once).\n")
    for S in R["shapes"]:
        parts = []
        for W, E in S["E"].items():
            same = E.get("same_as_f32", {})
            if same:
                parts.append(f"{W}: " + ", ".join(
                    f"batch {k.split(':')[0]} beam {k.split(':')[1]} {v}/{E['c'][k]['sentences']}"
                    for k, v in same.items() if k in E["c"]))
        if parts:
            P(f"{S['title']}: C outputs equal to C F32 outputs (what holding the weights otherwise changes): "
              + "; ".join(parts) + ".\n")
    enfr = shapes.get("en-fr")
    if enfr and all("threads" in E for E in enfr["E"].values()):
        P("### en-fr, batch 1: 1 thread vs 2 (bench_engine --threads), target tokens/s\n")
        P("Every Linear runs on the engine's packed kernel, split over its own thread pool "
          "(engine/kernels/parallel.c)." + ("  The 2-thread figures are the table above's (same run)."
                                    if R["args"]["threads"] == 2 else "") + "\n")
        P("| weights | | 1 thread | 2 threads | 2 / 1 |")
        P("|---|---|---:|---:|---:|")
        for W, E in enfr["E"].items():
            sp = E["threads"]
            for beam, name in (("1", "batch 1 greedy"), ("4", "batch 1 beam 4")):
                one, two = sp["1"][beam], sp["2"][beam]
                P(f"| {W} | {name} | {one:.0f} | {two:.0f} | {two / one:.2f}x |")
        P("")

    srv, mem = R.get("srv"), R.get("mem")
    if srv:
        P(f"## 2. Server ({enfr['title'] if enfr else R['model_dir']}): POST /translate, one sentence per request, "
          "greedy, closed loop (bench/loadgen.c)\n")
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

    if mem and enfr and "F32" in enfr["E"]:
        E32 = enfr["E"]["F32"]
        model, lim = E32["model"], E32["lim"]
        W = model["weight_bytes"]
        P(f"## 3. Memory ({enfr['title']})\n")
        ws = sorted(mem, key=int)
        P("`mtserve serve --batching off --blas-threads 1` (F32 weights) with 1 and "
          f"{ws[-1]} workers, each worker decoding.\n")
        P("| workers | peak RSS (VmHWM) | RSS now |")
        P("|---:|---:|---:|")
        for w in ws:
            P(f"| {w} | {mem[w]['VmHWM']/2**20:.1f} MiB | {mem[w]['VmRSS']/2**20:.1f} MiB |")
        grow = (mem[ws[-1]]["VmHWM"] - mem[ws[0]]["VmHWM"]) / max(1, int(ws[-1]) - int(ws[0]))
        P(f"\nPer extra worker the peak RSS grows by {grow/2**20:.1f} MiB, against {W/2**20:.1f} MiB of weights "
          f"({'counted once' if grow < 0.5 * W else 'NOT counted once'}).  The weights are loaded once per "
          f"process: the safetensors file is mmapped and validated, the Linear weights are packed once at load "
          f"into the kernel's layout, and all workers share that one copy.  So per extra worker only the "
          f"session grows: the part of it that decoding touched (a default session reserves "
          f"{lim['session_bytes_default']/2**20:.1f} MiB, mostly KV cache for max_batch x max_tgt_len, paged in "
          f"only as used), plus the worker's thread stack.\n")
    P("KV cache (F32 in every weights mode by default; `--kv-cache f16` halves it): self-attention K|V = "
      "decoder layers x 2 x d_model x 4 bytes per target token per sequence (and the same per source token for the cross K|V); mt_session_bytes() per "
      "unit of max_tgt_len per sequence (the KV cache plus the token history and beam bookkeeping):\n")
    P("| shape | K\\|V bytes per target token | session bytes per unit of max_tgt_len |")
    P("|---|---:|---:|")
    for S in R["shapes"]:
        x = S["E"][next(iter(S["E"]))]["lim"]
        P(f"| {S['title']} | {x['kv_self_bytes_per_token']:,.0f} | {x['session_bytes_per_tgt_token']:,.0f} |")
    P("")

    P("## 4. The machine's limits (measured in the same run, once per shape and weights mode)\n")
    P("Decode step at batch 1, from greedy runs of two lengths (so the encoder cancels).  It reads every decoder "
      "Linear and the vocabulary projection once, at the bytes per weight they are held in (F32: 4, F16: 2, "
      "INT8: 1 plus 8 per output row).  Bounds: those bytes over the OpenBLAS sgemv bandwidth on the "
      "vocabulary projection's shape (cache resident when small; the bound issue 6 used), and over the read "
      "bandwidth at the step's own size (the table above).  Encoder (and cross K/V projections) at batch 32, including one decoder step: the peak it is "
      "compared with is OpenBLAS sgemm 1024^3 (best of 1 and 2 threads).\n")
    P("| shape | weights | step | read per step | sgemv GB/s: V x d; 64 MB (1 / n thr) | read GB/s, step size "
      "| bound (sgemv V x d) | bound (read, step size) | % of bound (read) | encoder | sgemm GFLOP/s (1 / n thr) | % of peak |")
    P("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for S in R["shapes"]:
        for W, E in S["E"].items():
            x = E["lim"]
            peak = max(x["sgemm_gflops_1t"], x["sgemm_gflops_nt"])
            P(f"| {S['title']} | {W} | **{x['step_us']:,.0f} us** | {mb(x['step_weight_bytes'])} | "
              f"{x['sgemv_gbs_1t']:.1f} / {x['sgemv_gbs_nt']:.1f}; {x['sgemv64mb_gbs_1t']:.1f} / "
              f"{x['sgemv64mb_gbs_nt']:.1f} | {x['read_step_gbs_1t']:.1f} / {x['read_step_gbs_nt']:.1f} | "
              f"{x['step_bound_us']:,.0f} us | {x['step_bound_mem_us']:,.0f} us | "
              f"**{x['step_bound_mem_us'] / x['step_us'] * 100:.0f}%** | "
              f"**{x['enc_gflops']:.1f} GFLOP/s** ({x['enc_flops']/1e9:.2f} GFLOP in {x['enc_seconds']*1e3:.0f} ms) | "
              f"{x['sgemm_gflops_1t']:.0f} / {x['sgemm_gflops_nt']:.0f} | **{x['enc_gflops'] / peak * 100:.0f}%** |")
    P("")

    P("## Targets\n")
    P("| target | figure | |")
    P("|---|---|---|")
    rows = []
    if enfr:
        for W, E in enfr["E"].items():
            for k, goal, name in (("1:1", 10, "batch 1 greedy"), ("32:4", 2, "batch 32 beam 4")):
                c, t = E["c"].get(k), E["t"].get(k)
                x = c["tok_per_s"] / t["tok_per_s"] if c and t else None
                rows.append((f"en-fr: C >= {goal}x PyTorch tokens/s, {name} ({W} weights)", fmt_ratio(x),
                             None if x is None else x >= goal))
    w = R.get("whole")
    if w:
        rows.append(("en-fr: batch 1 greedy whole process (load included) >= 10x PyTorch", fmt_ratio(w["ratio"]),
                     w["ratio"] >= 10))
    for r in srv or []:
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


# ---- BENCHMARKS.md ----------------------------------------------------------------------
def merge_benchmarks(old, summary_lines, main_lines):
    """The new file: everything hand-written in `old` kept, the summary table between its markers
    (first time: before the first "## " section of the hand-written part), the main report from its
    marker to the end (first time: from the old generated part's heading)."""
    if MAIN_BEGIN in old:
        head = old[:old.index(MAIN_BEGIN)]
    else:
        m = LEGACY_HEADINGS.search(old)
        head = old[:m.start()] if m else old
    block = SUMMARY_BEGIN + "\n\n" + "\n".join(summary_lines).rstrip("\n") + "\n\n" + SUMMARY_END + "\n"
    if SUMMARY_BEGIN in head and SUMMARY_END in head[head.index(SUMMARY_BEGIN):]:
        i = head.index(SUMMARY_BEGIN)
        j = head.index(SUMMARY_END, i) + len(SUMMARY_END)
        head = head[:i] + block.rstrip("\n") + head[j:]
    else:
        m = re.search(r"^## ", head, re.M)
        head = head[:m.start()] + block + "\n" + head[m.start():] if m else head + ("\n" if head else "") + block
    if head and not head.endswith("\n\n"):
        head = head.rstrip("\n") + "\n\n"
    return head + MAIN_BEGIN + "\n\n" + "\n".join(main_lines).rstrip("\n") + "\n"


def parse_shape_n(text):
    """"en-mg=32:8,tc-big=32:4" -> {"en-mg": (32, 8), ...}; N alone sets both."""
    out = {}
    for item in filter(None, text.split(",")):
        name, _, v = item.partition("=")
        if name not in SHAPES or not v:
            sys.exit(f"--shape-n: {item}: expected NAME=N[:M] with NAME one of {', '.join(SHAPES)}")
        n, _, m = v.partition(":")
        out[name] = (int(n), int(m or n))
    return out


def shapes_of(a):
    """The shapes to run, each a dict: SHAPES' entry with its model directory and sizes settled."""
    sizes = parse_shape_n(a.shape_n)
    out = []
    for name in a.shapes.split(","):
        if name not in SHAPES:
            sys.exit(f"--shapes: unknown shape {name} (one of {', '.join(SHAPES)})")
        S = dict(SHAPES[name], name=name)
        if name == "en-fr":
            S.update(model=a.model, n=a.n, title=a.label or SHAPES[name]["title"], max_length=a.max_length,
                     configs=a.configs)
        else:
            S.update(model=f"{a.opus_models}/{S['fixture']}/safetensors-f32", max_length=a.opus_max_length,
                     configs=a.opus_configs)
            if not os.path.exists(f"{S['model']}/model.safetensors"):
                sys.exit(f"{S['model']}: no model.safetensors: run `make bench-models` first")
            S["gen"] = bench_model_info(S["model"])
        S["n"], S["ref_n"] = sizes.get(name, (S["n"], S["ref_n"] or S["n"]))
        S["ref_n"] = min(S["ref_n"] or S["n"], S["n"])
        out.append(S)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/en-fr", help="the en-fr shape's model")
    ap.add_argument("--label", default=None, help="the en-fr shape's title")
    ap.add_argument("--n", type=int, default=64, help="sentences of the en-fr shape (and of the server runs)")
    ap.add_argument("--max-length", type=int, default=0, help="en-fr's max_length (0: the model's default)")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="which shapes, comma-separated")
    ap.add_argument("--shape-n", default="", help="NAME=N[:M],...: sentences of a shape (M: at batch 1 and "
                    "in the reference's beam search)")
    ap.add_argument("--opus-models", default=f"{B}/bench-models", help="make bench-models' directory")
    ap.add_argument("--opus-max-length", type=int, default=41, help="max_length of the OPUS-MT shapes")
    ap.add_argument("--weights", default=",".join(WEIGHTS), help="how the weights are held, comma-separated: "
                    "each a mode of bench_engine and bench_torch.py --weights")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=8, help="workers for the memory run")
    ap.add_argument("--requests", type=int, default=256, help="server runs: max(this, 16 x clients) requests")
    ap.add_argument("--clients", default="1,8,32,64", help="server runs: client counts, comma-separated")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--configs", default=SHAPES["en-fr"]["configs"], help="en-fr's batch:beam configurations")
    ap.add_argument("--opus-configs", default=SHAPES["en-mg"]["configs"], help="the OPUS-MT shapes'")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--whole-n", type=int, default=100, help="sentences of the whole-process run (0: none)")
    ap.add_argument("--whole-reps", type=int, default=3, help="runs of each process in the whole-process run")
    ap.add_argument("--skip-server", action="store_true", help="no server and memory runs")
    ap.add_argument("--torch-timeout", type=float, default=1800,
                    help="seconds per bench_torch.py run; configurations not done are n/a")
    ap.add_argument("--out", default="BENCHMARKS.md")
    ap.add_argument("--notes", default=os.path.join(os.path.dirname(__file__), "notes.md"))
    ap.add_argument("--from-json", help="re-render BENCHMARKS.md from a saved run (notes edited)")
    a = ap.parse_args()
    a.clients = [int(x) for x in a.clients.split(",")]
    a.weights = [w for w in a.weights.split(",") if w]
    os.chdir(ROOT)
    saved = f"{B}/bench/results.json"
    if a.from_json:
        R = json.load(open(a.from_json))
        if R.get("version") != 3:
            sys.exit(f"{a.from_json}: saved by an older bench/run.py (no model shapes); run the benchmarks again")
        CMDS[:] = R["cmds"]
    else:
        os.makedirs(TMP, exist_ok=True)
        shapes = shapes_of(a)
        mach = machine()
        for S in shapes:
            S["E"] = engine(a, S)
        srv = mem = whole = None
        enfr = next((S for S in shapes if S["name"] == "en-fr"), None)
        if enfr and not a.skip_server:
            max_length = enfr["E"][a.weights[0].upper()]["model"]["max_length"]
            srv = server(a, max_length)
            mem = memory(a, max_length)
        whole = whole_process(a) if enfr and not a.skip_torch and a.whole_n > 0 else None
        R = {"version": 3, "cmds": CMDS, "times": TIMES, "model_dir": a.model, "mach": mach,
             "args": {k: getattr(a, k) for k in ("n", "max_length", "threads", "workers", "requests", "clients",
                                                 "seconds", "configs", "opus_configs", "opus_max_length",
                                                 "shape_n", "weights", "skip_torch")},
             "shapes": shapes, "srv": srv, "mem": mem, "whole": whole}
        os.makedirs(os.path.dirname(saved), exist_ok=True)
        json.dump(R, open(saved, "w"), indent=1)
        print(f"saved {saved}", file=sys.stderr)
    S_lines = summary(R)
    L, rows = report(R)
    if os.path.exists(a.notes):
        L.append(open(a.notes).read())
    L.append("## Commands\n")
    L.append("`make bench" + (f" BENCH_MODEL={R['model_dir']}" if R["model_dir"] != "models/en-fr" else "") +
             "` ran:\n")
    L.append("```")
    L += CMDS
    L.append("```")
    old = open(a.out).read() if os.path.exists(a.out) else ""
    open(a.out, "w").write(merge_benchmarks(old, S_lines, L))
    print("\n".join(S_lines + L))


if __name__ == "__main__":
    main()
