// Scheduler::admit: moves waiting sequences into the running set, in policy order, while there is
// room in max_running and the KV pool (free + evictable slots cover their uncached tokens on top of
// what running sequences still need). A waiting request of higher priority than some running one is
// admitted regardless of KV room: allocate() then preempts the lower-priority one.
// In-batch prefix sharing (prefix_wait.h): a sequence whose tokens share at least
// prefix_wait_min_tokens uncached tokens with one computing them (running in prefill, or admitted
// earlier in this pass) waits, for at most prefix_wait_max_steps passes, and does not hold up the
// sequences behind it; once the prefix is in the tree it matches it.
#include <algorithm>
#include <limits>
#include <unordered_set>

#include "sched/policy.h"
#include "sched/prefix_wait.h"
#include "sched/scheduler.h"

namespace keel::sched {

void Scheduler::admit() {
  if (waiting_.empty()) return;
  std::vector<WaitingView> views;
  views.reserve(waiting_.size());
  for (SeqId id : waiting_) {
    const Sequence& s = seq(id);
    views.push_back(WaitingView{.priority = s.priority, .tokens = s.tokens});
  }
  const std::vector<size_t> order = order_waiting(config_.policy, views, tree_);

  int64_t reserved = 0;  // slots running sequences still need for their pending tokens
  int32_t n_width = 0;   // running samples, counting the n - 1 an unforked request will add
  int32_t lowest_priority = std::numeric_limits<int32_t>::max();
  const bool may_wait = config_.prefix_wait_max_steps > 0;
  InFlightPrefixes in_flight;
  for (SeqId id : running_) {
    Sequence& s = seq(id);
    if (may_wait) in_flight.add(s);
    const Group& g = group_of(s);
    reserved += s.n_pending();
    n_width += (s.index == 0 && !g.forked) ? g.request.n : 1;
    lowest_priority = std::min(lowest_priority, s.priority);
  }

  std::unordered_set<uint64_t> admitted;
  for (size_t i : order) {
    Sequence& s = seq(waiting_[i]);
    Group& g = group_of(s);
    const int32_t width = (s.index == 0 && !g.forked) ? g.request.n : 1;
    if (n_width + width > config_.max_running) break;
    match_prefix(s);
    // Once waiting, it keeps waiting while any further shared block is still being computed.
    const int64_t min_shared = s.prefix_wait_steps > 0 ? kPrefixBlock : config_.prefix_wait_min_tokens;
    if (may_wait && s.prefix_wait_steps < config_.prefix_wait_max_steps &&
        in_flight.shares(s, s.n_computed, min_shared)) {
      release_match(s);
      ++s.prefix_wait_steps;
      ++stats_.n_prefix_waits;
      continue;
    }
    const int64_t room = pool_.n_free() + tree_.n_evictable_tokens() - reserved;
    if (s.n_pending() > room && s.priority <= lowest_priority) {
      release_match(s);
      break;
    }
    reserved += s.n_pending();
    n_width += width;
    s.state = SeqState::kRunning;
    s.admit_order = next_admit_++;
    running_.push_back(s.id);
    admitted.insert(s.id.value);
    if (may_wait) in_flight.add(s);
    if (!g.admitted) {
      g.admitted = true;
      g.cached_tokens = static_cast<int32_t>(std::min<int64_t>(s.n_computed, s.n_prompt));
      stats_.n_prompt_tokens += s.n_prompt;
      stats_.n_cached_prompt_tokens += g.cached_tokens;
    }
  }
  std::erase_if(waiting_, [&](SeqId id) { return admitted.contains(id.value); });
}

}  // namespace keel::sched
