// Log-probabilities for the OpenAI `logprobs` / `top_logprobs` fields, computed from the model's raw
// logits (before temperature and processors, as OpenAI reports them). Scheduler thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace keel::sample {

struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0.0f;                                 // of the chosen token
  std::vector<std::pair<int32_t, float>> top;           // k most likely, descending
};

// log_softmax(logits)[chosen] and the k most likely tokens with their log-probabilities.
TokenLogprobs compute_logprobs(std::span<const float> logits, int32_t chosen, int32_t k);

}  // namespace keel::sample
