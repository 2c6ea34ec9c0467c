// Scheduler::export_prefix / import_prefix (KV pulls between replicas): the exported rows are the KV a
// plain forward pass of the prefix computes (an independent run of the model, not the scheduler's
// own), an imported prefix is reused by the next request (not recomputed) and gives the tokens a
// one-at-a-time greedy run gives, and bad or oversized imports are refused without touching the cache.
#include <gtest/gtest.h>

#include <cmath>

#include "unit/sched/sched_test_util.h"

namespace keel::sched {
namespace {

using test::Collector;
using test::greedy_request;
using test::make_prompt;
using test::reference_tokens;

class KvTransferTest : public test::TinyModelTest {
 protected:
  // The prefix's KV from one forward pass over contiguous slots, as a KvPrefix lays it out.
  static std::vector<float> reference_kv(const std::vector<int32_t>& prefix) {
    const auto n = static_cast<int32_t>(prefix.size());
    auto kv = model_->make_kv_storage(n);
    EXPECT_TRUE(kv.ok());
    model::Batch b;
    model::BatchSeq s{.q_begin = 0, .n_q = n, .ctx_slots = {}};
    for (int32_t i = 0; i < n; ++i) {
      s.ctx_slots.push_back(i);
      b.tokens.push_back(prefix[static_cast<size_t>(i)]);
      b.positions.push_back(i);
      b.slots.push_back(i);
    }
    b.seqs.push_back(std::move(s));
    b.logit_rows.push_back(n - 1);
    std::vector<float> logits(static_cast<size_t>(model_->config().vocab_size));
    EXPECT_TRUE(model_->forward(b, *kv, logits).ok());
    const model::ModelConfig& c = model_->config();
    const int64_t width = c.n_kv_heads * c.head_dim;
    std::vector<float> out(static_cast<size_t>(c.n_layers * 2 * n * width));
    for (int64_t l = 0; l < c.n_layers; ++l) {
      for (int k = 0; k < 2; ++k) {
        const backend::Tensor& t = (k == 0 ? kv->k : kv->v)[static_cast<size_t>(l)].tensor();
        model_->backend().copy_to_host(t, std::span<float>(out).subspan(static_cast<size_t>((l * 2 + k) * n * width),
                                                                        static_cast<size_t>(n * width)));
      }
    }
    return out;
  }

  // Runs a greedy request of `prompt` to the end; its tokens.
  static std::vector<int32_t> run(Scheduler& s, RequestId id, const std::vector<int32_t>& prompt, int32_t n_new) {
    Collector col;
    EXPECT_TRUE(s.enqueue(greedy_request(id, prompt, n_new), col.sink()).ok());
    test::run_to_idle(s);
    return col.get(id).tokens;
  }
};

TEST_F(KvTransferTest, ExportedRowsAreTheKvOfAPlainForwardPass) {
  auto a = make_scheduler({.kv_tokens = 256, .max_batch_tokens = 16, .prefill_chunk = 8, .max_running = 4});
  const std::vector<int32_t> prompt = make_prompt(40, 1);
  run(*a, 1, prompt, 4);
  KvPrefix p = a->export_prefix(prompt, 1000);
  // The finished request cached its prompt and output: the whole prompt is held.
  ASSERT_EQ(p.n_tokens(), 40);
  EXPECT_EQ(p.tokens, prompt);
  const std::vector<float> ref = reference_kv(prompt);
  ASSERT_EQ(p.data.size(), ref.size());
  ASSERT_EQ(static_cast<int64_t>(p.data.size()), 40 * a->kv_floats_per_token());
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(p.data[i] - ref[i])));
  EXPECT_LT(worst, 1e-4) << "the scheduler computed the prefix in 8-token chunks, the reference in one pass";
  EXPECT_EQ(a->stats().n_exported_tokens, 40);

  // max_tokens bounds it; an unknown prompt exports nothing.
  EXPECT_EQ(a->export_prefix(prompt, 10).n_tokens(), 10);
  EXPECT_EQ(a->export_prefix(make_prompt(20, 99), 1000).n_tokens(), 0);
  EXPECT_TRUE(a->check_invariants().ok());
}

