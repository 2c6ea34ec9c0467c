#include "grammar/text_counts.h"

#include <algorithm>
#include <tuple>

#include "base/utf8.h"
#include "grammar/vocab_trie.h"

namespace keel::grammar {

TextCounts::TextCounts(const VocabTrie& trie) {
  const auto& nodes = trie.nodes();
  const size_t n_words = (static_cast<size_t>(trie.vocab().n_vocab()) + 31) / 32;
  upto_.assign(kDepth, std::vector<uint32_t>(n_words, 0));
  // Each node's path read as text, in preorder (a parent before its children): whether it still is
  // text, complete characters k (capped at 255), bytes left of the character it is inside, the range
  // the next one must be in, bytes taken of that character and the length of the last complete one.
  struct Path {
    bool text;
    uint8_t k, rem, lo, hi, part, last;
  };
  std::vector<Path> path(nodes.size());
  std::vector<std::tuple<uint8_t, bool, uint8_t, uint32_t, uint8_t>> exits;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const uint32_t p = trie.parent(i);
    const Path from = p == VocabTrie::kNoParent ? Path{true, 0, 0, 0, 0, 0, 0} : path[p];
    Path& at = path[i];
    at = {false, 0, 0, 0, 0, 0, 0};
    if (!from.text) continue;
    const uint8_t b = nodes[i].byte;
    const auto k1 = static_cast<uint8_t>(std::min(from.k + 1, 255));
    if (from.rem == 0 && VocabTrie::plain(b)) {
      at = {true, k1, 0, 0, 0, 0, 1};
    } else if (from.rem == 0 && b >= 0xC2 && b <= 0xF4) {
      const base::Utf8Lead lead = base::utf8_lead(b);
      at = {true, from.k, static_cast<uint8_t>(lead.length - 1), lead.lo, lead.hi, 1, from.last};
    } else if (from.rem != 0 && b >= from.lo && b <= from.hi) {
      const auto rem = static_cast<uint8_t>(from.rem - 1), part = static_cast<uint8_t>(from.part + 1);
      at = rem == 0 ? Path{true, k1, 0, 0, 0, 0, part} : Path{true, from.k, rem, 0x80, 0xBF, part, from.last};
    } else {
      // An exit: needed up to kDepth complete characters before it (a partial one past kDepth lies
      // below a deep node, whose walk finds it).
      if (from.k < kDepth || (from.k == kDepth && from.rem == 0))
        exits.emplace_back(from.k, from.rem != 0, b, i, from.part);
      continue;
    }
    const uint32_t count = at.k + (at.rem != 0 ? 1u : 0u);
    if (count <= kDepth) trie.mark_tokens(upto_[count - 1], nodes[i].tok_begin, nodes[i].tok_end);
    if (at.k == kDepth && at.rem == 0 && nodes[i].subtree_end > i + 1) {
      deep_.push_back(i);
      deep_tails_.push_back(static_cast<uint8_t>(at.last - 1));
    }
  }
  // A deep node's height: the most characters past kDepth a token below has, when all are text.
  for (uint32_t d : deep_) {
    uint32_t h = 0;
    for (uint32_t j = d + 1; j < nodes[d].subtree_end && h != UINT32_MAX; ++j) {
      if (!path[j].text) {
        h = UINT32_MAX;
      } else if (nodes[j].tok_end > nodes[j].tok_begin) {
        h = std::max(h, path[j].k + (path[j].rem != 0 ? 1u : 0u) - kDepth);
      }
    }
    deep_heights_.push_back(h == UINT32_MAX ? 0 : static_cast<uint8_t>(std::min(h, 254u)));
  }
  for (uint32_t c = 1; c < kDepth; ++c)
    for (size_t w = 0; w < n_words; ++w) upto_[c][w] |= upto_[c - 1][w];
  std::sort(exits.begin(), exits.end());
  exits_.reserve(exits.size());
  exit_tails_.reserve(exits.size());
  for (const auto& [k, partial, b, node, tail] : exits) {
    if (groups_.empty() || groups_.back().k != k || groups_.back().partial != partial || groups_.back().byte != b)
      groups_.push_back({k, partial, b, static_cast<uint32_t>(exits_.size()), 0});
    exits_.push_back(node);
    exit_tails_.push_back(tail);
    groups_.back().end = static_cast<uint32_t>(exits_.size());
  }
}

size_t TextCounts::memory_bytes() const {
  size_t n = (exits_.size() + deep_.size()) * (sizeof(uint32_t) + 1) + deep_.size() + groups_.size() * sizeof(Group);
  for (const auto& u : upto_) n += u.size() * sizeof(uint32_t);
  return n;
}

}  // namespace keel::grammar
