#!/usr/bin/env python3
"""keel generate vs llama.cpp (llama-cpp-python) on the same GGUF, same threads, in one run.

Measures, for each engine in its own fresh process: load time, prompt processing tokens/s for a
prompt of exactly --prompt-tokens tokens, decode tokens/s for --gen-tokens greedy tokens (EOS
ignored), and peak resident memory. Repeats --reps times and reports medians and keel/llama.cpp
ratios; writes raw numbers as JSON.

Usage: bench/bench_generate.py [--model PATH] [--threads 2] [--reps 3] [--out bench/results/generate.json]
"""
import argparse
import json
import os
import pathlib
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

LLAMA_CHILD = r"""
import json, sys, time, resource
t0 = time.perf_counter()
from llama_cpp import Llama
args = json.loads(sys.argv[1])
llm = Llama(model_path=args["model"], n_ctx=args["n_ctx"], n_threads=args["threads"],
            n_threads_batch=args["threads"], n_batch=512, n_ubatch=512, verbose=False, use_mmap=True)
load_s = time.perf_counter() - t0
tokens = args["tokens"]
t1 = time.perf_counter()
llm.eval(tokens)
prompt_s = time.perf_counter() - t1
import numpy as np
n_vocab = llm.n_vocab()
t2 = time.perf_counter()
out = []
for _ in range(args["gen"]):
    tok = int(np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(n_vocab,)).argmax())
    out.append(tok)
    llm.eval([tok])
decode_s = time.perf_counter() - t2
rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"load_ms": load_s * 1e3, "prompt_ms": prompt_s * 1e3, "decode_ms": decode_s * 1e3,
                  "prompt_tokens": len(tokens), "decode_tokens": len(out), "peak_rss_mb": rss_kb / 1024,
                  "tokens": out}))
"""


def make_prompt_tokens(model: str, n: int) -> tuple[str, list[int]]:
    from llama_cpp import Llama
    llm = Llama(model_path=model, vocab_only=True, verbose=False)
    base = ("The history of computing is a story of layered abstractions, from vacuum tubes to transistors, "
            "from machine code to compilers, and from single machines to fleets of servers. ")
    text = base * (n // 10 + 2)
    ids = llm.tokenize(text.encode(), add_bos=True, special=False)[:n]
    bos = llm.token_bos() if llm.tokenize(b"", add_bos=True) else None
    # Detokenize without BOS (if the vocabulary adds one): keel re-adds it, as llama.cpp does.
    body = ids[1:] if bos is not None and ids and ids[0] == bos else ids
    return llm.detokenize(body).decode(), ids


def run_llama(model, tokens, threads, gen):
    args = json.dumps({"model": model, "tokens": tokens, "threads": threads, "gen": gen,
                       "n_ctx": len(tokens) + gen + 8})
    r = subprocess.run([sys.executable, "-c", LLAMA_CHILD, args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"llama.cpp child failed: {r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_keel(keel, model, text, threads, gen):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = ["/usr/bin/time", "-f", "%M", keel, "generate", "--model", model, "--prompt", text, "-n", str(gen),
               "--ignore-eos", "--temperature", "0", "-t", str(threads), "--prefill-chunk", "512",
               "--stats-json", f.name]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"keel failed: {r.stderr[-2000:]}")
        stats = json.load(open(f.name))
        stats["peak_rss_mb"] = int(r.stderr.strip().splitlines()[-1]) / 1024
        return stats


def rates(s):
    return {"load_ms": s["load_ms"], "prompt_tok_s": s["prompt_tokens"] / (s["prompt_ms"] / 1e3),
            "decode_tok_s": s["decode_tokens"] / (s["decode_ms"] / 1e3), "peak_rss_mb": s["peak_rss_mb"],
            "prompt_tokens": s["prompt_tokens"], "decode_tokens": s["decode_tokens"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(pathlib.Path.home() / ".cache/keel/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--keel", default=str(ROOT / "build/src/cli/keel"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench/results/generate.json"))
    a = ap.parse_args()

    text, tokens = make_prompt_tokens(a.model, a.prompt_tokens)
    runs = {"keel": [], "llama.cpp": []}
    for _ in range(a.reps):  # interleaved, so drift on a shared machine hits both sides alike
        runs["llama.cpp"].append(rates(run_llama(a.model, tokens, a.threads, a.gen_tokens)))
        runs["keel"].append(rates(run_keel(a.keel, a.model, text, a.threads, a.gen_tokens)))
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in runs.items()}
    ratio = {m: med["keel"][m] / med["llama.cpp"][m] for m in ("prompt_tok_s", "decode_tok_s", "load_ms", "peak_rss_mb")}
    result = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
              "cpu": open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t"),
              "model": os.path.basename(a.model), "threads": a.threads, "reps": a.reps,
              "median": med, "keel_over_llamacpp": ratio, "runs": runs}
    pathlib.Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(a.out).write_text(json.dumps(result, indent=2))
    print(f"{'':12}{'keel':>12}{'llama.cpp':>12}{'ratio':>8}")
    for m in ("prompt_tok_s", "decode_tok_s", "load_ms", "peak_rss_mb"):
        print(f"{m:12}{med['keel'][m]:12.1f}{med['llama.cpp'][m]:12.1f}{ratio[m]:8.2f}")
    print(f"prompt tokens: keel {med['keel']['prompt_tokens']:.0f}, llama.cpp {med['llama.cpp']['prompt_tokens']:.0f}")


if __name__ == "__main__":
    main()
