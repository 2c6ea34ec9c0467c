// JSON numbers under bounds (minimum / maximum / exclusive*), lowered to digit-by-digit grammar so
// every accepted literal lies in range exactly (decimal comparison, no floating point). Bounded
// numbers are written without exponent; unbounded ones accept the full JSON number syntax.
// Called by the JSON Schema compiler on the compiling thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "grammar/grammar.h"

namespace keel::grammar {

struct NumberBound {
  std::string text;  // a JSON number literal, e.g. "-1.5e3"
  bool exclusive = false;
};

// max_fraction_digits >= 0 (multipleOf 10^-k): at most that many fraction digits and no exponent.
Result<Symbol> number_symbol(GrammarBuilder& b, bool integer, const std::optional<NumberBound>& lo,
                             const std::optional<NumberBound>& hi, int max_fraction_digits = -1);

// Integers that are multiples of m (2 <= m <= kMaxIntegerMultiple), unbounded: the decimal digits run
// through the automaton of "value mod m" (left-linear, m rules).
constexpr uint64_t kMaxIntegerMultiple = 100;  // m rules of 10 alternatives each, all predicted per digit
Result<Symbol> integer_multiple_symbol(GrammarBuilder& b, uint64_t m);

}  // namespace keel::grammar
