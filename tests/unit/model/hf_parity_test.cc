// Logits of tiny random-weight models against HF transformers (tests/golden/hf/gen_tiny_models.py):
// Llama (sharded safetensors), Llama 3 RoPE scaling (tied), Qwen2 (q/k/v biases, tied, YaRN) and
// Qwen3 (q/k norms, head_dim != d_model / n_heads). Each prompt runs whole, in chunks, and
// interleaved with another sequence in one batch, with scattered KV slots.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "model/model.h"
#include "unit/model/batch_runner.h"

namespace keel::model {
namespace {

using test::run_schedule;
using test::SeqPlan;

// f32 end to end on both sides; what remains is summation order (HF uses BLAS + softmax in f32).
constexpr double kMaxRelError = 1e-4;

struct Golden {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::vector<float>> logits;  // per prompt [len, vocab]
};

Golden read_golden(const std::string& dir, int64_t vocab) {
  Golden g;
  std::ifstream jf(dir + "/golden.json");
  EXPECT_TRUE(jf.good()) << dir << "/golden.json missing: run tests/golden/hf/gen_tiny_models.py";
  nlohmann::json j = nlohmann::json::parse(jf);
  EXPECT_EQ(j["vocab_size"].get<int64_t>(), vocab);
  std::ifstream lf(dir + "/logits.f32", std::ios::binary);
  EXPECT_TRUE(lf.good());
  for (const auto& p : j["prompts"]) {
    g.prompts.push_back(p.get<std::vector<int32_t>>());
    std::vector<float> l(g.prompts.back().size() * static_cast<size_t>(vocab));
    lf.read(reinterpret_cast<char*>(l.data()), static_cast<std::streamsize>(l.size() * sizeof(float)));
    EXPECT_TRUE(lf.good()) << "logits.f32 too short";
    g.logits.push_back(std::move(l));
  }
  return g;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, int64_t vocab,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0.0;
  for (size_t r = 0; r < got.size() / static_cast<size_t>(vocab); ++r) {
    const double e = test::row_rel_error(got.data() + r * vocab, want.data() + r * vocab, vocab);
    worst = std::max(worst, e);
    EXPECT_LE(e, kMaxRelError) << what << " position " << r;
  }
  ::testing::Test::RecordProperty(what, std::to_string(worst));
  std::printf("%s: max row relative error %.3g\n", what.c_str(), worst);
}

std::vector<int32_t> scattered_slots(int n_slots, uint32_t seed) {
  std::vector<int32_t> s(static_cast<size_t>(n_slots));
  std::iota(s.begin(), s.end(), 0);
  std::shuffle(s.begin(), s.end(), std::mt19937(seed));
  return s;
}

class HfParity : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dir_ = keel::test::golden_dir() + "/hf/" + GetParam();
    auto m = load_model({.path = dir_, .backend = "cpu", .backend_options = {.n_threads = 1}});
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    golden_ = read_golden(dir_, model_->config().vocab_size);
  }
  KvStorage kv(int n) {
    auto kv = model_->make_kv_storage(n);
    EXPECT_TRUE(kv.ok());
    return std::move(kv).value();
  }

  std::string dir_;
  std::unique_ptr<Model> model_;
  Golden golden_;
};

TEST_P(HfParity, WholePrompt) {
  const int64_t vocab = model_->config().vocab_size;
  for (size_t p = 0; p < golden_.prompts.size(); ++p) {
    const auto& ids = golden_.prompts[p];
    KvStorage cache = kv(64);
    SeqPlan plan{ids, {}};
    for (size_t i = 0; i < ids.size(); ++i) plan.slots.push_back(static_cast<int32_t>(i));
    auto out = run_schedule(*model_, cache, {plan}, {{static_cast<int>(ids.size())}});
    expect_close(out[0], golden_.logits[p], vocab, "whole_prompt_" + std::to_string(p));
  }
}

TEST_P(HfParity, Chunked) {
  const int64_t vocab = model_->config().vocab_size;
  const auto& ids = golden_.prompts[2];
  ASSERT_EQ(ids.size(), 45u);
  KvStorage cache = kv(64);
  SeqPlan plan{ids, scattered_slots(64, 7)};
  plan.slots.resize(ids.size());
  // Prefill chunks of uneven sizes, then single-token decode steps.
  std::vector<std::vector<int>> chunks = {{7}, {1}, {16}, {3}, {13}, {1}, {1}, {1}, {1}, {1}};
  auto out = run_schedule(*model_, cache, {plan}, chunks);
  expect_close(out[0], golden_.logits[2], vocab, "chunked");
}

TEST_P(HfParity, TwoSequencesInterleaved) {
  const int64_t vocab = model_->config().vocab_size;
  KvStorage cache = kv(128);
  std::vector<int32_t> slots = scattered_slots(128, 11);
  SeqPlan a{golden_.prompts[1], {slots.begin(), slots.begin() + 14}};
  SeqPlan b{golden_.prompts[2], {slots.begin() + 14, slots.begin() + 59}};
  ASSERT_EQ(a.tokens.size(), 14u);
  // Per step: {a, b} new tokens; prefill chunks of one sequence beside decode tokens of the other.
  std::vector<std::vector<int>> chunks = {{5, 8}, {1, 20}, {8, 1}, {0, 15}, {0, 1}};
  std::vector<std::vector<int>> order = {{0, 1}, {1, 0}, {0, 1}, {1, 0}, {1, 0}};
  auto out = run_schedule(*model_, cache, {a, b}, chunks, order);
  expect_close(out[0], golden_.logits[1], vocab, "interleaved_a");
  expect_close(out[1], golden_.logits[2], vocab, "interleaved_b");
}

INSTANTIATE_TEST_SUITE_P(TinyModels, HfParity, ::testing::Values("llama", "llama3_rope", "qwen2_yarn", "qwen3"));

}  // namespace
}  // namespace keel::model
