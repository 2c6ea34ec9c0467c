#!/bin/bash
# Session 11, lead's confirmation call on the merged main (3c7d4d8): (A) router overhead on one pinned core
# against the trivial fast backend: keel with a peer subscribed to its peer feed (--peer-feed) vs the same
# binary without one (--baseline-keel) vs sglang-router 0.3.2, direct backend as the floor, two rounds;
# (B) workload (c), --routers 2: keel peers (the bench's default) vs sglang-router 0.3.2, three runs each,
# alternating. Staged: .device/router/stage10/{keel,b/,bench_router.py,bench_router_prefix.py,this},
# ../sgr-site.tar.xz
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
{ date -u; uptime; nproc; lscpu | grep -E "Model name"; sha256sum b/src/cli/keel; } > "$OUT/env.txt"
python3 bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu 2 --other-cpus 4-15 --backend-threads 4 \
  --peak-procs 4 --peak-connections 16 --low-connections 1 --peer-feed --baseline-keel ./b/src/cli/keel \
  --baseline-upstream-threads 0 --sglang-router python3 --repeat 2 > "$OUT/overhead.json" 2> "$OUT/overhead.err"
echo "overhead rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
python3 bench_router_prefix.py --keel ./b/src/cli/keel --model ./smollm2-dummy --load-format dummy --threads 3 \
  --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
  --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
  --rate 20 --trace --repeat 3 --routers 2 --only "exact (--model),sglang" \
  --out "$OUT/routers2_c.jsonl" > "$OUT/routers2_c.log" 2>&1
echo "routers2 c rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
python3 - "$OUT" <<'PY'
import json,sys
out=sys.argv[1]
try:
    d=json.load(open(out+"/overhead.json"))
    for r in d["load"]:
        print({k:r.get(k) for k in ("name","connections","rps","p50_us","p99_us","cpu_us_per_req","router_core_busy")})
    for r in d.get("decision", []): print(r)
except Exception as e: print("overhead parse", e)
for l in open(out+"/routers2_c.jsonl"):
    r=json.loads(l)
    print({k:r.get(k) for k in ("policy","repeat","hit_rate","ttft_p50_ms","ttft_p99_ms","full_max_over_min","peer_synced")})
PY
cat "$OUT/env.txt"; tail -5 "$OUT/overhead.err"
