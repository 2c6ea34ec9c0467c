#!/bin/bash
# Session 11 (router-peers), second call: workload (c) --routers 2, four rows alternating, two runs each:
# keel with peers (the bench's default: --instance i/2 --peer <other>), keel with peers and --no-peer-work
# (exact loads, own work in the cost test), keel --no-peers (Session 10's estimate), sglang-router 0.3.2.
# Staged: .device/router/stage9/{keel,bench_router_prefix.py,this}, ../stage/smollm2-dummy, ../sgr-site.tar.xz
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
base=(--keel ./keel --model ../stage/smollm2-dummy --load-format dummy --threads 3
      --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view
      --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson
      --rate 20 --trace --repeat 2)
{ date -u; uptime; nproc; ./keel --version 2>&1 | head -1; sha256sum keel; } > "$OUT/env2.txt"
python3 bench_router_prefix.py "${base[@]}" --routers 2 \
  --variant "keel peers own work=--model {model} --no-peer-work" \
  --variant "keel no peers=--model {model} --no-peers" \
  --only "exact (--model),own work,no peers,sglang" \
  --out "$OUT/routers2_c_call2.jsonl" > "$OUT/routers2_c_call2.log" 2>&1
echo "routers2 c rc $? $(date -u)" >> "$OUT/env2.txt"; uptime >> "$OUT/env2.txt"
grep -v '"requests"' "$OUT/routers2_c_call2.log" | python3 -c '
import json,sys
for l in sys.stdin:
    try: r=json.loads(l)
    except Exception: print(l[:300]); continue
    if "policy" in r: print({k:r.get(k) for k in ("policy","hit_rate","ttft_p50_ms","ttft_p99_ms","full_max_over_min","peer_synced")})
'
cat "$OUT/env2.txt"
