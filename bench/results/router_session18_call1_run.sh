#!/bin/bash
# Session 18, one call (8dd9ac1): workloads (b) (--kv-tokens 768, two runs a row) and (a) (one run a
# row), one router: keel at 8dd9ac1 (a running request's prefill stays in free cache until a poll sent
# after it finished) and sglang-router 0.3.2, alternating (1e5bc62 for comparison: Session 16, call 1).
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
{ date -u; uptime; nproc; sha256sum keel-new; } > "$OUT/env.txt"
for W in b a; do
  extra=(); repeat=2; limit=220
  [[ "$W" == b ]] && extra=(--kv-tokens 768) && repeat=3 && limit=320
  timeout $limit python3 ../../../bench/bench_router_prefix.py --keel ./keel-new \
    --model ./smollm2-dummy --load-format dummy --threads 3 \
    --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
    --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
    --rate 20 --trace --repeat $repeat "${extra[@]}" --only "exact (--model),sglang" \
    --out "$OUT/routers1_$W.jsonl" > "$OUT/routers1_$W.log" 2>&1
  echo "$W rc $? $(date -u)" >> "$OUT/env.txt"
  python3 - "$OUT" "routers1_$W.jsonl" <<'PY'
import json,sys
out=sys.argv[1]
for l in open(out+"/"+sys.argv[2]):
    r=json.loads(l)
    if "summary" in r:
        print({k: r.get(k) for k in ("summary","hit_rate_range","ttft_p99_ms_range","full_max_over_min_range")}); continue
    t=r.get("trace") or {}
    print({k:r.get(k) for k in ("policy","repeat","hit_rate","ttft_p50_ms","ttft_p99_ms","full_max_over_min","req_per_s")}, {k:t.get(k) for k in ("cold_per_replica","groups_per_replica","warm_behind_cold")})
PY
done
cat "$OUT/env.txt"
