// Architecture hyper-parameters of a decoder-only model, read from GGUF metadata (config_gguf.h) or
// an HF config.json (config_hf.h) and validated there. Plain data, immutable once loaded: any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"

namespace keel::model {

enum class Arch { kLlama, kQwen2, kQwen3 };

enum class RopeScaling { kNone, kLinear, kLlama3, kYarn };

struct RopeConfig {
  float theta = 10000.0f;
  // kInterleaved for GGUF llama files (the converter permuted Q/K rows), kNeox for HF and Qwen.
  backend::RopeStyle style = backend::RopeStyle::kNeox;
  RopeScaling scaling = RopeScaling::kNone;
  float factor = 1.0f;                  // linear / llama3 / yarn
  float low_freq_factor = 1.0f;         // llama3
  float high_freq_factor = 4.0f;        // llama3
  int64_t original_max_positions = 0;   // llama3 / yarn: context length before scaling
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  bool yarn_truncate = true;            // floor/ceil the correction range (HF default)
  // Magnitude scale on cos/sin, resolved by the config reader (YaRN's 0.1 ln(s) + 1, or the file's
  // explicit value); 1 for every other scaling.
  float attn_factor = 1.0f;
};

struct ModelConfig {
  Arch arch = Arch::kLlama;
  std::string name;
  int64_t n_layers = 0;
  int64_t d_model = 0;        // hidden size
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;       // may differ from d_model / n_heads (Qwen3)
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
std::string rope_scaling_name(RopeScaling s);

// Cross-field checks shared by both readers (head counts divide, head_dim even, scaling parameters
// consistent, sizes within sane limits). Field names in messages are ModelConfig's.
Status validate_config(const ModelConfig& c);

}  // namespace keel::model
