#!/usr/bin/env python3
"""Does a long prompt hold up the router? Probes `keel router` while clients send multi-megabyte prompts.

Starts one `keel serve` replica (default model, CPU) and, for each keel binary given, `keel router
--model` in front of it (one HTTP io thread, the default: every connection shares it). Then
  1. quiet: a probe client sends GET /health to the router, one at a time, every 2 ms;
  2. large: the same probes while --senders clients each send --bodies chat requests whose prompt is
     --body-mb megabytes (far over the replica's context: the replica answers 400 at once, so what
     the probes see is the router's own work on the body: its scan, parse, template and tokenizer).
It prints one JSON line per binary and phase: probe latency p50 / p99 / max (ms) and the large
requests' latency. The quiet phase is the limit the large phase is measured against.

Usage: bench/bench_router_large_body.py --keel build/src/cli/keel [--keel old/keel ...]
"""
import argparse
import http.client
import json
import shlex
import statistics
import subprocess
import threading
import time

from bench_serve import free_port, stop_process, wait_ready


def probe_until(port: int, stop: threading.Event, out: list) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while not stop.is_set():
        t = time.perf_counter()
        conn.request("GET", "/health")
        conn.getresponse().read()
        out.append((time.perf_counter() - t) * 1000)
        time.sleep(0.002)


def send_large(port: int, body: bytes, n: int, out: list, statuses: list) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for _ in range(n):
        t = time.perf_counter()
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        out.append((time.perf_counter() - t) * 1000)
        statuses.append(resp.status)


def summary(xs: list) -> dict:
    xs = sorted(xs)
    return {"n": len(xs), "p50_ms": round(statistics.median(xs), 2),
            "p99_ms": round(xs[min(len(xs) - 1, int(0.99 * len(xs)))], 2), "max_ms": round(xs[-1], 2)}


def measure(a, port: int, name: str) -> None:
    stop = threading.Event()
    quiet: list = []
    t = threading.Thread(target=probe_until, args=(port, stop, quiet))
    t.start()
    time.sleep(a.seconds)
    stop.set()
    t.join()
    print(json.dumps({"router": name, "phase": "quiet", "probe": summary(quiet)}), flush=True)

    text = "hello world, " * int(a.body_mb * 1e6 / 13)
    body = json.dumps({"model": "smollm2", "messages": [{"role": "user", "content": text}], "max_tokens": 1}).encode()
    stop.clear()
    probes: list = []
    large: list = []
    statuses: list = []
    t = threading.Thread(target=probe_until, args=(port, stop, probes))
    t.start()
    senders = [threading.Thread(target=send_large, args=(port, body, a.bodies, large, statuses))
               for _ in range(a.senders)]
    for s in senders:
        s.start()
    for s in senders:
        s.join()
    stop.set()
    t.join()
    print(json.dumps({"router": name, "phase": "large", "body_bytes": len(body), "probe": summary(probes),
                      "large": summary(large), "statuses": sorted(set(statuses))}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keel", action="append", required=True, help="a keel binary, optionally with router flags")
    ap.add_argument("--model", default=None, help="GGUF model (default: scripts/fetch_model.sh)")
    ap.add_argument("--body-mb", type=float, default=7.5)
    ap.add_argument("--senders", type=int, default=2)
    ap.add_argument("--bodies", type=int, default=5, help="large requests per sender")
    ap.add_argument("--seconds", type=float, default=2.0, help="length of the quiet phase")
    a = ap.parse_args()
    model = a.model or subprocess.check_output(["scripts/fetch_model.sh"], text=True).strip()
    first = shlex.split(a.keel[0])[0]
    sport = free_port()
    serve = subprocess.Popen([first, "serve", "--model", model, "--served-model-name", "smollm2", "--port", str(sport)],
                             stderr=subprocess.DEVNULL)
    try:
        wait_ready(f"http://127.0.0.1:{sport}", serve, "keel serve")
        for spec in a.keel:
            binary, *flags = shlex.split(spec)
            rport = free_port()
            router = subprocess.Popen([binary, "router", "--port", str(rport), "--workers", f"http://127.0.0.1:{sport}",
                                       "--model", model, "--no-access-log", *flags], stderr=subprocess.DEVNULL)
            try:
                wait_ready(f"http://127.0.0.1:{rport}", router, "keel router")
                measure(a, rport, spec)
            finally:
                stop_process(router)
    finally:
        stop_process(serve)


if __name__ == "__main__":
    main()
