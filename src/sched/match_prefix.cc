// Scheduler::match_prefix: looks a sequence's tokens up in the radix tree when it is admitted (or
// resumed after preemption) and locks the matched node, so its cached prefix is neither recomputed
// nor evicted while it runs. Matches tokens[0, n-1): the last token is always computed, for its logits.
#include <span>

#include "sched/scheduler.h"

namespace keel::sched {

void Scheduler::match_prefix(Sequence& s) {
  KEEL_CHECK(s.slots.empty() && s.n_computed == 0 && s.n_in_tree == 0, "sequence {} holds KV before matching",
             s.id.value);
  std::span<const int32_t> tokens(s.tokens);
  cache::PrefixMatch m = tree_.match(tokens.first(tokens.size() - 1));
  tree_.lock(m.node);
  s.node = m.node;
  s.slots = std::move(m.slots);
  s.n_computed = m.prefix_len;
  s.n_in_tree = m.prefix_len;
}

void Scheduler::release_match(Sequence& s) {
  KEEL_CHECK(s.n_owned_slots() == 0, "sequence {} owns slots it would leak", s.id.value);
  detach_from_tree(s);
}

}  // namespace keel::sched
