#include "grammar/json_number.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace keel::grammar {
namespace {

constexpr size_t kMaxDigits = 400;

// A decimal: sign, integer digits without leading zeros ("0" for zero), fraction without trailing zeros.
struct Decimal {
  bool neg = false;
  std::string int_digits = "0";
  std::string frac_digits;
  bool is_zero() const { return int_digits == "0" && frac_digits.empty(); }
};

Result<Decimal> parse_decimal(const std::string& text) {
  Decimal d;
  size_t i = 0;
  if (i < text.size() && text[i] == '-') d.neg = true, ++i;
  std::string digits;
  int64_t point = -1;
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'); ++i) {
    if (text[i] == '.') {
      point = static_cast<int64_t>(digits.size());
    } else {
      digits += text[i];
    }
  }
  if (point < 0) point = static_cast<int64_t>(digits.size());
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    int64_t e = std::stoll(text.substr(i + 1));
    if (e > static_cast<int64_t>(kMaxDigits) || e < -static_cast<int64_t>(kMaxDigits))
      return make_error(ErrorCode::kUnsupported, "number bound {} is out of the supported range", text);
    point += e;
  }
  if (digits.empty()) return make_error(ErrorCode::kInvalidArgument, "bad number bound '{}'", text);
  if (point < 0) digits.insert(0, static_cast<size_t>(-point), '0'), point = 0;
  if (point > static_cast<int64_t>(digits.size())) digits.append(static_cast<size_t>(point) - digits.size(), '0');
  d.int_digits = digits.substr(0, static_cast<size_t>(point));
  d.frac_digits = digits.substr(static_cast<size_t>(point));
  d.int_digits.erase(0, std::min(d.int_digits.find_first_not_of('0'), d.int_digits.size()));
  if (d.int_digits.empty()) d.int_digits = "0";
  while (!d.frac_digits.empty() && d.frac_digits.back() == '0') d.frac_digits.pop_back();
  if (d.is_zero()) d.neg = false;
  return d;
}

int cmp_uint(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b) < 0 ? -1 : a.compare(b) > 0 ? 1 : 0;
}

int cmp_magnitude(const Decimal& a, const Decimal& b) {
  if (int c = cmp_uint(a.int_digits, b.int_digits)) return c;
  return a.frac_digits < b.frac_digits ? -1 : a.frac_digits > b.frac_digits ? 1 : 0;
}

int cmp(const Decimal& a, const Decimal& b) {
  if (a.neg != b.neg) return a.neg ? -1 : 1;
  int c = cmp_magnitude(a, b);
  return a.neg ? -c : c;
}

std::string add_one(std::string s) {
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '9') {
      ++s[i];
      return s;
    }
    s[i] = '0';
  }
  return "1" + s;
}

std::string sub_one(std::string s) {  // s > 0
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '0') {
      --s[i];
      break;
    }
    s[i] = '9';
  }
  s.erase(0, std::min(s.find_first_not_of('0'), s.size() - 1));
  return s;
}

Decimal integer(bool neg, std::string digits) {
  Decimal d;
  d.neg = neg && digits != "0";
  d.int_digits = std::move(digits);
  return d;
}

// Smallest integer >= d (strict: > d).
Decimal ceil_int(const Decimal& d, bool strict) {
  bool has_frac = !d.frac_digits.empty();
  if (!d.neg) return integer(false, (has_frac || strict) ? add_one(d.int_digits) : d.int_digits);
  if (has_frac) return integer(true, d.int_digits);  // -2.5 -> -2
  return strict ? integer(d.int_digits != "0", d.int_digits == "0" ? "1" : sub_one(d.int_digits)) : d;
}

Decimal floor_int(const Decimal& d, bool strict) {
  Decimal n = d;
  n.neg = !d.neg && !d.is_zero();
  Decimal c = ceil_int(n, strict);
  c.neg = !c.neg && c.int_digits != "0";
  return c;
}

ByteSet digit_set(char lo, char hi) {
  ByteSet s;
  for (char c = lo; c <= hi; ++c) s.set(static_cast<uint8_t>(c));
  return s;
}

class NumberBuilder {
 public:
  NumberBuilder(GrammarBuilder& b, int max_frac) : b_(b), max_frac_(max_frac) {}

