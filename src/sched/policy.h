// Admission order of the waiting queue. Priority comes first under every policy (higher first); the
// policy orders requests of equal priority. One policy per file: policy_fcfs.cc,
// policy_longest_prefix.cc. Called by Scheduler::admit on the scheduler thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cache/radix_tree.h"
#include "sched/sched_config.h"

namespace keel::sched {

// One waiting sequence as the policies see it, in queue order (index 0 is the front).
struct WaitingView {
  int32_t priority = 0;
  std::span<const int32_t> tokens;  // what it would compute: prompt (+ tokens generated before preemption)
};

// Indices into `waiting` in admission order.
std::vector<size_t> order_fcfs(std::span<const WaitingView> waiting);
// Longest cached prefix of tokens[0, n-1) first (ties: queue order). Measures with tree.match, which
// only touches LRU times and may split edges (neither changes what is cached). Only the first
// kLongestPrefixWindow waiting sequences are measured; the rest follow in queue order.
std::vector<size_t> order_longest_prefix(std::span<const WaitingView> waiting, cache::RadixTree& tree);
inline constexpr size_t kLongestPrefixWindow = 256;

std::vector<size_t> order_waiting(Policy policy, std::span<const WaitingView> waiting, cache::RadixTree& tree);

}  // namespace keel::sched
