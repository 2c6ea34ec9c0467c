#!/usr/bin/env python3
"""Router overhead against a trivial fast backend: keel router vs sglang-router (PyPI), in one run.

Starts bench_router_backend (fixed JSON answers), then measures with bench_router_load (closed loop,
keep-alive): the backend directly, through `keel router`, and through sglang-router, each with the
same policy (cache_aware) and one replica. Added latency = via-router percentile - direct percentile.
Router CPU time comes from /proc/<pid>/stat, so req/s per core = requests / router CPU seconds.
Also runs bench_router_decision (replica choice without sockets).

Usage: bench/bench_router.py [--build build] [--sglang-router PYTHON] [--seconds 5] [--connections 8]
  --sglang-router: a python that has sglang-router installed (pip install sglang-router==0.3.2).
"""
import argparse
import json
import os
import pathlib
import signal
import socket
import subprocess
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


def load(build: pathlib.Path, port: int, seconds: float, connections: int) -> dict:
    out = subprocess.check_output([str(build / "bench/bench_router/bench_router_load"), "127.0.0.1", str(port),
                                   "/v1/chat/completions", BODY, str(connections), str(seconds)], text=True)
    return json.loads(out)


def measure(name, build, port, pid, seconds, connections) -> dict:
    load(build, port, 1.0, connections)  # warm-up: connections, pools, caches
    cpu0 = cpu_seconds(pid) if pid else 0.0
    r = load(build, port, seconds, connections)
    cpu = (cpu_seconds(pid) - cpu0) if pid else 0.0
    r["name"] = name
    r["router_cpu_s"] = round(cpu, 3)
    r["req_per_cpu_s"] = round(r["requests"] / cpu, 1) if cpu > 0 else None
    return r


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
    a = ap.parse_args()
    build = pathlib.Path(a.build)
    results = []
    bport = free_port()
    backend = subprocess.Popen([str(build / "bench/bench_router/bench_router_backend"), str(bport), "1"])
    procs = [backend]
    try:
        wait_http(f"http://127.0.0.1:{bport}/health")
        results.append(measure("direct", build, bport, None, a.seconds, a.connections))
        kport = free_port()
        keel = subprocess.Popen([str(build / "src/cli/keel"), "router", "--port", str(kport), "--workers",
                                 f"http://127.0.0.1:{bport}", "--http-threads", "1", "--upstream-threads", "1",
                                 "--no-access-log", "--policy", "cache_aware"], stderr=subprocess.DEVNULL)
        procs.append(keel)
        wait_http(f"http://127.0.0.1:{kport}/health")
        results.append(measure("keel router (cache_aware, char keys)", build, kport, keel.pid, a.seconds,
                               a.connections))
        stop(keel)
        if a.sglang_router:
            sport = free_port()
            sgl = subprocess.Popen([a.sglang_router, "-m", "sglang_router.launch_router", "--host", "127.0.0.1",
                                    "--port", str(sport), "--worker-urls", f"http://127.0.0.1:{bport}", "--policy",
                                    "cache_aware", "--log-level", "error", "--prometheus-port", str(free_port())],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(sgl)
            wait_http(f"http://127.0.0.1:{sport}/health", 120)
            results.append(measure("sglang-router 0.3.2 (cache_aware)", build, sport, sgl.pid, a.seconds,
                                   a.connections))
            stop(sgl)
    finally:
        for p in procs:
            if p.poll() is None:
                stop(p)
    direct = results[0]
    for r in results[1:]:
        r["added_p50_us"] = r["p50_us"] - direct["p50_us"]
        r["added_p99_us"] = r["p99_us"] - direct["p99_us"]
    decision = subprocess.check_output([str(build / "bench/bench_router/bench_router_decision")], text=True)
    print(json.dumps({"load": results, "decision": [json.loads(x) for x in decision.splitlines()]}, indent=1))


if __name__ == "__main__":
    main()
