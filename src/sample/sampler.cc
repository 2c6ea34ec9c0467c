#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "sample/rng.h"

namespace keel::sample {
namespace {

// Keeps, in scratch.ids, the candidate ids that survive top-k, top-p and min-p, sorted by logit
// descending when any filter is on (all ids otherwise), with their softmax probabilities at the
// temperature in scratch.probs (normalised over the survivors).
void filter_candidates(std::span<const float> logits, const SamplingParams& p, SamplerScratch& s) {
  const int32_t n = static_cast<int32_t>(logits.size());
  s.ids.resize(static_cast<size_t>(n));
  std::iota(s.ids.begin(), s.ids.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  };
  int32_t keep = n;
  if (p.top_k > 0 && p.top_k < n) {
    std::partial_sort(s.ids.begin(), s.ids.begin() + p.top_k, s.ids.end(), by_logit);
    keep = p.top_k;
  } else if (p.top_p < 1.0f || p.min_p > 0.0f) {
    std::sort(s.ids.begin(), s.ids.end(), by_logit);
  }
  s.ids.resize(static_cast<size_t>(keep));
  const float max_logit = logits[static_cast<size_t>(*std::max_element(
      s.ids.begin(), s.ids.end(), [&](int32_t a, int32_t b) { return by_logit(b, a); }))];
  s.probs.resize(s.ids.size());
  double sum = 0.0;
  for (size_t i = 0; i < s.ids.size(); ++i) {
    double e = std::exp((static_cast<double>(logits[static_cast<size_t>(s.ids[i])]) - max_logit) / p.temperature);
    s.probs[i] = static_cast<float>(e);
    sum += e;
  }
  size_t cut = s.ids.size();
  if (p.min_p > 0.0f) {  // ids are sorted: the first has probability max
    const double floor = static_cast<double>(p.min_p) * (static_cast<double>(s.probs[0]) / sum);
    for (size_t i = 0; i < cut; ++i) {
      if (static_cast<double>(s.probs[i]) / sum < floor) {
        cut = i;
        break;
      }
    }
  }
  if (p.top_p < 1.0f) {
    double acc = 0.0;
    for (size_t i = 0; i < cut; ++i) {
      acc += static_cast<double>(s.probs[i]) / sum;
      if (acc >= static_cast<double>(p.top_p)) {
        cut = i + 1;
        break;
      }
    }
  }
  s.ids.resize(std::max<size_t>(cut, 1));
  s.probs.resize(s.ids.size());
  double kept = 0.0;
  for (float v : s.probs) kept += v;
  for (float& v : s.probs) v = static_cast<float>(v / kept);
}

}  // namespace

Status SamplingParams::validate() const {
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    return make_error(ErrorCode::kInvalidArgument, "temperature must be a finite number >= 0, got {}", temperature);
  }
  if (top_k < 0) return make_error(ErrorCode::kInvalidArgument, "top_k must be >= 0, got {}", top_k);
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return make_error(ErrorCode::kInvalidArgument, "top_p must be in (0, 1], got {}", top_p);
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return make_error(ErrorCode::kInvalidArgument, "min_p must be in [0, 1], got {}", min_p);
  }
  if (!(repetition_penalty > 0.0f && repetition_penalty <= 10.0f)) {
    return make_error(ErrorCode::kInvalidArgument, "repetition_penalty must be in (0, 10], got {}", repetition_penalty);
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return make_error(ErrorCode::kInvalidArgument, "frequency_penalty must be in [-2, 2], got {}", frequency_penalty);
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return make_error(ErrorCode::kInvalidArgument, "presence_penalty must be in [-2, 2], got {}", presence_penalty);
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return make_error(ErrorCode::kInvalidArgument, "logit_bias: token id {} is negative", id);
    if (!(bias >= -100.0f && bias <= 100.0f)) {
      return make_error(ErrorCode::kInvalidArgument, "logit_bias: bias for token {} must be in [-100, 100], got {}", id, bias);
    }
  }
  return {};
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int32_t sample_token(std::span<const float> logits, const SamplingParams& params, int64_t position,
                     SamplerScratch& scratch) {
  if (params.temperature == 0.0f || params.top_k == 1) return argmax(logits);
  filter_candidates(logits, params, scratch);
  // Gumbel-max over the survivors: argmax(logit_i / T - log(-log u_i)) is an exact draw from the
  // renormalised softmax (computed from logits, not the rounded probabilities).
  int32_t best = scratch.ids[0];
  double best_key = -std::numeric_limits<double>::infinity();
  const double inv_t = 1.0 / static_cast<double>(params.temperature);
  for (size_t i = 0; i < scratch.ids.size(); ++i) {
    const int32_t id = scratch.ids[i];
    const double u = uniform_open(params.seed, static_cast<uint64_t>(position), static_cast<uint64_t>(id));
    const double key = static_cast<double>(logits[static_cast<size_t>(id)]) * inv_t - std::log(-std::log(u));
    if (key > best_key) {
      best_key = key;
      best = id;
    }
  }
  return best;
}

std::vector<double> sampling_distribution(std::span<const float> logits, const SamplingParams& params) {
  std::vector<double> out(logits.size(), 0.0);
  if (params.temperature == 0.0f || params.top_k == 1) {
    out[static_cast<size_t>(argmax(logits))] = 1.0;
    return out;
  }
  SamplerScratch s;
  filter_candidates(logits, params, s);
  for (size_t i = 0; i < s.ids.size(); ++i) out[static_cast<size_t>(s.ids[i])] = s.probs[i];
  return out;
}

}  // namespace keel::sample
