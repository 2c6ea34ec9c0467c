#include "sched/grammar_constraint.h"

#include <algorithm>
#include <bit>

namespace keel::sched {

grammar::Vocabulary grammar_vocabulary(const tokenizer::Tokenizer& tok) {
  grammar::Vocabulary v;
  const int32_t n = tok.n_vocab();
  v.token_bytes.reserve(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    v.token_bytes.push_back(tok.token_bytes(id));
    if (tok.is_eog(id)) {
      v.eos_ids.push_back(id);
    } else if (tok.is_special(id)) {
      v.special_ids.push_back(id);
    }
  }
  return v;
}

GrammarConstraint::GrammarConstraint(std::shared_ptr<grammar::TokenMaskCache> masks)
    : masks_(std::move(masks)), matcher_(masks_), mask_(masks_->n_mask_words()) {}

void GrammarConstraint::refresh_mask() {
  if (mask_valid_) return;
  matcher_.fill_mask(mask_);
  mask_valid_ = true;
}

void GrammarConstraint::fill_mask(std::span<uint32_t> bitmask) {
  refresh_mask();
  const size_t n = std::min(bitmask.size(), mask_.size());
  std::copy_n(mask_.begin(), n, bitmask.begin());
  std::fill(bitmask.begin() + static_cast<std::ptrdiff_t>(n), bitmask.end(), 0u);
}

bool GrammarConstraint::accept_token(int32_t token) {
  if (!matcher_.accept_token(token)) return false;
  mask_valid_ = false;
  return true;
}

void GrammarConstraint::rollback(size_t n_tokens) {
  matcher_.rollback(n_tokens);
  mask_valid_ = false;
}

std::optional<int32_t> GrammarConstraint::forced_token() {
  if (matcher_.is_terminated()) return std::nullopt;
  // A single allowed token needs a single continuation: skip the vocabulary pass when the next byte
  // (or the end) is still a choice. The mask computed here serves the next sampling step too.
  if (!matcher_.must_end() && matcher_.jump_forward(1).empty()) return std::nullopt;
  refresh_mask();
  std::optional<int32_t> only;
  for (size_t w = 0; w < mask_.size(); ++w) {
    if (mask_[w] == 0) continue;
    if (only || std::popcount(mask_[w]) != 1) return std::nullopt;
    only = static_cast<int32_t>(w * 32 + static_cast<size_t>(std::countr_zero(mask_[w])));
  }
  return only;
}

std::unique_ptr<sample::TokenConstraint> GrammarConstraintFactory::make() const {
  return std::make_unique<GrammarConstraint>(masks_);
}

}  // namespace keel::sched
