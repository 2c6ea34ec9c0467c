#!/usr/bin/env python3
"""Writes safetensors files with the real `safetensors` package (and a sharded checkpoint with
transformers' save_pretrained), plus safetensors_expected.json: what safetensors' own reader
(safe_open) sees in them — names, dtypes, shapes, byte ranges, value sums and first values.
keel's reader must agree (tests/unit/format/safetensors_test.cc). Run from anywhere:
  python3 tests/golden/format/gen_safetensors.py
"""
import importlib.metadata
import json
import os
import shutil
import struct

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import save_file as save_numpy
from safetensors.torch import save_file as save_torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "safetensors")


def header_of(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def describe(path):
    hdr = header_of(path)
    out = []
    with safe_open(path, framework="pt") as f:
        meta = f.metadata() or {}
        for name in f.keys():
            t = f.get_tensor(name)
            v = t.to(torch.float64).reshape(-1)
            finite = v[torch.isfinite(v)]
            out.append({
                "name": name,
                "dtype": hdr[name]["dtype"],
                "shape": list(t.shape),
                "data_offsets": hdr[name]["data_offsets"],
                "sum": float(finite.sum()) if finite.numel() else 0.0,
                "first": [float(x) for x in v[:4]],
            })
    return {"file": os.path.relpath(path, OUT), "metadata": meta, "tensors": out}


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    rng = np.random.default_rng(5)
    single = os.path.join(OUT, "numpy_mixed.safetensors")
    save_numpy({
        "weight": rng.standard_normal((2, 3)).astype(np.float32),
        "half": rng.standard_normal(4).astype(np.float16),
        "ids": np.array([[1], [-2], [3]], dtype=np.int32),
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "four_d": np.arange(4, dtype=np.float32).reshape(1, 2, 1, 2),
    }, single, metadata={"format": "np", "note": "keel golden"})
    torch.manual_seed(0)
    low = os.path.join(OUT, "torch_bf16_fp8.safetensors")
    save_torch({
        "bf16": torch.randn(3, 2).to(torch.bfloat16),
        "fp8": torch.tensor([0.5, -1.0, 448.0, 0.001953125]).to(torch.float8_e4m3fn),
    }, low, metadata={"format": "pt"})

    # A real sharded checkpoint: a tiny random Llama saved by transformers in several shards.
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    sharded = os.path.join(OUT, "tiny_llama")
    model.save_pretrained(sharded, max_shard_size="4KB", safe_serialization=True)
    for extra in os.listdir(sharded):
        if not extra.endswith((".safetensors", ".index.json")):
            os.remove(os.path.join(sharded, extra))
    index = json.load(open(os.path.join(sharded, "model.safetensors.index.json")))
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) >= 2, shards

    expected = {
        "generator": f"safetensors {importlib.metadata.version('safetensors')}, "
                     f"transformers {importlib.metadata.version('transformers')}",
        "files": [describe(single), describe(low)] + [describe(os.path.join(sharded, s)) for s in shards],
        "sharded": {"dir": "tiny_llama", "weight_map": index["weight_map"]},
    }
    with open(os.path.join(HERE, "safetensors_expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(d, x)) for d, _, xs in os.walk(OUT) for x in xs)
    print(f"wrote {OUT}: {total} bytes, {len(shards)} shards")


if __name__ == "__main__":
    main()
