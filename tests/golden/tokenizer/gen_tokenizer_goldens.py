#!/usr/bin/env python3
"""Golden token ids for keel's tokenizers, from HF `tokenizers` (the reference).

For each vocabulary this builds the HF tokenizer from the GGUF the way transformers does
(`AutoTokenizer.from_pretrained(dir, gguf_file=...)`), fixes the parts where that conversion differs
from the model's real tokenizer.json (listed in FIXES below), and writes:
  strings.json            the test strings (seeded generator), shared by all vocabularies
  <vocab>.json            per string a 64-bit FNV-1a hash of the ids (add_special_tokens=False),
                          the full ids of the first HEAD strings, hashes with special-token parsing
                          off, HF's decode where it differs from the input, decodes of id prefixes
                          that split characters, and ids for invalid-UTF-8 inputs (HF sees those
                          through bytes.decode("utf-8", "replace"))
and, with --json-dir, the tokenizer.json/tokenizer_config.json used as reference (for keel's
from_hf_json tests) plus derived GGUFs (deepseek-v3: DeepSeek LLM's vocab with pre "deepseek-v3").

It also checks the reference against llama.cpp's own .inp/.out pairs and prints the agreement.
Usage: gen_tokenizer_goldens.py [--json-dir DIR] [--only VOCAB ...]
"""
import argparse
import json
import os
import random
import struct
import sys
import unicodedata

from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("KEEL_CACHE_DIR", os.path.expanduser("~/.cache/keel"))
VOCAB_DIR = os.path.join(CACHE, "testdata", "llamacpp", "vocab")
SMOLLM = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
N_STRINGS = 10000
HEAD = 300
SEED = 20240611

DEEPSEEK_LETTERS = (
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\u1f7dᾀ-ᾴᾶ-ᾼ\u1fbeῂ-ῄῆ-ῌ\u1fd0-\u1fd3\u1fd6-\u1fdbῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\u2126ℨ\u212a-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+"
)


def split(regex):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
DIGITS = {"type": "Digits", "individual_digits": True}
# The pre-tokenizers of the models' own tokenizer.json files.
PRE = {
    "smollm": {"type": "Sequence", "pretokenizers": [DIGITS, dict(BYTE_LEVEL, use_regex=True)]},
    "deepseek-llm": {"type": "Sequence", "pretokenizers": [
        split("[\r\n]"), split(DEEPSEEK_LETTERS), split("\\s?[!-/:-~！-／：-～‘-‟　-。]+"), split("\\s+$"),
        split("[一-龥ࠀ-一가-퟿]+"), DIGITS, BYTE_LEVEL]},
    "deepseek-coder": {"type": "Sequence", "pretokenizers": [
        split("[\r\n]"), split("\\s?\\p{L}+"), split("\\s?\\p{P}+"), split("[一-龥ࠀ-一가-퟿]+"), DIGITS, BYTE_LEVEL]},
    "deepseek-v3": {"type": "Sequence", "pretokenizers": [
        split("\\p{N}{1,3}"), split("[一-龥\u3040-ゟ゠-ヿ]+"),
        split("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
              " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"),
        BYTE_LEVEL]},
}
# vocab name -> (gguf path, base for transformers' conversion, what transformers gets wrong)
VOCABS = {
    "gpt-2": ("ggml-vocab-gpt-2.gguf", None),
    "llama-bpe": ("ggml-vocab-llama-bpe.gguf", "sets no ignore_merges; Llama 3's tokenizer.json has ignore_merges=true"),
    "qwen2": ("ggml-vocab-qwen2.gguf", None),
    "smollm": (SMOLLM, "uses GPT-2's ByteLevel regex; SmolLM2 splits digits first (Digits individual_digits)"),
    "deepseek-llm": ("ggml-vocab-deepseek-llm.gguf", "ignores tokenizer.ggml.pre; DeepSeek LLM has its own Split sequence"),
    "deepseek-coder": ("ggml-vocab-deepseek-coder.gguf", "ignores tokenizer.ggml.pre; DeepSeek Coder has its own Split sequence"),
    "deepseek-v3": ("ggml-vocab-deepseek-llm.gguf", "no V3 vocab GGUF is shipped: DeepSeek LLM's vocab with V3's pre-tokenizer"),
    "llama-spm": ("ggml-vocab-llama-spm.gguf", None),
}


