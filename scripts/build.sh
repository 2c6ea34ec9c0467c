#!/usr/bin/env bash
# Configures and builds keel with CMake + Ninja + ccache into build/ (or $KEEL_BUILD_DIR).
# Extra arguments go to cmake's configure step (e.g. -DKEEL_CUDA=ON).
# The CUDA backend is built whenever nvcc is at $KEEL_NVCC (default /usr/local/cuda/bin/nvcc), so CI
# compiles every .cu; KEEL_CUDA=OFF in the environment (or -DKEEL_CUDA=OFF) turns that off. The binary
# still runs on machines without a GPU (`--device cpu` is the default).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${KEEL_BUILD_DIR:-build}"
JOBS="${KEEL_JOBS:-$(nproc)}"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
# Paths relative to the checkout, so a fresh clone elsewhere (CI) still hits the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
export CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
NVCC="${KEEL_NVCC:-/usr/local/cuda/bin/nvcc}"
cuda=()
if [[ "${KEEL_CUDA:-auto}" != OFF && -x "$NVCC" && " $* " != *" -DKEEL_CUDA="* ]]; then
  cuda=(-DKEEL_CUDA=ON -DCMAKE_CUDA_COMPILER="$NVCC")
fi
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cuda[@]}" "$@" >/dev/null
ninja -C "$BUILD" -j "$JOBS"
