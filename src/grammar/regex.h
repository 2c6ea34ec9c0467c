// Regular expressions (ECMA-262 syntax, as JSON Schema `pattern` uses it) lowered to grammar rules.
// Supported: literals, escapes (\d \w \s and negations, \n \t \xHH \uHHHH \u{...} \cX ...), classes
// with ranges and negation, '.', groups (capturing, (?:), named), alternation, greedy and lazy
// quantifiers (* + ? {n} {n,} {n,m}), and ^ / $ at the ends of top-level alternatives. Lookaround,
// backreferences, word boundaries, \p{...} and inline flags are kUnsupported errors naming the
// construct. Called by the JSON Schema compiler and compile_regex on the compiling thread.
#pragma once

#include <string_view>

#include "base/status.h"
#include "grammar/char_class.h"
#include "grammar/grammar.h"

namespace keel::grammar {

struct RegexOptions {
  CharEncoding encoding = CharEncoding::kUtf8;
  // true: JSON Schema semantics, the pattern may match anywhere unless anchored with ^ / $.
  // false: the whole text must match (anchors at the ends are accepted and redundant).
  bool search = false;
};

// A symbol matching exactly the strings the pattern accepts under `opts`.
Result<Symbol> regex_to_symbol(GrammarBuilder& b, std::string_view pattern, const RegexOptions& opts);

}  // namespace keel::grammar
