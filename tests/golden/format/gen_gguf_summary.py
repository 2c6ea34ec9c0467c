#!/usr/bin/env python3
"""Writes gguf_summary.json: what the `gguf` Python package (GGUFReader) reads from real GGUF files.

For every metadata key (file order): its value type id, array element type and count, and a value
summary (scalars in full; long strings and arrays as length, first/last items, FNV-1a 64 of their
bytes, numeric sums). For every tensor: name, ggml type id, shape outermost first (GGUF's ne[]
reversed), offset relative to the data section, byte size. keel's GGUF reader must agree exactly
(tests/unit/format/gguf_golden_test.cc).

Inputs (paths relative to $KEEL_CACHE_DIR, default ~/.cache/keel): scripts/fetch_model.sh and
scripts/fetch_test_data.sh. Run: python3 tests/golden/format/gen_gguf_summary.py
"""
import glob
import importlib.metadata
import json
import os
import sys

import gguf
from gguf import GGUFValueType as VT

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("KEEL_CACHE_DIR", os.path.expanduser("~/.cache/keel"))
FILES = ["models/SmolLM2-135M-Instruct.Q4_1.gguf"] + sorted(
    os.path.relpath(p, CACHE) for p in glob.glob(os.path.join(CACHE, "testdata/llamacpp/vocab/*.gguf")))
MAX_INLINE_STRING = 160


def fnv1a64(data: bytes, h: int = 0xCBF29CE484222325) -> int:
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def text(b: bytes):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": b.hex()}


def scalar(field, idx, vtype):
    part = field.parts[idx]
    if vtype == VT.STRING:
        return bytes(part)
    v = part.tolist()[0]
    if vtype == VT.BOOL:
        return bool(v)
    if vtype in (VT.FLOAT32, VT.FLOAT64):
        return float(v)
    return int(v)


def summarize_string(b: bytes):
    if len(b) <= MAX_INLINE_STRING:
        return {"value": text(b)}
    return {"len": len(b), "head": text(b[:32]), "fnv": f"{fnv1a64(b):016x}"}


def summarize_field(name, field):
    types = field.types
    out = {"key": name, "type": int(types[0])}
    if types[0] != VT.ARRAY:
        v = scalar(field, field.data[0], types[0])
        out.update(summarize_string(v) if types[0] == VT.STRING else {"value": v})
        return out
    out["elem_type"] = int(types[1])
    out["count"] = len(field.data)
    if types[1] == VT.ARRAY:
        return out  # nested arrays: GGUFReader exposes them flattened; the count is what it reads
    items = [scalar(field, i, types[1]) for i in field.data]
    if types[1] == VT.STRING:
        h = 0xCBF29CE484222325
        for s in items:
            h = fnv1a64(len(s).to_bytes(8, "little") + s, h)
        out["fnv"] = f"{h:016x}"
        out["total_bytes"] = sum(len(s) for s in items)
        out["first"] = [text(s) for s in items[:3]]
        out["last"] = text(items[-1]) if items else None
    else:
        out["sum"] = float(sum(items)) if types[1] in (VT.FLOAT32, VT.FLOAT64) else int(sum(items))
        out["first"] = items[:3]
        out["last"] = items[-1] if items else None
    return out


def summarize(rel):
    r = gguf.GGUFReader(os.path.join(CACHE, rel))
    fields = [summarize_field(k, f) for k, f in r.fields.items() if not k.startswith("GGUF.")]
    tensors = [{
        "name": t.name,
        "ggml_type": int(t.tensor_type),
        "shape": [int(d) for d in reversed(t.shape.tolist())],
        "offset": int(t.data_offset - r.data_offset),
        "n_bytes": int(t.n_bytes),
    } for t in r.tensors]
    return {
        "file": rel,
        "version": int(r.fields["GGUF.version"].parts[-1][0]),
        "alignment": int(r.alignment),
        "metadata": fields,
        "tensors": tensors,
    }


def main():
    out = {"generator": f"gguf-py {importlib.metadata.version('gguf')} GGUFReader",
           "files": [summarize(rel) for rel in FILES]}
    path = os.path.join(HERE, "gguf_summary.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {path}: {len(FILES)} files", file=sys.stderr)


if __name__ == "__main__":
    main()
