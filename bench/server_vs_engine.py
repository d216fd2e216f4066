#!/usr/bin/env python3
"""The server at 32 clients against the engine's batch 32 (issue 32), same model, same sentences.

    python3 bench/server_vs_engine.py [--weights f32,int8] [--reps 3] [--n 256] [--requests 1024]
                                      [--bins LABEL=PATH,...] [--client loadgen|wrk|loadgen,wrk]
                                      [--model DIR] [--input FILE] [--max-length L]

--model (default models/en-fr) takes any model directory, e.g. a shape of `make bench-models`
(build/bench-models/en-mg/safetensors-f32: OPUS-MT's base shape, random weights) and --input its
sentences (default tests/fixtures/tokenizer/inputs/test.en.txt); --max-length L
caps every output at L ids on both sides (a random model's outputs run to the cap), 0: the
model's own max_length.

For each weights mode one server is started (`--cache-mb 0`: every request decodes; `--shortlist`
off, the default, on both sides; greedy; the model's own max_length, or --max-length, on both sides), then, --reps
times, interleaved so both see the same machine:

  engine  build/bench/bench_engine --configs 32:1 over the sentences one server run gets (the first
          n lines of the en-fr test split taken in turn, `requests` of them, in static batches of 32:
          the engine's run is as long as the server's, so both see the machine for the same time):
          generated ids / s, </s> included
  server  build/bench/loadgen, 32 clients in a closed loop, one sentence per request, the same n
          lines in turn: mtserve_generated_tokens_total (the same count: hyps' ids, </s> included)
          over loadgen's wall time, from /metrics before and after.  With --client wrk the same
          requests come from wrk (one thread, 32 connections, each a closed loop; bench/server_rate.lua
          sends the same bodies in turn) for --wrk-seconds: a client that spends less of the two
          cores than loadgen's 32 libcurl threads.  wrk runs for a time, not a count, so its
          server figure counts the rows of the decode steps run in that time
          (mtserve_batch_rows_sum: each row of a greedy step generates one id; in loadgen's runs the
          two counts are equal), not the finished requests' ids: those would leave out the work on
          the requests still in flight when wrk stops (up to 32 x max_length ids: 10-20% of a 5 s
          run at the base shape).  Several clients: each measures every server in each rep, in turn.

The engine runs twice per rep, before and after the servers': the rep's engine figure is their
mean, and their ratio (after / before), printed at the end, is the noise floor of the machine: on a
shared VM two runs of the same engine differ by as much as the server and the engine do.
For the server run: the loadgen process's CPU seconds (getrusage of the child) and the
server's (/proc/PID/stat utime + stime), as shares of the 2 cores over the run, and the mean
batch occupancy of its decode steps (mtserve_batch_rows_sum / _count over the run).  Prints one
JSON line per run and a table of medians.  The load generator runs on the same cores as the
server: its CPU share is CPU the engine-only run does not have to give away.
"""
import argparse
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B = os.path.join(ROOT, "build")
MODEL = os.path.join(ROOT, "models/en-fr")
INPUT = os.path.join(ROOT, "tests/fixtures/tokenizer/inputs/test.en.txt")
TICK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics(port):
    txt = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    def val(pat):
        m = re.search(r"^" + pat + r"\s+(\d+)", txt, re.M)
        return int(m.group(1)) if m else 0
    def sched(phase):               # the scheduler thread's seconds (0 with a binary without the metric)
        m = re.search(r'^mtserve_scheduler_seconds_total\{phase="' + phase + r'"\}\s+([0-9.]+)', txt, re.M)
        return float(m.group(1)) if m else 0.0
    return {"gen": val(r'mtserve_generated_tokens_total\{model="[^"]*"\}'),
            "rows": val("mtserve_batch_rows_sum"), "steps": val("mtserve_batch_rows_count"),
            "step": sched("step"), "between": sched("between")}


def proc_cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK        # utime, stime (fields 14, 15)


class Server:
    def __init__(self, binary, w, extra, model):
        self.port = free_port()
        cmd = [binary, "serve", "--model", model, "--host", "127.0.0.1", "--port", str(self.port),
               "--no-access-log", "--web", "", "--queue", "1024", "--cache-mb", "0", "--weights", w] + extra
        print("+", " ".join(cmd), file=sys.stderr, flush=True)
        self.log = open(f"/tmp/server_vs_engine-{self.port}.log", "w+")
        self.p = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(600):
            if self.p.poll() is not None:
                raise RuntimeError("server exited")
            try:
                if b'"ok"' in urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2).read():
                    break
            except OSError:
                pass
            time.sleep(0.1)
        self.log.seek(0)
        self.banner = next((l.strip() for l in self.log if "listening on" in l), "")

    def stop(self):
        self.p.terminate()
        self.p.wait()