  // Non-negative integers in [a, b] (b absent: unbounded), canonical (no leading zeros).
  std::vector<Sequence> uint_range(const std::string& a, const std::optional<std::string>& b) {
    std::vector<Sequence> alts;
    if (b && cmp_uint(a, *b) > 0) return alts;
    const size_t la = a.size(), lb = b ? b->size() : la;
    for (size_t n = la; n <= lb; ++n) {
      std::string lo = n == la ? a : "1" + std::string(n - 1, '0');
      std::string hi = (b && n == lb) ? *b : std::string(n, '9');
      std::map<std::tuple<size_t, bool, bool>, Symbol> memo;
      alts.push_back({same_length(lo, hi, 0, true, true, memo)});
    }
    if (!b) {
      Sequence s{b_.bytes(digit_set('1', '9'))};
      for (size_t i = 0; i < la; ++i) s.push_back(digit());
      s.push_back(b_.star({digit()}));
      alts.push_back(std::move(s));
    }
    return alts;
  }

  // ε | "." digits+, with the fraction's value in the bounds (tight_lo/hi: the integer part equals the bound's).
  Symbol fraction(const std::optional<Decimal>& lo, bool lo_excl, const std::optional<Decimal>& hi, bool hi_excl) {
    lo_ = lo ? lo->frac_digits : "";
    hi_ = hi ? hi->frac_digits : "";
    lo_excl_ = lo_excl;
    hi_excl_ = hi_excl;
    cap_ = std::max(lo_.size(), hi_.size());
    if (max_frac_ >= 0) cap_ = std::max(cap_, static_cast<size_t>(max_frac_));
    frac_memo_.clear();
    std::vector<Sequence> alts;
    if (end_ok(0, lo.has_value(), hi.has_value())) alts.push_back({});
    std::vector<Sequence> digits = frac_digit_alts(0, lo.has_value(), hi.has_value());
    if (!digits.empty()) alts.push_back({b_.byte('.'), b_.choice(std::move(digits), "frac")});
    return alts.empty() ? b_.never("frac") : b_.choice(std::move(alts), "frac_opt");
  }

  Symbol digit() { return b_.bytes(digit_set('0', '9')); }

 private:
  Symbol same_length(const std::string& lo, const std::string& hi, size_t i, bool tl, bool th,
                     std::map<std::tuple<size_t, bool, bool>, Symbol>& memo) {
    const size_t n = lo.size();
    if (!tl && !th) return b_.repeat({digit()}, static_cast<int64_t>(n - i), static_cast<int64_t>(n - i));
    if (i == n) return b_.empty();
    auto key = std::make_tuple(i, tl, th);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    const char dlo = tl ? lo[i] : '0', dhi = th ? hi[i] : '9';
    std::vector<Sequence> alts;
    for_each_group(dlo, dhi, tl, th, [&](char a, char z, bool ntl, bool nth) {
      alts.push_back({b_.bytes(digit_set(a, z)), same_length(lo, hi, i + 1, ntl, nth, memo)});
    });
    Symbol s = b_.choice(std::move(alts), "digits");
    memo[key] = s;
    return s;
  }

  // Splits [dlo, dhi] into the digits that keep the lower / upper bound tight and the free middle.
  template <typename F>
  void for_each_group(char dlo, char dhi, bool tl, bool th, F f) {
    if (dlo > dhi) return;
    if (dlo == dhi) return f(dlo, dhi, tl, th);
    f(dlo, dlo, tl, false);
    if (dhi - dlo > 1) f(static_cast<char>(dlo + 1), static_cast<char>(dhi - 1), false, false);
    f(dhi, dhi, false, th);
  }

  bool end_ok(size_t i, bool tl, bool th) const {
    bool ok = true;
    if (tl) ok = ok && i >= lo_.size() && !lo_excl_;  // rest of lo zero: equal; else value < lo
    if (th && i >= hi_.size()) ok = ok && !hi_excl_;
    return ok;
  }

  std::vector<Sequence> frac_digit_alts(size_t i, bool tl, bool th) {
    std::vector<Sequence> alts;
    if (max_frac_ >= 0 && i >= static_cast<size_t>(max_frac_)) return alts;
    const char dlo = tl && i < lo_.size() ? lo_[i] : '0';
    const char dhi = th ? (i < hi_.size() ? hi_[i] : '0') : '9';
    for_each_group(dlo, dhi, tl, th, [&](char a, char z, bool ntl, bool nth) {
      alts.push_back({b_.bytes(digit_set(a, z)), frac_state(std::min(i + 1, cap_), ntl, nth)});
    });
    return alts;
  }

