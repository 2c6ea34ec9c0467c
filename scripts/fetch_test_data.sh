#!/usr/bin/env bash
# Fetches third-party test inputs that keel does not commit: the vocabulary-only GGUF files and real
# chat templates that llama.cpp ships in its source tree, from the pinned llama-cpp-python source
# package on PyPI. Extracts them to $KEEL_CACHE_DIR/testdata/llamacpp/{vocab,templates}.
set -euo pipefail
VERSION=0.3.36
CACHE="${KEEL_CACHE_DIR:-$HOME/.cache/keel}"
DEST="$CACHE/testdata/llamacpp"
if [ -f "$DEST/.complete-$VERSION" ]; then echo "$DEST"; exit 0; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --no-binary=:all: "llama-cpp-python==$VERSION" -d "$tmp" >&2
rm -rf "$DEST"; mkdir -p "$DEST/vocab" "$DEST/templates"
tar -xzf "$tmp"/llama_cpp_python-$VERSION.tar.gz -C "$tmp" --wildcards \
  "llama_cpp_python-$VERSION/vendor/llama.cpp/models/ggml-vocab-*" \
  "llama_cpp_python-$VERSION/vendor/llama.cpp/models/templates/*"
cp "$tmp"/llama_cpp_python-$VERSION/vendor/llama.cpp/models/ggml-vocab-* "$DEST/vocab/"
cp "$tmp"/llama_cpp_python-$VERSION/vendor/llama.cpp/models/templates/* "$DEST/templates/"
touch "$DEST/.complete-$VERSION"
echo "$DEST"
