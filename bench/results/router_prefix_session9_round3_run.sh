#!/bin/bash
# Session 9 third round: two router instances (high availability) behind a round-robin client, on the
# same 4 replicas: keel cache_aware exact (default flags), keel approximate, sglang-router 0.3.2; two runs
# per row, alternating; the skew workload of round 1 (no --kv-tokens pressure). Router CPUs 12-13 split:
# instance 1 on 12, instance 2 on 13. Then the same rows with one router (on 12-13) for reference.
# Staged: .device/router/stage3/{keel,bench_router_prefix.py,this}, ../stage/smollm2-dummy, ../sgr-site.tar.xz
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
common=(--keel ./keel --model ../stage/smollm2-dummy --load-format dummy --threads 3
        --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view
        --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson
        --rate 20 --trace --repeat 2 --only "exact (--model),approximate,sglang")
{ date -u; uptime; nproc; ./keel --version 2>&1 | head -1; sha256sum keel; } > "$OUT/env.txt"
python3 bench_router_prefix.py "${common[@]}" --routers 2 --out "$OUT/routers2.jsonl" > "$OUT/routers2.log" 2>&1
echo "routers2 rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
python3 bench_router_prefix.py "${common[@]}" --routers 1 --out "$OUT/routers1.jsonl" > "$OUT/routers1.log" 2>&1
echo "routers1 rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
for f in "$OUT"/routers*.log; do grep -v '"requests"' "$f" | tail -c 1500; done; cat "$OUT/env.txt"
