// Weight naming and collection: GGUF and HF names, tied embeddings, optional biases / q-k norms,
// f16/bf16 -> f32 for 1-D weights, and errors naming the tensor and the expected shape.
#include <map>

#include <gtest/gtest.h>

#include "model/weights.h"

namespace keel::model {
namespace {

using tensor::DType;
using tensor::TensorView;

TEST(WeightNames, GgufAndHf) {
  EXPECT_EQ(tensor_name(WeightNaming::kGguf, "token_embd"), "token_embd.weight");
  EXPECT_EQ(tensor_name(WeightNaming::kGguf, "attn_q", 3), "blk.3.attn_q.weight");
  EXPECT_EQ(tensor_name(WeightNaming::kGguf, "attn_k.bias", 0), "blk.0.attn_k.bias");
  EXPECT_EQ(tensor_name(WeightNaming::kHf, "token_embd"), "model.embed_tokens.weight");
  EXPECT_EQ(tensor_name(WeightNaming::kHf, "output"), "lm_head.weight");
  EXPECT_EQ(tensor_name(WeightNaming::kHf, "output_norm"), "model.norm.weight");
  EXPECT_EQ(tensor_name(WeightNaming::kHf, "attn_q", 3), "model.layers.3.self_attn.q_proj.weight");
  EXPECT_EQ(tensor_name(WeightNaming::kHf, "attn_v.bias", 1), "model.layers.1.self_attn.v_proj.bias");
  EXPECT_EQ(tensor_name(WeightNaming::kHf, "attn_k_norm", 2), "model.layers.2.self_attn.k_norm.weight");
  EXPECT_EQ(tensor_name(WeightNaming::kHf, "attn_output", 0), "model.layers.0.self_attn.o_proj.weight");
  EXPECT_EQ(tensor_name(WeightNaming::kHf, "ffn_norm", 0), "model.layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(tensor_name(WeightNaming::kHf, "ffn_down", 5), "model.layers.5.mlp.down_proj.weight");
}

// A fake checkpoint: every tensor a config needs, f32 zeros, by name.
class FakeStore {
 public:
  void add(const std::string& name, std::initializer_list<int64_t> dims, DType dt = DType::kF32) {
    auto& buf = bufs_[name];
    tensor::Shape s = tensor::make_shape(dims);
    buf.assign(static_cast<size_t>(s.numel()) * 4, 0);
    views_[name] = TensorView{dt, s, buf.data(), tensor::row_size_bytes(dt, s.row_len()) * s.n_rows()};
  }
  void erase(const std::string& name) { views_.erase(name); }
  TensorLookup lookup() {
    return [this](std::string_view n) -> std::optional<TensorView> {
      auto it = views_.find(std::string(n));
      if (it == views_.end()) return std::nullopt;
      return it->second;
    };
  }
  std::map<std::string, std::vector<uint8_t>> bufs_;
  std::map<std::string, TensorView> views_;
};

ModelConfig tiny_config() {
  ModelConfig c;
  c.n_layers = 2;
  c.d_model = 32;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.ffn_dim = 64;
  c.vocab_size = 50;
  c.max_positions = 128;
  return c;
}

void fill(FakeStore& s, const ModelConfig& c, WeightNaming n) {
  const int64_t q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
  s.add(tensor_name(n, "token_embd"), {c.vocab_size, c.d_model});
  s.add(tensor_name(n, "output_norm"), {c.d_model});
  if (!c.tied_embeddings) s.add(tensor_name(n, "output"), {c.vocab_size, c.d_model});
  for (int l = 0; l < c.n_layers; ++l) {
    s.add(tensor_name(n, "attn_norm", l), {c.d_model});
    s.add(tensor_name(n, "attn_q", l), {q, c.d_model});
    s.add(tensor_name(n, "attn_k", l), {kv, c.d_model});
    s.add(tensor_name(n, "attn_v", l), {kv, c.d_model});
    if (c.attn_bias) {
      s.add(tensor_name(n, "attn_q.bias", l), {q});
      s.add(tensor_name(n, "attn_k.bias", l), {kv});
      s.add(tensor_name(n, "attn_v.bias", l), {kv});
    }
    if (c.qk_norm) {
      s.add(tensor_name(n, "attn_q_norm", l), {c.head_dim});
      s.add(tensor_name(n, "attn_k_norm", l), {c.head_dim});
    }
    s.add(tensor_name(n, "attn_output", l), {c.d_model, q});
    s.add(tensor_name(n, "ffn_norm", l), {c.d_model});
    s.add(tensor_name(n, "ffn_gate", l), {c.ffn_dim, c.d_model});
    s.add(tensor_name(n, "ffn_up", l), {c.ffn_dim, c.d_model});
    s.add(tensor_name(n, "ffn_down", l), {c.d_model, c.ffn_dim});
  }
}

TEST(CollectWeights, CompleteHfCheckpoint) {
  ModelConfig c = tiny_config();
  c.attn_bias = true;
  c.qk_norm = true;
  FakeStore s;
  fill(s, c, WeightNaming::kHf);
  auto w = collect_weights(c, WeightNaming::kHf, s.lookup());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  ASSERT_EQ(w->layers.size(), 2u);
  EXPECT_NE(w->layers[1].bq.data, nullptr);
  EXPECT_NE(w->layers[1].k_norm.data, nullptr);
  EXPECT_NE(w->output.data, w->token_embd.data);
  EXPECT_TRUE(w->rope_freq_factors.empty());
}

TEST(CollectWeights, TiedEmbeddingsShareTheTable) {
  ModelConfig c = tiny_config();
  c.tied_embeddings = true;
  FakeStore s;
  fill(s, c, WeightNaming::kGguf);
  auto w = collect_weights(c, WeightNaming::kGguf, s.lookup());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->output.data, w->token_embd.data);
  EXPECT_EQ(w->layers[0].bq.data, nullptr);
  EXPECT_EQ(w->layers[0].q_norm.data, nullptr);
}

TEST(CollectWeights, MissingTensorNamesItAndTheShape) {
  ModelConfig c = tiny_config();
  c.attn_bias = true;
  FakeStore s;
  fill(s, c, WeightNaming::kHf);
  s.erase("model.layers.1.self_attn.k_proj.bias");
  auto w = collect_weights(c, WeightNaming::kHf, s.lookup());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(w.status().message().find("model.layers.1.self_attn.k_proj.bias"), std::string::npos);
  EXPECT_NE(w.status().message().find("[16]"), std::string::npos) << w.status().message();
}

TEST(CollectWeights, MisShapedTensorNamesBothShapes) {
  ModelConfig c = tiny_config();
  FakeStore s;
  fill(s, c, WeightNaming::kGguf);
  s.add("blk.0.ffn_down.weight", {c.ffn_dim, c.d_model});  // transposed
  auto w = collect_weights(c, WeightNaming::kGguf, s.lookup());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), ErrorCode::kCorruptFile);
  EXPECT_NE(w.status().message().find("blk.0.ffn_down.weight"), std::string::npos);
  EXPECT_NE(w.status().message().find("[32, 64]"), std::string::npos) << w.status().message();
}

