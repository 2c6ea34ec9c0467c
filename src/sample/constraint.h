// Constrained decoding as the sampler sees it: a per-sample TokenConstraint says which tokens may come
// next (a bitmask over the vocabulary) and follows each token the sample takes; a ConstraintFactory
// makes one per sample (so n > 1 samples each keep their own state). The sampler knows nothing of
// what implements them (sched/grammar_constraint.h adapts grammar::GrammarMatcher). Factories are
// immutable and shared across threads; a TokenConstraint belongs to one sequence on the scheduler thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace keel::sample {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;

  // bitmask[mask_words(n_vocab)]: bit t set when token t may come next. End-of-sequence ids are set
  // only where the constrained output may end.
  virtual void fill_mask(std::span<uint32_t> bitmask) = 0;
  // Follows one token; false (state unchanged) when the constraint forbids it.
  virtual bool accept_token(int32_t token) = 0;
  // Undoes the last n accepted tokens (speculative decoding).
  virtual void rollback(size_t n_tokens) = 0;
  // An end-of-sequence token was accepted: nothing may follow.
  virtual bool is_terminated() const = 0;
  // The only token that may come next, when exactly one may (jump-forward: taking it needs no
  // sampling, whatever the logits); nullopt otherwise.
  virtual std::optional<int32_t> forced_token() = 0;
};

class ConstraintFactory {
 public:
  virtual ~ConstraintFactory() = default;
  virtual std::unique_ptr<TokenConstraint> make() const = 0;
};

// A factory whose constraints start after `prefix`: each made constraint has already accepted those
// tokens (a resumed stream's generated tokens, which the model sees as prompt). nullptr when the
// base constraint rejects a token of prefix.
std::shared_ptr<const ConstraintFactory> constraint_after_prefix(std::shared_ptr<const ConstraintFactory> base,
                                                                 std::vector<int32_t> prefix);

inline size_t mask_words(int64_t n_vocab) { return static_cast<size_t>((n_vocab + 31) / 32); }

// Sets every logit whose bit is clear (or lies beyond the mask) to -infinity. Returns the number of
// tokens left allowed.
int64_t apply_token_mask(std::span<float> logits, std::span<const uint32_t> bitmask);

}  // namespace keel::sample
