#!/bin/bash
# Session 15, call 9 (17bca37 router, backend of the next commit: a stream ticks on its own thread). Streams through one router core. The backend streams 32 chat chunks 2 ms
# apart (then [DONE]) to 128 and to 512 client connections (4 generators); keel vs sglang-router 0.3.2, two rounds.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
K=./b/src/cli/keel
{ date -u; uptime; nproc; sha256sum $K; } > "$OUT/env.txt"
for conns in 128; do
  timeout 150 python3 ../../../bench/bench_router.py --build b --seconds 3 --warmup 1 --router-cpu 2 --other-cpus 4-15 \
    --backend-threads 4 --connections $conns --peak-procs 4 --peak-connections $conns --sglang-router python3 --repeat 2 \
    --no-decision --stream-chunks 32 --stream-gap-us 2000 > "$OUT/stream_$conns.json" 2> "$OUT/stream_$conns.err"
  echo "conns $conns rc $? $(date -u)" >> "$OUT/env.txt"
done
for conns in 128; do
python3 - "$OUT/stream_$conns.json" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    n=r['name'].replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('sglang-router 0.3.2 (cache_aware)','sgl')
    print(f"{n[:24]:24s} c={r.get('connections')} rps={r['rps']:.0f} errors={r.get('errors')} cpu/req={r.get('cpu_us_per_req')} cpu/chunk={r.get('cpu_us_per_chunk')} busy={r.get('router_core_busy')} p50={r['p50_us']} p99={r['p99_us']}")
PY
done
cat "$OUT/env.txt"; tail -n 3 "$OUT"/stream_*.err