  Symbol frac_state(size_t i, bool tl, bool th) {
    if (!tl && !th) {
      if (max_frac_ < 0) return b_.star({digit()});
      const auto left = static_cast<int64_t>(max_frac_) - static_cast<int64_t>(i);
      return left > 0 ? b_.repeat({digit()}, 0, left) : b_.empty();
    }
    auto key = std::make_tuple(i, tl, th);
    if (auto it = frac_memo_.find(key); it != frac_memo_.end()) return it->second;
    RuleId r = b_.add_rule("frac_digits");
    frac_memo_[key] = b_.ref(r);
    if (end_ok(i, tl, th)) b_.add_alt(r, {});
    for (Sequence& s : frac_digit_alts(i, tl, th)) b_.add_alt(r, std::move(s));
    return b_.ref(r);
  }

  GrammarBuilder& b_;
  std::string lo_, hi_;
  bool lo_excl_ = false, hi_excl_ = false;
  size_t cap_ = 0;
  int max_frac_ = -1;  // fraction digits allowed; -1 = any number
  std::map<std::tuple<size_t, bool, bool>, Symbol> frac_memo_;
};

struct Mag {
  Decimal value;  // non-negative
  bool exclusive;
};

// Non-negative decimals in [lo, hi] written as int part + optional fraction.
std::vector<Sequence> magnitude_range(GrammarBuilder& b, NumberBuilder& nb, const Mag& lo, const std::optional<Mag>& hi) {
  std::vector<Sequence> alts;
  const std::string& li = lo.value.int_digits;
  auto frac_any = [&] { return nb.fraction(std::nullopt, false, std::nullopt, false); };
  if (!hi) {
    for (Sequence& s : nb.uint_range(add_one(li), std::nullopt)) {
      s.push_back(frac_any());
      alts.push_back(std::move(s));
    }
    Sequence s = b.literal(li);
    s.push_back(nb.fraction(lo.value, lo.exclusive, std::nullopt, false));
    alts.push_back(std::move(s));
    return alts;
  }
  const std::string& ui = hi->value.int_digits;
  int c = cmp_uint(li, ui);
  if (c > 0) return alts;
  if (c == 0) {
    Sequence s = b.literal(li);
    s.push_back(nb.fraction(lo.value, lo.exclusive, hi->value, hi->exclusive));
    alts.push_back(std::move(s));
    return alts;
  }
  std::string mid_lo = add_one(li);
  if (ui != "0" && cmp_uint(mid_lo, sub_one(ui)) <= 0) {
    for (Sequence& s : nb.uint_range(mid_lo, sub_one(ui))) {
      s.push_back(frac_any());
      alts.push_back(std::move(s));
    }
  }
  Sequence s1 = b.literal(li);
  s1.push_back(nb.fraction(lo.value, lo.exclusive, std::nullopt, false));
  alts.push_back(std::move(s1));
  Sequence s2 = b.literal(ui);
  s2.push_back(nb.fraction(std::nullopt, false, hi->value, hi->exclusive));
  alts.push_back(std::move(s2));
  return alts;
}

Decimal abs_of(Decimal d) {
  d.neg = false;
  return d;
}

}  // namespace

