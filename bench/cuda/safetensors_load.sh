#!/usr/bin/env bash
# Safetensors load speed from the page cache: transformers writes a random-weight Llama of ~2.4 GB
# (bf16, 16 layers, d 2048), then `keel generate --device cuda -n 1` loads it three times; the first
# read may come from disk, the others from the page cache. Prints the load time keel reports (mapping,
# config, upload to the device as bf16) and GB/s of safetensors bytes.
# usage: bench/cuda/safetensors_load.sh KEEL_BINARY TOKENIZER_JSON OUT_DIR
set -uo pipefail
KEEL=$1 TOKJ=$2 OUT=$3
D="$OUT/llama_2g"
mkdir -p "$D"
python3 - "$D" <<'PY'
import sys, torch, transformers
cfg = transformers.LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=16,
                               num_key_value_heads=8, vocab_size=49152, max_position_embeddings=4096,
                               tie_word_embeddings=False)
with torch.device("cuda"):
    m = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16)
m.save_pretrained(sys.argv[1], safe_serialization=True)
PY
cp "$TOKJ" "$D/tokenizer.json"
BYTES=$(cat "$D"/*.safetensors | wc -c)
echo "safetensors: $BYTES bytes in $(ls "$D"/*.safetensors | wc -l) file(s)"
for i in 1 2 3; do
  ms=$("$KEEL" generate -m "$D" --device cuda -n 1 --temperature 0 -p "Hello" 2>&1 >/dev/null | grep -o 'load [0-9]* ms' | grep -o '[0-9]*')
  python3 -c "import sys; b, ms = int(sys.argv[1]), float(sys.argv[2]); print(f'load {$i}: {ms:.0f} ms, {b / ms / 1e6:.2f} GB/s')" "$BYTES" "$ms"
done
