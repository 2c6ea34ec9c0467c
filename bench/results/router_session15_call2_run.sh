#!/bin/bash
# Session 15, call 2 (14d0522): how the router scales over cores. Saturation (6 load generators x 32 connections,
# backend 6 threads, on CPUs 4-15) with keel --http-threads N on N cores (N = 1, 2, 4) and sglang-router 0.3.2 on
# the same cores, two rounds.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
K=./b/src/cli/keel
{ date -u; uptime; nproc; sha256sum $K; } > "$OUT/env.txt"
for cfg in 1:2 2:2-3 4:0-3; do
  n=${cfg%%:*}; cpus=${cfg#*:}
  timeout 150 python3 ../../../bench/bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu $cpus --http-threads $n \
    --other-cpus 4-15 --backend-threads 6 --peak-procs 6 --peak-connections 32 --sglang-router python3 --repeat 2 \
    --no-decision > "$OUT/scale_$n.json" 2> "$OUT/scale_$n.err"
  echo "threads $n rc $? $(date -u)" >> "$OUT/env.txt"
done
for n in 1 2 4; do
python3 - "$OUT/scale_$n.json" $n <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    print(sys.argv[2], f"{r['name'][:60]:60s} c={r.get('connections')} rps={r['rps']:.0f} cpu/req={r.get('cpu_us_per_req')} busy={r.get('router_core_busy')} p50={r['p50_us']} p99={r['p99_us']}")
PY
done
cat "$OUT/env.txt"
