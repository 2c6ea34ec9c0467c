#include <algorithm>
#include <numeric>

#include "sched/policy.h"

namespace keel::sched {

std::vector<size_t> order_fcfs(std::span<const WaitingView> waiting) {
  std::vector<size_t> order(waiting.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return waiting[a].priority > waiting[b].priority; });
  return order;
}

std::vector<size_t> order_waiting(Policy policy, std::span<const WaitingView> waiting, cache::RadixTree& tree) {
  switch (policy) {
    case Policy::kFcfs: return order_fcfs(waiting);
    case Policy::kLongestPrefix: return order_longest_prefix(waiting, tree);
  }
  return order_fcfs(waiting);
}

}  // namespace keel::sched
