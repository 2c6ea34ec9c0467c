#!/bin/bash
# Session 15, call 5 (2a91e94: sends at once, an io_context per thread in routers and replicas, buffered access log): workload (c), --routers 2, keel exact vs sglang-router 0.3.2 in the same call,
# REPEAT runs each, alternating (call 4 ran keel alone: sglang-router's wheels and call 4's binaries together were
# over the call's 64 MiB).
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
K=./b/src/cli/keel
{ date -u; uptime; nproc; sha256sum $K; } > "$OUT/env.txt"
timeout 330 python3 ../../../bench/bench_router_prefix.py --keel $K --model ./smollm2-dummy --load-format dummy --threads 3 \
  --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
  --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
  --rate 20 --trace --repeat ${REPEAT:-3} --routers 2 --only "exact (--model),sglang" \
  --out "$OUT/routers2_c.jsonl" > "$OUT/routers2_c.log" 2>&1
echo "c rc $? $(date -u)" >> "$OUT/env.txt"
python3 - "$OUT" <<'PY'
import json,sys,collections
out=sys.argv[1]
for l in open(out+"/routers2_c.jsonl"):
    r=json.loads(l)
    if "summary" in r:
        print({k: r.get(k) for k in ("summary","hit_rate_range","ttft_p99_ms_range","full_max_over_min_range")}); continue
    fs=r.get("full_states") or []
    c=collections.Counter(tuple(x[1:]) for x in fs).most_common(2)
    print({k:r.get(k) for k in ("policy","repeat","hit_rate","ttft_p50_ms","ttft_p99_ms","full_max_over_min")}, c)
PY
cat "$OUT/env.txt"
