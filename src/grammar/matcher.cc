#include "grammar/matcher.h"

#include <algorithm>

#include "base/check.h"
#include "grammar/state_walker.h"

namespace keel::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<TokenMaskCache> masks)
    : masks_(std::move(masks)), parser_(masks_->grammar(), &masks_->states()) {}

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
  // Words past the vocabulary's are always clear; a kept mask writes all the others itself.
  std::fill(bitmask.begin() + static_cast<ptrdiff_t>(masks_->n_mask_words()), bitmask.end(), 0u);
  const StateTable::State state = terminated_ ? StateTable::kNone : parser_.state();
  if (state != StateTable::kNone && masks_->load_mask(state, bitmask)) return;
  std::fill(bitmask.begin(), bitmask.end(), 0u);
  if (terminated_) return;
  // A counting state (count_walk.cc) first, then a state other columns' first bytes led to.
  if (state == StateTable::kNone || (!fill_by_count(bitmask) && !fill_by_first_byte(bitmask)))
    fill_by_positions(bitmask);
  const Vocabulary& vocab = masks_->trie().vocab();
  if (parser_.can_end())
    for (int32_t id : vocab.eos_ids) bitmask[id >> 5] |= 1u << (id & 31);
  if (state != StateTable::kNone) masks_->store_mask(state, bitmask);
}

// The mask as the union of the current column's kernel positions' classifications, plus their
// uncertain subtrees checked against the full parse.
void GrammarMatcher::fill_by_positions(std::span<uint32_t> bitmask) {
  parser_.kernel_positions(positions_);
  candidates_.clear();
  const size_t n_words = masks_->n_mask_words();
  for (uint32_t pos : positions_) {
    const PositionMask& pm = masks_->get(pos);
    if (!pm.accepted_bits.empty()) {
      for (size_t w = 0; w < n_words; ++w) bitmask[w] |= pm.accepted_bits[w];
    } else {
      for (int32_t id : pm.accepted_ids) bitmask[id >> 5] |= 1u << (id & 31);
    }
    // Each list is ascending: merged as it comes, where a sort of the concatenation cost
    // ~1 ms for the ~40,000 candidates of a string under a maxLength counter.
    const auto mid = static_cast<ptrdiff_t>(candidates_.size());
    candidates_.insert(candidates_.end(), pm.uncertain.begin(), pm.uncertain.end());
    std::inplace_merge(candidates_.begin(), candidates_.begin() + mid, candidates_.end());
  }
  check_uncertain(bitmask);
}

// The uncertain subtrees against the full parse: a walk of each (from the trie root down to it, then
// through it, skipping what the parse rejects) on the memoised transitions.
void GrammarMatcher::check_uncertain(std::span<uint32_t> bitmask) {
  if (candidates_.empty()) return;
  const VocabTrie& trie = masks_->trie();
  const auto& nodes = trie.nodes();
  StateWalker walk(parser_, masks_->states());
  uint32_t covered_end = 0;  // subtrees nested in one already walked are skipped
  for (uint32_t root : candidates_) {
    if (root < covered_end) continue;
    covered_end = nodes[root].subtree_end;
    path_.clear();
    for (uint32_t p = trie.parent(root); p != VocabTrie::kNoParent; p = trie.parent(p)) path_.push_back(p);
    // On the way down, an ancestor whose whole subtree the parse takes (plain or text run) settles
    // every candidate under it at once: its tokens are all allowed, candidates or not (a string
    // under a maxLength counter has tens of thousands of candidates, most under a few such nodes).
    bool alive = true;
    for (size_t k = path_.size(); k-- > 0 && alive;) {
      const uint32_t a = path_[k];
      const VocabTrie::Node& n = nodes[a];
      if (walk.accepts_subtree(trie, a)) {
        trie.mark_tokens(bitmask, n.tok_begin, trie.subtree_tok_end(a));
        covered_end = n.subtree_end;
        alive = false;
        break;
      }
      alive = walk.step(n.depth - 1, n.byte).state != StateTable::kDead;
    }
    if (alive) walk_below(walk, root, bitmask);
  }
}

void GrammarMatcher::walk_below(StateWalker& walk, uint32_t root, std::span<uint32_t> bitmask) {
  const VocabTrie& trie = masks_->trie();
  const auto& nodes = trie.nodes();
  const uint32_t end = nodes[root].subtree_end;
  for (uint32_t i = root; i < end;) {
    const VocabTrie::Node& n = nodes[i];
    __builtin_prefetch(&nodes[std::min<size_t>(n.subtree_end, nodes.size() - 1)]);  // where a skip lands
    // Siblings of the root itself lie outside its subtree: a run of them is not taken from there.
    if (const uint32_t e = walk.accepted_until(trie, i, i == root ? n.subtree_end : end); e != i) {
      trie.mark_tokens(bitmask, n.tok_begin, trie.tok_begin_at(e));
      i = e;
      continue;
    }
    if (walk.step(n.depth - 1, n.byte).state == StateTable::kDead) {
      // Rejected siblings skipped by byte (the root's siblings lie outside its subtree).
      i = i == root ? n.subtree_end : walk.skip_rejected(trie, i, n.depth - 1);
      continue;
    }
    trie.mark_tokens(bitmask, n.tok_begin, n.tok_end);
    ++i;
  }
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
