#include "grammar/vocab_trie.h"

#include <algorithm>
#include <array>

#include "base/utf8.h"
#include "grammar/text_counts.h"

namespace keel::grammar {

VocabTrie::VocabTrie(Vocabulary vocab) : vocab_(std::move(vocab)) {
  const int32_t n = vocab_.n_vocab();
  is_eos_.assign(n, 0);
  std::vector<uint8_t> excluded(n, 0);
  for (int32_t id : vocab_.eos_ids)
    if (id >= 0 && id < n) is_eos_[id] = excluded[id] = 1;
  for (int32_t id : vocab_.special_ids)
    if (id >= 0 && id < n) excluded[id] = 1;
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < n; ++id)
    if (!excluded[id] && !vocab_.token_bytes[id].empty()) ids.push_back(id);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return vocab_.token_bytes[a] != vocab_.token_bytes[b] ? vocab_.token_bytes[a] < vocab_.token_bytes[b] : a < b;
  });
  token_bits_.assign((static_cast<size_t>(n) + 31) / 32, 0);
  for (int32_t id : ids) token_bits_[static_cast<size_t>(id) >> 5] |= 1u << (id & 31);
  // Children of the (unstored) root: one group per first byte.
  size_t lo = 0;
  while (lo < ids.size()) {
    size_t hi = lo;
    const char c = vocab_.token_bytes[ids[lo]][0];
    while (hi < ids.size() && vocab_.token_bytes[ids[hi]][0] == c) ++hi;
    build(ids, lo, hi, 1, kNoParent);
    lo = hi;
  }
  // Children come after their parent in preorder, so a reverse scan has settled a node's subtree
  // before it reaches the parent.
  std::vector<uint8_t> pure(nodes_.size());
  std::vector<uint32_t> height(nodes_.size(), 1);
  for (size_t i = 0; i < nodes_.size(); ++i) pure[i] = plain(nodes_[i].byte);
  for (size_t i = nodes_.size(); i-- > 0;) {
    const uint32_t p = parents_[i];
    if (p == kNoParent) continue;
    if (!pure[i]) pure[p] = 0;
    height[p] = std::max(height[p], height[i] + 1);
  }
  subtree_classes_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) subtree_classes_[i] = uint64_t{1} << byte_class(nodes_[i].byte);
  for (size_t i = nodes_.size(); i-- > 0;)
    if (parents_[i] != kNoParent) subtree_classes_[parents_[i]] |= subtree_classes_[i];
  plain_height_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) plain_height_[i] = pure[i] ? static_cast<uint8_t>(std::min(height[i], 255u)) : 0;
  // Text heights, descendants first (reverse preorder): a character-start node is text when the
  // nodes within its character's length are valid continuation bytes and every node after the
  // character starts a text subtree of its own.
  text_height_.assign(nodes_.size(), 0);
  for (size_t i = nodes_.size(); i-- > 0;) {
    const uint8_t b = nodes_[i].byte;
    const base::Utf8Lead lead = plain(b) ? base::Utf8Lead{1, 0, 0} : base::utf8_lead(b);
    if (lead.length == 0) continue;
    uint32_t best = 1;
    bool ok = true;
    for (size_t j = i + 1; j < nodes_[i].subtree_end && ok;) {
      const uint32_t rel = nodes_[j].depth - nodes_[i].depth;
      if (rel < lead.length) {
        const uint8_t c = nodes_[j].byte;
        ok = rel == 1 ? c >= lead.lo && c <= lead.hi : c >= 0x80 && c <= 0xBF;
        ++j;
      } else {
        ok = text_height_[j] != 0;
        best = std::max<uint32_t>(best, text_height_[j] + 1u);
        j = nodes_[j].subtree_end;
      }
    }
    if (ok) text_height_[i] = static_cast<uint8_t>(std::min(best, 255u));
  }
  // Runs of text siblings, later siblings first.
  text_span_end_.assign(nodes_.size(), 0);
  text_span_height_.assign(nodes_.size(), 0);
  for (size_t i = nodes_.size(); i-- > 0;) {
    if (text_height_[i] == 0) continue;
    const uint32_t next = nodes_[i].subtree_end;
    const bool sibling = next < nodes_.size() && parents_[next] == parents_[i] && text_height_[next] != 0;
    text_span_end_[i] = sibling ? text_span_end_[next] : next;
    text_span_height_[i] = sibling ? std::max(text_height_[i], text_span_height_[next]) : text_height_[i];
  }
  // Sibling words: each parent's children (the root's first) as one group, then the parent's subtree
  // end. A trie too large for 23-bit indices goes without (walks then read the nodes).
  if (nodes_.size() < kMaxSiblingNodes) {
    std::vector<uint32_t> n_kids(nodes_.size() + 1, 0);  // [0]: the root
    for (uint32_t p : parents_) ++n_kids[p == kNoParent ? 0 : p + 1];
    std::vector<uint32_t> group(nodes_.size() + 1, 0);  // where each parent's group starts
    uint32_t at = 0;
    for (size_t p = 0; p <= nodes_.size(); ++p) {
      group[p] = at;
      if (n_kids[p] != 0) at += n_kids[p] + 1;
    }
    sibling_.assign(at, 0);
    sibling_slot_.assign(nodes_.size(), 0);
    std::vector<uint32_t> fill = group;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const size_t p = parents_[i] == kNoParent ? 0 : parents_[i] + 1;
      sibling_slot_[i] = fill[p];
      sibling_[fill[p]++] = static_cast<uint32_t>(i) << 9 | nodes_[i].byte;
    }
    for (size_t p = 0; p <= nodes_.size(); ++p) {
      if (n_kids[p] == 0) continue;
      const uint32_t end = p == 0 ? static_cast<uint32_t>(nodes_.size()) : nodes_[p - 1].subtree_end;
      sibling_[fill[p]] = end << 9 | 0x100;
    }
  }
  text_counts_ = std::make_unique<const TextCounts>(*this);
}

