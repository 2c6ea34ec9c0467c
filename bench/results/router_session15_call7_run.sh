#!/bin/bash
# Session 15, call 7 (17bca37, the session's final router). (A) Streams through one core: 32 chunks 2 ms apart to
# 128 and 512 client connections, against c4b8dd1 (before the stream change), two rounds. (B) The overhead sweep
# against 1653189 (the tree before this session): one connection, 8 connections, 20k req/s open loop, saturation
# at 64 connections, three rounds.
set -o pipefail
cd "$(dirname "$0")"
tar -xJf stage.tar.xz
K=./b/src/cli/keel
{ date -u; uptime; nproc; sha256sum $K keel_1653189 keel_c4b8dd1; } > "$OUT/env.txt"
timeout 150 python3 ../../../bench/bench_router.py --build b --seconds 3 --warmup 1 --router-cpu 2 --other-cpus 4-15 \
  --backend-threads 4 --connections 128 --peak-procs 4 --peak-connections 128 --baseline-keel ./keel_c4b8dd1 \
  --baseline-upstream-threads 0 --repeat 2 --no-decision --stream-chunks 32 --stream-gap-us 2000 \
  > "$OUT/stream.json" 2> "$OUT/stream.err"
echo "A rc $? $(date -u)" >> "$OUT/env.txt"
timeout 300 python3 ../../../bench/bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu 2 --other-cpus 4-15 \
  --backend-threads 4 --peak-procs 4 --peak-connections 16 --low-connections 1 --baseline-keel ./keel_1653189 \
  --baseline-upstream-threads 0 --rate-procs 4 --rate-connections 64 --repeat 3 --no-decision --rates 20000 \
  > "$OUT/overhead.json" 2> "$OUT/overhead.err"
echo "B rc $? $(date -u)" >> "$OUT/env.txt"
for f in stream overhead; do
python3 - "$OUT/$f.json" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    n=r['name'].replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('keel router (baseline) (cache_aware, char keys, upstream threads 0)','old')
    print(f"{n[:30]:30s} c={r.get('connections')} rate={r.get('rate'):6.0f} rps={r['rps']:.0f} err={r.get('errors')} cpu/req={r.get('cpu_us_per_req')} cpu/chunk={r.get('cpu_us_per_chunk')} p50={r['p50_us']} p99={r['p99_us']} add={r.get('added_p50_us')}/{r.get('added_p99_us')}")
PY
done
cat "$OUT/env.txt"; tail -n 3 "$OUT"/*.err
