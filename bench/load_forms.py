#!/usr/bin/python3
"""load_forms: how long mtserve takes to load a model in each file form, at the
real depth (issue 12).

    /usr/bin/python3 bench/load_forms.py [--models en-mg,tc-big-fr-en] [--runs 7] [--cold-runs 3]
                                         [--cold fadvise|drop_caches|none] [--bin build/mtserve]
                                         [--f16-form safetensors-f32] [--regen] [--clean]

From the repository root; needs Debian's /usr/bin/python3 (torch 1.13,
numpy: the recipe's code writes torch.save's skeleton) and a built
build/mtserve (`make`).  No Makefile target: run it as above.

1. Models.  For each model, a random-weight OPUS-MT model of the published
   configuration at its REAL depth (the published config.json's
   encoder_layers/decoder_layers, 6+6 for both), in every form, under
   build/bench-opus/<model>/ (never committed; about 1 GB for en-mg, 3.2 GB
   for tc-big-fr-en):
     fixture/  a copy of tests/fixtures/opus-mt/<model> (without expected.json)
               whose gen.json sets "layers" to the real depth, and whose pt/
               (torch.save's data.pkl, version, manifest) is rewritten for that
               depth by the recipe itself:
                 models/recipe/opus_fixtures.py --pt-only fixture --work build/bench-opus/<model>
     models/   build/tests/gen_opus fixture models: safetensors-f32,
               safetensors-f16, pytorch, marian (tests/gen_opus.c)
   pytorch_model.bin is then compared byte for byte with the file torch.save
   itself wrote for the same state dict (as the recipe's verify does at 1+1),
   and torch.save's copy deleted.  Skipped when models/.done is newer than the
   fixture, gen_opus and the recipe (--regen: always).  --clean deletes
   build/bench-opus/<model>/ at the end.

2. Measures.  Each (model, form) is loaded by `BIN serve --model DIR --host
   127.0.0.1 --port 0 --no-access-log` (default settings otherwise; BIN is
   copied to build/bench-opus/mtserve first, so a rebuild during the run
   changes nothing).  The figures, read when the server logs "ready":
     load ms    the server's own "loaded in N ms" line (mt_model_load: open,
                map, check, convert, pack; then the model's session pool)
     to ready   wall time from the exec to the "ready" line (process start,
                load, scheduler start; in load_forms.json only: load ms + ~10)
     user, sys  user and system CPU time of the process at "ready" (every
                thread; /proc/<pid>/stat, 10 ms ticks).  User time is the
                loader's own work and varies little from run to run; system
                time is mostly the kernel zeroing the fresh pages the weights
                are written to, and on this VM it varies by several times
                between identical loads (the host backing guest memory again
                after it was freed): most of the spread of the wall times
     peak RSS   VmHWM of /proc/<pid>/status at "ready"; RSS at ready, and its
                anonymous and file-mapped parts (RssAnon, RssFile)
   Warm: every form is loaded once to fill the page cache, then --runs rounds
   load each form once (the order rotated each round); the median is
   reported, and each form's ratio to safetensors-f32 (wall, and user CPU) is
   the median of the per-round ratios (loads seconds apart, on a noisy
   machine).
   Cold: --cold-runs rounds in which, before each load, the form's files are
   evicted from the page cache: fadvise (default; posix_fadvise DONTNEED on
   every file of the form's directory after a sync, no privilege needed, the
   eviction checked with fincore) or drop_caches (`echo 3 >
   /proc/sys/vm/drop_caches`, root, the whole machine's cache).  The disk is a
   VM's virtual disk: "cold" means out of this kernel's cache, the host may
   still hold the blocks.
   One more row per model: --f16-form loaded with `--weights f16` (every
   matrix rounded to F16 at load), in the same rounds.
   Sanity: each form translates one sentence of the fixture's expected.json
   (greedy, --max-length 24): safetensors-f32, pytorch and marian must give
   the same ids (they hold the same F32 weights).

3. Output: build/bench-opus/load_forms.md (the Markdown of the section
   "Load time by model form (issue 12)" of BENCHMARKS.md, without the
   reading) and build/bench-opus/load_forms.json (every run); the table is
   printed.  The script never writes BENCHMARKS.md.
"""
import argparse, glob, hashlib, json, os, platform, re, shutil, signal, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = "tests/fixtures/opus-mt"
RECIPE = "models/recipe/opus_fixtures.py"
PY = "/usr/bin/python3"
FORMS = ["safetensors-f32", "safetensors-f16", "pytorch", "marian"]
WEIGHT_FILE = {"safetensors-f32": "model.safetensors", "safetensors-f16": "model.safetensors",
               "pytorch": "pytorch_model.bin", "marian": "model.npz"}
