// TextCounts: the vocabulary read by how many text characters each token spans, for masks of states
// that count characters (a string under maxLength/minLength). Text is what StateWalker::text_run
// checks a state takes uniformly: plain bytes (VocabTrie::plain) and UTF-8 characters (a lead byte
// C2..F4, a second byte in its utf8_lead range, then 80..BF), a token's last character possibly cut
// short. Per vocabulary, built with the trie, immutable:
//  - upto(c), c = 1..kDepth: the trie's tokens that are text of at most c characters (a cut-short
//    last character counts as one), as a vocabulary bitmask;
//  - exits: the trie nodes where a token stops being text (a '"', a '\\', a control byte, broken
//    UTF-8) under a text path of k complete characters (plus `partial` bytes of one more), grouped
//    by (k, partial or not, byte), k <= kDepth;
//  - deep: the nodes ending a text path of exactly kDepth complete characters that have children,
//    with how many more characters the text tokens below take (0 when some token below is not text).
// Each exit and deep node also knows its `tail`: the bytes on its path after the last character
// boundary before its own byte, so a walk stands at that boundary's state and steps only those.
// Every trie token is exactly one of: text (counted in upto), below one exit, or below one deep node.
// GrammarMatcher::fill_by_count (count_walk.cc) builds a mask from these (docs/grammar.md, "6.").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace keel::grammar {

class VocabTrie;

class TextCounts {
 public:
  static constexpr uint32_t kDepth = 16;
  struct Group {
    uint8_t k;        // complete text characters before the exit node
    bool partial;     // the path holds part of a (k+1)-th character too
    uint8_t byte;     // the exit node's byte
    uint32_t begin;   // exits()[begin, end)
    uint32_t end;
  };

  explicit TextCounts(const VocabTrie& trie);

  // c in [1, kDepth].
  const std::vector<uint32_t>& upto(uint32_t c) const { return upto_[c - 1]; }
  const std::vector<Group>& groups() const { return groups_; }  // by k, then partial, then byte
  const std::vector<uint32_t>& exits() const { return exits_; }  // node ids, preorder within a group
  const std::vector<uint8_t>& exit_tails() const { return exit_tails_; }
  const std::vector<uint32_t>& deep() const { return deep_; }
  const std::vector<uint8_t>& deep_tails() const { return deep_tails_; }
  const std::vector<uint8_t>& deep_heights() const { return deep_heights_; }
  size_t memory_bytes() const;

 private:
  std::vector<std::vector<uint32_t>> upto_;
  std::vector<Group> groups_;
  std::vector<uint32_t> exits_;
  std::vector<uint8_t> exit_tails_;
  std::vector<uint32_t> deep_;
  std::vector<uint8_t> deep_tails_, deep_heights_;
};

}  // namespace keel::grammar
