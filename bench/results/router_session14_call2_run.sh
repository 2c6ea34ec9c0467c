#!/bin/bash
# Session 14, call 2 (c204f32; keel_old = 267609e, the tree before this session's exchange change). Open loop over
# 4 generators x 64 connections (call 1 used 16: 3.5 % of requests waited on their own connection at 20k, which
# sets a p99). (A) keel c204f32 vs 267609e vs sglang-router 0.3.2 at 5k-25k, two rounds. (B) keel --busy-poll-us 50
# vs the same binary without it, at 10k and 20k plus one connection, two rounds.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz && xz -d keel_old.xz && chmod +x keel_old
K=./b/src/cli/keel
{ date -u; uptime; nproc; sha256sum $K keel_old; } > "$OUT/env.txt"
common=(--build b --seconds 3 --warmup 0.5 --router-cpu 2 --other-cpus 4-15 --backend-threads 4 --peak-procs 4
  --peak-connections 16 --low-connections 1 --baseline-upstream-threads 0 --rate-procs 4
  --rate-connections 64 --repeat 2 --no-decision)
timeout 320 python3 bench_router.py "${common[@]}" --baseline-keel ./keel_old --sglang-router python3 \
  --rates 5000,10000,15000,20000,25000 > "$OUT/overhead.json" 2> "$OUT/overhead.err"
echo "A rc $? $(date -u)" >> "$OUT/env.txt"
timeout 200 python3 bench_router.py "${common[@]}" --baseline-keel $K --keel-args "--busy-poll-us 50" --rates 10000,20000 \
  > "$OUT/overhead_busy.json" 2> "$OUT/overhead_busy.err"
echo "B rc $? $(date -u)" >> "$OUT/env.txt"
for f in overhead overhead_busy; do
python3 - "$OUT/$f.json" <<'PY'
import json,sys
try:
    d=json.load(open(sys.argv[1]))
    for r in d["load"]:
        n=r['name'].replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('keel router (baseline) (cache_aware, char keys, upstream threads 0)','base').replace('sglang-router 0.3.2 (cache_aware)','sgl')
        print(f"{n[:44]:44s} c={r.get('connections')} rate={r.get('rate'):6.0f} rps={r['rps']:.0f} cpu/req={r.get('cpu_us_per_req')} p50={r['p50_us']} p99={r['p99_us']} add={r.get('added_p50_us')}/{r.get('added_p99_us')} late={r.get('late')}")
except Exception as e: print("parse", sys.argv[1], e)
PY
done
cat "$OUT/env.txt"; tail -n 3 "$OUT/overhead.err" "$OUT/overhead_busy.err"
