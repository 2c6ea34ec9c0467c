// Python methods templates call on values: str (startswith, endswith, strip, lstrip, rstrip, split,
// rsplit, replace, upper, lower, title, capitalize, find, rfind, count, join, splitlines, is*),
// dict (get, items, keys, values), list (index, count). Mutating methods are refused as transformers'
// ImmutableSandboxedEnvironment refuses them. Used by the evaluator's attribute access.
#pragma once

#include <optional>
#include <string_view>

#include "tokenizer/template/value.h"

namespace keel::tokenizer::jinja {

// The bound method `obj.name` as a callable, or nullopt when `obj` has no such method.
std::optional<Value> bound_method(const Value& obj, std::string_view name);

}  // namespace keel::tokenizer::jinja
