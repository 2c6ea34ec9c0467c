#include "sample/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace keel::sample {

TokenLogprobs compute_logprobs(std::span<const float> logits, int32_t chosen, int32_t k) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - max_logit));
  const double log_z = static_cast<double>(max_logit) + std::log(sum);
  TokenLogprobs out;
  out.token = chosen;
  out.logprob = static_cast<float>(static_cast<double>(logits[static_cast<size_t>(chosen)]) - log_z);
  const auto n = static_cast<int32_t>(logits.size());
  k = std::clamp(k, 0, n);
  if (k > 0) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
      return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
             (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
    });
    for (int32_t i = 0; i < k; ++i) {
      const int32_t id = ids[static_cast<size_t>(i)];
      out.top.emplace_back(id, static_cast<float>(static_cast<double>(logits[static_cast<size_t>(id)]) - log_z));
    }
  }
  return out;
}

}  // namespace keel::sample
