#!/bin/bash
# Session 9 second round: keel new default (relative burst bar), keel old bar (--burst-rate-factor 0),
# sglang-router 0.3.2; two runs each, alternating; (a) the skew workload, (b) it under cache pressure.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
common=(--keel ./keel --model smollm2-dummy --load-format dummy --threads 3 --replica-cpus 0-2,3-5,6-8,9-11
        --router-cpus 12-13 --client-cpus 14-15 --replica-view --sglang-router python3 --groups 16 --per-group 30
        --zipf 1.2 --mid-burst 24 --arrivals poisson --rate 20 --trace --repeat 2
        --variant "keel old bar=--model {model} --burst-rate-factor 0" --only "exact (--model),old bar,sglang")
{ date -u; uptime; nproc; ./keel --version 2>&1 | head -1; sha256sum keel; } > "$OUT/env.txt"
python3 bench_router_prefix.py "${common[@]}" --out "$OUT/skew.jsonl" > "$OUT/skew.log" 2>&1
echo "skew rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
python3 bench_router_prefix.py "${common[@]}" --kv-tokens 768 --out "$OUT/pressure.jsonl" > "$OUT/pressure.log" 2>&1
echo "pressure rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
tail -c 3000 "$OUT/skew.log"; tail -c 3000 "$OUT/pressure.log"; cat "$OUT/env.txt"
