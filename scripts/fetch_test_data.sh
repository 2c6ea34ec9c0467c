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
# The HF tokenizer.json/tokenizer_config.json that the tokenizer goldens were made with, rebuilt from
# the vocab GGUFs above and the default model (scripts/fetch_model.sh first) by HF transformers'
# GGUF conversion + tokenizers, and DeepSeek LLM's vocab GGUF re-labelled with pre "deepseek-v3".
# Rebuilt whenever the generator changes. Needs tokenizers, transformers and gguf (no torch).
TOK="$CACHE/testdata/tokenizer"
GEN="$ROOT/tests/golden/tokenizer/gen_tokenizer_goldens.py"
GEN_HASH=$(sha256sum "$GEN" | cut -c1-16)
if [ ! -f "$TOK/.complete-$GEN_HASH" ]; then
  python3 -c "import tokenizers, transformers, gguf" 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check tokenizers==0.23.3 transformers==5.24.0 gguf==0.19.0 >&2
  rm -rf "$TOK"; mkdir -p "$TOK"
  python3 "$GEN" --no-goldens --json-dir "$TOK" >&2
  touch "$TOK/.complete-$GEN_HASH"
fi
echo "$DEST"
