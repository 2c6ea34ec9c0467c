// round_robin: the next candidate in turn (a shared counter, so concurrent picks spread evenly).
#include "router/policy.h"

namespace keel::router {
namespace {

class RoundRobin final : public Policy {
 public:
  std::string_view name() const override { return "round_robin"; }
  Pick pick(const RouteRequest&, std::span<const CandidateView> c) override {
    if (c.empty()) return {};
    uint64_t n = next_.fetch_add(1, std::memory_order_relaxed);
    return {.index = static_cast<int32_t>(n % c.size()), .decision = Decision::kRoundRobin};
  }

 private:
  std::atomic<uint64_t> next_{0};
};

}  // namespace

std::unique_ptr<Policy> make_round_robin() { return std::make_unique<RoundRobin>(); }

}  // namespace keel::router
