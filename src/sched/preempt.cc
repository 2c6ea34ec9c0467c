// Scheduler::preempt: takes a running sequence off the device to free KV for a higher-ranked one. Its
// computed tokens go into the radix tree unlocked (allocate evicts them only as far as it must), and
// it rejoins the front of the waiting queue with its generated tokens, sampler, detokenizer and
// stop-string state, so when it is admitted again it matches what is still cached, recomputes the
// rest and continues the same stream. No request is lost.
#include <algorithm>
#include <span>

#include "sched/scheduler.h"

namespace keel::sched {

void Scheduler::preempt(Sequence& s, std::vector<PlanEntry>& planned) {
  std::erase_if(planned, [&](const PlanEntry& e) { return e.seq == s.id; });
  if (static_cast<int64_t>(s.slots.size()) > s.n_computed) {  // planned this step, never written
    pool_.free(std::span<const cache::SlotId>(s.slots).subspan(static_cast<size_t>(s.n_computed)));
    s.slots.resize(static_cast<size_t>(s.n_computed));
  }
  release_to_cache(s);
  s.state = SeqState::kWaiting;
  remove_running(s.id);
  waiting_.push_front(s.id);
  ++stats_.n_preemptions;
}

}  // namespace keel::sched
