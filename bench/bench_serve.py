#!/usr/bin/env python3
"""keel serve vs llama.cpp's OpenAI server (`python -m llama_cpp.server`) on the same GGUF and threads.

Each server runs alone in its own fresh process; `keel bench serve` (the same client for both) drives it
over plain OpenAI HTTP with streaming chat completions:
  - random workload at concurrency 1, 8 and 32 (prompts of --input-words words, exactly --output-tokens
    tokens out: the end-of-sequence tokens get logit_bias -100 on both servers, so every request
    generates the same number of tokens);
  - shared-prefix workload (T tenants x P system prompts of --prefix-words words + short unique
    questions) at concurrency 8.
Each scenario has its own seed, so no scenario finds its prompts cached by an earlier one. One run
each. Prints a markdown table (output tokens/s, TTFT p50/p99) and writes every report as JSON.

Needs llama-cpp-python with its server extras (uvicorn, fastapi, sse-starlette, starlette-context,
pydantic-settings: `pip install 'llama-cpp-python[server]'`).

Usage: bench/bench_serve.py [--threads 1] [--out bench/results/serve.json] [--only keel|llama.cpp]
"""
import argparse
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
# SmolLM2: <|endoftext|> = 0, <|im_end|> = 2 (both end a reply).
NO_EOS = json.dumps({"logit_bias": {"0": -100, "2": -100}})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{what} not ready in 300 s")


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM (a keel serve drains), then SIGKILL after 60 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def start_keel(a, port: int, log) -> subprocess.Popen:
    return subprocess.Popen([a.keel, "serve", "--model", a.model, "--port", str(port), "--threads", str(a.threads),
                             "--kv-tokens", str(a.ctx), "--served-model-name", "smollm2"],
                            stdout=log, stderr=subprocess.STDOUT)


def start_llama(a, port: int, log) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", a.model, "--host", "127.0.0.1",
                             "--port", str(port), "--n_threads", str(a.threads), "--n_threads_batch", str(a.threads),
                             "--n_ctx", str(a.ctx), "--model_alias", "smollm2",
                             # Its default (True) ends the running stream whenever another request arrives.
                             "--interrupt_requests", "False"],
                            stdout=log, stderr=subprocess.STDOUT)


def scenarios(a):
    random = ["--workload", "random", "--input-words-min", str(a.input_words // 2), "--input-words-max",
              str(a.input_words), "--output-tokens-min", str(a.output_tokens), "--output-tokens-max",
              str(a.output_tokens), "--extra-body", NO_EOS]
    out = []
    for c in (1, 8, 32):
        out.append((f"random c={c}", random + ["--concurrency", str(c), "--num-requests", str(max(8, 2 * c))]))
    out.append(("shared-prefix c=8", ["--workload", "shared-prefix", "--tenants", "4", "--prompts-per-tenant", "2",
                                      "--prefix-words", str(a.prefix_words), "--question-words", "12",
                                      "--output-tokens-min", "16", "--output-tokens-max", "16", "--extra-body", NO_EOS,
                                      "--concurrency", "8", "--num-requests", "48"]))
    return out


def bench_server(a, name: str, start) -> dict:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile("w+") as log:
        proc = start(a, port, log)
        try:
            wait_ready(url, proc, name)
            results = {}
            for i, (label, flags) in enumerate(scenarios(a)):
                with tempfile.NamedTemporaryFile(suffix=".json") as f:
                    cmd = [a.keel, "bench", "serve", "--quiet", "--url", url, "--model", "smollm2", "--endpoint",
                           "chat", "--seed", str(i + 1), "--output", f.name, *flags]
                    print(f"[{name}] {label}: {' '.join(cmd[1:])}", flush=True)
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    print(r.stdout, flush=True)
                    if r.returncode != 0:
                        raise RuntimeError(f"bench failed on {name} {label}: {r.stderr}")
                    results[label] = json.load(open(f.name))
            return results
        finally:
            stop_process(proc)


def table(runs: dict) -> str:
    rows = ["| workload | server | output tok/s | req/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | errors |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    labels = next(iter(runs.values())).keys()
    for label in labels:
        for name, res in runs.items():
            r = res[label]
            s = r["summary"]
            rows.append(f"| {label} | {name} | {s['output_token_throughput_tps']:.1f} | "
                        f"{s['request_throughput_rps']:.2f} | {r['ttft_ms']['p50']:.0f} | {r['ttft_ms']['p99']:.0f} | "
                        f"{r['itl_ms']['p50']:.1f} | {s['errors']} |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(pathlib.Path.home() / ".cache/keel/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--keel", default=str(ROOT / "build/src/cli/keel"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=8192, help="keel --kv-tokens and llama.cpp --n_ctx")
    ap.add_argument("--input-words", type=int, default=64)
    ap.add_argument("--output-tokens", type=int, default=64)
    ap.add_argument("--prefix-words", type=int, default=300)
    ap.add_argument("--only", choices=["keel", "llama.cpp"])
    ap.add_argument("--out", default=str(ROOT / "bench/results/serve.json"))
    a = ap.parse_args()

    servers = {"keel": start_keel, "llama.cpp": start_llama}
    out = pathlib.Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # --only updates that server's runs in an existing result file and keeps the other's.
    result = json.loads(out.read_text()) if a.only and out.exists() else {"runs": {}}
    runs = result["runs"]
    result.update({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "cpu": open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t"),
                   "cores": os.cpu_count(), "threads": a.threads, "model": os.path.basename(a.model)})
    for name, start in servers.items():
        if a.only in (None, name):
            load_before = os.getloadavg()
            runs[name] = bench_server(a, name, start)
            result.setdefault("loadavg", {})[name] = {"before": load_before, "after": os.getloadavg()}
            out.write_text(json.dumps(result, indent=2))  # after each server, so a failure keeps what ran
    print(table(runs))
    print(f"load averages (1, 5, 15 min): {result['loadavg']}")


if __name__ == "__main__":
    main()
