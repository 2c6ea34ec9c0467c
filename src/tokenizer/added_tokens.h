// Added (special and user-defined) tokens written literally in the text: split the input into raw
// text fragments and matched tokens before pre-tokenizing, leftmost-longest as HF tokenizers'
// AddedVocabulary does. Built once by Tokenizer::create; const afterwards (any thread may split).
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace keel::tokenizer {

struct Fragment {
  std::string_view text;  // raw text (when token < 0)
  int32_t token = -1;     // matched added token id, or -1
  size_t offset = 0;      // byte offset of the fragment in the input
};

class AddedTokenMatcher {
 public:
  // `control`: matched only when parse_special is on (HF's special=True). lstrip/rstrip absorb
  // neighbouring white space into the match.
  void add(std::string_view content, int32_t id, bool control, bool lstrip, bool rstrip);
  bool empty() const { return tokens_.empty(); }

  void split(std::string_view text, bool parse_special, std::vector<Fragment>& out) const;

 private:
  struct Entry {
    int32_t id;
    bool control;
    bool lstrip;
    bool rstrip;
  };
  // Longest token starting at text[pos] (index into tokens_), or -1.
  int32_t longest_at(std::string_view text, size_t pos, bool parse_special) const;
  int32_t child(int32_t node, uint8_t byte) const;

  std::vector<Entry> tokens_;
  std::vector<int32_t> node_token_;                    // [n_nodes] entry ending at the node, or -1
  std::unordered_map<uint64_t, int32_t> edges_;        // (node << 8 | byte) -> child node
  bool first_byte_[256] = {};
};

// Unicode White_Space (what Rust's char::is_whitespace accepts).
bool is_unicode_space(uint32_t cp);

}  // namespace keel::tokenizer
