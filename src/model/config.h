// Architecture hyper-parameters of a decoder-only model, read from GGUF metadata or an HF
// config.json and validated (model/config_*.cc). Plain data, immutable once loaded: any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace keel::model {

enum class Arch { kLlama, kQwen2, kQwen3 };

enum class RopeScaling { kNone, kLinear, kLlama3, kYarn };

struct RopeConfig {
  float theta = 10000.0f;
  backend::RopeStyle style = backend::RopeStyle::kNeox;
  RopeScaling scaling = RopeScaling::kNone;
  float factor = 1.0f;                  // linear / llama3 / yarn
  float low_freq_factor = 1.0f;         // llama3
  float high_freq_factor = 4.0f;        // llama3
  int64_t original_max_positions = 0;   // llama3 / yarn
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  float yarn_attn_factor = 1.0f;        // extra multiplier on top of yarn's mscale
};

struct ModelConfig {
  Arch arch = Arch::kLlama;
  std::string name;
  int64_t n_layers = 0;
  int64_t d_model = 0;        // hidden size
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t ffn_dim = 0;        // intermediate size
  int64_t vocab_size = 0;
  int64_t max_positions = 0;  // context length the model was trained for
  float rms_eps = 1e-5f;
  RopeConfig rope;
  bool tied_embeddings = false;  // lm_head shares token_embd
  bool attn_bias = false;        // q/k/v projections have biases (Qwen2)
  bool qk_norm = false;          // per-head RMSNorm on q and k before RoPE (Qwen3)
};

std::string arch_name(Arch arch);

}  // namespace keel::model