def engine_input(a):
    """The sentences the server run gets: the first n lines, taken in turn, `requests` of them."""
    lines = open(a.input, encoding="utf-8").read().splitlines()[:a.n]
    path = os.path.join(B, "server_vs_engine-input.txt")         # a build output, rewritten each run
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines[i % len(lines)] + "\n" for i in range(a.requests))
    return path


def engine(a, w):
    out = subprocess.run([f"{B}/bench/bench_engine", "--model", a.model, "--input", a.engine_input,
                          "--n", str(a.requests), "--max-length", str(a.max_length),
                          "--threads", str(a.threads), "--weights", w, "--configs", "32:1"],
                         cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True).stdout
    r = next(json.loads(l) for l in out.splitlines() if l.startswith("{") and '"engine": "c"' in l)
    return {"tok_per_s": r["tok_per_s"], "tokens": r["target_tokens"], "seconds": r["seconds"],
            "cpu_ms_per_100_tok": 1e5 * r["cpu_s"] / r["target_tokens"]}


def loadgen(srv, a, requests):
    m0, s0 = metrics(srv.port), proc_cpu(srv.p.pid)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    out = subprocess.run([f"{B}/bench/loadgen", "--url", f"http://127.0.0.1:{srv.port}/translate",
                          "--input", a.input, "--n", str(a.n), "--clients", str(a.clients),
                          "--requests", str(requests), "--seconds", str(a.seconds), "--beam", "1",
                          "--max-length", str(a.max_length)],
                         cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True).stdout
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    m1, s1 = metrics(srv.port), proc_cpu(srv.p.pid)
    lg = json.loads(out.splitlines()[-1])
    return measured(m0, m1, s0, s1, r0, r1, wall, lg["seconds"], lg["req_per_s"], lg["errors"], "gen")


def wrk_bodies(a):
    """The request bodies loadgen sends (the first n lines, one JSON object per line), for wrk."""
    lines = open(a.input, encoding="utf-8").read().splitlines()[:a.n]
    path = os.path.join(B, "server_vs_engine-bodies.txt")        # a build output, rewritten each run
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": l, "beam_size": 1, **({"max_length": a.max_length} if a.max_length else {})},
                                ensure_ascii=False) + "\n" for l in lines)
    return path


def wrk(srv, a, requests):
    m0, s0 = metrics(srv.port), proc_cpu(srv.p.pid)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    secs = a.wrk_seconds if requests == a.requests else 1            # (the warm-up: 1 s)
    out = subprocess.run(["wrk", "-t1", f"-c{a.clients}", f"-d{secs}s", "--timeout", "30s",
                          "-s", os.path.join(ROOT, "bench/server_rate.lua"), f"http://127.0.0.1:{srv.port}/translate",
                          "--", a.wrk_bodies],
                         cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True).stdout
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    m1, s1 = metrics(srv.port), proc_cpu(srv.p.pid)
    m = re.search(r"(\d+) requests in ([0-9.]+)(ms|s|m)", out)
    if not m:
        raise RuntimeError("wrk: no summary in\n" + out)
    done, secs = int(m.group(1)), float(m.group(2)) * {"ms": 1e-3, "s": 1, "m": 60}[m.group(3)]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return measured(m0, m1, s0, s1, r0, r1, wall, secs, done / secs, int(bad.group(1)) if bad else 0, "rows")


