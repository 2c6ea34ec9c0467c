// Jinja tests (`value is [not] name(args)`): defined, none, string, mapping, iterable, sequence,
// number, integer, float, boolean, true, false, callable, sameas, equalto/eq/==, ne, lt/le/gt/ge,
// in, divisibleby, even, odd, lower, upper, escaped. Names are checked at compile time.
#pragma once

#include <string_view>

#include "base/status.h"
#include "tokenizer/template/value.h"

namespace keel::tokenizer::jinja {

bool is_known_test(std::string_view name);
Result<bool> apply_test(Interpreter& in, std::string_view name, const Value& v, const CallArgs& args, int line);

}  // namespace keel::tokenizer::jinja
