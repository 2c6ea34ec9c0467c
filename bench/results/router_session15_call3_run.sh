#!/bin/bash
# Session 15, call 3 (9dc5a9b): the upstream pool. Saturation at 192 client connections (6 generators x 32) and 8
# connections, keel with the new default pool (1,024, "baseline" rows: the same binary) against --upstream-pool 64
# (the old fixed size), at --http-threads 1 on CPU 2 and 4 on CPUs 0-3, two rounds each.
set -o pipefail
cd "$(dirname "$0")"
tar -xJf stage.tar.xz
K=./b/src/cli/keel
{ date -u; uptime; nproc; sha256sum $K; } > "$OUT/env.txt"
for cfg in 1:2 4:0-3; do
  n=${cfg%%:*}; cpus=${cfg#*:}
  timeout 150 python3 ../../../bench/bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu $cpus --http-threads $n \
    --other-cpus 4-15 --backend-threads 6 --peak-procs 6 --peak-connections 32 --baseline-keel $K \
    --baseline-upstream-threads 0 --keel-args "--upstream-pool 64" --repeat 2 --no-decision > "$OUT/pool_$n.json" 2> "$OUT/pool_$n.err"
  echo "threads $n rc $? $(date -u)" >> "$OUT/env.txt"
done
for n in 1 4; do
python3 - "$OUT/pool_$n.json" $n <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    n=r['name'].replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('keel router (baseline) (cache_aware, char keys, upstream threads 0)','pool1024')
    print(sys.argv[2], f"{n[:60]:60s} c={r.get('connections')} rps={r['rps']:.0f} cpu/req={r.get('cpu_us_per_req')} busy={r.get('router_core_busy')} p50={r['p50_us']} p99={r['p99_us']}")
PY
done
cat "$OUT/env.txt"
