// Overlap scheduling (docs/scheduler.md "Overlap"): a step's samples stay in flight. launch_sampling
// queues the sampling of step N on the device (Backend::sample_rows_async) and marks each sampled
// sequence with its output row; step N+1 is then planned and its forward queued with those tokens
// taken on the device (Batch::from_sampled), and only then resolve_in_flight reads step N's tokens and
// streams them while step N+1 runs. A sequence that stopped at step N was already planned into step
// N+1: that step computes its last token (valid K/V, cached with the rest when it finishes) and
// drop_stale_rows leaves it out of step N+1's sampling, so no token past the stop is ever sampled.
// With host sampling (overlap_on_host) the tokens are known at once and run() substitutes them.
#include <algorithm>

#include "sched/scheduler.h"

namespace keel::sched {

bool Scheduler::may_overlap(const std::vector<std::vector<SeqId>>& row_seqs) const {
  // Log-probabilities need the step's raw logits rows, which the next forward overwrites: such steps
  // are sampled and streamed at once (sample_on_device copies the rows back).
  for (const std::vector<SeqId>& ids : row_seqs) {
    for (SeqId id : ids) {
      if (group_of(seq(id)).request.top_logprobs >= 0) return false;
    }
  }
  return true;
}

void Scheduler::launch_sampling(const StepPlan& plan, const std::vector<std::vector<SeqId>>& row_seqs) {
  InFlight f;
  std::vector<SampledToken> failed;  // rows the grammar allows no token for: they end now
  if (device_sampling_) {
    std::vector<size_t> out_of_row;
    std::vector<SampledToken> out = device_rows(row_seqs, out_of_row);
    std::vector<uint8_t> is_row(out.size(), 0);
    for (size_t k : out_of_row) is_row[k] = 1;
    for (size_t i = 0; i < out.size(); ++i) {
      if (!is_row[i]) failed.push_back(std::move(out[i]));
    }
    for (size_t k : out_of_row) f.rows.push_back(std::move(out[k]));
    if (!dev_rows_.empty()) {
      model_.backend().sample_rows_async(device_logits_,
                                         {.rows = dev_rows_, .procs = dev_procs_, .masks = dev_masks_});
      f.on_device = true;
    }
  } else {
    for (SampledToken& t : sample(plan, row_seqs)) {
      if (t.error.empty()) {
        f.rows.push_back(std::move(t));
      } else {
        failed.push_back(std::move(t));
      }
    }
  }
  stream(failed);
  for (size_t k = 0; k < f.rows.size(); ++k) seq(f.rows[k].seq).sampled_row = static_cast<int32_t>(k);
  if (!f.rows.empty()) in_flight_ = std::move(f);
}

void Scheduler::resolve_in_flight() {
  if (!in_flight_) return;
  InFlight f = std::move(*in_flight_);
  in_flight_.reset();
  if (f.on_device) {
    std::vector<int32_t> tokens(f.rows.size());
    model_.backend().wait_sampled(tokens);
    for (size_t k = 0; k < tokens.size(); ++k) f.rows[k].token = tokens[k];
  }
  std::vector<SampledToken> live;
  live.reserve(f.rows.size());
  for (SampledToken& t : f.rows) {
    auto it = seqs_.find(t.seq.value);
    if (it == seqs_.end()) continue;  // cancelled (or failed) while its token was in flight
    it->second->sampled_row = -1;
    live.push_back(std::move(t));
  }
  stream(live);
}

void Scheduler::drop_stale_rows(std::vector<std::vector<SeqId>>& row_seqs) const {
  for (std::vector<SeqId>& ids : row_seqs) {
    std::erase_if(ids, [&](SeqId id) {
      const Sequence& s = seq(id);
      return s.state != SeqState::kRunning || s.n_computed != static_cast<int64_t>(s.tokens.size());
    });
  }
}

}  // namespace keel::sched
