#include "grammar/matcher.h"

#include <algorithm>

#include "base/check.h"

namespace keel::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<TokenMaskCache> masks)
    : masks_(std::move(masks)), parser_(masks_->grammar()) {}

bool GrammarMatcher::accept_token(int32_t id) {
  const VocabTrie& trie = masks_->trie();
  if (terminated_ || id < 0 || id >= trie.vocab().n_vocab()) return false;
  if (trie.is_eos(id)) {
    if (!parser_.can_end()) return false;
    terminated_ = true;
    step_bytes_.push_back(UINT32_MAX);
    return true;
  }
  for (int32_t s : trie.vocab().special_ids)
    if (s == id) return false;
  return accept_bytes(trie.vocab().token_bytes[id]);
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (terminated_ || !parser_.push_bytes(bytes)) return false;
  step_bytes_.push_back(static_cast<uint32_t>(bytes.size()));
  return true;
}

void GrammarMatcher::rollback(size_t n) {
  KEEL_CHECK(n <= step_bytes_.size(), "rollback {} of {} steps", n, step_bytes_.size());
  for (; n > 0; --n) {
    uint32_t b = step_bytes_.back();
    step_bytes_.pop_back();
    if (b == UINT32_MAX) {
      terminated_ = false;
    } else {
      parser_.pop_bytes(b);
    }
  }
}

void GrammarMatcher::fill_mask(std::span<uint32_t> bitmask) {
  KEEL_CHECK(bitmask.size() >= masks_->n_mask_words(), "mask has {} words, need {}", bitmask.size(),
             masks_->n_mask_words());
  std::fill(bitmask.begin(), bitmask.end(), 0u);
  if (terminated_) return;
  parser_.kernel_positions(positions_);
  candidates_.clear();
  const size_t n_words = masks_->n_mask_words();
  for (uint32_t pos : positions_) {
    const PositionMask& pm = masks_->get(pos);
    for (size_t w = 0; w < n_words; ++w) bitmask[w] |= pm.accepted[w];
    candidates_.insert(candidates_.end(), pm.uncertain.begin(), pm.uncertain.end());
  }
  std::sort(candidates_.begin(), candidates_.end());
  candidates_.erase(std::unique(candidates_.begin(), candidates_.end()), candidates_.end());
  const Vocabulary& vocab = masks_->trie().vocab();
  for (int32_t id : candidates_) {
    if (bitmask[id >> 5] & (1u << (id & 31))) continue;
    const std::string& bytes = vocab.token_bytes[id];
    if (parser_.push_bytes(bytes)) {
      parser_.pop_bytes(bytes.size());
      bitmask[id >> 5] |= 1u << (id & 31);
    }
  }
  if (parser_.can_end())
    for (int32_t id : vocab.eos_ids) bitmask[id >> 5] |= 1u << (id & 31);
}

std::string GrammarMatcher::jump_forward(size_t max_bytes) {
  std::string out;
  if (terminated_) return out;
  while (out.size() < max_bytes && !parser_.can_end()) {
    ByteSet next = parser_.next_bytes();
    if (next.count() != 1) break;
    int b = 0;
    while (!next.test(b)) ++b;
    if (!parser_.push_byte(static_cast<uint8_t>(b))) break;
    out += static_cast<char>(b);
  }
  parser_.pop_bytes(out.size());
  return out;
}

}  // namespace keel::grammar
