// JSON numbers under bounds (minimum / maximum / exclusive*), lowered to digit-by-digit grammar so
// every accepted literal lies in range exactly (decimal comparison, no floating point). Bounded
// numbers are written without exponent; unbounded ones accept the full JSON number syntax.
// Called by the JSON Schema compiler on the compiling thread.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "grammar/grammar.h"

namespace keel::grammar {

struct NumberBound {
  std::string text;  // a JSON number literal, e.g. "-1.5e3"
  bool exclusive = false;
};

Result<Symbol> number_symbol(GrammarBuilder& b, bool integer, const std::optional<NumberBound>& lo,
                             const std::optional<NumberBound>& hi);

}  // namespace keel::grammar
