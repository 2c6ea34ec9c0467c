#!/bin/bash
# Session 16, call 2 (a67d1a3 + bench_router_load's fairness fields): the saturated stream tail. 512 streams
# (4 generators x 128) of 32 chunks 2 ms apart through one router core; keel vs sglang-router 0.3.2, two
# rounds, backend 4 threads; then keel alone with the backend on 8 threads (is the tail the backend's?).
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
{ date -u; uptime; nproc; sha256sum b/src/cli/keel; } > "$OUT/env.txt"
common=(--build b --seconds 3 --warmup 1 --router-cpu 2 --other-cpus 4-15 --connections 128 --peak-procs 4
        --peak-connections 128 --no-decision --stream-chunks 32 --stream-gap-us 2000)
timeout 200 python3 ../../../bench/bench_router.py "${common[@]}" --backend-threads 4 --sglang-router python3 --repeat 2 \
  > "$OUT/stream_b4.json" 2> "$OUT/stream_b4.err"; echo "b4 rc $? $(date -u)" >> "$OUT/env.txt"
timeout 150 python3 ../../../bench/bench_router.py "${common[@]}" --backend-threads 8 --repeat 2 \
  > "$OUT/stream_b8.json" 2> "$OUT/stream_b8.err"; echo "b8 rc $? $(date -u)" >> "$OUT/env.txt"
for f in b4 b8; do
python3 - "$OUT/stream_$f.json" "$f" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    n=r['name'].replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('sglang-router 0.3.2 (cache_aware)','sgl')
    print(sys.argv[2], f"{n[:22]:22s} c={r.get('connections')} rps={r['rps']:.0f} cpu/chunk={r.get('cpu_us_per_chunk')} busy={r.get('router_core_busy')} p50={r['p50_us']} p99={r['p99_us']} max={r.get('max_us')} done={r.get('conn_done')} slowest={r.get('conn_slowest_us')} early_p99={r.get('early_p99_us')}")
PY
done
cat "$OUT/env.txt"; tail -n 3 "$OUT"/stream_*.err