def fnv1a64(ids):
    h = 0xCBF29CE484222325
    for b in struct.pack(f"<{len(ids)}i", *ids):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


# ---------------------------------------------------------------- strings
WORDS = ("the quick brown fox jumps over lazy dog Hello World don't I'll we've they're she's it'd I'M YOU'RE "
         "tokenizer encoding decode stream token vocabulary model inference server request response "
         "naïve café résumé Zürich façade coöperate").split()
CODE = ["def f(x):\n    return x ** 2\n", "for (int i = 0; i < n; ++i) { sum += a[i]; }", "if (a && b || !c) {}",
        "#include <stdio.h>\nint main() { printf(\"%d\\n\", 42); }", "const x = () => { return [1, 2, 3].map(v => v * 2); };",
        "SELECT * FROM users WHERE id = 42;", "<div class=\"a\">text</div>", "x = {'a': 1, \"b\": [2, 3]}",
        "    if x:\n\t\tpass\n", "std::vector<int32_t> ids; ids.push_back(0x7f);", "a->b->c", "fn main() -> Result<(), Box<dyn Error>> {}",
        "$ ls -la | grep '.py' && echo \"done\"", "// comment\n/* block */", "@decorator\nclass A(B):", "`code` **bold** _it_"]
CJK = "我们今天去学校学习中文天气很好日本語のテキストですひらがなカタカナ한국어텍스트입니다漢字繁體字"
SCRIPTS = ["مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "Привет мир", "Γειά σου Κόσμε", "Բարեւ աշխարհ",
           "გამარჯობა", "ሰላም ልዑል", "Xin chào thế giới", "Ελληνικά", "ᏣᎳᎩ", "𐐀𐐁𐐨", "ａｂｃＡＢＣ１２３"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇺🇸", "🇯🇵", "👩🏾‍💻", "🤖", "✨", "🧑‍🤝‍🧑", "☕", "1️⃣", "🫠"]
COMBINING = ["e\u0301", "a\u0308", "n\u0303", "o\u0302\u0323", "Z\u0351\u0352\u0353", "\u0915\u094d\u0937", "\u0e01\u0e34\u0e4a"]
SPACES = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\t\t", "\u00a0", "\u3000", "\u2009", "\u0085", " \t\n", "\n\n\n   "]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["...", "—", "–", "«»", "“”", "‘’", "¿¡", "。", "、", "！", "？", "・", "…", "§¶", "©®™"]
SPECIAL_TEXT = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>",
                "<s>", "</s>", "<unk>", "<think>", "</think>", "<｜end▁of▁sentence｜>", "<｜begin▁of▁sentence｜>",
                "<|im_start|>user\n", "<|reserved_special_token_5|>", "[PAD102373]", "<|end_of_text|>", "<0x0A>", "<|fim_prefix|>"]


def random_char(rng):
    """A random code point assigned in Unicode 14 (Python 3.11's unicodedata, and PCRE2 10.42's tables:
    HF's Oniguruma knows later versions, so newer letters may split differently; docs/tokenizer.md)."""
    while True:
        c = chr(rng.choice([rng.randint(0x20, 0x7E), rng.randint(0xA0, 0x2FFF), rng.randint(0x3000, 0xD7FF),
                            rng.randint(0xE000, 0xFFFD), rng.randint(0x10000, 0x1FAFF)]))
        if unicodedata.category(c) != "Cn":
            return c


def number(rng):
    k = rng.choice([1, 2, 3, 4, 5, 7, 10, 16, 25])
    s = "".join(rng.choice("0123456789") for _ in range(k))
    return rng.choice([s, s + "." + str(rng.randint(0, 999)), "-" + s, s + "%", "$" + s, "1,234,567", "3.14159", "٣٤٥", "१२३", "²³½"])


