#include "grammar/char_class.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "base/utf8.h"

namespace keel::grammar {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

int utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

std::string utf8_of(uint32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

// Byte-range sequences for [lo, hi] where both ends have the same UTF-8 length (the classic split:
// divide the range until each continuation byte spans a full 0x80..0xBF block or a single prefix).
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>& out) {
  int n = utf8_length(lo);
  for (int i = 1; i < n; ++i) {
    uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_sequences(lo, lo | m, out);
        utf8_sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_sequences(lo, (hi & ~m) - 1, out);
        utf8_sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a = utf8_of(lo), z = utf8_of(hi);
  std::vector<std::pair<uint8_t, uint8_t>> seq;
  for (int i = 0; i < n; ++i) seq.emplace_back(static_cast<uint8_t>(a[i]), static_cast<uint8_t>(z[i]));
  out.push_back(std::move(seq));
}

using ByteSeq = std::vector<ByteSet>;

void utf8_alternatives(const CharClass& cls, std::vector<ByteSeq>& alts) {
  static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodepoint};
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> seqs;
  for (const CharClass::Range& r : cls.ranges()) {
    uint32_t lo = r.lo;
    for (uint32_t end : kLengthEnds) {
      if (lo > r.hi) break;
      if (lo > end) continue;
      utf8_sequences(lo, std::min(r.hi, end), seqs);
      lo = std::min(r.hi, end) + 1;
    }
  }
  for (const auto& seq : seqs) {
    ByteSeq s;
    for (auto [x, y] : seq) {
      ByteSet set;
      for (int c = x; c <= y; ++c) set.set(c);
      s.push_back(set);
    }
    alts.push_back(std::move(s));
  }
}

// The set's storage as it is (32 bytes): keys only compared within one compilation.
void append_key(std::string& out, const ByteSet& set) {
  static_assert(sizeof(ByteSet) == 32);
  out.append(reinterpret_cast<const char*>(&set), sizeof(ByteSet));
}

std::string set_key(const ByteSet& set) {
  std::string out;
  append_key(out, set);
  return out;
}

// Lowers alternatives of byte-set sequences with shared work factored out: sequences with equal
// tails merge their first sets, then sequences with equal first sets share one prefix. Keeps the
// number of Earley items a character prediction creates small (about 10 for "any character").
// Identical groups (the continuation bytes of every class with the same multi-byte part, an escape's
// hex digits) are emitted once per grammar and shared (GrammarBuilder::memo).
Symbol build_factored(GrammarBuilder& b, std::vector<ByteSeq> alts, std::string_view name) {
  std::string memo_key = "factored:";
  memo_key += name;
  for (const ByteSeq& a : alts) {
    memo_key += static_cast<char>(a.size());
    for (const ByteSet& set : a) append_key(memo_key, set);
  }
  if (const Symbol* sym = b.memo(memo_key)) return *sym;
  std::map<std::string, size_t> by_tail;
  std::vector<ByteSeq> merged;
  bool has_empty = false;
  for (ByteSeq& a : alts) {
    if (a.empty()) {
      has_empty = true;
      continue;
    }
    std::string key;
    for (size_t i = 1; i < a.size(); ++i) append_key(key, a[i]);
    auto [it, inserted] = by_tail.try_emplace(key, merged.size());
    if (inserted) {
      merged.push_back(std::move(a));
    } else {
      merged[it->second][0] |= a[0];
    }
  }
  std::map<std::string, size_t> by_head;
  std::vector<std::pair<ByteSet, std::vector<ByteSeq>>> groups;
  for (ByteSeq& a : merged) {
    auto [it, inserted] = by_head.try_emplace(set_key(a[0]), groups.size());
    if (inserted) groups.push_back({a[0], {}});
    groups[it->second].second.emplace_back(a.begin() + 1, a.end());
  }
  std::vector<Sequence> out;
  if (has_empty) out.push_back({});
  for (auto& [head, tails] : groups) {
    Sequence seq{b.bytes(head)};
    if (tails.size() == 1) {
      for (const ByteSet& t : tails[0]) seq.push_back(b.bytes(t));
    } else {
      seq.push_back(build_factored(b, std::move(tails), name));
    }
    out.push_back(std::move(seq));
  }
  return b.memo(std::move(memo_key), b.choice(std::move(out), name));
}

ByteSeq literal_seq(std::string_view text) {
  ByteSeq s;
  for (char c : text) {
    ByteSet set;
    set.set(static_cast<uint8_t>(c));
    s.push_back(set);
  }
  return s;
}

}  // namespace

