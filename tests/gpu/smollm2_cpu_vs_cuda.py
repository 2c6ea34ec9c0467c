#!/usr/bin/env python3
"""SmolLM2-135M-Instruct (the real GGUF) through `keel generate`, greedy, on cpu and on cuda.

The issue's check: the same prompts through keel cuda and keel cpu give the same greedy tokens. The
two backends differ in numerics (cpu: Q4_1 weights with f32 activations; cuda: the weights dequantized
to bf16 at load, bf16 activations), so a near-tie between the two best tokens can flip; each prompt's
report says how many characters agree before the first difference, and the check passes only when
every prompt's whole output is the same.
Usage: smollm2_cpu_vs_cuda.py KEEL_BINARY MODEL_GGUF
"""
import json
import subprocess
import sys

PROMPTS = [
    ("chat", "What is the capital of France?"),
    ("chat", "Write a haiku about the sea."),
    ("chat", "List three primary colors."),
    ("chat", "Explain what a prime number is in one sentence."),
    ("raw", "The quick brown fox jumps over the lazy dog because"),
    ("raw", "def fibonacci(n):"),
]


def generate(keel, model, device, kind, text):
    flag = "-c" if kind == "chat" else "-p"
    res = subprocess.run([keel, "generate", "-m", model, "--device", device, flag, text, "-n", "48",
                          "--temperature", "0"], capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        return None, f"exit {res.returncode}: {res.stderr[-300:]}"
    return res.stdout, None


def main():
    keel, model = sys.argv[1], sys.argv[2]
    ok = True
    for kind, text in PROMPTS:
        out = {}
        for dev in ("cpu", "cuda"):
            out[dev], err = generate(keel, model, dev, kind, text)
            if err:
                print(json.dumps({"prompt": text, "device": dev, "error": err}), flush=True)
                ok = False
        if out["cpu"] is None or out["cuda"] is None:
            continue
        a, b = out["cpu"], out["cuda"]
        same = a == b
        agree = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        ok &= same
        print(json.dumps({"prompt": text, "same": same, "chars_agreeing": agree, "chars": len(a),
                          "cpu": a[:160], "cuda": b[:160]}), flush=True)
    print("pass" if ok else "FAIL", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
