// Scheduler::build_batch: turns the step's allocation into the flat model::Batch (every new token with
// its position and KV slot, each sequence's visible slots, the rows whose logits are sampled; under
// overlap, where a token is still being sampled by the step in flight, the row to take it from). Reads
// sequences, changes nothing: the plan is plain data that could be built while the device runs the
// previous step.
#include "sched/scheduler.h"

namespace keel::sched {

StepPlan Scheduler::build_batch(std::vector<PlanEntry> entries) const {
  StepPlan plan;
  model::Batch& b = plan.batch;
  bool any_from_sampled = false;
  for (const PlanEntry& e : entries) {
    const Sequence& s = seq(e.seq);
    const int64_t begin = s.n_computed;
    const int64_t end = begin + e.n_new;
    KEEL_CHECK(static_cast<int64_t>(s.slots.size()) == end, "sequence {}: {} slots for {} tokens", s.id.value,
               s.slots.size(), end);
    model::BatchSeq bs{.q_begin = b.n_tokens(), .n_q = e.n_new, .ctx_slots = {}};
    cache::append_slot_indices(s.slots, bs.ctx_slots);
    const auto n_tokens = static_cast<int64_t>(s.tokens.size());
    for (int64_t i = begin; i < end; ++i) {
      if (i < n_tokens) {
        b.tokens.push_back(s.tokens[static_cast<size_t>(i)]);
        b.from_sampled.push_back(-1);
      } else {  // overlap: the token the step in flight samples, taken on the device
        KEEL_CHECK(i == n_tokens && s.sampled_row >= 0, "sequence {}: token {} of {} is unknown", s.id.value, i,
                   n_tokens);
        b.tokens.push_back(0);
        b.from_sampled.push_back(s.sampled_row);
        any_from_sampled = true;
      }
      b.positions.push_back(static_cast<int32_t>(i));
      b.slots.push_back(s.slots[static_cast<size_t>(i)].value);
    }
    b.seqs.push_back(std::move(bs));
    if (end == s.n_known()) {  // the last known token: sample the next one
      b.logit_rows.push_back(b.n_tokens() - 1);
      plan.row_seq.push_back(s.id);
    }
    if (e.n_new == 1 && begin >= s.n_prompt) {
      ++plan.n_decode_tokens;
    } else {
      plan.n_prefill_tokens += e.n_new;
    }
  }
  if (!any_from_sampled) b.from_sampled.clear();
  plan.entries = std::move(entries);
  return plan;
}

}  // namespace keel::sched
