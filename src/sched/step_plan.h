// What one scheduler step hands from planning (allocate, build_batch) to running (run, sample): plain
// data naming sequences by SeqId. Planning is kept apart from running so the CPU can plan step k+1
// while the device runs step k (the CUDA backend's overlap). Scheduler thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/batch.h"
#include "sched/sequence.h"

namespace keel::sched {

// One sequence's share of a step: tokens[n_computed, n_computed + n_new) are computed; their slots
// were appended to the sequence's slots by allocate.
struct PlanEntry {
  SeqId seq;
  int32_t n_new = 0;
};

struct StepPlan {
  model::Batch batch;
  std::vector<PlanEntry> entries;
  std::vector<SeqId> row_seq;    // [batch.logit_rows.size()] the sequence each logits row samples for
  int32_t n_prefill_tokens = 0;  // of batch.n_tokens(): prompt (or resumed) tokens
  int32_t n_decode_tokens = 0;   // one per decoding sequence
};

// A token chosen for one sequence in this step, with its log-probabilities when asked.
struct SampledToken {
  SeqId seq;
  int32_t token = 0;
  bool has_logprobs = false;
  TokenLogprob logprob;
  std::vector<TokenLogprob> top;
  std::string error;  // no token could be sampled (the constraint allows none): the sample fails
};

// Sets t's log-probability and top_logprobs alternatives from a raw logits row (sample.cc).
void set_logprobs(SampledToken& t, std::span<const float> raw_row, int32_t top_logprobs);

}  // namespace keel::sched
