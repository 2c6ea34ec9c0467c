#!/bin/bash
# Session 9 fifth round: two router instances on the same 4 replicas, keel cache_aware exact (default
# flags; its feed asks for the replicas' `event: pending` and now `event: load`, so each instance sees
# the other's requests in flight on every replica within a few ms) and sglang-router 0.3.2; two runs per row,
# alternating; the round-3 skew workload. Router CPUs 12-13 split: instance 1 on 12, instance 2 on 13.
# Staged: .device/stage5/{keel,bench_router_prefix.py,this}, ../stage/smollm2-dummy, ../sgr-site.tar.xz
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
common=(--keel ./keel --model ../stage/smollm2-dummy --load-format dummy --threads 3
        --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view
        --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson
        --rate 20 --trace --repeat 2 --only "exact (--model),sglang")
{ date -u; uptime; nproc; ./keel --version 2>&1 | head -1; sha256sum keel; } > "$OUT/env.txt"
python3 bench_router_prefix.py "${common[@]}" --routers 1 --out "$OUT/routers1.jsonl" > "$OUT/routers1.log" 2>&1
echo "routers1 rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
grep -v '"requests"' "$OUT/routers1.log" | tail -c 3000; cat "$OUT/env.txt"
