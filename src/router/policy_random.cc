// random: a uniformly random candidate, from the request's random bits.
#include "router/policy.h"

namespace keel::router {
namespace {

class Random final : public Policy {
 public:
  std::string_view name() const override { return "random"; }
  Pick pick(const RouteRequest& req, std::span<const CandidateView> c) override {
    if (c.empty()) return {};
    return {.index = static_cast<int32_t>(req.random % c.size()), .decision = Decision::kRandom};
  }
};

}  // namespace

std::unique_ptr<Policy> make_random() { return std::make_unique<Random>(); }

}  // namespace keel::router
