// load_model and Model error paths: missing files, configs that disagree with the tensors, malformed
// batches; and the intermediate-tensor dump hook.
#include <filesystem>
#include <functional>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "common/test_paths.h"
#include "model/model.h"

namespace keel::model {
namespace {

namespace fs = std::filesystem;

std::string tiny(const std::string& name) { return keel::test::golden_dir() + "/hf/" + name; }

Result<std::unique_ptr<Model>> load(const std::string& path) {
  return load_model({.path = path, .backend = "cpu", .backend_options = {.n_threads = 1}});
}

TEST(LoadModel, MissingPath) {
  auto m = load("/nonexistent/model.gguf");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kNotFound);
}

// A copy of the tiny Qwen3 folder whose config.json was edited by `edit`.
std::string edited_copy(const std::string& tag, const std::function<void(std::string&)>& edit) {
  const fs::path dir = fs::temp_directory_path() / ("keel_load_test_" + tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(tiny("qwen3") + "/model.safetensors", dir / "model.safetensors");
  auto text = read_text_file(tiny("qwen3") + "/config.json");
  EXPECT_TRUE(text.ok());
  std::string s = *text;
  edit(s);
  std::ofstream(dir / "config.json") << s;
  return dir.string();
}

void replace(std::string& s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  s.replace(at, from.size(), to);
}

TEST(LoadModel, ConfigAndTensorsDisagree) {
  auto more_layers = load(edited_copy("layers", [](std::string& s) {
    replace(s, "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 3");
  }));
  ASSERT_FALSE(more_layers.ok());
  EXPECT_EQ(more_layers.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(more_layers.status().message().find("model.layers.2.input_layernorm.weight"), std::string::npos)
      << more_layers.status().to_string();

  auto wider = load(edited_copy("ffn", [](std::string& s) {
    replace(s, "\"intermediate_size\": 64", "\"intermediate_size\": 96");
  }));
  ASSERT_FALSE(wider.ok());
  EXPECT_EQ(wider.status().code(), ErrorCode::kCorruptFile);
  EXPECT_NE(wider.status().message().find("mlp.gate_proj.weight"), std::string::npos) << wider.status().to_string();

  auto bad_json = load(edited_copy("json", [](std::string& s) { s.resize(s.size() / 2); }));
  ASSERT_FALSE(bad_json.ok());
  EXPECT_NE(bad_json.status().message().find("config.json"), std::string::npos) << bad_json.status().to_string();
}

class TinyModel : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = load(tiny("qwen3"));
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    auto kv = model_->make_kv_storage(16);
    ASSERT_TRUE(kv.ok());
    kv_ = std::move(kv).value();
  }
  static Batch batch() {
    Batch b;
    b.tokens = {1, 5, 9};
    b.positions = {0, 1, 2};
    b.slots = {3, 4, 5};
    b.seqs = {{.q_begin = 0, .n_q = 3, .ctx_slots = {3, 4, 5}}};
    b.logit_rows = {2, 0};
    return b;
  }
  std::unique_ptr<Model> model_;
  KvStorage kv_;
};

TEST_F(TinyModel, RejectsMalformedInput) {
  const size_t vocab = static_cast<size_t>(model_->config().vocab_size);
  std::vector<float> logits(2 * vocab);
  Batch b = batch();
  b.tokens[1] = static_cast<int32_t>(vocab);
  EXPECT_EQ(model_->forward(b, kv_, logits).code(), ErrorCode::kInvalidArgument);
  std::vector<float> short_logits(vocab);
  EXPECT_EQ(model_->forward(batch(), kv_, short_logits).code(), ErrorCode::kInvalidArgument);
  KvStorage empty;
  EXPECT_EQ(model_->forward(batch(), empty, logits).code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(model_->make_kv_storage(0).ok());
  EXPECT_TRUE(model_->forward(batch(), kv_, logits).ok());
}

TEST_F(TinyModel, DumpHookSeesNamedTensorsAndTheLogits) {
  const int64_t vocab = model_->config().vocab_size;
  std::set<std::pair<std::string, int>> seen;
  std::vector<float> dumped;
  model_->set_dump_hook([&](std::string_view name, int layer, const backend::Tensor& t) {
    seen.insert({std::string(name), layer});
    if (name == "result_output") {
      dumped.resize(static_cast<size_t>(t.numel()));
      model_->backend().copy_to_host(t, dumped);
    }
    if (name == "Qcur") {
      EXPECT_EQ(t.shape, tensor::make_shape({3, 4, 24}));
    }
  });
  std::vector<float> logits(2 * static_cast<size_t>(vocab));
  ASSERT_TRUE(model_->forward(batch(), kv_, logits).ok());
  for (const char* name : {"attn_norm", "Qcur", "Kcur", "Vcur", "kqv_out", "attn_out", "ffn_inp", "ffn_norm",
                           "ffn_act", "ffn_out"}) {
    EXPECT_TRUE(seen.count({name, 0}) && seen.count({name, 1})) << name;
  }
  EXPECT_TRUE(seen.count({"inp_embd", -1}));
  EXPECT_TRUE(seen.count({"result_norm", -1}));
  EXPECT_EQ(dumped, logits);

  model_->set_dump_hook({});
  seen.clear();
  ASSERT_TRUE(model_->forward(batch(), kv_, logits).ok());
  EXPECT_TRUE(seen.empty());
}

}  // namespace
}  // namespace keel::model
