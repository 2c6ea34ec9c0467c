// Jinja filters (`value | name(args)`) that chat templates use, with jinja2's and transformers'
// semantics (tojson is transformers' json.dumps with ensure_ascii/indent/separators/sort_keys).
// Names are checked at compile time (is_known_filter); applied by the evaluator.
#pragma once

#include <string_view>

#include "base/status.h"
#include "tokenizer/template/value.h"

namespace keel::tokenizer::jinja {

bool is_known_filter(std::string_view name);
Result<Value> apply_filter(Interpreter& in, std::string_view name, const Value& input, const CallArgs& args,
                           int line);

}  // namespace keel::tokenizer::jinja
