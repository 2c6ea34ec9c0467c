#!/usr/bin/env python3
"""SmolLM2-135M-Instruct (the real GGUF) through `keel generate`, greedy, on cpu and on cuda.

The issue's check: the same prompts through keel cuda and keel cpu give the same greedy tokens. Both
run `--dtype f32` by default: cpu dequantizes the Q4_1/Q8_0 matrices to f32 at load and dots them with
f32 activations, cuda does the same with fp32 GEMMs/GEMVs; only the order of f32 additions differs.
(cpu's default dtype, auto, rounds activations to 8 bits before integer dots: that rounding turns the
smallest difference into a whole quantization step, so no other backend can follow it token for
token; `bf16` on cuda rounds weights and activations to bf16.) The check passes only when every
prompt's tokens are the same; at the first differing token each report gives the top-1 minus top-2
logit margin of both backends there (from --stats-json), i.e. how near that step was to a tie. With
f32, the raw prompts also go through `keel serve --device cuda --dtype f32` (decode-step graphs,
device sampling): its greedy completions must be cpu's text.
Usage: smollm2_cpu_vs_cuda.py KEEL_BINARY MODEL_GGUF [CUDA_DTYPE [CPU_DTYPE]]
"""
import json
import os
import subprocess
import sys
import tempfile

from serve_util import cuda_server, post_completion

PROMPTS = [
    ("chat", "What is the capital of France?"),
    ("chat", "Write a haiku about the sea."),
    ("chat", "List three primary colors."),
    ("chat", "Explain what a prime number is in one sentence."),
    ("raw", "The quick brown fox jumps over the lazy dog because"),
    ("raw", "def fibonacci(n):"),
]


def generate(keel, model, device, dtype, kind, text):
    flag = "-c" if kind == "chat" else "-p"
    with tempfile.TemporaryDirectory() as tmp:
        stats = os.path.join(tmp, "stats.json")
        res = subprocess.run([keel, "generate", "-m", model, "--device", device, "--dtype", dtype, flag, text, "-n",
                              "48", "--temperature", "0", "--stats-json", stats],
                             capture_output=True, text=True, timeout=300)
        if res.returncode != 0:
            return None, f"exit {res.returncode}: {res.stderr[-300:]}"
        with open(stats) as f:
            s = json.load(f)
    return {"text": res.stdout, "tokens": s["tokens"], "margins": s["top2_margins"],
            "decode_tok_s": s["decode_tokens"] / (s["decode_ms"] / 1e3)}, None


def serve_completions(keel, model, prompts, port=18443):
    """Greedy completions of raw prompts from `keel serve --device cuda --dtype f32`."""
    with cuda_server(keel, model, port, ["--dtype", "f32"]):
        return [post_completion(port, {"model": os.path.basename(model), "prompt": text, "max_tokens": 48,
                                       "temperature": 0})["choices"][0]["text"] for text in prompts]


def main():
    keel, model = sys.argv[1], sys.argv[2]
    cuda_dtype = sys.argv[3] if len(sys.argv) > 3 else "f32"
    cpu_dtype = sys.argv[4] if len(sys.argv) > 4 else "f32"
    ok = True
    cpu_raw = {}
    for kind, text in PROMPTS:
        out = {}
        for dev, dtype in (("cpu", cpu_dtype), ("cuda", cuda_dtype)):
            out[dev], err = generate(keel, model, dev, dtype, kind, text)
            if err:
                print(json.dumps({"prompt": text, "device": dev, "error": err}), flush=True)
                ok = False
        if out["cpu"] is None or out["cuda"] is None:
            continue
        a, b = out["cpu"], out["cuda"]
        if kind == "raw":
            cpu_raw[text] = a["text"][:-1]  # generate ends its output with a newline
        same = a["tokens"] == b["tokens"]
        first = next((i for i, (x, y) in enumerate(zip(a["tokens"], b["tokens"])) if x != y),
                     min(len(a["tokens"]), len(b["tokens"])))
        ok &= same
        rep = {"prompt": text, "cpu_dtype": cpu_dtype, "cuda_dtype": cuda_dtype, "same": same, "tokens_agreeing": first,
               "tokens": len(a["tokens"]), "cuda_decode_tok_s": round(b["decode_tok_s"], 1)}
        if not same and first < min(len(a["margins"]), len(b["margins"])):
            rep["flip_top2_margin"] = {"cpu": a["margins"][first], "cuda": b["margins"][first]}
        rep.update({"cpu": a["text"][:160], "cuda": b["text"][:160]})
        print(json.dumps(rep), flush=True)
    if cuda_dtype == "f32" and cpu_dtype == "f32" and cpu_raw:
        try:
            served = serve_completions(keel, model, list(cpu_raw))
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            served = [f"error: {e}"] * len(cpu_raw)
        for (text, want), got in zip(cpu_raw.items(), served):
            ok &= got == want
            print(json.dumps({"prompt": text, "serve_f32_same_as_cpu": got == want, "serve": got[:160]}), flush=True)
    print("pass" if ok else "FAIL", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
