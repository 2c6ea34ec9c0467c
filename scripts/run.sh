#!/usr/bin/env bash
# One command for a fresh machine: installs dependencies, builds keel, fetches the default model
# (SmolLM2-135M-Instruct Q4_1) and runs the main job on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh -DKEEL_WERROR=OFF
MODEL=$(scripts/fetch_model.sh)
exec build/src/cli/keel generate --model "$MODEL" --chat "${KEEL_PROMPT:-Write a haiku about the sea.}" -n 128 "$@"
