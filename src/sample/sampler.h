// Turns one row of logits into a token: temperature, top-k, top-p, min-p, then an exact draw by the
// Gumbel-max trick with counter-based noise (rng.h), so a seeded request reproduces its tokens
// whatever else is in the batch. temperature == 0 is greedy. Called by the thread that owns the batch;
// scratch buffers live in SamplerScratch, one per calling thread.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "base/status.h"

namespace keel::sample {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  int32_t top_k = 0;         // 0 = off
  float top_p = 1.0f;        // 1 = off
  float min_p = 0.0f;        // 0 = off
  uint64_t seed = 0;
  // Logits processors (sample/logits_processors.h), applied before the filters above.
  float repetition_penalty = 1.0f;  // HF-style, over prompt + output tokens; 1 = off
  float frequency_penalty = 0.0f;   // OpenAI-style, over output tokens, per occurrence
  float presence_penalty = 0.0f;    // OpenAI-style, over output tokens, once
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> bias added to its logit

  // Rejects out-of-range values with a message naming the field.
  Status validate() const;
};

struct SamplerScratch {
  std::vector<int32_t> ids;
  std::vector<float> probs;
};

// Index of the largest logit (lowest index on ties).
int32_t argmax(std::span<const float> logits);

// Samples a token for the sequence's `position` (the index of the token being produced).
int32_t sample_token(std::span<const float> logits, const SamplingParams& params, int64_t position,
                     SamplerScratch& scratch);

// The probabilities sample_token draws from after all filters (for tests): prob[i] for every id.
std::vector<double> sampling_distribution(std::span<const float> logits, const SamplingParams& params);

}  // namespace keel::sample
