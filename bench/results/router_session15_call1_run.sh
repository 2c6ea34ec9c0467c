#!/bin/bash
# Session 15, call 1 (14d0522: sends at once, the watch kept as the idle wait; keel_old = 1653189, the tree before
# this session). Overhead, three interleaved rounds, keel vs keel_old vs sglang-router 0.3.2: one connection,
# 8 connections, 10k / 20k / 25k req/s open loop (4 x 64 connections), saturation.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
K=./b/src/cli/keel
{ date -u; uptime; nproc; sha256sum $K keel_old; } > "$OUT/env.txt"
timeout 480 python3 ../../../bench/bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu 2 --other-cpus 4-15 --backend-threads 4 \
  --peak-procs 4 --peak-connections 16 --low-connections 1 --baseline-keel ./keel_old --baseline-upstream-threads 0 \
  --sglang-router python3 --rate-procs 4 --rate-connections 64 --repeat 3 --no-decision --rates 10000,20000,25000 \
  > "$OUT/overhead.json" 2> "$OUT/overhead.err"
echo "A rc $? $(date -u)" >> "$OUT/env.txt"
python3 - "$OUT/overhead.json" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    n=r['name'].replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('keel router (baseline) (cache_aware, char keys, upstream threads 0)','old').replace('sglang-router 0.3.2 (cache_aware)','sgl')
    print(f"{n[:36]:36s} c={r.get('connections')} rate={r.get('rate'):6.0f} rps={r['rps']:.0f} cpu/req={r.get('cpu_us_per_req')} p50={r['p50_us']} p99={r['p99_us']} add={r.get('added_p50_us')}/{r.get('added_p99_us')} late={r.get('late')}")
PY
cat "$OUT/env.txt"; tail -n 3 "$OUT/overhead.err"
