#!/usr/bin/env bash
# bench_router.py on a machine without this checkout or a network (the quiet device host). Lay out a
# folder D as:
#   D/b/src/cli/keel, D/b/bench/bench_router/bench_router_{backend,load,decision}  (stripped binaries)
#   D/bench_router.py, D/device_run.sh (this file)
#   D/keel_base   (optional: a keel binary from before a change, measured in the same run)
#   D/wheels/     (optional: sglang-router 0.3.2 and its dependencies' wheels for that machine's Python)
# then run `D/device_run.sh OUTDIR [extra bench_router.py flags]`. Writes OUTDIR/router.json and logs.
# Router pinned to CPU 2, backend (4 io threads) and load generators to CPUs 4-15, 3 s per run; open-loop
# runs at 5k-20k req/s (4 generators x 64 connections) besides the closed-loop ones (docs/performance.md,
# Sessions 13-14).
set -u
VENV=/tmp/keel-bench-sgr-venv-$$
D="$(cd "$(dirname "$0")" && pwd)"
OUTDIR="$1"
shift
mkdir -p "$OUTDIR"
{ nproc; uptime; lscpu | grep -E "Model name|Thread|Socket"; } > "$OUTDIR/machine.txt" 2>&1
args=()
if [[ -d "$D/wheels" ]]; then
  t0=$(date +%s)
  if python3 -m venv "$VENV" >"$OUTDIR/pip.log" 2>&1 &&
    "$VENV"/bin/pip install -q --no-index --find-links "$D/wheels" sglang-router==0.3.2 >>"$OUTDIR/pip.log" 2>&1; then
    args+=(--sglang-router "$VENV/bin/python")
  fi
  echo "sglang-router venv: $(( $(date +%s) - t0 )) s, ${args[*]:-not installed}" >>"$OUTDIR/machine.txt"
fi
if [[ -x "$D/keel_base" ]]; then args+=(--baseline-keel "$D/keel_base"); fi
python3 "$D/bench_router.py" --build "$D/b" --seconds 3 --warmup 0.5 --router-cpu 2 --other-cpus 4-15 \
  --backend-threads 4 --peak-procs 4 --peak-connections 16 --low-connections 1 --rates 5000,10000,15000,20000 \
  "${args[@]}" "$@" \
  >"$OUTDIR/router.json" 2>"$OUTDIR/bench.err"
echo "bench_router.py rc $?" >>"$OUTDIR/machine.txt"
