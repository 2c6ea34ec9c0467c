// Sets of Unicode code points and their lowering to byte-level grammar: raw UTF-8 (regex over text,
// GBNF) or the canonical JSON string encoding (regex and lengths inside JSON strings). Used by the
// regex, GBNF and JSON Schema front ends while they build a grammar on one thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace keel::grammar {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

class CharClass {
 public:
  struct Range {
    uint32_t lo, hi;  // inclusive
  };
  CharClass() = default;
  static CharClass of(uint32_t cp) { return range(cp, cp); }
  static CharClass range(uint32_t lo, uint32_t hi);
  static CharClass any();  // every scalar value (surrogates excluded)

  void add(uint32_t lo, uint32_t hi);
  void add(const CharClass& other);
  CharClass negated() const;  // within the scalar values
  bool contains(uint32_t cp) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<Range>& ranges() const { return ranges_; }

 private:
  void normalize();
  std::vector<Range> ranges_;  // sorted, disjoint, non-adjacent, surrogates removed
};

// How a code point is written in the output.
enum class CharEncoding {
  kUtf8,        // raw UTF-8 bytes
  kJsonString,  // inside a JSON string, canonically: '"' and '\' escaped, control characters as
                // \b \f \n \r \t or \u00XX (lowercase or uppercase hex), everything else raw UTF-8
};

// The two-character JSON escape of `cp` (\" \\ \b \f \n \r \t), or empty: the other characters'
// canonical spelling is \u00XX below 0x20, raw UTF-8 otherwise (CharEncoding::kJsonString).
std::string_view json_short_escape(uint32_t cp);

// One symbol matching exactly one character of `cls` in the given encoding (never() if empty).
Symbol emit_char_class(GrammarBuilder& b, const CharClass& cls, CharEncoding enc);

// Appends the UTF-8 encoding of `cp` to `out`.
void append_utf8(std::string& out, uint32_t cp);
// Decodes one UTF-8 character at text[*pos]; returns false on malformed input.
bool decode_utf8(std::string_view text, size_t* pos, uint32_t* cp);

}  // namespace keel::grammar
