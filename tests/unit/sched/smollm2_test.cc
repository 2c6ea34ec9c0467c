// The scheduler on the real default model (SmolLM2-135M-Instruct Q4_1, scripts/fetch_model.sh) with
// its own tokenizer: batched requests sharing a system prompt give the one-at-a-time greedy tokens
// and text, and reuse the shared prefix.
#include <gtest/gtest.h>

#include "format/gguf.h"
#include "sched/scheduler.h"
#include "unit/sched/sched_test_util.h"

namespace keel::sched {
namespace {

using test::Collected;
using test::Collector;
using test::greedy_request;
using test::reference_tokens;

TEST(SmolLm2, BatchedRequestsMatchOneAtATimeAndShareTheSystemPrompt) {
  const std::string path = keel::test::default_model_path();
  ASSERT_TRUE(keel::test::exists(path)) << path << " is missing: run scripts/fetch_model.sh";
  auto gguf = format::GgufFile::open(path);
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  auto tok = tokenizer::Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  auto m = model::load_model({.path = path, .backend = "cpu", .backend_options = {.n_threads = 2}});
  ASSERT_TRUE(m.ok()) << m.status().to_string();

  const std::string system = "<|im_start|>system\nYou are a helpful assistant who answers briefly.<|im_end|>\n";
  const std::vector<std::string> questions = {"What is the capital of France?", "Name three colors.",
                                              "Count from one to five."};
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& q : questions) {
    prompts.push_back((*tok)->encode(system + "<|im_start|>user\n" + q + "<|im_end|>\n<|im_start|>assistant\n",
                                     {.add_special = false}));
  }
  const std::vector<int32_t> system_ids = (*tok)->encode(system, {.add_special = false});

  auto s =
      Scheduler::create({.model = m->get(),
                         .tokenizer = tok->get(),
                         .config = {.kv_tokens = 1024, .max_batch_tokens = 32, .prefill_chunk = 16, .max_running = 4}});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Collector col;
  // The first request caches the system prompt; the other two arrive while it decodes.
  ASSERT_TRUE((*s)->enqueue(greedy_request(1, prompts[0], 8), col.sink()).ok());
  for (int i = 0; i < 4; ++i) (*s)->step();
  for (RequestId id = 2; id <= 3; ++id) {
    ASSERT_TRUE((*s)->enqueue(greedy_request(id, prompts[id - 1], 8), col.sink()).ok());
  }
  for (int i = 0; i < 200 && !(*s)->idle(); ++i) {
    (*s)->step();
    ASSERT_TRUE((*s)->check_invariants().ok());
  }
  ASSERT_TRUE((*s)->idle());
  for (RequestId id = 1; id <= 3; ++id) {
    Collected c = col.get(id);
    const std::vector<int32_t> ref = reference_tokens(**m, prompts[id - 1], 8);
    EXPECT_EQ(c.tokens, ref) << "request " << id;
    EXPECT_EQ(c.text, (*tok)->decode(ref, true)) << "request " << id;
    std::printf("request %llu: %s\n", static_cast<unsigned long long>(id), c.text.c_str());
    if (id > 1) {
      EXPECT_GE(c.last.cached_tokens, static_cast<int32_t>(system_ids.size()) - 1) << "request " << id;
    }
  }
  EXPECT_GT((*s)->stats().n_mixed_steps, 0);
}

}  // namespace
}  // namespace keel::sched
