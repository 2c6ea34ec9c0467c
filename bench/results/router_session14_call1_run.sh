#!/bin/bash
# Session 14, call 1 (c204f32). (A) Overhead without a peer: keel --busy-poll-us 50 (the keel under test) against
# the same binary without it (--baseline-keel) and sglang-router 0.3.2, open loop at 5k-25k req/s plus the
# closed-loop rows, two rounds. (B) The same two keel rows with a peer subscribed to each. (C) bench_router_peer_event
# and bench_router_decision pinned to CPU 2.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
K=./b/src/cli/keel
{ date -u; uptime; nproc; sha256sum $K; } > "$OUT/env.txt"
common=(--build b --seconds 3 --warmup 0.5 --router-cpu 2 --other-cpus 4-15 --backend-threads 4 --peak-procs 4
  --peak-connections 16 --low-connections 1 --baseline-keel $K --baseline-upstream-threads 0 --rate-procs 4
  --rate-connections 16 --repeat 2 --no-decision --keel-args "--busy-poll-us 50")
timeout 300 python3 bench_router.py "${common[@]}" --sglang-router python3 --rates 5000,10000,15000,20000,25000 \
  > "$OUT/overhead.json" 2> "$OUT/overhead.err"
echo "A rc $? $(date -u)" >> "$OUT/env.txt"
timeout 220 python3 bench_router.py "${common[@]}" --peer-feed --baseline-peer-feed --rates 5000,10000,15000,20000 \
  > "$OUT/overhead_peer.json" 2> "$OUT/overhead_peer.err"
echo "B rc $? $(date -u)" >> "$OUT/env.txt"
for f in overhead overhead_peer; do
python3 - "$OUT/$f.json" <<'PY'
import json,sys
try:
    d=json.load(open(sys.argv[1]))
    for r in d["load"]:
        print(f"{r['name'][:80]:80s} c={r.get('connections')} rate={r.get('rate')} rps={r['rps']:.0f} cpu/req={r.get('cpu_us_per_req')} p50={r['p50_us']} p99={r['p99_us']} add={r.get('added_p50_us')}/{r.get('added_p99_us')} late={r.get('late')}")
except Exception as e: print("parse", sys.argv[1], e)
PY
done
for i in 1 2 3; do taskset -c 2 ./b/bench/bench_router/bench_router_peer_event 200000; done > "$OUT/peer_event.jsonl"
taskset -c 2 ./b/bench/bench_router/bench_router_decision > "$OUT/decision.jsonl"
cat "$OUT/peer_event.jsonl"; tail -3 "$OUT/decision.jsonl"
cat "$OUT/env.txt"; tail -3 "$OUT/overhead.err" "$OUT/overhead_peer.err"
