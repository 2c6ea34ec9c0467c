#!/usr/bin/env python3
"""Writes dequant_golden.{json,bin}: real quantized rows with what independent tools make of them.

- dequantize: raw block bytes of a few rows of real SmolLM2-135M tensors (the shipped Q4_1 file,
  and llama.cpp re-quantizations of it to Q4_K_M, Q4_0 and Q8_0) with gguf-py's
  gguf.quants.dequantize output; F16/BF16 rows are real F32 tensors rounded by numpy/torch.
- quantize_q8_0 / quantize_q8_k: real f32 rows (plus edge blocks) with the bytes llama.cpp's
  quantize_row_q8_0_ref / quantize_row_q8_K_ref (libggml-base from llama-cpp-python) produce.
- f32_to_fp16 / f32_to_bf16: real and edge floats with numpy's float16 and torch's bfloat16 bits;
  every fp8 e4m3 byte with torch's float8_e4m3fn value.

The JSON lists cases as {name, op, dtype, n, src: [offset, bytes], want: [offset, bytes]} into the
.bin file. CI reads only these two files (tests/unit/tensor/dequantize_golden_test.cc).
Needs: gguf, numpy, torch, llama-cpp-python; scripts/fetch_model.sh. Run from anywhere:
  python3 tests/golden/dequant/gen_dequant.py
"""
import ctypes
import importlib.metadata
import json
import os

