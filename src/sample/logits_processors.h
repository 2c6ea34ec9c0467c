// Logits processors applied to one sequence's logits row before sampling: logit_bias, HF-style
// repetition penalty (prompt + output), OpenAI-style frequency and presence penalties (output only).
// The caller keeps a TokenHistory per sequence and updates it as tokens are produced. Called by the
// thread that owns the batch (the scheduler thread).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

#include "base/status.h"
#include "sample/sampler.h"

namespace keel::sample {

// Occurrence counts of the tokens a sequence has seen, split into prompt and output.
class TokenHistory {
 public:
  void add_prompt(std::span<const int32_t> tokens);
  void add_output(int32_t token);
  const std::unordered_map<int32_t, int32_t>& output_counts() const { return output_; }
  bool seen(int32_t token) const { return prompt_.contains(token) || output_.contains(token); }
  const std::unordered_map<int32_t, int32_t>& prompt_counts() const { return prompt_; }

 private:
  std::unordered_map<int32_t, int32_t> prompt_;
  std::unordered_map<int32_t, int32_t> output_;
};

// True when any processor is on (callers skip the pass otherwise).
bool has_processors(const SamplingParams& p);

// Checks token ids in logit_bias against the vocabulary size.
Status validate_for_vocab(const SamplingParams& p, int32_t n_vocab);

// Applies logit_bias, then repetition, frequency and presence penalties, in place.
void apply_processors(std::span<float> logits, const SamplingParams& p, const TokenHistory& history);

}  // namespace keel::sample
