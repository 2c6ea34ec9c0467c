// `--load-format dummy`: a model of any shape from config.json alone. Checks that every weight the
// architecture needs is produced with its shape (Llama untied, Qwen2 biases, Qwen3 q/k norms), that
// a forward runs to finite, non-constant logits, and that dummy weights need an HF folder.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/model.h"

namespace keel::model {
namespace {

namespace fs = std::filesystem;

std::string write_config(const std::string& name, const std::string& json) {
  const fs::path dir = fs::temp_directory_path() / ("keel_dummy_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << json;
  return dir.string();
}

void expect_forward_runs(const std::string& dir) {
  auto m = load_model({.path = dir, .backend = "cpu", .dummy_weights = true, .backend_options = {.n_threads = 1}});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const int64_t vocab = (*m)->config().vocab_size;
  auto kv = (*m)->make_kv_storage(8).value();
  Batch b{.tokens = {1, 5, 9}, .positions = {0, 1, 2}, .slots = {0, 1, 2}, .seqs = {}, .logit_rows = {2}};
  b.seqs.push_back({.q_begin = 0, .n_q = 3, .ctx_slots = {0, 1, 2}});
  std::vector<float> logits(static_cast<size_t>(vocab));
  ASSERT_TRUE((*m)->forward(b, kv, logits).ok());
  float lo = logits[0], hi = logits[0];
  for (float x : logits) {
    ASSERT_TRUE(std::isfinite(x));
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  EXPECT_LT(lo, hi);  // random weights, not zeros
  fs::remove_all(dir);
}

TEST(DummyWeights, LlamaQwen2Qwen3ShapesRunAForward) {
  const std::string common = R"("hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 64,
      "rms_norm_eps": 1e-5)";
  expect_forward_runs(write_config("llama", R"({"architectures": ["LlamaForCausalLM"], "tie_word_embeddings": false, )" + common + "}"));
  expect_forward_runs(write_config("qwen2", R"({"architectures": ["Qwen2ForCausalLM"], "tie_word_embeddings": true, )" + common + "}"));
  expect_forward_runs(write_config("qwen3", R"({"architectures": ["Qwen3ForCausalLM"], "head_dim": 32, )" + common + "}"));
}

TEST(DummyWeights, NeedAHuggingFaceFolder) {
  const fs::path file = fs::temp_directory_path() / ("keel_dummy_file_" + std::to_string(::getpid()) + ".gguf");
  std::ofstream(file) << "not a model";
  auto m = load_model({.path = file.string(), .backend = "cpu", .dummy_weights = true});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kInvalidArgument);
  fs::remove(file);
}

}  // namespace
}  // namespace keel::model
