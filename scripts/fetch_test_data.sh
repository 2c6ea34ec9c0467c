#!/usr/bin/env bash
# Fetches third-party test inputs that keel does not commit: the vocabulary-only GGUF files and real
# chat templates that llama.cpp ships in its source tree, from the pinned llama-cpp-python source
# package on PyPI. Extracts them to $KEEL_CACHE_DIR/testdata/llamacpp/{vocab,templates}.
set -euo pipefail
VERSION=0.3.36
CACHE="${KEEL_CACHE_DIR:-$HOME/.cache/keel}"
DEST="$CACHE/testdata/llamacpp"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -f "$DEST/.complete-$VERSION" ]; then
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --no-binary=:all: "llama-cpp-python==$VERSION" -d "$tmp" >&2
rm -rf "$DEST"; mkdir -p "$DEST/vocab" "$DEST/templates"
tar -xzf "$tmp"/llama_cpp_python-$VERSION.tar.gz -C "$tmp" --wildcards \
  "llama_cpp_python-$VERSION/vendor/llama.cpp/models/ggml-vocab-*" \
  "llama_cpp_python-$VERSION/vendor/llama.cpp/models/templates/*"
cp "$tmp"/llama_cpp_python-$VERSION/vendor/llama.cpp/models/ggml-vocab-* "$DEST/vocab/"
cp "$tmp"/llama_cpp_python-$VERSION/vendor/llama.cpp/models/templates/* "$DEST/templates/"
touch "$DEST/.complete-$VERSION"
fi

# ---- Tokenizer reference files (derived; tests/unit/tokenizer) ----
# The HF tokenizer.json/tokenizer_config.json that the tokenizer goldens were made with (built from
# the vocab GGUFs above and the default model by HF transformers' GGUF conversion, which needs torch)
# and the re-labelled DeepSeek-V3 vocab GGUF are committed gzipped in tests/golden/tokenizer/hf_json/
# (gen_tokenizer_goldens.py --json-dir, then gzip -9 -n); this step
# unpacks them into the cache.
TOK="$CACHE/testdata/tokenizer"
python3 - "$ROOT/tests/golden/tokenizer/hf_json" "$TOK" <<'PY'
import gzip, pathlib, shutil, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for gz in sorted(src.glob("*/*.gz")):
    out = dst / gz.parent.name / gz.name[:-3]
    if out.exists() and out.stat().st_mtime >= gz.stat().st_mtime:
        continue
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(gz, "rb") as f, open(out, "wb") as g:
        shutil.copyfileobj(f, g)
PY
echo "$DEST"
