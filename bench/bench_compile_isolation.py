#!/usr/bin/env python3
"""Does a grammar compile hold up other requests? Free-text probes against keel serve while new grammars compile.

For each keel binary given: start `keel serve` (default model, CPU, one HTTP io thread so every request
shares it), then
  1. quiet: probe requests (a /v1/completions with max_tokens=1, one at a time, one connection) alone;
  2. compiling: the same probes while --compilers clients each send --schemas large json_schema
     requests, every schema new (so every one compiles). Their chat prompt was sent once before (no
     schema), so their prefill is a cache hit and the probes wait for nothing but the compiles.
It prints one JSON line per binary and phase: probe latency p50 / p99 / max (ms) and the compile
requests' latency. The quiet phase is the limit the compiling phase is measured against.

Usage: bench/bench_compile_isolation.py --keel build/src/cli/keel [--keel "other/keel --grammar-threads 1" ...]
(each --keel is a binary and, optionally, extra `keel serve` flags for it)
"""
import argparse
import json
import os
import random
import shlex
import statistics
import subprocess
import threading
import time
import urllib.error
import urllib.request

from bench_serve import free_port, stop_process, wait_ready


def post(base: str, path: str, body: dict) -> tuple[int, float]:
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        e.read()
        status = e.code
    return status, (time.perf_counter() - t) * 1e3


def heavy_schema(rng: random.Random, n_props: int) -> dict:
    """An object of n_props required properties, each an enum of 50 random words: ~0.1 s per 300 props."""
    def word():
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(10))
    props = {f"p{i}_{word()}": {"enum": [word() for _ in range(50)]} for i in range(n_props)}
    return {"type": "object", "properties": props, "required": list(props)}


def summary(ms: list[float]) -> dict:
    if not ms:
        return {"n": 0}
    s = sorted(ms)
    return {"n": len(s), "p50_ms": round(statistics.median(s), 2),
            "p99_ms": round(s[min(len(s) - 1, int(0.99 * len(s)))], 2), "max_ms": round(s[-1], 2)}


def probe_until(base: str, stop: threading.Event, out: list[float], bad: list[int]) -> None:
    body = {"model": "smollm2", "prompt": "Hi", "max_tokens": 1, "temperature": 0}
    while not stop.is_set():
        status, ms = post(base, "/v1/completions", body)
        (out if status == 200 else bad).append(ms if status == 200 else status)
        time.sleep(0.005)


def run_binary(keel: str, model: str, args) -> list[dict]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    binary, *flags = shlex.split(keel)
    proc = subprocess.Popen([binary, "serve", "--model", model, "--port", str(port), "--served-model-name", "smollm2",
                             "--http-threads", "1", "--kv-tokens", "4096", *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "KEEL_THREADS": str(args.model_threads)})
    try:
        wait_ready(base, proc, keel)
        # The schema requests' chat prompt, once without a schema: their prefill is then a cache hit, so
        # what the probes wait for below is the compiles, not a prefill sharing their batch.
        post(base, "/v1/chat/completions",
             {"model": "smollm2", "messages": [{"role": "user", "content": "x"}], "max_tokens": 1})
        rows = []
        # Quiet: probes alone.
        stop, probes, bad = threading.Event(), [], []
        t = threading.Thread(target=probe_until, args=(base, stop, probes, bad))
        t.start()
        time.sleep(args.quiet_s)
        stop.set()
        t.join()
        rows.append({"keel": keel, "phase": "quiet", "probe": summary(probes), "probe_errors": len(bad)})
        # Compiling: probes while new grammars compile.
        rng = random.Random(args.seed)
        schemas = [[heavy_schema(rng, args.props) for _ in range(args.schemas)] for _ in range(args.compilers)]
        compile_ms, compile_bad = [], []

        def compiler(mine):
            for s in mine:
                status, ms = post(base, "/v1/chat/completions",
                                  {"model": "smollm2", "messages": [{"role": "user", "content": "x"}], "max_tokens": 1,
                                   "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": s}}})
                (compile_ms if status == 200 else compile_bad).append(ms if status == 200 else status)

        stop, probes, bad = threading.Event(), [], []
        t = threading.Thread(target=probe_until, args=(base, stop, probes, bad))
        t.start()
        time.sleep(0.2)
        workers = [threading.Thread(target=compiler, args=(s,)) for s in schemas]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        window_s = time.perf_counter() - t0
        stop.set()
        t.join()
        rows.append({"keel": keel, "phase": "compiling", "probe": summary(probes), "probe_errors": len(bad),
                     "compile": summary(compile_ms), "compile_errors": compile_bad, "window_s": round(window_s, 2),
                     "compilers": args.compilers, "schemas_each": args.schemas, "props": args.props})
        return rows
    finally:
        stop_process(proc)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keel", action="append", required=True, help="keel binary (repeat to compare)")
    p.add_argument("--model", default=os.path.expanduser("~/.cache/keel/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    p.add_argument("--compilers", type=int, default=2, help="clients sending new schemas at once")
    p.add_argument("--schemas", type=int, default=4, help="schemas per client")
    p.add_argument("--props", type=int, default=600, help="properties per schema (compile time grows with it)")
    p.add_argument("--quiet-s", type=float, default=3.0)
    p.add_argument("--model-threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    for keel in args.keel:
        for row in run_binary(keel, args.model, args):
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
