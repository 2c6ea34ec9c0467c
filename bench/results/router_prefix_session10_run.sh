#!/bin/bash
# Session 10 (router-spill): the few-holders rules (hold_prefilling, group_need, home_holder; keel's new
# default) against the same binary with them off (--no-hold-prefilling --no-group-need --no-home-holder,
# Session 9's rules) and sglang-router 0.3.2; two runs per row, alternating. WORKLOAD is "a" (the
# Session 9 skew workload), "b" (the same with --kv-tokens 768 on the replicas), one router instance,
# or "c" (the skew workload with --routers 2).
# Staged: .device/router/stage6/{keel,bench_router_prefix.py,this}, ../stage/smollm2-dummy, ../sgr-site.tar.xz
set -o pipefail
cd "$(dirname "$0")"
W="${1:-a}"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
extra=()
[[ "$W" == b ]] && extra=(--kv-tokens 768)
routers=1
[[ "$W" == c ]] && routers=2
common=(--keel ./keel --model ../stage/smollm2-dummy --load-format dummy --threads 3
        --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view
        --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson
        --rate 20 --trace --repeat 2 "${extra[@]}"
        --variant "keel old rules=--model {model} --no-hold-prefilling --no-group-need --no-home-holder"
        --only "exact (--model),old rules,sglang")
{ date -u; uptime; nproc; ./keel --version 2>&1 | head -1; sha256sum keel; } > "$OUT/env_$W.txt"
python3 bench_router_prefix.py "${common[@]}" --routers $routers --out "$OUT/routers${routers}_$W.jsonl" > "$OUT/routers${routers}_$W.log" 2>&1
echo "routers$routers $W rc $? $(date -u)" >> "$OUT/env_$W.txt"; uptime >> "$OUT/env_$W.txt"
grep -v '"requests"' "$OUT/routers${routers}_$W.log" | tail -c 4000; cat "$OUT/env_$W.txt"
