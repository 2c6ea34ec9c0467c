// The sampler's TokenConstraint (sample/constraint.h) implemented by a grammar::GrammarMatcher, and
// the tokenizer-to-grammar vocabulary bridge. The server builds a GrammarConstraintFactory per request
// from a shared TokenMaskCache (compiled off the scheduler thread); the scheduler asks it for one
// constraint per sample. Constraints run on the scheduler thread; factories are shared and immutable.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "grammar/vocab_trie.h"
#include "sample/constraint.h"
#include "tokenizer/tokenizer.h"

namespace keel::sched {

// Token bytes, end-of-generation ids (allowed exactly where the grammar may end) and control /
// user-defined ids (never produced by grammar text) of the tokenizer.
grammar::Vocabulary grammar_vocabulary(const tokenizer::Tokenizer& tok);

class GrammarConstraint final : public sample::TokenConstraint {
 public:
  explicit GrammarConstraint(std::shared_ptr<grammar::TokenMaskCache> masks);

  void fill_mask(std::span<uint32_t> bitmask) override;
  bool accept_token(int32_t token) override;
  void rollback(size_t n_tokens) override;
  bool is_terminated() const override { return matcher_.is_terminated(); }
  std::optional<int32_t> forced_token() override;

 private:
  void refresh_mask();

  std::shared_ptr<grammar::TokenMaskCache> masks_;
  grammar::GrammarMatcher matcher_;
  std::vector<uint32_t> mask_;  // [mask words] for the current state when mask_valid_
  bool mask_valid_ = false;
};

class GrammarConstraintFactory final : public sample::ConstraintFactory {
 public:
  explicit GrammarConstraintFactory(std::shared_ptr<grammar::TokenMaskCache> masks) : masks_(std::move(masks)) {}
  std::unique_ptr<sample::TokenConstraint> make() const override;

 private:
  std::shared_ptr<grammar::TokenMaskCache> masks_;
};

}  // namespace keel::sched
