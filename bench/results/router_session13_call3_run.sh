#!/bin/bash
# Session 13, call 3 (4772ef1, the same binary as call 1). (1) Overhead: an open-loop rate sweep (5k, 10k, 15k, 20k req/s;
# 4 generators x 16 connections) for keel with a peer subscribed, keel without one (the same binary as
# --baseline-keel) and sglang-router 0.3.2, plus the closed-loop rows; two rounds. (2) Workload (c), --routers 2:
# keel exact vs sglang-router, REPEAT runs each, alternating, with decision logs and the feed lag.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
K=./b/src/cli/keel
mkdir -p "$OUT/dl"
{ date -u; uptime; nproc; sha256sum $K; } > "$OUT/env.txt"
timeout 330 python3 bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu 2 --other-cpus 4-15 --backend-threads 4 \
  --peak-procs 4 --peak-connections 16 --low-connections 1 --peer-feed \
  --baseline-keel $K --baseline-upstream-threads 0 --sglang-router python3 --rates 5000,10000,15000,20000 --rate-procs 4 \
  --rate-connections 16 --repeat 2 --no-decision > "$OUT/overhead.json" 2> "$OUT/overhead.err"
echo "overhead rc $? $(date -u)" >> "$OUT/env.txt"
python3 - "$OUT" <<'PY'
import json,sys
try:
    d=json.load(open(sys.argv[1]+"/overhead.json"))
    for row in d["load"]:
        print({k: row.get(k) for k in ("name","rps","p50_us","p99_us","added_p50_us","added_p99_us","cpu_us_per_req","late")})
except Exception as e: print("overhead parse", e)
PY
timeout $((585 - SECONDS)) python3 bench_router_prefix.py --keel $K --model ./smollm2-dummy --load-format dummy --threads 3 \
  --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
  --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
  --rate 20 --trace --repeat ${REPEAT:-2} --routers 2 --decision-logs "$OUT/dl" --only "exact (--model),sglang" \
  --out "$OUT/routers2_c.jsonl" > "$OUT/routers2_c.log" 2>&1
echo "c rc $? $(date -u)" >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
python3 - "$OUT" <<'PY'
import json,sys,collections,subprocess
out=sys.argv[1]
for l in open(out+"/routers2_c.jsonl"):
    r=json.loads(l)
    fs=r.get("full_states") or []
    c=collections.Counter(tuple(x[1:]) for x in fs).most_common(2)
    print({k:r.get(k) for k in ("policy","repeat","hit_rate","ttft_p50_ms","ttft_p99_ms","full_max_over_min")}, c)
    logs=r.get("decision_logs")
    if logs and r.get("burst_window_us"):
        w=",".join(str(x) for x in r["burst_window_us"])
        lag=subprocess.run(["python3","router_decision_lag.py",*(out+"/dl/"+f for f in logs),"--window",w],capture_output=True,text=True).stdout
        open(out+"/dl/lag_"+logs[0].split("_")[0]+".txt","w").write(lag)
        print("  ", lag.strip().splitlines()[-1] if lag.strip() else "no lag output")
PY
tar -cJf "$OUT/decision_logs.tar.xz" -C "$OUT/dl" . && rm -f "$OUT"/dl/*.jsonl
cat "$OUT/env.txt"; tail -3 "$OUT/overhead.err"
