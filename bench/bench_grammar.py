#!/usr/bin/env python3
"""Structured output: keel vs llguidance vs xgrammar, one core, over MaskBench-dev, in one run.

For each tokenizer (SmolLM2's 49,152 tokens; Llama 3's 128,256 tokens, both as tokenizer.json in
$KEEL_CACHE_DIR/testdata/tokenizer, made from the vocab GGUFs llama.cpp ships in the llama-cpp-python
0.3.36 source package) and every n-th MaskBench-dev schema:
  - compile time: schema -> a matcher ready for the first mask (keel: compile + empty mask cache;
    llguidance: grammar_from_json_schema + LLMatcher; xgrammar: compile_json_schema + GrammarMatcher, with
    its per-tokenizer TokenizerInfo built once beforehand, as keel's vocabulary trie is);
  - mask time: each full-vocabulary mask while the first valid instance keel accepts (compact JSON, keys
    in schema order) is fed token by token with each side's tokenization of the same text. Cold: the
    first request of a schema, lazily built per-position tables included. keel runs twice: through one
    GrammarStore as keel serve does (a schema's cold masks may reuse classifications earlier schemas
    made) and "isolated" (a fresh mask cache per schema, nothing shared).
Needs `python3 -m pip install -r bench/requirements.txt` (llguidance and its transformers bridge).
xgrammar (0.2.9) needs torch; when this interpreter cannot import it, --xgrammar-python names one that
can (e.g. a venv made with --system-site-packages), which runs that part in a child process.

  python3 bench/bench_grammar.py [--every 8] [--cpu 0] [--xgrammar-python PY] [--vocab both|smollm2|llama3]
  (needs build/bench/bench_grammar_keel: -DKEEL_BENCH=ON)
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
CACHE = pathlib.Path(os.environ.get("KEEL_CACHE_DIR", pathlib.Path.home() / ".cache" / "keel"))
DATA = pathlib.Path(os.environ.get("KEEL_SHARED_DATA", ROOT.parent / "shared" / "data")) / "maskbench-dev"
VOCABS = {"SmolLM2 (49,152)": CACHE / "testdata/tokenizer/smollm", "Llama 3 (128,256)": CACHE / "testdata/tokenizer/llama-bpe"}


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def run_keel(binary, tok_dir, every, cpu, isolated=False):
    out = subprocess.run(["taskset", "-c", str(cpu), str(binary), str(tok_dir), str(DATA), str(every)]
                         + (["isolated"] if isolated else []), capture_output=True, text=True, check=True).stdout
    return {r["file"]: r for r in map(json.loads, out.splitlines())}


def run_llguidance(tok_dir, rows):
    import llguidance
    import llguidance.hf
    import transformers
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tok_dir / "tokenizer.json"))
    lt = llguidance.hf.from_tokenizer(hf)
    n_words = (lt.vocab_size + 31) // 32
    buf = np.zeros(n_words, dtype=np.int32)
    out = {}
    for name, row in rows.items():
        schema = json.loads((DATA / name).read_text())["schema"]
        c0, t0 = time.thread_time_ns(), time.perf_counter()
        try:
            grm = llguidance.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": False})
            m = llguidance.LLMatcher(lt, grm)
            ok = not m.is_error()
        except Exception:  # noqa: BLE001 - an unsupported schema is a compile failure, as for keel
            ok = False
        res = {"compile_us": (time.perf_counter() - t0) * 1e6, "compile_cpu_us": (time.thread_time_ns() - c0) / 1e3,
               "compiled": ok}
        if ok and "instance" in row:
            times, cpu = [], []
            for tid in hf.encode(row["instance"], add_special_tokens=False) + [None]:
                c0, t0 = time.thread_time_ns(), time.perf_counter()
                m.unsafe_compute_mask_ptr(buf.ctypes.data, buf.nbytes)
                times.append((time.perf_counter() - t0) * 1e6)
                cpu.append((time.thread_time_ns() - c0) / 1e3)
                if tid is not None and not m.consume_token(tid):
                    times = None
                    break
            if times:
                res["mask_us"], res["mask_cpu_us"] = times, cpu
        out[name] = res
    return out


def run_xgrammar(tok_dir, rows):
    import xgrammar as xgr
    import transformers
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tok_dir / "tokenizer.json"))
    info = xgr.TokenizerInfo.from_huggingface(hf, vocab_size=len(hf))
    compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    bm = xgr.allocate_token_bitmask(1, info.vocab_size)
    out = {}
    for name, row in rows.items():
        schema = json.loads((DATA / name).read_text())["schema"]
        t0 = time.perf_counter()
        try:
            cg = compiler.compile_json_schema(json.dumps(schema), any_whitespace=False, separators=(",", ":"),
                                              strict_mode=False)
            m = xgr.GrammarMatcher(cg)
            ok = True
        except Exception:  # noqa: BLE001 - an unsupported schema is a compile failure, as for keel
            ok = False
        res = {"compile_us": (time.perf_counter() - t0) * 1e6, "compiled": ok}
        if ok and "instance" in row:
            times = []
            for tid in hf.encode(row["instance"], add_special_tokens=False):
                t0 = time.perf_counter()
                m.fill_next_token_bitmask(bm)
                times.append((time.perf_counter() - t0) * 1e6)
                if not m.accept_token(tid):
                    times = None
                    break
            if times:
                t0 = time.perf_counter()
                m.fill_next_token_bitmask(bm)
                times.append((time.perf_counter() - t0) * 1e6)
                res["mask_us"] = times
        out[name] = res
    return out


def xgrammar_rows(args, tok_dir, rows):
    try:
        import xgrammar  # noqa: F401
        return run_xgrammar(tok_dir, rows)
    except ImportError:
        if not args.xgrammar_python:
            return None
    # The child inherits this process's one-core affinity.
    out = subprocess.run([args.xgrammar_python, __file__, "--xgrammar-worker", str(tok_dir)], input=json.dumps(rows),
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def summarize(label, rows, key="mask_us", compile_key="compile_us"):
    comp = [r[compile_key] / 1e3 for r in rows.values() if r["compiled"] and compile_key in r]
    masks = [x for r in rows.values() for x in r.get(key, [])]
    return (f"| {label} | {sum(r['compiled'] for r in rows.values())}/{len(rows)} | {pct(comp, .5):.2f} | "
            f"{pct(comp, .99):.1f} | {len(masks)} | {pct(masks, .5):.1f} | {pct(masks, .99):.0f} | "
            f"{pct(masks, .999):.0f} |")


def e2e(args):
    """Constrained vs unconstrained decode speed on a real `keel serve` (SmolLM2): the same chat prompts,
    greedy, each answered without a constraint and then with its MaskBench schema (warm: the schema's
    tables built by an earlier request). Speed = tokens after the first / time from the first to the last
    streamed text, summed over the prompts (prefill and first-token time excluded)."""
    import openai
    import socket
    import urllib.request
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = CACHE / "models/SmolLM2-135M-Instruct.Q4_1.gguf"
    proc = subprocess.Popen(["taskset", "-c", str(args.cpu), str(ROOT / "build/src/cli/keel"), "serve", "--model",
                             str(model), "--port", str(port), "--threads", "1", "--served-model-name", "m"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.2)
        c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", timeout=600)
        names = ["BFCL_simple_0.json", "Glaiveai2K---calculate_area_763b5315.json",
                 "Glaiveai2K---create_invoice_a5449ea0.json", "Kubernetes---kb_56_Normalized.json"]
        totals = {"free": [0, 0.0], "constrained": [0, 0.0]}
        for name in names:
            schema = json.loads((DATA / name).read_text())["schema"]
            msgs = [{"role": "user", "content": "Give an example JSON instance of this JSON Schema:\n" + json.dumps(schema)}]
            rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
            c.chat.completions.create(model="m", messages=msgs, max_tokens=200, temperature=0, response_format=rf)
            for kind, extra in [("free", {}), ("constrained", {"response_format": rf})]:
                first = last = None
                n = 0
                for chunk in c.chat.completions.create(model="m", messages=msgs, max_tokens=200, temperature=0,
                                                       stream=True, stream_options={"include_usage": True}, **extra):
                    if chunk.usage is not None:
                        n = chunk.usage.completion_tokens
                    elif chunk.choices and chunk.choices[0].delta.content:
                        last = time.perf_counter()
                        first = first or last
                totals[kind][0] += n - 1  # decode speed: tokens after the first one, over the time after it
                totals[kind][1] += last - first
        for kind, (n, t) in totals.items():
            print(f"{kind}: {n} tokens in {t:.2f} s = {n / t:.1f} tokens/s")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def check_fresh(binary):
    """Refuse a missing binary or one older than the grammar sources: a build without -DKEEL_BENCH=ON
    leaves an old bench_grammar_keel in place, and its figures would be taken for the current code's."""
    if not binary.is_file():
        sys.exit(f"{binary} not found: configure with -DKEEL_BENCH=ON and build the bench_grammar_keel target")
    newest = max((p for p in (ROOT / "src/grammar").iterdir()), key=lambda p: p.stat().st_mtime)
    if binary.stat().st_mtime < newest.stat().st_mtime:
        sys.exit(f"{binary} is older than {newest.relative_to(ROOT)}: rebuild it "
                 "(cmake -DKEEL_BENCH=ON, then ninja bench_grammar_keel)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=8, help="every n-th schema (sorted by file name)")
    ap.add_argument("--cpu", type=int, default=0, help="the one core both run on")
    ap.add_argument("--keel", default=str(ROOT / "build/bench/bench_grammar_keel"))
    ap.add_argument("--e2e", action="store_true", help="only the end-to-end tokens/s comparison on keel serve")
    ap.add_argument("--xgrammar-python", default=os.environ.get("XGRAMMAR_PYTHON"),
                    help="interpreter that can import xgrammar, when this one cannot")
    ap.add_argument("--xgrammar-worker", help=argparse.SUPPRESS)
    ap.add_argument("--vocab", choices=["both", "smollm2", "llama3"], default="both",
                    help="which vocabularies to run (xgrammar's compile takes ~0.5 s a schema at 128k, so a "
                         "whole-corpus run with it is long; one vocabulary halves it)")
    args = ap.parse_args()
    if args.xgrammar_worker:
        print(json.dumps(run_xgrammar(pathlib.Path(args.xgrammar_worker), json.load(sys.stdin))))
        return None
    if args.e2e:
        return e2e(args)
    check_fresh(pathlib.Path(args.keel))
    os.sched_setaffinity(0, {args.cpu})
    print(f"MaskBench-dev every {args.every}th schema, one core (cpu {args.cpu}); compile in ms, mask in µs; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| vocabulary / engine | compiled | compile p50 | compile p99 | masks | mask p50 | mask p99 | mask p99.9 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    vocabs = {label: d for label, d in VOCABS.items()
              if args.vocab == "both" or (args.vocab == "llama3") == label.startswith("Llama")}
    for label, tok_dir in vocabs.items():
        keel = run_keel(args.keel, tok_dir, args.every, args.cpu)
        iso = run_keel(args.keel, tok_dir, args.every, args.cpu, isolated=True)
        llg = run_llguidance(tok_dir, keel)
        xg = xgrammar_rows(args, tok_dir, keel)
        engines = {"keel": keel, "keel isolated": iso, "llguidance": llg}
        if xg is not None:
            engines["xgrammar"] = xg
        for name, rows in engines.items():
            print(summarize(f"{label} {name}", rows))
        every = [n for n in keel if all("mask_us" in rows.get(n, {}) for rows in engines.values())]
        for name, rows in engines.items():
            print(summarize(f"{label} {name}, instances all ran", {n: rows[n] for n in every}))
        print(summarize(f"{label} keel warm (same schema again), instances all ran", {n: keel[n] for n in every},
                        "mask_warm_us"))
        # The same measurements as thread CPU time (xgrammar's worker reports wall time only).
        for name, rows in engines.items():
            if name != "xgrammar":
                print(summarize(f"{label} {name}, instances all ran, CPU time", {n: rows[n] for n in every},
                                "mask_cpu_us", "compile_cpu_us"))
        print(summarize(f"{label} keel warm (same schema again), instances all ran, CPU time",
                        {n: keel[n] for n in every}, "mask_warm_cpu_us", "compile_cpu_us"))
        print(f"load average {os.getloadavg()[0]:.1f}")
        sys.stdout.flush()
    return None


if __name__ == "__main__":
    main()
