#include "tokenizer/added_tokens.h"

#include "tokenizer/unicode.h"

namespace keel::tokenizer {

bool is_unicode_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

namespace {

uint32_t decode_at(std::string_view s, size_t i, size_t n) {
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i + k])); };
  if (n == 1) return b(0);
  if (n == 2) return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
  if (n == 3) return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

// Bytes of white space at the start of s[from, to).
size_t space_after(std::string_view s, size_t from, size_t to) {
  size_t i = from;
  while (i < to) {
    const size_t n = utf8_valid_len(s, i);
    if (n == 0 || i + n > to || !is_unicode_space(decode_at(s, i, n))) break;
    i += n;
  }
  return i - from;
}

// Bytes of white space at the end of s[from, to).
size_t space_before(std::string_view s, size_t from, size_t to) {
  size_t i = to;
  while (i > from) {
    size_t start = i - 1;
    while (start > from && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
    const size_t n = utf8_valid_len(s, start);
    if (n == 0 || start + n != i || !is_unicode_space(decode_at(s, start, n))) break;
    i = start;
  }
  return to - i;
}

}  // namespace

int32_t AddedTokenMatcher::child(int32_t node, uint8_t byte) const {
  auto it = edges_.find((static_cast<uint64_t>(node) << 8) | byte);
  return it == edges_.end() ? -1 : it->second;
}

void AddedTokenMatcher::add(std::string_view content, int32_t id, bool control, bool lstrip, bool rstrip) {
  if (content.empty()) return;
  if (node_token_.empty()) node_token_.push_back(-1);
  int32_t node = 0;
  for (char c : content) {
    const auto byte = static_cast<uint8_t>(c);
    int32_t next = child(node, byte);
    if (next < 0) {
      next = static_cast<int32_t>(node_token_.size());
      node_token_.push_back(-1);
      edges_.emplace((static_cast<uint64_t>(node) << 8) | byte, next);
    }
    node = next;
  }
  first_byte_[static_cast<uint8_t>(content[0])] = true;
  if (node_token_[node] >= 0) return;  // the same text twice: the first id wins
  node_token_[node] = static_cast<int32_t>(tokens_.size());
  tokens_.push_back(Entry{id, control, lstrip, rstrip});
}

int32_t AddedTokenMatcher::longest_at(std::string_view text, size_t pos, bool parse_special) const {
  int32_t best = -1;
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    node = child(node, static_cast<uint8_t>(text[i]));
    if (node < 0) break;
    const int32_t t = node_token_[node];
    if (t >= 0 && (parse_special || !tokens_[t].control)) best = t;
  }
  return best;
}

void AddedTokenMatcher::split(std::string_view text, bool parse_special, std::vector<Fragment>& out) const {
  size_t emitted = 0;  // end of the last fragment pushed
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    const int32_t t = longest_at(text, pos, parse_special);
    if (t < 0) {
      ++pos;
      continue;
    }
    // Find the match end again by walking the trie to the entry.
    size_t end = pos;
    for (int32_t node = 0; node_token_[node] != t;) node = child(node, static_cast<uint8_t>(text[end++]));
    const Entry& e = tokens_[t];
    size_t start = pos;
    if (e.lstrip) start -= space_before(text, emitted, start);
    if (e.rstrip) end += space_after(text, end, text.size());
    if (start > emitted) out.push_back(Fragment{text.substr(emitted, start - emitted), -1, emitted});
    out.push_back(Fragment{text.substr(start, end - start), e.id, start});
    emitted = end;
    pos = end;
  }
  if (emitted < text.size()) out.push_back(Fragment{text.substr(emitted), -1, emitted});
}

}  // namespace keel::tokenizer
