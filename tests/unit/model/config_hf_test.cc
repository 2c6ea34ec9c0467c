// config.json reading: the tiny golden models' configs, transformers' defaults, both RoPE spellings,
// and errors that name the key.
#include <cmath>

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "common/test_paths.h"
#include "model/config_hf.h"

namespace keel::model {
namespace {

std::string golden_config(const std::string& name) {
  auto t = read_text_file(keel::test::golden_dir() + "/hf/" + name + "/config.json");
  EXPECT_TRUE(t.ok()) << "run tests/golden/hf/gen_tiny_models.py";
  return t.ok() ? *t : std::string();
}

TEST(ConfigHf, TinyLlama) {
  auto c = config_from_hf_json(golden_config("llama"));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Arch::kLlama);
  EXPECT_EQ(c->n_layers, 2);
  EXPECT_EQ(c->d_model, 64);
  EXPECT_EQ(c->n_heads, 4);
  EXPECT_EQ(c->n_kv_heads, 2);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->ffn_dim, 64);
  EXPECT_EQ(c->vocab_size, 128);
  EXPECT_FLOAT_EQ(c->rms_eps, 1e-5f);
  EXPECT_EQ(c->rope.style, backend::RopeStyle::kNeox);
  EXPECT_EQ(c->rope.scaling, RopeScaling::kNone);
  EXPECT_FALSE(c->tied_embeddings);
  EXPECT_FALSE(c->attn_bias);
  EXPECT_FALSE(c->qk_norm);
}

TEST(ConfigHf, Llama3ScalingFromRopeParameters) {
  auto c = config_from_hf_json(golden_config("llama3_rope"));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->rope.scaling, RopeScaling::kLlama3);
  EXPECT_FLOAT_EQ(c->rope.factor, 8.0f);
  EXPECT_FLOAT_EQ(c->rope.high_freq_factor, 4.0f);
  EXPECT_EQ(c->rope.original_max_positions, 32);
  EXPECT_TRUE(c->tied_embeddings);
}

TEST(ConfigHf, Qwen2HasBiasesAndYarn) {
  auto c = config_from_hf_json(golden_config("qwen2_yarn"));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Arch::kQwen2);
  EXPECT_TRUE(c->attn_bias);
  EXPECT_EQ(c->rope.scaling, RopeScaling::kYarn);
  EXPECT_NEAR(c->rope.attn_factor, 0.1 * std::log(4.0) + 1.0, 1e-6);
}

TEST(ConfigHf, Qwen3HeadDimAndQkNorm) {
  auto c = config_from_hf_json(golden_config("qwen3"));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Arch::kQwen3);
  EXPECT_EQ(c->head_dim, 24);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FLOAT_EQ(c->rope.theta, 1e6f);
}

constexpr const char* kMinimal = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 256,
  "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 1000,
  "max_position_embeddings": 2048 EXTRA})";

std::string with(const std::string& extra) {
  std::string s = kMinimal;
  s.replace(s.find(" EXTRA"), 6, extra);
  return s;
}

TEST(ConfigHf, OldStyleRopeScalingAndDefaults) {
  auto c = config_from_hf_json(with(R"(, "rope_theta": 500000, "rope_scaling": {"type": "linear", "factor": 2})"));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->n_kv_heads, 8);  // defaults to n_heads
  EXPECT_EQ(c->head_dim, 32);   // hidden / heads
  EXPECT_FLOAT_EQ(c->rms_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c->rope.theta, 500000.0f);
  EXPECT_EQ(c->rope.scaling, RopeScaling::kLinear);
  EXPECT_FLOAT_EQ(c->rope.factor, 2.0f);
}

void expect_error(const std::string& json, ErrorCode code, const std::string& needle) {
  auto c = config_from_hf_json(json);
  ASSERT_FALSE(c.ok()) << json;
  EXPECT_EQ(c.status().code(), code) << c.status().to_string();
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().to_string();
}

TEST(ConfigHf, ErrorsNameTheKey) {
  expect_error("{", ErrorCode::kCorruptFile, "not valid JSON");
  expect_error(R"({"architectures": ["LlamaForCausalLM"]})", ErrorCode::kNotFound, "num_hidden_layers");
  expect_error(with(R"(, "num_key_value_heads": 3)"), ErrorCode::kCorruptFile, "n_kv_heads");
  expect_error(with(R"(, "num_key_value_heads": -1)"), ErrorCode::kCorruptFile, "num_key_value_heads");
  expect_error(with(R"(, "rms_norm_eps": "x")"), ErrorCode::kCorruptFile, "rms_norm_eps");
  expect_error(with(R"(, "hidden_act": "gelu")"), ErrorCode::kUnsupported, "hidden_act");
  expect_error(with(R"(, "mlp_bias": true)"), ErrorCode::kUnsupported, "mlp_bias");
  expect_error(with(R"(, "rope_scaling": {"rope_type": "dynamic", "factor": 2})"), ErrorCode::kUnsupported,
               "dynamic");
  expect_error(with(R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8})"), ErrorCode::kNotFound,
               "low_freq_factor");
  expect_error(with(R"(, "partial_rotary_factor": 0.5)"), ErrorCode::kUnsupported, "partial_rotary_factor");
  expect_error(with(R"(, "head_dim": 33)"), ErrorCode::kCorruptFile, "head_dim");
  expect_error(R"({"architectures": ["MistralForCausalLM"]})", ErrorCode::kUnsupported, "MistralForCausalLM");
  expect_error(R"([1, 2])", ErrorCode::kCorruptFile, "object");
}

}  // namespace
}  // namespace keel::model
