#!/usr/bin/env bash
# Configures and builds keel with CMake + Ninja + ccache into build/ (or $KEEL_BUILD_DIR).
# Extra arguments go to cmake's configure step (e.g. -DKEEL_CUDA=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${KEEL_BUILD_DIR:-build}"
JOBS="${KEEL_JOBS:-$(nproc)}"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
# Paths relative to the checkout, so a fresh clone elsewhere (CI) still hits the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
export CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
ninja -C "$BUILD" -j "$JOBS"
