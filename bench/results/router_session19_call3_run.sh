#!/bin/bash
# Session 19, third call (03961a1: a request that arrives during a pull of its prefix waits for it):
# workloads (b) (--kv-tokens 768) then (a), two runs a row: keel with KV pulls (the default), keel
# without (--kv-pull-min-tokens 0) and sglang-router 0.3.2, interleaved.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
{ date -u; uptime; nproc; sha256sum keel-new; } > "$OUT/env.txt"
for W in b a; do
  extra=()
  [[ "$W" == b ]] && extra=(--kv-tokens 768)
  timeout 280 python3 ../../../bench/bench_router_prefix.py --keel ./keel-new \
    --model ./smollm2-dummy --load-format dummy --threads 3 \
    --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
    --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
    --rate 20 --trace --repeat ${REPEAT:-2} "${extra[@]}" \
    --variant "keel pull off=--model {model} --kv-pull-min-tokens 0" \
    --only "exact (--model),keel pull off,sglang" \
    --out "$OUT/routers3_$W.jsonl" > "$OUT/routers3_$W.log" 2>&1
  echo "$W rc $? $(date -u)" >> "$OUT/env.txt"
  python3 ../../../bench/router_prefix_reprefills.py "$OUT/routers3_$W.jsonl" | cut -d'|' -f3-9,16-17
done
cat "$OUT/env.txt"
