#!/usr/bin/env bash
# Every GPU check and benchmark of the CUDA backend in one go, on a machine with an NVIDIA GPU:
# op tests against the CPU backend (sampling on the device against the host sampler among them),
# decode-step CUDA graphs against eager steps, compute-sanitizer memcheck + racecheck on them, whole-model
# parity with transformers (tiny random Llama/Qwen2/Qwen3), `keel generate` cpu vs cuda, `keel serve
# --device cuda` answering a completion, serve with device vs host sampling (same tokens), and the
# Llama-3-8B-shaped benchmark (dummy weights). Prints a short table last.
# Binaries come from $KEEL_GPU_BIN (default build/); logs go to $KEEL_GPU_OUT.
# KEEL_GPU_PARTS picks parts (default: ops graphs san hf serve bench); `servebench` adds the 8B
# `keel serve` load test (bench/cuda/serve_bench.sh, a few minutes); `smollm2` runs the real SmolLM2 GGUF
# ($KEEL_SMOLLM2) greedy through `keel generate` on cpu and cuda (tests/gpu/smollm2_cpu_vs_cuda.py);
# `grammar` times constrained vs free decoding on keel serve (bench/cuda/grammar_e2e.py): the 8B shape with
# the Llama 3 tokenizer ($KEEL_LLAMA3_TOKENIZER) and MaskBench schemas ($KEEL_GRAMMAR_SCHEMAS, a folder),
# and SmolLM2 too when $KEEL_SMOLLM2 is set.
#   KEEL_GPU_BIN=build scripts/gpu-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
BIN="${KEEL_GPU_BIN:-build}"
OUT="${KEEL_GPU_OUT:-/tmp/keel-gpu-check}"
PARTS=" ${KEEL_GPU_PARTS:-ops graphs san hf serve bench} "
want() { [[ $PARTS == *" $1 "* ]]; }
mkdir -p "$OUT"
declare -a SUMMARY
note() { SUMMARY+=("$(printf '%-28s %s' "$1" "$2")"); }
find_bin() { for p in "$BIN/$1" "$BIN/tests/gpu/$1" "$BIN/bench/cuda/$1" "$BIN/src/cli/$1"; do [[ -x $p ]] && { echo "$p"; return; }; done; echo "missing-$1"; }
OPS=$(find_bin keel_gpu_ops_tests); GRAPHS=$(find_bin keel_gpu_graph_tests); CHECK=$(find_bin keel_gpu_model_check); BENCH=$(find_bin keel_cuda_bench); KEEL=$(find_bin keel)
ATTN=$(find_bin keel_attn_bench); GEMV=$(find_bin keel_gemv_bench); PATTN=$(find_bin keel_prefill_attn_bench)
TOOLS=$(mktemp -d); ln -s "$(realpath "$CHECK")" "$TOOLS/keel_gpu_model_check"; ln -s "$(realpath "$KEEL")" "$TOOLS/keel"

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"

if want ops; then
  "$OPS" --gtest_brief=1 >"$OUT/ops.log" 2>&1; rc=$?
  note "op + sampling tests vs cpu" "$([[ $rc == 0 ]] && echo pass || echo FAIL) ($(grep -m1 'tests from .* ran' "$OUT/ops.log"))"
fi

if want graphs; then
  "$GRAPHS" --gtest_brief=1 >"$OUT/graphs.log" 2>&1; rc=$?
  note "graph steps vs eager" "$([[ $rc == 0 ]] && echo pass || echo FAIL) ($(grep -m1 'tests from .* ran' "$OUT/graphs.log"))"
fi

if want san; then
  SAN=compute-sanitizer; command -v $SAN >/dev/null || SAN=/usr/local/cuda/bin/compute-sanitizer
  # The CPU reference dominates the run time, not the sanitizer: the 8k-context cases and the large-vocabulary
  # sampling cases are left to the plain run.
  FILTER='-*DecodeLongContextsSplitKv*:*CachedPrefix*:*SampleRows.*/0:*SampleRows.*/1:*SampleRowsDistribution*:*TensorCorePrefillLong*'
  timeout 240 $SAN --tool memcheck --error-exitcode 3 "$OPS" --gtest_brief=1 --gtest_filter="$FILTER" >"$OUT/memcheck.log" 2>&1; rc=$?
  note "memcheck" "$([[ $rc == 0 ]] && echo clean || echo "FAIL rc=$rc") ($(grep -m1 'ERROR SUMMARY' "$OUT/memcheck.log"))"
  timeout 240 $SAN --tool racecheck --error-exitcode 3 "$OPS" --gtest_brief=1 --gtest_filter='*Attention*Prefill*:*AttentionBf16.DecodeKernel*:*RmsNorm*:*RowKernel*:*FusedGemv*:*Mixed*:*SampleRows.*/2:-*TensorCorePrefillLong*' >"$OUT/racecheck.log" 2>&1; rc=$?
  note "racecheck" "$([[ $rc == 0 ]] && echo clean || echo "FAIL rc=$rc") ($(grep -m1 'RACECHECK SUMMARY\|ERROR SUMMARY' "$OUT/racecheck.log"))"
