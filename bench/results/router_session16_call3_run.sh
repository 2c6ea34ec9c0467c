#!/bin/bash
# Session 16, call 3: the accept batch (a backlog taken in one accept completion) against a67d1a3 (one
# connection per completion) and sglang-router 0.3.2 in one run: 512 streams (4 generators x 128, all
# connecting at the run's start) of 32 chunks 2 ms apart through one router core, three rounds; then the
# overhead sweep's 20k req/s open loop and 8-connection rows, two rounds.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
{ date -u; uptime; nproc; sha256sum b/src/cli/keel base/keel; } > "$OUT/env.txt"
timeout 300 python3 ../../../bench/bench_router.py --build b --seconds 3 --warmup 1 --router-cpu 2 --other-cpus 4-15 \
  --connections 128 --peak-procs 4 --peak-connections 128 --no-decision --stream-chunks 32 --stream-gap-us 2000 \
  --backend-threads 4 --baseline-keel base/keel --baseline-upstream-threads 0 --sglang-router python3 --repeat 3 \
  > "$OUT/stream.json" 2> "$OUT/stream.err"; echo "stream rc $? $(date -u)" >> "$OUT/env.txt"
timeout 200 python3 ../../../bench/bench_router.py --build b --seconds 3 --warmup 1 --router-cpu 2 --other-cpus 4-15 \
  --rates 20000 --peak-procs 0 --backend-threads 4 --baseline-keel base/keel --baseline-upstream-threads 0 --repeat 2 --no-decision \
  > "$OUT/overhead.json" 2> "$OUT/overhead.err"; echo "overhead rc $? $(date -u)" >> "$OUT/env.txt"
for f in stream overhead; do
python3 - "$OUT/$f.json" "$f" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    n=r['name'].replace('keel router (baseline) (cache_aware, char keys, upstream threads 0)','base').replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('sglang-router 0.3.2 (cache_aware)','sgl')
    print(sys.argv[2], f"{n[:30]:30s} c={r.get('connections')} rps={r['rps']:.0f} cpu/req={r.get('cpu_us_per_req')} busy={r.get('router_core_busy')} p50={r['p50_us']} p99={r['p99_us']} done={r.get('conn_done')} slowest={r.get('conn_slowest_us')} early_p99={r.get('early_p99_us')}")
PY
done
cat "$OUT/env.txt"; tail -n 3 "$OUT"/*.err
