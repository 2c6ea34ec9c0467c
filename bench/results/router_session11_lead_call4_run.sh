#!/bin/bash
# Session 11, lead's fourth call (c2ea011: no warm queue past the bound while the other instances may be deciding the group unseen): workload (c),
# --routers 2, keel exact with peers (the bench's default) vs sglang-router 0.3.2, three runs each, alternating.
# Staged: .device/router/stage13/{b/src/cli/keel,bench_router_prefix.py,smollm2-dummy,this}, ../sgr-site.tar.xz
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
K=./b/src/cli/keel
mkdir -p "$OUT/dl"
{ date -u; uptime; nproc; sha256sum $K; } > "$OUT/env.txt"
python3 bench_router_prefix.py --keel $K --model ./smollm2-dummy --load-format dummy --threads 3 \
  --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
  --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
  --rate 20 --trace --repeat 3 --routers 2 --decision-logs "$OUT/dl" --only "exact (--model),sglang" \
  --out "$OUT/routers2_c.jsonl" > "$OUT/routers2_c.log" 2>&1
echo "c rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
python3 - "$OUT" <<'PY'
import json,sys,collections
for l in open(sys.argv[1]+"/routers2_c.jsonl"):
    r=json.loads(l)
    fs=r.get("full_states") or []
    c=collections.Counter(tuple(x[1:]) for x in fs).most_common(2)
    print({k:r.get(k) for k in ("policy","repeat","hit_rate","ttft_p50_ms","ttft_p99_ms","full_max_over_min","peer_synced")}, c)
PY
cat "$OUT/env.txt"
