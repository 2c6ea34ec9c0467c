#!/usr/bin/env bash
# One command for a fresh machine: installs dependencies, builds keel (warnings are errors), fetches
# test inputs, and runs every test: unit/golden tests (ctest), end-to-end tests (pytest), CUDA
# compilation (build.sh compiles the CUDA backend whenever nvcc is present, so a broken .cu fails here;
# the GPU tests themselves run on a GPU machine: scripts/gpu-check.sh). The libFuzzer targets run
# separately (scripts/fuzz.sh, clang + sanitizers); their figures are in docs/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --test
scripts/fetch_model.sh >/dev/null
scripts/fetch_test_data.sh >/dev/null
scripts/check_includes.sh
scripts/build.sh -DKEEL_WERROR=ON
(cd build && ctest --output-on-failure -j "$(nproc)")
python3 -m pytest -q tests/e2e
