#!/usr/bin/env python3
"""Canonical SmolLM2 tokenizations (HF transformers' GGUF tokenizer) of valid MaskBench instances, for
the grammar matcher's token-by-token test. Each instance is written compactly with its object keys in
the order the schema first lists them (keel emits properties in schema order), as the C++ test does.
Output: JSON lines {"file", "text", "ids"}.

usage: gen_smollm2_tokenizations.py [maskbench_dir] [model.gguf] > smollm2_tokenizations.jsonl
"""
import json
import os
import sys

from transformers import AutoTokenizer


def property_order(schema, order):
    if isinstance(schema, dict):
        if isinstance(schema.get("properties"), dict):
            for k in schema["properties"]:
                order.setdefault(k, len(order))
        if isinstance(schema.get("required"), list):
            for r in schema["required"]:
                if isinstance(r, str):
                    order.setdefault(r, len(order))
        for v in schema.values():
            property_order(v, order)
    elif isinstance(schema, list):
        for v in schema:
            property_order(v, order)


def reorder(v, order):
    if isinstance(v, list):
        return [reorder(x, order) for x in v]
    if isinstance(v, dict):
        keys = sorted(v.keys(), key=lambda k: order.get(k, len(order) + 1e9))
        return {k: reorder(v[k], order) for k in keys}
    return v


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "../../../../shared/data/maskbench-dev")
    model = sys.argv[2] if len(sys.argv) > 2 else os.path.expanduser("~/.cache/keel/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    tok = AutoTokenizer.from_pretrained(os.path.dirname(model), gguf_file=os.path.basename(model))
    files = sorted(f for f in os.listdir(data) if f.endswith(".json"))
    n = 0
    for f in files[::6]:
        doc = json.load(open(os.path.join(data, f)))
        order = {}
        property_order(doc["schema"], order)
        for t in doc["tests"]:
            if not t["valid"]:
                continue
            text = json.dumps(reorder(t["data"], order), separators=(",", ":"), ensure_ascii=False)
            if len(text) > 600:
                continue
            ids = tok.encode(text, add_special_tokens=False)
            print(json.dumps({"file": f, "text": text, "ids": ids}, ensure_ascii=False))
            n += 1
            break
        if n >= 200:
            break


if __name__ == "__main__":
    main()