LOAD_RE = re.compile(r"mtserve: model \S+ \((?P<dir>.*?), (?P<format>\S+) (?P<file>\S+)\): .*?, "
                     r"(?P<enc>\d+)\+(?P<dec>\d+) layers, d_model (?P<d>\d+), vocab (?P<V>\d+), "
                     r"(?P<wmb>[\d.]+) MB weights \((?P<held>\w+)\), session (?P<smb>[\d.]+) MB .*"
                     r"loaded in (?P<ms>\d+) ms")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run(cmd, **kw):
    log("+ " + " ".join(cmd))
    return subprocess.run(cmd, check=True, **kw)


def newest_mtime(paths):
    m = 0.0
    for p in paths:
        for f in ([p] if os.path.isfile(p) else glob.glob(f"{p}/**", recursive=True)):
            if os.path.isfile(f):
                m = max(m, os.path.getmtime(f))
    return m


# ---- 1. the models -------------------------------------------------------------------------
def prepare(model, base, gen, regen):
    src = f"{FIX}/{model}"
    fixture, models = f"{base}/fixture", f"{base}/models"
    stamp = f"{models}/.done"
    inputs = [src, gen, RECIPE, "models/recipe/model.py", os.path.abspath(__file__)]
    if not regen and os.path.exists(stamp) and os.path.getmtime(stamp) >= newest_mtime(inputs):
        log(f"{model}: {models} up to date")
        return json.load(open(stamp))
    cfg = json.load(open(f"{src}/config.json"))
    depth = cfg["encoder_layers"]
    if cfg["decoder_layers"] != depth:
        sys.exit(f"{model}: encoder_layers {depth} != decoder_layers {cfg['decoder_layers']}: "
                 "gen.json's one 'layers' cannot say that")
    shutil.rmtree(base, ignore_errors=True)
    shutil.copytree(src, fixture, ignore=shutil.ignore_patterns("expected.json", "pt"))
    with open(f"{fixture}/gen.json") as f:
        g = json.load(f)
    g["layers"] = depth
    with open(f"{fixture}/gen.json", "w") as f:
        json.dump(g, f)
        f.write("\n")
    t0 = time.time()
    out = run([PY, RECIPE, "--pt-only", fixture, "--work", base], stdout=subprocess.PIPE, text=True).stdout
    ref = out.strip().splitlines()[-1]
    t_pt = time.time() - t0
    t0 = time.time()
    run([gen, fixture, models])
    t_gen = time.time() - t0
    log(f"{model}: comparing {models}/pytorch/pytorch_model.bin with torch.save's {ref}")
    same = subprocess.run(["cmp", "-s", ref, f"{models}/pytorch/pytorch_model.bin"]).returncode == 0
    if not same:
        sys.exit(f"{model}: gen_opus's pytorch_model.bin differs from torch.save's {ref} (kept)")
    os.remove(ref)
    info = {"layers": depth, "pt_skeleton_s": round(t_pt, 1), "gen_opus_s": round(t_gen, 1),
            "pytorch_identical_to_torch_save": True,
            "bytes": sum(os.path.getsize(f) for f in glob.glob(f"{models}/*/*"))}
    with open(stamp, "w") as f:
        json.dump(info, f)
    log(f"{model}: {depth}+{depth} layers, {info['bytes'] / 1e6:.0f} MB in 4 forms; torch.save skeleton "
        f"{t_pt:.0f} s, gen_opus {t_gen:.1f} s; pytorch_model.bin byte-identical to torch.save's")
    return info


