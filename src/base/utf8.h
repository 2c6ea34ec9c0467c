// UTF-8 encoding of one code point, shared by every folder that writes text from code points (JSON
// \u escapes in the router's body scan, grammar character classes, the tokenizer's byte tables), and
// the lead bytes of well-formed sequences (the tokenizer's validation, the grammar trie's text runs).
#pragma once

#include <cstdint>
#include <string>

namespace keel::base {

// Appends cp (at most 0x10FFFF; surrogates are encoded as given) as 1-4 UTF-8 bytes.
inline void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// A lead byte of a well-formed multi-byte sequence (Unicode Table 3-7: no overlongs, surrogates or
// code points past U+10FFFF): the sequence's length (2-4) and the range of its second byte (the later
// ones are 0x80-0xBF). length 0 for any other byte (ASCII, continuation bytes, 0xC0, 0xC1, 0xF5-0xFF).
struct Utf8Lead {
  uint8_t length, lo, hi;
};
constexpr Utf8Lead utf8_lead(uint8_t b) {
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace keel::base
