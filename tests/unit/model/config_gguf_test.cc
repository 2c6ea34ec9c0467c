// GGUF metadata -> ModelConfig: the real SmolLM2 file, and small in-memory GGUF files (written here
// byte by byte per the GGUF spec) for Qwen2/Qwen3, YaRN, and errors naming the key.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_paths.h"
#include "format/gguf.h"
#include "model/config_gguf.h"

namespace keel::model {
namespace {

// Minimal GGUF v3 writer: scalar/string metadata, one f32 tensor per name given.
class GgufWriter {
 public:
  void u32(const std::string& k, uint32_t v) { kv(k, 4, &v, 4); }
  void f32(const std::string& k, float v) { kv(k, 6, &v, 4); }
  void str(const std::string& k, const std::string& v) {
    key(k);
    put_u32(8);
    put_str(v);
    ++n_kv_;
  }
  void str_array(const std::string& k, size_t n) {
    key(k);
    put_u32(9);
    put_u32(8);
    put_u64(n);
    for (size_t i = 0; i < n; ++i) put_str("t" + std::to_string(i));
    ++n_kv_;
  }
  // A [rows, cols] f32 tensor of zeros.
  void tensor(const std::string& name, uint64_t rows, uint64_t cols) { tensors_.push_back({name, rows, cols}); }

  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out;
    auto app = [&out](const void* p, size_t n) {
      out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    };
    app("GGUF", 4);
    uint32_t version = 3;
    app(&version, 4);
    uint64_t n_t = tensors_.size(), n_kv = n_kv_;
    app(&n_t, 8);
    app(&n_kv, 8);
    app(kv_.data(), kv_.size());
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
      uint64_t len = t.name.size();
      app(&len, 8);
      app(t.name.data(), len);
      uint32_t n_dims = 2, type = 0;
      app(&n_dims, 4);
      uint64_t ne[2] = {t.cols, t.rows};  // ne[0] is the contiguous dim
      app(ne, 16);
      app(&type, 4);
      app(&offset, 8);
      offset += (t.rows * t.cols * 4 + 31) / 32 * 32;
    }
    out.resize((out.size() + 31) / 32 * 32, 0);
    out.resize(out.size() + offset, 0);
    return out;
  }

 private:
  struct T {
    std::string name;
    uint64_t rows, cols;
  };
  void key(const std::string& k) { put_str(k); }
  void kv(const std::string& k, uint32_t type, const void* v, size_t n) {
    key(k);
    put_u32(type);
    put(v, n);
    ++n_kv_;
  }
  void put(const void* p, size_t n) { kv_.insert(kv_.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n); }
  void put_u32(uint32_t v) { put(&v, 4); }
  void put_u64(uint64_t v) { put(&v, 8); }
  void put_str(const std::string& s) {
    put_u64(s.size());
    put(s.data(), s.size());
  }
  std::vector<uint8_t> kv_;
  uint64_t n_kv_ = 0;
  std::vector<T> tensors_;
};

GgufWriter qwen_base(const std::string& arch, uint32_t n_kv_heads = 2) {
  GgufWriter w;
  w.str("general.architecture", arch);
  w.u32(arch + ".block_count", 2);
  w.u32(arch + ".embedding_length", 64);
  w.u32(arch + ".attention.head_count", 4);
  w.u32(arch + ".attention.head_count_kv", n_kv_heads);
  w.u32(arch + ".feed_forward_length", 128);
  w.u32(arch + ".context_length", 4096);
  w.f32(arch + ".rope.freq_base", 1000000.0f);
  w.f32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
  w.str_array("tokenizer.ggml.tokens", 10);
  return w;
}

Result<ModelConfig> parse(const GgufWriter& w, std::vector<uint8_t>& keep) {
  keep = w.bytes();
  auto g = format::GgufFile::parse(keep);
  if (!g.ok()) return g.status();
  return config_from_gguf(*g);
}