Result<Symbol> number_symbol(GrammarBuilder& b, bool is_integer, const std::optional<NumberBound>& lo_bound,
                             const std::optional<NumberBound>& hi_bound, int max_fraction_digits) {
  NumberBuilder nb(b, max_fraction_digits);
  Symbol minus = b.optional({b.byte('-')});
  Symbol int_part = b.choice({{b.byte('0')}, {b.bytes(digit_set('1', '9')), b.star({nb.digit()})}}, "int");
  if (!lo_bound && !hi_bound) {
    // 1.0 is an integer in JSON Schema: an all-zero fraction is allowed.
    if (is_integer) return b.group({minus, int_part, b.optional({b.byte('.'), b.plus({b.byte('0')})})}, "integer");
    if (max_fraction_digits == 0) return b.group({minus, int_part}, "number");
    if (max_fraction_digits > 0) {
      Symbol frac = b.optional({b.byte('.'), b.repeat({nb.digit()}, 1, max_fraction_digits)});
      return b.group({minus, int_part, frac}, "number");
    }
    Symbol frac = b.optional({b.byte('.'), b.plus({nb.digit()})});
    ByteSet e, sign;
    e.set('e'), e.set('E'), sign.set('+'), sign.set('-');
    Symbol exp = b.optional({b.bytes(e), b.optional({b.bytes(sign)}), b.plus({nb.digit()})});
    return b.group({minus, int_part, frac, exp}, "number");
  }
  std::optional<Decimal> lo, hi;
  bool lo_x = lo_bound && lo_bound->exclusive, hi_x = hi_bound && hi_bound->exclusive;
  if (lo_bound) {
    KEEL_ASSIGN_OR_RETURN(lo, parse_decimal(lo_bound->text));
  }
  if (hi_bound) {
    KEEL_ASSIGN_OR_RETURN(hi, parse_decimal(hi_bound->text));
  }
  if (is_integer) {
    if (lo) lo = ceil_int(*lo, lo_x), lo_x = false;
    if (hi) hi = floor_int(*hi, hi_x), hi_x = false;
  }
  if (lo && hi && (cmp(*lo, *hi) > 0 || (cmp(*lo, *hi) == 0 && (lo_x || hi_x)))) return b.never("empty_range");
  std::vector<Sequence> alts;
  const Decimal zero;
  // Non-negative values, written without a sign.
  if (!hi || !hi->neg) {
    Mag mlo = (lo && !lo->neg && !lo->is_zero()) ? Mag{*lo, lo_x} : Mag{zero, lo && lo->is_zero() && lo_x};
    std::optional<Mag> mhi = hi ? std::optional<Mag>(Mag{*hi, hi_x}) : std::nullopt;
    if (!(mhi && mhi->value.is_zero() && mhi->exclusive)) {
      if (is_integer) {
        std::optional<std::string> top = mhi ? std::optional<std::string>(mhi->value.int_digits) : std::nullopt;
        auto r = nb.uint_range(mlo.value.int_digits, top);
        alts.insert(alts.end(), r.begin(), r.end());
      } else {
        auto r = magnitude_range(b, nb, mlo, mhi);
        alts.insert(alts.end(), r.begin(), r.end());
      }
    }
  }
  // Negative values: "-" and a magnitude strictly above zero.
  if (!lo || lo->neg) {
    Mag mlo = (hi && hi->neg) ? Mag{abs_of(*hi), hi_x} : Mag{zero, true};
    std::optional<Mag> mhi = lo ? std::optional<Mag>(Mag{abs_of(*lo), lo_x}) : std::nullopt;
    std::vector<Sequence> r;
    if (is_integer) {
      std::string first = mlo.value.is_zero() ? "1" : mlo.value.int_digits;
      r = nb.uint_range(first, mhi ? std::optional<std::string>(mhi->value.int_digits) : std::nullopt);
    } else {
      r = magnitude_range(b, nb, mlo, mhi);
    }
    for (Sequence& s : r) {
      s.insert(s.begin(), b.byte('-'));
      alts.push_back(std::move(s));
    }
  }
  KEEL_RETURN_IF_ERROR(b.check_budget());
  if (is_integer && !alts.empty()) {
    Symbol zeros = b.optional({b.byte('.'), b.plus({b.byte('0')})});
    return b.group({b.choice(std::move(alts), "integer"), zeros}, "integer");
  }
  return alts.empty() ? b.never("empty_range") : b.choice(std::move(alts), is_integer ? "integer" : "number");
}

Result<Symbol> integer_multiple_symbol(GrammarBuilder& b, uint64_t m) {
  if (m < 2 || m > kMaxIntegerMultiple)
    return make_error(ErrorCode::kUnsupported, "multipleOf {} is outside [2, {}]", m, kMaxIntegerMultiple);
  // rem[r]: digit strings without a leading zero whose value is r mod m. rem[r] ::= d (first digit)
  // | rem[q] d with (10 q + d) mod m == r.
  std::vector<RuleId> rem(m);
  for (uint64_t r = 0; r < m; ++r) rem[r] = b.add_rule("mod");
  for (int d = 1; d <= 9; ++d) b.add_alt(rem[static_cast<uint64_t>(d) % m], {b.byte(static_cast<uint8_t>('0' + d))});
  for (uint64_t q = 0; q < m; ++q)
    for (int d = 0; d <= 9; ++d) b.add_alt(rem[(10 * q + static_cast<uint64_t>(d)) % m], {b.ref(rem[q]), b.byte(static_cast<uint8_t>('0' + d))});
  KEEL_RETURN_IF_ERROR(b.check_budget());
  Symbol magnitude = b.choice({{b.byte('0')}, {b.ref(rem[0])}}, "multiple");
  // 6.0 is an integer too: an all-zero fraction is allowed, as for other integers.
  return b.group({b.optional({b.byte('-')}), magnitude, b.optional({b.byte('.'), b.plus({b.byte('0')})})}, "multiple");
}

}  // namespace keel::grammar
