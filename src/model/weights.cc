#include "model/weights.h"

#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "base/check.h"

namespace keel::model {
namespace {

using tensor::DType;
using tensor::Shape;
using tensor::TensorView;

struct NameEntry {
  std::string_view canonical;
  std::string_view hf;  // after "model.layers.N." for per-layer tensors
};

constexpr std::array<NameEntry, 3> kGlobalNames = {{
    {"token_embd", "model.embed_tokens.weight"},
    {"output_norm", "model.norm.weight"},
    {"output", "lm_head.weight"},
}};

constexpr std::array<NameEntry, 14> kLayerNames = {{
    {"attn_norm", "input_layernorm.weight"},
    {"attn_q", "self_attn.q_proj.weight"},
    {"attn_k", "self_attn.k_proj.weight"},
    {"attn_v", "self_attn.v_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_q_norm", "self_attn.q_norm.weight"},
    {"attn_k_norm", "self_attn.k_norm.weight"},
    {"attn_output", "self_attn.o_proj.weight"},
    {"ffn_norm", "post_attention_layernorm.weight"},
    {"ffn_gate", "mlp.gate_proj.weight"},
    {"ffn_up", "mlp.up_proj.weight"},
    {"ffn_down", "mlp.down_proj.weight"},
}};

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    exp = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

class Collector {
 public:
  Collector(const ModelConfig& c, WeightNaming naming, const TensorLookup& lookup, ModelWeights& out)
      : c_(c), naming_(naming), lookup_(lookup), out_(out) {}

  // A 2-D matrix [rows, cols] of any dtype the backend may accept.
  Result<TensorView> matrix(std::string_view canonical, int layer, int64_t rows, int64_t cols) {
    std::string name = tensor_name(naming_, canonical, layer);
    std::optional<TensorView> v = lookup_(name);
    Shape want = tensor::make_shape({rows, cols});
    if (!v) return missing(name, want);
    if (!(v->shape == want)) return mis_shaped(name, want, v->shape);
    return *v;
  }

  // A 1-D vector [n], converted to f32 when stored as f16/bf16. Absent + optional -> empty view.
  Result<TensorView> vector(std::string_view canonical, int layer, int64_t n, bool required = true) {
    std::string name = tensor_name(naming_, canonical, layer);
    std::optional<TensorView> v = lookup_(name);
    Shape want = tensor::make_shape({n});
    if (!v) {
      if (!required) return TensorView{};
      return missing(name, want);
    }
    if (!(v->shape == want)) return mis_shaped(name, want, v->shape);
    return to_f32(name, *v);
  }

 private:
  static Status missing(const std::string& name, const Shape& want) {
    return make_error(ErrorCode::kNotFound, "tensor '{}' is missing (expected shape {})", name, want.to_string());
  }
  static Status mis_shaped(const std::string& name, const Shape& want, const Shape& got) {
    return make_error(ErrorCode::kCorruptFile, "tensor '{}' has shape {}, expected {}", name, got.to_string(),
                      want.to_string());
  }

  Result<TensorView> to_f32(const std::string& name, const TensorView& v) {
    if (v.dtype == DType::kF32) return v;
    if (v.dtype != DType::kF16 && v.dtype != DType::kBF16) {
      return make_error(ErrorCode::kUnsupported, "tensor '{}' is {}; 1-D weights must be f32, f16 or bf16", name,
                        tensor::dtype_name(v.dtype));
    }
    auto copy = std::make_unique<std::vector<float>>(static_cast<size_t>(v.numel()));
    const auto* src = static_cast<const uint8_t*>(v.data);
    for (size_t i = 0; i < copy->size(); ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      if (v.dtype == DType::kF16) {
        (*copy)[i] = f16_to_f32(h);
      } else {
        uint32_t bits = static_cast<uint32_t>(h) << 16;
        std::memcpy(&(*copy)[i], &bits, 4);
      }
    }
    TensorView f{DType::kF32, v.shape, copy->data(), copy->size() * sizeof(float)};
    out_.f32_copies.push_back(std::move(copy));
    return f;
  }

