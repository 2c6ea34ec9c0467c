#!/usr/bin/env python3
"""Constrained vs free decoding on `keel serve --device cuda`: what a JSON Schema costs per token.

Issue 5's end-to-end goal: constrained decoding costs <= 5% tokens/s against unconstrained on the same
prompts. One server, one run: for each concurrency c, `keel bench serve` closed loop (c requests always in
flight, so the batch stays at c whichever kind finishes sooner) sends the same prompts free and then with
a MaskBench schema as `response_format` (one schema per pass, the passes alternate free/constrained so
drift in the machine hits both). Reported per pass: time per output token (TPOT, the server's decode
speed seen by each request: (end - first token) / (tokens - 1)), p50 and mean, and output tok/s.
Free requests use ignore_eos so every one decodes max_tokens; a constrained one ends when its grammar
does (a grammar-complete sample stops even with ignore_eos), which is why TPOT, not total tokens/s, is
the comparable figure; a warm-up request per schema compiles it before timing.

Models: an HF config directory with --load-format dummy (the Llama-3-8B shape with the Llama 3
128,256-token tokenizer: random weights, so the constrained text is random but valid JSON), or a GGUF.
usage: grammar_e2e.py --keel BIN --model DIR_OR_GGUF [--tokenizer tokenizer.json] --schemas A.json B.json
       [--concurrency 1 16 64] [--max-tokens 128] [--out DIR]
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import time
import urllib.request

PORT = 18461
URL = f"http://127.0.0.1:{PORT}"


def start_server(args, out):
    model = pathlib.Path(args.model)
    cmd = [args.keel, "serve", "--device", args.device, "--port", str(PORT), "--served-model-name", "m",
           "--max-running", str(max(args.concurrency)), "--mem-fraction", "0.85"]
    if model.is_dir():
        work = out / "model"
        work.mkdir(parents=True, exist_ok=True)
        shutil.copy(model / "config.json", work / "config.json")
        shutil.copy(args.tokenizer, work / "tokenizer.json")
        cmd += ["-m", str(work), "--load-format", "dummy"]
    else:
        cmd += ["-m", str(model)]
    cmd += args.serve_args
    log = open(out / "serve.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        if proc.poll() is not None:
            sys.exit(f"keel serve exited {proc.returncode}; see {out / 'serve.log'}")
        try:
            urllib.request.urlopen(f"{URL}/health", timeout=1)
            return proc
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.5)
    proc.kill()
    sys.exit("keel serve did not become healthy in 300 s")


def bench(args, out, name, c, extra):
    path = out / f"{name}.json"
    cmd = [args.keel, "bench", "serve", "--url", URL, "--model", "m", "--endpoint", "completions", "-q",
           "-c", str(c), "-n", str(max(2 * c, args.min_requests)), "--seed", "7",
           "--input-words-min", "32", "--input-words-max", "32",
           "--output-tokens-min", str(args.max_tokens), "--output-tokens-max", str(args.max_tokens),
           "--extra-body", json.dumps(extra), "-o", str(path)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if res.returncode != 0:
        sys.exit(f"keel bench serve failed ({name}): {res.stderr[-500:]}")
    rep = json.loads(path.read_text())
    s = rep["summary"]
    if s["errors"]:
        sys.exit(f"{name}: {s['errors']} failed requests: {rep['errors']}")
    return {"tpot_p50": rep["tpot_ms"]["p50"], "tpot_mean": rep["tpot_ms"]["mean"],
            "tok_s": s["output_token_throughput_tps"], "tokens": s["output_tokens"], "requests": s["ok"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keel", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokenizer", help="tokenizer.json for a dummy-weight config directory")
    ap.add_argument("--schemas", nargs="+", required=True, help="MaskBench files ({'schema': ...})")
    ap.add_argument("--concurrency", nargs="+", type=int, default=[1, 16, 64])
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--device", default="cuda", help="cuda; cpu only to try the script")
    ap.add_argument("--min-requests", type=int, default=4)
    ap.add_argument("--out", default="/tmp/grammar_e2e")
    ap.add_argument("serve_args", nargs="*", help="more keel serve flags (after --)")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    schemas = {pathlib.Path(p).stem: json.loads(pathlib.Path(p).read_text())["schema"] for p in args.schemas}
    proc = start_server(args, out)
    rows = []
    try:
        for name, schema in schemas.items():  # warm-up: compile each schema once
            rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
            bench(args, out, f"warm_{name}", 1, {"response_format": rf, "max_tokens": 8})
        print("| concurrency | schema | free TPOT p50 ms | constrained TPOT p50 ms | cost (TPOT p50) | "
              "free TPOT mean | constrained TPOT mean | free tok/s | constrained tok/s |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for c in args.concurrency:
            for name, schema in schemas.items():
                rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
                free = bench(args, out, f"free_c{c}_{name}", c, {"ignore_eos": True})
                cons = bench(args, out, f"json_c{c}_{name}", c, {"ignore_eos": True, "response_format": rf})
                cost = cons["tpot_p50"] / free["tpot_p50"] - 1
                rows.append({"concurrency": c, "schema": name, "free": free, "constrained": cons, "cost": cost})
                print(f"| {c} | {name} | {free['tpot_p50']:.3f} | {cons['tpot_p50']:.3f} | {100 * cost:+.1f}% | "
                      f"{free['tpot_mean']:.3f} | {cons['tpot_mean']:.3f} | {free['tok_s']:.0f} | "
                      f"{cons['tok_s']:.0f} |", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    (out / "grammar_e2e.json").write_text(json.dumps(rows, indent=1))
    worst = max(r["cost"] for r in rows)
    print(f"worst TPOT p50 cost {100 * worst:+.1f}% (goal <= +5%)")


if __name__ == "__main__":
    main()
