#!/bin/bash
# Session 16, call 6 (747fcd1 router, bench_router_load with steady_p99_us): added latency at 20k req/s open
# loop (4 generators x 64 connections) and at 8 connections on one router core (CPU 2), this session's
# router against ff97f50 (the session's start), four rounds alternating; p99 over the whole run and after
# each run's first 0.5 s (its 256 connections being set up).
set -o pipefail
cd "$(dirname "$0")"
tar -xJf stage.tar.xz
{ date -u; uptime; nproc; sha256sum b/src/cli/keel keel_old; } > "$OUT/env.txt"
timeout 300 python3 ../../../bench/bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu 2 --http-threads 1 \
  --other-cpus 4-15 --backend-threads 6 --peak-procs 0 --baseline-keel ./keel_old --baseline-upstream-threads 0 \
  --repeat 4 --no-decision --rates 20000 --rate-procs 4 --rate-connections 64 > "$OUT/overhead.json" 2> "$OUT/overhead.err"
echo "rc $? $(date -u)" >> "$OUT/env.txt"
python3 - "$OUT/overhead.json" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    n=r['name'].replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('keel router (baseline) (cache_aware, char keys, upstream threads 0)','old')
    print(f"{n[:36]:36s} rps={r['rps']:.0f} cpu/req={r.get('cpu_us_per_req')} p50={r['p50_us']} p99={r['p99_us']} early={r.get('early_p99_us')} steady={r.get('steady_p99_us')} added={r.get('added_p99_us')} added_steady={r.get('added_steady_p99_us')}")
PY
cat "$OUT/env.txt"
