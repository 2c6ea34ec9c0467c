#include "tokenizer/template/py_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "tokenizer/unicode.h"

namespace keel::tokenizer::jinja {

char32_t next_code_point(std::string_view s, size_t& pos) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  auto invalid = [&]() -> char32_t {
    ++pos;
    return 0xDC00 + b0;
  };
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  int n = 0;
  char32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 1;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 2;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 3;
    cp = b0 & 0x07;
  } else {
    return invalid();
  }
  if (pos + n >= s.size()) return invalid();
  for (int k = 1; k <= n; ++k) {
    const auto b = static_cast<uint8_t>(s[pos + k]);
    if ((b & 0xC0) != 0x80) return invalid();
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr char32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return invalid();
  pos += n + 1;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {  // an invalid byte carried through (surrogateescape)
    out.push_back(static_cast<char>(cp - 0xDC00));
  } else {
    tokenizer::append_utf8(out, static_cast<uint32_t>(cp));
  }
}

bool is_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  }
  return true;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  size_t pos = 0;
  while (pos < s.size()) {
    offsets.push_back(pos);
    next_code_point(s, pos);
  }
  offsets.push_back(s.size());
  return offsets;
}

size_t code_point_count(std::string_view s) {
  if (is_ascii(s)) return s.size();
  return code_point_offsets(s).size() - 1;
}

bool is_py_space(char32_t cp) {
  if (cp >= 0x09 && cp <= 0x0D) return true;
  if (cp >= 0x1C && cp <= 0x20) return true;
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

namespace {

template <typename Pred>
std::string_view strip_if(std::string_view s, bool left, bool right, Pred pred) {
  size_t begin = 0;
  size_t end = s.size();
  if (left) {
    while (begin < end) {
      size_t pos = begin;
      if (!pred(next_code_point(s, pos))) break;
      begin = pos;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && end - start < 4 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
      size_t pos = start;
      char32_t cp = next_code_point(s, pos);
      if (pos != end) {  // the tail is not one well-formed code point: take its last byte alone
        start = end - 1;
        cp = 0xDC00 + static_cast<uint8_t>(s[start]);
      }
      if (!pred(cp)) break;
      end = start;
    }
  }
  return s.substr(begin, end - begin);
}

}  // namespace

std::string_view py_strip(std::string_view s, bool left, bool right) {
  return strip_if(s, left, right, is_py_space);
}

std::string_view py_strip_chars(std::string_view s, std::string_view chars, bool left, bool right) {
  std::vector<char32_t> set;
  for (size_t pos = 0; pos < chars.size();) set.push_back(next_code_point(chars, pos));
  return strip_if(s, left, right, [&](char32_t cp) {
    for (char32_t c : set) {
      if (c == cp) return true;
    }
    return false;
  });
}

std::vector<std::string> py_split_whitespace(std::string_view s, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t pos = 0;
  auto skip_space = [&]() {
    while (pos < s.size()) {
      size_t next = pos;
      if (!is_py_space(next_code_point(s, next))) break;
      pos = next;
    }
  };
  skip_space();
  while (pos < s.size()) {
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      std::string_view rest = py_strip(s.substr(pos), false, true);
      parts.emplace_back(rest);
      return parts;
    }
    const size_t start = pos;
    while (pos < s.size()) {
      size_t next = pos;
      if (is_py_space(next_code_point(s, next))) break;
      pos = next;
    }
    parts.emplace_back(s.substr(start, pos - start));
    skip_space();
  }
  return parts;
}

std::vector<std::string> py_split(std::string_view s, std::string_view sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    const size_t hit = s.find(sep, start);
    if (hit == std::string_view::npos) break;
    parts.emplace_back(s.substr(start, hit - start));
    start = hit + sep.size();
  }
  parts.emplace_back(s.substr(start));
  return parts;
}

std::vector<std::string> py_rsplit(std::string_view s, std::string_view sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t end = s.size();
  int64_t n = 0;
  while (maxsplit < 0 || n < maxsplit) {
    if (end < sep.size()) break;
    const size_t hit = s.rfind(sep, end - sep.size());
    if (hit == std::string_view::npos) break;
    parts.emplace_back(s.substr(hit + sep.size(), end - hit - sep.size()));
    end = hit;
    ++n;
  }
  parts.emplace_back(s.substr(0, end));
  return {parts.rbegin(), parts.rend()};
}

std::vector<std::string> py_splitlines(std::string_view s) {
  std::vector<std::string> lines;
  size_t start = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t at = pos;
    const char32_t cp = next_code_point(s, pos);
    const bool brk = cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || (cp >= 0x1C && cp <= 0x1E) ||
                     cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!brk) continue;
    lines.emplace_back(s.substr(start, at - start));
    if (cp == '\r' && pos < s.size() && s[pos] == '\n') ++pos;
    start = pos;
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

