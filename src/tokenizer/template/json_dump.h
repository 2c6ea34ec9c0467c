// Python json.dumps over template values, as transformers' `tojson` filter calls it: key order kept
// (or sorted), floats in Python repr, NaN/Infinity, ensure_ascii, indent (count or string),
// separators. Tuples dump as arrays; Undefined, namespaces and callables are a type error.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "tokenizer/template/value.h"

namespace keel::tokenizer::jinja {

struct JsonStyle {
  std::optional<std::string> indent;  // null: one line
  std::string item_separator = ", ";  // json.dumps picks "," when indent is set and separators are not
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

Result<std::string> dump_json(const Value& v, const JsonStyle& style);

}  // namespace keel::tokenizer::jinja
