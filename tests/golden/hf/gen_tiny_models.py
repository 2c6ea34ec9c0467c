#!/usr/bin/env python3
"""Builds tiny random-weight Llama / Qwen2 / Qwen3 models with HF transformers and stores, per model,
config.json + model.safetensors (f32) and the logits transformers computes for a few prompts.

keel's C++ test (tests/unit/model/hf_parity_test.cc) loads each folder, runs the same token ids and
compares its logits with these. Run from anywhere: python3 tests/golden/hf/gen_tiny_models.py
(needs torch + transformers; CI only reads the committed output).

Per model folder:
  config.json, model.safetensors   the model, as save_pretrained writes it
  golden.json                      {"transformers": version, "prompts": [[token ids], ...]}
  logits.f32                       raw little-endian f32: for each prompt i in order,
                                   [len(prompt i), vocab] logits at every position
"""
import json
import os

import torch
import transformers
from transformers import (LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM, Qwen3Config,
                          Qwen3ForCausalLM)

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 128

COMMON = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
              rms_norm_eps=1e-5, rope_theta=10000.0, bos_token_id=1, eos_token_id=2)

MODELS = {
    # Plain Llama: separate lm_head, GQA 4:2, head_dim 16.
    # Saved as 3 shards (model.safetensors.index.json) to cover sharded loading.
    "llama": (LlamaConfig, LlamaForCausalLM, dict(tie_word_embeddings=False)),
    # Llama 3.1-style frequency scaling; tied embeddings.
    "llama3_rope": (LlamaConfig, LlamaForCausalLM, dict(
        tie_word_embeddings=True,
        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                          original_max_position_embeddings=32))),
    # Qwen2: q/k/v biases, tied embeddings, YaRN scaling (attention factor 0.1 ln 4 + 1).
    "qwen2_yarn": (Qwen2Config, Qwen2ForCausalLM, dict(
        tie_word_embeddings=True, max_position_embeddings=128,
        rope_scaling=dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=32))),
    # Qwen3: q/k RMSNorm, head_dim 24 != hidden/heads, theta 1e6.
    "qwen3": (Qwen3Config, Qwen3ForCausalLM, dict(tie_word_embeddings=False, head_dim=24,
                                                  rope_theta=1000000.0)),
}

# Token-id prompts: short, medium, one crossing the llama3/yarn original context (32), repeats.
PROMPTS = [
    [1, 17, 42, 99, 5, 63],
    [1, 120, 3, 3, 3, 77, 81, 12, 44, 90, 15, 27, 101, 8],
    [1] + [(i * 37 + 11) % VOCAB for i in range(44)],
]


def randomize(model, seed):
    """HF's init (std 0.02) gives near-zero logits; use O(1) activations so every op matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or "layernorm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                fan_in = p.shape[1]
                p.copy_(torch.randn(p.shape, generator=g) * (1.5 / fan_in ** 0.5))


def build(name, cfg_cls, model_cls, extra, seed):
    kwargs = dict(COMMON)
    kwargs.update(extra)
    cfg = cfg_cls(**kwargs)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = model_cls(cfg).to(torch.float32).eval()
    randomize(model, seed)
    out = os.path.join(HERE, name)
    os.makedirs(out, exist_ok=True)
    for old in os.listdir(out):
        os.remove(os.path.join(out, old))
    shard = "120KB" if name == "llama" else "50MB"
    model.save_pretrained(out, safe_serialization=True, max_shard_size=shard)
    for extra_file in ("generation_config.json",):
        path = os.path.join(out, extra_file)
        if os.path.exists(path):
            os.remove(path)
    logits = []
    with torch.no_grad():
        for ids in PROMPTS:
            res = model(torch.tensor([ids]), use_cache=False)
            logits.append(res.logits[0].to(torch.float32).contiguous())
    with open(os.path.join(out, "logits.f32"), "wb") as f:
        for x in logits:
            f.write(x.numpy().astype("<f4").tobytes())
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "vocab_size": VOCAB,
                   "prompts": PROMPTS}, f, indent=1)
    size = sum(os.path.getsize(os.path.join(out, x)) for x in os.listdir(out))
    print(f"{name}: {size / 1024:.0f} KiB, logits max |x| "
          f"{max(float(v.abs().max()) for v in logits):.2f}")


def main():
    torch.set_num_threads(2)
    for seed, (name, (cfg_cls, model_cls, extra)) in enumerate(MODELS.items()):
        build(name, cfg_cls, model_cls, extra, 1234 + seed)


if __name__ == "__main__":
    main()
