#!/bin/bash
# Session 10 (router-ha3): two keel router instances with --instance i/2 and burst shares (the default;
# bench_router_prefix passes --instance i/2 to keel instance i with --routers 2) against the same binary
# with --no-burst-shares (Session 10's second step: the rotation alone) and sglang-router 0.3.2;
# workload (c) of Session 10 (the Session 9 skew workload with --routers 2); two runs per row, alternating.
# Staged: .device/router/stage8/{keel,bench_router_prefix.py,this}, ../stage/smollm2-dummy, ../sgr-site.tar.xz
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
common=(--keel ./keel --model ../stage/smollm2-dummy --load-format dummy --threads 3
        --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view
        --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson
        --rate 20 --trace --repeat 2
        --variant "keel no burst shares=--model {model} --no-burst-shares"
        --only "exact (--model),no burst shares,sglang")
{ date -u; uptime; nproc; ./keel --version 2>&1 | head -1; sha256sum keel; } > "$OUT/env_c.txt"
python3 bench_router_prefix.py "${common[@]}" --routers 2 --out "$OUT/routers2_c.jsonl" > "$OUT/routers2_c.log" 2>&1
echo "routers2 c rc $? $(date -u)" >> "$OUT/env_c.txt"; uptime >> "$OUT/env_c.txt"
grep -v '"requests"' "$OUT/routers2_c.log" | tail -c 4000; cat "$OUT/env_c.txt"
