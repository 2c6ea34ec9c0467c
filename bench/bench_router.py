#!/usr/bin/env python3
"""Router overhead against a trivial fast backend: keel router vs sglang-router (PyPI), in one run.

Starts bench_router_backend (fixed JSON answers), then measures with bench_router_load (closed loop,
keep-alive): the backend directly, through `keel router`, and through sglang-router, each with the
same policy (cache_aware) and one replica. Added latency = via-router percentile - direct percentile.
Router CPU time comes from /proc/<pid>/stat, so req/s per core = requests / router CPU seconds.
Also runs bench_router_decision (replica choice without sockets).

With --router-cpu C the routers run pinned to CPU C (taskset; a list such as 2-5 with --http-threads 4
for a keel router on four cores) and the backend and load generators to --other-cpus; then a saturation run (--peak-procs load generators x --peak-connections each) gives the
highest request rate one router core sustains. --low-connections N adds a low-load latency run (N
connections, the router core mostly idle: what a request pays, not queueing). --repeat N interleaves
the routers N times. --baseline-keel B also measures another keel binary (e.g. a build from before a
change) with --baseline-upstream-threads, in the same run. --peer-feed subscribes a reader to the keel
router's GET /v1/router/peer_feed (as a peer instance would, docs/router.md) for its runs, so every
decision and completion also emits a peer event: the cost of exact peer sync on the proxy path;
--baseline-peer-feed does the same for the baseline keel (two builds' peer feeds compared).
--keel-args "FLAGS" adds flags to the keel router under test only (e.g. --http-threads 2).
--stream-chunks N [--stream-gap-us G] streams every answer (N SSE chunks G µs apart, then [DONE]): the router's
CPU per streamed chunk (cpu_us_per_chunk). --rates R,R... adds open-loop runs at those total request rates (Poisson arrivals over --rate-procs
generators x --rate-connections each; latency from each request's scheduled time), direct and through
each router: the latency a request pays at a given offered load, rather than at a saturated core,
where a closed loop's p99 is its connections' queue (connections x the router's CPU per request).
Every run opens its connections at its start; bench_router_load also reports, per run, how fair the
router was between connections (conn_done, conn_slowest_us), the p99 of the requests sent in the
first 0.5 s (early_p99_us: connections still being set up) and of those sent after it (steady_p99_us;
added_steady_p99_us against the direct run).

Usage: bench/bench_router.py [--build build] [--sglang-router PYTHON] [--seconds 5] [--connections 8]
         [--router-cpu C --other-cpus LIST] [--http-threads 1] [--peak-procs 4 --peak-connections 16] [--repeat N]
         [--low-connections 1] [--upstream-threads 0] [--baseline-keel BIN] [--no-decision]
         [--peer-feed] [--baseline-peer-feed] [--keel-args "FLAGS"]
         [--rates 10000,20000 --rate-procs 4 --rate-connections 64]
  --sglang-router: a python that has sglang-router installed (pip install sglang-router==0.3.2).
"""
import argparse
import json
import os
import pathlib
import signal
import socket
import subprocess
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
BODY = json.dumps({"model": "m", "messages": [
    {"role": "system", "content": "You are a helpful assistant that answers briefly. " * 8},
    {"role": "user", "content": "What is the capital of France?"}], "max_tokens": 1})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout_s: float = 60) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


