#!/usr/bin/env bash
# One command for a fresh machine: installs dependencies, builds keel (warnings are errors), fetches
# test inputs, and runs every test: unit/golden tests (ctest), end-to-end tests (pytest), CUDA
# compilation (build.sh compiles the CUDA backend whenever nvcc is present, so a broken .cu fails here;
# the GPU tests themselves run on a GPU machine: scripts/gpu-check.sh), and a short pass of every
# libFuzzer target (clang + ASan/UBSan, 15 s each from its seeds; longer runs: scripts/fuzz.sh, figures
# in docs/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --test
scripts/fetch_model.sh >/dev/null
scripts/fetch_test_data.sh >/dev/null
scripts/check_includes.sh
scripts/build.sh -DKEEL_WERROR=ON
FUZZ_SEED=1 scripts/fuzz.sh 15 all
(cd build && ctest --output-on-failure -j "$(nproc)")
python3 -m pytest -q tests/e2e
