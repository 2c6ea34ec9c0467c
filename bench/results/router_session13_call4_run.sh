#!/bin/bash
# Session 13, call 4 (4772ef1, the same binary as calls 1 and 3). Workload (c) only, --routers 2: keel exact (default)
# vs keel with --burst-rate-factor 3 --near-burst-window-ms 2 (the hot group's Poisson clumps and Poisson pairs no
# longer count as bursts: call 3's decision logs show its three early copies made by those) vs sglang-router 0.3.2,
# REPEAT runs each, alternating, with decision logs and the feed lag.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
K=./b/src/cli/keel
mkdir -p "$OUT/dl"
{ date -u; uptime; nproc; sha256sum $K; } > "$OUT/env.txt"
timeout $((585 - SECONDS)) python3 bench_router_prefix.py --keel $K --model ./smollm2-dummy --load-format dummy --threads 3 \
  --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
  --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
  --rate 20 --trace --repeat ${REPEAT:-2} --routers 2 --decision-logs "$OUT/dl" --variant "rate3 window2=--model {model} --burst-rate-factor 3 --near-burst-window-ms 2" --only "exact (--model),rate3,sglang" \
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
cat "$OUT/env.txt"