# ---- 2. measuring --------------------------------------------------------------------------
def evict(d, method):
    """Put the files of form directory d out of the page cache; returns the bytes still cached."""
    files = sorted(f for f in glob.glob(f"{d}/*") if os.path.isfile(f))
    os.sync()
    if method == "drop_caches":
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    else:
        for p in files:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "-o", "RES"] + files,
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    return sum(int(x) for x in out.split())


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0]) * 1024
    return out


def cpu_ms(pid):
    """(user, system) CPU time of the whole process (every thread, exited ones too), ms."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = 1e3 / os.sysconf("SC_CLK_TCK")
    return int(fields[11]) * tick, int(fields[12]) * tick


def load_once(binary, d, weights, timeout=300):
    cmd = [binary, "serve", "--model", d, "--host", "127.0.0.1", "--port", "0", "--no-access-log",
           "--weights", weights]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines, m = [], None
    try:
        deadline = t0 + timeout
        for line in p.stderr:
            lines.append(line.rstrip("\n"))
            m = m or LOAD_RE.search(line)
            if line.startswith("mtserve: ready"):
                break
            if time.monotonic() > deadline:
                break
        t_ready = time.monotonic() - t0
        if not m or not lines or not lines[-1].startswith("mtserve: ready"):
            raise RuntimeError(f"{' '.join(cmd)}: no 'ready':\n" + "\n".join(lines[-20:]))
        st = proc_status(p.pid)
        st["user_ms"], st["sys_ms"] = cpu_ms(p.pid)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
    g = m.groupdict()
    return {"load_ms": int(g["ms"]), "ready_ms": round(1e3 * t_ready, 1), "format": g["format"],
            "file": g["file"], "layers": f"{g['enc']}+{g['dec']}", "weights_mb": float(g["wmb"]),
            "held": g["held"], "session_mb": float(g["smb"]), "hwm": st["VmHWM"], "rss": st["VmRSS"],
            "rss_anon": st["RssAnon"], "rss_file": st["RssFile"], "user_ms": st["user_ms"], "sys_ms": st["sys_ms"], "line": m.group(0)}


def translate_ids(binary, d, text):
    out = subprocess.run([binary, "translate", "--model", d, "--beam", "1", "--max-length", "24", "--json"],
                         input=text + "\n", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         check=True, timeout=300).stdout
    return json.loads(out.splitlines()[0])["ids"]


def median(xs):
    return statistics.median(xs) if xs else None


def bench_model(model, base, binary, a):
    models = f"{base}/models"
    rows = [(f, "f32") for f in FORMS] + ([(a.f16_form, "f16")] if a.f16_form else [])
    key = lambda r: f"{r[0]}/{r[1]}"
    res = {key(r): {"form": r[0], "weights": r[1], "warm": [], "cold": [], "cold_left": []} for r in rows}
    for r in rows:
        d = f"{models}/{r[0]}"
        res[key(r)]["file_bytes"] = os.path.getsize(f"{d}/{WEIGHT_FILE[r[0]]}")
        res[key(r)]["dir_bytes"] = sum(os.path.getsize(f) for f in glob.glob(f"{d}/*") if os.path.isfile(f))
    log(f"{model}: warming the page cache (one load of each form)")
    for r in rows:
        res[key(r)]["warmup"] = load_once(binary, f"{models}/{r[0]}", r[1])
    for i in range(a.runs):
        order = rows[i % len(rows):] + rows[:i % len(rows)]
        for r in order:
            x = load_once(binary, f"{models}/{r[0]}", r[1])
            x["round"] = i
            res[key(r)]["warm"].append(x)
            log(f"  warm {i + 1}/{a.runs} {key(r):24s} {x['load_ms']:6d} ms, peak RSS {x['hwm'] / 2**20:7.1f} MiB")
    if a.cold != "none":
        for i in range(a.cold_runs):
            order = rows[i % len(rows):] + rows[:i % len(rows)]
            for r in order:
                d = f"{models}/{r[0]}"
                left = evict(d, a.cold)
                x = load_once(binary, d, r[1])
                x["round"] = i
                x["cached_before"] = left
                res[key(r)]["cold"].append(x)
                log(f"  cold {i + 1}/{a.cold_runs} {key(r):24s} {x['load_ms']:6d} ms (cached before: {left} B)")
    # same weights, same ids (F32 forms); F16 ones only reported
    text = json.load(open(f"{FIX}/{model}/expected.json"))["cases"][0]["text"]
    ids = {f: translate_ids(binary, f"{models}/{f}", text) for f in FORMS}
    for f in FORMS:
        res[f"{f}/f32"]["same_ids_as_f32"] = ids[f] == ids["safetensors-f32"]
    base_key = "safetensors-f32/f32"
    for k, v in res.items():
        for kind in ("warm", "cold"):
            xs = v[kind]
            v[f"{kind}_ms"] = median([x["load_ms"] for x in xs])
            v[f"{kind}_ready_ms"] = median([x["ready_ms"] for x in xs])
            v[f"{kind}_user_ms"] = median([x["user_ms"] for x in xs])
            v[f"{kind}_sys_ms"] = median([x["sys_ms"] for x in xs])
            for what, field in (("ratio", "load_ms"), ("user_ratio", "user_ms")):
                ratios = []
                for x in xs:
                    b = [y for y in res[base_key][kind] if y["round"] == x["round"]]
                    if b and b[0][field] > 0:
                        ratios.append(x[field] / b[0][field])
                v[f"{kind}_{what}"] = median(ratios)
        v["hwm"] = median([x["hwm"] for x in v["warm"]])
        for f in ("rss", "rss_anon", "rss_file", "weights_mb", "held", "session_mb", "layers", "format"):
            v[f] = v["warm"][-1][f]
    return res


# ---- 3. the report -------------------------------------------------------------------------
def cpu():
    name, flags = "?", []
    with open("/proc/cpuinfo") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k.strip() == "model name" and name == "?":
                name = v.strip()
            if k.strip() == "flags" and not flags:
                flags = v.split()
    want = ["avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "f16c", "fma"]
    return name, os.cpu_count(), [f for f in want if f in flags]


def fmt_mb(b):
    return f"{b / 1e6:,.0f}"


def table(all_res, a):
    cold = a.cold != "none" and a.cold_runs > 0
    head = ["model", "form", "file MB", "held", f"load ms, warm: median of {a.runs} (min-max)", "x sf-f32",
            "user CPU ms", "x sf-f32 (user)", "sys CPU ms"]
    if cold:
        head += [f"load ms, cold: median of {a.cold_runs}", "x sf-f32 (cold)"]
    head += ["peak RSS MB", "RSS at ready MB: anon + file"]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i < 2 else "---:" for i in range(len(head))) + "|"]
    for model, res in all_res.items():
        for k, v in res.items():
            form = v["form"] + (" `--weights f16`" if v["weights"] == "f16" else "")
            ms = [x["load_ms"] for x in v["warm"]]
            cells = [model, form, fmt_mb(v["file_bytes"]), v["held"],
                     f"{v['warm_ms']:,.0f} ({min(ms):,}-{max(ms):,})", f"{v['warm_ratio']:.2f}",
                     f"{v['warm_user_ms']:,.0f}", f"{v['warm_user_ratio']:.2f}", f"{v['warm_sys_ms']:,.0f}"]
            if cold:
                cells += [f"{v['cold_ms']:,.0f}", f"{v['cold_ratio']:.2f}"]
            cells += [fmt_mb(v["hwm"]), f"{fmt_mb(v['rss_anon'])} + {fmt_mb(v['rss_file'])}"]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description="Load time, CPU and RSS of each model form at the real depth "
                                             "(issue 12); see the header of bench/load_forms.py.")
    ap.add_argument("--models", default="en-mg,tc-big-fr-en")
    ap.add_argument("--runs", type=int, default=7, help="warm rounds (after one warm-up load of each form)")
    ap.add_argument("--cold-runs", type=int, default=3)
    ap.add_argument("--cold", choices=["fadvise", "drop_caches", "none"], default="fadvise")
    ap.add_argument("--bin", default="build/mtserve")
    ap.add_argument("--gen", default="build/tests/gen_opus")
    ap.add_argument("--out", default="build/bench-opus")
    ap.add_argument("--f16-form", default="safetensors-f32", help="the form also loaded with --weights f16 ('' = none)")
    ap.add_argument("--regen", action="store_true", help="regenerate the models even if up to date")
    ap.add_argument("--prepare-only", action="store_true")
    ap.add_argument("--clean", action="store_true", help="delete the generated models at the end")
    a = ap.parse_args()
    os.chdir(ROOT)
    if a.f16_form and a.f16_form not in FORMS:
        sys.exit(f"--f16-form: one of {FORMS}")
    os.makedirs(a.out, exist_ok=True)
    if a.gen == "build/tests/gen_opus":
        run(["make", "-s", "B=build", "build/tests/gen_opus"])      # as the recipe's build_gen
    names = a.models.split(",")
    prep = {m: prepare(m, f"{a.out}/{m}", a.gen, a.regen) for m in names}
    if a.prepare_only:
        return
    if not os.access(a.bin, os.X_OK):
        sys.exit(f"{a.bin}: not built (make)")
    binary = f"{a.out}/mtserve"
    shutil.copy2(a.bin, binary)
    bin_sha = hashlib.sha256(open(binary, "rb").read()).hexdigest()[:12]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE, text=True).stdout.strip()
    t_start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load0 = os.getloadavg()
    all_res = {m: bench_model(m, f"{a.out}/{m}", binary, a) for m in names}
    load1 = os.getloadavg()
    name, ncpu, flags = cpu()
    cmd = "/usr/bin/python3 bench/load_forms.py " + " ".join(sys.argv[1:])
    md = [f"Date {t_start}; {name}, {ncpu} cores, {platform.machine()}, flags {' '.join(flags)}; "
          f"kernel {platform.release()}; mtserve of commit {commit} (binary sha256 {bin_sha}); "
          f"load average {load0[0]:.1f} at start, {load1[0]:.1f} at end.",
          "", "```", cmd.strip(), "```", "",
          table(all_res, a), ""]
    for m in names:
        p = prep[m]
        sums = ", ".join(f"{f}: {'yes' if all_res[m][f + '/f32']['same_ids_as_f32'] else 'NO'}"
                         for f in ("pytorch", "marian"))
        md.append(f"- {m}: {p['layers']}+{p['layers']} layers, {p['bytes'] / 1e6:,.0f} MB in 4 forms (gen_opus "
                  f"{p['gen_opus_s']} s; pytorch_model.bin byte-identical to torch.save's); greedy ids of "
                  f"expected.json's first sentence equal to safetensors-f32's: {sums}")
    if a.cold != "none" and a.cold_runs:
        left = max(x["cached_before"] for r in all_res.values() for v in r.values() for x in v["cold"])
        md.append(f"- cold: the form's files evicted before each load ({a.cold}; at most {left:,} bytes "
                  f"of them still cached per fincore)")
    text = "\n".join(md) + "\n"
    with open(f"{a.out}/load_forms.md", "w") as f:
        f.write(text)
    with open(f"{a.out}/load_forms.json", "w") as f:
        json.dump({"date": t_start, "command": cmd, "cpu": name, "flags": flags, "commit": commit,
                   "bin_sha256": bin_sha, "loadavg": [load0, load1], "prepare": prep, "results": all_res}, f,
                  indent=1)
    print(text)
    if a.clean:
        for m in names:
            shutil.rmtree(f"{a.out}/{m}", ignore_errors=True)


if __name__ == "__main__":
    main()
