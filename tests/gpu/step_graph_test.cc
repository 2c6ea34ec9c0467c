// Decode steps as CUDA graph replays against the same steps run eagerly, on a small random-weight
// Llama-shaped model (dummy weights, bf16) with GQA: batches at graph bucket sizes (1, 8, 16, 64:
// no padding) must give bitwise-identical logits; padded sizes (3, 20) within bf16 error, since the
// pad sequences change the split-KV plan. Contexts of different lengths grow over 40 steps, so the
// split length changes between replays. Also checks that each bucket was captured once and replayed
// without a re-capture (the backend's step log, KEEL_CUDA_STEP_TIMES=1), also when padded and full
// steps of one bucket alternate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "model/model.h"

namespace keel::gpu_test {
namespace {

using model::Batch;
using model::BatchSeq;

constexpr int64_t kSlotsPerSeq = 512;

std::string write_config() {
  const auto dir = std::filesystem::temp_directory_path() / ("keel_graph_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": 512, "intermediate_size": 1024, "num_hidden_layers": 3, "num_attention_heads": 8,
    "num_key_value_heads": 2, "vocab_size": 2048, "max_position_embeddings": 4096, "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";
  return dir.string();
}

struct Seq {
  int64_t base = 0;  // first KV slot
  std::vector<int32_t> tokens;
};

// The new tokens of every sequence (all of them at first: prefill; then the last one: decode).
Batch make_batch(const std::vector<Seq>& seqs, bool prefill) {
  Batch b;
  for (const Seq& s : seqs) {
    const auto len = static_cast<int32_t>(s.tokens.size());
    const int32_t first = prefill ? 0 : len - 1;
    BatchSeq bs{.q_begin = b.n_tokens(), .n_q = len - first, .ctx_slots = {}};
    for (int32_t i = 0; i < len; ++i) bs.ctx_slots.push_back(static_cast<int32_t>(s.base + i));
    for (int32_t i = first; i < len; ++i) {
      b.tokens.push_back(s.tokens[static_cast<size_t>(i)]);
      b.positions.push_back(i);
      b.slots.push_back(static_cast<int32_t>(s.base + i));
    }
    b.logit_rows.push_back(b.n_tokens() - 1);
    b.seqs.push_back(std::move(bs));
  }
  return b;
}

class StepGraphTest : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    setenv("KEEL_CUDA_STEP_TIMES", "1", 1);  // the backend logs captures (read below)
    auto m = model::load_model({.path = write_config(), .backend = "cuda", .dummy_weights = true});
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = m->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  static model::Model* model_;
};
model::Model* StepGraphTest::model_ = nullptr;

TEST_P(StepGraphTest, ReplayMatchesEager) {
  ASSERT_NE(model_, nullptr);
  const int n = GetParam();
  const int64_t vocab = model_->config().vocab_size;
  const uint64_t seed = std::random_device{}();
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 rng(seed);
  // Two KV pools: one for the eager steps, one for the graph steps.
  auto kv_eager = model_->make_kv_storage(kSlotsPerSeq * n).value();
  auto kv_graph = model_->make_kv_storage(kSlotsPerSeq * n).value();
  std::vector<Seq> seqs(static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) {
    seqs[static_cast<size_t>(s)].base = int64_t{s} * kSlotsPerSeq;
    const int len = 20 + static_cast<int>(rng() % 300);  // crosses the 64-key split threshold
    for (int i = 0; i < len; ++i) seqs[static_cast<size_t>(s)].tokens.push_back(static_cast<int32_t>(rng() % vocab));
  }
  std::vector<float> logits_eager(static_cast<size_t>(n * vocab)), logits_graph(logits_eager.size());
  setenv("KEEL_CUDA_GRAPHS", "0", 1);
  const Batch pre = make_batch(seqs, true);
  ASSERT_TRUE(model_->forward(pre, kv_eager, logits_eager).ok());
  ASSERT_TRUE(model_->forward(pre, kv_graph, logits_graph).ok());
  const bool bucket = n == 1 || n == 8 || n == 16 || n == 64;
  testing::internal::CaptureStderr();
  double worst = 0;
  for (int step = 0; step < 40; ++step) {
    const Batch b = make_batch(seqs, false);
    std::fill(logits_graph.begin(), logits_graph.end(), std::nanf(""));
    setenv("KEEL_CUDA_GRAPHS", "0", 1);
    ASSERT_TRUE(model_->forward(b, kv_eager, logits_eager).ok());
    setenv("KEEL_CUDA_GRAPHS", "1", 1);
    ASSERT_TRUE(model_->forward(b, kv_graph, logits_graph).ok());
    double num = 0, den = 0;
    for (size_t i = 0; i < logits_eager.size(); ++i) {
      const double d = static_cast<double>(logits_graph[i]) - logits_eager[i];
      num += std::isnan(d) ? INFINITY : d * d;
      den += static_cast<double>(logits_eager[i]) * logits_eager[i];
    }
    const double rel = std::sqrt(num / den);
    worst = std::max(worst, rel);
    if (bucket) {
      ASSERT_EQ(0, std::memcmp(logits_eager.data(), logits_graph.data(), logits_eager.size() * sizeof(float)))
          << "step " << step << " rel err " << rel;
    } else {
      ASSERT_LE(rel, 1e-2) << "step " << step;
    }
    for (int s = 0; s < n; ++s) {  // greedy from the eager logits, same token for both pools
      const float* row = logits_eager.data() + static_cast<size_t>(s * vocab);
      seqs[static_cast<size_t>(s)].tokens.push_back(static_cast<int32_t>(std::max_element(row, row + vocab) - row));
    }
  }
  setenv("KEEL_CUDA_GRAPHS", "0", 1);
  ASSERT_TRUE(model_->forward(make_batch(seqs, false), kv_eager, logits_eager).ok());  // prints the graph phase
  const std::string log = testing::internal::GetCapturedStderr();
  std::printf("n=%d: worst relative error graph vs eager %.3g\n%s", n, worst, log.c_str());
  size_t captures = 0;
  for (size_t at = log.find(" nodes, eager step"); at != std::string::npos; at = log.find(" nodes, eager step", at + 1)) {
    ++captures;
  }
  EXPECT_EQ(captures, 1u) << "one capture per bucket";
  EXPECT_EQ(log.find("captured again"), std::string::npos);
}

// Steps of one bucket with and without padding (n - 1 and n sequences in turn, n a bucket size) replay
// one graph: the padded step must issue the same launches as the full one (the head's logit rows are
// 0..n-1 in both), or each step captures the graph again (the serve bench re-captured 21 times per run
// before). The first two steps may capture (this test's KV pool is new); the rest must not. Run at the
// bucket sizes above 1 (a padded step of n - 1 sequences needs n > 1).
class PaddedStepGraphTest : public StepGraphTest {};

TEST_P(PaddedStepGraphTest, PaddedAndFullStepsReplayOneGraph) {
  ASSERT_NE(model_, nullptr);
  const int n = GetParam();
  const int64_t vocab = model_->config().vocab_size;
  std::mt19937_64 rng(std::random_device{}());
  auto kv_eager = model_->make_kv_storage(kSlotsPerSeq * n).value();
  auto kv_graph = model_->make_kv_storage(kSlotsPerSeq * n).value();
  std::vector<Seq> seqs(static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) {
    seqs[static_cast<size_t>(s)].base = int64_t{s} * kSlotsPerSeq;
    for (int i = 0; i < 30 + s; ++i) seqs[static_cast<size_t>(s)].tokens.push_back(static_cast<int32_t>(rng() % vocab));
  }
  std::vector<float> logits_eager(static_cast<size_t>(n * vocab)), logits_graph(logits_eager.size());
  setenv("KEEL_CUDA_GRAPHS", "0", 1);
  const Batch pre = make_batch(seqs, true);
  ASSERT_TRUE(model_->forward(pre, kv_eager, logits_eager).ok());
  ASSERT_TRUE(model_->forward(pre, kv_graph, logits_graph).ok());
  std::string log;
  for (int step = 0; step < 12; ++step) {
    if (step == 2) testing::internal::CaptureStderr();
    const std::vector<Seq> run(seqs.begin(), seqs.end() - (step % 2 == 0 ? 1 : 0));  // padded, then full
    const Batch b = make_batch(run, false);
    const size_t rows = run.size() * static_cast<size_t>(vocab);
    std::fill(logits_graph.begin(), logits_graph.end(), std::nanf(""));
    setenv("KEEL_CUDA_GRAPHS", "0", 1);
    ASSERT_TRUE(model_->forward(b, kv_eager, std::span<float>(logits_eager.data(), rows)).ok());
    setenv("KEEL_CUDA_GRAPHS", "1", 1);
    ASSERT_TRUE(model_->forward(b, kv_graph, std::span<float>(logits_graph.data(), rows)).ok());
    double num = 0, den = 0;
    for (size_t i = 0; i < rows; ++i) {
      const double d = static_cast<double>(logits_graph[i]) - logits_eager[i];
      num += std::isnan(d) ? INFINITY : d * d;
      den += static_cast<double>(logits_eager[i]) * logits_eager[i];
    }
    ASSERT_LE(std::sqrt(num / den), 1e-2) << "step " << step;
    for (size_t s = 0; s < run.size(); ++s) {
      const float* row = logits_eager.data() + s * static_cast<size_t>(vocab);
      seqs[s].tokens.push_back(static_cast<int32_t>(std::max_element(row, row + vocab) - row));
    }
  }
  setenv("KEEL_CUDA_GRAPHS", "0", 1);
  log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(log.find(" nodes, eager step"), std::string::npos) << "captured after the first two steps:\n" << log;
}

INSTANTIATE_TEST_SUITE_P(Batch, StepGraphTest, ::testing::Values(1, 3, 8, 16, 20, 64));
INSTANTIATE_TEST_SUITE_P(Bucket, PaddedStepGraphTest, ::testing::Values(8, 16, 64));

}  // namespace
}  // namespace keel::gpu_test