def measured(m0, m1, s0, s1, r0, r1, wall, secs, req_per_s, errors, count):
    """One server run's figures from /metrics, the server's and the client's CPU before and after;
    count: "gen" (the finished requests' ids) or "rows" (the ids the decode steps generated)."""
    client = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    steps = m1["steps"] - m0["steps"]
    tokens = m1[count] - m0[count]
    return {"tok_per_s": tokens / secs, "tokens": tokens,
            "req_per_s": req_per_s, "errors": errors, "seconds": secs,
            "client_cpu_share": client / (NCPU * wall), "server_cpu_share": (s1 - s0) / (NCPU * wall),
            "server_cpu_ms_per_100_tok": 1e5 * (s1 - s0) / max(1, tokens),
            "client_cpu_ms_per_100_tok": 1e5 * client / max(1, tokens),
            "occupancy": (m1["rows"] - m0["rows"]) / steps if steps else 0, "steps": steps,
            # the scheduler thread's time between steps, as a share of its time stepping or between steps
            # (its idle time is counted when a wait ends: the wait before this run would land in it)
            "sched_between": (m1["between"] - m0["between"]) /
                             max(1e-9, m1["step"] - m0["step"] + m1["between"] - m0["between"])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", default="f32,int8")
    ap.add_argument("--model", default=MODEL, help="the model directory both sides load")
    ap.add_argument("--input", default=INPUT, help="the sentences, one a line (the first --n are used)")
    ap.add_argument("--max-length", type=int, default=0, help="cap every output at this many ids (0: the model's)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--n", type=int, default=256, help="first n lines of the test split")
    ap.add_argument("--requests", type=int, default=1024)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2, help="bench_engine's compute threads")
    ap.add_argument("--server-args", default="", help="extra mtserve serve options")
    ap.add_argument("--bins", default=f"server={B}/mtserve",
                    help="LABEL=PATH,...: mtserve binaries to measure in turn in each rep (e.g. before=...,after=...)")
    ap.add_argument("--wrk-seconds", type=int, default=5, help="--client wrk: each server run's duration")
    ap.add_argument("--client", default="loadgen",
                    help="loadgen, wrk, or both as loadgen,wrk: the load generators measured in turn")
    a = ap.parse_args()
    clients = {"loadgen": loadgen, "wrk": wrk}
    runs = []                                   # (label, binary, client): each measured in every rep
    for label, path in (b.split("=", 1) for b in a.bins.split(",")):
        for c in a.client.split(","):
            if c not in clients:
                ap.error(f"--client: {c} is neither loadgen nor wrk")
            runs.append((label if a.client == "loadgen" else f"{label} ({c})", path, c))
    a.wrk_bodies = wrk_bodies(a)
    a.engine_input = engine_input(a)
    rows = []
    med = lambda L, k: statistics.median(x[k] for x in L)
    for w in a.weights.split(","):
        srvs = {}
        try:
            for label, path, c in runs:
                if path not in srvs:
                    srvs[path] = Server(path, w, a.server_args.split(), a.model)
                clients[c](srvs[path], a, 128)                      # warm-up (each client once)
            E, S, self_ratio = [], {label: [] for label, _, _ in runs}, []
            for i in range(a.reps):
                before = engine(a, w)
                for label, path, c in runs:
                    S[label].append(clients[c](srvs[path], a, a.requests))
                after = engine(a, w)
                # the rep's engine figure: the mean of the runs either side of the servers'
                E.append({k: (before[k] + after[k]) / 2 for k in before})
                self_ratio.append(after["tok_per_s"] / before["tok_per_s"])
                print(json.dumps({"weights": w, "rep": i, "engine": E[-1], "engine_before": before,
                                  "engine_after": after, **{label: S[label][-1] for label, _, _ in runs}}),
                      flush=True)
        finally:
            for srv in srvs.values():
                srv.stop()
        for label, path, _ in runs:
            ratios = [s["tok_per_s"] / e["tok_per_s"] for e, s in zip(E, S[label])]
            cpu = [e["cpu_ms_per_100_tok"] / s["server_cpu_ms_per_100_tok"] for e, s in zip(E, S[label])]
            rows.append((w.upper(), label, med(E, "tok_per_s"), med(S[label], "tok_per_s"), statistics.median(ratios),
                         min(ratios), max(ratios), med(S[label], "client_cpu_share"),
                         med(S[label], "server_cpu_share"), med(S[label], "occupancy"), statistics.median(cpu),
                         med(E, "cpu_ms_per_100_tok"), med(S[label], "server_cpu_ms_per_100_tok"),
                         med(S[label], "client_cpu_ms_per_100_tok"), srvs[path].banner,
                         med(S[label], "sched_between"), statistics.median(self_ratio), min(self_ratio),
                         max(self_ratio)))
    cap = a.max_length or "the model's"
    print(f"\n{a.reps} interleaved reps, medians; model {a.model}, max_length {cap}; first {a.n} lines of the test split, {a.clients} clients, "
          f"{a.requests} requests per server run")
    print("| weights | server | engine batch 32 tok/s | server 32 clients tok/s | ratio (min-max) | "
          "client CPU share | server CPU share | mean batch occupancy | CPU ms / 100 tok: engine, server, client | "
          "engine CPU / server CPU per token | scheduler time between steps |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:,.0f} | {r[3]:,.0f} | {r[4]:.0%} ({r[5]:.0%}-{r[6]:.0%}) | {r[7]:.1%} | "
              f"{r[8]:.0%} | {r[9]:.1f} | {r[11]:.1f}, {r[12]:.1f}, {r[13]:.2f} | {r[10]:.0%} | "
              f"{r[15]:.1%} |")
    for r in rows:
        print(f"- {r[0]} {r[1]}: `{r[14]}`")
    for r in rows:
        print(f"- {r[0]} {r[1]}: the engine against itself (its run after the servers' over its run before): "
              f"median {r[16]:.0%}, {r[17]:.0%}-{r[18]:.0%}: how far this machine moves a ratio between two runs")


if __name__ == "__main__":
    main()
