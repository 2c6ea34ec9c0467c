#!/bin/bash
# Session 15, call 4 (289e34a: an io_context per io thread; keel_old = 9dc5a9b, one shared io_context with strands,
# the same pool). Saturation at 192 client connections (6 generators x 32) and 8 connections with --http-threads N
# on N cores (1: CPU 2 plus one connection and 20k req/s open loop; 2: CPUs 2-3; 4: CPUs 0-3), two rounds.
set -o pipefail
cd "$(dirname "$0")"
tar -xJf stage.tar.xz
K=./b/src/cli/keel
{ date -u; uptime; nproc; sha256sum $K keel_old; } > "$OUT/env.txt"
for cfg in 1:2 2:2-3 4:0-3; do
  n=${cfg%%:*}; cpus=${cfg#*:}
  extra=(); [ $n = 1 ] && extra=(--low-connections 1 --rates 20000 --rate-procs 4 --rate-connections 64)
  timeout 170 python3 ../../../bench/bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu $cpus --http-threads $n \
    --other-cpus 4-15 --backend-threads 6 --peak-procs 6 --peak-connections 32 --baseline-keel ./keel_old \
    --baseline-upstream-threads 0 --repeat 2 --no-decision "${extra[@]}" > "$OUT/ctx_$n.json" 2> "$OUT/ctx_$n.err"
  echo "threads $n rc $? $(date -u)" >> "$OUT/env.txt"
done
for n in 1 2 4; do
python3 - "$OUT/ctx_$n.json" $n <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    n=r['name'].replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('keel router (baseline) (cache_aware, char keys, upstream threads 0)','old')
    print(sys.argv[2], f"{n[:52]:52s} c={r.get('connections')} rps={r['rps']:.0f} cpu/req={r.get('cpu_us_per_req')} busy={r.get('router_core_busy')} p50={r['p50_us']} p99={r['p99_us']} add={r.get('added_p50_us')}/{r.get('added_p99_us')}")
PY
done
cat "$OUT/env.txt"
