// power_of_two: two distinct random candidates, the less loaded one wins (ties: the first drawn).
#include "router/policy.h"

namespace keel::router {
namespace {

class PowerOfTwo final : public Policy {
 public:
  std::string_view name() const override { return "power_of_two"; }
  Pick pick(const RouteRequest& req, std::span<const CandidateView> c) override {
    if (c.empty()) return {};
    const uint64_t n = c.size();
    auto a = static_cast<int32_t>(req.random % n);
    if (n == 1) return {.index = a, .decision = Decision::kPowerOfTwo};
    auto b = static_cast<int32_t>((a + 1 + (req.random >> 32) % (n - 1)) % n);
    return {.index = c[static_cast<size_t>(b)].load < c[static_cast<size_t>(a)].load ? b : a,
            .decision = Decision::kPowerOfTwo};
  }
};

}  // namespace

std::unique_ptr<Policy> make_power_of_two() { return std::make_unique<PowerOfTwo>(); }

}  // namespace keel::router