fi

if want hf; then
  PYTHONUNBUFFERED=1 python3 tests/gpu/hf_parity.py "$TOOLS" "$OUT/models" "$PWD" >"$OUT/hf_parity.log" 2>&1; rc=$?
  note "hf parity + generate" "$([[ $rc == 0 ]] && echo pass || echo FAIL)"
fi

if want serve; then
  # keel serve --device cuda on the tiny Llama (SmolLM2 tokenizer), one completion through the API.
  PORT=18431
  "$KEEL" serve -m "$OUT/models/tiny_llama" --device cuda --port $PORT --mem-fraction 0.05 >"$OUT/serve.log" 2>&1 &
  SERVE=$!
  for _ in $(seq 60); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break; sleep 0.5; done
  curl -s "http://127.0.0.1:$PORT/v1/completions" -H 'Content-Type: application/json' \
    -d '{"model":"tiny_llama","prompt":"Hello there","max_tokens":16,"temperature":0}' >"$OUT/serve_reply.json" 2>&1
  kill -TERM $SERVE; wait $SERVE; src=$?
  note "serve --device cuda" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("pass", r["usage"])' "$OUT/serve_reply.json" 2>/dev/null || echo FAIL) exit $src"
  note "start-up graph capture" "$(grep -o 'captured .* ms' "$OUT/serve.log" || echo none)"
  # Device sampling vs the host sampler through the whole server (seeded requests of every kind).
  PYTHONUNBUFFERED=1 python3 tests/gpu/serve_sampling.py "$KEEL" "$OUT/models/tiny_llama" "$OUT" >"$OUT/serve_sampling.log" 2>&1; rc=$?
  note "serve: device vs host sampling" "$([[ $rc == 0 ]] && echo pass || echo FAIL) ($(grep -c '^pass' "$OUT/serve_sampling.log") requests equal)"
fi

if want smollm2; then
  # The real SmolLM2-135M-Instruct GGUF (path in $KEEL_SMOLLM2): greedy `keel generate` cpu vs cuda, both
  # --dtype f32 (the check; also keel serve cuda f32), then cuda bf16 vs cpu f32 (for reference).
  python3 tests/gpu/smollm2_cpu_vs_cuda.py "$KEEL" "${KEEL_SMOLLM2:-missing-model}" f32 f32 >"$OUT/smollm2.log" 2>&1; rc=$?
  note "smollm2 greedy cpu vs cuda f32" "$([[ $rc == 0 ]] && echo pass || echo FAIL) ($(grep -c '"same": true' "$OUT/smollm2.log") of 6 prompts equal)"
  python3 tests/gpu/smollm2_cpu_vs_cuda.py "$KEEL" "${KEEL_SMOLLM2:-missing-model}" bf16 f32 >"$OUT/smollm2_bf16.log" 2>&1
  note "  (reference: cuda bf16)" "$(grep -c '"same": true' "$OUT/smollm2_bf16.log") of 6 prompts equal"
fi

if want bench; then
  # Decode phases eager and as graph replays; KEEL_CUDA_STEP_TIMES: GPU idle between steps (logits to the
  # host vs sampled on the device), capture times.
  KEEL_CUDA_STEP_TIMES=1 "$BENCH" bench/cuda/llama3-8b 512 8 2048 64 >"$OUT/bench.log" 2>&1; rc=$?
  note "bench llama3-8b" "rc=$rc"
  # Where the time goes: per-op GPU time for each phase on its own (KEEL_CUDA_PROFILE).
  for ph in d1 pf dB; do
    KEEL_CUDA_PROFILE=1 "$BENCH" bench/cuda/llama3-8b 512 8 2048 64 $ph >>"$OUT/profile.log" 2>&1
  done
  # Decode attention alone: GB/s of K/V read at batch 1/64/256 x context 1k/4k/32k (decode vs CUDA-core
  # kernel), then 8B decode steps at batch 256 with ~1,150 tokens of context (the serve workload's).
  "$ATTN" >"$OUT/attn_bench.log" 2>&1; rc=$?
  note "attention bench" "rc=$rc"
  # Prefill attention alone on the 8B shapes: tensor-core block sizes, mixed batches (device time per call).
  "$PATTN" >"$OUT/prefill_attn_bench.log" 2>&1; rc=$?
  note "prefill attention bench" "rc=$rc"
  # Prefill-sized norms, SiLU-mul and the layer's GEMMs alone (8,192 / 16,384 tokens), cuBLASLt's candidates too
  # (linked to cuBLASLt, which the GPU machine keeps in /usr/local/cuda/lib64).
  LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} "$(find_bin keel_prefill_ops_bench)" lt >"$OUT/prefill_ops_bench.log" 2>&1; rc=$?
  note "prefill ops bench" "rc=$rc"
  # The decode GEMV alone per 8B projection shape at 1, 2, 4, 8 tokens: TB/s of weights.
  "$GEMV" >"$OUT/gemv_bench.log" 2>&1; rc=$?
  note "gemv bench" "rc=$rc"
  # The device sampler alone: top-p's compact path on and off, same tokens required (rc 1 otherwise).
  "$(find_bin keel_sample_bench)" >"$OUT/sample_bench.log" 2>&1; rc=$?
  note "sample bench" "$([[ $rc == 0 ]] && echo "pass (same tokens)" || echo "FAIL rc=$rc")"
  KEEL_CUDA_STEP_TIMES=1 "$BENCH" bench/cuda/llama3-8b 512 8 2048 256 dS 1150 >"$OUT/bench_b256.log" 2>&1; rc=$?
  note "bench llama3-8b bs 256" "rc=$rc"
  # Small decode batches (2, 8): matmuls of 2-8 tokens through cuBLAS (the default) vs the GEMV kernel.
  for bs in 2 8; do
    for g in default 8; do
      echo "== decode bs $bs, KEEL_CUDA_GEMV_MAX_TOKENS=$g" >>"$OUT/bench_small.log"
      if [[ $g == default ]]; then "$BENCH" bench/cuda/llama3-8b 512 8 2048 $bs dB >>"$OUT/bench_small.log" 2>&1
      else KEEL_CUDA_GEMV_MAX_TOKENS=$g "$BENCH" bench/cuda/llama3-8b 512 8 2048 $bs dB >>"$OUT/bench_small.log" 2>&1; fi
    done
  done
  note "bench small decode batches" "rc=$?"