TEST(ConfigGguf, SmolLM2) {
  const std::string path = keel::test::default_model_path();
  ASSERT_TRUE(keel::test::exists(path)) << path << " missing: run scripts/fetch_model.sh";
  auto g = format::GgufFile::open(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto c = config_from_gguf(*g);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Arch::kLlama);
  EXPECT_EQ(c->n_layers, 30);
  EXPECT_EQ(c->d_model, 576);
  EXPECT_EQ(c->n_heads, 9);
  EXPECT_EQ(c->n_kv_heads, 3);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->ffn_dim, 1536);
  EXPECT_EQ(c->vocab_size, 49152);
  EXPECT_EQ(c->max_positions, 8192);
  EXPECT_FLOAT_EQ(c->rope.theta, 100000.0f);
  EXPECT_FLOAT_EQ(c->rms_eps, 1e-5f);
  EXPECT_EQ(c->rope.style, backend::RopeStyle::kInterleaved);
  EXPECT_EQ(c->rope.scaling, RopeScaling::kNone);
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_FALSE(c->attn_bias);
  EXPECT_FALSE(c->qk_norm);
}

TEST(ConfigGguf, Qwen2BiasFromTensorsAndNeox) {
  GgufWriter w = qwen_base("qwen2");
  w.tensor("token_embd.weight", 10, 64);
  w.tensor("output.weight", 10, 64);
  w.tensor("blk.0.attn_q.bias", 1, 64);
  std::vector<uint8_t> keep;
  auto c = parse(w, keep);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Arch::kQwen2);
  EXPECT_EQ(c->rope.style, backend::RopeStyle::kNeox);
  EXPECT_EQ(c->vocab_size, 10);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_TRUE(c->attn_bias);
  EXPECT_FALSE(c->tied_embeddings);
}

TEST(ConfigGguf, Qwen3KeyLengthAndYarn) {
  GgufWriter w = qwen_base("qwen3");
  w.u32("qwen3.attention.key_length", 32);
  w.u32("qwen3.attention.value_length", 32);
  w.u32("qwen3.rope.dimension_count", 32);
  w.str("qwen3.rope.scaling.type", "yarn");
  w.f32("qwen3.rope.scaling.factor", 4.0f);
  w.u32("qwen3.rope.scaling.original_context_length", 1024);
  std::vector<uint8_t> keep;
  auto c = parse(w, keep);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_EQ(c->rope.scaling, RopeScaling::kYarn);
  EXPECT_EQ(c->rope.original_max_positions, 1024);
  EXPECT_NEAR(c->rope.attn_factor, 1.0 + 0.1 * std::log(4.0), 1e-6);
}

void expect_error(GgufWriter w, ErrorCode code, const std::string& needle) {
  std::vector<uint8_t> keep;
  auto c = parse(w, keep);
  ASSERT_FALSE(c.ok()) << needle;
  EXPECT_EQ(c.status().code(), code) << c.status().to_string();
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().to_string();
}

TEST(ConfigGguf, ErrorsNameTheKey) {
  GgufWriter missing;
  missing.str("general.architecture", "llama");
  expect_error(missing, ErrorCode::kNotFound, "llama.block_count");

  GgufWriter other;
  other.str("general.architecture", "gemma");
  expect_error(other, ErrorCode::kUnsupported, "gemma");

  expect_error(qwen_base("qwen2", 3), ErrorCode::kCorruptFile, "n_kv_heads");
  expect_error(qwen_base("qwen2", 0), ErrorCode::kCorruptFile, "qwen2.attention.head_count_kv");

  GgufWriter bad_kv = qwen_base("qwen2");
  bad_kv.u32("qwen2.attention.value_length", 8);
  expect_error(bad_kv, ErrorCode::kUnsupported, "qwen2.attention.value_length");

  GgufWriter partial = qwen_base("qwen2");
  partial.u32("qwen2.rope.dimension_count", 8);
  expect_error(partial, ErrorCode::kUnsupported, "qwen2.rope.dimension_count");

  GgufWriter scaling = qwen_base("qwen2");
  scaling.str("qwen2.rope.scaling.type", "longrope");
  expect_error(scaling, ErrorCode::kUnsupported, "longrope");
}

}  // namespace
}  // namespace keel::model
