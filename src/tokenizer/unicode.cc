#include "tokenizer/unicode.h"

#include <algorithm>

#include "base/utf8.h"

namespace keel::tokenizer {

void append_utf8(std::string& out, uint32_t cp) { base::append_utf8(out, cp); }

namespace {

uint8_t byte_at(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }

bool is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

size_t sequence_len(uint8_t lead) { return lead < 0x80 ? 1 : base::utf8_lead(lead).length; }

// Bytes of the longest prefix of a sequence at s[i] that is valid so far (a "maximal subpart").
size_t valid_prefix_len(std::string_view s, size_t i) {
  const uint8_t lead = byte_at(s, i);
  const size_t need = sequence_len(lead);
  if (need <= 1) return need;
  const base::Utf8Lead l = base::utf8_lead(lead);
  size_t n = 1;
  if (i + 1 >= s.size() || byte_at(s, i + 1) < l.lo || byte_at(s, i + 1) > l.hi) return n;
  n = 2;
  while (n < need && i + n < s.size() && is_cont(byte_at(s, i + n))) ++n;
  return n;
}

}  // namespace

size_t utf8_valid_len(std::string_view s, size_t i) {
  const size_t need = sequence_len(byte_at(s, i));
  if (need == 0) return 0;
  return valid_prefix_len(s, i) == need ? need : 0;
}

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (byte_at(s, i) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = utf8_valid_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_valid_len(s, i);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      i += std::max<size_t>(1, valid_prefix_len(s, i));
    }
  }
  return out;
}

size_t utf8_incomplete_tail(std::string_view s) {
  const size_t lookback = std::min<size_t>(3, s.size());
  for (size_t k = 1; k <= lookback; ++k) {
    const size_t i = s.size() - k;
    const uint8_t b = byte_at(s, i);
    if (is_cont(b)) continue;
    const size_t need = sequence_len(b);
    // A lead byte whose valid prefix runs to the end of the string but is shorter than needed.
    if (need > k && valid_prefix_len(s, i) == k) return k;
    return 0;
  }
  return 0;
}

const ByteAlphabet& byte_alphabet() {
  static const ByteAlphabet alphabet = [] {
    ByteAlphabet a;
    a.char_to_byte.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? b : next++;
      append_utf8(a.byte_to_char[b], cp);
      a.char_to_byte[cp] = static_cast<int16_t>(b);
    }
    return a;
  }();
  return alphabet;
}

std::string to_byte_level(std::string_view bytes) {
  const ByteAlphabet& a = byte_alphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += a.byte_to_char[static_cast<uint8_t>(c)];
  return out;
}

std::string from_byte_level(std::string_view token) {
  const ByteAlphabet& a = byte_alphabet();
  std::string out;
  for (size_t i = 0; i < token.size();) {
    const size_t n = utf8_valid_len(token, i);
    uint32_t cp = 0x7FFFFFFF;
    if (n == 1) cp = byte_at(token, i);
    if (n == 2) cp = ((byte_at(token, i) & 0x1Fu) << 6) | (byte_at(token, i + 1) & 0x3Fu);
    if (n == 0 || cp >= a.char_to_byte.size() || a.char_to_byte[cp] < 0) return std::string(token);
    out.push_back(static_cast<char>(a.char_to_byte[cp]));
    i += n;
  }
  return out;
}

}  // namespace keel::tokenizer
