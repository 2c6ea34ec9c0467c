#!/bin/bash
# Session 19, fourth call (2ac8b59: hinted requests also wait for a pull of their prefix already
# running): more runs of the issue's comparison, keel (KV pulls, the default) against sglang-router
# 0.3.2, interleaved: workload (a) three runs a row, then (b) (--kv-tokens 768) two.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
{ date -u; uptime; nproc; sha256sum keel-new; } > "$OUT/env.txt"
for W in a b; do
  extra=(); repeat=3; limit=250
  [[ "$W" == b ]] && extra=(--kv-tokens 768) && repeat=2 && limit=230
  timeout $limit python3 ../../../bench/bench_router_prefix.py --keel ./keel-new \
    --model ./smollm2-dummy --load-format dummy --threads 3 \
    --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
    --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
    --rate 20 --trace --repeat $repeat "${extra[@]}" --only "exact (--model),sglang" \
    --out "$OUT/routers4_$W.jsonl" > "$OUT/routers4_$W.log" 2>&1
  echo "$W rc $? $(date -u)" >> "$OUT/env.txt"
  python3 ../../../bench/router_prefix_reprefills.py "$OUT/routers4_$W.jsonl" | cut -d'|' -f3-9,16-17
done
cat "$OUT/env.txt"
