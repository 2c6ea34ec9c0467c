#include "model/config.h"

#include <cmath>

namespace keel::model {
namespace {

// Far above any real model, low enough that products of these never overflow int64 and that a
// corrupt header cannot make the loader allocate terabytes before a tensor shape check fails.
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxWidth = int64_t{1} << 20;
constexpr int64_t kMaxVocab = int64_t{1} << 24;

Status check_range(int64_t v, int64_t max, const char* field) {
  if (v <= 0 || v > max) {
    return make_error(ErrorCode::kCorruptFile, "{} = {} is out of range (1 .. {})", field, v, max);
  }
  return {};
}

Status check_positive(float v, const char* field) {
  if (!std::isfinite(v) || v <= 0.0f) {
    return make_error(ErrorCode::kCorruptFile, "{} = {} must be a positive finite number", field, v);
  }
  return {};
}

Status validate_rope(const ModelConfig& c) {
  const RopeConfig& r = c.rope;
  KEEL_RETURN_IF_ERROR(check_positive(r.theta, "rope.theta"));
  KEEL_RETURN_IF_ERROR(check_positive(r.attn_factor, "rope.attn_factor"));
  if (r.scaling == RopeScaling::kNone) return {};
  KEEL_RETURN_IF_ERROR(check_positive(r.factor, "rope.factor"));
  if (r.scaling == RopeScaling::kLinear) return {};
  KEEL_RETURN_IF_ERROR(check_range(r.original_max_positions, int64_t{1} << 40, "rope.original_max_positions"));
  if (r.scaling == RopeScaling::kLlama3) {
    KEEL_RETURN_IF_ERROR(check_positive(r.low_freq_factor, "rope.low_freq_factor"));
    KEEL_RETURN_IF_ERROR(check_positive(r.high_freq_factor, "rope.high_freq_factor"));
    if (!(r.high_freq_factor > r.low_freq_factor)) {
      return make_error(ErrorCode::kCorruptFile, "rope.high_freq_factor ({}) must exceed rope.low_freq_factor ({})",
                        r.high_freq_factor, r.low_freq_factor);
    }
    return {};
  }
  KEEL_RETURN_IF_ERROR(check_positive(r.yarn_beta_fast, "rope.yarn_beta_fast"));
  KEEL_RETURN_IF_ERROR(check_positive(r.yarn_beta_slow, "rope.yarn_beta_slow"));
  return {};
}

}  // namespace

std::string arch_name(Arch arch) {
  switch (arch) {
    case Arch::kLlama: return "llama";
    case Arch::kQwen2: return "qwen2";
    case Arch::kQwen3: return "qwen3";
  }
  return "?";
}

std::string rope_scaling_name(RopeScaling s) {
  switch (s) {
    case RopeScaling::kNone: return "none";
    case RopeScaling::kLinear: return "linear";
    case RopeScaling::kLlama3: return "llama3";
    case RopeScaling::kYarn: return "yarn";
  }
  return "?";
}

Status validate_config(const ModelConfig& c) {
  KEEL_RETURN_IF_ERROR(check_range(c.n_layers, kMaxLayers, "n_layers"));
  KEEL_RETURN_IF_ERROR(check_range(c.d_model, kMaxWidth, "d_model"));
  KEEL_RETURN_IF_ERROR(check_range(c.n_heads, kMaxWidth, "n_heads"));
  KEEL_RETURN_IF_ERROR(check_range(c.n_kv_heads, kMaxWidth, "n_kv_heads"));
  KEEL_RETURN_IF_ERROR(check_range(c.head_dim, kMaxWidth, "head_dim"));
  KEEL_RETURN_IF_ERROR(check_range(c.ffn_dim, kMaxWidth * 4, "ffn_dim"));
  KEEL_RETURN_IF_ERROR(check_range(c.vocab_size, kMaxVocab, "vocab_size"));
  KEEL_RETURN_IF_ERROR(check_range(c.max_positions, int64_t{1} << 40, "max_positions"));
  KEEL_RETURN_IF_ERROR(check_positive(c.rms_eps, "rms_eps"));
  if (c.n_heads % c.n_kv_heads != 0) {
    return make_error(ErrorCode::kCorruptFile, "n_heads ({}) is not a multiple of n_kv_heads ({})", c.n_heads,
                      c.n_kv_heads);
  }
  if (c.head_dim % 2 != 0) {
    return make_error(ErrorCode::kCorruptFile, "head_dim ({}) must be even for RoPE", c.head_dim);
  }
  if (c.n_heads * c.head_dim > kMaxWidth) {
    return make_error(ErrorCode::kCorruptFile, "n_heads * head_dim = {} is out of range", c.n_heads * c.head_dim);
  }
  return validate_rope(c);
}

}  // namespace keel::model
