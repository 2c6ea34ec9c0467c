// Scheduler::fork_samples: after every prefill chunk, caches the tokens computed so far in the radix
// tree (in flight: concurrent requests with the same prefix reuse it from now on, and those waiting
// for it in admit() match it) and, when a sequence's prompt is computed, for a request with
// n > 1, makes samples 1..n-1. They lock the prompt's node and share its KV slots, so the prompt is
// computed once, and each samples its first token from the same logits row with its own seed.
#include "sched/scheduler.h"

namespace keel::sched {

std::vector<std::vector<SeqId>> Scheduler::fork_samples(const StepPlan& plan) {
  for (const PlanEntry& e : plan.entries) {  // prefill chunks that do not reach the end yet
    Sequence& s = seq(e.seq);
    if (s.n_computed < static_cast<int64_t>(s.tokens.size()) && s.n_in_tree < s.n_computed) cache_in_flight(s);
  }
  std::vector<std::vector<SeqId>> row_seqs(plan.row_seq.size());
  for (size_t r = 0; r < plan.row_seq.size(); ++r) {
    Sequence& s = seq(plan.row_seq[r]);
    row_seqs[r].push_back(s.id);
    if (s.n_in_tree < s.n_prompt) cache_in_flight(s);
    Group& g = group_of(s);
    if (g.forked) continue;
    g.forked = true;
    KEEL_CHECK(s.index == 0 && s.n_computed == s.n_prompt, "request {} forks from sample {} at {} of {} tokens",
               g.request.id, s.index, s.n_computed, s.n_prompt);
    for (int32_t i = 1; i < g.request.n; ++i) {
      std::unique_ptr<Sequence> sib = new_sequence(g, i);
      sib->slots = s.slots;
      sib->n_computed = s.n_computed;
      sib->n_in_tree = s.n_in_tree;
      sib->node = s.node;
      tree_.lock(s.node);
      sib->state = SeqState::kRunning;
      sib->admit_order = next_admit_++;
      running_.push_back(sib->id);
      g.live.push_back(sib->id);
      row_seqs[r].push_back(sib->id);
      seqs_.emplace(sib->id.value, std::move(sib));
    }
  }
  return row_seqs;
}

}  // namespace keel::sched
