#include "sample/logits_processors.h"

namespace keel::sample {

void TokenHistory::add_prompt(std::span<const int32_t> tokens) {
  for (int32_t t : tokens) ++prompt_[t];
}

void TokenHistory::add_output(int32_t token) { ++output_[token]; }

bool has_processors(const SamplingParams& p) {
  return !p.logit_bias.empty() || p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f ||
         p.presence_penalty != 0.0f;
}

Status validate_for_vocab(const SamplingParams& p, int32_t n_vocab) {
  for (const auto& [id, bias] : p.logit_bias) {
    if (id >= n_vocab) {
      return make_error(ErrorCode::kInvalidArgument, "logit_bias: token id {} is outside the vocabulary (size {})", id, n_vocab);
    }
  }
  return {};
}

void apply_processors(std::span<float> logits, const SamplingParams& p, const TokenHistory& history) {
  const auto n = static_cast<int32_t>(logits.size());
  for (const auto& [id, bias] : p.logit_bias) {
    if (id >= 0 && id < n) logits[static_cast<size_t>(id)] += bias;
  }
  if (p.repetition_penalty != 1.0f) {
    auto penalise = [&](int32_t id) {
      if (id < 0 || id >= n) return;
      float& l = logits[static_cast<size_t>(id)];
      l = l > 0.0f ? l / p.repetition_penalty : l * p.repetition_penalty;
    };
    for (const auto& [id, count] : history.prompt_counts()) penalise(id);
    for (const auto& [id, count] : history.output_counts()) {
      if (!history.prompt_counts().contains(id)) penalise(id);
    }
  }
  if (p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) {
    for (const auto& [id, count] : history.output_counts()) {
      if (id < 0 || id >= n) continue;
      logits[static_cast<size_t>(id)] -= p.frequency_penalty * static_cast<float>(count) + p.presence_penalty;
    }
  }
}

}  // namespace keel::sample
