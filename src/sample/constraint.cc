#include "sample/constraint.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

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

namespace {

class PrefixedFactory final : public ConstraintFactory {
 public:
  PrefixedFactory(std::shared_ptr<const ConstraintFactory> base, std::vector<int32_t> prefix)
      : base_(std::move(base)), prefix_(std::move(prefix)) {}

  // nullptr when a prefix token is rejected.
  std::unique_ptr<TokenConstraint> make() const override {
    auto c = base_->make();
    for (int32_t t : prefix_) {
      if (!c->accept_token(t)) return nullptr;
    }
    return c;
  }

 private:
  std::shared_ptr<const ConstraintFactory> base_;
  std::vector<int32_t> prefix_;
};

}  // namespace

std::shared_ptr<const ConstraintFactory> constraint_after_prefix(std::shared_ptr<const ConstraintFactory> base,
                                                                 std::vector<int32_t> prefix) {
  if (prefix.empty()) return base;
  auto f = std::make_shared<PrefixedFactory>(std::move(base), std::move(prefix));
  if (f->make() == nullptr) return nullptr;  // checked once here, so make() never fails later
  return f;
}

}  // namespace keel::sample
