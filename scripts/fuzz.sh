#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a while from seeds
# derived from real files. Usage:
#   scripts/fuzz.sh [seconds=60] [target ... | all]  (default targets: gguf_fuzz safetensors_fuzz)
# Env: BUILD (default build-fuzz), JOBS (default 2), KEEL_CACHE_DIR (default ~/.cache/keel),
#      FUZZ_BIN_DIR (run prebuilt targets from this folder and skip the build), FUZZ_SEED (libFuzzer's
#      -seed; CI sets it so a failure can be replayed).
# Seeds: gguf_fuzz gets the first KB of two llama.cpp vocab GGUFs (v2 and v3) and a small valid
# GGUF built by gguf-py from SmolLM2's real metadata and tensor rows; safetensors_fuzz gets the
# golden files written by the safetensors package; peer_feed_fuzz a peer feed answer with every event
# kind; http_server_fuzz six client requests (whole, in pieces, pipelined, 100-continue, chunked);
# router_body_fuzz four request bodies; router_config_fuzz a tenants file, a state file, two URLs and
# a replica's metrics. Other targets start from an empty corpus.
# Exit status is non-zero if any target finds a crash, leak or timeout (artifacts in $BUILD/fuzz).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SECONDS_PER_TARGET="${1:-60}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(gguf_fuzz safetensors_fuzz)
if [ "${TARGETS[*]}" = all ]; then
  TARGETS=()
  for f in "$ROOT"/tests/fuzz/*_fuzz.cc; do TARGETS+=("$(basename "$f" .cc)"); done
fi
BUILD="${BUILD:-$ROOT/build-fuzz}"
CACHE="${KEEL_CACHE_DIR:-$HOME/.cache/keel}"
WORK="$BUILD/fuzz"

BIN="${FUZZ_BIN_DIR:-$BUILD/tests/fuzz}"
if [ -z "${FUZZ_BIN_DIR:-}" ]; then
  if [ ! -f "$BUILD/build.ninja" ]; then
    CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DKEEL_FUZZ=ON -DKEEL_TESTS=OFF >/dev/null
  fi
  ninja -C "$BUILD" -j"${JOBS:-2}" "${TARGETS[@]}"
fi

seeds_gguf_fuzz() {
  local out="$1" vocab="$CACHE/testdata/llamacpp/vocab" model="$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf"
  for f in "$vocab/ggml-vocab-llama-spm.gguf" "$vocab/ggml-vocab-aquila.gguf" "$model"; do
    [ -f "$f" ] || { echo "missing $f: run scripts/fetch_model.sh and scripts/fetch_test_data.sh" >&2; exit 1; }
  done
  head -c 1024 "$vocab/ggml-vocab-llama-spm.gguf" >"$out/vocab_spm_v3_1k.gguf"
  head -c 1024 "$vocab/ggml-vocab-aquila.gguf" >"$out/vocab_aquila_v2_1k.gguf"
  python3 - "$model" "$out/smollm2_mini.gguf" <<'PY'
import sys
import numpy as np
import gguf
src, dst = sys.argv[1], sys.argv[2]
r = gguf.GGUFReader(src)
w = gguf.GGUFWriter(dst, "llama")
f = r.fields
w.add_string("general.name", bytes(f["general.name"].parts[-1]).decode())
w.add_uint32("llama.embedding_length", int(f["llama.embedding_length"].parts[-1][0]))
w.add_float32("llama.rope.freq_base", float(f["llama.rope.freq_base"].parts[-1][0]))
w.add_bool("tokenizer.ggml.add_bos_token", bool(f["tokenizer.ggml.add_bos_token"].parts[-1][0]))
toks = f["tokenizer.ggml.tokens"]
w.add_array("tokenizer.ggml.tokens", [bytes(toks.parts[i]).decode() for i in toks.data[:12]])
types = f["tokenizer.ggml.token_type"]
w.add_array("tokenizer.ggml.token_type", [int(types.parts[i][0]) for i in types.data[:12]])
t = {t.name: t for t in r.tensors}
w.add_tensor("output_norm.weight", np.asarray(t["output_norm.weight"].data)[:64].copy())
for name in ("token_embd.weight", "blk.0.attn_k.weight"):
    row = np.asarray(t[name].data)[0].copy()
    w.add_tensor(name, row, raw_shape=row.shape, raw_dtype=t[name].tensor_type)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
PY
}

seeds_safetensors_fuzz() {
  local out="$1" golden="$ROOT/tests/golden/format/safetensors"
  cp "$golden/numpy_mixed.safetensors" "$golden/torch_bf16_fp8.safetensors" "$out/"
  cp "$golden/tiny_llama/model-00004-of-00004.safetensors" "$out/"
}

# A peer feed's answer as a router sends it: the HTTP head, then chunked events (reset, replica, route, done,
# heartbeat).
seeds_peer_feed_fuzz() {
  python3 - "$1/feed.bin" <<'PY'
import sys
events = ['event: reset\ndata: {}\n\n',
          'event: replica\ndata: {"url":"http://127.0.0.1:8001","in_flight":2,"work":160}\n\n',
          'event: route\ndata: {"url":"http://127.0.0.1:8002","in_flight":1,"work":80,"group":12345}\n\n',
          ':\n\n',
          'event: done\ndata: {"url":"http://127.0.0.1:8001","in_flight":1,"work":80}\n\n']
body = "".join(f"{len(e.encode()):x}\r\n{e}\r\n" for e in events)
head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
open(sys.argv[1], "wb").write(b"\x2a" + head + body.encode())
PY
}

# Requests as clients send them (the first byte picks whole or in pieces): a JSON POST, a GET with a query,
# a stream, two pipelined, Expect: 100-continue, a chunked body.
seeds_http_server_fuzz() {
  printf '\x00POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{"model":"m"}' >"$1/post"
  printf '\x05GET /hello?a=1 HTTP/1.1\r\nHost: x\r\n\r\n' >"$1/get"
  printf '\x00GET /stream HTTP/1.1\r\nHost: x\r\n\r\n' >"$1/stream"
  printf '\x00GET /hello HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi' >"$1/pipelined"
  printf '\x09POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc' >"$1/expect"
  printf '\x00POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n' >"$1/chunked"
}

# A KV body of 2 tokens for the fuzzer's identity (first byte 0), an export request (1), a source URL (2).
seeds_kv_wire_fuzz() {
  python3 - "$1" <<'PY'
import json, struct, sys
h = json.dumps({"model": "0123456789abcdef", "backend": "cpu", "kv_dtype": "f32", "n_layers": 2,
                "n_kv_heads": 1, "head_dim": 2, "n_vocab": 100, "n_tokens": 2}).encode()
body = b"KEELKV01" + struct.pack("<I", len(h)) + h + struct.pack("<2i", 5, 7) + struct.pack("<16f", *range(16))
open(sys.argv[1] + "/kv", "wb").write(b"\x00" + body)
open(sys.argv[1] + "/request", "wb").write(b'\x01{"tokens":[1,2,99],"max_tokens":4}')
open(sys.argv[1] + "/origin", "wb").write(b"\x02http://[::1]:8080/")
PY
}

# Bodies as clients send them, one per kind (first byte 0 chat, 1 completion, 2 native): parts, ids, escapes.
seeds_router_body_fuzz() {
  printf '\x00{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi \\u00e9\\ud83d\\ude00"}]}],"stream":true,"n":1,"seed":7}' >"$1/chat"
  printf '\x01{"model":"m","prompt":[1,2,3,18446744073709551615,-4,2.5],"n":2,"seed":null}' >"$1/ids"
  printf '\x01{"model":"m","prompt":[{"text":"a"},"b",{"text":"c"}],"prompt":"again"}' >"$1/parts"
  printf '\x02{"text":"native \\"quoted\\"","stream":false,"sampling_params":{"max_new_tokens":4}}' >"$1/native"
}

# A tenants file listing the SHA-256 of the key "k", a state file, two replica URLs and a replica's
# Prometheus text (first byte 0, 1, 2, 3).
seeds_router_config_fuzz() {
  local k; k=$(printf k | sha256sum | cut -c1-64)
  printf '\x00{"tenants":[{"name":"acme","pool":"p","region":"eu","rate_per_s":2.5,"burst":3,"api_keys_sha256":["%s"]}]}' "$k" >"$1/tenants"
  printf '\x01{"version":1,"replicas":[{"url":"http://127.0.0.1:8001","labels":{"region":"eu","cloud":"c","pool":"p"},"state":"draining"},{"url":"http://h:2/x"}]}' >"$1/state"
  printf '\x02http://127.0.0.1:30000' >"$1/url"
  printf '\x02http://[::1]:8080/v1' >"$1/url6"
  printf '\x03# TYPE keel_num_requests_waiting gauge\nkeel_num_requests_waiting 3\nkeel_kv_slots_used NaN\n' >"$1/metrics"
}

# UBSan reports (the build recovers from them by default) count as failures, as ASan's do.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
status=0
for target in "${TARGETS[@]}"; do
  seeds="$WORK/$target/seeds" corpus="$WORK/$target/corpus" artifacts="$WORK/$target/artifacts"
  rm -rf "$seeds"; mkdir -p "$seeds" "$corpus" "$artifacts"
  if declare -F "seeds_$target" >/dev/null; then "seeds_$target" "$seeds"; fi
  echo "== $target: ${SECONDS_PER_TARGET}s from $(ls "$seeds" | wc -l) seeds"
  if ! "$BIN/$target" -max_total_time="$SECONDS_PER_TARGET" -max_len=8192 -timeout=10 ${FUZZ_SEED:+-seed=$FUZZ_SEED} \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$seeds" \
      2>"$WORK/$target/log"; then
    status=1
    echo "!! $target failed; see $WORK/$target/log and $artifacts" >&2
    # The report itself, so a CI log names the fault without the build folder.
    grep -v -E "^(INFO|#[0-9]+|\s+NEW_FUNC)" "$WORK/$target/log" | tail -n 40 >&2 || true
  fi
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|^#[0-9]+ +DONE" "$WORK/$target/log" || true
done
exit $status
