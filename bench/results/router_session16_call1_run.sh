#!/bin/bash
# Session 16, call 1 (ff97f50): workload (b) (--kv-tokens 768), one router, keel default (spill factor 3,
# slack 12) against --spill-factor 6, --spill-factor 6 --spill-slack 1000, and sglang-router 0.3.2, REPEAT runs each, alternating.
set -o pipefail
cd "$(dirname "$0")"
W="${W:-b}"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
K=./b/src/cli/keel
extra=(); routers=1
[[ "$W" == b ]] && extra=(--kv-tokens 768)
[[ "$W" == c ]] && routers=2
{ date -u; uptime; nproc; sha256sum $K; } > "$OUT/env.txt"
timeout ${LIMIT:-560} python3 ../../../bench/bench_router_prefix.py --keel $K --model ./smollm2-dummy --load-format dummy --threads 3 \
  --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
  --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
  --rate 20 --trace --repeat ${REPEAT:-2} --routers $routers "${extra[@]}" \
  --variant "keel F6=--model {model} --spill-factor 6" \
  --variant "keel F6 slack1000=--model {model} --spill-factor 6 --spill-slack 1000" \
  --only "${ONLY:-exact (--model),F6,sglang}" \
  --out "$OUT/routers${routers}_$W.jsonl" > "$OUT/routers${routers}_$W.log" 2>&1
echo "$W rc $? $(date -u)" >> "$OUT/env.txt"
python3 - "$OUT" "routers${routers}_$W.jsonl" <<'PY'
import json,sys,collections
out=sys.argv[1]
for l in open(out+"/"+sys.argv[2]):
    r=json.loads(l)
    if "summary" in r:
        print({k: r.get(k) for k in ("summary","hit_rate_range","ttft_p99_ms_range","full_max_over_min_range")}); continue
    t=r.get("trace") or {}
    print({k:r.get(k) for k in ("policy","repeat","hit_rate","ttft_p50_ms","ttft_p99_ms","full_max_over_min","req_per_s")}, {k:t.get(k) for k in ("cold_per_replica","groups_per_replica","warm_behind_cold")})
PY
cat "$OUT/env.txt"
