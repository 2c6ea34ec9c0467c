#!/usr/bin/env python3
"""Whole-model parity on the GPU machine: tiny random-weight Llama, Qwen2 and Qwen3 models built with
transformers (no network), saved as f32 safetensors, run through keel on cpu and cuda
(keel_gpu_model_check); logits compared with transformers in float64, and greedy tokens compared.
The Llama one gets SmolLM2's tokenizer so `keel generate --device cpu|cuda` can run on it too.

Usage: hf_parity.py BIN_DIR WORK_DIR REPO_ROOT   (prints one JSON line per model; exit 1 on failure)
"""
import copy
import gzip
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
import transformers

BIN, WORK, ROOT = sys.argv[1], sys.argv[2], sys.argv[3]
N_NEW = 24


def build(arch):
    common = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=3, num_attention_heads=8,
                  num_key_value_heads=2, max_position_embeddings=4096, rms_norm_eps=1e-5)
    if arch == "llama":
        cfg = transformers.LlamaConfig(vocab_size=49152, tie_word_embeddings=False, **common)
        cls = transformers.LlamaForCausalLM
    elif arch == "qwen2":
        cfg = transformers.Qwen2Config(vocab_size=1000, tie_word_embeddings=True, **common)
        cls = transformers.Qwen2ForCausalLM
    else:
        cfg = transformers.Qwen3Config(vocab_size=1000, tie_word_embeddings=True, head_dim=64, **common)
        cls = transformers.Qwen3ForCausalLM
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    model = cls(cfg).float()
    with torch.no_grad():  # well-scaled random weights: peaked logits, O(1) activations
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)
            elif p.ndim == 1:
                p.normal_(0.0, 0.1)
            elif "embed" in name:
                p.normal_(0.0, 1.0)
            else:
                p.normal_(0.0, 1.0 / p.shape[1] ** 0.5)
    path = os.path.join(WORK, f"tiny_{arch}")
    model.save_pretrained(path, safe_serialization=True)
    return model, path


def hf_logits(model, ids, dtype, device):
    m = copy.deepcopy(model).to(device=device, dtype=dtype)
    with torch.no_grad():
        return m(torch.tensor([ids], device=device)).logits[0].double().cpu().numpy()


def hf_greedy(model, ids):
    m = copy.deepcopy(model).to(device="cpu", dtype=torch.float64)
    out = list(ids)
    with torch.no_grad():
        for _ in range(N_NEW):
            out.append(int(m(torch.tensor([out])).logits[0, -1].argmax()))
    return out[len(ids):]


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main():
    os.makedirs(WORK, exist_ok=True)
    ok = True
    for arch in ["llama", "qwen2", "qwen3"]:
        model, path = build(arch)
        vocab = model.config.vocab_size
        rng = np.random.default_rng()
        ids = [int(x) for x in rng.integers(0, vocab, size=300)]
        prefix = os.path.join(WORK, arch)
        res = subprocess.run([f"{BIN}/keel_gpu_model_check", path, ",".join(map(str, ids)), str(N_NEW), prefix],
                             capture_output=True, text=True)
        if res.returncode != 0:
            print(json.dumps({"arch": arch, "error": res.stderr[-2000:]}))
            ok = False
            continue
        keel = json.loads(res.stdout.strip().splitlines()[-1])
        ref = hf_logits(model, ids, torch.float64, "cpu")
        hf_bf16 = hf_logits(model, ids, torch.bfloat16, "cuda")
        cpu = np.fromfile(prefix + ".cpu.f32", dtype=np.float32).reshape(ref.shape)
        cuda = np.fromfile(prefix + ".cuda.f32", dtype=np.float32).reshape(ref.shape)
        hf_tokens = hf_greedy(model, ids)
        row = {"arch": arch, "keel_cpu_vs_hf_f64": rel(cpu, ref), "keel_cuda_vs_hf_f64": rel(cuda, ref),
               "hf_bf16_cuda_vs_hf_f64": rel(hf_bf16, ref), "keel_cuda_vs_keel_cpu": keel["rel_err_cuda_vs_cpu"],
               "greedy_match_cuda_cpu": keel["greedy_match"], "n_new": N_NEW,
               "greedy_match_cpu_hf": next((i for i, (a, b) in enumerate(zip(keel["cpu"], hf_tokens)) if a != b), N_NEW),
               "top1_agree_cuda_vs_hf": float((cuda.argmax(1) == ref.argmax(1)).mean())}
        row["pass"] = (row["keel_cpu_vs_hf_f64"] <= 1e-4 and
                       row["keel_cuda_vs_hf_f64"] <= max(3e-2, 2 * row["hf_bf16_cuda_vs_hf_f64"]))
        ok &= row["pass"]
        print(json.dumps(row), flush=True)
        if arch == "llama":
            ok &= generate_cli(path)
    return 0 if ok else 1


def generate_cli(path):
    """`keel generate` greedy on cpu and cuda through the CLI, with SmolLM2's tokenizer."""
    with gzip.open(os.path.join(ROOT, "tests/golden/tokenizer/hf_json/smollm/tokenizer.json.gz")) as f:
        open(os.path.join(path, "tokenizer.json"), "wb").write(f.read())
    outs = {}
    for dev in ["cpu", "cuda"]:
        res = subprocess.run([f"{BIN}/keel", "generate", "-m", path, "--device", dev, "-p",
                              "The quick brown fox jumps over the lazy dog because", "-n", "32",
                              "--temperature", "0", "--ignore-eos"], capture_output=True, text=True)
        outs[dev] = res.stdout if res.returncode == 0 else f"ERROR {res.returncode}: {res.stderr[-500:]}"
    a, b = outs["cpu"], outs["cuda"]
    match = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    print(json.dumps({"keel_generate_cpu_vs_cuda": "same" if a == b else "differ", "chars_matching": match,
                      "cpu": a[:200], "cuda": b[:200]}), flush=True)
    return not a.startswith("ERROR") and not b.startswith("ERROR")


if __name__ == "__main__":
    sys.exit(main())
