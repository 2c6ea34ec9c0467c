#!/bin/bash
# Session 14, call 3 (d51ad48 against keel_old = 267609e, the tree before this session). Four interleaved rounds
# of: one connection, 8 connections closed loop, 20k req/s open loop (4 x 64 connections), saturation: does
# this session's exchange change (calls answered in place) cost or save anything? Then bench_router_decision,
# FlatKeyMap (d51ad48) against the std::unordered_set index (267609e), three runs each, interleaved, CPU 2.
set -o pipefail
cd "$(dirname "$0")"
tar -xJf stage.tar.xz
K=./b/src/cli/keel
{ date -u; uptime; nproc; sha256sum $K keel_old; lscpu -e 2>/dev/null | head -20; } > "$OUT/env.txt"
timeout 330 python3 bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu 2 --other-cpus 4-15 --backend-threads 4 \
  --peak-procs 4 --peak-connections 16 --low-connections 1 --baseline-keel ./keel_old --baseline-upstream-threads 0 \
  --rate-procs 4 --rate-connections 64 --repeat 4 --no-decision --rates 20000 > "$OUT/overhead.json" 2> "$OUT/overhead.err"
echo "A rc $? $(date -u)" >> "$OUT/env.txt"
for i in 1 2 3; do
  echo "old $i"; taskset -c 2 ./decision_old
  echo "new $i"; taskset -c 2 ./b/bench/bench_router/bench_router_decision
done > "$OUT/decision.txt"
python3 - "$OUT/overhead.json" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    n=r['name'].replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('keel router (baseline) (cache_aware, char keys, upstream threads 0)','old')
    print(f"{n[:36]:36s} c={r.get('connections')} rate={r.get('rate'):6.0f} rps={r['rps']:.0f} cpu/req={r.get('cpu_us_per_req')} p50={r['p50_us']} p99={r['p99_us']} add={r.get('added_p50_us')}/{r.get('added_p99_us')} late={r.get('late')}")
PY
grep -E "old|new|64, \"prompt_tokens\": 2048" "$OUT/decision.txt"
cat "$OUT/env.txt"