TEST_F(KvTransferTest, AnImportedPrefixIsReusedAndGivesTheGreedyTokens) {
  auto a = make_scheduler({.kv_tokens = 256, .max_batch_tokens = 64, .prefill_chunk = 64, .max_running = 4});
  const std::vector<int32_t> shared = make_prompt(48, 2);
  run(*a, 1, shared, 2);
  KvPrefix p = a->export_prefix(shared, 1000);
  ASSERT_EQ(p.n_tokens(), 48);

  auto b = make_scheduler({.kv_tokens = 256, .max_batch_tokens = 64, .prefill_chunk = 64, .max_running = 4});
  auto added = b->import_prefix(p);
  ASSERT_TRUE(added.ok()) << added.status().to_string();
  EXPECT_EQ(added.value(), 48);
  EXPECT_EQ(b->tree().n_cached_tokens(), 48);
  EXPECT_EQ(b->stats().n_imported_tokens, 48);
  ASSERT_TRUE(b->check_invariants().ok());

  std::vector<int32_t> prompt = shared;
  const std::vector<int32_t> tail = make_prompt(6, 3);
  prompt.insert(prompt.end(), tail.begin(), tail.end());
  const std::vector<int32_t> got = run(*b, 7, prompt, 8);
  EXPECT_EQ(got, reference_tokens(*model_, prompt, 8));
  EXPECT_EQ(b->stats().n_cached_prompt_tokens, 48) << "the request reused the imported prefix";
  EXPECT_EQ(b->stats().n_prefill_tokens, 6) << "only the tail was computed";

  // Importing what is cached adds nothing; a partly cached prefix adds only its new part.
  auto again = b->import_prefix(p);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value(), 0);
  EXPECT_TRUE(b->check_invariants().ok());
}

TEST_F(KvTransferTest, APartlyCachedPrefixImportsOnlyItsNewTokens) {
  auto a = make_scheduler({.kv_tokens = 256, .max_batch_tokens = 64, .prefill_chunk = 64, .max_running = 4});
  const std::vector<int32_t> prompt = make_prompt(30, 4);
  run(*a, 1, prompt, 1);
  KvPrefix whole = a->export_prefix(prompt, 1000);
  KvPrefix head = a->export_prefix(prompt, 12);
  auto b = make_scheduler({.kv_tokens = 256, .max_batch_tokens = 64, .prefill_chunk = 64, .max_running = 4});
  ASSERT_EQ(b->import_prefix(head).value(), 12);
  ASSERT_EQ(b->import_prefix(whole).value(), 18);
  EXPECT_EQ(b->tree().n_cached_tokens(), 30);
  // And the two-part import holds the same rows as the one-part export.
  KvPrefix back = b->export_prefix(prompt, 1000);
  EXPECT_EQ(back.data, whole.data);
  EXPECT_TRUE(b->check_invariants().ok());
}

TEST_F(KvTransferTest, AnImportEvictsUnlockedCacheForRoomAndRefusesWhatCannotFit) {
  auto a = make_scheduler({.kv_tokens = 256, .max_batch_tokens = 64, .prefill_chunk = 64, .max_running = 4});
  const std::vector<int32_t> prompt = make_prompt(40, 5);
  run(*a, 1, prompt, 1);
  KvPrefix p = a->export_prefix(prompt, 1000);

  auto b = make_scheduler({.kv_tokens = 64, .max_batch_tokens = 64, .prefill_chunk = 64, .max_running = 4});
  run(*b, 2, make_prompt(40, 6), 1);  // 41 cached, unlocked
  const int64_t before = b->tree().n_cached_tokens();
  ASSERT_GT(before, 24);
  ASSERT_EQ(b->import_prefix(p).value(), 40);
  EXPECT_EQ(b->export_prefix(prompt, 1000).n_tokens(), 40);
  EXPECT_LT(b->tree().n_cached_tokens(), before + 40) << "the old prefix was evicted for room";
  EXPECT_TRUE(b->check_invariants().ok());

  // Larger than the whole pool: refused, nothing changed.
  KvPrefix big;
  big.tokens = make_prompt(80, 7);
  big.data.assign(static_cast<size_t>(80 * b->kv_floats_per_token()), 0.5f);
  const int64_t cached = b->tree().n_cached_tokens();
  auto r = b->import_prefix(big);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(b->tree().n_cached_tokens(), cached);
  EXPECT_TRUE(b->check_invariants().ok());
}

TEST_F(KvTransferTest, MalformedPrefixesAreInvalidArguments) {
  auto b = make_scheduler({.kv_tokens = 128, .max_batch_tokens = 64, .prefill_chunk = 64, .max_running = 4});
  KvPrefix short_data;
  short_data.tokens = make_prompt(4, 8);
  short_data.data.assign(static_cast<size_t>(4 * b->kv_floats_per_token() - 1), 0.0f);
  auto r = b->import_prefix(short_data);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);

  KvPrefix bad_token;
  bad_token.tokens = {5, 6, 1000};
  bad_token.data.assign(static_cast<size_t>(3 * b->kv_floats_per_token()), 0.0f);
  r = b->import_prefix(bad_token);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(b->tree().n_cached_tokens(), 0);
  EXPECT_TRUE(b->check_invariants().ok());
}

}  // namespace
}  // namespace keel::sched
