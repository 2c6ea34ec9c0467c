#!/usr/bin/env bash
# keel serve --device cuda --load-format dummy on the Llama-3-8B shape (bench/cuda/llama3-8b, bf16,
# random weights; SmolLM2's tokenizer.json for text, ids it lacks decode to nothing), loaded by
# keel bench serve over HTTP:
# - throughput at concurrency 64 and 256, 1,024 input (1,024 words: the workload's words are one
#   SmolLM2 token each, as the reported usage shows) / 256 output tokens, ignore_eos, greedy;
# - the issue's anchor workload (part `anchor`, not run by default): 1,000 input / 1,000 output tokens at
#   concurrency 256 (256 requests: one wave), TensorRT-LLM's 17,744 output tok/s (FP8) figure's shape;
# - TTFT of a ~4,000-token prompt uncached (distinct prompts, one at a time) and with its prefix cached
#   (one shared 4,000-word system prompt, an 8-word question each; the first request fills the cache).
# usage: bench/cuda/serve_bench.sh KEEL_BINARY TOKENIZER_JSON OUT_DIR [c64 c256 ttft anchor]
# (KEEL_OVERLAP=0 in the environment: the server without overlap scheduling, for before/after.)
set -uo pipefail
KEEL=$1 TOKJ=$2 OUT=$3
PARTS="${4:-c64 c256 ttft}"
M="$OUT/llama3-8b"
mkdir -p "$M"
cp "$(dirname "$0")/llama3-8b/config.json" "$M/"
cp "$TOKJ" "$M/tokenizer.json"
PORT=18451
URL="http://127.0.0.1:$PORT"
"$KEEL" serve -m "$M" --load-format dummy --device cuda --port $PORT --max-running 256 --max-batch-tokens 8192 \
  --prefill-chunk 2048 --mem-fraction 0.85 >"$OUT/serve_8b.log" 2>&1 &
SERVE=$!
for _ in $(seq 240); do curl -sf "$URL/health" >/dev/null 2>&1 && break; sleep 0.5; done
grep -E "ready in|KV pool|captured" "$OUT/serve_8b.log"
bench() {  # name, then keel bench serve flags
  local name=$1; shift
  "$KEEL" bench serve --url "$URL" --endpoint completions --temperature 0 --extra-body '{"ignore_eos":true}' -q \
    -o "$OUT/$name.json" "$@" >"$OUT/$name.txt" 2>&1
  echo "== $name: $*"; cat "$OUT/$name.txt"
}
IO=(--input-words-min 1024 --input-words-max 1024 --output-tokens-min 256 --output-tokens-max 256)
[[ $PARTS == *c64* ]] && bench c64 -c 64 -n 192 "${IO[@]}" --seed 1
[[ $PARTS == *c256* ]] && bench c256 -c 256 -n 512 "${IO[@]}" --seed 2
[[ $PARTS == *anchor* ]] && bench anchor_c256 -c 256 -n 256 --input-words-min 1000 --input-words-max 1000 \
  --output-tokens-min 1000 --output-tokens-max 1000 --seed 5
if [[ $PARTS == *ttft* ]]; then
  bench ttft_uncached -c 1 -n 6 --input-words-min 4000 --input-words-max 4000 --output-tokens-min 4 \
    --output-tokens-max 4 --seed 3
  bench ttft_cached -c 1 -n 9 --workload shared-prefix --tenants 1 --prompts-per-tenant 1 --prefix-words 4000 \
    --question-words 8 --output-tokens-min 4 --output-tokens-max 4 --seed 4
fi
kill -TERM $SERVE; wait $SERVE
echo "re-captures after start-up: $(grep -c "captured again" "$OUT/serve_8b.log")"
grep -E "cuda steps" "$OUT/serve_8b.log" | tail -12
# With KEEL_CUDA_STEP_TIMES=1: steps, GPU time and GPU idle between steps per phase, summed over the run.
if grep -q "cuda steps" "$OUT/serve_8b.log"; then python3 "$(dirname "$0")/steps_summary.py" "$OUT/serve_8b.log"; fi