def cpu_seconds(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


PIN = {"router": [], "other": []}  # taskset prefixes, set in main()


STREAM = {"chunks": 0}  # --stream-chunks, set in main()
STREAM_BODY = json.dumps({**json.loads(BODY), "stream": True})


def load(build: pathlib.Path, port: int, seconds: float, connections: int, procs: int = 1, rate: float = 0) -> dict:
    """Closed loop, or open loop at `rate` req/s in all (split over the procs). Several procs: requests
    and req/s summed, p50 and p99 the worst proc's."""
    cmd = [*PIN["other"], str(build / "bench/bench_router/bench_router_load"), "127.0.0.1", str(port),
           "/v1/chat/completions", STREAM_BODY if STREAM["chunks"] else BODY, str(connections), str(seconds)]
    if rate > 0:
        cmd.append(str(rate / procs))
    if procs == 1:
        return json.loads(subprocess.check_output(cmd, text=True))
    runs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(procs)]
    parts = [json.loads(p.communicate()[0]) for p in runs]
    return {"requests": sum(x["requests"] for x in parts), "errors": sum(x["errors"] for x in parts),
            "rps": round(sum(x["rps"] for x in parts), 1), "p50_us": max(x["p50_us"] for x in parts),
            "p99_us": max(x["p99_us"] for x in parts), "load_procs": procs, "connections_each": connections,
            "offered_rps": round(sum(x.get("offered_rps", 0) for x in parts), 1),
            "late": sum(x.get("late", 0) for x in parts),
            # fairness between connections (bench_router_load): fewest / median / most requests a
            # connection completed, its slowest request (over all procs), and the first 0.5 s's p99
            "conn_done": [min(x["conn_done"][0] for x in parts), sorted(x["conn_done"][1] for x in parts)[len(parts) // 2],
                          max(x["conn_done"][2] for x in parts)],
            "conn_slowest_us": [min(x["conn_slowest_us"][0] for x in parts),
                                sorted(x["conn_slowest_us"][1] for x in parts)[len(parts) // 2],
                                max(x["conn_slowest_us"][2] for x in parts)],
            "early_p99_us": max(x["early_p99_us"] for x in parts),
            "steady_p99_us": max(x["steady_p99_us"] for x in parts)}


def measure(name, build, port, pid, seconds, connections, procs=1, warmup=1.0, rate=0.0) -> dict:
    load(build, port, warmup, connections, procs, rate)  # warm-up: connections, pools, caches
    cpu0 = cpu_seconds(pid) if pid else 0.0
    r = load(build, port, seconds, connections, procs, rate)
    cpu = (cpu_seconds(pid) - cpu0) if pid else 0.0
    r["name"] = name
    r["connections"] = connections * procs
    r["rate"] = rate
    r["router_cpu_s"] = round(cpu, 3)
    r["req_per_cpu_s"] = round(r["requests"] / cpu, 1) if cpu > 0 else None
    r["cpu_us_per_req"] = round(cpu * 1e6 / r["requests"], 1) if r["requests"] and cpu > 0 else None
    if STREAM["chunks"]:
        r["stream_chunks"] = STREAM["chunks"]
        r["cpu_us_per_chunk"] = round(r["cpu_us_per_req"] / (STREAM["chunks"] + 1), 2) if r["cpu_us_per_req"] else None
    r["router_core_busy"] = round(cpu / seconds, 3) if pid else None
    r["load_avg"] = round(os.getloadavg()[0], 2)
    return r


def run_router(kind, build, bport, a, results):
    """Starts one router, measures it (latency runs, then the saturation run when pinned), stops it.

    kind: "keel", "baseline" (a.baseline_keel) or "sglang"."""
    port = free_port()
    if kind in ("keel", "baseline"):
        binary = str(build / "src/cli/keel") if kind == "keel" else a.baseline_keel
        threads = a.upstream_threads if kind == "keel" else a.baseline_upstream_threads
        name = f"keel router{' (baseline)' if kind == 'baseline' else ''} (cache_aware, char keys, upstream threads {threads})"
        if a.http_threads > 1:
            name += f" ({a.http_threads} http threads)"
        cmd = [*PIN["router"], binary, "router", "--port", str(port), "--workers",
               f"http://127.0.0.1:{bport}", "--http-threads", str(a.http_threads), "--upstream-threads", str(threads),
               "--no-access-log", "--policy", "cache_aware"]
        if kind == "keel" and a.keel_args:
            cmd += a.keel_args.split()
            name += f" {a.keel_args}"
        proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
        timeout = 60
    else:
        name = "sglang-router 0.3.2 (cache_aware)"
        cmd = [*PIN["router"], a.sglang_router, "-m", "sglang_router.launch_router", "--host", "127.0.0.1",
               "--port", str(port), "--worker-urls", f"http://127.0.0.1:{bport}", "--policy", "cache_aware",
               "--log-level", "error", "--prometheus-port", str(free_port())]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        timeout = 120
    try:
        wait_http(f"http://127.0.0.1:{port}/health", timeout)
        if (kind == "keel" and a.peer_feed) or (kind == "baseline" and a.baseline_peer_feed):
            name += " + a peer subscribed"
            threading.Thread(target=drain_peer_feed, args=(port,), daemon=True).start()
            wait_subscribed(port)
        if a.low_connections > 0:
            results.append(measure(name + " low load", build, port, proc.pid, a.seconds, a.low_connections,
                                   warmup=a.warmup))
        results.append(measure(name, build, port, proc.pid, a.seconds, a.connections, warmup=a.warmup))
        for rate in a.rates:
            results.append(measure(f"{name} open loop {rate:g} req/s", build, port, proc.pid, a.seconds,
                                   a.rate_connections, a.rate_procs, warmup=a.warmup, rate=rate))
        if a.router_cpu is not None and a.peak_procs > 0:
            r = measure(name + " saturated", build, port, proc.pid, a.seconds, a.peak_connections, a.peak_procs,
                        warmup=a.warmup)
            results.append(r)
    finally:
        stop(proc)


def drain_peer_feed(port: int) -> None:
    """Reads the router's peer feed until it ends (the router stops)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/router/peer_feed", timeout=600) as r:
            while r.read(65536):
                pass
    except OSError:
        pass


def wait_subscribed(port: int, timeout_s: float = 10) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            if b"keel_router_peer_feed_subscribers 1" in r.read():
                return
        time.sleep(0.05)
    raise RuntimeError("the peer feed reader did not subscribe")


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--sglang-router", default="")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--router-cpu", default=None,
                    help="pin the routers to this CPU or CPU list (taskset), e.g. 2 or 2-5")
    ap.add_argument("--http-threads", type=int, default=1,
                    help="keel router --http-threads (both keel binaries); give --router-cpu as many CPUs")
    ap.add_argument("--other-cpus", default="", help="CPU list for the backend and load generators")
    ap.add_argument("--backend-threads", type=int, default=1)
    ap.add_argument("--peak-procs", type=int, default=4, help="load generators in the saturation run (pinned only)")
    ap.add_argument("--peak-connections", type=int, default=16, help="connections per load generator there")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--warmup", type=float, default=1.0, help="seconds of load before each measured run")
    ap.add_argument("--low-connections", type=int, default=0, help="also a low-load latency run at N connections")
    ap.add_argument("--upstream-threads", type=int, default=0,
                    help="keel router --upstream-threads (0: upstream sockets on the front end's thread)")
    ap.add_argument("--baseline-keel", default="", help="another keel binary to measure in the same run")
    ap.add_argument("--baseline-upstream-threads", type=int, default=1)
    ap.add_argument("--baseline-peer-feed", action="store_true",
                    help="a peer feed reader for the baseline keel too (--peer-feed is for the keel under test)")
    ap.add_argument("--no-decision", action="store_true", help="skip bench_router_decision")
    ap.add_argument("--keel-args", default="",
                    help="more flags for the keel router under test (not the baseline), e.g. --http-threads 2")
    ap.add_argument("--peer-feed", action="store_true",
                    help="a reader subscribed to the keel router's /v1/router/peer_feed during its runs")
    ap.add_argument("--stream-chunks", type=int, default=0,
                    help="stream every answer: the backend sends this many SSE chunks and [DONE] (cpu_us_per_chunk)")
    ap.add_argument("--stream-gap-us", type=int, default=0, help="the backend's gap between a stream's chunks")
    ap.add_argument("--rates", default="", help="open-loop runs at these total req/s, comma-separated")
    ap.add_argument("--rate-procs", type=int, default=4, help="load generators in each open-loop run")
    ap.add_argument("--rate-connections", type=int, default=64,
                    help="connections per generator there (enough that few requests wait on their own "
                         "connection's previous answer: 16 x 4 let 3.5%% wait at 20k req/s, Session 14)")
    a = ap.parse_args()
    a.rates = [float(x) for x in a.rates.split(",") if x]
    if any(r <= 0 for r in a.rates):
        ap.error("--rates: positive request rates")
    build = pathlib.Path(a.build)
    if a.router_cpu is not None:
        PIN["router"] = ["taskset", "-c", str(a.router_cpu)]
    if a.other_cpus:
        PIN["other"] = ["taskset", "-c", a.other_cpus]
    results = []
    bport = free_port()
    STREAM["chunks"] = a.stream_chunks
    backend = subprocess.Popen([*PIN["other"], str(build / "bench/bench_router/bench_router_backend"), str(bport),
                                str(a.backend_threads), str(a.stream_chunks), str(a.stream_gap_us)])
    try:
        wait_http(f"http://127.0.0.1:{bport}/health")
        kinds = ["keel"] + (["baseline"] if a.baseline_keel else []) + (["sglang"] if a.sglang_router else [])
        for _ in range(a.repeat):
            direct = {}
            for conns in sorted({a.connections, a.low_connections} - {0}):
                name = "direct" if conns == a.connections else "direct low load"
                direct[(conns, 0.0)] = measure(name, build, bport, None, a.seconds, conns, warmup=a.warmup)
                results.append(direct[(conns, 0.0)])
            for rate in a.rates:
                d = measure(f"direct open loop {rate:g} req/s", build, bport, None, a.seconds, a.rate_connections,
                            a.rate_procs, warmup=a.warmup, rate=rate)
                direct[(d["connections"], rate)] = d
                results.append(d)
            for kind in kinds:
                n = len(results)
                run_router(kind, build, bport, a, results)
                for r in results[n:]:
                    if "saturated" not in r["name"]:
                        d = direct[(r["connections"], r["rate"])]
                        r["added_p50_us"] = r["p50_us"] - d["p50_us"]
                        r["added_p99_us"] = r["p99_us"] - d["p99_us"]
                        # the same after each run's first 0.5 s, when its connections are all set up
                        r["added_steady_p99_us"] = r["steady_p99_us"] - d["steady_p99_us"]
    finally:
        stop(backend)
    decision = "" if a.no_decision else subprocess.check_output(
        [str(build / "bench/bench_router/bench_router_decision")], text=True)
    print(json.dumps({"load": results, "decision": [json.loads(x) for x in decision.splitlines()]}, indent=1))


if __name__ == "__main__":
    main()
