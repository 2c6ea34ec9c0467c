#!/bin/bash
# Session 13, call 1 (4772ef1 + the load generator's open loop). (1) Router overhead with a peer
# subscribed, without one (the same binary as --baseline-keel) and sglang-router 0.3.2: closed loop at 1 and 8
# connections, saturated, and open loop at 10k and 20k req/s (4 generators x 16 connections). (2) Workload (c),
# --routers 2: keel exact vs keel with --near-burst-window-ms 2 vs sglang-router, REPEAT runs each, alternating.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
K=./b/src/cli/keel
mkdir -p "$OUT/dl"
{ date -u; uptime; nproc; sha256sum $K; } > "$OUT/env.txt"
timeout 290 python3 bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu 2 --other-cpus 4-15 --backend-threads 4 \
  --peak-procs 4 --peak-connections 16 --low-connections 1 --peer-feed --baseline-keel $K \
  --baseline-upstream-threads 0 --sglang-router python3 --rates 10000,20000 --rate-procs 4 --rate-connections 16 \
  --repeat 2 > "$OUT/overhead.json" 2> "$OUT/overhead.err"
echo "overhead rc $? $(date -u)" >> "$OUT/env.txt"
python3 - "$OUT" <<'PY'
import json,sys
try:
    d=json.load(open(sys.argv[1]+"/overhead.json"))
    for row in d["load"]:
        print({k: row.get(k) for k in ("name","rps","p50_us","p99_us","added_p50_us","added_p99_us","cpu_us_per_req","late")})
    for row in d["decision"]: print(row)
except Exception as e: print("overhead parse", e)
PY
timeout $((590 - SECONDS)) python3 bench_router_prefix.py --keel $K --model ./smollm2-dummy --load-format dummy --threads 3 \
  --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
  --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
  --rate 20 --trace --repeat ${REPEAT:-2} --routers 2 --decision-logs "$OUT/dl" \
  --variant "window 2 ms=--model {model} --near-burst-window-ms 2" --only "exact (--model),window,sglang" \
  --out "$OUT/routers2_c.jsonl" > "$OUT/routers2_c.log" 2>&1
echo "c rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
python3 - "$OUT" <<'PY'
import json,sys,collections
out=sys.argv[1]
for l in open(out+"/routers2_c.jsonl"):
    r=json.loads(l)
    fs=r.get("full_states") or []
    c=collections.Counter(tuple(x[1:]) for x in fs).most_common(2)
    print({k:r.get(k) for k in ("policy","repeat","hit_rate","ttft_p50_ms","ttft_p99_ms","full_max_over_min")}, c)
PY
tar -cJf "$OUT/decision_logs.tar.xz" -C "$OUT/dl" . && rm -f "$OUT"/dl/*.jsonl
cat "$OUT/env.txt"; tail -3 "$OUT/overhead.err"
