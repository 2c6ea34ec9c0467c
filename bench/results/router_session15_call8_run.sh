#!/bin/bash
# Session 15, call 8: 17bca37 (final) against 289e34a (an io_context per thread, before the access log thread, the
# file split and the stream change) on one host: one connection, 8 connections, 20k req/s open loop, saturation,
# three rounds. Call 7 found every figure slower than calls 1 and 4, for the old binary as well.
set -o pipefail
cd "$(dirname "$0")"
tar -xJf stage.tar.xz
K=./b/src/cli/keel
{ date -u; uptime; nproc; sha256sum $K keel_289e34a; } > "$OUT/env.txt"
timeout 300 python3 ../../../bench/bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu 2 --other-cpus 4-15 \
  --backend-threads 4 --peak-procs 4 --peak-connections 16 --low-connections 1 --baseline-keel ./keel_289e34a \
  --baseline-upstream-threads 0 --rate-procs 4 --rate-connections 64 --repeat 3 --no-decision --rates 20000 \
  > "$OUT/overhead.json" 2> "$OUT/overhead.err"
echo "rc $? $(date -u)" >> "$OUT/env.txt"
python3 - "$OUT/overhead.json" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    n=r['name'].replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('keel router (baseline) (cache_aware, char keys, upstream threads 0)','289e34a')
    print(f"{n[:30]:30s} c={r.get('connections')} rate={r.get('rate'):6.0f} rps={r['rps']:.0f} cpu/req={r.get('cpu_us_per_req')} p50={r['p50_us']} p99={r['p99_us']} add={r.get('added_p50_us')}/{r.get('added_p99_us')}")
PY
cat "$OUT/env.txt"; tail -n 3 "$OUT/overhead.err"
