#!/bin/bash
# Session 14, call 4 (948b577 against keel_old = 267609e). (A) Overhead, three interleaved rounds: one connection,
# 8 connections, 10k and 20k req/s open loop (4 x 64 connections), saturation. (B) Workload (c), --routers 2, this
# session's tree (replicas and routers), keel only (the sglang-router wheels did not fit the call's 64 MiB), REPEAT runs. (C) bench_router_index and
# bench_router_decision pinned to CPU 2.
set -o pipefail
cd "$(dirname "$0")"
tar -xJf stage.tar.xz
K=./b/src/cli/keel
mkdir -p "$OUT/dl"
{ date -u; uptime; nproc; sha256sum $K keel_old; } > "$OUT/env.txt"
timeout 250 python3 bench_router.py --build b --seconds 3 --warmup 0.5 --router-cpu 2 --other-cpus 4-15 --backend-threads 4 \
  --peak-procs 4 --peak-connections 16 --low-connections 1 --baseline-keel ./keel_old --baseline-upstream-threads 0 \
  --rate-procs 4 --rate-connections 64 --repeat 3 --no-decision --rates 10000,20000 > "$OUT/overhead.json" 2> "$OUT/overhead.err"
echo "A rc $? $(date -u)" >> "$OUT/env.txt"
python3 - "$OUT/overhead.json" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["load"]:
    n=r['name'].replace('keel router (cache_aware, char keys, upstream threads 0)','keel').replace('keel router (baseline) (cache_aware, char keys, upstream threads 0)','old')
    print(f"{n[:36]:36s} c={r.get('connections')} rate={r.get('rate'):6.0f} rps={r['rps']:.0f} cpu/req={r.get('cpu_us_per_req')} add={r.get('added_p50_us')}/{r.get('added_p99_us')} late={r.get('late')}")
PY
timeout $((520 - SECONDS)) python3 bench_router_prefix.py --keel $K --model ./smollm2-dummy --load-format dummy --threads 3 \
  --replica-cpus 0-2,3-5,6-8,9-11 --router-cpus 12-13 --client-cpus 14-15 --replica-view \
  --groups 16 --per-group 30 --zipf 1.2 --mid-burst 24 --arrivals poisson \
  --rate 20 --trace --repeat ${REPEAT:-3} --routers 2 --decision-logs "$OUT/dl" --only "exact (--model)" \
  --out "$OUT/routers2_c.jsonl" > "$OUT/routers2_c.log" 2>&1
echo "c rc $? $(date -u)" >> "$OUT/env.txt"
python3 - "$OUT" <<'PY'
import json,sys,collections
out=sys.argv[1]
try:
    for l in open(out+"/routers2_c.jsonl"):
        r=json.loads(l)
        fs=r.get("full_states") or []
        c=collections.Counter(tuple(x[1:]) for x in fs).most_common(2)
        print({k:r.get(k) for k in ("policy","repeat","hit_rate","ttft_p50_ms","ttft_p99_ms","full_max_over_min")}, c)
except Exception as e: print("c parse", e)
PY
tar -cJf "$OUT/decision_logs.tar.xz" -C "$OUT/dl" . && rm -rf "$OUT"/dl
for i in 1 2; do taskset -c 2 ./b/bench/bench_router/bench_router_index; done > "$OUT/index.jsonl"
taskset -c 2 ./b/bench/bench_router/bench_router_decision > "$OUT/decision.jsonl"
cat "$OUT/index.jsonl"; grep '"replicas": 64' "$OUT/decision.jsonl"
cat "$OUT/env.txt"; tail -n 3 "$OUT/routers2_c.log"
