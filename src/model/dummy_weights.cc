#include "model/dummy_weights.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tensor/half.h"

namespace keel::model {
namespace {

struct DummyStorage {
  std::vector<uint16_t> matrix_bits;  // bf16, max matrix numel + kSlack
  std::vector<float> ones;            // norms
  std::vector<float> small;           // biases
  std::map<std::string, tensor::TensorView> views;
};

constexpr int64_t kSlack = 1 << 16;

uint64_t next(uint64_t& s) {  // xorshift64*
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 0x2545F4914F6CDD1Dull;
}

// Uniform in [-a, a].
float uniform(uint64_t& s, float a) { return (static_cast<float>(next(s) >> 40) / 16777216.0f * 2.0f - 1.0f) * a; }

}  // namespace

TensorLookup make_dummy_lookup(const ModelConfig& c, std::shared_ptr<const void>& storage) {
  auto st = std::make_shared<DummyStorage>();
  const int64_t d = c.d_model, q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim, f = c.ffn_dim;
  const int64_t max_numel = std::max({c.vocab_size * d, f * d, q_dim * d});
  st->matrix_bits.resize(static_cast<size_t>(max_numel + kSlack));
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  // Scale 1/sqrt(d): activations stay O(1) through identical random layers.
  const float a = 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(d, f) / 4));
  for (uint16_t& b : st->matrix_bits) b = tensor::f32_to_bf16(uniform(seed, a));
  const int64_t max_vec = std::max({d, q_dim, f, c.head_dim});
  st->ones.assign(static_cast<size_t>(max_vec), 1.0f);
  st->small.resize(static_cast<size_t>(max_vec));
  for (float& x : st->small) x = uniform(seed, 0.02f);

  int64_t n_matrix = 0;
  auto matrix = [&](std::string_view canonical, int layer, int64_t rows, int64_t cols) {
    const int64_t offset = (n_matrix++ * 7919) % kSlack;  // distinct tensors read different data
    const tensor::Shape s = tensor::make_shape({rows, cols});
    st->views[tensor_name(WeightNaming::kHf, canonical, layer)] = {
        tensor::DType::kBF16, s, st->matrix_bits.data() + offset, static_cast<size_t>(rows * cols) * 2};
  };
  auto vector = [&](std::string_view canonical, int layer, int64_t n, const std::vector<float>& src) {
    st->views[tensor_name(WeightNaming::kHf, canonical, layer)] = {tensor::DType::kF32, tensor::make_shape({n}),
                                                                   src.data(), static_cast<size_t>(n) * 4};
  };
  matrix("token_embd", -1, c.vocab_size, d);
  vector("output_norm", -1, d, st->ones);
  if (!c.tied_embeddings) matrix("output", -1, c.vocab_size, d);
  for (int l = 0; l < c.n_layers; ++l) {
    vector("attn_norm", l, d, st->ones);
    matrix("attn_q", l, q_dim, d);
    matrix("attn_k", l, kv_dim, d);
    matrix("attn_v", l, kv_dim, d);
    if (c.attn_bias) {
      vector("attn_q.bias", l, q_dim, st->small);
      vector("attn_k.bias", l, kv_dim, st->small);
      vector("attn_v.bias", l, kv_dim, st->small);
    }
    if (c.qk_norm) {
      vector("attn_q_norm", l, c.head_dim, st->ones);
      vector("attn_k_norm", l, c.head_dim, st->ones);
    }
    matrix("attn_output", l, d, q_dim);
    vector("ffn_norm", l, d, st->ones);
    matrix("ffn_gate", l, f, d);
    matrix("ffn_up", l, f, d);
    matrix("ffn_down", l, d, f);
  }
  storage = st;
  return [st](std::string_view name) -> std::optional<tensor::TensorView> {
    auto it = st->views.find(std::string(name));
    if (it == st->views.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace keel::model
