// Scheduler::sample: one token per sequence from its logits row: logits processors (penalties,
// logit_bias) on a copy, then the structured-output mask (disallowed tokens to -inf, last, so no bias
// can revive them), then the seeded sampler at the token's position, so a request's tokens do not
// depend on what else shares the batch. Log-probabilities come from the raw row, as OpenAI reports them.
#include <algorithm>

#include "sample/constraint.h"
#include "sample/logits_processors.h"
#include "sample/logprobs.h"
#include "sched/scheduler.h"

namespace keel::sched {

std::vector<SampledToken> Scheduler::sample(const StepPlan& plan, const std::vector<std::vector<SeqId>>& row_seqs) {
  std::vector<SampledToken> out;
  for (size_t r = 0; r < plan.row_seq.size(); ++r) {
    std::span<const float> row(logits_.data() + r * static_cast<size_t>(n_vocab_), static_cast<size_t>(n_vocab_));
    for (SeqId id : row_seqs[r]) {
      Sequence& s = seq(id);
      out.push_back(sample_one(s, row, group_of(s).request.top_logprobs));
    }
  }
  return out;
}

SampledToken Scheduler::sample_one(Sequence& s, std::span<const float> logits, int32_t top_logprobs) {
  std::span<const float> row = logits;
  SampledToken t{.seq = s.id};
  if (sample::has_processors(s.params) || s.constraint) {
    processed_.assign(logits.begin(), logits.end());
    if (sample::has_processors(s.params)) sample::apply_processors(processed_, s.params, s.history);
    if (s.constraint) {
      mask_.resize(sample::mask_words(n_vocab_));
      s.constraint->fill_mask(mask_);
      if (sample::apply_token_mask(processed_, mask_) == 0) {
        t.error = "structured output: the grammar allows no token of the vocabulary here";
        return t;
      }
    }
    row = processed_;
  }
  t.token = sample::sample_token(row, s.params, static_cast<int64_t>(s.tokens.size()), sampler_scratch_);
  if (top_logprobs >= 0) set_logprobs(t, logits, top_logprobs);
  return t;
}

void set_logprobs(SampledToken& t, std::span<const float> raw_row, int32_t top_logprobs) {
  sample::TokenLogprobs lp = sample::compute_logprobs(raw_row, t.token, top_logprobs);
  t.has_logprobs = true;
  t.logprob = TokenLogprob{.token = lp.token, .logprob = lp.logprob};
  for (const auto& [id, logprob] : lp.top) t.top.push_back(TokenLogprob{.token = id, .logprob = logprob});
}

}  // namespace keel::sched
