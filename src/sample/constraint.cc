#include "sample/constraint.h"

#include <algorithm>
#include <limits>

namespace keel::sample {

int64_t apply_token_mask(std::span<float> logits, std::span<const uint32_t> bitmask) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  int64_t n_allowed = 0;
  const size_t n = logits.size();
  for (size_t w = 0; w * 32 < n; ++w) {
    const uint32_t bits = w < bitmask.size() ? bitmask[w] : 0u;
    const size_t end = std::min(n, w * 32 + 32);
    if (bits == 0xffffffffu && end - w * 32 == 32) {
      n_allowed += 32;
      continue;
    }
    for (size_t i = w * 32; i < end; ++i) {
      if (bits & (1u << (i - w * 32))) {
        ++n_allowed;
      } else {
        logits[i] = kNegInf;
      }
    }
  }
  return n_allowed;
}

}  // namespace keel::sample
