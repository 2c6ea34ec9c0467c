// Scheduler::allocate: decides how many tokens each running sequence computes this step and gives
// them KV slots. Decoding sequences come first (one token each: a long prompt never stalls a running
// stream), then prefill chunks (at most prefill_chunk tokens per sequence) while the step's token
// budget lasts; each group in rank order (priority, then admission). On a slot shortage it evicts
// unlocked cache, then preempts the lowest-ranked running sequence below the one asking; with no such
// victim a prefill takes a shorter chunk, and a decode preempts itself.
#include <algorithm>

#include "sched/scheduler.h"

namespace keel::sched {
namespace {

// True when a keeps its KV over b: higher priority, then earlier admission.
bool outranks(const Sequence& a, const Sequence& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  return a.admit_order < b.admit_order;
}

int32_t planned_tokens(const std::vector<PlanEntry>& planned) {
  int32_t n = 0;
  for (const PlanEntry& e : planned) n += e.n_new;
  return n;
}

}  // namespace

std::vector<PlanEntry> Scheduler::allocate() {
  std::vector<Sequence*> order;
  order.reserve(running_.size());
  for (SeqId id : running_) order.push_back(&seq(id));
  std::stable_sort(order.begin(), order.end(), [](const Sequence* a, const Sequence* b) {
    const bool a_one = a->n_pending() == 1, b_one = b->n_pending() == 1;
    if (a_one != b_one) return a_one;
    return outranks(*a, *b);
  });
  std::vector<PlanEntry> planned;
  for (Sequence* s : order) {
    if (s->state != SeqState::kRunning) continue;  // preempted by a sequence before it
    const int32_t budget = config_.max_batch_tokens - planned_tokens(planned);
    int32_t n = static_cast<int32_t>(std::min<int64_t>({s->n_pending(), config_.prefill_chunk, budget}));
    if (n <= 0) continue;
    if (!reserve_slots(*s, n, planned)) continue;
    planned.push_back(PlanEntry{.seq = s->id, .n_new = n});
  }
  return planned;
}

bool Scheduler::evict_for(int64_t n) {
  while (pool_.n_free() < n && tree_.n_evictable_tokens() > 0) {
    std::vector<cache::SlotId> freed;
    tree_.evict(n - pool_.n_free(), freed);
    pool_.free(freed);
  }
  return pool_.n_free() >= n;
}

bool Scheduler::reserve_slots(Sequence& s, int32_t& n, std::vector<PlanEntry>& planned) {
  while (!evict_for(n)) {
    Sequence* victim = nullptr;
    for (SeqId id : running_) {
      Sequence& r = seq(id);
      if (&r == &s || !outranks(s, r)) continue;
      if (victim == nullptr || outranks(*victim, r)) victim = &r;
    }
    if (victim != nullptr) {
      preempt(*victim, planned);
      continue;
    }
    if (pool_.n_free() > 0) {  // n > 1: a prefill; take what there is
      n = static_cast<int32_t>(pool_.n_free());
      break;
    }
    preempt(s, planned);
    return false;
  }
  Status got = pool_.alloc(n, s.slots);
  KEEL_CHECK(got.ok(), "allocating {} slots with {} free: {}", n, pool_.n_free(), got.to_string());
  return true;
}

}  // namespace keel::sched
