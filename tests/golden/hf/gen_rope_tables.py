#!/usr/bin/env python3
"""RoPE inverse frequencies and attention factors from transformers' own init functions
(ROPE_INIT_FUNCTIONS), for keel's tests/unit/model/rope_test.cc. Writes rope_tables.json:
[{"name", "config": <config.json fragment>, "inv_freq": [...], "attention_factor": x}, ...].
Run: python3 tests/golden/hf/gen_rope_tables.py (needs torch + transformers)."""
import json
import os

import transformers
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = [
    ("default_theta1e4_d64", dict(head_dim=64, rope_theta=10000.0), None),
    ("default_theta5e5_d128", dict(head_dim=128, rope_theta=500000.0), None),
    ("linear_f4_d64", dict(head_dim=64, rope_theta=10000.0), dict(rope_type="linear", factor=4.0)),
    ("llama3_1_d128", dict(head_dim=128, rope_theta=500000.0, max_position_embeddings=131072),
     dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
          original_max_position_embeddings=8192)),
    ("llama3_2_d64", dict(head_dim=64, rope_theta=500000.0, max_position_embeddings=131072),
     dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
          original_max_position_embeddings=8192)),
    ("yarn_qwen_d128", dict(head_dim=128, rope_theta=1000000.0, max_position_embeddings=131072),
     dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=32768)),
    ("yarn_betas_d64", dict(head_dim=64, rope_theta=10000.0, max_position_embeddings=16384),
     dict(rope_type="yarn", factor=8.0, original_max_position_embeddings=2048, beta_fast=16.0, beta_slow=2.0)),
    ("yarn_mscale_d64", dict(head_dim=64, rope_theta=10000.0, max_position_embeddings=16384),
     dict(rope_type="yarn", factor=8.0, original_max_position_embeddings=2048, mscale=1.0,
          mscale_all_dim=0.5)),
    ("yarn_attn_factor_d64", dict(head_dim=64, rope_theta=10000.0, max_position_embeddings=16384),
     dict(rope_type="yarn", factor=8.0, original_max_position_embeddings=2048, attention_factor=1.25)),
]


def main():
    out = []
    for name, base, scaling in CASES:
        fragment = dict(hidden_size=base["head_dim"] * 4, num_attention_heads=4, num_key_value_heads=4,
                        intermediate_size=64, num_hidden_layers=1, vocab_size=32,
                        max_position_embeddings=base.get("max_position_embeddings", 4096),
                        head_dim=base["head_dim"], rope_theta=base["rope_theta"])
        if scaling:
            fragment["rope_scaling"] = scaling
        cfg = LlamaConfig(**fragment)
        rope_type = cfg.rope_parameters["rope_type"]
        inv_freq, attention_factor = ROPE_INIT_FUNCTIONS[rope_type](cfg, "cpu") if rope_type != "default" else \
            transformers.models.llama.modeling_llama.LlamaRotaryEmbedding.compute_default_rope_parameters(cfg, device="cpu")
        out.append(dict(name=name, config=dict(fragment, architectures=["LlamaForCausalLM"]),
                        inv_freq=[float(x) for x in inv_freq], attention_factor=float(attention_factor)))
    with open(os.path.join(HERE, "rope_tables.json"), "w") as f:
        json.dump({"transformers": transformers.__version__, "cases": out}, f, indent=1)
    print(f"{len(out)} cases")


if __name__ == "__main__":
    main()
