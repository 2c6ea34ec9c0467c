#!/bin/bash
# Session 19 (KV pulls): one workload per call, W=b (--kv-tokens 768, cache pressure) or W=a (skew), two
# runs a row: keel with KV pulls (the default: --kv-pull-min-tokens 64, decisions unaware of pulls),
# keel with pulls weighed in the decisions (--kv-pull-cost 0.1), keel without pulls
# (--kv-pull-min-tokens 0: the router of Session 18) and sglang-router 0.3.2, interleaved.
set -o pipefail
cd "$(dirname "$0")"
W=${W:-b}
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
{ date -u; uptime; nproc; sha256sum keel-new; } > "$OUT/env.txt"
extra=(); limit=560
[[ "$W" == b ]] && extra=(--kv-tokens 768)
timeout $limit python3 ../../../bench/bench_router_prefix.py --keel ./keel-new \
  --model ./smollm2-dummy --load-format dummy --threads 3 \
  --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
  --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
  --rate 20 --trace --repeat ${REPEAT:-2} "${extra[@]}" \
  --variant "keel pull cost 0.1=--model {model} --kv-pull-cost 0.1" \
  --variant "keel pull off=--model {model} --kv-pull-min-tokens 0" \
  --only "exact (--model),keel pull cost,keel pull off,sglang" \
  --out "$OUT/routers_$W.jsonl" > "$OUT/routers_$W.log" 2>&1
echo "$W rc $? $(date -u)" >> "$OUT/env.txt"
python3 - "$OUT" "routers_$W.jsonl" <<'PY'
import json,sys
out=sys.argv[1]
for l in open(out+"/"+sys.argv[2]):
    r=json.loads(l)
    if "summary" in r:
        print({k: r.get(k) for k in ("summary","hit_rate_range","hit_rate_without_pulled_range","ttft_p99_ms_range","full_max_over_min_range")}); continue
    t=r.get("trace") or {}
    print({k:r.get(k) for k in ("policy","repeat","hit_rate","hit_rate_without_pulled","pulled_tokens","pulls","ttft_p50_ms","ttft_p99_ms","full_max_over_min","req_per_s")}, {k:t.get(k) for k in ("cold_per_replica","warm_behind_cold")})
PY
cat "$OUT/env.txt"
