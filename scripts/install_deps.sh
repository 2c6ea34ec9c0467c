#!/usr/bin/env bash
# Installs what keel needs to build and test on a fresh Debian 12 machine: the compiler toolchain and
# libraries from Debian's packages, and the Python test tooling (pinned) from PyPI.
# Idempotent; runs apt only when a package is missing.
set -euo pipefail
DEB_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config clang libclang-rt-14-dev
  nlohmann-json3-dev libfmt-dev libpcre2-dev libcli11-dev libxxhash-dev libgtest-dev
  libboost-dev libssl-dev python3 python3-pip unzip
)
missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "install_deps: installing ${missing[*]}" >&2
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
if [ "${1:-}" = "--test" ]; then
  python3 -m pip install --quiet --disable-pip-version-check -r "$(dirname "$0")/../tests/requirements.txt" >&2
fi
