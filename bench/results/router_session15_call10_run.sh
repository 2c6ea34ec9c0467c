#!/bin/bash
# Session 15, call 10: where a 4-thread router's extra CPU per request goes. Flat perf profiles (if perf is
# installed) of keel router --http-threads 4 on CPUs 0-3 and --http-threads 1 on CPU 2, saturated by 6 load
# generators x 32 connections (CPUs 10-15), backend 6 threads (CPUs 4-9).
cd "$(dirname "$0")"
tar -xJf stage.tar.xz
B=./b/bench/bench_router
BODY='{"model": "m", "messages": [{"role": "system", "content": "You are a helpful assistant that answers briefly. You are a helpful assistant that answers briefly. You are a helpful assistant that answers briefly. "}, {"role": "user", "content": "What is the capital of France?"}], "max_tokens": 1}'
{ date -u; uptime; which perf || echo "no perf"; } > "$OUT/env.txt"
taskset -c 4-9 $B/bench_router_backend 18101 6 > /dev/null 2>&1 &
BE=$!
sleep 0.5
for cfg in 4:0-3 1:2; do
  n=${cfg%%:*}; cpus=${cfg#*:}
  taskset -c $cpus ./b/src/cli/keel router --workers http://127.0.0.1:18101 --port 18100 --no-access-log --http-threads $n > /dev/null 2>&1 &
  RP=$!
  sleep 1.5
  for i in 1 2 3 4 5 6; do taskset -c 10-15 $B/bench_router_load 127.0.0.1 18100 /v1/chat/completions "$BODY" 32 7 > "$OUT/load_${n}_$i.json" & done
  sleep 2
  read u1 s1 < <(awk '{print $14, $15}' /proc/$RP/stat)
  if command -v perf > /dev/null; then
    perf record -F 1999 -p $RP -o /tmp/perf_$n.data -- sleep 3 > /dev/null 2>&1
    perf report -i /tmp/perf_$n.data --no-children --sort sym --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -45 > "$OUT/perf_$n.txt"
    perf report -i /tmp/perf_$n.data --no-children --sort dso --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -10 >> "$OUT/perf_$n.txt"
  else
    sleep 3
  fi
  read u2 s2 < <(awk '{print $14, $15}' /proc/$RP/stat)
  wait $(jobs -p | grep -v "^$BE$" | grep -v "^$RP$") 2>/dev/null
  echo "threads $n cpu ticks user $((u2-u1)) sys $((s2-s1))" >> "$OUT/env.txt"
  kill $RP; wait $RP 2>/dev/null
  python3 -c "
import json,glob
rs=[json.load(open(f)) for f in glob.glob('$OUT/load_${n}_*.json')]
print('threads $n rps', round(sum(r['rps'] for r in rs)), 'p50', max(r['p50_us'] for r in rs))" >> "$OUT/env.txt"
done
kill $BE
cat "$OUT/env.txt"; for n in 4 1; do echo "== perf threads $n"; head -45 "$OUT/perf_$n.txt" 2>/dev/null; done
