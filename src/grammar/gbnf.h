// GBNF, llama.cpp's grammar format (rules `name ::= ...`, string literals, character classes with
// ranges and negation, '.', groups, * + ? {m} {m,} {m,n}, # comments), parsed to the grammar IR.
// Characters are Unicode code points matched as UTF-8. The start rule is `root`. Syntax errors and
// undefined rules are kInvalidArgument with the line; token references (<...>) are kUnsupported.
// Called by compile.h on the compiling thread.
#pragma once

#include <string_view>

#include "base/status.h"
#include "grammar/grammar.h"

namespace keel::grammar {

Result<Grammar> gbnf_grammar(std::string_view source, const BuildLimits& limits = {});

}  // namespace keel::grammar
