// Weight naming: finds every tensor a Llama-family forward needs under its GGUF name
// (`token_embd`, `blk.N.attn_q`, ..., `output_norm`, `output`) or its HF name
// (`model.layers.N.self_attn.q_proj.weight`, ...), checks shapes against the config, resolves tied
// embeddings, and converts small 1-D tensors (norms, biases) to f32. Called by load.cc; any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/config.h"
#include "tensor/tensor_view.h"

namespace keel::model {

enum class WeightNaming { kGguf, kHf };

// Host views into the mapped file(s) (or into ModelWeights::f32_copies). Optional tensors have
// data == nullptr when the config does not use them.
struct LayerWeights {
  tensor::TensorView attn_norm;  // [d_model] f32
  tensor::TensorView wq;         // [n_heads * head_dim, d_model]
  tensor::TensorView wk;         // [n_kv_heads * head_dim, d_model]
  tensor::TensorView wv;         // [n_kv_heads * head_dim, d_model]
  tensor::TensorView bq;         // [n_heads * head_dim] f32, attn_bias only
  tensor::TensorView bk;         // [n_kv_heads * head_dim] f32, attn_bias only
  tensor::TensorView bv;         // [n_kv_heads * head_dim] f32, attn_bias only
  tensor::TensorView q_norm;     // [head_dim] f32, qk_norm only
  tensor::TensorView k_norm;     // [head_dim] f32, qk_norm only
  tensor::TensorView wo;         // [d_model, n_heads * head_dim]
  tensor::TensorView ffn_norm;   // [d_model] f32
  tensor::TensorView w_gate;     // [ffn_dim, d_model]
  tensor::TensorView w_up;       // [ffn_dim, d_model]
  tensor::TensorView w_down;     // [d_model, ffn_dim]
};

struct ModelWeights {
  tensor::TensorView token_embd;    // [vocab_size, d_model]
  tensor::TensorView output_norm;   // [d_model] f32
  tensor::TensorView output;        // [vocab_size, d_model]; == token_embd when tied
  std::vector<LayerWeights> layers;  // [n_layers]
  std::vector<float> rope_freq_factors;  // [head_dim / 2] GGUF `rope_freqs.weight`, or empty
  // Owned f32 copies of 1-D tensors stored as f16/bf16; the views above point into them.
  std::vector<std::unique_ptr<std::vector<float>>> f32_copies;
};

// Returns the tensor stored under `name`, or nullopt.
using TensorLookup = std::function<std::optional<tensor::TensorView>(std::string_view name)>;

// The file name of a canonical weight: `tensor_name(kHf, "attn_q", 3)` ==
// "model.layers.3.self_attn.q_proj.weight"; layer -1 for global tensors ("token_embd", "output_norm",
// "output"). Canonical names are GGUF's without the ".weight"/".bias" suffix ("attn_q.bias" for biases).
std::string tensor_name(WeightNaming naming, std::string_view canonical, int layer = -1);

// Collects and checks all weights. Errors name the tensor and the expected shape.
Result<ModelWeights> collect_weights(const ModelConfig& config, WeightNaming naming, const TensorLookup& lookup);

}  // namespace keel::model