  const ModelConfig& c_;
  WeightNaming naming_;
  const TensorLookup& lookup_;
  ModelWeights& out_;
};

Result<LayerWeights> collect_layer(const ModelConfig& c, Collector& col, int l) {
  const int64_t d = c.d_model;
  const int64_t q_dim = c.n_heads * c.head_dim;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  LayerWeights w;
  KEEL_ASSIGN_OR_RETURN(w.attn_norm, col.vector("attn_norm", l, d));
  KEEL_ASSIGN_OR_RETURN(w.wq, col.matrix("attn_q", l, q_dim, d));
  KEEL_ASSIGN_OR_RETURN(w.wk, col.matrix("attn_k", l, kv_dim, d));
  KEEL_ASSIGN_OR_RETURN(w.wv, col.matrix("attn_v", l, kv_dim, d));
  if (c.attn_bias) {
    KEEL_ASSIGN_OR_RETURN(w.bq, col.vector("attn_q.bias", l, q_dim));
    KEEL_ASSIGN_OR_RETURN(w.bk, col.vector("attn_k.bias", l, kv_dim));
    KEEL_ASSIGN_OR_RETURN(w.bv, col.vector("attn_v.bias", l, kv_dim));
  }
  if (c.qk_norm) {
    KEEL_ASSIGN_OR_RETURN(w.q_norm, col.vector("attn_q_norm", l, c.head_dim));
    KEEL_ASSIGN_OR_RETURN(w.k_norm, col.vector("attn_k_norm", l, c.head_dim));
  }
  KEEL_ASSIGN_OR_RETURN(w.wo, col.matrix("attn_output", l, d, q_dim));
  KEEL_ASSIGN_OR_RETURN(w.ffn_norm, col.vector("ffn_norm", l, d));
  KEEL_ASSIGN_OR_RETURN(w.w_gate, col.matrix("ffn_gate", l, c.ffn_dim, d));
  KEEL_ASSIGN_OR_RETURN(w.w_up, col.matrix("ffn_up", l, c.ffn_dim, d));
  KEEL_ASSIGN_OR_RETURN(w.w_down, col.matrix("ffn_down", l, d, c.ffn_dim));
  return w;
}

}  // namespace

std::string tensor_name(WeightNaming naming, std::string_view canonical, int layer) {
  const bool is_bias = canonical.ends_with(".bias");
  if (naming == WeightNaming::kGguf) {
    std::string prefix = layer >= 0 ? fmt::format("blk.{}.", layer) : std::string();
    return prefix + std::string(canonical) + (is_bias ? "" : ".weight");
  }
  if (layer < 0) {
    for (const NameEntry& e : kGlobalNames) {
      if (e.canonical == canonical) return std::string(e.hf);
    }
  } else {
    for (const NameEntry& e : kLayerNames) {
      if (e.canonical == canonical && !e.hf.empty()) return fmt::format("model.layers.{}.{}", layer, e.hf);
    }
  }
  KEEL_CHECK(false, "no HF name for canonical weight '{}'", canonical);
  return {};
}

Result<ModelWeights> collect_weights(const ModelConfig& c, WeightNaming naming, const TensorLookup& lookup) {
  ModelWeights w;
  Collector col(c, naming, lookup, w);
  KEEL_ASSIGN_OR_RETURN(w.token_embd, col.matrix("token_embd", -1, c.vocab_size, c.d_model));
  KEEL_ASSIGN_OR_RETURN(w.output_norm, col.vector("output_norm", -1, c.d_model));
  if (c.tied_embeddings) {
    w.output = w.token_embd;
  } else {
    KEEL_ASSIGN_OR_RETURN(w.output, col.matrix("output", -1, c.vocab_size, c.d_model));
  }
  w.layers.reserve(static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    KEEL_ASSIGN_OR_RETURN(LayerWeights lw, collect_layer(c, col, l));
    w.layers.push_back(lw);
  }
  if (naming == WeightNaming::kGguf) {
    KEEL_ASSIGN_OR_RETURN(TensorView freqs, col.vector("rope_freqs", -1, c.head_dim / 2, /*required=*/false));
    if (freqs.data != nullptr) {
      const auto* f = static_cast<const float*>(freqs.data);
      w.rope_freq_factors.assign(f, f + c.head_dim / 2);
      for (float x : w.rope_freq_factors) {
        if (!(x > 0.0f) || !std::isfinite(x)) {
          return make_error(ErrorCode::kCorruptFile, "tensor 'rope_freqs.weight' holds {}; factors must be positive", x);
        }
      }
    }
  }
  return w;
}

}  // namespace keel::model