def segment(rng):
    kind = rng.randrange(12)
    if kind == 0: return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8)))
    if kind == 1: return rng.choice(CODE)
    if kind == 2: return "".join(rng.choice(CJK) for _ in range(rng.randint(1, 12)))
    if kind == 3: return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 4)))
    if kind == 4: return rng.choice(WORDS) + rng.choice(COMBINING) + rng.choice(COMBINING)
    if kind == 5: return "".join(rng.choice(SPACES) for _ in range(rng.randint(1, 4)))
    if kind == 6: return number(rng)
    if kind == 7: return "".join(rng.choice(PUNCT) for _ in range(rng.randint(1, 5)))
    if kind == 8: return rng.choice(SCRIPTS)
    if kind == 9: return rng.choice(SPECIAL_TEXT)
    if kind == 10: return "".join(random_char(rng) for _ in range(rng.randint(1, 6)))
    return rng.choice(WORDS).upper() + rng.choice(["'S", "'s", "'T", "'ll", "'Ve", "'re", "'D", "'m", ""])


def make_strings():
    rng = random.Random(SEED)
    out = ["", " ", "  ", "\n", "a", "Hello world", " Hello world", "Hello World!", "\t\t\n  x", "1234567890",
           "  leading spaces", "trailing   ", "<|im_start|>", "a" * 300, " " * 50 + "x", "\n" * 20]
    while len(out) < N_STRINGS:
        parts = [segment(rng) for _ in range(rng.randint(1, 6))]
        joiner = rng.choice(["", " ", " ", "\n", "  "])
        out.append(joiner.join(parts))
    return out


def invalid_inputs(strings):
    """Byte strings that are not UTF-8: stray continuation bytes, truncated sequences, overlongs, surrogates."""
    rng = random.Random(SEED + 1)
    bad = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe4\xb8", b"abc\x80def", b"\xf0\x9f\x98", b"\xf4\x90\x80\x80", b"\xe2\x82"]
    out = []
    for i in range(200):
        base = strings[rng.randrange(len(strings))].encode()
        pos = rng.randint(0, len(base))
        junk = rng.choice(bad)
        if i % 3 == 0 and len(base) > 1:
            out.append(base[: rng.randint(1, len(base))] + junk)  # cut anywhere, maybe inside a character
        else:
            out.append(base[:pos] + junk + base[pos:])
    return out


# ---------------------------------------------------------------- reference tokenizers
def convert(gguf_path):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(os.path.dirname(gguf_path), gguf_file=os.path.basename(gguf_path))
    cfg = {"bos_token": tok.bos_token, "eos_token": tok.eos_token, "unk_token": tok.unk_token,
           "add_bos_token": bool(getattr(tok, "add_bos_token", False)), "add_eos_token": bool(getattr(tok, "add_eos_token", False))}
    return json.loads(tok.backend_tokenizer.to_str()), cfg


def reference(name):
    gguf_name, _ = VOCABS[name]
    path = gguf_name if os.path.isabs(gguf_name) else os.path.join(VOCAB_DIR, gguf_name)
    tj, cfg = convert(path)
    fix_added_tokens(tj, path)
    if name == "llama-bpe":
        tj["model"]["ignore_merges"] = True
    if name in PRE:
        tj["pre_tokenizer"] = PRE[name]
    return tj, cfg, path


