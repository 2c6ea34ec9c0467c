#!/bin/bash
# Session 16, call 5 (747fcd1, the accept fix): this session's router against ff97f50 (the session's start)
# in the same run: the router on 1 core (CPU 2) and on 4 (CPUs
# 0-3, --http-threads 4), saturated (6 generators x 32 connections) and, on 1 core, at 8 connections and
# 20k req/s open loop; three rounds each, alternating.
set -o pipefail
cd "$(dirname "$0")"
tar -xJf stage.tar.xz
{ date -u; uptime; nproc; sha256sum b/src/cli/keel keel_old; } > "$OUT/env.txt"
for cfg in 4:0-3 1:2; do
  n=${cfg%%:*}; cpus=${cfg#*:}
  extra=(); [ $n = 1 ] && extra=(--rates 20000 --rate-procs 4 --rate-connections 64)
  timeout 200 python3 ../../../bench/bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu $cpus --http-threads $n \
    --other-cpus 4-15 --backend-threads 6 --peak-procs 6 --peak-connections 32 --baseline-keel ./keel_old \
    --baseline-upstream-threads 0 --repeat 3 --no-decision "${extra[@]}" > "$OUT/threads_$n.json" 2> "$OUT/threads_$n.err"
  echo "threads $n rc $? $(date -u)" >> "$OUT/env.txt"
done
for n in 4 1; do
python3 - "$OUT/threads_$n.json" $n <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    n=r['name'].replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('keel router (baseline) (cache_aware, char keys, upstream threads 0)','old')
    print(sys.argv[2], f"{n[:40]:40s} c={r.get('connections')} rps={r['rps']:.0f} cpu/req={r.get('cpu_us_per_req')} busy={r.get('router_core_busy')} p50={r['p50_us']} p99={r['p99_us']}")
PY
done
cat "$OUT/env.txt"
