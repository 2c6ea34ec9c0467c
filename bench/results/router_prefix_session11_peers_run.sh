#!/bin/bash
# Session 11 (router-peers): two keel router instances with exact peer sync (bench_router_prefix passes
# --instance i/2 and --peer <the other> to keel instance i with --routers 2: the bench's default now)
# against the same binary with --no-peers (Session 10's second step: the --instance estimate alone) and
# sglang-router 0.3.2; workload (c) of Session 10 (the Session 9 skew workload with --routers 2); two runs
# per row, alternating. Then, while the call has time, workload (a) at one instance, keel only.
# Staged: .device/router/stage9/{keel,bench_router_prefix.py,this}, ../stage/smollm2-dummy, ../sgr-site.tar.xz
set -o pipefail
cd "$(dirname "$0")"
T0=$(date +%s)
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
base=(--keel ./keel --model ../stage/smollm2-dummy --load-format dummy --threads 3
      --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view
      --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson
      --rate 20 --trace --repeat 2)
{ date -u; uptime; nproc; ./keel --version 2>&1 | head -1; sha256sum keel; } > "$OUT/env.txt"
python3 bench_router_prefix.py "${base[@]}" --routers 2 \
  --variant "keel no peers=--model {model} --no-peers" --only "exact (--model),no peers,sglang" \
  --out "$OUT/routers2_c.jsonl" > "$OUT/routers2_c.log" 2>&1
echo "routers2 c rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
grep -v '"requests"' "$OUT/routers2_c.log" | python3 -c '
import json,sys
for l in sys.stdin:
    try: r=json.loads(l)
    except Exception: print(l[:300]); continue
    if "policy" in r: print({k:r.get(k) for k in ("policy","hit_rate","ttft_p50_ms","ttft_p99_ms","full_max_over_min","peers","peer_synced","burst_decisions")})
'
if (( $(date +%s) - T0 < 200 )); then
  python3 bench_router_prefix.py "${base[@]}" --repeat 1 --routers 1 --only "exact (--model)" \
    --out "$OUT/routers1_a.jsonl" > "$OUT/routers1_a.log" 2>&1
  echo "routers1 a rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
  grep -v '"requests"' "$OUT/routers1_a.log" | tail -c 800
fi
cat "$OUT/env.txt"
