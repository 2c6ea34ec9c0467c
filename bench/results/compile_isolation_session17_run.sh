#!/bin/bash
# Session 17: does a grammar compile hold up other requests? keel serve before (Session 16's tree: the io
# thread compiles) and after (compile threads), on the device host's CPUs, dummy SmolLM2 weights.
set -o pipefail
cd "$(dirname "$0")"
tar -xJf stage.tar.xz
{ date -u; uptime; nproc; sha256sum keel-old keel-new; } > "$OUT/env.txt"
B=../../../bench/bench_compile_isolation.py
for round in 1 2; do
  for mt in 1 4; do
    timeout 200 python3 $B --model ./smollm2-dummy --model-threads $mt --props 1000 --schemas 5 --compilers 2 \
      --keel "./keel-old --load-format dummy" --keel "./keel-new --load-format dummy" \
      --keel "./keel-new --load-format dummy --grammar-threads 1" >> "$OUT/iso_mt${mt}.jsonl" 2>> "$OUT/err.txt"
    echo "round $round mt $mt rc $?" >> "$OUT/env.txt"
  done
done
timeout 200 python3 $B --model ./smollm2-dummy --model-threads 4 --props 1000 --schemas 4 --compilers 6 \
  --keel "./keel-old --load-format dummy" --keel "./keel-new --load-format dummy" \
  --keel "./keel-new --load-format dummy --grammar-threads 6" >> "$OUT/iso_c6.jsonl" 2>> "$OUT/err.txt"
echo "c6 rc $? $(date -u)" >> "$OUT/env.txt"
cat "$OUT"/iso_*.jsonl | python3 -c "
import json,sys
for l in sys.stdin:
    r=json.loads(l); p=r['probe']; c=r.get('compile',{})
    print(r['keel'][2:22], r['phase'], p.get('n'), p.get('p50_ms'), p.get('max_ms'), c.get('p50_ms'), c.get('max_ms'), r.get('window_s'))
"
