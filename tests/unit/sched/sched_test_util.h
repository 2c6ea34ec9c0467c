// Test helpers for the scheduler: the tiny HF Llama (tests/golden/hf/llama, random weights, vocab 128)
// with a synthetic two-letter vocabulary, an event collector, and the reference every scheduled
// output is compared with: one sequence at a time through Model::forward (whole prompt, then one
// token per pass, contiguous slots), no scheduler involved.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_paths.h"
#include "model/model.h"
#include "sample/logits_processors.h"
#include "sample/sampler.h"
#include "sched/engine.h"
#include "sched/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace keel::sched::test {

inline std::unique_ptr<model::Model> load_tiny_llama() {
  auto m = model::load_model(
      {.path = keel::test::golden_dir() + "/hf/llama", .backend = "cpu", .backend_options = {.n_threads = 1}});
  EXPECT_TRUE(m.ok()) << m.status().to_string() << " (run tests/golden/hf/gen_tiny_models.py)";
  return m.ok() ? std::move(m).value() : nullptr;
}

// Token i is two lower-case letters ("aa", "ab", ...), except 1 = <s> and 2 = </s> (control).
inline std::unique_ptr<tokenizer::Tokenizer> tiny_tokenizer(int32_t n_vocab, int32_t eos_id = 2) {
  tokenizer::VocabSpec spec;
  for (int32_t i = 0; i < n_vocab; ++i) {
    std::string t{static_cast<char>('a' + i / 26), static_cast<char>('a' + i % 26)};
    tokenizer::TokenType type = tokenizer::TokenType::kNormal;
    if (i == 1 || i == 2) {
      t = i == 1 ? "<s>" : "</s>";
      type = tokenizer::TokenType::kControl;
    }
    spec.tokens.push_back(t);
    spec.types.push_back(type);
  }
  spec.pre_tokenizer = "gpt-2";
  spec.bos_id = 1;
  spec.eos_id = eos_id;
  auto tok = tokenizer::Tokenizer::create(std::move(spec));
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return std::move(tok).value();
}

// Base fixture of the scheduler tests: the tiny model and tokenizer, loaded once per test suite
// (suites run one after another, so the shared pointers are never used by two at once).
class TinyModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = load_tiny_llama().release();
    tok_ = tiny_tokenizer(128).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
    delete tok_;
    tok_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(model_, nullptr); }

  static std::unique_ptr<Scheduler> make_scheduler(SchedConfig c) {
    auto s = Scheduler::create({.model = model_, .tokenizer = tok_, .config = c});
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  static inline model::Model* model_ = nullptr;
  static inline tokenizer::Tokenizer* tok_ = nullptr;
};

// Greedy (or seeded) generation of n_new tokens, one sequence alone.
inline std::vector<int32_t> reference_tokens(model::Model& m, const std::vector<int32_t>& prompt, int32_t n_new,
                                             const sample::SamplingParams& params = {.temperature = 0.0f}) {
  const auto n = static_cast<int32_t>(prompt.size());
  auto kv = m.make_kv_storage(n + n_new);
  EXPECT_TRUE(kv.ok());
  const int64_t vocab = m.config().vocab_size;
  std::vector<float> logits(static_cast<size_t>(vocab));
  sample::SamplerScratch scratch;
  sample::TokenHistory history;
  history.add_prompt(prompt);
  std::vector<int32_t> all = prompt;
  std::vector<int32_t> out;
  int32_t done = 0;
  while (static_cast<int32_t>(out.size()) < n_new) {
    const auto len = static_cast<int32_t>(all.size());
    model::Batch b;
    model::BatchSeq s{.q_begin = 0, .n_q = len - done, .ctx_slots = {}};
    for (int32_t i = 0; i < len; ++i) s.ctx_slots.push_back(i);
    for (int32_t i = done; i < len; ++i) {
      b.tokens.push_back(all[static_cast<size_t>(i)]);
      b.positions.push_back(i);
      b.slots.push_back(i);
    }
    b.seqs.push_back(std::move(s));
    b.logit_rows.push_back(len - done - 1);
    Status st = m.forward(b, *kv, logits);
    EXPECT_TRUE(st.ok()) << st.to_string();
    done = len;
    std::vector<float> row = logits;
    sample::apply_processors(row, params, history);
    const int32_t t = sample::sample_token(row, params, len, scratch);
    history.add_output(t);
    out.push_back(t);
    all.push_back(t);
  }
  return out;
}

// What one sample's events added up to.
struct Collected {
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<TokenLogprob> logprobs;
  std::vector<std::vector<TokenLogprob>> top_logprobs;
  int32_t n_events = 0;
  FinishReason finish = FinishReason::kNone;
  StreamEvent last;  // the final event (usage figures)
};

// Collects events per (request id, sample index); thread-safe.
class Collector {
 public:
  EventSink sink() {
    return [this](StreamEvent&& ev) {
      std::lock_guard lock(mu_);
      Collected& c = got_[{ev.id, ev.index}];
      EXPECT_EQ(c.finish, FinishReason::kNone) << "event after the final one for " << ev.id << "/" << ev.index;
      c.tokens.insert(c.tokens.end(), ev.tokens.begin(), ev.tokens.end());
      c.text += ev.text;
      c.logprobs.insert(c.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
      c.top_logprobs.insert(c.top_logprobs.end(), ev.top_logprobs.begin(), ev.top_logprobs.end());
      ++c.n_events;
      if (ev.finish != FinishReason::kNone) {
        c.finish = ev.finish;
        c.last = ev;
        ++n_final_;
      }
    };
  }
  Collected get(RequestId id, int32_t index = 0) {
    std::lock_guard lock(mu_);
    return got_[{id, index}];
  }
  int32_t n_final() {
    std::lock_guard lock(mu_);
    return n_final_;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<RequestId, int32_t>, Collected> got_;
  int32_t n_final_ = 0;
};

// Steps the scheduler until it is idle (at most max_steps), checking its invariants after every step;
// the number of steps taken.
inline int run_to_idle(Scheduler& s, int max_steps = 3000) {
  int n = 0;
  while (!s.idle() && n < max_steps) {
    s.step();
    ++n;
    Status inv = s.check_invariants();
    EXPECT_TRUE(inv.ok()) << "after step " << n << ": " << inv.to_string();
    if (!inv.ok()) break;
  }
  EXPECT_TRUE(s.idle()) << "not idle after " << n << " steps";
  return n;
}

inline GenerateRequest greedy_request(RequestId id, std::vector<int32_t> prompt, int32_t max_tokens) {
  GenerateRequest r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.stop.max_tokens = max_tokens;
  r.stop.ignore_eos = true;
  return r;
}

// A prompt of `len` tokens in [3, 128) from a simple generator (no BOS/EOS inside).
inline std::vector<int32_t> make_prompt(int32_t len, uint32_t seed) {
  std::vector<int32_t> p;
  uint32_t x = seed * 2654435761u + 12345u;
  for (int32_t i = 0; i < len; ++i) {
    x = x * 1103515245u + 12345u;
    p.push_back(3 + static_cast<int32_t>((x >> 16) % 125));
  }
  return p;
}

}  // namespace keel::sched::test