TEST(CollectWeights, HalfNormsBecomeF32AndQuantizedNormsAreRejected) {
  ModelConfig c = tiny_config();
  FakeStore s;
  fill(s, c, WeightNaming::kHf);
  s.add("model.norm.weight", {c.d_model}, DType::kBF16);
  auto& bytes = s.bufs_["model.norm.weight"];
  bytes[0] = 0x80;  // bf16 0x3f80 = 1.0
  bytes[1] = 0x3f;
  s.add("model.layers.0.input_layernorm.weight", {c.d_model}, DType::kF16);
  auto& h = s.bufs_["model.layers.0.input_layernorm.weight"];
  h[2] = 0x00;  // f16 0xc000 = -2.0 at index 1
  h[3] = 0xc0;
  auto w = collect_weights(c, WeightNaming::kHf, s.lookup());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->output_norm.dtype, DType::kF32);
  EXPECT_EQ(static_cast<const float*>(w->output_norm.data)[0], 1.0f);
  EXPECT_EQ(static_cast<const float*>(w->layers[0].attn_norm.data)[1], -2.0f);

  s.add("model.norm.weight", {c.d_model}, DType::kQ8_0);
  auto bad = collect_weights(c, WeightNaming::kHf, s.lookup());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kUnsupported);
}

TEST(CollectWeights, GgufRopeFreqs) {
  ModelConfig c = tiny_config();
  FakeStore s;
  fill(s, c, WeightNaming::kGguf);
  s.add("rope_freqs.weight", {c.head_dim / 2});
  auto* f = reinterpret_cast<float*>(s.bufs_["rope_freqs.weight"].data());
  for (int i = 0; i < 4; ++i) f[i] = static_cast<float>(i + 1);
  auto w = collect_weights(c, WeightNaming::kGguf, s.lookup());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->rope_freq_factors, (std::vector<float>{1, 2, 3, 4}));
  f[2] = 0.0f;
  auto bad = collect_weights(c, WeightNaming::kGguf, s.lookup());
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace keel::model
