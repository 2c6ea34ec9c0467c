#!/bin/bash
# Session 12, call 4 (3730a73, same binary as calls 2-3; workload (c) only, keel vs sglang-router: a route event is flushed at once on the deciding thread, completions posted; each decision first drains the peer links; free caches within 1/2
# tie for several instances; the bench's routers on keel's default --upstream-threads 0).
# Workload (c), --routers 2: keel exact with peers vs sglang-router 0.3.2, six runs each, alternating; decision logs
# and the feed lag per keel run from them. More runs of call 2's pair.
set -o pipefail
cd "$(dirname "$0")"
mkdir -p /tmp/sgr && tar -xJf ../sgr-site.tar.xz -C /tmp/sgr && export PYTHONPATH=/tmp/sgr/sgr-site
tar -xJf stage.tar.xz
K=./b/src/cli/keel
mkdir -p "$OUT/dl"
{ date -u; uptime; nproc; sha256sum $K keel_before; } > "$OUT/env.txt"
python3 bench_router_prefix.py --keel $K --model ./smollm2-dummy --load-format dummy --threads 3 \
  --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
  --sglang-router python3 --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
  --rate 20 --trace --repeat ${REPEAT:-5} --routers 2 --decision-logs "$OUT/dl" --only "exact (--model),sglang" \
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
try:
    for row in json.load(open(out+"/overhead.json"))["load"]:
        print({k: row.get(k) for k in ("name","rps","p50_us","p99_us","cpu_us_per_req","req_per_cpu_s")})
except Exception as e: print("overhead parse", e)
PY
tar -cJf "$OUT/decision_logs.tar.xz" -C "$OUT/dl" . && rm -f "$OUT"/dl/*.jsonl
cat "$OUT/env.txt"; tail -3 "$OUT/overhead.err"