VocabTrie::~VocabTrie() = default;


// Node for the common prefix of length `depth` shared by sorted[lo, hi).
uint8_t VocabTrie::byte_class(uint8_t b) {
  static const std::array<uint8_t, 256> table = [] {
    std::array<uint8_t, 256> t{};
    uint8_t punct = 5;  // the 33 printable ASCII bytes that are not letters or digits: 5..37
    for (int c = 0; c < 256; ++c) {
      if (c < 0x20) t[c] = 38;
      else if (c >= '0' && c <= '9') t[c] = 0;
      else if (c >= 'a' && c <= 'f') t[c] = 1;
      else if (c >= 'g' && c <= 'z') t[c] = 2;
      else if (c >= 'A' && c <= 'F') t[c] = 3;
      else if (c >= 'G' && c <= 'Z') t[c] = 4;
      else if (c < 0x7f) t[c] = punct++;
      else if (c == 0x7f) t[c] = 39;
      else if (c < 0xc0) t[c] = 40;
      else t[c] = 41;
    }
    return t;
  }();
  return table[b];
}

void VocabTrie::build(const std::vector<int32_t>& sorted, size_t lo, size_t hi, uint32_t depth, uint32_t parent) {
  const auto index = static_cast<uint32_t>(nodes_.size());
  parents_.push_back(parent);
  nodes_.push_back({static_cast<uint8_t>(vocab_.token_bytes[sorted[lo]][depth - 1]), depth, 0,
                    static_cast<uint32_t>(token_ids_.size()), 0});
  while (lo < hi && vocab_.token_bytes[sorted[lo]].size() == depth) token_ids_.push_back(sorted[lo++]);
  nodes_[index].tok_end = static_cast<uint32_t>(token_ids_.size());
  while (lo < hi) {
    size_t mid = lo;
    const char c = vocab_.token_bytes[sorted[lo]][depth];
    while (mid < hi && vocab_.token_bytes[sorted[mid]][depth] == c) ++mid;
    build(sorted, lo, mid, depth + 1, index);
    lo = mid;
  }
  nodes_[index].subtree_end = static_cast<uint32_t>(nodes_.size());
}

}  // namespace keel::grammar