fi

if want grammar; then
  SCHEMAS=("${KEEL_GRAMMAR_SCHEMAS:-missing-schemas}"/*.json)
  python3 bench/cuda/grammar_e2e.py --keel "$KEEL" --model bench/cuda/llama3-8b --tokenizer \
    "${KEEL_LLAMA3_TOKENIZER:-missing-tokenizer}" --schemas "${SCHEMAS[@]}" --concurrency 1 16 64 --max-tokens 128 \
    --out "$OUT/grammar_8b" -- --max-batch-tokens 8192 >"$OUT/grammar_e2e.log" 2>&1; rc=$?
  note "grammar e2e 8B (128k vocab)" "rc=$rc $(grep -o 'worst .*' "$OUT/grammar_e2e.log")"
  if [[ -n ${KEEL_SMOLLM2:-} ]]; then
    python3 bench/cuda/grammar_e2e.py --keel "$KEEL" --model "$KEEL_SMOLLM2" --schemas "${SCHEMAS[@]}" \
      --concurrency 1 16 --max-tokens 128 --out "$OUT/grammar_smollm2" >>"$OUT/grammar_e2e.log" 2>&1; rc=$?
    note "grammar e2e SmolLM2 (49k)" "rc=$rc $(grep -o 'worst .*' "$OUT/grammar_e2e.log" | tail -1)"
  fi
fi

if want servebench; then
  # KEEL_SERVE_PARTS: serve_bench.sh's parts (default c64 c256 ttft; `anchor` adds 1,000 / 1,000 at c256).
  KEEL_CUDA_STEP_TIMES=1 bench/cuda/serve_bench.sh "$KEEL" "$OUT/models/tiny_llama/tokenizer.json" "$OUT/serve_bench" \
    "${KEEL_SERVE_PARTS:-c64 c256 ttft}" >"$OUT/serve_bench.log" 2>&1; rc=$?
  note "serve bench llama3-8b" "rc=$rc"
fi

echo; echo "==== keel GPU check ($(head -1 "$OUT/gpu.txt"), $(date -u +%F)) ===="
[[ -f $OUT/ops.log ]] && grep -E "FAILED|Failure|error" "$OUT/ops.log" | head -20
[[ -f $OUT/hf_parity.log ]] && cut -c1-400 "$OUT/hf_parity.log"
[[ -f $OUT/serve_sampling.log ]] && cut -c1-300 "$OUT/serve_sampling.log"
[[ -f $OUT/smollm2.log ]] && cut -c1-400 "$OUT/smollm2.log"
[[ -f $OUT/smollm2_bf16.log ]] && cut -c1-300 "$OUT/smollm2_bf16.log"
[[ -f $OUT/bench.log ]] && cat "$OUT/bench.log"
[[ -f $OUT/profile.log ]] && cat "$OUT/profile.log"
[[ -f $OUT/attn_bench.log ]] && cat "$OUT/attn_bench.log"
[[ -f $OUT/prefill_attn_bench.log ]] && cat "$OUT/prefill_attn_bench.log"
[[ -f $OUT/prefill_ops_bench.log ]] && cat "$OUT/prefill_ops_bench.log"
[[ -f $OUT/gemv_bench.log ]] && cat "$OUT/gemv_bench.log"
[[ -f $OUT/bench_b256.log ]] && cat "$OUT/bench_b256.log"
[[ -f $OUT/bench_small.log ]] && cat "$OUT/bench_small.log"
[[ -f $OUT/serve_bench.log ]] && cat "$OUT/serve_bench.log"
[[ -f $OUT/grammar_e2e.log ]] && cat "$OUT/grammar_e2e.log"
printf '%s\n' "${SUMMARY[@]}"
