// Scheduler::check_invariants: the radix tree's own check plus the scheduler's bookkeeping between
// steps. For tests and debugging; O(pool + tree).
#include <vector>

#include "sched/scheduler.h"

namespace keel::sched {

Status Scheduler::check_invariants() const {
  KEEL_RETURN_IF_ERROR(tree_.check_invariants());
  std::vector<uint8_t> owned_by(static_cast<size_t>(pool_.n_slots()), 0);
  int64_t n_owned = 0;
  for (SeqId id : running_) {
    const Sequence& s = seq(id);
    if (s.state != SeqState::kRunning)
      return make_error(ErrorCode::kInternal, "running sequence {} is not running", id.value);
    if (static_cast<int64_t>(s.slots.size()) != s.n_computed || s.n_in_tree > s.n_computed) {
      return make_error(ErrorCode::kInternal, "sequence {}: {} slots, {} computed, {} in the tree", id.value,
                        s.slots.size(), s.n_computed, s.n_in_tree);
    }
    if (s.n_pending() < 1) return make_error(ErrorCode::kInternal, "sequence {} has nothing to compute", id.value);
    if (!tree_.is_live(s.node) || tree_.prefix_len(s.node) != s.n_in_tree) {
      return make_error(ErrorCode::kInternal, "sequence {}: its node does not end at its {} cached tokens", id.value,
                        s.n_in_tree);
    }
    for (size_t i = static_cast<size_t>(s.n_in_tree); i < s.slots.size(); ++i) {
      const cache::SlotId slot = s.slots[i];
      if (!pool_.is_used(slot))
        return make_error(ErrorCode::kInternal, "sequence {} owns free slot {}", id.value, slot.value);
      if (owned_by[static_cast<size_t>(slot.value)]++) {
        return make_error(ErrorCode::kInternal, "slot {} is owned twice", slot.value);
      }
      ++n_owned;
    }
  }
  for (SeqId id : waiting_) {
    const Sequence& s = seq(id);
    if (s.state != SeqState::kWaiting || !s.slots.empty() || s.n_computed != 0 || !(s.node == tree_.root())) {
      return make_error(ErrorCode::kInternal, "waiting sequence {} holds KV", id.value);
    }
  }
  if (pool_.n_used() != tree_.n_cached_tokens() + n_owned) {
    return make_error(ErrorCode::kInternal, "{} slots in use, but {} cached and {} owned by running sequences",
                      pool_.n_used(), tree_.n_cached_tokens(), n_owned);
  }
  if (running_.empty() && tree_.n_locked_tokens() != 0) {
    return make_error(ErrorCode::kInternal, "{} cached tokens stay locked with nothing running",
                      tree_.n_locked_tokens());
  }
  return {};
}

}  // namespace keel::sched
