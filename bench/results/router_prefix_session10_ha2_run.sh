#!/bin/bash
# Session 10 (router-ha2): two keel router instances with --instance i/2 (bench_router_prefix passes it
# to keel instance i when --routers 2) against the same binary with --instance 0/1 on both (the
# single-router tie-breaks: the old behaviour) and sglang-router 0.3.2; workload (c) of Session 10 (the
# Session 9 skew workload with --routers 2); two runs per row, alternating.
# A second call with A=a adds workload (a) at one instance, keel only; bench records full-sample states.
# Staged: .device/router/stage7/{keel,bench_router_prefix.py,this}, ../stage/smollm2-dummy, ../sgr-site.tar.xz
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
common=(--keel ./keel --model ../stage/smollm2-dummy --load-format dummy --threads 3
        --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view
        --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson
        --rate 20 --trace --repeat 2
        --variant "keel instance 0/1=--model {model} --instance 0/1"
        --only "exact (--model),instance 0/1,sglang")
{ date -u; uptime; nproc; ./keel --version 2>&1 | head -1; sha256sum keel; } > "$OUT/env_c.txt"
python3 bench_router_prefix.py "${common[@]}" --routers 2 --out "$OUT/routers2_c.jsonl" > "$OUT/routers2_c.log" 2>&1
echo "routers2 c rc $? $(date -u)" >> "$OUT/env_c.txt"; uptime >> "$OUT/env_c.txt"
grep -v '"requests"' "$OUT/routers2_c.log" | tail -c 4000; cat "$OUT/env_c.txt"
# With A=a also workload (a) (one router instance, keel only: --instance 1/1 is the default, unchanged).
if [[ "${A:-}" == a ]]; then
  python3 bench_router_prefix.py "${common[@]:0:32}" --routers 1 --only "exact (--model)" \
    --out "$OUT/routers1_a.jsonl" > "$OUT/routers1_a.log" 2>&1
  echo "routers1 a rc $? $(date -u)" >> "$OUT/env_c.txt"; uptime >> "$OUT/env_c.txt"
  grep -v '"requests"' "$OUT/routers1_a.log" | tail -c 1500
fi
