#!/usr/bin/env python3
"""Greedy decoding of SmolLM2-135M-Instruct Q4_1 with llama.cpp (llama-cpp-python, CPU, f16 KV cache,
no flash attention) for keel's tests/unit/model/llamacpp_parity_test.cc.

Threads: N_THREADS = 1. ggml gives each output row to one thread, so the logits do not depend on the
thread count; on the shared 2-core build machine 2 spinning ggml threads ran ~25x slower than one.

For each prompt (token ids from llama.cpp's own tokenizer, BOS included) it runs the prompt in one
batch, then 64 greedy steps one token at a time, and keeps the logits that chose each token.

Outputs (next to this script):
  smollm2_q4_1.json  {"model", "llama_cpp_python", "n_steps", "top_k", "n_random", "full_steps",
                      "n_full_prompts", "vocab_size",
                      "prompts": [{"text", "ids", "greedy"}]}   greedy = the 64 tokens llama.cpp chose
  smollm2_q4_1.bin   little-endian, prompt after prompt, step after step:
                      top_k int32 ids (logit order, highest first), top_k f32 logits,
                      n_random int32 ids, n_random f32 logits
                    then, for each of the first n_full_prompts prompts and each step in full_steps:
                      vocab_size f16 logits
Run: python3 tests/golden/llamacpp/gen_llamacpp_logits.py [path/to/model.gguf]
"""
import json
import os
import sys

import numpy as np
import llama_cpp

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.expanduser("~/.cache/keel/models/SmolLM2-135M-Instruct.Q4_1.gguf")
N_STEPS = 64
TOP_K = 32
N_RANDOM = 8
FULL_STEPS = [0, 40]
N_THREADS = 1
N_FULL_PROMPTS = 8


def chat(user):
    return f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):",
    "The three primary colors are",
    "Water boils at a temperature of",
    "In 1969, astronauts",
    "import numpy as np\n\nx = np.",
    "The quick brown fox",
    "Here is a list of fruits:\n1. Apple\n2.",
    "Photosynthesis is the process by which",
    "To make a cup of tea, first",
    "The largest planet in our solar system is",
    "SELECT name, age FROM users WHERE",
    "Machine learning is a field of study that",
    "1, 1, 2, 3, 5, 8,",
    "Dear Sir or Madam,\n\nI am writing to",
    chat("What is the capital of Germany?"),
    chat("Write a haiku about autumn."),
    chat("Explain gravity to a five year old."),
    chat("List three uses of a paperclip."),
    chat("Translate 'good morning' into Spanish."),
    "The history of the Roman Empire spans more than a thousand years, beginning with the founding of",
]


def main():
    model_path = sys.argv[1] if len(sys.argv) > 1 else MODEL
    llm = llama_cpp.Llama(model_path=model_path, n_ctx=512, n_batch=512, n_threads=N_THREADS, n_threads_batch=N_THREADS,
                          logits_all=True, flash_attn=False, verbose=False, seed=0)
    vocab = llm.n_vocab()
    rng = np.random.default_rng(20240601)
    records, per_step, full = [], [], []
    for p_idx, text in enumerate(PROMPTS):
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        llm.reset()
        llm.eval(ids)
        greedy = []
        for step in range(N_STEPS):
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            tok = int(np.argmax(logits))
            greedy.append(tok)
            top = np.argsort(-logits, kind="stable")[:TOP_K].astype(np.int32)
            rand = rng.choice(vocab, size=N_RANDOM, replace=False).astype(np.int32)
            per_step.append(top.tobytes() + logits[top].astype("<f4").tobytes() +
                            rand.tobytes() + logits[rand].astype("<f4").tobytes())
            if p_idx < N_FULL_PROMPTS and step in FULL_STEPS:
                full.append(logits.astype("<f2").tobytes())
            llm.eval([tok])
        records.append({"text": text, "ids": [int(i) for i in ids], "greedy": greedy})
        print(f"prompt {p_idx}: {len(ids)} ids -> {llm.detokenize(greedy)[:60]!r}")
    with open(os.path.join(HERE, "smollm2_q4_1.bin"), "wb") as f:
        f.write(b"".join(per_step) + b"".join(full))
    meta = {"model": os.path.basename(model_path), "llama_cpp_python": llama_cpp.__version__,
            "n_threads": N_THREADS, "kv_cache": "f16", "flash_attn": False, "n_steps": N_STEPS, "top_k": TOP_K,
            "n_random": N_RANDOM, "full_steps": FULL_STEPS, "n_full_prompts": N_FULL_PROMPTS,
            "vocab_size": vocab, "prompts": records}
    with open(os.path.join(HERE, "smollm2_q4_1.json"), "w") as f:
        json.dump(meta, f)
    print(f"bin {os.path.getsize(os.path.join(HERE, 'smollm2_q4_1.bin')) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
