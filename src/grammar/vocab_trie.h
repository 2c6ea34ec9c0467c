// The model's vocabulary as plain data (token bytes, end-of-sequence ids, special ids) and a byte
// trie over it laid out in preorder, so a depth-first walk is a linear scan that can skip a subtree
// by jumping to `subtree_end`. Built once per vocabulary; immutable, shared across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace keel::grammar {

class TextCounts;

struct Vocabulary {
  std::vector<std::string> token_bytes;  // [n_vocab] raw bytes each token stands for
  std::vector<int32_t> eos_ids;          // allowed exactly when the grammar may end
  std::vector<int32_t> special_ids;      // control tokens: never allowed by grammar text
  int32_t n_vocab() const { return static_cast<int32_t>(token_bytes.size()); }
};

class VocabTrie {
 public:
  struct Node {
    uint8_t byte;
    uint32_t depth;        // bytes from the root (root itself is not stored), >= 1
    uint32_t subtree_end;  // index of the first node after this subtree
    uint32_t tok_begin;    // tokens ending exactly here: token_ids()[tok_begin, tok_end)
    uint32_t tok_end;
  };

  explicit VocabTrie(Vocabulary vocab);
  ~VocabTrie();

  const Vocabulary& vocab() const { return vocab_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& token_ids() const { return token_ids_; }
  // Sets (or, with set = false, clears) the bits of token_ids()[b, e) in a vocabulary bitmask.
  void mark_tokens(std::span<uint32_t> bits, uint32_t b, uint32_t e, bool set = true) const {
    for (uint32_t t = b; t < e; ++t) {
      const auto id = static_cast<uint32_t>(token_ids_[t]);
      if (set) {
        bits[id >> 5] |= 1u << (id & 31);
      } else {
        bits[id >> 5] &= ~(1u << (id & 31));
      }
    }
  }
  // Token ids of the subtree rooted at node i (contiguous thanks to the preorder layout).
  uint32_t subtree_tok_begin(uint32_t i) const { return nodes_[i].tok_begin; }
  uint32_t subtree_tok_end(uint32_t i) const {
    uint32_t e = nodes_[i].subtree_end;
    return e < nodes_.size() ? nodes_[e].tok_begin : static_cast<uint32_t>(token_ids_.size());
  }
  static constexpr uint32_t kNoParent = UINT32_MAX;
  // The node one byte up (kNoParent for depth 1).
  uint32_t parent(uint32_t i) const { return parents_[i]; }
  // Printable ASCII except '"' and '\\': the bytes a JSON string body (and most text) loops on.
  static bool plain(uint8_t b) { return b >= 0x20 && b < 0x7f && b != '"' && b != '\\'; }
  // When node i and everything below it are plain bytes: the most bytes a token of the subtree has from
  // node i down (node i's byte included), capped at 255; else 0. A walk standing in a state from which
  // any run of that many plain bytes parses accepts the whole subtree without visiting it.
  uint8_t plain_height(uint32_t i) const { return plain_height_[i]; }
  // Text: plain bytes and UTF-8 characters U+0080..U+10FFFF (no surrogates), the characters a JSON
  // string body takes raw. When node i starts a character and every token of its subtree continues
  // from node i as text (a last character may be cut short: a valid prefix of one), the most
  // characters such a continuation has, a cut-short one included, capped at 255; else 0. A walk
  // standing in a state that surely takes any run of that many text characters accepts the subtree.
  uint8_t text_height(uint32_t i) const { return text_height_[i]; }
  // For a node of non-zero text height: the end of the run of text subtrees it starts among its
  // siblings (the first later sibling that is not text, or the parent's subtree end), and the most
  // text height in that run. A walk skips the whole run at once: below a node that is not text (it
  // holds a '"' token, say) most children usually are.
  uint32_t text_span_end(uint32_t i) const { return text_span_end_[i]; }
  uint8_t text_span_height(uint32_t i) const { return text_span_height_[i]; }
  // Byte classes (session 9, loop classes): digits, a-f, g-z, A-F, G-Z, each other printable ASCII
  // byte alone, control bytes, DEL, UTF-8 continuation bytes, UTF-8 lead and invalid bytes — so the
  // classes a pattern's character classes loop on (`[a-z0-9_]`, `\d`, "anything but '/'") are unions
  // of them. subtree_classes(i): the classes of every byte in node i's subtree, node i's own included.
  // A walk standing in a state where every byte of those classes leads back to the state itself
  // accepts the subtree without visiting it (StateWalker::loop_classes).
  static constexpr uint32_t kByteClasses = 42;
  static uint8_t byte_class(uint8_t b);
  uint64_t subtree_classes(uint32_t i) const { return subtree_classes_[i]; }
  // First token (in token_ids() order) at or after node index i (token_ids().size() at the end).
  uint32_t tok_begin_at(uint32_t i) const {
    return i < nodes_.size() ? nodes_[i].tok_begin : static_cast<uint32_t>(token_ids_.size());
  }
  // Siblings in one place: each parent's children as words node << 9 | byte, in order, then a word
  // parent's subtree end << 9 | 0x100 (the root's children first; sibling_slot(i) is node i's word).
  // Walks skip runs of siblings a state rejects through these words alone: the nodes themselves (20
  // bytes each, 5.5 MB at 128k tokens) sit a subtree apart, a cache miss per sibling. Empty for a
  // trie of kMaxSiblingNodes nodes or more.
  const std::vector<uint32_t>& sibling_words() const { return sibling_; }
  uint32_t sibling_slot(uint32_t i) const { return sibling_slot_[i]; }
  static constexpr size_t kMaxSiblingNodes = size_t{1} << 23;
  bool is_eos(int32_t id) const { return is_eos_[id] != 0; }
  // Bitmask [ceil(n_vocab / 32)] of the tokens the trie holds (not EOS, specials or empty tokens).
  const std::vector<uint32_t>& token_bits() const { return token_bits_; }
  // The tokens by text characters spanned (text_counts.h), for masks of states that count them.
  const TextCounts& text_counts() const { return *text_counts_; }

 private:
  void build(const std::vector<int32_t>& sorted, size_t lo, size_t hi, uint32_t depth, uint32_t parent);

  Vocabulary vocab_;
  std::vector<Node> nodes_;
  std::vector<int32_t> token_ids_;
  std::vector<uint32_t> parents_;
  std::vector<uint8_t> plain_height_;
  std::vector<uint8_t> text_height_;
  std::vector<uint32_t> text_span_end_;
  std::vector<uint8_t> text_span_height_;
  std::vector<uint64_t> subtree_classes_;
  std::vector<uint8_t> is_eos_;
  std::vector<uint32_t> token_bits_;
  std::vector<uint32_t> sibling_, sibling_slot_;
  std::unique_ptr<const TextCounts> text_counts_;
};

}  // namespace keel::grammar
