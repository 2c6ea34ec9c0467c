// The burst guard's group table: an entry that none of this instance's requests keeps (a peer's route
// event, or a finished request with peers) goes group_idle_ms() after its last arrival, at the next
// sweep, so a peered instance that sees many distinct prompt groups keeps about one second of them,
// not thirty.
#include <chrono>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

#include "router/policy.h"
#include "router/service.h"

namespace keel::router {
namespace {

RouterService make_service(double burst_rate_factor) {
  RouterConfig config;
  config.cache_aware.burst_rate_factor = burst_rate_factor;
  return RouterService(config, make_cache_aware(config.cache_aware), nullptr, PromptTokenizer{});
}

TEST(RouterServiceGroups, IdleGroupsGoAfterTheBurstWindowsNotTheRateMemory) {
  RouterService svc = make_service(0);
  ASSERT_EQ(svc.group_idle_ms(), 1000);
  for (uint64_t g = 1; g <= 1000; ++g) svc.add_peer_arrival(g);
  EXPECT_EQ(svc.n_groups(), 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  // The 1,024th addition sweeps: the first thousand have been idle past the horizon.
  for (uint64_t g = 5001; g <= 5024; ++g) svc.add_peer_arrival(g);
  EXPECT_EQ(svc.n_groups(), 24);
}

TEST(RouterServiceGroups, ARateJudgedBarKeepsItsHistory) {
  RouterService svc = make_service(3);
  EXPECT_EQ(svc.group_idle_ms(), static_cast<int64_t>(3 * kGroupRateMemoryMs));
  for (uint64_t g = 1; g <= 1024; ++g) svc.add_peer_arrival(g);  // the sweep runs; nothing is that old
  EXPECT_EQ(svc.n_groups(), 1024);
}

}  // namespace
}  // namespace keel::router
