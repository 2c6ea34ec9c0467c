// How a sequence's KV moves into the radix tree: when its prompt is computed (in flight, so the
// prompt is shared with concurrent requests and with its n - 1 sibling samples), when it is
// preempted (the work stays cached and is evicted only if the pool needs it) and when it finishes
// (the whole conversation stays reusable). Cancelled and failed sequences drop their KV instead.
#include <span>

#include "sched/scheduler.h"

namespace keel::sched {

void Scheduler::cache_in_flight(Sequence& s) {
  KEEL_CHECK(static_cast<int64_t>(s.slots.size()) == s.n_computed, "sequence {}: {} slots for {} computed tokens",
             s.id.value, s.slots.size(), s.n_computed);
  std::span<const int32_t> tokens = std::span<const int32_t>(s.tokens).first(static_cast<size_t>(s.n_computed));
  cache::InsertResult r = tree_.insert(tokens, s.slots);
  pool_.free(r.duplicate_slots);
  tree_.lock(r.node);  // before the unlock, so the shared path never looks evictable
  tree_.unlock(s.node);
  s.node = r.node;
  s.n_in_tree = s.n_computed;
}

void Scheduler::release_to_cache(Sequence& s) {
  cache_in_flight(s);
  detach_from_tree(s);
}

void Scheduler::drop_kv(Sequence& s) {
  pool_.free(std::span<const cache::SlotId>(s.slots).subspan(static_cast<size_t>(s.n_in_tree)));
  detach_from_tree(s);
}

void Scheduler::detach_from_tree(Sequence& s) {
  tree_.unlock(s.node);
  s.node = tree_.root();
  s.slots.clear();
  s.n_computed = 0;
  s.n_in_tree = 0;
}

}  // namespace keel::sched
