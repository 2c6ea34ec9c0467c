#include <algorithm>
#include <numeric>

#include "sched/policy.h"

namespace keel::sched {

std::vector<size_t> order_longest_prefix(std::span<const WaitingView> waiting, cache::RadixTree& tree) {
  std::vector<int64_t> cached(waiting.size(), 0);
  const size_t n_measured = std::min(waiting.size(), kLongestPrefixWindow);
  for (size_t i = 0; i < n_measured; ++i) {
    std::span<const int32_t> t = waiting[i].tokens;
    if (t.size() > 1) cached[i] = tree.match(t.first(t.size() - 1)).prefix_len;
  }
  std::vector<size_t> order(waiting.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (waiting[a].priority != waiting[b].priority) return waiting[a].priority > waiting[b].priority;
    return cached[a] > cached[b];
  });
  return order;
}

}  // namespace keel::sched
