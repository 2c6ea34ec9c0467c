// Regular expressions (ECMA-262 syntax, as JSON Schema `pattern` uses it) lowered to grammar rules.
// Supported: literals, escapes (\d \w \s and negations, \n \t \xHH \uHHHH \u{...} \cX ...), classes
// with ranges and negation, '.', groups (capturing, (?:), named), alternation, greedy and lazy
// quantifiers (* + ? {n} {n,} {n,m}), and ^ / $ at the ends of top-level alternatives. Lookaround,
// backreferences, word boundaries, \p{...} and inline flags are kUnsupported errors naming the
// construct. Called by the JSON Schema compiler and compile_regex on the compiling thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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
// Keys by pattern (regex_keys.cc): the strings `pattern` matches (search semantics) that are none of
// `names`, or the strings that match neither. Exact (the pattern is determinised); kUnsupported
// past a state cap. Quotes not included.
enum class KeySet { kPatternMinusNames, kNeither };
Result<Symbol> regex_key_set(GrammarBuilder& b, std::string_view pattern, const std::vector<std::string>& names,
                             KeySet which, CharEncoding enc);
// The strings a JSON Schema (search-semantics) pattern matches, determinised (regex_keys.cc): an
// unambiguous grammar whose Earley states stay few inside a string, unlike ".* P .*" padding.
// kUnsupported past max_states DFA states.
Result<Symbol> regex_search_dfa(GrammarBuilder& b, std::string_view pattern, CharEncoding enc, size_t max_states);
// Whether a JSON Schema (search-semantics) pattern matches every string: some top-level alternative
// matches the empty string and is not anchored at both ends. False when unsure or invalid.
bool regex_matches_everything(std::string_view pattern);
// The same, restricted to strings of min_len..max_len characters (max_len < 0: no upper bound);
// regex_length.cc. kUnsupported when the product automaton would be too large.
Result<Symbol> regex_with_length(GrammarBuilder& b, std::string_view pattern, const RegexOptions& opts, int64_t min_len,
                                 int64_t max_len);

}  // namespace keel::grammar