import gguf
import llama_cpp
import numpy as np
import torch
from gguf import GGMLQuantizationType as Q
from gguf.quants import dequantize, quantize

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("KEEL_CACHE_DIR", os.path.expanduser("~/.cache/keel"))
SRC = os.path.join(CACHE, "models/SmolLM2-135M-Instruct.Q4_1.gguf")
TMP = os.environ.get("TMPDIR", "/tmp")
LIB = ctypes.CDLL(os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-base.so"))
for fn in ("quantize_row_q8_0_ref", "quantize_row_q8_K_ref"):
    getattr(LIB, fn).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    getattr(LIB, fn).restype = None

blob = bytearray()
cases = []


def put(data: bytes):
    off = len(blob)
    blob.extend(data)
    return [off, len(data)]


def add(name, op, dtype, n, src: bytes, want: bytes):
    cases.append({"name": name, "op": op, "dtype": dtype, "n": int(n), "src": put(src), "want": put(want)})


def requantize(name, ftype):
    path = os.path.join(TMP, f"smollm2-{name}.gguf")
    if not os.path.exists(path):
        p = llama_cpp.llama_model_quantize_default_params()
        p.ftype = ftype
        p.allow_requantize = True
        rc = llama_cpp.llama_model_quantize(SRC.encode(), path.encode(), ctypes.byref(p))
        assert rc == 0, f"llama_model_quantize({name}) failed: {rc}"
    return gguf.GGUFReader(path)


def rows_of(reader, tensor_name, rows):
    t = next(t for t in reader.tensors if t.name == tensor_name)
    raw = np.asarray(t.data)
    n = int(t.shape[0])
    if t.tensor_type == Q.F32:
        raw = raw.reshape(-1, n).view(np.uint8)
    raw = raw.reshape(-1, raw.shape[-1])
    for r in rows:
        r = r if r >= 0 else raw.shape[0] + r
        yield r, n, t.tensor_type, np.ascontiguousarray(raw[r])


def add_dequant_rows(label, reader, tensor_name, rows):
    for r, n, qtype, raw in rows_of(reader, tensor_name, rows):
        want = dequantize(raw, qtype).astype(np.float32).reshape(-1)
        assert want.size == n
        add(f"{label} {tensor_name} row {r}", "dequantize", qtype.name.lower(), n, raw.tobytes(), want.tobytes())


def ggml_quantize(fn, x: np.ndarray, block_bytes, block):
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = ctypes.create_string_buffer(x.size // block * block_bytes)
    getattr(LIB, fn)(x.ctypes.data, ctypes.addressof(out), x.size)
    return out.raw


def f32_rows(reader, tensor_name, rows):
    for r, n, qtype, raw in rows_of(reader, tensor_name, rows):
        yield f"{tensor_name} row {r}", dequantize(raw, qtype).astype(np.float32).reshape(-1)


def edge_rows(block):
    rng = np.random.default_rng(7)
    ties = np.arange(block, dtype=np.float32) - block / 2 + 0.5  # k + 0.5 after scaling by 1
    ties[0] = -127.0 if block == 256 else 127.0                    # pins the scale to exactly 1
    yield "zeros", np.zeros(block, np.float32)
    yield "ties", np.clip(ties, -127, 127).astype(np.float32)
    yield "positive max", np.abs(rng.standard_normal(block)).astype(np.float32) * 3
    yield "tiny", (rng.standard_normal(block) * 1e-30).astype(np.float32)
    yield "wide", (rng.standard_normal(block) * np.exp(rng.uniform(-20, 20, block))).astype(np.float32)


def main():
    q4_1 = gguf.GGUFReader(SRC)
    add_dequant_rows("Q4_1 file", q4_1, "blk.0.attn_q.weight", [0, 1, 300, -1])
    add_dequant_rows("Q4_1 file", q4_1, "blk.29.ffn_down.weight", [5])
    add_dequant_rows("Q4_1 file", q4_1, "token_embd.weight", [0, 1000, -1])
    add_dequant_rows("Q4_1 file", q4_1, "blk.0.attn_norm.weight", [0])
    add_dequant_rows("Q4_1 file", q4_1, "output_norm.weight", [0])

    q4_k_m = requantize("q4_k_m", llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M)
    for t in [t for t in q4_k_m.tensors if t.tensor_type in (Q.Q4_K, Q.Q6_K)][:4]:
        add_dequant_rows("Q4_K_M requant", q4_k_m, t.name, [0, 123, -1])
    q4_0 = requantize("q4_0", llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0)
    add_dequant_rows("Q4_0 requant", q4_0, "blk.3.attn_v.weight", [0, 77, -1])
    q8_0 = requantize("q8_0", llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0)
    add_dequant_rows("Q8_0 requant", q8_0, "blk.7.ffn_up.weight", [0, 999, -1])

    # F16 / BF16: real f32 weights rounded by numpy (f16) and torch (bf16).
    for label, x in f32_rows(q4_1, "blk.0.attn_q.weight", [2]):
        h = x.astype(np.float16)
        add(f"{label} as f16", "dequantize", "f16", x.size, h.tobytes(), h.astype(np.float32).tobytes())
        b = torch.from_numpy(x).to(torch.bfloat16)
        add(f"{label} as bf16", "dequantize", "bf16", x.size, b.view(torch.int16).numpy().tobytes(),
            b.to(torch.float32).numpy().tobytes())

    # fp8 e4m3 ("fn": no infinities): every byte, decoded by torch.
    every = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    add("every f8_e4m3 byte", "dequantize", "f8_e4m3", 256, every.numpy().tobytes(),
        every.view(torch.float8_e4m3fn).to(torch.float32).numpy().tobytes())

    # Conversions f32 -> f16 / bf16 on real values and edges (NaN payloads are tested in C++).
    specials = np.array([0.0, -0.0, 1.0, 65504.0, 65519.99, 65520.0, 1e6, -np.inf, np.inf, 2.0**-24, 2.0**-25,
                         1.5 * 2.0**-25, 2.0**-14, 3 * 2.0**-26, 1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11, 3.0e38,
                         1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 1e-40], dtype=np.float32)
    rng = np.random.default_rng(3)
    mixed = np.concatenate([specials, (rng.standard_normal(2000) * np.exp(rng.uniform(-25, 25, 2000)))]).astype(np.float32)
    for label, x in list(f32_rows(q4_1, "token_embd.weight", [42])) + [("edges and random", mixed)]:
        add(f"{label} to f16", "f32_to_fp16", "f16", x.size, x.tobytes(), x.astype(np.float16).tobytes())
        bf = torch.from_numpy(x.copy()).to(torch.bfloat16).view(torch.int16).numpy()
        add(f"{label} to bf16", "f32_to_bf16", "bf16", x.size, x.tobytes(), bf.tobytes())

    # Activation quantizers against ggml's reference C functions (and gguf-py for Q8_0).
    q8_0_inputs = list(f32_rows(q4_1, "token_embd.weight", [7, 5000])) + list(edge_rows(32))
    for label, x in q8_0_inputs:
        want = ggml_quantize("quantize_row_q8_0_ref", x, 34, 32)
        assert want == quantize(x.reshape(1, -1), Q.Q8_0).tobytes(), f"ggml and gguf-py disagree on {label}"
        add(f"{label} to q8_0", "quantize_q8_0", "q8_0", x.size, x.tobytes(), want)
    q8_k_inputs = list(f32_rows(q4_1, "blk.4.ffn_down.weight", [0, 300])) + list(edge_rows(256))
    for label, x in q8_k_inputs:
        add(f"{label} to q8_K", "quantize_q8_k", "q8_k", x.size, x.tobytes(),
            ggml_quantize("quantize_row_q8_K_ref", x, 292, 256))

    with open(os.path.join(HERE, "dequant_golden.bin"), "wb") as f:
        f.write(blob)
    meta = {"generator": f"gguf-py {importlib.metadata.version('gguf')}, llama-cpp-python "
                         f"{importlib.metadata.version('llama_cpp_python')}, numpy {np.__version__}, "
                         f"torch {torch.__version__}",
            "bin": "dequant_golden.bin", "bytes": len(blob), "cases": cases}
    with open(os.path.join(HERE, "dequant_golden.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases, {len(blob)} bytes")


if __name__ == "__main__":
    main()