def fix_added_tokens(tj, gguf_path):
    """transformers' conversion skips control tokens spelled outside the byte alphabet (DeepSeek's
    <｜begin▁of▁sentence｜>) and adds its own <|endoftext|>/bos/eos past the vocabulary; the model's
    tokenizer has neither quirk. Keep added tokens inside the vocabulary and add every control token."""
    import gguf
    fields = gguf.GGUFReader(gguf_path).fields
    tokens = fields["tokenizer.ggml.tokens"].contents()
    types = fields["tokenizer.ggml.token_type"].contents()
    added = [a for a in tj["added_tokens"] if a["id"] < len(tokens)]
    present = {a["id"] for a in added}
    for i, (t, ty) in enumerate(zip(tokens, types)):
        if ty == 3 and i not in present:
            added.append({"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True})
    tj["added_tokens"] = sorted(added, key=lambda a: a["id"])
    # HF ignores an added token's id when the model vocab lacks its content (it appends it past the
    # vocabulary): spell those entries of the model vocab as the added token's content, as the
    # models' own tokenizer.json files do.
    vocab = tj["model"]["vocab"]
    by_id = {i: t for t, i in vocab.items()}
    for a in added:
        old = by_id.get(a["id"])
        if old is not None and old != a["content"]:
            del vocab[old]
            vocab[a["content"]] = a["id"]
    post = tj.get("post_processor") or {}
    for name, entry in (post.get("special_tokens") or {}).items():
        entry["ids"] = [tokens.index(name)]


def derived_gguf(src, dst, pre):
    import gguf
    reader = gguf.GGUFReader(src)
    writer = gguf.GGUFWriter(dst, arch=reader.fields["general.architecture"].contents())
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = pre if key == "tokenizer.ggml.pre" else field.contents()
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, value, vtype, sub_type=sub)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()


def llamacpp_check(tok, gguf_path):
    inp, out = gguf_path + ".inp", gguf_path + ".out"
    if not os.path.exists(inp):
        return "no .inp/.out"
    tests = open(inp, encoding="utf-8").read().split("\n__ggml_vocab_test__\n")
    expected = open(out, encoding="utf-8").read().split("\n")
    ok = sum(tok.encode(t, add_special_tokens=False).ids == [int(x) for x in e.split()] for t, e in zip(tests, expected))
    return f"{ok}/{len(tests)} llama.cpp .inp/.out pairs agree"


def golden(name, tok, strings, invalid):
    encs = tok.encode_batch(strings, add_special_tokens=False)
    ids = [e.ids for e in encs]
    rng = random.Random(SEED + 2)
    g = {"vocab": name, "n_strings": len(strings), "hashes": [fnv1a64(x) for x in ids], "head_ids": ids[:HEAD]}
    tok.encode_special_tokens = True
    with_special = [i for i, s in enumerate(strings) if "<" in s or "[" in s]
    g["no_special"] = {str(i): fnv1a64(tok.encode(strings[i], add_special_tokens=False).ids) for i in with_special}
    tok.encode_special_tokens = False
    g["decode_differs"] = {}
    for i, x in enumerate(ids):
        d = tok.decode(x, skip_special_tokens=False)
        if d != strings[i]:
            g["decode_differs"][str(i)] = d
    prefixes = []
    for i in range(HEAD):
        if len(ids[i]) > 1:
            k = rng.randint(1, len(ids[i]) - 1)
            prefixes.append([i, k, tok.decode(ids[i][:k], skip_special_tokens=False)])
    g["decode_prefixes"] = prefixes
    g["invalid_utf8"] = [[b.hex(), tok.encode(b.decode("utf-8", "replace"), add_special_tokens=False).ids] for b in invalid]
    return g


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json-dir", help="also write reference tokenizer.json files and derived GGUFs here")
    ap.add_argument("--only", nargs="*", default=list(VOCABS))
    ap.add_argument("--no-goldens", action="store_true", help="only write --json-dir")
    args = ap.parse_args()
    strings = make_strings()
    invalid = invalid_inputs(strings)
    if not args.no_goldens:
        json.dump(strings, open(os.path.join(HERE, "strings.json"), "w"), ensure_ascii=False)
    for name in args.only:
        tj, cfg, path = reference(name)
        tok = Tokenizer.from_str(json.dumps(tj))
        check = "no llama.cpp pairs for V3" if name == "deepseek-v3" else llamacpp_check(tok, path)
        print(f"{name}: {check}; transformers fix: {VOCABS[name][1]}", file=sys.stderr)
        if args.json_dir:
            d = os.path.join(args.json_dir, name)
            os.makedirs(d, exist_ok=True)
            json.dump(tj, open(os.path.join(d, "tokenizer.json"), "w"), ensure_ascii=False)
            json.dump(cfg, open(os.path.join(d, "tokenizer_config.json"), "w"), ensure_ascii=False)
            if name == "deepseek-v3":
                derived_gguf(path, os.path.join(d, "vocab.gguf"), "deepseek-v3")
        if not args.no_goldens:
            g = golden(name, tok, strings, invalid)
            json.dump(g, open(os.path.join(HERE, f"{name}.json"), "w"), ensure_ascii=False, separators=(",", ":"))


if __name__ == "__main__":
    main()
