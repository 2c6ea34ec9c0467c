// Scheduler::sample_on_device: Scheduler::sample's work with the logits left on the device. Each
// sample becomes a backend::DeviceSampleRow (its sampling parameters, seed and position), its
// processors a list of the tokens they touch (from the sequence's TokenHistory and logit_bias), its
// grammar the allowed-token bitmask (constrained rows only); Backend::sample_rows returns the token
// ids. Requests that ask for log-probabilities get their raw row copied back (OpenAI reports them
// before processors), as on the host path. Same tokens as the host sampler (tests/gpu/sample_test.cc).
// device_rows builds the rows; sample_on_device samples them and waits, launch_sampling (overlap.cc)
// leaves them in flight.
#include <bit>
#include <unordered_map>

#include "sample/constraint.h"
#include "sample/logits_processors.h"
#include "sched/scheduler.h"

namespace keel::sched {
namespace {

// Tokens of [0, n_vocab) whose bit is set (what apply_token_mask leaves allowed).
int64_t count_allowed(std::span<const uint32_t> mask, int64_t n_vocab) {
  int64_t n = 0;
  for (size_t w = 0; w < mask.size() && static_cast<int64_t>(w) * 32 < n_vocab; ++w) {
    const int64_t left = n_vocab - static_cast<int64_t>(w) * 32;
    const uint32_t bits = left >= 32 ? mask[w] : mask[w] & ((1u << left) - 1u);
    n += std::popcount(bits);
  }
  return n;
}

// The processors' tokens of one sample: logit_bias ids (biases summed), prompt and output tokens.
void add_procs(const Sequence& s, int64_t n_vocab, std::vector<backend::DeviceSampleProc>& out) {
  std::unordered_map<int32_t, size_t> at;
  auto entry = [&](int32_t id) -> backend::DeviceSampleProc& {
    auto [it, fresh] = at.try_emplace(id, out.size());
    if (fresh) out.push_back(backend::DeviceSampleProc{.token = id});
    return out[it->second];
  };
  const auto in_vocab = [&](int32_t id) { return id >= 0 && id < n_vocab; };
  for (const auto& [id, bias] : s.params.logit_bias) {
    if (in_vocab(id)) entry(id).bias += bias;
  }
  if (s.params.repetition_penalty != 1.0f) {
    for (const auto& [id, count] : s.history.prompt_counts()) {
      if (in_vocab(id)) entry(id).seen = 1;
    }
  }
  for (const auto& [id, count] : s.history.output_counts()) {
    if (!in_vocab(id)) continue;
    backend::DeviceSampleProc& p = entry(id);
    p.seen = 1;
    p.n_output = count;
  }
}

}  // namespace

std::vector<SampledToken> Scheduler::device_rows(const std::vector<std::vector<SeqId>>& row_seqs,
                                                 std::vector<size_t>& out_of_row) {
  std::vector<SampledToken> out;
  out_of_row.clear();
  dev_rows_.clear();
  dev_procs_.clear();
  dev_masks_.clear();
  const size_t words = sample::mask_words(n_vocab_);
  for (size_t r = 0; r < row_seqs.size(); ++r) {
    for (SeqId id : row_seqs[r]) {
      Sequence& s = seq(id);
      const sample::SamplingParams& p = s.params;
      SampledToken t{.seq = s.id};
      backend::DeviceSampleRow d{.logit_row = static_cast<int32_t>(r),
                                 .temperature = p.temperature,
                                 .top_k = p.top_k,
                                 .top_p = p.top_p,
                                 .min_p = p.min_p,
                                 .seed = p.seed,
                                 .position = static_cast<int64_t>(s.tokens.size()),
                                 .repetition_penalty = p.repetition_penalty,
                                 .frequency_penalty = p.frequency_penalty,
                                 .presence_penalty = p.presence_penalty};
      if (sample::has_processors(p)) {
        d.proc_begin = static_cast<int32_t>(dev_procs_.size());
        add_procs(s, n_vocab_, dev_procs_);
        d.n_proc = static_cast<int32_t>(dev_procs_.size()) - d.proc_begin;
      }
      if (s.constraint) {
        const size_t at = dev_masks_.size();
        dev_masks_.resize(at + words);
        std::span<uint32_t> mask(dev_masks_.data() + at, words);
        s.constraint->fill_mask(mask);
        if (count_allowed(mask, n_vocab_) == 0) {
          dev_masks_.resize(at);
          dev_procs_.resize(static_cast<size_t>(d.proc_begin));
          t.error = "structured output: the grammar allows no token of the vocabulary here";
          out.push_back(std::move(t));
          continue;
        }
        d.mask_offset = static_cast<int32_t>(at);
      }
      out_of_row.push_back(out.size());
      out.push_back(std::move(t));
      dev_rows_.push_back(d);
    }
  }
  return out;
}

std::vector<SampledToken> Scheduler::sample_on_device(const std::vector<std::vector<SeqId>>& row_seqs) {
  std::vector<size_t> out_of_row;  // out index of each device row
  std::vector<SampledToken> out = device_rows(row_seqs, out_of_row);
  backend::Backend& be = model_.backend();
  if (dev_rows_.empty()) {
    be.synchronize();  // the step's work (KV writes) is done before the scheduler goes on
    return out;
  }
  std::vector<int32_t> tokens(dev_rows_.size());
  be.sample_rows(device_logits_, {.rows = dev_rows_, .procs = dev_procs_, .masks = dev_masks_}, tokens);
  int32_t raw_row = -1;  // the row held in processed_ (raw logits), for log-probabilities
  for (size_t k = 0; k < dev_rows_.size(); ++k) {
    SampledToken& t = out[out_of_row[k]];
    t.token = tokens[k];
    const int32_t top_logprobs = group_of(seq(t.seq)).request.top_logprobs;
    if (top_logprobs < 0) continue;
    if (raw_row != dev_rows_[k].logit_row) {
      raw_row = dev_rows_[k].logit_row;
      processed_.resize(static_cast<size_t>(n_vocab_));
      be.copy_to_host(device_logits_.rows(raw_row, 1), processed_);
    }
    set_logprobs(t, processed_, top_logprobs);
  }
  return out;
}

}  // namespace keel::sched
