// Scheduler::run and commit: one forward pass over the step's batch into logits_ (or, sampling on the
// device, into device_logits_), then the computed
// tokens count as computed. A refused batch (a scheduler bug or a backend failure) fails the requests
// in it with kError and the scheduler keeps serving the others.
#include <algorithm>
#include <unordered_set>

#include "sched/scheduler.h"

namespace keel::sched {

Status Scheduler::run(const StepPlan& plan) {
  if (device_sampling_) {
    Result<backend::Tensor> lg = model_.forward_on_device(plan.batch, kv_);
    if (lg.ok()) {
      device_logits_ = *lg;
      return {};
    }
    if (lg.status().code() != ErrorCode::kUnsupported) return lg.status();
    device_sampling_ = false;  // a model without the device path: sample on the host from now on
  }
  logits_.resize(plan.batch.logit_rows.size() * static_cast<size_t>(n_vocab_));
  if (plan.batch.from_sampled.empty()) return model_.forward(plan.batch, kv_, logits_);
  // Overlap with host sampling: the tokens in flight are known, put them in.
  KEEL_CHECK(in_flight_ && !in_flight_->on_device, "a batch takes sampled tokens but none are on the host");
  model::Batch b = plan.batch;
  for (size_t i = 0; i < b.from_sampled.size(); ++i) {
    const int32_t k = b.from_sampled[i];
    if (k >= 0) b.tokens[i] = in_flight_->rows.at(static_cast<size_t>(k)).token;
  }
  b.from_sampled.clear();
  return model_.forward(b, kv_, logits_);
}

void Scheduler::commit(const StepPlan& plan) {
  for (const PlanEntry& e : plan.entries) seq(e.seq).n_computed += e.n_new;
  ++stats_.n_steps;
  stats_.n_prefill_tokens += plan.n_prefill_tokens;
  stats_.n_decode_tokens += plan.n_decode_tokens;
  if (plan.n_prefill_tokens > 0 && plan.n_decode_tokens > 0) ++stats_.n_mixed_steps;
  stats_.max_batch_seqs = std::max(stats_.max_batch_seqs, static_cast<int32_t>(plan.entries.size()));
}

void Scheduler::fail_step(const StepPlan& plan, const Status& error) {
  std::unordered_set<RequestId> failed;
  for (const PlanEntry& e : plan.entries) failed.insert(seq(e.seq).request);
  const std::string message = "the forward pass failed: " + error.to_string();
  for (RequestId id : failed) end_request(id, FinishReason::kError, message);
}

}  // namespace keel::sched
