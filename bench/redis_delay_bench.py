#!/usr/bin/python3
"""redis_delay_bench: plain translations' latency with a slow Redis (issue 51's Done-when).

    /usr/bin/python3 bench/redis_delay_bench.py [--bin build/mtserve] [--model models/tiny]
                                                [--requests 400] [--clients 4] [--delay 0.2] [--rounds 1]

Starts Debian's redis-server on a private port and, in front of it, a TCP proxy
(here, asyncio) that holds every chunk a client sends for --delay seconds before
passing it on (one Redis call = one command chunk: each call is delayed).  Then
one server at a time, each with --redis (--redis-timeout at its default,
100 ms) and --cache-mb 0 (every request decoded), is sent --requests
/translate requests by --clients closed-loop clients, in this order:
  direct        --redis straight to Redis
  delayed       --redis through the proxy
and the same two with --req-limit 1000000 (a rate-limit script each request).
Prints p50, p99 and max of each, and the server's mtserve_redis_errors_total,
_over_budget_total, _skipped_total and _probes_total: a rate-limit script or a
cache lookup past --redis-budget (20 ms) is decided locally and marks Redis slow,
a call past the timeout marks it down, and while it is either the calls of
requests skip it at once; the server's own thread probes it (PING) after a
backoff (0.1 s doubling to 5 s).  --rounds N runs the four rows N times in turn
(the machine is shared: its load drifts), and prints each row's median p50 and
p99 over the rounds and the load average before and after.
"""
import argparse, asyncio, json, os, shutil, socket, subprocess, sys, tempfile, threading, time, urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proxy_thread(listen, target, delay):
    async def pump(reader, writer, wait):
        try:
            while data := await reader.read(65536):
                if wait:
                    await asyncio.sleep(delay)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def handle(cr, cw):
        try:
            rr, rw = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            cw.close()
            return
        await asyncio.gather(pump(cr, rw, True), pump(rr, cw, False))

    async def main():
        srv = await asyncio.start_server(handle, "127.0.0.1", listen)
        async with srv:
            await srv.serve_forever()

    threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()


def wait_up(port, proc, log):
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
            return
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.1)
    sys.exit(f"server did not start:\n{open(log).read()}")


def metric(port, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def load(port, n, clients, text):
    body = json.dumps({"text": text, "source": "en", "target": "fr", "max_length": 8}).encode()
    lat, lock, next_i, failed = [], threading.Lock(), [0], [0]

    def client():
        while True:
            with lock:
                if next_i[0] >= n:
                    return
                next_i[0] += 1
            t0 = time.monotonic()
            try:
                r = urllib.request.urlopen(urllib.request.Request(
                    f"http://127.0.0.1:{port}/translate", body, {"Content-Type": "application/json"}), timeout=30)
                r.read()
                ok = r.status == 200
            except OSError:
                ok = False
            with lock:
                if ok:
                    lat.append(time.monotonic() - t0)
                else:
                    failed[0] += 1

    ts = [threading.Thread(target=client) for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    lat.sort()
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3
    return {"ok": len(lat), "failed": failed[0], "p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": lat[-1] * 1e3}


def one_row(a, tmp, port, limit):
    sport, log = free_port(), os.path.join(tmp, "server.log")
    p = subprocess.Popen([a.bin, "serve", "--model", a.model, "--port", str(sport), "--cache-mb", "0",
                          "--no-access-log", "--redis", f"redis://127.0.0.1:{port}"] + limit,
                         stderr=open(log, "w"))
    try:
        wait_up(sport, p, log)
        load(sport, 20, 2, "Warm up.")
        r = load(sport, a.requests, a.clients, "The cat sleeps on the sofa.")
        for k in ("calls", "errors", "over_budget", "skipped", "probes"):
            r["redis_" + k] = metric(sport, f"mtserve_redis_{k}_total")
        return r
    finally:
        p.terminate()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/mtserve")
    ap.add_argument("--model", default="models/tiny")
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    rport, pport = free_port(), free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", tmp], stdout=subprocess.DEVNULL)
    proxy_thread(pport, rport, a.delay)
    time.sleep(0.5)
    print(json.dumps({"loadavg_before": open("/proc/loadavg").read().split()[:3]}), flush=True)
    rows = {}
    try:
        for _ in range(a.rounds):
            for limit in ([], ["--req-limit", "1000000"]):
                for name, port in (("direct", rport), ("delayed", pport)):
                    r = one_row(a, tmp, port, limit)
                    label = f"{name}{' +req-limit' if limit else ''}"
                    rows.setdefault(label, []).append(r)
                    print(json.dumps({"redis": label, **{k: round(v, 1) if isinstance(v, float) else v
                                                         for k, v in r.items()}}), flush=True)
    finally:
        redis.terminate()
        redis.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({"loadavg_after": open("/proc/loadavg").read().split()[:3]}), flush=True)
    med = lambda xs: sorted(xs)[len(xs) // 2]
    for label, rs in rows.items():
        print(json.dumps({"median_of": len(rs), "redis": label, "p50_ms": round(med([r["p50_ms"] for r in rs]), 1),
                          "p99_ms": round(med([r["p99_ms"] for r in rs]), 1),
                          "max_ms": round(max(r["max_ms"] for r in rs), 1),
                          "failed": sum(r["failed"] for r in rs)}), flush=True)


if __name__ == "__main__":
    main()
