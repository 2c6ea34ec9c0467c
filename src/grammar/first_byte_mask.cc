// GrammarMatcher::fill_by_first_byte: a new column's mask as the disjoint union, over the trie's
// first-level subtrees (one per first byte), of the tokens below each that the parse takes from the
// state it reaches there. When most first bytes lead to one state t that another column led to
// before, the mask starts from the one stored for t (TokenMaskCache::FirstByteMask: a column's mask
// and the state each first byte led to there; the first column to lead to t keeps its own, made from
// its kernel positions) and only the subtrees whose state differs are swapped (walked, or read from
// the per-subtree ranges). Typing a key: every column of a listed name's
// prefix sends every character no name continues with to the one "other key" state, so after the
// first such column a mask costs a 16 KiB copy and a walk of the names' next characters' subtrees
// instead of a classification of a new kernel position and a walk of thousands of uncertain subtrees.
#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <utility>

#include "grammar/matcher.h"
#include "grammar/state_walker.h"

namespace keel::grammar {
namespace {

// First bytes that must lead to one state before the split is tried: below this a column's mask is
// cheap enough through its kernel positions.
constexpr uint32_t kMinGroup = 32;
// Other columns that must have led to that state first: a state reached from one column only (the
// next count of a maxLength counter, a string body's first character) would be walked whole for one
// mask where the shared classifications serve it, so that column's mask comes from its positions
// (and is kept for the next).
constexpr uint32_t kMinSeen = 1;
// Subtrees a column may have to walk to swap into a stored mask (the next characters of the names at
// a key prefix: one or two) before its kernel positions, when all are classified already, are the
// cheaper way.
constexpr uint32_t kMaxWalks = 4;

// The tokens below first-level node `top` the parse takes, as ascending preorder ranges.
void walk_subtree(StateWalker& walk, const VocabTrie& trie, uint32_t top, TokenMaskCache::Ranges& out) {
  const auto& nodes = trie.nodes();
  const uint32_t end = nodes[top].subtree_end;
  auto add = [&](uint32_t b, uint32_t e) {
    if (b == e) return;
    if (!out.empty() && out.back().second == b) {
      out.back().second = e;
    } else {
      out.emplace_back(b, e);
    }
  };
  for (uint32_t i = top; i < end;) {
    const VocabTrie::Node& n = nodes[i];
    __builtin_prefetch(&nodes[std::min<size_t>(n.subtree_end, nodes.size() - 1)]);  // where a skip lands
    if (const uint32_t e = walk.accepted_until(trie, i, end); e != i) {
      add(n.tok_begin, trie.tok_begin_at(e));
      i = e;
      continue;
    }
    if (walk.step(n.depth - 1, n.byte).state == StateTable::kDead) {
      i = n.subtree_end;
      continue;
    }
    add(n.tok_begin, n.tok_end);
    ++i;
  }
}

}  // namespace

// The tokens below first-level node `top` reached in state `at` (not dead), from the per-subtree
// ranges or a walk (kept for the next column that reaches `at` there).
void GrammarMatcher::mark_subtree(StateWalker& walk, uint32_t top, StateTable::State at, std::span<uint32_t> bitmask) {
  const VocabTrie& trie = masks_->trie();
  std::shared_ptr<const TokenMaskCache::Ranges> ranges;
  if (at != StateTable::kNone) ranges = masks_->load_subtree(at, top);
  if (ranges == nullptr) {
    auto walked = std::make_shared<TokenMaskCache::Ranges>();
    walk_subtree(walk, trie, top, *walked);
    if (at != StateTable::kNone) masks_->store_subtree(at, top, walked);
    ranges = std::move(walked);
  }
  for (auto [b, e] : *ranges) trie.mark_tokens(bitmask, b, e);
}

bool GrammarMatcher::fill_by_first_byte(std::span<uint32_t> bitmask) {
  const VocabTrie& trie = masks_->trie();
  const auto& nodes = trie.nodes();
  const StateTable::State here = parser_.state();
  // Only bytes the column scans lead anywhere: with fewer than kMinGroup of them no state can take
  // the group, and stepping every first byte to find that out cost most columns ~5 µs (128k tokens).
  if (parser_.next_bytes().count() < kMinGroup) return false;
  // Optional: ended before the parser serves kernel positions (a walker moves the parser until it
  // ends).
  std::optional<StateWalker> walker(std::in_place, parser_, masks_->states());
  StateWalker& walk = *walker;
  tops_.clear();
  for (uint32_t i = 0; i < nodes.size(); i = nodes[i].subtree_end) tops_.emplace_back(i, walk.step(0, nodes[i].byte).state);
  // The state most first bytes lead to.
  std::array<StateTable::State, 256> to{};
  size_t n = 0;
  for (auto [i, s] : tops_)
    if (s < StateTable::kUnknown) to[n++] = s;
  std::sort(to.begin(), to.begin() + static_cast<ptrdiff_t>(n));
  StateTable::State t = StateTable::kNone;
  uint32_t best = 0;
  for (size_t a = 0; a < n;) {
    size_t b = a;
    while (b < n && to[b] == to[a]) ++b;
    if (b - a > best) best = static_cast<uint32_t>(b - a), t = to[a];
    a = b;
  }
  if (best < kMinGroup || t == here) return false;
  std::shared_ptr<const TokenMaskCache::FirstByteMask> base = masks_->load_first_byte(t);
  if (base == nullptr && masks_->note_first_byte_target(t, here) < kMinSeen) {
    // The first column to lead to t: its mask comes from its kernel positions as before, and is kept
    // for t with the state each first byte led to, so the next column leading to t swaps subtrees
    // where it used to walk every first byte's subtree from t (a build: 300-450 µs at 128k tokens).
    walker.reset();
    fill_by_positions(bitmask);
    auto made = std::make_shared<TokenMaskCache::FirstByteMask>();
    made->at.fill(StateTable::kDead);
    for (auto [i, s] : tops_) made->at[nodes[i].byte] = s;
    made->bits.assign(bitmask.begin(), bitmask.begin() + static_cast<ptrdiff_t>(masks_->n_mask_words()));
    masks_->store_first_byte(t, std::move(made));
    return true;
  }
  if (base != nullptr) {
    // Subtrees to swap that no walk has kept: each costs a walk from a state of this column (a
    // column at the start of a key, whose names' first characters each lead elsewhere, is cheaper
    // through its kernel positions, classified already when seen before).
    uint32_t walks = 0;
    for (auto [i, s] : tops_)
      walks += s != base->at[nodes[i].byte] && s != StateTable::kDead &&
               (s == StateTable::kNone || masks_->load_subtree(s, i) == nullptr);
    if (walks > kMaxWalks) {
      parser_.kernel_positions(positions_);
      if (std::all_of(positions_.begin(), positions_.end(), [&](uint32_t pos) { return masks_->classified(pos); }))
        return false;
    }
  }
  masks_->count_first_byte_mask();
  if (base == nullptr) {
    auto made = std::make_shared<TokenMaskCache::FirstByteMask>();
    made->at.fill(StateTable::kDead);
    made->bits.assign(masks_->n_mask_words(), 0);
    for (auto [i, s] : tops_) {
      made->at[nodes[i].byte] = s;
      if (s != StateTable::kDead) mark_subtree(walk, i, s, made->bits);
    }
    std::copy(made->bits.begin(), made->bits.end(), bitmask.begin());
    masks_->store_first_byte(t, std::move(made));
    return true;
  }
  // The stored column's mask, with the subtrees whose state differs here swapped.
  std::copy(base->bits.begin(), base->bits.end(), bitmask.begin());
  for (auto [i, s] : tops_) {
    const StateTable::State was = base->at[nodes[i].byte];
    if (s == was && s != StateTable::kNone) continue;
    if (was != StateTable::kDead) trie.mark_tokens(bitmask, nodes[i].tok_begin, trie.subtree_tok_end(i), /*set=*/false);
    if (s != StateTable::kDead) mark_subtree(walk, i, s, bitmask);
  }
  return true;
}

}  // namespace keel::grammar
