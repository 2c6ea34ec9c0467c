#!/usr/bin/env python3
"""Dumps SmolLM2-135M-Instruct's vocabulary (token bytes, control tokens, EOS) with the `gguf` package,
as the grammar tests' vocabulary input: one token per line, "<id> <type> <hex bytes>", after a header
line "eos <id>". Byte-level BPE tokens are mapped back from GPT-2's byte-to-unicode alphabet.

usage: gen_smollm2_vocab.py [model.gguf] > smollm2_vocab.txt
"""
import os
import sys

import gguf


def byte_decoder():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/keel/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    r = gguf.GGUFReader(path)
    f = r.fields
    tokens = [bytes(f["tokenizer.ggml.tokens"].parts[i]).decode("utf-8") for i in f["tokenizer.ggml.tokens"].data]
    types = [int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data]
    eos = int(f["tokenizer.ggml.eos_token_id"].parts[-1][0])
    dec = byte_decoder()
    print(f"eos {eos}")
    for i, (t, ty) in enumerate(zip(tokens, types)):
        if ty == 1:
            b = bytes(dec[c] for c in t)
        else:
            b = t.encode("utf-8")
        print(f"{i} {ty} {b.hex()}")


if __name__ == "__main__":
    main()