std::string py_replace(std::string_view s, std::string_view old_sub, std::string_view new_sub, int64_t count) {
  std::string out;
  int64_t n = 0;
  if (old_sub.empty()) {
    const auto offsets = code_point_offsets(s);
    for (size_t k = 0; k + 1 < offsets.size(); ++k) {
      if (count < 0 || n < count) out += new_sub, ++n;
      out += s.substr(offsets[k], offsets[k + 1] - offsets[k]);
    }
    if (count < 0 || n < count) out += new_sub;
    return out;
  }
  size_t start = 0;
  while (count < 0 || n < count) {
    const size_t hit = s.find(old_sub, start);
    if (hit == std::string_view::npos) break;
    out += s.substr(start, hit - start);
    out += new_sub;
    start = hit + old_sub.size();
    ++n;
  }
  out += s.substr(start);
  return out;
}

namespace {

char32_t to_upper_cp(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c == 0xB5) return 0x39C;
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17F) {
    const bool odd_is_lower = !((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E));
    if (odd_is_lower ? (c & 1) : !(c & 1)) return c - 1;
  }
  return c;
}

char32_t to_lower_cp(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17F) {
    const bool even_is_upper = !((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E));
    if (even_is_upper ? !(c & 1) : (c & 1)) return c + 1;
  }
  return c;
}

bool is_cased_letter(char32_t c) { return to_upper_cp(c) != c || to_lower_cp(c) != c || c == 0xDF; }

}  // namespace

std::string py_upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    const char32_t cp = next_code_point(s, pos);
    if (cp == 0xDF) {
      out += "SS";
    } else {
      append_utf8(out, to_upper_cp(cp));
    }
  }
  return out;
}

std::string py_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) append_utf8(out, to_lower_cp(next_code_point(s, pos)));
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (size_t pos = 0; pos < s.size();) {
    const char32_t cp = next_code_point(s, pos);
    append_utf8(out, first ? to_upper_cp(cp) : to_lower_cp(cp));
    first = false;
  }
  return out;
}

std::string py_title(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  for (size_t pos = 0; pos < s.size();) {
    const char32_t cp = next_code_point(s, pos);
    append_utf8(out, prev_cased ? to_lower_cp(cp) : to_upper_cp(cp));
    prev_cased = is_cased_letter(cp);
  }
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  std::string out;
  if (sci.front() == '-') {
    out.push_back('-');
    sci.remove_prefix(1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') digits.push_back(c);
  }
  int exp = 0;
  std::from_chars(sci.data() + e_pos + 1 + (sci[e_pos + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exp);
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    } else if (static_cast<int>(digits.size()) <= exp + 1) {
      out += digits;
      out.append(static_cast<size_t>(exp + 1 - static_cast<int>(digits.size())), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exp + 1));
      out += '.';
      out += digits.substr(static_cast<size_t>(exp + 1));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  out += ebuf;
  return out;
}

namespace {

// Approximates Python's str.isprintable() outside ASCII (full Unicode tables are not carried).
bool is_printable_non_ascii(char32_t cp) {
  if (cp <= 0xA0 || cp == 0xAD) return false;
  if (cp >= 0xDC80 && cp <= 0xDCFF) return false;
  if (cp >= 0x2000 && cp <= 0x200F) return false;
  if (cp >= 0x2028 && cp <= 0x202F) return false;
  if (cp >= 0x205F && cp <= 0x206F) return false;
  if (cp == 0x3000 || cp == 0xFEFF || cp == 0x1680) return false;
  if (cp >= 0xE000 && cp <= 0xF8FF) return false;
  if (cp >= 0xFFF0 && cp <= 0xFFFF) return false;
  return cp < 0xF0000;
}

}  // namespace

std::string py_str_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (size_t pos = 0; pos < s.size();) {
    const char32_t cp = next_code_point(s, pos);
    char buf[16];
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (cp < 0x80 || is_printable_non_ascii(cp)) {
      append_utf8(out, cp);
    } else {
      const auto v = static_cast<unsigned>(cp);
      if (v < 0x100) {
        std::snprintf(buf, sizeof(buf), "\\x%02x", v);
      } else if (v < 0x10000) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", v);
      } else {
        std::snprintf(buf, sizeof(buf), "\\U%08x", v);
      }
      out += buf;
    }
  }
  out.push_back(quote);
  return out;
}

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out.push_back('"');
  char buf[16];
  for (size_t pos = 0; pos < s.size();) {
    const size_t start = pos;
    const char32_t cp = next_code_point(s, pos);
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp < 0x20) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else if (cp < 0x80 || !ensure_ascii) {
      out.append(s.substr(start, pos - start));
    } else if (cp < 0x10000) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      const char32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                    static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      out += buf;
    }
  }
  out.push_back('"');
}

}  // namespace keel::tokenizer::jinja
