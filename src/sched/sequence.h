// The scheduler's per-request state: a Group per GenerateRequest (its sink, usage figures, which of
// its n samples finished) and a Sequence per sample (tokens, KV slots, radix-tree lock, sampler,
// detokenizer and stop-string state). Owned by the Scheduler and touched only on its thread.
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <vector>

#include "cache/kv_slot_pool.h"
#include "cache/radix_tree.h"
#include "sample/constraint.h"
#include "sample/logits_processors.h"
#include "sample/stop.h"
#include "sched/engine.h"
#include "sched/request.h"
#include "tokenizer/tokenizer.h"

namespace keel::sched {

// Names one Sequence inside the scheduler (step plans carry these, not pointers).
struct SeqId {
  uint64_t value = 0;
  friend auto operator<=>(const SeqId&, const SeqId&) = default;
};

enum class SeqState { kWaiting, kRunning, kFinished };

// The seed sample `index` of a request draws with: the request's own for sample 0 (so n = 1 and the
// first of n samples agree), a mix of it for the others.
uint64_t sample_seed(uint64_t request_seed, int32_t index);

struct Sequence {
  Sequence(const tokenizer::Tokenizer& tok, std::vector<std::string> stop_strings)
      : detok(tok), stop(std::move(stop_strings)) {}

  SeqId id;
  RequestId request = 0;
  int32_t index = 0;     // which of the request's n samples
  int32_t priority = 0;  // the request's
  SeqState state = SeqState::kWaiting;
  std::vector<int32_t> tokens;  // [n_prompt + generated]
  int32_t n_prompt = 0;
  int32_t n_generated = 0;
  // KV slots of tokens[0, n_computed); while a step is planned, also of the tokens it computes.
  std::vector<cache::SlotId> slots;
  int64_t n_computed = 0;         // tokens whose K/V are written
  int64_t n_in_tree = 0;          // leading slots owned by the radix tree (kept alive by `node`'s lock)
  cache::NodeId node;             // the locked tree node ending at n_in_tree (the root: no lock)
  uint64_t admit_order = 0;       // later admissions are preempted first among equal priorities
  sample::SamplingParams params;  // the request's, with this sample's seed
  sample::TokenHistory history;   // for penalties (filled only when a processor is on)
  tokenizer::IncrementalDetokenizer detok;
  sample::StopMatcher stop;
  // Structured output: follows every token in `tokens` past the prompt (kept across preemption, as
  // the tokens are); null for free text.
  std::unique_ptr<sample::TokenConstraint> constraint;
  // Prefix hash at every kPrefixBlock-th token (prefix_wait.h), filled lazily; valid while tokens only grow.
  std::vector<uint64_t> block_hashes;
  int32_t prefix_wait_steps = 0;  // admission passes this sequence waited for an in-flight prefix
  // Overlap: this sequence's next token was sampled by the step in flight (row sampled_row of its
  // output) and is not in `tokens` yet; -1: none. It counts as pending (the next step computes it).
  int32_t sampled_row = -1;

  int64_t n_known() const { return static_cast<int64_t>(tokens.size()) + (sampled_row >= 0 ? 1 : 0); }
  int64_t n_pending() const { return n_known() - n_computed; }
  bool is_decoding() const { return n_pending() == 1 && n_computed >= n_prompt; }
  int64_t n_owned_slots() const { return static_cast<int64_t>(slots.size()) - n_in_tree; }
};

struct Group {
  GenerateRequest request;
  EventSink sink;
  bool admitted = false;          // sample 0 left the queue once (counts cached_tokens)
  bool forked = false;            // samples 1..n-1 exist (made when the prompt is computed)
  int32_t cached_tokens = 0;      // prompt tokens served from the cache at first admission
  std::vector<SeqId> live;        // samples not finished
  std::vector<uint8_t> finished;  // [n] 1 once that sample's final event went out
  int32_t n_finished = 0;
};

}  // namespace keel::sched
