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
  // text, complete characters k (counted up to kDepth + 1: past that nothing is kept), bytes left
  // of the character it is inside and the range the next one must be in.
  struct Path {
    bool text;
    uint8_t k, rem, lo, hi;
  };
  std::vector<Path> path(nodes.size());
  std::vector<std::tuple<uint8_t, bool, uint8_t, uint32_t>> exits;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const uint32_t p = trie.parent(i);
    const Path from = p == VocabTrie::kNoParent ? Path{true, 0, 0, 0, 0} : path[p];
    Path& at = path[i];
    at = {false, 0, 0, 0, 0};
    if (!from.text) continue;
    const uint8_t b = nodes[i].byte;
    if (from.rem == 0 && VocabTrie::plain(b)) {
      at = {true, static_cast<uint8_t>(from.k + 1), 0, 0, 0};
    } else if (from.rem == 0 && b >= 0xC2 && b <= 0xF4) {
      const base::Utf8Lead lead = base::utf8_lead(b);
      at = {true, from.k, static_cast<uint8_t>(lead.length - 1), lead.lo, lead.hi};
    } else if (from.rem != 0 && b >= from.lo && b <= from.hi) {
      const auto rem = static_cast<uint8_t>(from.rem - 1);
      at = {true, static_cast<uint8_t>(rem == 0 ? from.k + 1 : from.k), rem, 0x80, 0xBF};
    } else {
      // An exit: needed up to kDepth complete characters before it (a partial one past kDepth lies
      // below a deep node, whose walk finds it).
      if (from.k < kDepth || (from.k == kDepth && from.rem == 0)) exits.emplace_back(from.k, from.rem != 0, b, i);
      continue;
    }
    if (at.k > kDepth) {  // below a deep node: walked from there
      at.text = false;
      continue;
    }
    const uint32_t count = at.k + (at.rem != 0 ? 1u : 0u);
    if (count <= kDepth) trie.mark_tokens(upto_[count - 1], nodes[i].tok_begin, nodes[i].tok_end);
    if (at.k == kDepth && at.rem == 0 && nodes[i].subtree_end > i + 1) deep_.push_back(i);
  }
  for (uint32_t c = 1; c < kDepth; ++c)
    for (size_t w = 0; w < n_words; ++w) upto_[c][w] |= upto_[c - 1][w];
  std::sort(exits.begin(), exits.end());
  exits_.reserve(exits.size());
  for (const auto& [k, partial, b, node] : exits) {
    if (groups_.empty() || groups_.back().k != k || groups_.back().partial != partial || groups_.back().byte != b)
      groups_.push_back({k, partial, b, static_cast<uint32_t>(exits_.size()), 0});
    exits_.push_back(node);
    groups_.back().end = static_cast<uint32_t>(exits_.size());
  }
}

size_t TextCounts::memory_bytes() const {
  size_t n = (exits_.size() + deep_.size()) * sizeof(uint32_t) + groups_.size() * sizeof(Group);
  for (const auto& u : upto_) n += u.size() * sizeof(uint32_t);
  return n;
}

}  // namespace keel::grammar
