#!/bin/bash
# Session 11, lead's second call (b3d3b58): the peer feed's push gap. (A) router overhead on one pinned core,
# trivial fast backend, a peer subscribed to the keel router's feed: --peer-feed-batch-us 0 (run A1) and 100
# (run A2), each against the same binary with no peer subscribed (--baseline-keel), two rounds each;
# (B) workload (c), --routers 2: keel peers (batch 0, the default), keel peers --peer-feed-batch-us 100,
# sglang-router 0.3.2; two runs each, alternating.
# Staged: .device/router/stage11/{b/,bench_router.py,bench_router_prefix.py,smollm2-dummy,this}, ../sgr-site.tar.xz
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
K=./b/src/cli/keel
{ date -u; uptime; nproc; lscpu | grep -E "Model name"; sha256sum $K; } > "$OUT/env.txt"
common=(--build b --seconds 3 --warmup 0.5 --router-cpu 2 --other-cpus 4-15 --backend-threads 4 --peak-procs 4
        --peak-connections 16 --low-connections 1 --peer-feed --baseline-keel $K --baseline-upstream-threads 0 --repeat 2)
python3 bench_router.py "${common[@]}" > "$OUT/overhead_batch0.json" 2> "$OUT/overhead_batch0.err"
echo "A1 rc $? $(date -u)" >> "$OUT/env.txt"
python3 bench_router.py "${common[@]}" --no-decision --keel-args "--peer-feed-batch-us 100" \
  > "$OUT/overhead_batch100.json" 2> "$OUT/overhead_batch100.err"
echo "A2 rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
python3 bench_router_prefix.py --keel $K --model ./smollm2-dummy --load-format dummy --threads 3 \
  --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
  --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
  --rate 20 --trace --repeat 2 --routers 2 \
  --variant "keel peers batch 100=--model {model} --peer-feed-batch-us 100" \
  --only "exact (--model),batch 100,sglang" \
  --out "$OUT/routers2_c.jsonl" > "$OUT/routers2_c.log" 2>&1
echo "B rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
python3 - "$OUT" <<'PY'
import json,sys
out=sys.argv[1]
for f in ("overhead_batch0.json","overhead_batch100.json"):
    try:
        d=json.load(open(out+"/"+f))
        for r in d["load"]:
            print(f[9:-5], {k:r.get(k) for k in ("name","connections","rps","p50_us","p99_us","cpu_us_per_req")})
        for r in d.get("decision", []): print(r)
    except Exception as e: print(f, "parse", e)
for l in open(out+"/routers2_c.jsonl"):
    r=json.loads(l)
    print({k:r.get(k) for k in ("policy","repeat","hit_rate","ttft_p50_ms","ttft_p99_ms","full_max_over_min","peer_synced")})
PY
cat "$OUT/env.txt"