CharClass CharClass::range(uint32_t lo, uint32_t hi) {
  CharClass c;
  c.add(lo, hi);
  return c;
}

CharClass CharClass::any() { return range(0, kMaxCodepoint); }

void CharClass::add(uint32_t lo, uint32_t hi) {
  hi = std::min(hi, kMaxCodepoint);
  if (lo > hi) return;
  ranges_.push_back({lo, hi});
  normalize();
}

void CharClass::add(const CharClass& other) {
  ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
  normalize();
}

void CharClass::normalize() {
  std::vector<Range> split;
  for (Range r : ranges_) {
    if (r.hi < kSurrogateLo || r.lo > kSurrogateHi) {
      split.push_back(r);
      continue;
    }
    if (r.lo < kSurrogateLo) split.push_back({r.lo, kSurrogateLo - 1});
    if (r.hi > kSurrogateHi) split.push_back({kSurrogateHi + 1, r.hi});
  }
  std::sort(split.begin(), split.end(), [](Range a, Range b) { return a.lo < b.lo; });
  ranges_.clear();
  for (Range r : split) {
    if (!ranges_.empty() && r.lo <= ranges_.back().hi + 1) {
      ranges_.back().hi = std::max(ranges_.back().hi, r.hi);
    } else {
      ranges_.push_back(r);
    }
  }
}

CharClass CharClass::negated() const {
  CharClass out;
  uint32_t next = 0;
  for (Range r : ranges_) {
    if (r.lo > next) out.ranges_.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.ranges_.push_back({next, kMaxCodepoint});
  out.normalize();
  return out;
}

bool CharClass::contains(uint32_t cp) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), cp, [](uint32_t v, Range r) { return v < r.lo; });
  return it != ranges_.begin() && std::prev(it)->hi >= cp;
}

std::string_view json_short_escape(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return {};
  }
}

Symbol emit_char_class(GrammarBuilder& b, const CharClass& cls, CharEncoding enc) {
  if (cls.empty()) return b.never("no_char");
  std::vector<ByteSeq> alts;
  if (enc == CharEncoding::kUtf8) {
    utf8_alternatives(cls, alts);
    return build_factored(b, std::move(alts), "char");
  }
  // JSON string: the characters that must be escaped get their one canonical spelling.
  CharClass raw;
  std::vector<CharClass::Range> ascii;  // raw characters up to 0x5C, as runs (added at once below)
  for (const CharClass::Range& r : cls.ranges()) {
    for (uint32_t cp = r.lo; cp <= std::min<uint32_t>(r.hi, 0x5C); ++cp) {
      if (const std::string_view esc = json_short_escape(cp); !esc.empty()) {
        alts.push_back(literal_seq(esc));
      } else if (cp < 0x20) {
        ByteSeq s = literal_seq(fmt::format("\\u00{:X}", cp >> 4));
        ByteSet low;
        low.set(static_cast<uint8_t>(fmt::format("{:X}", cp & 15)[0]));
        low.set(static_cast<uint8_t>(fmt::format("{:x}", cp & 15)[0]));
        s.push_back(low);
        alts.push_back(std::move(s));
      } else if (!ascii.empty() && ascii.back().hi + 1 == cp) {
        ascii.back().hi = cp;
      } else {
        ascii.push_back({cp, cp});
      }
    }
    if (r.hi > 0x5C) raw.add(std::max<uint32_t>(r.lo, 0x5D), r.hi);
  }
  for (CharClass::Range r : ascii) raw.add(r.lo, r.hi);
  utf8_alternatives(raw, alts);
  return build_factored(b, std::move(alts), "char");
}

void append_utf8(std::string& out, uint32_t cp) { base::append_utf8(out, cp); }

bool decode_utf8(std::string_view text, size_t* pos, uint32_t* cp) {
  size_t i = *pos;
  if (i >= text.size()) return false;
  auto c = static_cast<uint8_t>(text[i]);
  int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > text.size()) return false;
  uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < n; ++k) {
    auto d = static_cast<uint8_t>(text[i + k]);
    if ((d & 0xC0) != 0x80) return false;
    v = (v << 6) | (d & 0x3F);
  }
  if ((n == 2 && v < 0x80) || (n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > kMaxCodepoint)) ||
      (v >= kSurrogateLo && v <= kSurrogateHi))
    return false;
  *pos = i + n;
  *cp = v;
  return true;
}

}  // namespace keel::grammar
