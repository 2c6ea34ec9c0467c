#!/usr/bin/env bash
# One command for a fresh machine: installs dependencies, builds keel, fetches the default model
# (SmolLM2-135M-Instruct Q4_1) and serves it on the CPU with the OpenAI-compatible API on port 8000
# (KEEL_PORT to change). Extra arguments go to `keel serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh -DKEEL_WERROR=OFF
MODEL=$(scripts/fetch_model.sh)
exec build/src/cli/keel serve --model "$MODEL" --served-model-name smollm2 --port "${KEEL_PORT:-8000}" "$@"
